//! A small engine for the crate's own tests: table `m` in database `db`, 100 rows over
//! four hosts (`v` integer, `s` string), two shards, a manual clock.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::Arc;

use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions, ManualClock, WalSync};

/// The clock's time; the rows lie in the 100 s before it.
pub(crate) const START_NS: i64 = 1_700_000_000_000_000_000;

/// An engine over `dir` holding table `m` of database `db`.
pub(crate) fn engine_with_rows(dir: &std::path::Path) -> Arc<Engine> {
    let options = EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        background: false,
        clock: Arc::new(ManualClock::new(START_NS)),
        ..EngineOptions::default()
    };
    let engine = Arc::new(Engine::open(options).unwrap().0);
    let body: String = (0..100)
        .map(|n| {
            let at = START_NS - n * 1_000_000_000;
            format!("m,host=h{} v={n}i,s=\"x{n}\" {at}\n", n % 4)
        })
        .collect();
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty());
    engine
}
