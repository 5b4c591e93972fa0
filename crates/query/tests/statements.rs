//! Strata's own statements through `QueryEngine`: values written by `INSERT` come back
//! from `SELECT` exactly (seeded random floats and integers at their extremes, strings and
//! tags that line protocol must escape), results and schemas through both entry points,
//! and rows the engine refuses after validation reported with their position.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::sync::Arc;

use common::{DB, Rng, START_NS, open_engine};
use datafusion::arrow::array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::DataType;
use strata_query::{Position, QueryEngine, QueryError};

/// A string column of `batch` (tags are dictionary-encoded: cast to plain strings).
fn strings(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let column = cast(batch.column_by_name(name).unwrap(), &DataType::Utf8).unwrap();
    let column = column.as_any().downcast_ref::<StringArray>().unwrap();
    (0..column.len())
        .map(|i| column.is_valid(i).then(|| column.value(i).to_string()))
        .collect()
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> &'a T {
    batch
        .column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref::<T>()
        .unwrap()
}

async fn select(sql: &QueryEngine, statement: &str) -> RecordBatch {
    let batches = sql.sql(DB, statement).await.unwrap();
    let schema = batches[0].schema();
    concat_batches(&schema, &batches).unwrap()
}

/// A finite f64 from random bits (every exponent, subnormals, both zeros).
fn random_float(rng: &mut Rng) -> f64 {
    loop {
        let v = f64::from_bits(rng.next_u64());
        if v.is_finite() {
            return v;
        }
    }
}

/// An SQL literal that reads back as exactly `v` (Rust's shortest round-trip form; a
/// negative number is a unary minus in SQL).
fn float_literal(v: f64) -> String {
    format!("{v:?}")
}

