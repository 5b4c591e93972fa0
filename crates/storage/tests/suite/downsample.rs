//! Downsamples against a model: seeded random rows (late ones, overwrites, rows missing
//! fields) written into a source table, interleaved with flushes, merges, deletes with tag
//! predicates and restarts; after each round of downsample upkeep the target table must
//! hold exactly the per-series, per-bucket aggregates computed here from the source's
//! rows as a plain read returns them. Rerun one seed with `STRATA_DOWNSAMPLE_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{Model, Rng, engine_contents, for_each_seed};
use strata_lineproto::Precision;
use strata_storage::model::Value;
use strata_storage::series::TagPredicate;
use strata_storage::{
    Aggregate, DeleteRequest, DownsampleSpec, Engine, EngineOptions, ManualClock, Retention,
    WalSync,
};

const MINUTE_NS: i64 = 60_000_000_000;
const HOUR_NS: i64 = 60 * MINUTE_NS;
const START_NS: i64 = 1_700_000_000_000_000_000 / HOUR_NS * HOUR_NS;
const DB: &str = "db";
const BUCKET_NS: i64 = 20 * MINUTE_NS;

fn options(dir: &Path, clock: &Arc<ManualClock>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.join("a")],
        shards: 2,
        wal_sync: WalSync::None,
        memtable_bytes_max: 8 << 10,
        partition_duration: Duration::from_secs(3 * 3600),
        merge_min_parts: 3,
        background: false,
        clock: Arc::clone(clock) as _,
        ..EngineOptions::default()
    }
}

fn spec() -> DownsampleSpec {
    DownsampleSpec {
        interval: Duration::from_nanos(BUCKET_NS as u64),
        aggregates: Aggregate::ALL.to_vec(),
        retention: Retention::ServerDefault,
    }
}

/// A batch of rows: mostly at the front of time, some late (up to 8 h back), some
/// overwriting an earlier time, some lacking a field.
fn batch(rng: &mut Rng, front: &mut i64) -> String {
    let mut body = String::new();
    for _ in 0..rng.below(60) + 1 {
        let host = rng.below(5);
        let dc = match rng.below(3) {
            0 => String::new(),
            n => format!(",dc=d{n}"),
        };
        let time = if rng.chance(15) {
            *front - (rng.below(8 * 60) as i64) * MINUTE_NS
        } else {
            *front += (rng.below(90) as i64 + 1) * 1_000_000_000;
            *front
        };
        let mut fields = Vec::new();
        if !rng.chance(10) {
            fields.push(format!(
                "usage={}.{}",
                rng.below(200) as i64 - 100,
                rng.below(1000)
            ));
        }
        if !rng.chance(10) {
            fields.push(format!("reqs={}i", rng.below(1 << 40) as i64 - (1 << 39)));
        }
        if fields.is_empty() || rng.chance(10) {
            fields.push(format!("bytes={}u", rng.below(1 << 50)));
        }
        if rng.chance(5) {
            fields.push("note=\"text is not aggregated\"".into());
        }
        body.push_str(&format!(
            "cpu,host=h{host}{dc} {} {time}\n",
            fields.join(",")
        ));
    }
    body
}

/// The target rows the source's rows call for: per series and bucket, each aggregate of
/// each numeric field, computed from scratch over the decoded rows.
fn expected(source: &Model) -> Model {
    let mut out = Model::new();
    for ((table, tags), rows) in source {
        if table != "cpu" {
            continue;
        }
        let mut buckets: BTreeMap<i64, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
        for (time, fields) in rows {
            let bucket = time.div_euclid(BUCKET_NS) * BUCKET_NS;
            for (name, value) in fields {
                if !matches!(value, Value::String(_) | Value::Boolean(_)) {
                    buckets
                        .entry(bucket)
                        .or_default()
                        .entry(name.clone())
                        .or_default()
                        .push(value.clone());
                }
            }
        }
        let series = out
            .entry(("cpu_20m".to_string(), tags.clone()))
            .or_default();
        for (bucket, fields) in buckets {
            let row = series.entry(bucket).or_default();
            for (name, values) in fields {
                for aggregate in Aggregate::ALL {
                    if let Some(v) = aggregate_of(aggregate, &values) {
                        row.insert(format!("{name}_{}", aggregate.name()), v);
                    }
                }
            }
        }
    }
    out
}

