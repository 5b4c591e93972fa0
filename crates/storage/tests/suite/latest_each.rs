//! `Engine::latest_each` against `Engine::latest` and `Engine::latest_uncached`: seeded
//! random series (tag sets that differ in keys, values shared between keys), random fields
//! of every type, part of the rows flushed; requests with random tag predicates, time
//! ranges and projections. Prints the seed on failure; rerun one with
//! `STRATA_LATEST_EACH_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::Rng;
use strata_lineproto::Precision;
use strata_storage::model::TableId;
use strata_storage::series::TagPredicate;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest, WalSync};

const START_NS: i64 = 1_700_000_000_000_000_000;
const SECOND_NS: i64 = 1_000_000_000;
const KEYS: [&str; 5] = ["host", "region", "rack", "os", "team"];
const FIELDS: [&str; 6] = ["f1", "f2", "i", "u", "s", "b"];

fn options(dir: &std::path::Path, clock: &Arc<ManualClock>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 3,
        wal_sync: WalSync::None,
        background: false,
        clock: clock.clone(),
        ..EngineOptions::default()
    }
}

/// A random tag set: each key present with 70 % chance, values from a small pool that the
/// keys share (so equal strings are interned once for several keys).
fn tags(rng: &mut Rng) -> String {
    let mut out = String::new();
    for key in KEYS {
        if rng.chance(70) {
            let pool = if key == "host" { 40 } else { 4 };
            out.push_str(&format!(",{key}=v{}", rng.below(pool)));
        }
    }
    out
}

fn field(rng: &mut Rng, i: usize) -> String {
    match i {
        0 | 1 => format!("{}.5", rng.below(1000)),
        2 => format!("{}i", rng.below(1000) as i64 - 500),
        3 => format!("{}u", rng.below(1000)),
        4 => format!("\"s{}\"", rng.below(1000)),
        _ => (if rng.chance(50) { "true" } else { "false" }).to_string(),
    }
}

fn write(engine: &Engine, rng: &mut Rng, series: &[String]) {
    let mut body = String::new();
    for _ in 0..1 + rng.below(60) {
        let tags = &series[rng.below(series.len() as u64) as usize];
        let time = START_NS + rng.below(600) as i64 * SECOND_NS;
        let mut fields = Vec::new();
        for (i, name) in FIELDS.iter().enumerate() {
            if rng.chance(40) {
                fields.push(format!("{name}={}", field(rng, i)));
            }
        }
        if fields.is_empty() {
            fields.push(format!("f1={}", field(rng, 0)));
        }
        body.push_str(&format!("cpu{tags} {} {time}\n", fields.join(",")));
    }
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

fn predicate(rng: &mut Rng, depth: u32) -> TagPredicate {
    let key = KEYS[rng.below(KEYS.len() as u64) as usize].to_string();
    let value = |rng: &mut Rng| format!("v{}", rng.below(5));
    match rng.below(if depth > 0 { 5 } else { 3 }) {
        0 => TagPredicate::Eq {
            key,
            value: value(rng),
        },
        1 => TagPredicate::NotEq {
            key,
            value: value(rng),
        },
        2 => TagPredicate::In {
            key,
            values: (0..rng.below(3)).map(|_| value(rng)).collect(),
        },
        3 => TagPredicate::And(
            (0..rng.below(3))
                .map(|_| predicate(rng, depth - 1))
                .collect(),
        ),
        _ => TagPredicate::Or(
            (0..rng.below(3))
                .map(|_| predicate(rng, depth - 1))
                .collect(),
        ),
    }
}

fn request(engine: &Engine, table: TableId, rng: &mut Rng) -> ReadRequest {
    let fields = engine
        .catalog()
        .table(table)
        .map_or(0, |schema| schema.fields.len() as u32);
    let at = |rng: &mut Rng| START_NS + rng.below(620) as i64 * SECOND_NS;
    ReadRequest {
        table,
        predicate: rng.chance(60).then(|| predicate(rng, 2)),
        start: if rng.chance(50) { i64::MIN } else { at(rng) },
        end: if rng.chance(50) { i64::MAX } else { at(rng) },
        fields: rng
            .chance(50)
            .then(|| (0..fields + 1).filter(|_| rng.chance(50)).collect()),
    }
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 3600 * SECOND_NS));
    let (engine, _) = Engine::open(options(dir.path(), &clock)).unwrap();
    let series: Vec<String> = (0..60).map(|_| tags(&mut rng)).collect();
    let mut visited = 0;
    for step in 0..30 {
        write(&engine, &mut rng, &series);
        if rng.chance(20) {
            engine.flush().unwrap();
        }
        let table = engine.table("db", "cpu").unwrap().id;
        for _ in 0..6 {
            let request = request(&engine, table, &mut rng);
            let uncached = engine.latest_uncached(&request).unwrap();
            let latest = engine.latest(&request).unwrap();
            assert_eq!(latest, uncached, "step {step}, {request:?}");
            let each = common::latest_each_rows(&engine, &request);
            assert_eq!(each, latest, "step {step}, {request:?}");
            visited += each.len();
        }
    }
    // The requests are not all empty ones.
    assert!(visited > 500, "only {visited} rows visited");
}

#[test]
fn latest_each_visits_what_latest_returns() {
    common::for_each_seed("STRATA_LATEST_EACH_SEED", 1..=6, run);
}
