//! Disk use per database: parts hold every table of their shard, so each part's bytes are
//! split by table and summed per database. The split must add up to the files on disk,
//! follow each database's share of the data, survive a restart, and forget a dropped
//! database.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions, ManualClock, WalSync};

const START_NS: i64 = 1_700_000_000_000_000_000;
const STEP_NS: i64 = 10_000_000_000;

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        background: false,
        clock: Arc::new(ManualClock::new(START_NS + 86_400_000_000_000)) as _,
        ..EngineOptions::default()
    }
}

/// `rows` rows a host for `hosts` hosts of `cpu`, values from a seeded generator so that
/// they do not compress to nothing.
fn body(hosts: usize, rows: i64, seed: u64) -> String {
    let mut state = seed;
    let mut out = String::new();
    for i in 0..rows {
        for host in 0..hosts {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let value = (state >> 33) % 100_000;
            let time = START_NS + i * STEP_NS;
            out.push_str(&format!(
                "cpu,host=h{host} usage={value},idle={i}i {time}\n"
            ));
        }
    }
    out
}

fn by_database(engine: &Engine) -> BTreeMap<String, u64> {
    engine.part_bytes_by_database().into_iter().collect()
}

/// Bytes of every `.part` file under `dir`.
fn part_files_bytes(dir: &Path) -> u64 {
    common::files_with_suffix(dir, "part")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

#[test]
fn part_bytes_are_split_by_database_and_add_up_to_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    for (db, hosts) in [("big", 40), ("small", 4)] {
        let report = engine
            .write_lines(db, body(hosts, 500, 7).as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors.first());
    }
    assert!(by_database(&engine).is_empty(), "nothing flushed yet");
    engine.flush().unwrap();

    let split = by_database(&engine);
    assert_eq!(
        split.keys().collect::<Vec<_>>(),
        ["big", "small"],
        "{split:?}"
    );
    let total = engine.stats().part_bytes;
    assert_eq!(split.values().sum::<u64>(), total, "{split:?}");
    assert_eq!(total, part_files_bytes(dir.path()));
    // Ten times the series and rows: between 5 and 20 times the bytes (the shared header,
    // index and footer are split in proportion, so the ratio stays near the data's).
    let ratio = split["big"] as f64 / split["small"] as f64;
    assert!((5.0..20.0).contains(&ratio), "{split:?}");

    // The same after a restart (the split is computed as parts open) and a merge.
    drop(engine);
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    assert_eq!(by_database(&engine), split);
    engine.compact().unwrap();
    let merged = by_database(&engine);
    assert_eq!(merged.values().sum::<u64>(), engine.stats().part_bytes);
    assert_eq!(engine.stats().part_bytes, part_files_bytes(dir.path()));

    // A dropped database leaves the split at once, even while its rows are still in parts.
    assert!(engine.drop_database("small").unwrap());
    let after_drop = by_database(&engine);
    assert_eq!(after_drop.keys().collect::<Vec<_>>(), ["big"]);
    assert_eq!(after_drop["big"], merged["big"]);
}
