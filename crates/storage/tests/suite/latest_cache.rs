//! The latest-row cache: after seeded random writes (duplicates at one time with different
//! fields, out-of-order older rows), flushes, merges, a table drop and re-create, retention
//! and restarts, `Engine::latest` (cached) must equal `Engine::latest_uncached` for several
//! requests, and `Engine::latest_each` must visit exactly those rows. Prints the seed on
//! failure; rerun one with `STRATA_LATEST_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::Rng;
use strata_lineproto::Precision;
use strata_storage::model::TableId;
use strata_storage::series::TagPredicate;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest, WalSync};

const MINUTE_NS: i64 = 60_000_000_000;
const HOUR_NS: i64 = 60 * MINUTE_NS;
const START_NS: i64 = 1_700_000_000_000_000_000 / HOUR_NS * HOUR_NS;
const DB: &str = "db";
const HOSTS: u64 = 8;
const FIELDS: [&str; 4] = ["f", "i", "s", "b"];

fn options(dir: &std::path::Path, clock: &Arc<ManualClock>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 3,
        wal_sync: WalSync::None,
        memtable_bytes_max: 4 << 10,
        partition_duration: Duration::from_secs(3600),
        // With the clock at START + 4 h, partitions ending at or before START + 2 h expire.
        retention: Some(Duration::from_secs(2 * 3600)),
        merge_min_parts: 2,
        background: false,
        clock: clock.clone(),
        ..EngineOptions::default()
    }
}

/// One batch of random rows: hosts 0 and 1 write only in the first two hours (which
/// retention hides, drops and, once expired, refuses), the others anywhere in four hours, on a one-minute grid so that the
/// same (series, time) is written again with other fields.
fn write(engine: &Engine, rng: &mut Rng) {
    let mut body = String::new();
    for _ in 0..1 + rng.below(40) {
        let host = rng.below(HOSTS);
        let span = if host < 2 { 120 } else { 240 };
        let time = START_NS + rng.below(span) as i64 * MINUTE_NS;
        let mut fields = Vec::new();
        for (i, name) in FIELDS.iter().enumerate() {
            if rng.chance(50) {
                let value = match i {
                    0 => format!("{}.5", rng.below(100)),
                    1 => format!("{}i", rng.below(100)),
                    2 => format!("\"v{}\"", rng.below(100)),
                    _ => (if rng.chance(50) { "true" } else { "false" }).to_string(),
                };
                fields.push(format!("{name}={value}"));
            }
        }
        if fields.is_empty() {
            fields.push(format!("f={}.25", rng.below(100)));
        }
        let rack = host % 3;
        body.push_str(&format!(
            "cpu,host=h{host},rack=r{rack} {} {time}\n",
            fields.join(",")
        ));
    }
    let report = engine
        .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    // Once the clock has moved past the first two hours, their rows are refused.
    assert_eq!(
        report.errors.len() as u64,
        report.expired,
        "{:?}",
        report.errors
    );
}

fn requests(engine: &Engine, table: TableId, rng: &mut Rng) -> Vec<ReadRequest> {
    let all = ReadRequest::all(table);
    let field_count = engine
        .catalog()
        .table(table)
        .map_or(0, |schema| schema.fields.len() as u32);
    let cut = START_NS + rng.below(240) as i64 * MINUTE_NS;
    vec![
        all.clone(),
        ReadRequest {
            predicate: Some(TagPredicate::Eq {
                key: "rack".into(),
                value: format!("r{}", rng.below(3)),
            }),
            ..all.clone()
        },
        // Ends before some series' latest rows: those take the uncached path.
        ReadRequest {
            end: cut,
            ..all.clone()
        },
        // Starts after some series' latest rows: those have nothing in range.
        ReadRequest {
            start: cut,
            ..all.clone()
        },
        ReadRequest {
            start: cut - 30 * MINUTE_NS,
            end: cut + 30 * MINUTE_NS,
            predicate: Some(TagPredicate::Eq {
                key: "host".into(),
                value: format!("h{}", rng.below(HOSTS)),
            }),
            ..all.clone()
        },
        ReadRequest {
            fields: Some((0..field_count).filter(|_| rng.chance(50)).collect()),
            ..all.clone()
        },
        ReadRequest {
            fields: Some(vec![]),
            ..all
        },
    ]
}

fn check(engine: &Engine, tables: &[TableId], rng: &mut Rng, step: &str) {
    for &table in tables {
        for request in requests(engine, table, rng) {
            let uncached = engine.latest_uncached(&request).unwrap();
            // Twice: the first call may build the cache, the second reads it.
            for pass in 0..2 {
                let cached = engine.latest(&request).unwrap();
                assert_eq!(
                    cached, uncached,
                    "{step}: table {table}, pass {pass}, request {request:?}"
                );
                assert_eq!(
                    common::latest_each_rows(engine, &request),
                    cached,
                    "latest_each, {step}: table {table}, pass {pass}, request {request:?}"
                );
            }
        }
    }
}

fn table_id(engine: &Engine) -> Option<TableId> {
    engine.table(DB, "cpu").map(|t| t.id)
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS));
    let (mut engine, _) = Engine::open(options(dir.path(), &clock)).unwrap();
    // Every table id the test has used (dropped ones are read too: they must still agree).
    let mut tables: Vec<TableId> = Vec::new();
    for step in 0..80 {
        let action = match step {
            30 => 200,
            55 => 300,
            _ => rng.below(100),
        };
        let name = match action {
            0..=54 => {
                write(&engine, &mut rng);
                "write"
            }
            55..=66 => {
                engine.flush().unwrap();
                "flush"
            }
            67..=74 => {
                engine.maintain().unwrap();
                "maintain"
            }
            75..=79 => {
                engine.compact().unwrap();
                "compact"
            }
            80..=87 => {
                engine.close().unwrap();
                engine = Engine::open(options(dir.path(), &clock)).unwrap().0;
                "restart"
            }
            200 => {
                assert!(engine.drop_table(DB, "cpu").unwrap().is_some());
                "drop table"
            }
            300 => {
                engine.flush().unwrap();
                clock.set(START_NS + 4 * HOUR_NS);
                engine.maintain().unwrap();
                "retention"
            }
            _ => {
                write(&engine, &mut rng);
                "write"
            }
        };
        if let Some(id) = table_id(&engine)
            && !tables.contains(&id)
        {
            tables.push(id);
        }
        check(&engine, &tables, &mut rng, &format!("step {step} ({name})"));
    }
    engine.close().unwrap();
    let (engine, _) = Engine::open(options(dir.path(), &clock)).unwrap();
    check(&engine, &tables, &mut rng, "after reopen");
}

#[test]
fn latest_cache_matches_uncached() {
    common::for_each_seed("STRATA_LATEST_SEED", 1..=4, run);
}