#[tokio::test]
async fn inserted_values_come_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        DB,
        "CREATE TABLE t (host VARCHAR TAG, time TIMESTAMP, f DOUBLE, i BIGINT, \
         u BIGINT UNSIGNED, b BOOLEAN, s VARCHAR)",
    )
    .await
    .unwrap();

    let mut rng = Rng::new(20_231_114);
    let hosts = [
        "plain",
        "with space",
        "comma,equals=and\\backslash",
        "ünïcødé ✓",
    ];
    let texts = [
        "",
        "it's",
        "\"double\" quotes",
        "back\\slash",
        "tab\tand, comma",
        "✓ ünïcødé",
    ];
    let ints = [i64::MIN, -1, 0, 1, i64::MAX];
    let uints = [0, 1, u64::MAX];
    let mut expected = Vec::new();
    let mut values = Vec::new();
    for row in 0..120i64 {
        let time = START_NS + row * 1_000_003;
        let host = hosts[row as usize % hosts.len()];
        let f = match row {
            0 => 0.0,
            1 => -0.0,
            2 => f64::MAX,
            3 => f64::MIN_POSITIVE / 4.0, // subnormal
            4 => 0.1,
            _ => random_float(&mut rng),
        };
        let i = if row < 5 {
            ints[row as usize]
        } else {
            rng.next_u64() as i64
        };
        let u = if row < 3 {
            uints[row as usize]
        } else {
            rng.next_u64()
        };
        let b = rng.chance(50);
        let s = texts[rng.below(texts.len() as u64) as usize];
        values.push(format!(
            "({time}, '{}', {}, {i}, {u}, {b}, '{}')",
            host.replace('\'', "''"),
            float_literal(f),
            s.replace('\'', "''")
        ));
        expected.push((time, host, f, i, u, b, s));
    }
    let inserted = sql
        .sql(
            DB,
            &format!(
                "INSERT INTO t (time, host, f, i, u, b, s) VALUES {};",
                values.join(",\n")
            ),
        )
        .await
        .unwrap();
    let count = column::<UInt64Array>(&inserted[0], "count");
    assert_eq!(count.values().to_vec(), vec![120]);

    let batch = select(
        &sql,
        "SELECT time, host, f, i, u, b, s FROM t ORDER BY time",
    )
    .await;
    assert_eq!(batch.num_rows(), expected.len());
    let times = column::<TimestampNanosecondArray>(&batch, "time");
    let hosts_read = strings(&batch, "host");
    let floats = column::<Float64Array>(&batch, "f");
    let ints_read = column::<Int64Array>(&batch, "i");
    let uints_read = column::<UInt64Array>(&batch, "u");
    let bools = column::<BooleanArray>(&batch, "b");
    let texts_read = strings(&batch, "s");
    for (row, (time, host, f, i, u, b, s)) in expected.iter().enumerate() {
        assert_eq!(times.value(row), *time, "row {row}");
        assert_eq!(hosts_read[row].as_deref(), Some(*host), "row {row}");
        assert_eq!(floats.value(row).to_bits(), f.to_bits(), "row {row}: {f:?}");
        assert_eq!(ints_read.value(row), *i, "row {row}");
        assert_eq!(uints_read.value(row), *u, "row {row}");
        assert_eq!(bools.value(row), *b, "row {row}");
        assert_eq!(texts_read[row].as_deref(), Some(*s), "row {row}");
    }

    // Every host is a series of its own, listed from the series indexes of all shards.
    let listed = select(&sql, "SHOW TAG VALUES FROM t WITH KEY = host").await;
    let mut wanted: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    wanted.sort();
    assert_eq!(
        strings(&listed, "value"),
        wanted.into_iter().map(Some).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn both_entry_points_return_statement_results_with_their_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let sql = QueryEngine::new(open_engine(dir.path())).unwrap();

    let created = sql
        .sql_stream(DB, "CREATE TABLE m (time TIMESTAMP, v BIGINT)")
        .await
        .unwrap();
    assert!(created.schema().fields().is_empty());
    assert!(created.collect().await.unwrap().is_empty());

    let tables = sql.sql_stream(DB, "SHOW TABLES IN empty").await.unwrap();
    let names: Vec<String> = tables
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, vec!["table_name"]);
    let batches = tables.collect().await.unwrap();
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 0);

    let inserted = sql
        .sql_stream(DB, "insert into M values (5, 1), (6, 2)")
        .await
        .unwrap();
    assert_eq!(inserted.schema().field(0).name(), "count");
    assert_eq!(inserted.schema().field(0).data_type(), &DataType::UInt64);
    let batches = inserted.collect().await.unwrap();
    assert_eq!(column::<UInt64Array>(&batches[0], "count").value(0), 2);

    let described = sql.sql(DB, "DESCRIBE m").await.unwrap();
    assert_eq!(
        strings(&described[0], "column_name"),
        vec![Some("time".to_string()), Some("v".to_string())]
    );
    let sum = select(&sql, "SELECT sum(v) AS s FROM m").await;
    assert_eq!(column::<Int64Array>(&sum, "s").value(0), 3);

    let dropped = sql.sql(DB, "DROP TABLE m;").await.unwrap();
    assert!(dropped.is_empty());
    let err = sql.sql(DB, "SELECT * FROM m").await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn rows_the_engine_refuses_after_validation_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        DB,
        "CREATE TABLE m (host VARCHAR TAG, time TIMESTAMP, v BIGINT)",
    )
    .await
    .unwrap();
    // The series index refuses tag values over 65535 bytes; the statement's checks do not
    // know that limit, so the row reaches the engine, which stores the other row.
    let long = "x".repeat(70_000);
    let err = sql
        .sql(
            DB,
            &format!("INSERT INTO m VALUES (1, 'a', 1),\n  (2, '{long}', 2)"),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert_eq!(err.position(), Some(Position { line: 2, column: 3 }));
    let message = err.to_string();
    assert!(message.starts_with("row 2 was not written"), "{message}");
    assert!(message.contains("1 of 2 rows were written"), "{message}");
    let rows = select(&sql, "SELECT host, v FROM m").await;
    assert_eq!(strings(&rows, "host"), vec![Some("a".to_string())]);
    assert_eq!(column::<Int64Array>(&rows, "v").values().to_vec(), vec![1]);
}

