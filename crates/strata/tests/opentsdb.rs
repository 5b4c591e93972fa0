//! End-to-end: OpenTSDB's write protocols.
//!
//! - The OpenTSDB Python client (`opentsdb-py` from PyPI, pinned in `.ci/run` and the
//!   README's test command; `clients/opentsdb_python.py`) sends a seeded data set to Strata,
//!   half over telnet `put` (`--opentsdb`) and half over HTTP `/api/put` (gzip), and all of
//!   it to the real InfluxDB 1.6.7's OpenTSDB listener (Debian's `influxdb`, the oracle):
//!   both servers must then hold the same series and points, read through `/query` on
//!   each.
//! - Strata alone: the telnet answers to bad lines (numbered), `version`, `help` and
//!   `exit`; `/api/put`'s answers with and without `details`/`summary`; PromQL reading an
//!   OpenTSDB metric; the auth token on both.
//!
//! Never skipped: without the client or influxd the test fails, saying how to install it.

#![allow(clippy::unwrap_used)]

mod common;
mod influxql_oracle;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, data_dir, gzip, metric};
use influxql_oracle::{Influxd, encode, post_query};

/// The pinned client, as `.ci/run` and the README install it.
const PINNED: &str = "opentsdb-py==0.6.0";
/// The client's data set has this many points (`clients/opentsdb_python.py`).
const POINTS: usize = 600;

/// The data set's seed: `STRATA_OPENTSDB_SEED`, or 7.
fn seed() -> String {
    std::env::var("STRATA_OPENTSDB_SEED").unwrap_or_else(|_| "7".into())
}

/// Runs the Python client; returns its counts.
fn send_with_client(protocol: &str, to: SocketAddr, part: &str) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/opentsdb_python.py");
    let mut command = Command::new("python3");
    command
        .arg(&script)
        .args([protocol, &to.ip().to_string(), &to.port().to_string()])
        .args([seed().as_str(), part]);
    if protocol == "HTTP" {
        command.arg("--check-alive");
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the OpenTSDB client failed sending to {to} over {protocol}:\nstdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("client output is not JSON ({e}): {stdout}"))
}

