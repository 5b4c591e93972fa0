//! End-to-end: the Postgres wire protocol (`strata serve --pg`) with real clients.
//!
//! - `psql` (Debian's `postgresql-client`, installed by `.ci/run`) runs
//!   `pg/psql_script.sql`, statements and meta-commands, and its whole output must equal
//!   `pg/psql_script.out` (`STRATA_BLESS=1` rewrites it; read the diff before committing).
//! - psycopg 3 (PyPI `psycopg[binary]`, pinned in the README's test command) runs
//!   `clients/pg_psycopg.py`: parameters, text and binary results, many rows, prepared
//!   statements, errors and SQLSTATEs, cancel, 200 connections, a client leaving mid-result.
//! - asyncpg (PyPI, pinned in the README's test command) runs `clients/pg_asyncpg.py`:
//!   its bulk load (`copy_records_to_table`: binary `COPY … FROM STDIN`), binary and CSV
//!   `COPY … TO STDOUT`, binary parameters and results, prepared statements, SQLSTATEs,
//!   arrays (through its type introspection), settings.
//! - SQLAlchemy 2.0 (PyPI, pinned in the README's test command) over psycopg: its
//!   dialect's probes, reflection of whole tables and a cast-parameter insert; over asyncpg,
//!   reflection (`pg_psycopg.py sqlalchemy`).
//! - pgjdbc (Maven Central, fetched by `clients/fetch-pgjdbc.sh`, which the README's test
//!   command runs) runs `clients/PgJdbc.java`: prepared inserts and queries, a fetch size
//!   read through a portal, metadata (`getTables`, `getColumns`, keys, indexes, `getTypeInfo`),
//!   SQLSTATEs.
//! - node-postgres (npm, pinned in `clients/node/package-lock.json`, which the README's test
//!   command installs) runs `clients/node/pg_node.js`: inserts with untyped text parameters,
//!   rows by Postgres's column names, arrays, a named statement, SQLSTATEs.
//! - Authentication with the auth and read-only tokens, and TLS on request.
//!
//! Never skipped: a missing client fails the test, saying how to install it.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::psql::{psql, text};
use common::{Server, data_dir};

/// The pinned psycopg, as the README's test command installs it.
const PSYCOPG: &str = "psycopg[binary]==3.3.9";

/// The pinned asyncpg, as the README's test command installs it.
const ASYNCPG: &str = "asyncpg==0.32.0";

/// The pinned SQLAlchemy, as the README's test command installs it.
const SQLALCHEMY: &str = "sqlalchemy==2.0.58";

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Starts a server with the Postgres wire on a free port.
fn start(dir: &Path, extra: &[&str]) -> Server {
    let mut args = vec!["--pg", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let server = Server::start(dir, &args);
    assert!(
        server.pg.is_some(),
        "no Postgres listener: {}",
        server.stderr()
    );
    server
}

#[test]
fn psql_runs_a_script_of_statements_and_meta_commands() {
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    let script = std::fs::read(tests_dir().join("pg/psql_script.sql")).unwrap();
    // psql prints errors on stderr: one pipe for both keeps them in order, as pg_regress
    // does.
    let pg = server.pg.unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "psql -X -a -q -h {} -p {} -U tester -d psqldb 2>&1",
            pg.ip(),
            pg.port()
        ))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(&script)?;
            child.wait_with_output()
        })
        .unwrap();
    let got = text(&out.stdout);
    assert!(
        !got.contains("psql: not found") && !got.contains("command not found"),
        "psql is missing; .ci/run installs Debian's postgresql-client: {got}"
    );
    let expected_path = tests_dir().join("pg/psql_script.out");
    if std::env::var("STRATA_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(&expected_path, &got).unwrap();
    }
    let expected = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{e}: record it with STRATA_BLESS=1"));
    assert_eq!(
        got,
        expected,
        "psql output differs; server log:\n{}",
        server.stderr()
    );
    assert!(server.stop().success());
}