/// `CREATE | ALTER | DROP DATABASE` and `SHOW DATABASES`; a retention set in SQL hides
/// older rows from every query path at once (scans, pre-aggregates, the direct path).
#[tokio::test]
async fn database_statements_set_retention_that_every_query_path_honours() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(DB, "CREATE DATABASE metrics WITH RETENTION 30d")
        .await
        .unwrap();
    sql.sql(DB, "CREATE DATABASE IF NOT EXISTS metrics")
        .await
        .unwrap();
    let err = sql
        .sql(DB, "CREATE DATABASE metrics")
        .await
        .expect_err("exists");
    assert!(err.to_string().contains("already exists"), "{err}");
    // One row a minute over the engine's four hours (the clock is at their end).
    let mut body = String::new();
    for minute in 0..common::HOURS * 60 {
        let time = START_NS + minute * 60_000_000_000;
        body.push_str(&format!("cpu,host=a usage={minute} {time}\n"));
    }
    engine
        .write_lines(
            "metrics",
            body.as_bytes(),
            strata_lineproto::Precision::Nanoseconds,
        )
        .unwrap();
    engine.flush().unwrap();

    let shown = select(&sql, "SHOW DATABASES").await;
    assert_eq!(
        strings(&shown, "database_name"),
        vec![Some("metrics".to_string())]
    );
    assert_eq!(
        strings(&shown, "retention"),
        vec![Some("30days".to_string())]
    );
    assert_eq!(
        strings(&shown, "retention_source"),
        vec![Some("database".to_string())]
    );

    let counts = async |sql: &QueryEngine| {
        let mut out = Vec::new();
        for query in [
            "SELECT count(*) AS n FROM metrics.cpu",
            "SELECT count(usage) AS n FROM metrics.cpu WHERE host = 'a'",
            "SELECT count(*) AS n FROM (SELECT time, usage FROM metrics.cpu ORDER BY time)",
        ] {
            let batch = select(sql, query).await;
            out.push(column::<Int64Array>(&batch, "n").value(0));
        }
        out
    };
    assert_eq!(counts(&sql).await, vec![240, 240, 240]);
    sql.sql(DB, "ALTER DATABASE metrics SET RETENTION 90m")
        .await
        .unwrap();
    assert_eq!(counts(&sql).await, vec![90, 90, 90]);
    let batch = select(&sql, "SELECT min(time) AS first FROM metrics.cpu").await;
    let first = column::<TimestampNanosecondArray>(&batch, "first").value(0);
    assert_eq!(first, START_NS + 150 * 60_000_000_000);
    sql.sql(DB, "ALTER DATABASE metrics SET RETENTION '2 hours'")
        .await
        .unwrap();
    assert_eq!(counts(&sql).await, vec![120, 120, 120]);
    sql.sql(DB, "ALTER DATABASE metrics SET RETENTION INF")
        .await
        .unwrap();
    assert_eq!(counts(&sql).await, vec![240, 240, 240]);
    let shown = select(&sql, "SHOW DATABASES").await;
    assert_eq!(
        strings(&shown, "retention"),
        vec![Some("forever".to_string())]
    );

    // Errors name the problem and where it is.
    for (statement, message, column) in [
        ("ALTER DATABASE nowhere SET RETENTION 1d", "not found", 16),
        (
            "ALTER DATABASE metrics SET RETENTION 7 fortnights",
            "7fortnights",
            38,
        ),
        (
            "ALTER DATABASE metrics SET RETENTION",
            "expected a retention",
            37,
        ),
        ("CREATE DATABASE x WITH TTL 1d", "expected RETENTION", 24),
        ("DROP DATABASE nowhere", "not found", 15),
    ] {
        let err = sql.sql(DB, statement).await.expect_err(statement);
        assert!(err.to_string().contains(message), "{statement}: {err}");
        assert_eq!(
            err.position(),
            Some(Position { line: 1, column }),
            "{statement}: {err}"
        );
    }
    sql.sql(DB, "DROP DATABASE IF EXISTS nowhere")
        .await
        .unwrap();
    sql.sql(DB, "DROP DATABASE metrics").await.unwrap();
    assert!(engine.catalog().databases().is_empty());
    let shown = select(&sql, "SHOW DATABASES").await;
    assert_eq!(shown.num_rows(), 0);
}
