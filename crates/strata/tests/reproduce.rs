//! End-to-end: `bench/reproduce.sh`, the script behind every section of
//! `docs/benchmarks.md`, runs each seed's commands at its smoke size against this build and
//! prints each section's table (the tools withhold rates at this size, and say so).

mod common;

use std::process::Command;

use common::{scratch, strata_binary, text};

/// Runs `bench/reproduce.sh SEED` at the smoke size; returns its standard output.
fn reproduce(seed: &str) -> String {
    let out_dir = scratch(&format!("reproduce_{seed}"));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/reproduce.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(seed)
        .env("STRATA", strata_binary())
        .env("OUT", &out_dir)
        .env("SIZE", "smoke")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "reproduce.sh {seed} failed ({}):\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
}

#[test]
fn seed_000_prints_the_core_and_disk_tables() {
    let out = reproduce("000");
    assert!(
        out.contains("+ ") && out.contains("bench scale --workload meters"),
        "{out}"
    );
    assert!(
        out.contains("CPU Cores | Writers | Rows per Second"),
        "{out}"
    );
    assert!(
        out.contains("Disks | Shards | Writers | Rows per Second"),
        "{out}"
    );
    assert!(
        out.contains("rate: not reported"),
        "smoke loads are not rates: {out}"
    );
}

#[test]
fn seed_001_loads_flushes_and_queries_one_data_set() {
    let out = reproduce("001");
    assert!(
        out.contains("bytes on disk after the server's flush: "),
        "{out}"
    );
    for query_type in ["double-groupby-1", "single-groupby-1-1-1", "lastpoint"] {
        assert!(out.contains(query_type), "{query_type} missing: {out}");
    }
}

#[test]
fn seed_002_inserts_and_queries_meters() {
    let out = reproduce("002");
    assert!(
        out.contains("avg-current") || out.contains("avg(current)"),
        "{out}"
    );
    assert!(
        out.contains("select-all") || out.contains("select *"),
        "{out}"
    );
}

#[test]
fn seed_003_prints_the_batch_worker_matrix() {
    let out = reproduce("003");
    assert!(out.contains("batch  worker"), "{out}");
    assert!(out.contains("max_cpu"), "{out}");
}

#[test]
fn seed_004_runs_the_mix_over_http_and_tcp() {
    let out = reproduce("004");
    for operation in ["INGESTION", "PRECISE_POINT", "LATEST_POINT"] {
        assert!(out.matches(operation).count() >= 2, "{operation}: {out}");
    }
}

#[test]
fn a_bad_seed_is_refused_with_the_usage() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/reproduce.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("005")
        .env("STRATA", strata_binary())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("usage: bench/reproduce.sh"));
}