/// Runs `clients/pg_psycopg.py` for `scenario` against `server`.
/// Fails loudly unless python3 can import `module`, which `pin` installs.
fn require_python_module(module: &str, pin: &str) {
    let import = Command::new("python3")
        .args([
            "-c",
            &format!("import {module}; print({module}.__version__)"),
        ])
        .output()
        .expect("run python3");
    assert!(
        import.status.success(),
        "python3 cannot import {module} ({}); the README's test command installs it \
         (python3 -m pip install '{pin}')",
        text(&import.stderr).trim()
    );
}

fn psycopg(server: &Server, scenario: &str) {
    require_python_module("psycopg", PSYCOPG);
    let out = Command::new("python3")
        .arg(tests_dir().join("clients/pg_psycopg.py"))
        .arg(server.http.ip().to_string())
        .arg(server.http.port().to_string())
        .arg(server.pg.unwrap().port().to_string())
        .arg(scenario)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "psycopg checks failed:\nstdout: {stdout}\nstderr: {}\nserver: {}",
        text(&out.stderr),
        server.stderr()
    );
}

#[test]
fn psycopg_parameters_results_errors_cancel_and_200_connections() {
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    psycopg(&server, "main");
    assert!(server.stop().success());
}

/// SQLAlchemy 2.0 over psycopg: its dialect's probes on connecting, reflection of whole
/// tables, and an insert whose parameters it casts; over asyncpg, reflection.
#[test]
fn sqlalchemy_connects_reflects_and_inserts() {
    require_python_module("sqlalchemy", SQLALCHEMY);
    require_python_module("asyncpg", ASYNCPG);
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    psycopg(&server, "sqlalchemy");
    assert!(server.stop().success());
}

#[test]
fn asyncpg_binary_copy_in_and_out_parameters_and_errors() {
    require_python_module("asyncpg", ASYNCPG);
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    let out = Command::new("python3")
        .arg(tests_dir().join("clients/pg_asyncpg.py"))
        .arg(server.http.ip().to_string())
        .arg(server.pg.unwrap().port().to_string())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "asyncpg checks failed:\nstdout: {stdout}\nstderr: {}\nserver: {}",
        text(&out.stderr),
        server.stderr()
    );
    assert!(server.stop().success());
}

/// node-postgres: every parameter sent as untyped text (inserts read them as their
/// columns' types), rows read by Postgres's column names, arrays, a named statement.
#[test]
fn node_postgres_inserts_with_text_parameters_and_reads_rows_by_name() {
    let client_dir = tests_dir().join("clients/node");
    assert!(
        client_dir.join("node_modules/pg").is_dir(),
        "node-postgres is missing from {}; the README's test command installs it (npm ci \
         --prefix crates/strata/tests/clients/node)",
        client_dir.display()
    );
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    let out = Command::new("node")
        .arg(client_dir.join("pg_node.js"))
        .arg(server.http.ip().to_string())
        .arg(server.pg.unwrap().port().to_string())
        .output()
        .expect("run node (.ci/run installs Debian's nodejs)");
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "node-postgres checks failed:\nstdout: {stdout}\nstderr: {}\nserver: {}",
        text(&out.stderr),
        server.stderr()
    );
    assert!(server.stop().success());
}

#[test]
fn raw_protocol_portal_row_limits_and_a_client_leaving_mid_result() {
    let dir = data_dir();
    let server = start(dir.path(), &["--query-concurrency", "1"]);
    psycopg(&server, "raw");
    assert!(server.stop().success());
}

#[test]
fn pgjdbc_prepared_statements_fetch_size_and_metadata() {
    let jar = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-clients/postgresql-42.7.14.jar");
    assert!(
        jar.is_file(),
        "{} is missing; run crates/strata/tests/clients/fetch-pgjdbc.sh (the README's test \
         command does)",
        jar.display()
    );
    let dir = data_dir();
    let server = start(dir.path(), &[]);
    let out = Command::new("java")
        .arg("-cp")
        .arg(&jar)
        .arg(tests_dir().join("clients/PgJdbc.java"))
        .arg(server.pg.unwrap().port().to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run java ({e}): the Java 17 runtime is needed"));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "pgjdbc checks failed:\nstdout: {stdout}\nstderr: {}\nserver: {}",
        text(&out.stderr),
        server.stderr()
    );
    assert!(server.stop().success());
}

