//! End-to-end: `strata bench mixed` (seed 004's IoT mix) at a tiny size against a real
//! `strata serve` on 127.0.0.1. Over HTTP and over TCP every operation runs without a
//! failure or a wrong answer, point and latest-row answers are verified value by value, and
//! the points the report counts are exactly those a `/sql` count finds on the server. Also:
//! a server the command starts itself, and bad flags.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{Server, data_dir, json, scratch, strata, text};
use serde_json::Value;
use strata_bench::http::{BodyEncoding, HttpClient};

/// Sensors per device in these runs.
const SENSORS: u64 = 4;
/// Rows per INGESTION in these runs.
const BATCH_ROWS: u64 = 5;
/// Every read weighs 1 and INGESTION 11: half the operations are reads, so a short run
/// draws each read shape many times.
const EVEN_MIX: &str = "ingestion=11,precise_point=1,time_range=1,value_range=1,agg_range=1,\
                        agg_value=1,agg_range_value=1,group_by=1,latest_point=1,\
                        range_query_desc=1,value_range_query_desc=1,group_by_desc=1";

/// The default mix as the report spells it: read:write 1:9, the reads equally.
const DEFAULT_MIX: &str = "ingestion=99,precise_point=1,time_range=1,value_range=1,agg_range=1,\
                           agg_value=1,agg_range_value=1,group_by=1,latest_point=1,\
                           range_query_desc=1,value_range_query_desc=1,group_by_desc=1";

