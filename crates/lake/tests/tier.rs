//! Tiering into a `file://` lake with an injected clock: cold partitions land in one Delta
//! table per Strata table, read back here with the Delta log and a Parquet reader of their
//! own, row for row (nanosecond times, nulls, every field type); a round with nothing new
//! commits nothing; a late write, a delete and retention replace or remove the copies, and
//! no row is ever in the lake twice; a stopped round ends early and leaves nothing half done.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int16Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use common::{open, read_from};
use deltalake_core::DeltaTable;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use strata_lake::{Lake, LakeOptions, TierReport, parse_url};
use strata_lineproto::Precision;
use strata_storage::model::Value;
use strata_storage::{DeleteRequest, Engine, ManualClock, ReadRequest, Retention};

const DAY_NS: i64 = 86_400_000_000_000;
/// Midnight UTC, so partitions (one day) start on whole days.
const START_NS: i64 = 1_700_000_000_000_000_000 / DAY_NS * DAY_NS;
const DAYS: i64 = 5;

/// (tags, time) → field → value.
type Rows = BTreeMap<(Vec<(String, String)>, i64), BTreeMap<String, Value>>;

/// Rows every 7 minutes and 13 ns apart over `DAYS` days: three hosts of `cpu` (a float
/// and an integer, `idle` only on even rows), one of `mem` (unsigned, boolean, string).
fn body() -> String {
    let mut body = String::new();
    let step = 7 * 60_000_000_000 + 13;
    let mut i = 0i64;
    while START_NS + i * step < START_NS + DAYS * DAY_NS {
        let time = START_NS + i * step;
        for host in ["a", "b", "c"] {
            if i % 2 == 0 {
                body.push_str(&format!(
                    "cpu,host={host},rack=r{} usage={}.25,idle={i}i {time}\n",
                    i % 3,
                    i
                ));
            } else {
                body.push_str(&format!("cpu,host={host} usage={}.5 {time}\n", i));
            }
        }
        body.push_str(&format!(
            "mem,host=a free={}u,ok={},note=\"n {i}\" {time}\n",
            u64::MAX - i as u64,
            i % 2 == 0
        ));
        i += 1;
    }
    body
}

/// The engine's rows of `db.table` with times in `start..end`.
fn engine_rows(engine: &Engine, db: &str, table: &str, start: i64, end: i64) -> Rows {
    let schema = engine.table(db, table).unwrap();
    let mut out = Rows::new();
    let request = ReadRequest {
        start,
        end,
        ..ReadRequest::all(schema.id)
    };
    for series in engine.read(&request).unwrap() {
        let data = &series.data;
        for (row, time) in data.times.iter().enumerate() {
            out.entry((series.tags.clone(), *time)).or_default();
            for column in &data.columns {
                if let Some(Some(i)) = column.value_indexes(data.rows()).get(row) {
                    let name = schema.fields[column.field as usize].name.clone();
                    out.get_mut(&(series.tags.clone(), *time))
                        .unwrap()
                        .insert(name, column.values.get(*i));
                }
            }
        }
    }
    out
}

/// The rows of the lake table at `dir`, read from the files its Delta log names (each
/// row once: a row twice fails the test).
async fn lake_rows(dir: &Path) -> (Rows, Vec<String>) {
    let url = url::Url::from_directory_path(dir).unwrap();
    let table = DeltaTable::try_from_url(url).await.unwrap();
    let mut paths: Vec<String> = table.get_file_uris().unwrap().collect();
    paths.sort();
    let mut out = Rows::new();
    for path in &paths {
        let file = std::fs::File::open(path.strip_prefix("file://").unwrap_or(path)).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .build()
            .unwrap();
        for batch in reader {
            add_batch(&mut out, &batch.unwrap());
        }
    }
    (out, paths)
}

