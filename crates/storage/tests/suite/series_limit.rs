//! `max_series_per_database`: a database holds at most that many live series; rows that
//! would create more are refused with an error naming the database and the limit, the
//! rest of the write is stored; the limit counts the series found at open, and series
//! retired after a delete make room again. Databases have separate counts.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_lineproto::Precision;
use strata_storage::{DeleteRequest, Engine, EngineOptions, WriteReport};

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        background: false,
        max_series_per_database: Some(3),
        ..EngineOptions::default()
    }
}

fn write(engine: &Engine, database: &str, body: &str) -> WriteReport {
    engine
        .write_lines(database, body.as_bytes(), Precision::Nanoseconds)
        .unwrap()
}

/// One line per host, in two tables of the same database.
fn hosts(hosts: &[&str], time: i64) -> String {
    hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let table = if i % 2 == 0 { "cpu" } else { "mem" };
            format!("{table},host={h} v=1i {time}\n")
        })
        .collect()
}

#[test]
fn rows_past_the_limit_are_refused_and_retired_series_make_room() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    let report = write(&engine, "db", &hosts(&["a", "b", "c", "d", "e"], 1));
    assert_eq!(report.rows, 3, "{report:?}");
    assert_eq!(report.errors.len(), 2, "{report:?}");
    for error in &report.errors {
        assert!(
            error
                .message
                .contains("database \"db\" has reached its limit of 3 series (--max-series)"),
            "{error}"
        );
    }
    let refused: Vec<usize> = report.errors.iter().map(|e| e.line).collect();
    assert_eq!(
        refused,
        [4, 5],
        "the first three lines made the three series"
    );
    // Existing series take rows; another database has its own count.
    assert_eq!(
        write(&engine, "db", &hosts(&["a", "b", "c"], 2))
            .errors
            .len(),
        0
    );
    assert_eq!(write(&engine, "other", &hosts(&["x", "y", "z"], 2)).rows, 3);
    engine.close().unwrap();

    // The count survives a restart (it comes from the series index).
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    let report = write(&engine, "db", &hosts(&["f"], 3));
    assert_eq!(report.errors.len(), 1, "{report:?}");
    // Delete every row of host a; the maintenance round that purges them retires the
    // series, which makes room for one more.
    let table = engine.catalog().table_id("db", "cpu").unwrap();
    let predicate = strata_storage::series::TagPredicate::Eq {
        key: "host".into(),
        value: "a".into(),
    };
    engine
        .delete(&DeleteRequest {
            table,
            start: i64::MIN,
            end: i64::MAX,
            predicate: Some(predicate),
        })
        .unwrap();
    engine.compact().unwrap();
    assert_eq!(engine.stats().series_retired, 1);
    let report = write(&engine, "db", &hosts(&["f"], 4));
    assert_eq!(report.errors.len(), 0, "{report:?}");
    assert_eq!(write(&engine, "db", &hosts(&["g"], 4)).errors.len(), 1);
    engine.close().unwrap();
}
