//! `CREATE TABLE` and `DROP TABLE` in the engine: declared columns and their conflicts, a
//! dropped table's rows never seen again (not by a table re-created under its name, not
//! after a restart), and gone from the part files after the next purge or compaction;
//! tag values from the series indexes.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::engine_contents;
use strata_lineproto::Precision;
use strata_storage::catalog::{CreateOutcome, SchemaError, TableDefinition};
use strata_storage::model::{FieldType, TableId, Value};
use strata_storage::part::PartReader;
use strata_storage::{Engine, EngineOptions, ManualClock, StorageError};

const HOUR_NS: i64 = 3_600_000_000_000;

fn open(dir: &Path) -> Engine {
    Engine::open(EngineOptions {
        data_dirs: vec![dir.join("d0"), dir.join("d1")],
        shards: 3,
        background: false,
        partition_duration: Duration::from_secs(3600),
        clock: Arc::new(ManualClock::new(0)),
        ..EngineOptions::default()
    })
    .unwrap()
    .0
}

fn definition(tags: &[&str], fields: &[(&str, FieldType)]) -> TableDefinition {
    TableDefinition {
        tags: tags.iter().map(|t| t.to_string()).collect(),
        fields: fields.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        time_unit: None,
    }
}

fn write(engine: &Engine, body: &str) {
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

/// `rows` rows per host over two hours (two partitions), field `v` = `base + i`.
fn rows(table: &str, hosts: &[&str], rows: i64, base: i64) -> String {
    let mut body = String::new();
    for host in hosts {
        for i in 0..rows {
            let time = i * 2 * HOUR_NS / rows;
            body.push_str(&format!("{table},host={host} v={}i {time}\n", base + i));
        }
    }
    body
}

/// The tables with rows in any part file under `dir`.
fn tables_on_disk(dir: &Path) -> BTreeSet<TableId> {
    let mut tables = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        for entry in std::fs::read_dir(&path).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "part") {
                let reader = PartReader::open(&path).unwrap();
                tables.extend(reader.series_ids().map(|(_, table)| table));
            }
        }
    }
    tables
}

