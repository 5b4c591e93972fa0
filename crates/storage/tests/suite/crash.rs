//! Crash test: a child process writes and records every acknowledged batch; it is killed
//! with SIGKILL at random moments (flushes and merges run all the time thanks to a tiny
//! memtable); reopening must show every acknowledged row with its exact values, and
//! start-up must succeed whatever state the kill left (torn WAL tail, half-written part).
//!
//! The child is this same test binary, started with `STRATA_CRASH_CHILD=<dir>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::Rng;
use strata_lineproto::Precision;
use strata_storage::model::Value;
use strata_storage::{Engine, EngineOptions, ReadRequest, WalSync};

const SERIES_PER_BATCH: u64 = 20;
const DB: &str = "crash";

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.join("data")],
        shards: 2,
        wal_sync: WalSync::Interval(Duration::from_millis(50)),
        memtable_bytes_max: 24 << 10,
        merge_min_parts: 2,
        partition_duration: Duration::from_secs(600),
        ..EngineOptions::default()
    }
}

/// The value written for (batch, series): recomputable by the checker.
fn value_of(batch: u64, series: u64) -> i64 {
    (batch * 7919 + series * 104_729) as i64 % 1_000_003
}

fn batch_body(batch: u64) -> String {
    let mut body = String::new();
    for series in 0..SERIES_PER_BATCH {
        // Each batch writes one row per series at its own time: batch b at b seconds.
        body.push_str(&format!(
            "m,s=s{series} v={}i,w={}.5 {}\n",
            value_of(batch, series),
            batch,
            1_700_000_000_000_000_000i64 + batch as i64 * 1_000_000_000
        ));
    }
    body
}

/// The child: writes batches forever (until killed), appending each acknowledged batch
/// number to `acks`.
fn child(dir: &Path) {
    let (engine, _) = Engine::open(options(dir)).expect("child open");
    let ack_path = dir.join("acks");
    let start = std::fs::read_to_string(&ack_path)
        .map(|s| {
            s.lines()
                .filter_map(|l| l.parse::<u64>().ok())
                .max()
                .map_or(0, |m| m + 1)
        })
        .unwrap_or(0);
    let mut acks = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ack_path)
        .expect("acks file");
    // Bounded: the parent kills long before this ends.
    for batch in start..start + 200_000 {
        engine
            .write_lines(DB, batch_body(batch).as_bytes(), Precision::Nanoseconds)
            .expect("child write");
        // One write call per ack: a kill between two writes would leave a torn number that
        // the next child's first ack is glued onto.
        acks.write_all(format!("{batch}\n").as_bytes())
            .expect("ack");
    }
}

fn check(dir: &Path) -> u64 {
    let (engine, report) = Engine::open(EngineOptions {
        background: false,
        ..options(dir)
    })
    .expect("reopen after kill must succeed");
    let acked: Vec<u64> = std::fs::read_to_string(dir.join("acks"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    let Some(table) = engine.catalog().table_id(DB, "m") else {
        assert!(
            acked.is_empty(),
            "acknowledged batches but no table; {report:?}"
        );
        return 0;
    };
    let schema = engine.catalog().table(table).unwrap();
    let v = schema.field("v").unwrap().id;
    let rows = engine.read(&ReadRequest::all(table)).unwrap();
    let mut found = std::collections::HashMap::new();
    for series in &rows {
        let name = &series.tags[0].1;
        let column = series.data.column(v).expect("v column");
        let indexes = column.value_indexes(series.data.rows());
        for (row, time) in series.data.times.iter().enumerate() {
            let batch = ((time - 1_700_000_000_000_000_000) / 1_000_000_000) as u64;
            found.insert(
                (name.clone(), batch),
                indexes[row].map(|i| column.values.get(i)),
            );
        }
    }
    for batch in &acked {
        for series in 0..SERIES_PER_BATCH {
            let key = (format!("s{series}"), *batch);
            let expected = Value::Integer(value_of(*batch, series));
            assert_eq!(
                found.get(&key),
                Some(&Some(expected)),
                "acknowledged row {key:?} lost or wrong after kill; open report {report:?}"
            );
        }
    }
    engine.close().unwrap();
    acked.len() as u64
}

#[test]
fn sigkill_loses_no_acknowledged_row() {
    if let Ok(dir) = std::env::var("STRATA_CRASH_CHILD") {
        child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(0xC0FFEE);
    let mut acked_total = 0;
    for round in 0..5 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                // The child runs this test alone; its name as libtest lists it.
                "crash::sigkill_loses_no_acknowledged_row",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("STRATA_CRASH_CHILD", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300 + rng.below(900)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        acked_total = check(dir.path());
        eprintln!("round {round}: {acked_total} batches acknowledged so far, all present");
    }
    assert!(
        acked_total > 0,
        "the child never acknowledged a write: the test tested nothing"
    );
}
