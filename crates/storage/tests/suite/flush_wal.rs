//! A flush leaves in the WAL only what it did not write: the segment of a frozen memtable
//! ends at its freeze, so rows written after the freeze (before the flush) do not keep the
//! flushed rows' segment alive. A kept segment was replayed after a crash, bringing back
//! rows already in parts, and rows deleted since (found by `tests/torture.rs`).

#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions, ReadRequest};

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 1,
        background: false,
        // 100 rows fill it; one does not.
        memtable_bytes_max: 2 << 10,
        ..EngineOptions::default()
    }
}

fn rows(from: i64, n: i64) -> String {
    (from..from + n)
        .map(|t| format!("m,s=a v={t}i {}\n", 1_000_000_000 + t))
        .collect()
}

fn times(engine: &Engine) -> Vec<i64> {
    let table = engine.catalog().table_id("db", "m").unwrap();
    let mut out: Vec<i64> = engine
        .read(&ReadRequest::all(table))
        .unwrap()
        .into_iter()
        .flat_map(|series| series.data.times)
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn a_flush_leaves_no_segment_that_replays_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    // Fills the memtable: frozen by the write itself.
    engine
        .write_lines("db", rows(0, 100).as_bytes(), Precision::Nanoseconds)
        .unwrap();
    // After the freeze, before the flush.
    engine
        .write_lines("db", rows(100, 1).as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.maintain().unwrap(); // flushes the frozen memtable only
    engine.close().unwrap();

    let (engine, report) = Engine::open(options(dir.path())).unwrap();
    assert_eq!(
        report.replayed_rows, 1,
        "only the row written after the freeze is replayed"
    );
    assert_eq!(
        times(&engine),
        (0..101).map(|t| 1_000_000_000 + t).collect::<Vec<_>>()
    );
    engine.close().unwrap();
}
