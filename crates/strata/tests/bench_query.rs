//! End-to-end: `strata bench query --embedded --load` on tiny data sets, with the JSON
//! report checked for shape and counts; the HTTP target against the real `strata serve`
//! (`/sql` in each format, and `/query` with TSBS's InfluxQL); and clear errors.

mod common;

use common::{json, scratch, strata, text};

/// The result entry of `query_type` at `clients`.
fn result<'a>(
    report: &'a serde_json::Value,
    query_type: &str,
    clients: u64,
) -> &'a serde_json::Value {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["type"] == query_type && r["clients"] == clients)
        .unwrap_or_else(|| panic!("no {query_type} x {clients} in {report}"))
}

#[test]
fn embedded_cpu_only_load_and_query() {
    let dir = scratch("bench_query_cpu");
    let data = dir.join("data");
    let report_path = dir.join("q.json");
    let args = [
        "bench",
        "query",
        "--embedded",
        "--load",
        "--hosts",
        "4",
        "--duration",
        "2h",
        "--workers",
        "2",
        "--clients",
        "1,2",
        "--queries",
        "6",
        "--types",
        "single-groupby-1-1-1,cpu-max-all-1,lastpoint,groupby-orderby-limit,double-groupby-1",
        "--data-dir",
        data.to_str().unwrap(),
        "--json",
        report_path.to_str().unwrap(),
    ];
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("query type"), "{stdout}");
    assert!(stdout.contains("flushed and compacted"), "{stdout}");
    assert!(
        stdout.contains("double-groupby-1: its window is longer"),
        "{stdout}"
    );
    let report = json(&report_path);
    assert_eq!(report["database"], "bench");
    assert_eq!(report["queries_per_type"], 6);
    assert_eq!(report["seed"], 123);
    assert_eq!(report["results"].as_array().unwrap().len(), 10, "{report}");
    for entry in report["results"].as_array().unwrap() {
        assert_eq!(entry["count"], 6, "{entry}");
        for key in [
            "min_ms",
            "median_ms",
            "mean_ms",
            "p99_ms",
            "max_ms",
            "queries_per_minute",
        ] {
            assert!(entry[key].as_f64().unwrap() > 0.0, "{key} in {entry}");
        }
        assert!(entry["min_ms"].as_f64() <= entry["median_ms"].as_f64());
        assert!(entry["median_ms"].as_f64() <= entry["max_ms"].as_f64());
    }
    for clients in [1, 2] {
        // 1-hour windows at whole seconds: 60 minute buckets, 61 when the start is inside
        // a minute with rows left in it.
        let single = result(&report, "single-groupby-1-1-1", clients);
        assert!(
            (60..=61).contains(&single["rows_min"].as_u64().unwrap()),
            "{single}"
        );
        assert!(
            (60..=61).contains(&single["rows_max"].as_u64().unwrap()),
            "{single}"
        );
        assert_eq!(result(&report, "lastpoint", clients)["rows_per_query"], 4.0);
        assert_eq!(
            result(&report, "groupby-orderby-limit", clients)["rows_max"],
            5
        );
        // The whole 2 hours (clamped): 2 hour buckets x 4 hosts.
        assert_eq!(
            result(&report, "double-groupby-1", clients)["rows_per_query"],
            8.0
        );
        let max_all = result(&report, "cpu-max-all-1", clients);
        assert_eq!(max_all["rows_per_query"], 2.0, "{max_all}");
    }

    // The same flags without --load query the data left there; the same seed gives the
    // same queries, so the same rows.
    let again = dir.join("again.json");
    let mut args: Vec<&str> = args.iter().copied().filter(|a| *a != "--load").collect();
    let json_at = args.len() - 1;
    args[json_at] = again.to_str().unwrap();
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("not loaded by this run"));
    let again = json(&again);
    for (a, b) in report["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["results"].as_array().unwrap())
    {
        assert_eq!(a["rows_total"], b["rows_total"], "{a} vs {b}");
    }
}