/// Every series of database `db` as `/query` answers `SELECT * FROM /.*/ GROUP BY *`
/// (nanosecond times), in a fixed order.
fn all_series(http: SocketAddr, db: &str) -> Vec<serde_json::Value> {
    let q = encode("SELECT * FROM /.*/ GROUP BY *");
    let reply =
        influxql_oracle::send(http, "GET", &format!("/query?db={db}&epoch=ns&q={q}"), b"").unwrap();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let answer: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    let mut series = answer["results"][0]["series"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    series.sort_by_key(|s| format!("{}{}", s["name"], s["tags"]));
    series
}

fn points_in(series: &[serde_json::Value]) -> usize {
    series
        .iter()
        .map(|s| s["values"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Polls until database `db` holds `points` points (30 s at most); returns its series.
fn wait_for_points(http: SocketAddr, db: &str, points: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let series = all_series(http, db);
        let held = points_in(&series);
        if held >= points {
            return series;
        }
        assert!(
            Instant::now() < deadline,
            "{http} holds {held} of {points} points after 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn python_client_over_telnet_and_http_stores_what_influxdb_stores() {
    let import = Command::new("python3")
        .args(["-c", "import opentsdb"])
        .output()
        .expect("run python3");
    assert!(
        import.status.success(),
        "python3 cannot import the OpenTSDB client `opentsdb` ({}); .ci/run installs it \
         (python3 -m pip install {PINNED}), as does the README's test command",
        String::from_utf8_lossy(&import.stderr).trim()
    );
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--opentsdb", "127.0.0.1:0"]);
    let telnet = server.opentsdb.expect("the OpenTSDB listener is logged");
    let scratch = tempfile::tempdir().unwrap();
    let influxd = Influxd::start_with_opentsdb(&scratch.path().join("influxd"), "opentsdb");
    let created = post_query(influxd.http, "CREATE DATABASE opentsdb").unwrap();
    assert_eq!(created.status, 200, "{}", created.text());

    let over_telnet = send_with_client("TELNET", telnet, "even");
    let over_http = send_with_client("HTTP", server.http, "odd");
    // The HTTP client counts what `/api/put?details` answered: every point stored.
    assert_eq!(over_http["success"], POINTS / 2, "{over_http}");
    assert_eq!(over_http["failed"], 0, "{over_http}");
    assert_eq!(over_telnet["success"], POINTS / 2, "{over_telnet}");
    // influxd's HTTP /api/put answers 204 with no body, which this client cannot read:
    // the oracle gets all of it over telnet.
    send_with_client("TELNET", influxd.opentsdb.unwrap(), "all");

    let ours = wait_for_points(server.http, "opentsdb", POINTS);
    let mut theirs = wait_for_points(influxd.http, "opentsdb", POINTS);
    undo_influxdb_millisecond_bug(&mut theirs);
    assert_eq!(points_in(&ours), POINTS);
    assert_eq!(
        ours.len(),
        theirs.len(),
        "series differ:\nStrata: {:?}\nInfluxDB: {:?}",
        ours.iter()
            .map(|s| (&s["name"], &s["tags"]))
            .collect::<Vec<_>>(),
        theirs
            .iter()
            .map(|s| (&s["name"], &s["tags"]))
            .collect::<Vec<_>>()
    );
    for (mine, oracle) in ours.iter().zip(&theirs) {
        assert_eq!(mine, oracle, "a series differs from InfluxDB's");
    }
    let metrics = server.metrics();
    assert_eq!(
        metric(
            &metrics,
            "strata_protocol_rows_written_total{protocol=\"opentsdb\"}"
        ),
        (POINTS / 2) as f64
    );
    assert!(server.stop().success());
}

/// InfluxDB 1.6.7's OpenTSDB listener reads a 13-digit (millisecond) timestamp as
/// `time.Unix(ts/1000, (ts%1000)*1000)`: the milliseconds land as microseconds
/// (1700000087319 is stored as …087.000319 s). OpenTSDB, and Strata, store …087.319 s. The
/// oracle's times are put right before comparing: a time whose fraction of a second is a
/// whole number of microseconds below 1 ms is moved to that many milliseconds.
fn undo_influxdb_millisecond_bug(series: &mut [serde_json::Value]) {
    for one in series {
        for row in one["values"].as_array_mut().unwrap() {
            let time = row[0].as_i64().unwrap();
            let fraction = time.rem_euclid(1_000_000_000);
            if fraction % 1_000 == 0 && fraction < 1_000_000 {
                row[0] = (time - fraction + fraction / 1_000 * 1_000_000).into();
            }
        }
    }
}

/// Sends `text` over a fresh telnet connection and reads what the server answers until it
/// closes the connection (after `exit`) or 2 s pass without a byte.
fn telnet(addr: SocketAddr, text: &[u8], until_closed: bool) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(text).unwrap();
    if !until_closed {
        stream.shutdown(std::net::Shutdown::Write).unwrap();
    }
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    BufReader::new(stream).read_to_string(&mut answer).unwrap();
    answer
}

fn count(server: &Server, db: &str, table: &str) -> serde_json::Value {
    let q = encode(&format!("SELECT count(value) FROM \"{table}\""));
    let response = server.request("GET", &format!("/query?db={db}&q={q}"), &[], b"");
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["results"][0]["series"][0]["values"][0][1].clone()
}

#[test]
fn telnet_answers_bad_lines_by_number_and_exit_closes() {
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &["--opentsdb", "127.0.0.1:0", "--max-line-bytes", "200"],
    );
    let addr = server.opentsdb.unwrap();
    let long = format!("put sys.cpu 1700000000 1 host={}\n", "x".repeat(300));
    let text = format!(
        "put sys.cpu 1700000000 1.5 host=a\n\
         put sys.cpu 1700000001 abc host=a\n\
         {long}\
         put sys.cpu 1700000002 2 host\n\
         version\n\
         help\n\
         bogus\n\
         put sys.cpu 1700000003000 3 host=a dc=x\r\n\
         put sys.cpu 1700000004 4 host=a value=1\n\
         exit\n\
         put sys.cpu 1700000005 5 host=a\n"
    );
    let answer = telnet(addr, text.as_bytes(), true);
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines.len(), 7, "{answer}");
    assert!(
        lines[0].contains("line longer than the limit of 200 bytes"),
        "{answer}"
    );
    assert!(
        lines[1].starts_with("put: line 2: Unable to parse value to a number: \"abc\""),
        "{answer}"
    );
    // Line 3 was the long one: the numbers after it still count it.
    assert!(
        lines[2].starts_with("put: line 4: invalid tag: \"host\""),
        "{answer}"
    );
    assert!(lines[3].starts_with("strata "), "{answer}");
    assert_eq!(lines[4], "available commands: exit help put version");
    assert!(
        lines[5].starts_with("unknown command: bogus (line 7)"),
        "{answer}"
    );
    // The engine refuses a tag named as the field: answered at its line.
    assert!(lines[6].starts_with("put: line 9: "), "{answer}");
    // Lines 1 and 8 are stored; the line after `exit` never is.
    assert_eq!(count(&server, "opentsdb", "sys.cpu"), 2);
    let metrics = server.metrics();
    assert_eq!(
        metric(&metrics, "strata_bad_lines_total{protocol=\"opentsdb\"}"),
        5.0
    );
    assert_eq!(metric(&metrics, "strata_opentsdb_connections_total"), 1.0);

    // A client that sends only good lines and closes gets no answer at all.
    let quiet = telnet(
        addr,
        b"put sys.mem 1700000000 7 host=b\nput sys.mem 1700000001 8 host=b",
        false,
    );
    assert_eq!(quiet, "");
    common::eventually("the last line without a newline", || {
        count(&server, "opentsdb", "sys.mem") == 2
    });
    assert!(server.stop().success());
}

fn put(server: &Server, query: &str, body: &[u8], headers: &[(&str, &str)]) -> common::Response {
    server.request("POST", &format!("/api/put{query}"), headers, body)
}

#[test]
fn api_put_answers_as_opentsdb_does() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let one =
        br#"{"metric":"sys.cpu.user","timestamp":1700000000,"value":42.5,"tags":{"host":"web01"}}"#;
    assert_eq!(put(&server, "", one, &[]).status, 204);
    let mixed = br#"[
        {"metric":"sys.cpu.user","timestamp":1700000001,"value":"43","tags":{"host":"web01"}},
        {"metric":"sys.cpu.user","timestamp":1700000002,"value":"forty","tags":{"host":"web01"}},
        {"metric":"sys.cpu.user","timestamp":1700000003000,"value":44,"tags":{"host":"web02","port":8080}},
        {"metric":"sys.cpu.user","timestamp":1700000004,"value":45,"tags":{"value":"clash"}}
    ]"#;
    // Without details: OpenTSDB's error object, the good points stored.
    let plain = put(&server, "", mixed, &[]);
    assert_eq!(plain.status, 400, "{}", plain.text());
    let error = &plain.json()["error"];
    assert_eq!(error["code"], 400);
    assert_eq!(error["message"], "One or more data points had errors");
    let details = error["details"].as_str().unwrap();
    assert!(
        details.starts_with(
            "2 of 4 data points were not stored, first: data point 1: Unable to parse value"
        ),
        "{details}"
    );
    // With details: each failed point echoed with why.
    let detailed = put(&server, "?details", mixed, &[]);
    assert_eq!(detailed.status, 400);
    let answer = detailed.json();
    assert_eq!(answer["success"], 2);
    assert_eq!(answer["failed"], 2);
    let errors = answer["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{answer}");
    assert_eq!(errors[0]["datapoint"]["value"], "forty");
    assert!(
        errors[0]["error"]
            .as_str()
            .unwrap()
            .contains("Unable to parse value")
    );
    assert_eq!(errors[1]["datapoint"]["tags"]["value"], "clash");
    // With summary and every point good: 200 with the counts.
    let good =
        br#"[{"metric":"sys.cpu.user","timestamp":1700000005,"value":1,"tags":{"host":"web03"}}]"#;
    let summary = put(&server, "?summary", good, &[]);
    assert_eq!(summary.status, 200);
    assert_eq!(
        summary.json(),
        serde_json::json!({"success": 1, "failed": 0})
    );
    // gzip, and another database.
    let gzipped = put(
        &server,
        "?db=other",
        &gzip(one),
        &[("Content-Encoding", "gzip")],
    );
    assert_eq!(gzipped.status, 204, "{}", gzipped.text());
    assert_eq!(count(&server, "other", "sys.cpu.user"), 1);
    // Four distinct points: the mixed body wrote the same two twice.
    assert_eq!(count(&server, "opentsdb", "sys.cpu.user"), 4);
    // Bad bodies.
    let empty = put(&server, "", b"[]", &[]);
    assert_eq!(empty.status, 400);
    assert!(empty.text().contains("No datapoints"), "{}", empty.text());
    let broken = put(&server, "", b"[{\"metric\":\n  \"m\",,}]", &[]);
    assert_eq!(broken.status, 400);
    assert!(broken.text().contains("line 2 column"), "{}", broken.text());
    let scalar = put(&server, "", b"42", &[]);
    assert_eq!(scalar.status, 400);
    assert_eq!(server.request("GET", "/api/put", &[], b"").status, 405);
    let version = server.request("GET", "/api/version", &[], b"");
    assert_eq!(version.status, 200);
    assert_eq!(version.json()["server"], "strata");
    // PromQL reads the metric by its name.
    let q = encode("{__name__=\"sys.cpu.user\",host=\"web01\"}");
    let promql = server.request(
        "GET",
        &format!("/api/v1/query?db=opentsdb&query={q}&time=1700000002"),
        &[],
        b"",
    );
    assert_eq!(promql.status, 200, "{}", promql.text());
    let result = &promql.json()["data"]["result"];
    assert_eq!(result[0]["value"][1], "43", "{result}");
    assert!(server.stop().success());
}

