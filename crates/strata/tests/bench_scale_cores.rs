//! End-to-end: `strata bench scale` over cores with the issue-21 figures: server CPU per
//! point, the loader's CPU and cores, the write stages file and the query sweep
//! (`--queries`), against the real server on 127.0.0.1, at a tiny size.

mod common;

use common::{json, scratch, strata, text};

/// The CSV's header and its lines as maps from column to value.
fn csv(path: &std::path::Path) -> (String, Vec<std::collections::HashMap<String, String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default().to_string();
    let columns: Vec<&str> = header.split(',').collect();
    let rows = lines
        .map(|line| {
            // No field of these files holds a comma here (one loader core list at most "1"
            // or "1-N"), so a plain split is enough.
            let values: Vec<&str> = line.split(',').collect();
            assert_eq!(values.len(), columns.len(), "{line}\n{text}");
            columns
                .iter()
                .zip(values)
                .map(|(c, v)| (c.to_string(), v.to_string()))
                .collect()
        })
        .collect();
    (header, rows)
}

fn number(row: &std::collections::HashMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|e| panic!("{column} = {:?}: {e}", row[column]))
}

#[test]
fn a_core_sweep_reports_cpu_per_point_the_loader_and_a_query_sweep() {
    let dir = scratch("bench_scale_cores");
    let out_dir = dir.join("out");
    let out = strata(&[
        "bench",
        "scale",
        "--cores",
        "1",
        "--hosts",
        "5",
        "--duration",
        "10min",
        "--queries",
        "lastpoint",
        "--query-seconds",
        "1",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("Scaling Efficiency | Server CPU ns/point | Loader CPU | Loader Cores |"),
        "{stdout}"
    );
    assert!(stdout.contains("loader: cores "), "{stdout}");

    // scale.csv: the issue's `cores,…,efficiency`, and the new columns.
    let (header, rows) = csv(&out_dir.join("scale.csv"));
    assert!(header.starts_with("cores,"), "{header}");
    for column in [
        "efficiency",
        "server_cpu_ns_per_point",
        "loader_cpu_percent",
        "loader_cores",
        "loader_shares_cores",
        "shard_busy",
        "rate_withheld",
    ] {
        assert!(header.split(',').any(|c| c == column), "{column}: {header}");
    }
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["cores"], "1");
    assert!(number(row, "points_per_s") > 0.0, "{row:?}");
    assert!(number(row, "rows_per_s") > 0.0, "{row:?}");
    assert_eq!(number(row, "efficiency"), 1.0);
    assert!(number(row, "server_cpu_ns_per_point") >= 0.0, "{row:?}");
    assert!(number(row, "loader_cpu_percent") >= 0.0, "{row:?}");
    assert_eq!(row["rate_withheld"], "true", "a tiny load is not a rate");
    // The server gets core 0: on a machine with more, the loader gets the others; on one
    // core, it shares it and says so.
    match row["loader_shares_cores"].as_str() {
        "false" => {
            assert_ne!(row["loader_cores"], "unpinned", "{row:?}");
            assert!(!row["loader_cores"].starts_with('0'), "{row:?}");
            assert!(
                stdout.contains("1 | 2 | ") && !stdout.contains("competes"),
                "{stdout}"
            );
        }
        "true" => {
            assert_eq!(row["loader_cores"], "unpinned", "{row:?}");
            assert!(
                text(&out.stderr).contains("loader shares the server's cores"),
                "{}",
                text(&out.stderr)
            );
        }
        other => panic!("loader_shares_cores = {other:?}"),
    }

    // stages.csv: every stage of the server's /metrics, for the run's points.
    let (header, stages) = csv(&out_dir.join("stages.csv"));
    assert_eq!(header, "cores,disks,stage,seconds,points,ns_per_point");
    let names: Vec<&str> = stages.iter().map(|r| r["stage"].as_str()).collect();
    for stage in [
        "parse",
        "catalog",
        "lock_wait",
        "backpressure",
        "series",
        "memtable",
        "wal_append",
        "wal_commit",
        "flush",
        "merge",
    ] {
        assert!(
            names.contains(&stage),
            "the server lacks strata_write_stage_seconds_total{{stage=\"{stage}\"}}: {names:?}"
        );
    }
    assert!(
        stages
            .iter()
            .all(|r| r["cores"] == "1" && number(r, "points") == 3000.0),
        "{stages:?}"
    );
    assert!(
        stages
            .iter()
            .any(|r| r["stage"] == "parse" && number(r, "ns_per_point") > 0.0),
        "{stages:?}"
    );

    // The queries ran on the server started again over the flushed data.
    let queries_log = out_dir.join("server-1cores-queries.log");
    assert!(queries_log.exists(), "no {}", queries_log.display());

    // scale-queries.csv: one line for lastpoint on 1 core with 1 client.
    let (header, rows) = csv(&out_dir.join("scale-queries.csv"));
    assert!(header.starts_with("cores,"), "{header}");
    assert!(header.split(',').any(|c| c == "efficiency"), "{header}");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(
        (
            row["cores"].as_str(),
            row["type"].as_str(),
            row["clients"].as_str()
        ),
        ("1", "lastpoint", "1")
    );
    assert!(number(row, "queries") > 0.0, "{row:?}");
    assert!(number(row, "queries_per_s") > 0.0, "{row:?}");
    assert!(number(row, "p50_ms") > 0.0, "{row:?}");
    // lastpoint: the latest row of each of the 5 hosts.
    assert_eq!(number(row, "rows_per_query"), 5.0, "{row:?}");
    assert!(number(row, "server_cpu_ms_per_query") >= 0.0, "{row:?}");
    assert_eq!(number(row, "efficiency"), 1.0);
    assert_eq!(row["rate_withheld"], "true", "1 s is not a rate");
    assert!(
        stdout.contains("Query Type | CPU Cores | Clients"),
        "{stdout}"
    );
    assert!(stdout.contains("(not a rate)"), "{stdout}");

    // The JSON: the sweep's, and the run's write report with the new figures.
    let sweep = json(&out_dir.join("scale.json"));
    assert_eq!(sweep["runs"][0]["cores"], 1, "{sweep}");
    assert!(sweep["runs"][0]["loader_cores"].is_string(), "{sweep}");
    assert_eq!(sweep["queries"][0]["type"], "lastpoint", "{sweep}");
    let run = json(&out_dir.join("write-1cores.json"));
    assert!(run["write_stages"]["stages"].is_array(), "{run}");
    assert_eq!(run["rows"], 300, "{run}");
    for key in [
        "server_cpu_ns_per_point",
        "loader_cpu_percent",
        "loader_cores",
        "loader_shares_cores",
        "write_stages",
        "queries",
    ] {
        assert!(run.get(key).is_some(), "missing {key}: {run}");
    }
    assert_eq!(run["queries"][0]["type"], "lastpoint", "{run}");
}

