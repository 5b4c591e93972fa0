//! A read-only engine (`EngineOptions::read_only`, a query server on the lake) refuses
//! every change — writes of both kinds, deletes, DDL, retention, tier and precision
//! settings, downsamples — with `StorageError::ReadOnly`, and none of them leaves a trace.
//! Only the lake mirror's calls change it. Its directory must be empty or a mirror's (a
//! server's data is refused and kept), and is emptied at every open.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use strata_lineproto::Precision;
use strata_storage::catalog::TableDefinition;
use strata_storage::model::{FieldType, Value};
use strata_storage::{
    Aggregate, DeleteRequest, DownsampleSpec, Engine, EngineOptions, ManualClock, ReadRequest,
    Retention, SeriesWrite, StorageError,
};

fn open(dir: &std::path::Path, read_only: bool) -> Engine {
    Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        background: false,
        read_only,
        clock: Arc::new(ManualClock::new(1_700_000_000_000_000_000)),
        ..EngineOptions::default()
    })
    .unwrap()
    .0
}

fn refused<T: std::fmt::Debug>(result: Result<T, StorageError>, what: &str) {
    match result {
        Err(StorageError::ReadOnly(message)) => {
            assert!(
                message.contains("only answers queries"),
                "{what}: {message}"
            )
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn a_read_only_engine_refuses_every_change_and_keeps_none() {
    // A server's data directory is refused, and left as it was.
    let server = tempfile::tempdir().unwrap();
    {
        let engine = open(server.path(), false);
        engine
            .write_lines(
                "db",
                b"cpu,host=a usage=1 1700000000000000000",
                Precision::Nanoseconds,
            )
            .unwrap();
        engine.close().unwrap();
    }
    let refused_open = Engine::open(EngineOptions {
        data_dirs: vec![server.path().to_path_buf()],
        read_only: true,
        background: false,
        ..EngineOptions::default()
    });
    match refused_open {
        Err(StorageError::Invalid(message)) => {
            assert!(message.contains("needs an empty directory"), "{message}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let writable = open(server.path(), false);
    let rows: usize = writable
        .read(&ReadRequest::all(writable.table("db", "cpu").unwrap().id))
        .unwrap()
        .iter()
        .map(|s| s.data.rows())
        .sum();
    assert_eq!(rows, 1);
    writable.close().unwrap();

    // An empty directory becomes a mirror's; only the mirror's calls change it.
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), true);
    engine
        .mirror_table(
            "db",
            "cpu",
            &["host".to_string()],
            &[("usage".to_string(), FieldType::Float)],
        )
        .unwrap();
    let cpu = engine.table("db", "cpu").unwrap().id;
    // Its series hold no rows here (the lake's copies do): maintenance keeps them, even
    // before any copy is registered (series retire only once persisted, which a flush
    // does, and a read-only engine never flushes).
    let series = vec![vec![("host".to_string(), "a".to_string())]];
    assert_eq!(engine.mirror_series(0, cpu, &series).unwrap(), 1);
    engine.maintain().unwrap();
    assert_eq!(engine.series_tags(cpu), series);
    assert_eq!(engine.mirror_series(0, cpu, &series).unwrap(), 0);
    refused(
        engine.write_lines("db", b"cpu,host=b usage=2 1", Precision::Nanoseconds),
        "write_lines",
    );
    refused(
        engine.write_series(
            "db",
            &[SeriesWrite {
                table: Cow::Borrowed("up"),
                tags: vec![],
                field: Cow::Borrowed("value"),
                samples: vec![(1, Value::Float(1.0))],
            }],
        ),
        "write_series",
    );
    refused(
        engine.delete(&DeleteRequest {
            table: cpu,
            start: 0,
            end: i64::MAX,
            predicate: None,
        }),
        "delete",
    );
    let definition = TableDefinition {
        tags: vec!["host".into()],
        fields: vec![("usage".into(), FieldType::Float)],
        time_unit: None,
    };
    refused(
        engine.create_table("db", "new", &definition, false),
        "create table",
    );
    refused(engine.drop_table("db", "cpu"), "drop table");
    refused(engine.create_database("other"), "create database");
    refused(engine.drop_database("db"), "drop database");
    refused(
        engine.set_retention("db", Retention::Keep(Duration::from_secs(3600))),
        "set retention",
    );
    refused(
        engine.create_database_with_retention("other", Retention::ServerDefault),
        "create database with retention",
    );
    refused(
        engine.create_downsample(
            "db",
            "cpu_1h",
            "cpu",
            &DownsampleSpec {
                interval: Duration::from_secs(3600),
                aggregates: vec![Aggregate::Avg],
                retention: Retention::ServerDefault,
            },
            false,
        ),
        "create downsample",
    );
    refused(engine.drop_downsample("db", "cpu_1h"), "drop downsample");
    refused(
        engine
            .catalog()
            .set_tier_after("db", Some(Duration::from_secs(60))),
        "set tier after",
    );
    refused(
        engine
            .catalog()
            .set_database_precision("db", Precision::Milliseconds),
        "set precision",
    );
    // Nothing changed: one database, one table, one row.
    assert_eq!(engine.catalog().databases(), vec!["db".to_string()]);
    let names: Vec<String> = engine
        .catalog()
        .tables("db")
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, vec!["cpu".to_string()]);
    assert_eq!(engine.retention_setting("db"), Retention::ServerDefault);
    engine.close().unwrap();
    // Opened again, the mirror starts empty (it is rebuilt from the lake).
    let engine = open(dir.path(), true);
    assert!(engine.catalog().databases().is_empty());
    assert!(dir.path().join("LAKE-MIRROR").exists());
}