#[test]
fn the_auth_token_guards_both_protocols() {
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &["--opentsdb", "127.0.0.1:0", "--auth-token", "s3cret"],
    );
    let body = br#"{"metric":"m","timestamp":1700000000,"value":1,"tags":{"a":"b"}}"#;
    assert_eq!(put(&server, "", body, &[]).status, 401);
    let with_token = put(&server, "", body, &[("Authorization", "Token s3cret")]);
    assert_eq!(with_token.status, 204, "{}", with_token.text());
    let addr = server.opentsdb.unwrap();
    let refused = telnet(addr, b"put m 1700000001 2 a=b\n", false);
    assert!(refused.starts_with("ERR authorization failed"), "{refused}");
    let answer = telnet(
        addr,
        b"auth s3cret\nput m 1700000002 3 a=b\nput m x 3 a=b\n",
        false,
    );
    // The auth line is line 1.
    assert!(
        answer.starts_with("put: line 3: Invalid timestamp"),
        "{answer}"
    );
    // Lines that come with the auth line are run at once, not when more arrive.
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(b"auth s3cret\nversion\n").unwrap();
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    assert!(line.starts_with("strata "), "{line}");
    drop(stream);
    let q = encode("SELECT count(value) FROM m");
    let counted = server.request(
        "GET",
        &format!("/query?db=opentsdb&q={q}"),
        &[("Authorization", "Token s3cret")],
        b"",
    );
    assert_eq!(
        counted.json()["results"][0]["series"][0]["values"][0][1],
        2,
        "{}",
        counted.text()
    );
    assert!(server.stop().success());
}