#[test]
fn embedded_meters_count_and_select_all() {
    let dir = scratch("bench_query_meters");
    let data = dir.join("data");
    let report_path = dir.join("q.json");
    let out = strata(&[
        "bench",
        "query",
        "--workload",
        "meters",
        "--meters",
        "5",
        "--rows-per-meter",
        "200",
        "--load",
        "--clients",
        "1",
        "--queries",
        "2",
        "--types",
        "count,sum-voltage,max-current,select-all",
        "--data-dir",
        data.to_str().unwrap(),
        "--json",
        report_path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = json(&report_path);
    assert_eq!(report["results"].as_array().unwrap().len(), 4);
    for t in ["count", "sum-voltage", "max-current"] {
        assert_eq!(result(&report, t, 1)["rows_total"], 2, "{t}");
    }
    let all = result(&report, "select-all", 1);
    assert_eq!(all["rows_per_query"], 1000.0, "{all}");
    assert!(all["rows_per_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn clear_errors_for_missing_data_and_bad_flags() {
    let dir = scratch("bench_query_errors");
    let missing = dir.join("nothing-here");
    let out = strata(&[
        "bench",
        "query",
        "--hosts",
        "10",
        "--duration",
        "1h",
        "--data-dir",
        missing.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(stderr.contains("--load"), "{stderr}");

    let out = strata(&["bench", "query", "--types", "avg-current", "--hosts", "2"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("other workload"),
        "{}",
        text(&out.stderr)
    );

    let out = strata(&["bench", "query", "--types", "cpu-max-all-8", "--hosts", "2"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("8 random hosts"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn http_target_against_a_real_server() {
    let dir = scratch("bench_query_http");
    let server = common::Server::start(&dir.join("data"), &[]);
    let url = format!("http://{}", server.http);
    let run = |extra: &[&str], name: &str| {
        let report_path = dir.join(name);
        let mut args = vec![
            "bench",
            "query",
            "--http",
            &url,
            "--clients",
            "1,2",
            "--queries",
            "4",
            "--json",
            report_path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = strata(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        json(&report_path)
    };
    let cpu = [
        "--hosts",
        "3",
        "--duration",
        "2h",
        "--types",
        "single-groupby-1-1-1,lastpoint,groupby-orderby-limit",
    ];
    let mut load = vec!["--load"];
    load.extend_from_slice(&cpu);
    let report = run(&load, "json.json");
    assert_eq!(report["format"], "json");
    assert!(
        report["target"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:")
    );
    assert_eq!(report["results"].as_array().unwrap().len(), 6);
    for clients in [1, 2] {
        assert_eq!(result(&report, "lastpoint", clients)["rows_per_query"], 3.0);
        assert_eq!(
            result(&report, "groupby-orderby-limit", clients)["rows_max"],
            5
        );
        assert_eq!(result(&report, "single-groupby-1-1-1", clients)["count"], 4);
    }
    // The same queries as CSV and as Arrow count the same rows.
    for format in ["csv", "arrow"] {
        let mut args = cpu.to_vec();
        args.extend_from_slice(&["--format", format]);
        let other = run(&args, &format!("{format}.json"));
        assert_eq!(other["format"], format);
        for (a, b) in report["results"]
            .as_array()
            .unwrap()
            .iter()
            .zip(other["results"].as_array().unwrap())
        {
            assert_eq!(a["rows_total"], b["rows_total"], "{format}: {a} vs {b}");
        }
    }
    // meters in another database: select-all streams Arrow and counts every row.
    let meters = run(
        &[
            "--load",
            "--db",
            "tdengine",
            "--workload",
            "meters",
            "--meters",
            "4",
            "--rows-per-meter",
            "250",
            "--types",
            "count,avg-current,select-all",
        ],
        "meters.json",
    );
    assert_eq!(result(&meters, "select-all", 2)["rows_per_query"], 1000.0);
    assert_eq!(result(&meters, "count", 1)["rows_total"], 4);
    assert_eq!(result(&meters, "avg-current", 2)["rows_per_query"], 1.0);

    // A failing statement stops the run with the error and the SQL: the table is not in
    // this database.
    let out = strata(&[
        "bench",
        "query",
        "--http",
        &url,
        "--db",
        "empty",
        "--hosts",
        "3",
        "--duration",
        "2h",
        "--types",
        "lastpoint",
        "--clients",
        "1",
        "--queries",
        "1",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("a lastpoint query failed"), "{stderr}");
    assert!(
        stderr.contains("SQL: SELECT DISTINCT ON (hostname)"),
        "{stderr}"
    );
    drop(server);
}

#[test]
fn influxql_protocol_against_a_real_server() {
    let dir = scratch("bench_query_influxql");
    let server = common::Server::start(&dir.join("data"), &[]);
    let url = format!("http://{}", server.http);
    // 8 hosts (cpu-max-all-8 and the 8-host single-groupby shapes need them), 13 hours (no
    // window is clamped: every type keeps its real shape).
    let run = |protocol: &str, load: bool, name: &str| {
        let report_path = dir.join(name);
        let mut args = vec![
            "bench",
            "query",
            "--http",
            &url,
            "--protocol",
            protocol,
            "--hosts",
            "8",
            "--duration",
            "13h",
            "--clients",
            "1,2",
            "--queries",
            "3",
            "--json",
            report_path.to_str().unwrap(),
        ];
        if load {
            args.push("--load");
        }
        let out = strata(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (text(&out.stdout), json(&report_path))
    };
    let (_, sql) = run("sql", true, "sql.json");
    let (stdout, influxql) = run("influxql", false, "influxql.json");
    assert!(
        stdout.contains("InfluxQL (TSBS's wording) on /query, answers as json"),
        "{stdout}"
    );
    assert_eq!(influxql["protocol"], "influxql");
    assert_eq!(influxql["format"], "json");
    assert_eq!(sql["protocol"], "sql");
    let results = influxql["results"].as_array().unwrap();
    // Every cpu-only type, at both client counts, each query answered.
    assert_eq!(results.len(), 17 * 2, "{influxql}");
    for entry in results {
        assert_eq!(entry["count"], 3, "{entry}");
        assert!(entry["median_ms"].as_f64().unwrap() > 0.0, "{entry}");
    }
    for clients in [1, 2] {
        assert_eq!(
            result(&influxql, "lastpoint", clients)["rows_per_query"],
            8.0
        );
        assert_eq!(
            result(&influxql, "groupby-orderby-limit", clients)["rows_max"],
            5
        );
        // The same seed draws the same hosts and windows: the rows both protocols select
        // (no buckets to fill) are the same rows.
        for t in ["high-cpu-1", "high-cpu-all", "lastpoint"] {
            assert_eq!(
                result(&influxql, t, clients)["rows_total"],
                result(&sql, t, clients)["rows_total"],
                "{t}"
            );
        }
        for t in [
            "single-groupby-5-8-1",
            "cpu-max-all-8",
            "double-groupby-all",
        ] {
            assert!(
                result(&influxql, t, clients)["rows_min"].as_u64().unwrap() > 0,
                "{t}"
            );
        }
    }

    // A statement the server answers with an error in its result (200, as InfluxDB does)
    // stops the run, naming the InfluxQL.
    let out = strata(&[
        "bench",
        "query",
        "--http",
        &url,
        "--protocol",
        "influxql",
        "--db",
        "empty",
        "--hosts",
        "8",
        "--duration",
        "13h",
        "--types",
        "lastpoint",
        "--clients",
        "1",
        "--queries",
        "1",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("a lastpoint query failed"), "{stderr}");
    assert!(
        stderr.contains(
            "InfluxQL: SELECT * from cpu group by \"hostname\" order by time desc limit 1"
        ),
        "{stderr}"
    );
    drop(server);
}

#[test]
fn influxql_protocol_errors() {
    let out = strata(&["bench", "query", "--protocol", "influxql", "--hosts", "2"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--protocol influxql needs --http URL"),
        "{stderr}"
    );

    let http = ["--http", "http://127.0.0.1:9", "--protocol", "influxql"];
    let mut args = vec!["bench", "query", "--format", "csv", "--hosts", "2"];
    args.extend_from_slice(&http);
    let out = strata(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--format is the format of /sql answers"),
        "{}",
        text(&out.stderr)
    );

    let mut args = vec!["bench", "query", "--workload", "meters", "--types", "count"];
    args.extend_from_slice(&http);
    let out = strata(&args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("TSBS's InfluxQL covers the cpu-only devops types"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn print_statements_lists_what_a_run_would_send() {
    let args = [
        "bench",
        "query",
        "--print-statements",
        "--hosts",
        "10",
        "--duration",
        "1h",
        "--types",
        "single-groupby-1-1-1,lastpoint",
        "--queries",
        "3",
        "--query-seed",
        "7",
    ];
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["single-groupby-1-1-1"; 3]
            .iter()
            .chain(&["lastpoint"; 3])
            .copied()
            .collect::<Vec<_>>()
    );
    for line in &lines {
        assert!(
            line["statement"].as_str().unwrap().starts_with("SELECT"),
            "{line}"
        );
    }
    // The same seed draws the same statements; InfluxQL words them as TSBS does.
    assert_eq!(text(&strata(&args).stdout), text(&out.stdout));
    let mut influxql = args.to_vec();
    influxql.extend(["--protocol", "influxql"]);
    let worded = text(&strata(&influxql).stdout);
    assert!(worded.contains("group by time(1m)"), "{worded}");
}
