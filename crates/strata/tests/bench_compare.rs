//! End-to-end: `strata bench compare` against a real Strata server and a real InfluxDB 1.x
//! (Debian's `influxdb` package, influxd 1.6.7; `.ci/run` installs it), both on loopback
//! ports, with a small cpu-only load. A missing influxd fails the test; it never skips.
//!
//! Checked: both servers stored every row (counted through each one's own `/query`), both
//! were sent bodies with the same checksum, every query type has a median and no failure on
//! both (InfluxQL on both, PromQL on Strata with `--promql-on-strata`), and compare.csv and
//! compare.svg hold every target. VictoriaMetrics is not installed in CI: its PromQL is the
//! one Strata answers here, plus the unit tests of `strata_bench::queries::tsbs_promql`.

#![allow(clippy::unwrap_used)]

mod common;
mod influxql_oracle;

use std::net::SocketAddr;

use common::{Server, json, scratch, strata, text};
use influxql_oracle::{Influxd, encode, send};

/// `SELECT count(usage_user) FROM cpu` in database bench, through the server's `/query`.
fn stored_rows(addr: SocketAddr) -> u64 {
    let q = encode("SELECT count(usage_user) FROM cpu");
    let reply = send(addr, "POST", &format!("/query?db=bench&q={q}"), b"").unwrap();
    let body = reply.text();
    assert_eq!(reply.status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    answer["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("no count in {answer}"))
}

const HOSTS: u64 = 10;
/// Two hours of rows every minute.
const ROWS_PER_HOST: u64 = 120;
const TYPES: [&str; 5] = [
    "single-groupby-1-1-1",
    "single-groupby-5-1-12",
    "cpu-max-all-8",
    "double-groupby-1",
    "lastpoint",
];

#[test]
fn compare_loads_strata_and_influxdb_with_the_same_bytes_and_queries_both() {
    let dir = scratch("bench_compare_e2e");
    let strata_data = dir.join("strata-data");
    let server = Server::start(&strata_data, &[]);
    let influxd = Influxd::start(&dir.join("influxd"));
    let out = dir.join("out");
    let report = dir.join("compare.json");
    let strata_target = format!(
        "strata=http://{},pid={},data={}",
        server.http,
        server.pid(),
        strata_data.display()
    );
    let influx_target = format!(
        "influxdb=http://{},pid={},data={}",
        influxd.http,
        influxd.pid(),
        influxd.dir().display()
    );
    let run = strata(&[
        "bench",
        "compare",
        "--target",
        &strata_target,
        "--target",
        &influx_target,
        "--hosts",
        &HOSTS.to_string(),
        "--duration",
        "2h",
        "--interval",
        "60s",
        "--workers",
        "2",
        "--batch-rows",
        "100",
        "--queries",
        "3",
        "--promql-on-strata",
        "--out-dir",
        out.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    let stdout = text(&run.stdout);
    assert!(
        run.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}\ninfluxd:\n{}",
        text(&run.stderr),
        influxd.log()
    );
    let rows = HOSTS * ROWS_PER_HOST;

    // Every row reached each server, counted by the server itself.
    assert_eq!(stored_rows(server.http), rows);
    assert_eq!(stored_rows(influxd.http), rows);

    let r = json(&report);
    let targets = r["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2, "{r}");
    let (s, i) = (&targets[0], &targets[1]);
    assert_eq!(
        (s["name"].as_str(), s["kind"].as_str()),
        (Some("strata"), Some("strata"))
    );
    assert_eq!(
        (i["name"].as_str(), i["kind"].as_str()),
        (Some("influxdb"), Some("influxdb"))
    );
    // The same bodies, checked by checksum, batch count and bytes.
    let checksum = s["checksum"].as_str().unwrap();
    assert_eq!(checksum.len(), 18, "{checksum}");
    assert_eq!(i["checksum"].as_str(), Some(checksum));
    assert_eq!(s["batches"], 12);
    assert_eq!(i["batches"], 12);
    assert_eq!(s["body_bytes"], i["body_bytes"]);
    assert!(
        stdout.contains(&format!("FNV-1a 64 {checksum}: the same for every target")),
        "{stdout}"
    );
    for t in [s, i] {
        let load = &t["load"];
        assert_eq!(load["rows"], rows, "{t}");
        assert_eq!(load["rows_generated"], rows, "{t}");
        assert_eq!(load["points"], rows * 10, "{t}");
        assert_eq!(load["errors"], 0, "{t}");
        assert!(load["bytes_per_point"].as_f64().unwrap() > 0.0, "{t}");
        assert!(load["peak_rss_mb"].as_f64().unwrap() > 1.0, "{t}");
        assert!(
            load["rate_withheld"]
                .as_str()
                .unwrap()
                .contains("under 10 s")
        );
        assert!(t["cores"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
    }
    assert!(
        s["load"]["disk_bytes_note"]
            .as_str()
            .unwrap()
            .contains("after a flush (POST /api/v1/backup"),
        "{s}"
    );

    // Every type has a median and no failure: InfluxQL on both, PromQL on Strata.
    let runs = |t: &serde_json::Value| -> Vec<(String, Vec<serde_json::Value>)> {
        t["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| {
                (
                    run["language"].as_str().unwrap().to_string(),
                    run["types"].as_array().unwrap().clone(),
                )
            })
            .collect()
    };
    let strata_runs = runs(s);
    let influx_runs = runs(i);
    let languages = |runs: &[(String, Vec<serde_json::Value>)]| -> Vec<String> {
        runs.iter().map(|(l, _)| l.clone()).collect()
    };
    assert_eq!(languages(&strata_runs), ["influxql", "promql"]);
    assert_eq!(languages(&influx_runs), ["influxql"]);
    for (language, types) in strata_runs.iter().chain(&influx_runs) {
        let names: Vec<&str> = types
            .iter()
            .map(|t| t["query_type"].as_str().unwrap())
            .collect();
        assert_eq!(names, TYPES, "{language}");
        for t in types {
            if language == "promql" && t["query_type"] == "lastpoint" {
                assert!(
                    t["unsupported"]
                        .as_str()
                        .unwrap()
                        .contains("TSBS has no PromQL"),
                    "{t}"
                );
                continue;
            }
            assert_eq!(t["failures"], 0, "{language}: {t}");
            assert_eq!(t["answered"], 3, "{language}: {t}");
            assert!(t["median_ms"].as_f64().unwrap() > 0.0, "{language}: {t}");
            assert!(
                t["rows"].as_u64().unwrap() > 0,
                "{language}: data answered: {t}"
            );
        }
    }

    // The table, the CSV and the chart.
    assert!(
        stdout.contains("| Target | Kind | Language | Cores | Load (points/s) |"),
        "{stdout}"
    );
    assert!(!stdout.contains("FAILED"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[1].starts_with("strata,strata,influxql,"), "{csv}");
    assert!(lines[2].starts_with("strata,strata,promql,"), "{csv}");
    assert!(lines[3].starts_with("influxdb,influxdb,influxql,"), "{csv}");
    assert!(lines.iter().skip(1).all(|l| l.contains(checksum)), "{csv}");
    let svg = std::fs::read_to_string(out.join("compare.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("influxdb (influxql)") && svg.contains("strata (promql)"));
    assert!(
        !out.join("flush-backup-strata").exists(),
        "the flush's backup copy is deleted"
    );

    drop(influxd);
    assert!(server.stop().success());
}

#[test]
fn bad_targets_are_refused_with_a_clear_message() {
    let run = strata(&["bench", "compare", "--target", "peer=http://127.0.0.1:1"]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(stderr.contains("add kind=strata"), "{stderr}");
    let run = strata(&[
        "bench",
        "compare",
        "--target",
        "strata=http://127.0.0.1:1",
        "--target",
        "strata=http://127.0.0.1:2",
    ]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(stderr.contains("\"strata\" is given twice"), "{stderr}");
}
