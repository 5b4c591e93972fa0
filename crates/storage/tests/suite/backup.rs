//! Backups of a running engine: taken while a writer runs, a restored backup holds every
//! row acknowledged before the backup started, possibly some written during it, none
//! written after, and never a torn row; an incremental backup restores exactly what a
//! full one taken at the same moment does, copying only new parts.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::engine_contents;
use strata_lineproto::Precision;
use strata_storage::model::Value;
use strata_storage::{BACKUP_FILE, Engine, EngineOptions, WalSync, restore};

const DB: &str = "db";
const SERIES: u64 = 50;
const SECOND_NS: i64 = 1_000_000_000;
const START_NS: i64 = 1_700_000_000 * SECOND_NS;

fn options(dirs: &[&Path]) -> EngineOptions {
    EngineOptions {
        data_dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
        shards: 2,
        wal_sync: WalSync::None,
        memtable_bytes_max: 32 << 10,
        merge_min_parts: 3,
        partition_duration: Duration::from_secs(600),
        ..EngineOptions::default()
    }
}

/// Batch `b`: one row per series at second `b`, two fields derived from (b, series).
fn batch(b: u64) -> String {
    (0..SERIES)
        .map(|s| {
            format!(
                "m,s=s{s} a={}i,b={}i {}\n",
                b * 1000 + s,
                b + s,
                START_NS + b as i64 * SECOND_NS
            )
        })
        .collect()
}

/// The batches a restored directory holds, checking every row is whole and right.
fn restored_batches(dir: &Path) -> Vec<u64> {
    let (engine, _) = Engine::open(EngineOptions {
        background: false,
        ..options(&[dir])
    })
    .unwrap();
    let mut rows_per_batch = std::collections::BTreeMap::<u64, u64>::new();
    for ((_, tags), rows) in engine_contents(&engine, DB) {
        let s: u64 = tags[0].1[1..].parse().unwrap();
        for (time, fields) in rows {
            let b = ((time - START_NS) / SECOND_NS) as u64;
            assert_eq!(
                fields.get("a"),
                Some(&Value::Integer((b * 1000 + s) as i64))
            );
            assert_eq!(fields.get("b"), Some(&Value::Integer((b + s) as i64)));
            *rows_per_batch.entry(b).or_default() += 1;
        }
    }
    engine.close().unwrap();
    rows_per_batch.keys().copied().collect()
}

#[test]
fn a_backup_taken_during_writes_restores_every_row_acknowledged_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (engine, _) = Engine::open(options(&[&a, &b])).unwrap();
    let engine = Arc::new(engine);
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (engine, acked, stop) = (Arc::clone(&engine), Arc::clone(&acked), Arc::clone(&stop));
        std::thread::spawn(move || {
            // Bounded: the test stops it long before.
            for b in 0..200_000 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                engine
                    .write_lines(DB, batch(b).as_bytes(), Precision::Nanoseconds)
                    .unwrap();
                acked.store(b + 1, Ordering::SeqCst);
            }
        })
    };
    while acked.load(Ordering::SeqCst) < 300 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let backup = dir.path().join("backup");
    let before = acked.load(Ordering::SeqCst);
    let report = engine.backup(&backup).unwrap();
    let after = acked.load(Ordering::SeqCst);
    assert!(backup.join(BACKUP_FILE).exists());
    assert!(
        report.parts > 0 && report.rows >= before * SERIES,
        "{report:?}"
    );

    // Writes went on during the backup; then a second, incremental backup into the same
    // directory and a full one into a fresh directory, with the writer stopped.
    while acked.load(Ordering::SeqCst) < after + 200 {
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let total = acked.load(Ordering::SeqCst);

    let restored = dir.path().join("restored");
    restore(&backup, &restored).unwrap();
    let batches = restored_batches(&restored);
    assert!(
        (0..before).all(|b| batches.contains(&b)),
        "every batch acknowledged before the backup ({before}) is restored"
    );
    assert!(
        batches.iter().all(|b| *b <= after),
        "nothing written after the backup ended ({after}) is in it: {:?}",
        batches.last()
    );

    // Incremental: with the parts compacted (so that no background merge replaces them
    // meanwhile), bring the backup up to date (parts merged away are removed), write a
    // little more, and back up again into the same directory and into a fresh one.
    engine.compact().unwrap();
    engine.backup(&backup).unwrap();
    for b in total..total + 3 {
        engine
            .write_lines(DB, batch(b).as_bytes(), Precision::Nanoseconds)
            .unwrap();
    }
    let total = total + 3;
    let incremental = engine.backup(&backup).unwrap();
    let full_dir = dir.path().join("full");
    let full = engine.backup(&full_dir).unwrap();
    assert_eq!(incremental.parts, full.parts);
    assert_eq!(incremental.rows, full.rows);
    assert_eq!(full.parts_new, full.parts);
    assert!(
        incremental.parts_new < full.parts_new && incremental.parts_new > 0,
        "the incremental backup links only the new parts: {incremental:?} vs {full:?}"
    );
    let (from_incremental, from_full) = (dir.path().join("r1"), dir.path().join("r2"));
    restore(&backup, &from_incremental).unwrap();
    restore(&full_dir, &from_full).unwrap();
    let expected: Vec<u64> = (0..total).collect();
    assert_eq!(restored_batches(&from_incremental), expected);
    assert_eq!(restored_batches(&from_full), expected);

    // Restoring needs a finished backup and an empty target.
    let err = restore(&backup, &from_full).expect_err("target not empty");
    assert!(err.to_string().contains("not empty"), "{err}");
    std::fs::remove_file(full_dir.join(BACKUP_FILE)).unwrap();
    let err = restore(&full_dir, &dir.path().join("r3")).expect_err("unfinished");
    assert!(err.to_string().contains("not a finished backup"), "{err}");
}
