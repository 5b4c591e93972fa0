//! `strata repair`: a shard's manifest, its series log and the catalog, lost or damaged,
//! are rebuilt from the parts (and the WAL), and the engine then answers exactly what it
//! answered before, overwrites and purged deletes included. An engine refuses to open on
//! a lost manifest, series log or catalog instead of starting empty.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Model, engine_contents, first_difference};
use strata_lineproto::Precision;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine, EngineOptions, WalSync, check, repair};

const DB: &str = "db";
const SECOND_NS: i64 = 1_000_000_000;
const START_NS: i64 = 1_700_000_000 * SECOND_NS;
const SHARDS: usize = 2;

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: SHARDS,
        wal_sync: WalSync::None,
        background: false,
        merge_min_parts: 100,
        partition_duration: Duration::from_secs(600),
        ..EngineOptions::default()
    }
}

/// Rows of `hosts` hosts at seconds `from..to` step 60, values tagged by `round` so that a
/// later round overwrites an earlier one at the same times.
fn lines(hosts: std::ops::Range<u32>, from: i64, to: i64, round: i64) -> String {
    let mut out = String::new();
    for t in (from..to).step_by(60) {
        for h in hosts.clone() {
            let time = START_NS + t * SECOND_NS;
            out += &format!(
                "cpu,host=h{h},dc=d{} usage={}.5,round={round}i {time}\n",
                h % 2,
                t + i64::from(h)
            );
            out += &format!("mem,host=h{h} free={}u {time}\n", t * 3);
        }
    }
    out
}

fn write(engine: &Engine, body: &str) {
    engine
        .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
}

/// A data directory with overlapping parts over three partitions, a purged delete, merged
/// parts, and rows (of new series too) only in the WAL; returns what it holds.
fn build(dir: &Path) -> Model {
    let (engine, _) = Engine::open(options(dir)).unwrap();
    write(&engine, &lines(0..8, 0, 1800, 1));
    engine.flush().unwrap();
    write(&engine, &lines(0..8, 600, 1200, 2));
    engine.flush().unwrap();
    engine.compact().unwrap();
    let cpu = engine.catalog().table_id(DB, "cpu").unwrap();
    engine
        .delete(&DeleteRequest {
            table: cpu,
            start: START_NS + 300 * SECOND_NS,
            end: START_NS + 900 * SECOND_NS,
            predicate: Some(TagPredicate::Eq {
                key: "host".into(),
                value: "h3".into(),
            }),
        })
        .unwrap();
    engine.compact().unwrap();
    // Overlaps the merged parts: a later flush, so its rows must win.
    write(&engine, &lines(2..5, 0, 1800, 3));
    engine.flush().unwrap();
    // Only in the WAL: overwrites and two new series.
    write(&engine, &lines(4..10, 1200, 1500, 4));
    let model = engine_contents(&engine, DB);
    engine.close().unwrap();
    model
}

fn contents(dir: &Path) -> Model {
    let (engine, _) = Engine::open(options(dir)).unwrap();
    let model = engine_contents(&engine, DB);
    engine.close().unwrap();
    model
}

fn shard_home(dir: &Path, shard: usize) -> PathBuf {
    dir.join(format!("shard-{shard}"))
}