fn aggregate_of(aggregate: Aggregate, values: &[Value]) -> Option<Value> {
    let as_f64 = |v: &Value| match v {
        Value::Float(f) => *f,
        Value::Integer(i) => *i as f64,
        Value::Unsigned(u) => *u as f64,
        _ => unreachable!(),
    };
    let order = |a: &&Value, b: &&Value| as_f64(a).total_cmp(&as_f64(b));
    Some(match aggregate {
        Aggregate::Avg => {
            Value::Float(values.iter().map(as_f64).sum::<f64>() / values.len() as f64)
        }
        Aggregate::Min => values.iter().min_by(order)?.clone(),
        Aggregate::Max => values.iter().max_by(order)?.clone(),
        Aggregate::Count => Value::Integer(values.len() as i64),
        Aggregate::First => values.first()?.clone(),
        Aggregate::Last => values.last()?.clone(),
        Aggregate::Sum => match &values[0] {
            Value::Float(_) => Value::Float(values.iter().map(as_f64).sum()),
            Value::Integer(_) => {
                let sum: i128 = values
                    .iter()
                    .map(|v| match v {
                        Value::Integer(i) => i128::from(*i),
                        _ => unreachable!(),
                    })
                    .sum();
                Value::Integer(i64::try_from(sum).ok()?)
            }
            _ => {
                let sum: u128 = values
                    .iter()
                    .map(|v| match v {
                        Value::Unsigned(u) => u128::from(*u),
                        _ => unreachable!(),
                    })
                    .sum();
                Value::Unsigned(u64::try_from(sum).ok()?)
            }
        },
    })
}

/// Floats may differ in their last bits (sums in another order); everything else exactly.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
        _ => a == b,
    }
}

fn check(engine: &Engine, step: usize) {
    let contents = engine_contents(engine, DB);
    let want = expected(&contents);
    let got: Model = contents
        .into_iter()
        .filter(|((table, _), _)| table == "cpu_20m")
        .collect();
    let describe = |key: &(String, Vec<(String, String)>)| format!("{key:?} at step {step}");
    for (key, rows) in &want {
        let actual = got
            .get(key)
            .unwrap_or_else(|| panic!("series {} missing", describe(key)));
        assert_eq!(
            rows.keys().collect::<Vec<_>>(),
            actual.keys().collect::<Vec<_>>(),
            "buckets of {}",
            describe(key)
        );
        for (time, fields) in rows {
            let actual_fields = &actual[time];
            assert_eq!(
                fields.keys().collect::<Vec<_>>(),
                actual_fields.keys().collect::<Vec<_>>(),
                "fields of {} bucket {time}",
                describe(key)
            );
            for (name, value) in fields {
                assert!(
                    same(value, &actual_fields[name]),
                    "{name} of {} bucket {time}: expected {value:?}, got {:?}",
                    describe(key),
                    actual_fields[name]
                );
            }
        }
    }
    if let Some(extra) = got.keys().find(|k| !want.contains_key(*k)) {
        panic!("unexpected target series {}", describe(extra));
    }
}

fn random_predicate(rng: &mut Rng) -> Option<TagPredicate> {
    match rng.below(4) {
        0 => None,
        1 => Some(TagPredicate::Eq {
            key: "host".into(),
            value: format!("h{}", rng.below(5)),
        }),
        2 => Some(TagPredicate::NotEq {
            key: "dc".into(),
            value: "d1".into(),
        }),
        _ => Some(TagPredicate::In {
            key: "host".into(),
            values: vec![format!("h{}", rng.below(5)), format!("h{}", rng.below(5))],
        }),
    }
}

#[test]
fn downsamples_equal_aggregates_of_the_source_through_late_rows_deletes_and_restarts() {
    for_each_seed("STRATA_DOWNSAMPLE_SEED", 1..=6, |seed| {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START_NS + 30 * 24 * HOUR_NS));
        let mut rng = Rng::new(seed);
        let mut front = START_NS;
        let mut engine = Engine::open(options(dir.path(), &clock)).unwrap().0;
        // Rows before the downsample exists are back-filled.
        for _ in 0..rng.below(4) {
            engine
                .write_lines(
                    DB,
                    batch(&mut rng, &mut front).as_bytes(),
                    Precision::Nanoseconds,
                )
                .unwrap();
        }
        if rng.chance(50) {
            engine.flush().unwrap();
        }
        engine
            .create_downsample(DB, "cpu_20m", "cpu", &spec(), false)
            .unwrap();
        for step in 0..40 {
            let body = batch(&mut rng, &mut front);
            let report = engine
                .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
                .unwrap();
            assert!(report.errors.is_empty(), "{:?}", report.errors);
            match rng.below(10) {
                0 | 1 => engine.flush().unwrap(),
                2 => engine.maintain().unwrap(),
                3 => {
                    let table = engine.catalog().table_id(DB, "cpu").unwrap();
                    let start = front - rng.below(10 * 60) as i64 * MINUTE_NS;
                    let end = start + rng.below(3 * 60) as i64 * MINUTE_NS + 1;
                    engine
                        .delete(&DeleteRequest {
                            table,
                            start,
                            end,
                            predicate: random_predicate(&mut rng),
                        })
                        .unwrap();
                }
                4 => {
                    engine.close().unwrap();
                    engine = Engine::open(options(dir.path(), &clock)).unwrap().0;
                }
                5 => {
                    engine.compact().unwrap();
                }
                _ => {}
            }
            if step % 5 == 4 {
                engine.flush().unwrap();
                engine.run_downsamples().unwrap();
                check(&engine, step);
            }
        }
        engine.flush().unwrap();
        engine.run_downsamples().unwrap();
        check(&engine, 40);
        let stats = engine.stats();
        assert_eq!(stats.downsamples, 1);
        assert!(stats.downsample_rows_written > 0);
        assert!(stats.downsample_rounds > 0);
    });
}