fn add_batch(out: &mut Rows, batch: &RecordBatch) {
    let schema = batch.schema();
    let micros = batch
        .column_by_name("time")
        .unwrap()
        .as_primitive::<arrow_array::types::TimestampMicrosecondType>();
    let nanos = batch
        .column_by_name("time_nanos")
        .unwrap()
        .as_primitive::<Int16Type>();
    for row in 0..batch.num_rows() {
        let time = micros.value(row) * 1000 + i64::from(nanos.value(row));
        let mut tags = Vec::new();
        let mut fields = BTreeMap::new();
        for (index, field) in schema.fields().iter().enumerate() {
            let name = field.name().as_str();
            let column = batch.column(index);
            if name == "time" || name == "time_nanos" || column.is_null(row) {
                continue;
            }
            if ["host", "rack", "zone"].contains(&name) {
                tags.push((
                    name.to_string(),
                    column.as_string::<i32>().value(row).into(),
                ));
                continue;
            }
            let value = match field.data_type() {
                arrow_schema::DataType::Float64 => {
                    Value::Float(column.as_primitive::<Float64Type>().value(row))
                }
                arrow_schema::DataType::Int64 => {
                    Value::Integer(column.as_primitive::<Int64Type>().value(row))
                }
                arrow_schema::DataType::Decimal128(20, 0) => Value::Unsigned(
                    u64::try_from(column.as_primitive::<Decimal128Type>().value(row)).unwrap(),
                ),
                arrow_schema::DataType::Boolean => Value::Boolean(column.as_boolean().value(row)),
                arrow_schema::DataType::Utf8 => {
                    Value::String(column.as_string::<i32>().value(row).into())
                }
                other => panic!("column {name}: unexpected type {other}"),
            };
            fields.insert(name.to_string(), value);
        }
        tags.sort();
        let previous = out.insert((tags.clone(), time), fields);
        assert!(
            previous.is_none(),
            "row {tags:?} at {time} twice in the lake"
        );
    }
}

/// Fails with the first row that differs (the whole maps are too long to print).
fn assert_same(found: &Rows, expected: &Rows, what: &str) {
    for (key, fields) in expected {
        assert_eq!(found.get(key), Some(fields), "{what}: row {key:?}");
    }
    for key in found.keys() {
        assert!(expected.contains_key(key), "{what}: extra row {key:?}");
    }
}