/// Runs the benchmark against `server` (TCP writes when `tcp` names its listener) and
/// returns its JSON report.
fn run_against(server: &Server, db: &str, tcp: Option<String>, name: &str) -> Value {
    let dir = scratch(name);
    let report = dir.join("mixed.json");
    let url = format!("http://{}", server.http);
    let mut args: Vec<String> = [
        "bench",
        "mixed",
        "--server",
        &url,
        "--db",
        db,
        "--clients",
        "3",
        "--devices",
        "6",
        "--groups",
        "2",
        "--sensors",
        "4",
        "--batch-rows",
        "5",
        "--prefill-rows",
        "60",
        "--ops",
        "150",
        "--mix",
        EVEN_MIX,
        "--seed",
        "11",
        "--json",
        report.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(addr) = tcp {
        args.extend(["--tcp".to_string(), "--tcp-addr".to_string(), addr]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = strata(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("Result Matrix"), "{stdout}");
    assert!(stdout.contains("Latency Matrix (ms)"), "{stdout}");
    json(&report)
}

/// Points stored in `db` on the server: its rows (every row has every sensor) x sensors.
/// (`/sql` answers are chunked: the benchmark crate's client reads them.)
fn server_points(server: &Server, db: &str) -> u64 {
    let mut client = HttpClient::new(&server.http.to_string(), Duration::from_secs(30));
    let response = client
        .post(
            &format!("/sql?db={db}&format=json"),
            b"SELECT count(*) FROM root",
            BodyEncoding::Text,
        )
        .unwrap();
    let body: Value = serde_json::from_slice(&response.body).unwrap();
    assert_eq!(response.status, 200, "{body}");
    body["rows"][0][0].as_u64().unwrap() * SENSORS
}

fn operation<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["operation"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

/// Every operation ran, none failed, no answer was wrong, and the points add up.
fn assert_clean(report: &Value) {
    let ops = report["operations"].as_array().unwrap();
    assert_eq!(ops.len(), 12, "{report}");
    for op in ops {
        let count = op["count"].as_u64().unwrap();
        assert!(count > 0, "{op}");
        assert_eq!(op["failed"], 0, "{op}");
        assert_eq!(op["wrong"], 0, "{op}");
        assert_eq!(op["ok"].as_u64().unwrap(), count, "{op}");
        assert!(op["p50_ms"].as_f64().unwrap() > 0.0, "{op}");
        assert!(op["max_ms"].as_f64().unwrap() >= op["p99_ms"].as_f64().unwrap());
    }
    assert_eq!(report["error_count"], 0, "{report}");
    assert_eq!(report["shortfall_points"], 0, "{report}");
    // Points and latest rows are checked value by value, every one of them.
    for name in ["PRECISE_POINT", "LATEST_POINT"] {
        let op = operation(report, name);
        assert!(op["verified"].as_u64().unwrap() > 0, "{op}");
        assert_eq!(op["verified"], op["ok"], "{op}");
    }
    // The window reads are checked too (row counts, count aggregates, order).
    for name in [
        "TIME_RANGE",
        "VALUE_RANGE_QUERY_DESC",
        "AGG_RANGE",
        "GROUP_BY_DESC",
    ] {
        let op = operation(report, name);
        assert_eq!(op["verified"], op["ok"], "{op}");
    }
    let ingestion = operation(report, "INGESTION");
    let written = ingestion["ok"].as_u64().unwrap() * BATCH_ROWS * SENSORS;
    assert_eq!(report["points_sent"].as_u64().unwrap(), written, "{report}");
    assert_eq!(report["points_visible"].as_u64().unwrap(), written);
    assert_eq!(ingestion["points"].as_u64().unwrap(), written);
    assert_eq!(report["prefill_points"].as_u64().unwrap(), 6 * 60 * SENSORS);
}

#[test]
fn http_writes_count_when_acknowledged_and_every_answer_is_right() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let report = run_against(&server, "iot", None, "bench_mixed_http");
    assert_eq!(report["protocol"], "http");
    assert_clean(&report);
    assert_eq!(report["visibility_checks"], 0);
    let counted =
        report["prefill_points"].as_u64().unwrap() + report["points_visible"].as_u64().unwrap();
    assert_eq!(server_points(&server, "iot"), counted);
    assert!(server.stop().success());
}

#[test]
fn tcp_writes_count_once_a_read_sees_them() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--tcp", "127.0.0.1:0", "--tcp-db", "iot"]);
    let tcp = server.tcp.unwrap().to_string();
    let report = run_against(&server, "iot", Some(tcp), "bench_mixed_tcp");
    assert_eq!(report["protocol"], "tcp");
    assert_clean(&report);
    // The end-of-run wait asked the server at least once per device.
    assert!(
        report["visibility_checks"].as_u64().unwrap() >= 6,
        "{report}"
    );
    let counted =
        report["prefill_points"].as_u64().unwrap() + report["points_visible"].as_u64().unwrap();
    assert_eq!(server_points(&server, "iot"), counted);
    assert!(server.stop().success());
}

#[test]
fn a_started_server_runs_the_default_mix() {
    let dir = scratch("bench_mixed_started");
    let report = dir.join("mixed.json");
    let out = strata(&[
        "bench",
        "mixed",
        "--clients",
        "2",
        "--sensors",
        "3",
        "--batch-rows",
        "4",
        "--prefill-rows",
        "30",
        "--ops",
        "60",
        "--out-dir",
        dir.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stderr).contains("started strata serve"));
    let r = json(&report);
    assert_eq!(r["clients"], 2);
    assert_eq!(r["devices"], 2);
    assert_eq!(r["mix"].as_str().unwrap(), DEFAULT_MIX);
    assert_eq!(r["failed"], 0, "{r}");
    assert_eq!(r["wrong"], 0, "{r}");
    assert!(
        operation(&r, "INGESTION")["count"].as_u64().unwrap() > 0,
        "{r}"
    );
    assert!(r["server_cpu_percent"].as_f64().is_some(), "{r}");
    assert!(dir.join("server.log").exists());
}

#[test]
fn bad_flags_are_explained() {
    let cases: [(&[&str], &str); 7] = [
        (&["--mix", "ingest=1"], "unknown operation `ingest`"),
        (&["--mix", "ingestion=x"], "whole number"),
        (&["--clients", "5", "--devices", "3"], "IS_CLIENT_BIND"),
        (&["--tcp", "--server", "http://127.0.0.1:9"], "--tcp-addr"),
        (&["--server", "ftp://127.0.0.1:9"], "--server"),
        (&["--query-sensors", "11"], "--query-sensors"),
        (&["--ops", "0"], "--ops"),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["bench", "mixed"];
        args.extend_from_slice(flags);
        let out = strata(&args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{flags:?} succeeded");
        assert!(stderr.contains(needle), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flags:?}: {stderr}");
    }
}
