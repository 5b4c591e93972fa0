//! End-to-end: `strata bench matrix` runs a real `strata serve` per cell (127.0.0.1 only)
//! at a tiny size, and its table, CSV, heat map and JSON agree with what the servers
//! stored, read back from each cell's data directory.

mod common;

use std::path::Path;

use common::{json, scratch, stored_rows, strata, text};

/// Seed 003's nine tables (TSBS devops).
const DEVOPS_TABLES: [&str; 9] = [
    "cpu",
    "diskio",
    "disk",
    "kernel",
    "mem",
    "net",
    "nginx",
    "postgresl",
    "redis",
];

/// Rows the server stored in `tables`, read from its data directory after it stopped.
fn stored(data_dir: &Path, tables: &[&str]) -> Vec<String> {
    tables
        .iter()
        .flat_map(|table| stored_rows(data_dir, "bench", table))
        .collect()
}

/// The table's cell lines: those that start with a batch size.
fn table_cells(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.len() == 8 && f[0].parse::<usize>().is_ok())
        .collect()
}

#[test]
fn one_pass_cells_each_load_the_whole_data_set_and_the_outputs_agree() {
    let dir = scratch("bench_matrix_one_pass");
    let report = dir.join("matrix.json");
    let out = strata(&[
        "bench",
        "matrix",
        "--hosts",
        "10",
        "--duration",
        "30m",
        "--batch",
        "5,50",
        "--workers",
        "1,4",
        "--min-seconds",
        "0",
        "--keep-data",
        "--out-dir",
        dir.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    // 10 hosts x 180 instants x 9 tables; 101 fields a host and instant.
    let rows = 10 * 180 * 9;
    let points = 10 * 180 * 101;

    let header = stdout.lines().find(|l| l.contains("batch")).unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        [
            "batch", "worker", "tps", "max_cpu", "avg_cpu", "rows/s", "p99_ms", "errors"
        ]
    );
    let cells = table_cells(&stdout);
    let pairs: Vec<(&str, &str)> = cells.iter().map(|c| (&*c[0], &*c[1])).collect();
    assert_eq!(pairs, [("5", "1"), ("5", "4"), ("50", "1"), ("50", "4")]);
    for cell in &cells {
        // Sub-second loads: no rate, and the reason is printed.
        assert_eq!((&*cell[2], &*cell[5]), ("withheld", "withheld"), "{stdout}");
        assert_eq!(cell[7], "0", "no failed request: {stdout}");
    }
    assert_eq!(
        stdout.matches(": rate withheld: the load lasted ").count(),
        4,
        "{stdout}"
    );
    assert!(stdout.contains("100% = all of them busy"), "{stdout}");

    let r = json(&report);
    assert_eq!(r["dataset_rows"], rows);
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{r}");
    for (cell, (batch, workers)) in cells.iter().zip([(5, 1), (5, 4), (50, 1), (50, 4)]) {
        assert_eq!(
            (cell["batch"].as_u64(), cell["workers"].as_u64()),
            (Some(batch), Some(workers))
        );
        assert_eq!(cell["rows"], rows, "{cell}");
        assert_eq!(cell["rows_generated"], rows, "{cell}");
        assert_eq!(cell["points"], points, "{cell}");
        assert_eq!(cell["requests"], rows / batch, "{cell}");
        assert_eq!(cell["errors"], 0, "{cell}");
        assert!(cell["tps"].as_f64().unwrap() > 0.0, "{cell}");
        let max = cell["max_cpu_percent"].as_f64().unwrap();
        let avg = cell["avg_cpu_percent"].as_f64().unwrap();
        assert!(max > 0.0 && max <= 100.0, "{cell}");
        assert!(avg > 0.0 && avg <= max, "{cell}");
        assert!(
            cell["rate_withheld"]
                .as_str()
                .unwrap()
                .contains("under 10 s"),
            "{cell}"
        );
        // Every acknowledged row is in the server's data directory, once.
        let data_dir = dir.join(format!("data-b{batch}-w{workers}"));
        assert_eq!(stored(&data_dir, &DEVOPS_TABLES).len(), rows as usize);
    }

    let csv = std::fs::read_to_string(dir.join("matrix.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5, "{csv}");
    for line in &lines[1..] {
        let fields: Vec<&str> = line.splitn(15, ',').collect();
        assert_eq!(fields[2], rows.to_string(), "{line}");
        assert_eq!(
            (fields[6], fields[7]),
            ("", ""),
            "a withheld cell has no rate: {line}"
        );
        assert!(fields[14].contains("under 10 s"), "{line}");
    }
    let svg = std::fs::read_to_string(dir.join("matrix.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect class=\"cell\"").count(), 4, "{svg}");
    assert_eq!(svg.matches(">withheld</text>").count(), 4, "{svg}");
    assert!(svg.contains("class=\"legend\""), "{svg}");
}

#[test]
fn timed_cells_continue_the_data_in_time_on_a_confined_server() {
    let dir = scratch("bench_matrix_timed");
    let report = dir.join("matrix.json");
    let out = strata(&[
        "bench",
        "matrix",
        "--workload",
        "cpu-only",
        "--hosts",
        "2",
        "--duration",
        "1m",
        "--batch",
        "3",
        "--workers",
        "2",
        "--cores",
        "1",
        "--min-seconds",
        "1.5",
        "--keep-data",
        "--out-dir",
        dir.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("at least 1.5 s of load"), "{stdout}");
    assert!(
        stdout.contains("% of the 1 cores it is confined to"),
        "{stdout}"
    );
    let r = json(&report);
    assert_eq!(
        (r["server_cores"].as_u64(), r["shards"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(r["cores_confined"], true);
    // 2 hosts x 6 instants a pass.
    assert_eq!(r["dataset_rows"], 12);
    let cell = &r["cells"][0];
    let rows = cell["rows"].as_u64().unwrap();
    assert!(cell["elapsed_s"].as_f64().unwrap() >= 1.5, "{cell}");
    assert!(
        rows > 12 * 3,
        "the stream went on past its data set: {cell}"
    );
    assert_eq!(cell["rows_generated"].as_u64(), Some(rows), "{cell}");
    assert_eq!(cell["points"].as_u64(), Some(rows * 10), "{cell}");
    assert_eq!(cell["errors"], 0, "{cell}");
    let max = cell["max_cpu_percent"].as_f64().unwrap();
    assert!(max > 0.0 && max <= 100.0, "{cell}");
    assert!(
        cell["rate_withheld"]
            .as_str()
            .unwrap()
            .contains("under 10 s")
    );
    // Every row is a new one (later laps are later in time): the server stored them all.
    let stored = stored(&dir.join("data-b3-w2"), &["cpu"]);
    assert_eq!(stored.len() as u64, rows);
}

#[test]
fn bad_flags_are_refused_before_any_server_starts() {
    let dir = scratch("bench_matrix_bad_flags");
    let out_dir = dir.join("out");
    for (flags, message) in [
        (&["--batch", "0"][..], "--batch needs values of at least 1"),
        (&["--workers", "1,4,1"][..], "--workers lists 1 twice"),
        (
            &["--workload", "meters"][..],
            "bench matrix loads --workload devops",
        ),
        (&["--min-seconds=-1"][..], "--min-seconds -1"),
        (&["--cores", "0"][..], "--cores needs at least 1 core"),
        (&["--wal-sync", "often"][..], "often"),
    ] {
        let mut args = vec!["bench", "matrix", "--out-dir", out_dir.to_str().unwrap()];
        args.extend_from_slice(flags);
        let out = strata(&args);
        assert!(!out.status.success(), "{flags:?}");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!out_dir.exists(), "{flags:?}: nothing written");
    }
}