#[test]
fn bad_loader_cores_and_query_types_are_refused_before_any_run() {
    let dir = scratch("bench_scale_cores_flags");
    let out_dir = dir.join("out");
    let out_dir = out_dir.to_str().unwrap();
    for (flags, expect) in [
        (&["--loader-cores", "5-2"][..], "runs backwards"),
        (&["--loader-cores", "x"][..], "not a CPU number"),
        (&["--queries", "no-such-type"][..], "unknown query type"),
        (&["--queries", "avg-current"][..], "other workload"),
        (
            &["--queries", "lastpoint", "--query-seconds", "0"][..],
            "--query-seconds 0",
        ),
        (
            &["--queries", "lastpoint", "--disks", "/a,/b"][..],
            "--disks",
        ),
    ] {
        let mut args = vec!["bench", "scale", "--cores", "1", "--out-dir", out_dir];
        args.extend_from_slice(flags);
        let out = strata(&args);
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{flags:?} succeeded");
        assert!(stderr.contains(expect), "{flags:?}: {stderr}");
    }
    assert!(
        !std::path::Path::new(out_dir).join("data-1cores").exists(),
        "refused before any server started"
    );
}

/// A valid `--loader-cores` pins the loader there in every run, and a list that holds a
/// server core is marked as sharing it (it once panicked in the argument parser).
#[test]
fn loader_cores_pin_the_loader_where_asked() {
    let dir = scratch("bench_scale_loader_cores");
    let out_dir = dir.join("out");
    let out = strata(&[
        "bench",
        "scale",
        "--cores",
        "1",
        "--hosts",
        "2",
        "--duration",
        "5min",
        "--loader-cores",
        "0",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", text(&out.stdout));
    assert!(stderr.contains("(--loader-cores)"), "{stderr}");
    let (_, rows) = csv(&out_dir.join("scale.csv"));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["loader_cores"], "0", "{:?}", rows[0]);
    assert_eq!(rows[0]["loader_shares_cores"], "true", "{:?}", rows[0]);
}