#[test]
fn passwords_are_the_tokens_and_the_read_only_token_only_reads() {
    let dir = data_dir();
    let server = start(
        dir.path(),
        &["--auth-token", "s3cret", "--read-only-token", "dashboards"],
    );
    let run = |password: &str, sql: &str| {
        psql(
            &server,
            &["-U", "grafana", "-d", "authdb", "-A", "-t", "-c", sql],
            b"",
            &[("PGPASSWORD", password)],
        )
    };
    let create = run(
        "s3cret",
        "CREATE TABLE t (host VARCHAR TAG, time TIMESTAMP, v DOUBLE)",
    );
    assert_eq!(
        text(&create.stdout).trim(),
        "CREATE TABLE",
        "{}",
        text(&create.stderr)
    );
    let write = run(
        "s3cret",
        "INSERT INTO t (time, host, v) VALUES ('2026-01-01T00:00:00Z', 'a', 1.5)",
    );
    assert!(write.status.success(), "{}", text(&write.stderr));
    assert_eq!(text(&write.stdout).trim(), "INSERT 0 1");
    let read = run("dashboards", "SELECT host, v FROM t");
    assert!(read.status.success(), "{}", text(&read.stderr));
    assert_eq!(text(&read.stdout).trim(), "a|1.5");
    let refused = run(
        "dashboards",
        "INSERT INTO t (time, host, v) VALUES ('2026-01-01T00:00:01Z', 'b', 2)",
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("read-only token cannot run statements that change data"),
        "{}",
        text(&refused.stderr)
    );
    let wrong = run("nope", "SELECT 1");
    assert!(!wrong.status.success());
    assert!(
        text(&wrong.stderr).contains("password authentication failed for user \"grafana\""),
        "{}",
        text(&wrong.stderr)
    );
    let count = run("s3cret", "SELECT count(*) FROM t");
    assert_eq!(text(&count.stdout).trim(), "1");
    assert!(server.stop().success());
}

#[test]
fn ssl_is_refused_without_tls_and_spoken_with_it() {
    let dir = data_dir();
    let plain = start(dir.path(), &[]);
    let sql = ["-U", "u", "-d", "db", "-A", "-t", "-c", "SELECT 40 + 2"];
    let refused = psql(&plain, &sql, b"", &[("PGSSLMODE", "require")]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("server does not support SSL"),
        "{}",
        text(&refused.stderr)
    );
    let preferred = psql(&plain, &sql, b"", &[("PGSSLMODE", "prefer")]);
    assert_eq!(
        text(&preferred.stdout).trim(),
        "42",
        "{}",
        text(&preferred.stderr)
    );
    assert!(plain.stop().success());

    let tls = |name: &str| {
        tests_dir()
            .join("fixtures/tls")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let dir = data_dir();
    let secure = start(
        dir.path(),
        &[
            "--tls-cert",
            &tls("server.pem"),
            "--tls-key",
            &tls("server.key"),
        ],
    );
    let ca = tls("ca.pem");
    let verified = psql(
        &secure,
        &sql,
        b"",
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca.as_str())],
    );
    assert_eq!(
        text(&verified.stdout).trim(),
        "42",
        "{}",
        text(&verified.stderr)
    );
    assert!(secure.stop().success());
}

#[test]
fn a_taken_default_port_is_a_warning_and_a_taken_chosen_port_an_error() {
    // Hold 127.0.0.1:5432 (if another process holds it already, it is taken all the same).
    let _held = std::net::TcpListener::bind("127.0.0.1:5432");
    let dir = data_dir();
    let mut child = Command::new(common::strata_binary())
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--http", "127.0.0.1:0", "--log", "info"])
        .env_remove("STRATA_PG")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stderr));
    let mut log = String::new();
    let started = loop {
        let Some(Ok(line)) = lines.next() else {
            break false;
        };
        log.push_str(&line);
        log.push('\n');
        if line.contains("listening for HTTP") {
            break true;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(started, "the server did not start:\n{log}");
    assert!(
        log.contains("Postgres wire not started: 127.0.0.1:5432 is in use"),
        "{log}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().to_string();
    let dir = data_dir();
    let out = Command::new(common::strata_binary())
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--http", "127.0.0.1:0", "--pg", &port])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains(&port), "{}", text(&out.stderr));
}