/// Writes a late row of host z into day 1 (`usage` its value) and flushes it; returns its
/// time.
fn write_late(engine: &Engine, usage: &str) -> i64 {
    let time = START_NS + DAY_NS + 1;
    engine
        .write_lines(
            "db",
            format!("cpu,host=z usage={usage} {time}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    engine.flush().unwrap();
    time
}

fn lake(root: &Path) -> Lake {
    let mut options = LakeOptions::new(parse_url(root.to_str().unwrap()).unwrap());
    options.tier_after = Duration::from_secs(86_400);
    Lake::new(options)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn tier(runtime: &tokio::runtime::Runtime, lake: &Lake, engine: &Arc<Engine>) -> TierReport {
    let report = runtime.block_on(lake.tier(engine));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    report
}

#[test]
fn cold_partitions_are_copied_row_for_row_and_kept_current() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    // Now is the end of the last day: days 0..DAYS-1 ended a day ago or more.
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let engine = open(data.path(), &clock);
    read_from(&engine, root.path());
    let report = engine
        .write_lines("db", body().as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors.first());
    engine.flush().unwrap();
    let runtime = runtime();
    let lake = lake(root.path());
    let cold_end = START_NS + (DAYS - 1) * DAY_NS;

    let first = tier(&runtime, &lake, &engine);
    // Two tables, two shards (each table's series in both or one), DAYS - 1 cold days.
    assert!(first.commits > 0 && first.rows > 0, "{first:?}");
    for table in ["cpu", "mem"] {
        let (rows, paths) = runtime.block_on(lake_rows(&root.path().join("db").join(table)));
        let expected = engine_rows(&engine, "db", table, START_NS, cold_end);
        assert_eq!(rows.len(), expected.len(), "{table}: row count");
        assert_same(&rows, &expected, table);
        assert!(
            paths
                .iter()
                .all(|p| p.contains("/day=") && p.ends_with(".parquet"))
        );
    }
    let days: std::collections::BTreeSet<String> = runtime
        .block_on(lake_rows(&root.path().join("db").join("cpu")))
        .1
        .iter()
        .map(|p| p.split("/day=").nth(1).unwrap()[..10].to_string())
        .collect();
    assert_eq!(days.len(), (DAYS - 1) as usize, "{days:?}");

    // Nothing changed: nothing committed.
    let second = tier(&runtime, &lake, &engine);
    assert_eq!(second.commits, 0, "{second:?}");
    // A fresh lake object (a restart) finds the copies current from the Delta log alone.
    let restarted = self::lake(root.path());
    assert_eq!(tier(&runtime, &restarted, &engine).commits, 0);

    // A late write into day 1: that shard partition is copied again, replacing its files.
    let late = write_late(&engine, "99.5");
    let third = tier(&runtime, &restarted, &engine);
    assert_eq!(third.commits, 1, "{third:?}");
    assert_eq!(third.files_removed, third.files_added, "{third:?}");
    // A delete over day 2 of host b.
    let cpu = engine.table("db", "cpu").unwrap();
    engine
        .delete(&DeleteRequest {
            table: cpu.id,
            start: START_NS + 2 * DAY_NS,
            end: START_NS + 3 * DAY_NS,
            predicate: Some(strata_storage::series::TagPredicate::Eq {
                key: "host".into(),
                value: "b".into(),
            }),
        })
        .unwrap();
    let fourth = tier(&runtime, &restarted, &engine);
    assert!(fourth.commits >= 1, "{fourth:?}");
    let (rows, _) = runtime.block_on(lake_rows(&root.path().join("db").join("cpu")));
    let expected = engine_rows(&engine, "db", "cpu", START_NS, cold_end);
    assert_same(&rows, &expected, "cpu after a late write and a delete");
    assert!(rows.contains_key(&(vec![("host".into(), "z".into())], late)));

    // Retention of two days: the days before the horizon leave the lake.
    engine
        .set_retention("db", Retention::Keep(Duration::from_secs(2 * 86_400)))
        .unwrap();
    // (A lake opened afresh: after a restart the expired days leave as well.)
    let fifth = tier(&runtime, &self::lake(root.path()), &engine);
    assert!(fifth.files_removed > 0, "{fifth:?}");
    let horizon = START_NS + (DAYS - 2) * DAY_NS;
    for table in ["cpu", "mem"] {
        let (rows, _) = runtime.block_on(lake_rows(&root.path().join("db").join(table)));
        let expected = engine_rows(&engine, "db", table, horizon, cold_end);
        assert_same(&rows, &expected, table);
        assert!(rows.keys().all(|(_, t)| *t >= horizon));
    }

    // Replaced and expired files stay on disk until a vacuum deletes them (here at once:
    // no retention), leaving exactly the live files.
    let mut options = LakeOptions::new(parse_url(root.path().to_str().unwrap()).unwrap());
    options.tier_after = Duration::from_secs(86_400);
    options.vacuum_interval = Duration::ZERO;
    options.vacuum_retention = Some(Duration::ZERO);
    let cpu_dir = root.path().join("db").join("cpu");
    let before = parquet_files(&cpu_dir);
    let sixth = tier(&runtime, &Lake::new(options), &engine);
    assert!(sixth.files_vacuumed > 0, "{sixth:?}");
    let (_, live) = runtime.block_on(lake_rows(&cpu_dir));
    assert!(before > live.len(), "{before} files before the vacuum");
    assert_eq!(parquet_files(&cpu_dir), live.len());
}

/// Parquet files on disk under a table's directory, live or not.
fn parquet_files(dir: &Path) -> usize {
    let mut count = 0;
    for day in std::fs::read_dir(dir).unwrap().flatten() {
        if day.path().is_dir() {
            count += std::fs::read_dir(day.path())
                .unwrap()
                .flatten()
                .filter(|f| f.path().extension().is_some_and(|e| e == "parquet"))
                .count();
        }
    }
    count
}

#[test]
fn a_database_may_tier_later_than_the_server_default() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let engine = open(data.path(), &clock);
    read_from(&engine, root.path());
    for db in ["soon", "late"] {
        engine
            .write_lines(db, body().as_bytes(), Precision::Nanoseconds)
            .unwrap();
    }
    engine.flush().unwrap();
    // The server's default is a day; "late" waits three.
    engine
        .catalog()
        .set_tier_after("late", Some(Duration::from_secs(3 * 86_400)))
        .unwrap();
    let runtime = runtime();
    tier(&runtime, &lake(root.path()), &engine);
    let days = |db: &str| {
        let (rows, _) = runtime.block_on(lake_rows(&root.path().join(db).join("cpu")));
        let days: std::collections::BTreeSet<i64> =
            rows.keys().map(|(_, t)| (t - START_NS) / DAY_NS).collect();
        days.into_iter().collect::<Vec<_>>()
    };
    assert_eq!(days("soon"), (0..DAYS - 1).collect::<Vec<_>>());
    assert_eq!(days("late"), (0..DAYS - 3).collect::<Vec<_>>());
}

#[test]
fn lake_urls_are_checked() {
    assert!(parse_url("file:///tmp/lake").is_ok());
    assert!(parse_url("/tmp/lake").is_ok());
    assert!(parse_url("s3://bucket/prefix").is_ok());
    let err = parse_url("s3:///prefix").unwrap_err().to_string();
    assert!(err.contains("names no bucket"), "{err}");
    let err = parse_url("ftp://host/x").unwrap_err().to_string();
    assert!(err.contains("unknown lake scheme"), "{err}");
    assert!(parse_url("relative/path").is_err());
}

/// An engine on `data` holding `body()`, flushed, with the clock at the end of the last
/// day, reading released partitions from the lake at `root`.
fn loaded_engine(data: &Path, root: &Path) -> Arc<Engine> {
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let engine = open(data, &clock);
    read_from(&engine, root);
    engine
        .write_lines("db", body().as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    engine
}

#[test]
fn a_dropped_table_leaves_the_lake_and_one_created_again_starts_empty() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let engine = loaded_engine(data.path(), root.path());
    let runtime = runtime();
    let lake = lake(root.path());
    tier(&runtime, &lake, &engine);
    let cpu_dir = root.path().join("db").join("cpu");
    assert!(!runtime.block_on(lake_rows(&cpu_dir)).0.is_empty());

    // Dropped: the next round removes its files (mem stays); a restarted lake, too, finds
    // nothing more to do.
    engine.drop_table("db", "cpu").unwrap();
    let dropped = tier(&runtime, &lake, &engine);
    assert!(dropped.files_removed > 0, "{dropped:?}");
    assert!(runtime.block_on(lake_rows(&cpu_dir)).0.is_empty());
    assert!(
        !runtime
            .block_on(lake_rows(&root.path().join("db").join("mem")))
            .0
            .is_empty()
    );
    let again = tier(&runtime, &self::lake(root.path()), &engine);
    assert_eq!(again.commits, 0, "{again:?}");

    // Created again under the name, with other rows in the same old days: the lake table
    // holds those and only those.
    let time = START_NS + DAY_NS + 42;
    engine
        .write_lines(
            "db",
            format!("cpu,host=new usage=1.5 {time}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    engine.flush().unwrap();
    tier(&runtime, &self::lake(root.path()), &engine);
    let (rows, _) = runtime.block_on(lake_rows(&cpu_dir));
    assert_eq!(
        rows.keys().cloned().collect::<Vec<_>>(),
        vec![(vec![("host".to_string(), "new".to_string())], time)]
    );
    assert_same(
        &engine_rows(&engine, "db", "cpu", START_NS, START_NS + DAYS * DAY_NS),
        &rows,
        "cpu created again",
    );
}

/// The Delta table at `dir`: its columns and its recorded tags.
fn delta_columns(runtime: &tokio::runtime::Runtime, dir: &Path) -> (Vec<String>, String) {
    let url = url::Url::from_directory_path(dir).unwrap();
    let table = runtime.block_on(DeltaTable::try_from_url(url)).unwrap();
    let snapshot = table.snapshot().unwrap();
    let columns = snapshot
        .schema()
        .fields()
        .map(|f| f.name().to_string())
        .collect();
    let tags = snapshot.metadata().configuration()[strata_lake::table::TAGS_PROPERTY].clone();
    (columns, tags)
}

#[test]
fn columns_added_while_the_server_runs_reach_the_delta_schema() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let engine = loaded_engine(data.path(), root.path());
    let runtime = runtime();
    // One lake for the whole test: its tables stay open between rounds, as in a server.
    let lake = lake(root.path());
    tier(&runtime, &lake, &engine);
    let cpu_dir = root.path().join("db").join("cpu");
    let (columns, tags) = delta_columns(&runtime, &cpu_dir);
    assert!(!columns.contains(&"zone".to_string()), "{columns:?}");
    assert_eq!(tags, r#"["host","rack"]"#);

    // A late write into a copied day brings a new tag and a new field.
    let time = START_NS + DAY_NS + 42;
    engine
        .write_lines(
            "db",
            format!("cpu,host=h0,zone=z1 usage=1.5,load=3i {time}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    engine.flush().unwrap();
    tier(&runtime, &lake, &engine);
    let (columns, tags) = delta_columns(&runtime, &cpu_dir);
    for column in ["zone", "load"] {
        assert!(
            columns.contains(&column.to_string()),
            "{column}: {columns:?}"
        );
    }
    assert_eq!(tags, r#"["host","rack","zone"]"#);
    let (rows, _) = runtime.block_on(lake_rows(&cpu_dir));
    // The lake holds the days that ended a day ago.
    assert_same(
        &engine_rows(
            &engine,
            "db",
            "cpu",
            START_NS,
            START_NS + (DAYS - 1) * DAY_NS,
        ),
        &rows,
        "cpu with a new tag and field",
    );
}

#[test]
fn a_stop_ends_a_round_that_waits_for_ingest_and_commits_nothing() {
    let data = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let engine = loaded_engine(data.path(), root.path());
    // Any write rate is heavy: the round waits before its first copy, for up to ten minutes.
    let mut options = LakeOptions::new(parse_url(root.path().to_str().unwrap()).unwrap());
    options.tier_after = Duration::from_secs(86_400);
    options.yield_above_rows_per_second = 1;
    options.max_yield_per_round = Duration::from_secs(600);
    let lake = Arc::new(Lake::new(options));
    let round_stop = lake.round_stop();
    let finished = Arc::new(AtomicBool::new(false));
    // Rows at ~100 a second until the round returns (two minutes at most).
    let writer = {
        let (engine, finished) = (Arc::clone(&engine), Arc::clone(&finished));
        std::thread::spawn(move || {
            let now = START_NS + DAYS * DAY_NS;
            for i in 0..12_000 {
                if finished.load(Ordering::SeqCst) {
                    break;
                }
                let line = format!("load,host=a v={i} {}\n", now - 1_000_000 + i);
                engine
                    .write_lines("db", line.as_bytes(), Precision::Nanoseconds)
                    .unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let (sender, receiver) = std::sync::mpsc::channel();
    let round = {
        let (engine, lake) = (Arc::clone(&engine), Arc::clone(&lake));
        std::thread::spawn(move || {
            let _ = sender.send(runtime().block_on(lake.tier(&engine)));
        })
    };
    std::thread::sleep(Duration::from_secs(2));
    round_stop.stop();
    let report = receiver.recv_timeout(Duration::from_secs(60));
    finished.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let report = report.expect("the round ends within a minute of the stop");
    round.join().unwrap();
    assert!(report.stopped, "{report:?}");
    assert!(report.yielded > Duration::ZERO, "{report:?}");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(
        (report.commits, report.files_added, report.parts_released),
        (0, 0, 0)
    );
    // The round created the table (empty) before it waited.
    let runtime = runtime();
    let (rows, files) = runtime.block_on(lake_rows(&root.path().join("db").join("cpu")));
    assert!(rows.is_empty() && files.is_empty(), "{files:?}");
    // The stop holds for the lake's later rounds.
    let again = runtime.block_on(lake.tier(&engine));
    assert!(again.stopped && again.commits == 0, "{again:?}");
    // A restarted server's lake copies every cold day: nothing was left half done.
    let restarted = tier(&runtime, &self::lake(root.path()), &engine);
    assert!(!restarted.stopped && restarted.commits > 0, "{restarted:?}");
    for table in ["cpu", "mem"] {
        let (rows, _) = runtime.block_on(lake_rows(&root.path().join("db").join(table)));
        let expected = engine_rows(
            &engine,
            "db",
            table,
            START_NS,
            START_NS + (DAYS - 1) * DAY_NS,
        );
        assert_eq!(rows.len(), expected.len(), "{table}: row count");
        assert_same(&rows, &expected, table);
    }
}

/// Copies the directory `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

#[test]
fn a_copy_committed_but_not_released_is_released_before_the_partition_is_read_again() {
    let data = tempfile::tempdir().unwrap();
    let saved = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let runtime = runtime();
    let engine = loaded_engine(data.path(), root.path());
    tier(&runtime, &lake(root.path()), &engine);
    write_late(&engine, "1.5");
    drop(engine);
    // The state a crash between the lake's commit and the release leaves: the data
    // directory as it was before a round whose commit the lake keeps.
    copy_dir(data.path(), saved.path());
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let engine = open(data.path(), &clock);
    read_from(&engine, root.path());
    assert_eq!(tier(&runtime, &lake(root.path()), &engine).commits, 1);
    drop(engine);
    std::fs::remove_dir_all(data.path()).unwrap();
    copy_dir(saved.path(), data.path());
    // Rows flushed into that partition before any round released the copy again.
    let engine = open(data.path(), &clock);
    read_from(&engine, root.path());
    write_late(&engine, "2.5");
    let report = tier(&runtime, &lake(root.path()), &engine);
    assert_eq!(report.commits, 1, "{report:?}");
    let (rows, _) = runtime.block_on(lake_rows(&root.path().join("db").join("cpu")));
    let expected = engine_rows(
        &engine,
        "db",
        "cpu",
        START_NS,
        START_NS + (DAYS - 1) * DAY_NS,
    );
    assert_eq!(rows.len(), expected.len());
    assert_same(&rows, &expected, "cpu");
}
