//! End to end: `strata sql` against the real `strata serve` — one statement in table, CSV
//! and JSON format; a script on stdin with a multi-line statement and `\d`; failures with
//! their position and a caret, and the exit status.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::{Server, data_dir};

const ROWS: &str = "cpu,host=a,region=eu usage=12.5,count=3i 1700000000\n\
                    cpu,host=bb,region=us usage=-1.25,count=-7i 1700000010\n";

fn start() -> (tempfile::TempDir, Server) {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "tok"]);
    let response = server.request(
        "POST",
        "/write?db=metrics&precision=s",
        &[("Authorization", "Token tok")],
        ROWS.as_bytes(),
    );
    assert_eq!(response.status, 204, "{}", response.text());
    (dir, server)
}

/// Runs `strata sql` against `server` with `args`, `stdin` piped in.
fn sql(server: &Server, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("sql")
        .args([
            "--url",
            &format!("http://{}", server.http),
            "--db",
            "metrics",
        ])
        .args(["--token", "tok"])
        .args(args)
        .env_remove("STRATA_URL")
        .env_remove("STRATA_DB")
        .env_remove("STRATA_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const SELECT: &str = "SELECT host, time, usage, count FROM cpu ORDER BY host";

#[test]
fn one_statement_as_table_csv_and_json() {
    let (_dir, server) = start();

    let table = sql(&server, &[SELECT], "");
    assert!(table.status.success(), "{}", stderr(&table));
    assert_eq!(
        stdout(&table),
        " host | time                           | usage | count\n\
         ------+--------------------------------+-------+-------\n \
         a    | 2023-11-14T22:13:20.000000000Z |  12.5 |     3\n \
         bb   | 2023-11-14T22:13:30.000000000Z | -1.25 |    -7\n\
         (2 rows)\n"
    );

    let csv = sql(&server, &["--format", "csv", SELECT], "");
    assert!(csv.status.success(), "{}", stderr(&csv));
    assert_eq!(
        stdout(&csv),
        "host,time,usage,count\n\
         a,2023-11-14T22:13:20.000000000Z,12.5,3\n\
         bb,2023-11-14T22:13:30.000000000Z,-1.25,-7\n"
    );

    let json = sql(
        &server,
        &["--format", "json", "SELECT host FROM cpu ORDER BY host;"],
        "",
    );
    assert!(json.status.success(), "{}", stderr(&json));
    let value: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        value,
        serde_json::json!({
            "columns": [{"name": "host", "type": "string"}],
            "rows": [["a"], ["bb"]],
            "row_count": 2,
        })
    );
    assert!(server.stop().success());
}

#[test]
fn a_script_on_stdin_runs_each_statement() {
    let (_dir, server) = start();
    let script = "SELECT host,\n       usage\nFROM cpu -- a comment; not the end\nWHERE host = 'a';\n\
                  SELECT count(*) AS n FROM cpu;\n";
    let output = sql(&server, &[], script);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        " host | usage\n------+-------\n a    |  12.5\n(1 row)\n\n n\n---\n 2\n(1 row)\n"
    );

    let listing = sql(&server, &[], "\\d\n");
    assert!(listing.status.success(), "{}", stderr(&listing));
    assert!(stdout(&listing).contains(" cpu"), "{}", stdout(&listing));
    let described = sql(&server, &[], "\\d cpu\n");
    assert!(described.status.success(), "{}", stderr(&described));
    for column in ["time", "host", "region", "usage", "count"] {
        assert!(
            stdout(&described).contains(column),
            "{}",
            stdout(&described)
        );
    }
    assert!(server.stop().success());
}

#[test]
fn a_failure_exits_non_zero_with_a_caret() {
    let (_dir, server) = start();
    let output = sql(&server, &["SELECT host, nope\nFROM cpu"], "");
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let text = stderr(&output);
    assert!(text.starts_with("error [plan]: "), "{text}");
    assert!(text.contains("nope"), "{text}");
    assert!(
        text.ends_with("at line 1, column 14:\n1 | SELECT host, nope\n                 ^\n"),
        "{text}"
    );

    // A script stops at its first failure; what ran before it was printed.
    let script = sql(
        &server,
        &[],
        "SELECT 1 AS one;\nSELEC 2;\nSELECT 3 AS three;\n",
    );
    assert_eq!(script.status.code(), Some(1));
    assert!(stdout(&script).contains(" one"), "{}", stdout(&script));
    assert!(!stdout(&script).contains("three"), "{}", stdout(&script));
    assert!(
        stderr(&script).starts_with("error [syntax]: "),
        "{}",
        stderr(&script)
    );
    assert!(
        stderr(&script).contains("1 | SELEC 2\n    ^"),
        "{}",
        stderr(&script)
    );

    let unauthorized = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "sql",
            "--url",
            &format!("http://{}", server.http),
            "SELECT 1",
        ])
        .env_remove("STRATA_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(unauthorized.status.code(), Some(1));
    assert!(
        stderr(&unauthorized).contains("authorization"),
        "{}",
        stderr(&unauthorized)
    );
    assert!(server.stop().success());
}