/// The statement-level rules: names, sources and settings that make no sense are refused,
/// a downsample keeps its own retention (buckets before its horizon are not written), and
/// dropping it keeps its table.
#[test]
fn downsamples_refuse_what_makes_no_sense_and_keep_their_own_retention() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 10 * 24 * HOUR_NS));
    let engine = Engine::open(options(dir.path(), &clock)).unwrap().0;
    let first = format!("cpu,host=a usage=1 {START_NS}\nmem,host=a used=2i {START_NS}\n");
    engine
        .write_lines(DB, first.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let err = engine
        .create_downsample(DB, "mem", "cpu", &spec(), false)
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let mut bad = spec();
    bad.aggregates.clear();
    let err = engine
        .create_downsample(DB, "x", "cpu", &bad, false)
        .unwrap_err();
    assert!(err.to_string().contains("at least one aggregate"), "{err}");
    bad = spec();
    bad.interval = Duration::ZERO;
    let err = engine
        .create_downsample(DB, "x", "cpu", &bad, false)
        .unwrap_err();
    assert!(err.to_string().contains("positive"), "{err}");

    let mut kept = spec();
    kept.retention = Retention::Keep(Duration::from_secs(400 * 86_400));
    assert!(
        engine
            .create_downsample(DB, "cpu_20m", "cpu", &kept, false)
            .unwrap()
    );
    assert!(
        !engine
            .create_downsample(DB, "cpu_20m", "cpu", &kept, true)
            .unwrap()
    );
    let err = engine
        .create_downsample(DB, "cpu_20m", "cpu", &kept, false)
        .unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let err = engine
        .create_downsample(DB, "again", "cpu_20m", &spec(), false)
        .unwrap_err();
    assert!(err.to_string().contains("itself a downsample"), "{err}");
    let listed = engine.downsamples(DB);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].source, "cpu");
    assert_eq!(listed[0].retention, kept.retention);
    assert_eq!(listed[0].lag, None);

    // The back-fill: the row written before the downsample is aggregated.
    engine.flush().unwrap();
    engine.run_downsamples().unwrap();
    let contents = engine_contents(&engine, DB);
    let target: Vec<_> = contents.keys().filter(|(t, _)| t == "cpu_20m").collect();
    assert_eq!(target.len(), 1);
    let rows = &contents[target[0]];
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[&START_NS]["usage_count"], Value::Integer(1));
    assert_eq!(engine.downsamples(DB)[0].lag, Some(Duration::ZERO));

    // The source expires after the database's 30 days; the target keeps its 400.
    engine
        .create_database_with_retention(DB, Retention::Keep(Duration::from_secs(30 * 86_400)))
        .unwrap();
    let now = START_NS + 10 * 24 * HOUR_NS;
    let line = format!("cpu,host=a usage=5 {now}\n");
    engine
        .write_lines(DB, line.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    engine.run_downsamples().unwrap();
    clock.advance(Duration::from_secs(40 * 86_400));
    engine.maintain().unwrap();
    let contents = engine_contents(&engine, DB);
    assert!(
        contents
            .iter()
            .all(|((t, _), rows)| t != "cpu" || rows.is_empty()),
        "the source expired"
    );
    let target = contents
        .iter()
        .find(|((t, _), _)| t == "cpu_20m")
        .map(|(_, rows)| rows)
        .unwrap();
    assert!(
        target.contains_key(&(now / BUCKET_NS * BUCKET_NS)),
        "{target:?}"
    );
    drop(engine);

    let engine = Engine::open(options(dir.path(), &clock)).unwrap().0;
    assert_eq!(engine.downsamples(DB)[0].retention, kept.retention);
    assert!(engine.drop_downsample(DB, "cpu_20m").unwrap());
    assert!(!engine.drop_downsample(DB, "cpu_20m").unwrap());
    assert!(engine.downsamples(DB).is_empty());
    assert!(engine.table(DB, "cpu_20m").is_some(), "the table stays");
}