/// The values of field `v` of table `table`, sorted.
fn values(engine: &Engine, table: &str) -> Vec<i64> {
    let contents = engine_contents(engine, "db");
    let mut out: Vec<i64> = contents
        .iter()
        .filter(|((name, _), _)| name == table)
        .flat_map(|(_, rows)| rows.values())
        .filter_map(|fields| match fields.get("v") {
            Some(Value::Integer(v)) => Some(*v),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn create_table_declares_typed_columns_durably() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let declared = definition(
        &["host", "region"],
        &[("usage", FieldType::Float), ("up", FieldType::Boolean)],
    );
    let outcome = engine.create_table("db", "cpu", &declared, false).unwrap();
    assert!(matches!(outcome, CreateOutcome::Created(_)), "{outcome:?}");
    let schema = engine.table("db", "cpu").unwrap();
    assert_eq!(schema.tags, vec!["host", "region"]);
    let fields: Vec<(&str, FieldType)> = schema
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.field_type))
        .collect();
    assert_eq!(
        fields,
        vec![("usage", FieldType::Float), ("up", FieldType::Boolean)]
    );

    // The declared types bind line protocol writes.
    let report = engine
        .write_lines(
            "db",
            b"cpu,host=a usage=1i 1\ncpu,host=a usage=2.5 2\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    assert_eq!(report.rows, 1);
    assert_eq!(report.errors.len(), 1, "{report:?}");
    assert!(report.errors[0].message.contains("is float"), "{report:?}");

    // A taken name is an error; IF NOT EXISTS accepts an agreeing declaration and adds
    // the columns the table lacks.
    let err = engine
        .create_table("db", "cpu", &declared, false)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::Schema(SchemaError::TableExists { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("already exists"), "{err}");
    let wider = definition(&["host", "dc"], &[("usage", FieldType::Float)]);
    assert_eq!(
        engine.create_table("db", "cpu", &wider, true).unwrap(),
        CreateOutcome::Existed(schema.id)
    );
    assert_eq!(
        engine.table("db", "cpu").unwrap().tags,
        vec!["host", "region", "dc"]
    );
    for (bad, needle) in [
        (
            definition(&[], &[("usage", FieldType::Integer)]),
            "is float",
        ),
        (definition(&["usage"], &[]), "is a field"),
        (definition(&[], &[("host", FieldType::String)]), "is a tag"),
    ] {
        let err = engine.create_table("db", "cpu", &bad, true).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    // Declarations that cannot make a table.
    for (bad, needle) in [
        (definition(&["time"], &[]), "reserved"),
        (definition(&["a"], &[("a", FieldType::Float)]), "twice"),
        (definition(&[""], &[]), "empty"),
    ] {
        let err = engine.create_table("db", "new", &bad, false).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
        assert!(engine.table("db", "new").is_none());
    }

    drop(engine);
    let engine = open(dir.path());
    let reopened = engine.table("db", "cpu").unwrap();
    assert_eq!(reopened.tags, vec!["host", "region", "dc"]);
    assert_eq!(reopened.fields.len(), 2);
}

#[test]
fn a_dropped_table_is_never_seen_again_and_leaves_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    write(&engine, &rows("m", &["a", "b", "c", "d"], 20, 0));
    engine.flush().unwrap();
    write(&engine, &rows("m", &["a", "e"], 10, 100));
    engine.flush().unwrap();
    write(&engine, &rows("other", &["a"], 5, 0));
    write(&engine, &rows("m", &["f"], 3, 200)); // memtable only
    let old = engine.catalog().table_id("db", "m").unwrap();
    assert!(tables_on_disk(dir.path()).contains(&old));

    assert_eq!(engine.drop_table("db", "m").unwrap(), Some(old));
    assert_eq!(engine.drop_table("db", "m").unwrap(), None);
    assert!(engine.table("db", "m").is_none());
    assert_eq!(engine.catalog().table(old), None);
    let names: Vec<String> = engine
        .catalog()
        .tables("db")
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, vec!["other"]);

    // The same name again: a new id, none of the old rows, tags or fields.
    engine
        .create_table(
            "db",
            "m",
            &definition(&["zone"], &[("v", FieldType::Integer)]),
            false,
        )
        .unwrap();
    let new = engine.catalog().table_id("db", "m").unwrap();
    assert_ne!(new, old);
    assert_eq!(engine.table("db", "m").unwrap().tags, vec!["zone"]);
    assert_eq!(values(&engine, "m"), Vec::<i64>::new());
    write(&engine, "m,zone=z v=7i 5\n");
    assert_eq!(values(&engine, "m"), vec![7]);
    assert_eq!(engine.tag_values(new, "host"), Vec::<String>::new());

    // A restart keeps the drop: the old rows replayed from the WAL stay invisible.
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(engine.catalog().table_id("db", "m"), Some(new));
    assert_eq!(values(&engine, "m"), vec![7]);
    assert_eq!(values(&engine, "other").len(), 5);

    // Flushing writes none of the dropped rows; the purge (here through compaction)
    // rewrites the parts that hold them.
    engine.flush().unwrap();
    assert!(tables_on_disk(dir.path()).contains(&old), "not purged yet");
    engine.compact().unwrap();
    let on_disk = tables_on_disk(dir.path());
    assert!(!on_disk.contains(&old), "{on_disk:?}");
    assert!(on_disk.contains(&new), "{on_disk:?}");
    assert_eq!(values(&engine, "m"), vec![7]);
    assert_eq!(values(&engine, "other"), vec![0, 1, 2, 3, 4]);
}

#[test]
fn maintenance_purges_a_drop_and_flushes_skip_dropped_rows() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    // Only table `m` in the parts: the purge removes them rather than rewriting them.
    write(&engine, &rows("m", &["a", "b"], 30, 0));
    engine.flush().unwrap();
    assert!(engine.stats().parts > 0);
    write(&engine, &rows("m", &["c"], 4, 0)); // in the memtable at the drop
    engine.drop_table("db", "m").unwrap();
    engine.maintain().unwrap();
    assert_eq!(engine.stats().parts, 0, "the purge removed every part");
    engine.flush().unwrap();
    assert_eq!(engine.stats().parts, 0, "the flush wrote no dropped row");
    assert!(tables_on_disk(dir.path()).is_empty());
    // Partition directories emptied by the purge are gone too.
    for data_dir in ["d0", "d1"] {
        for shard in std::fs::read_dir(dir.path().join(data_dir))
            .unwrap()
            .flatten()
        {
            if shard.path().is_dir() {
                for entry in std::fs::read_dir(shard.path()).unwrap().flatten() {
                    let name = entry.file_name().into_string().unwrap();
                    assert!(!name.starts_with('p'), "{name} left behind");
                }
            }
        }
    }
    drop(engine);
    let engine = open(dir.path());
    assert!(engine.catalog().tables("db").is_empty());
    assert!(engine.catalog().databases().is_empty());
}