fn assert_same(want: &Model, dir: &Path) {
    let got = contents(dir);
    assert!(
        got == *want,
        "after repair: {}",
        first_difference(want, &got)
    );
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn lost_manifests_are_rebuilt_from_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let want = build(dir.path());
    for shard in 0..SHARDS {
        std::fs::remove_file(shard_home(dir.path(), shard).join("MANIFEST")).unwrap();
    }
    let err = Engine::open(options(dir.path())).err().unwrap().to_string();
    assert!(err.contains("strata repair"), "{err}");
    let report = repair(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(report.rebuilt.len(), SHARDS, "{report:?}");
    assert!(report.lost.is_empty(), "{report:?}");
    assert!(check(&[dir.path().to_path_buf()]).unwrap().is_clean());
    assert_same(&want, dir.path());
}

#[test]
fn damaged_series_logs_are_rebuilt_from_the_parts_and_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let want = build(dir.path());
    for shard in 0..SHARDS {
        let log = shard_home(dir.path(), shard).join("series/series.log");
        flip_byte(&log, 40);
    }
    assert!(Engine::open(options(dir.path())).is_err());
    let report = repair(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(report.rebuilt.len(), SHARDS, "{report:?}");
    assert!(report.lost.is_empty(), "{report:?}");
    assert!(
        shard_home(dir.path(), 0)
            .join("series/series.log.damaged")
            .exists()
    );
    assert_same(&want, dir.path());
    // The rebuilt index finds the existing series: new rows of old tags add no series.
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    let before = engine.stats().series;
    write(&engine, &lines(0..10, 1800, 1860, 5));
    assert_eq!(engine.stats().series, before);
    engine.close().unwrap();
}

#[test]
fn a_lost_catalog_is_rebuilt_from_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let want = build(dir.path());
    std::fs::remove_file(dir.path().join("catalog.json")).unwrap();
    let err = Engine::open(options(dir.path())).err().unwrap().to_string();
    assert!(err.contains("strata repair"), "{err}");
    let report = repair(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(report.rebuilt.len(), 1, "{report:?}");
    // Settings only the catalog held are reported lost; nothing else is.
    assert_eq!(report.lost.len(), 1, "{report:?}");
    assert_same(&want, dir.path());
    // A new delete takes a tombstone id above the ones the parts applied, so it applies.
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    let cpu = engine.catalog().table_id(DB, "cpu").unwrap();
    engine
        .delete(&DeleteRequest {
            table: cpu,
            start: i64::MIN,
            end: i64::MAX,
            predicate: None,
        })
        .unwrap();
    engine.compact().unwrap();
    let left = engine_contents(&engine, DB);
    assert!(left.keys().all(|(table, _)| table == "mem"), "{left:?}");
    engine.close().unwrap();
}

#[test]
fn everything_lost_at_once_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let want = build(dir.path());
    std::fs::remove_file(dir.path().join("catalog.json")).unwrap();
    for shard in 0..SHARDS {
        let home = shard_home(dir.path(), shard);
        flip_byte(&home.join("MANIFEST"), 60);
        std::fs::remove_file(home.join("series/series.log")).unwrap();
    }
    let report = repair(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(report.rebuilt.len(), 2 * SHARDS + 1, "{report:?}");
    assert_same(&want, dir.path());
    // A second run finds nothing to do.
    let again = repair(&[dir.path().to_path_buf()]).unwrap();
    assert!(
        again.rebuilt.is_empty() && again.lost.is_empty(),
        "{again:?}"
    );
}

/// The inputs of the last merge or purge, left on disk by a crash before they were
/// removed, are not taken back when the manifest is rebuilt: their rows (deleted ones
/// too) stay replaced.
#[test]
fn replaced_parts_left_on_disk_are_not_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    write(&engine, &lines(0..6, 0, 1200, 1));
    engine.flush().unwrap();
    engine.compact().unwrap();
    let saved = copy_parts(dir.path());
    let cpu = engine.catalog().table_id(DB, "cpu").unwrap();
    engine
        .delete(&DeleteRequest {
            table: cpu,
            start: START_NS,
            end: START_NS + 700 * SECOND_NS,
            predicate: None,
        })
        .unwrap();
    engine.compact().unwrap();
    let want = engine_contents(&engine, DB);
    engine.close().unwrap();
    let mut restored = 0;
    for (path, bytes) in saved {
        if !path.exists() {
            std::fs::write(&path, bytes).unwrap();
            restored += 1;
        }
    }
    assert!(restored > 0, "the purge rewrote no part");
    for shard in 0..SHARDS {
        std::fs::remove_file(shard_home(dir.path(), shard).join("MANIFEST")).unwrap();
    }
    repair(&[dir.path().to_path_buf()]).unwrap();
    assert_same(&want, dir.path());
}

fn copy_parts(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::files_with_suffix(dir, "part")
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

/// A merged part can have a higher file id but a lower precedence than a part flushed
/// before the merge: the rebuilt manifest keeps each part's recorded order, so the later
/// write still wins where they overlap.
#[test]
fn a_rebuilt_manifest_keeps_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        merge_min_parts: 2,
        ..options(dir.path())
    };
    let (engine, _) = Engine::open(options.clone()).unwrap();
    write(&engine, &lines(0..1, 0, 300, 1));
    engine.flush().unwrap();
    write(&engine, &lines(0..1, 0, 300, 2));
    engine.flush().unwrap();
    // Larger, so that the merge picks the two small parts before it.
    write(&engine, &lines(0..8, 0, 300, 3));
    engine.flush().unwrap();
    engine.maintain().unwrap();
    assert!(engine.stats().merges > 0, "no merge ran");
    let want = engine_contents(&engine, DB);
    engine.close().unwrap();
    for shard in 0..SHARDS {
        std::fs::remove_file(shard_home(dir.path(), shard).join("MANIFEST")).unwrap();
    }
    repair(&[dir.path().to_path_buf()]).unwrap();
    let (engine, _) = Engine::open(options).unwrap();
    let got = engine_contents(&engine, DB);
    assert!(got == want, "{}", first_difference(&want, &got));
}