#[test]
fn tag_values_come_from_every_shard() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let mut body = String::new();
    for i in 0..40 {
        body.push_str(&format!(
            "cpu,host=h{:02},region=r{} v=1i {i}\n",
            i % 20,
            i % 3
        ));
    }
    body.push_str("cpu,dc=x v=1i 99\nmem,host=zz v=1i 1\n");
    write(&engine, &body);
    engine.flush().unwrap();
    let cpu = engine.catalog().table_id("db", "cpu").unwrap();
    let hosts: Vec<String> = (0..20).map(|i| format!("h{i:02}")).collect();
    assert_eq!(engine.tag_values(cpu, "host"), hosts);
    assert_eq!(engine.tag_values(cpu, "region"), vec!["r0", "r1", "r2"]);
    assert_eq!(engine.tag_values(cpu, "dc"), vec!["x"]);
    assert_eq!(engine.tag_values(cpu, "nope"), Vec::<String>::new());
    // Series of every shard are listed, not just one shard's.
    assert!(engine.shard_count() > 1);
}

/// `CREATE DATABASE` makes a database that exists with no table, across a restart;
/// `DROP DATABASE` drops its tables and forgets it; series and tag keys are listed from
/// the indexes.
#[test]
fn databases_are_created_and_dropped_durably() {
    let dir = tempfile::tempdir().unwrap();
    {
        let engine = open(dir.path());
        assert!(engine.create_database("empty").unwrap());
        assert!(
            !engine.create_database("empty").unwrap(),
            "second create is a no-op"
        );
        write(&engine, &rows("cpu", &["a", "b"], 4, 0));
        write(&engine, "cpu,host=c,rack=r1 v=1i 7\n");
        assert_eq!(engine.catalog().databases(), ["db", "empty"]);
        let cpu = engine.table("db", "cpu").unwrap();
        assert_eq!(engine.tag_keys(cpu.id), ["host", "rack"]);
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            engine.series_tags(cpu.id),
            vec![
                vec![pair("host", "a")],
                vec![pair("host", "b")],
                vec![pair("host", "c"), pair("rack", "r1")],
            ]
        );
        engine.close().unwrap();
    }
    let engine = open(dir.path());
    assert_eq!(engine.catalog().databases(), ["db", "empty"]);
    assert!(engine.drop_database("db").unwrap());
    assert!(engine.drop_database("empty").unwrap());
    assert!(!engine.drop_database("never").unwrap());
    assert!(engine.catalog().databases().is_empty());
    assert!(engine.table("db", "cpu").is_none());
    engine.close().unwrap();
    let engine = open(dir.path());
    assert!(engine.catalog().databases().is_empty());
}
