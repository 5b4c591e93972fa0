//! Strata's own statements through `QueryEngine`: values written by `INSERT` come back
//! from `SELECT` exactly (seeded random floats and integers at their extremes, strings and
//! tags that line protocol must escape), results and schemas through both entry points,
//! and rows the engine refuses after validation reported with their position.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

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

/// A literal cast to its column's type, as ORMs write parameters (SQLAlchemy's
/// `%(time)s::TIMESTAMP WITHOUT TIME ZONE`), is that literal.
#[tokio::test]
async fn inserted_literals_may_be_cast() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        DB,
        "CREATE TABLE c (host VARCHAR TAG, time TIMESTAMP, f DOUBLE, i BIGINT, s VARCHAR)",
    )
    .await
    .unwrap();
    sql.sql(
        DB,
        "INSERT INTO c (time, host, f, i, s) VALUES \
         ('2026-01-01T00:00:00Z'::TIMESTAMP WITHOUT TIME ZONE, 'a'::VARCHAR, '1.5'::FLOAT, \
          CAST(7 AS BIGINT), 3::TEXT), \
         (TIMESTAMP '2026-01-01 00:01'::TIMESTAMP, 'b', 2.5::DOUBLE PRECISION, -2::BIGINT, 'x'::VARCHAR)",
    )
    .await
    .unwrap();
    let rows = sql
        .sql(DB, "SELECT host, f, i, s FROM c ORDER BY time")
        .await
        .unwrap();
    let text = datafusion::arrow::util::pretty::pretty_format_batches(&rows)
        .unwrap()
        .to_string();
    assert!(text.contains("| a    | 1.5 | 7  | 3 |"), "{text}");
    assert!(text.contains("| b    | 2.5 | -2 | x |"), "{text}");
    let err = sql
        .sql(
            DB,
            "INSERT INTO c (time, host, f) VALUES (1, 'a', 'many'::FLOAT)",
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("'many' is not a number"), "{err}");
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
    assert_eq!(strings(&shown, "retention"), vec![Some("30d".to_string())]);
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

/// `DELETE`: the rows of a time range and of the series a tag condition selects vanish at
/// once from every query path, whether they were in parts or still in memtables; rows
/// written after the statement are kept, whatever their time.
#[tokio::test]
async fn databases_keep_a_tier_after_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(DB, "CREATE DATABASE cold WITH TIER AFTER 7d RETENTION 30d")
        .await
        .unwrap();
    sql.sql(DB, "CREATE DATABASE warm").await.unwrap();
    let shown = select(&sql, "SHOW DATABASES").await;
    assert_eq!(
        strings(&shown, "database_name"),
        vec![Some("cold".to_string()), Some("warm".to_string())]
    );
    assert_eq!(
        strings(&shown, "tier_after"),
        vec![Some("7d".to_string()), Some("default".to_string())]
    );
    assert_eq!(strings(&shown, "retention")[0], Some("30d".to_string()));
    assert_eq!(
        engine.catalog().tier_after("cold"),
        Some(std::time::Duration::from_secs(7 * 86_400))
    );

    sql.sql(DB, "ALTER DATABASE warm SET TIER AFTER '12h'")
        .await
        .unwrap();
    sql.sql(DB, "ALTER DATABASE cold SET TIER AFTER DEFAULT")
        .await
        .unwrap();
    let shown = select(&sql, "SHOW DATABASES").await;
    assert_eq!(
        strings(&shown, "tier_after"),
        vec![Some("default".to_string()), Some("12h".to_string())]
    );
    for (statement, named) in [
        ("ALTER DATABASE warm SET TIER AFTER 0", "positive duration"),
        (
            "ALTER DATABASE warm SET TIER AFTER forever",
            "positive duration",
        ),
        (
            "ALTER DATABASE warm SET TIER AFTER soon",
            "tier after \"soon\"",
        ),
        ("ALTER DATABASE warm SET TIER 7d", "AFTER"),
        ("ALTER DATABASE nowhere SET TIER AFTER 7d", "not found"),
        (
            "CREATE DATABASE x WITH TIER AFTER 1d TIER AFTER 2d",
            "end of statement",
        ),
        ("CREATE DATABASE x WITH", "RETENTION or TIER AFTER"),
    ] {
        let err = sql.sql(DB, statement).await.expect_err(statement);
        assert!(err.to_string().contains(named), "{statement}: {err}");
    }
}

#[tokio::test]
async fn delete_removes_the_rows_of_a_time_range_and_series_written_before_it() {
    const MINUTE: i64 = 60_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let at = |minute: i64| START_NS + minute * MINUTE;
    // One row a minute for an hour in four series: hosts a, b (east), c (west) and one
    // without a host (west). The first half is flushed to parts, the second stays in
    // memtables.
    let write = |minutes: std::ops::Range<i64>, series: &[&str]| {
        let mut body = String::new();
        for minute in minutes {
            for key in series {
                body.push_str(&format!("cpu,{key} usage={minute} {}\n", at(minute)));
            }
        }
        engine
            .write_lines(
                DB,
                body.as_bytes(),
                strata_lineproto::Precision::Nanoseconds,
            )
            .unwrap();
    };
    let all = [
        "host=a,region=east",
        "host=b,region=east",
        "host=c,region=west",
        "region=west",
    ];
    write(0..30, &all);
    engine.flush().unwrap();
    write(30..60, &all);
    engine
        .write_lines(
            DB,
            format!(
                "mem,host=a used=1i {}\nmem,host=b used=2i {}\n",
                at(1),
                at(2)
            )
            .as_bytes(),
            strata_lineproto::Precision::Nanoseconds,
        )
        .unwrap();

    // Rows per host (the series without one last), by a scan and by the pre-aggregates.
    let per_host = async |sql: &QueryEngine| {
        let scanned = select(
            sql,
            "SELECT host, count(*) AS n FROM cpu GROUP BY host ORDER BY host NULLS LAST",
        )
        .await;
        let mut counts = column::<Int64Array>(&scanned, "n").values().to_vec();
        for host in ["a", "b", "c"] {
            let query = format!("SELECT count(usage) AS n FROM cpu WHERE host = '{host}'");
            counts.push(column::<Int64Array>(&select(sql, &query).await, "n").value(0));
        }
        counts
    };
    assert_eq!(per_host(&sql).await, vec![60, 60, 60, 60, 60, 60, 60]);

    // In parts: host a, minutes 10 to 19.
    sql.sql(
        DB,
        &format!(
            "DELETE FROM cpu WHERE time >= '{}' AND host = 'a' AND time < '{}'",
            common::rfc3339(at(10)),
            common::rfc3339(at(20))
        ),
    )
    .await
    .unwrap();
    // In memtables: hosts b and c, minutes 40 to 49 (BETWEEN includes both ends).
    sql.sql(
        DB,
        &format!(
            "DELETE FROM cpu WHERE host IN ('b', 'c') AND time BETWEEN {} AND {};",
            at(40),
            at(49)
        ),
    )
    .await
    .unwrap();
    assert_eq!(per_host(&sql).await, vec![50, 50, 50, 60, 50, 50, 50]);
    // OR between tag conditions; minutes 56 to 59 of host a and of the west region.
    sql.sql(
        DB,
        &format!(
            "DELETE FROM cpu WHERE (host = 'a' OR region = 'west') AND time > {}",
            at(55)
        ),
    )
    .await
    .unwrap();
    assert_eq!(per_host(&sql).await, vec![46, 50, 46, 56, 46, 50, 46]);
    // An empty time range deletes nothing.
    sql.sql(DB, "DELETE FROM cpu WHERE time > 100 AND time <= 50")
        .await
        .unwrap();
    assert_eq!(per_host(&sql).await, vec![46, 50, 46, 56, 46, 50, 46]);

    // Rows written after a delete in its range and series are kept.
    write(10..20, &all[..1]);
    let times = select(
        &sql,
        "SELECT time FROM cpu WHERE host = 'a' AND time < TIMESTAMP '2100-01-01' ORDER BY time",
    )
    .await;
    let minutes: Vec<i64> = column::<TimestampNanosecondArray>(&times, "time")
        .values()
        .iter()
        .map(|t| (t - START_NS) / MINUTE)
        .collect();
    assert_eq!(minutes, (0..56).collect::<Vec<_>>());

    // `<>` has SQL's meaning: the series without a host does not match, as in a SELECT.
    let preview = select(
        &sql,
        &format!(
            "SELECT count(*) AS n FROM cpu WHERE host <> 'a' AND time < '{}'",
            common::rfc3339(at(5))
        ),
    )
    .await;
    assert_eq!(column::<Int64Array>(&preview, "n").value(0), 10);
    sql.sql(
        DB,
        &format!("DELETE FROM cpu WHERE host <> 'a' AND time < {}", at(5)),
    )
    .await
    .unwrap();
    assert_eq!(per_host(&sql).await, vec![56, 45, 41, 56, 56, 45, 41]);
    // No WHERE: every row of the table; other tables keep theirs.
    sql.sql(DB, "DELETE FROM mem").await.unwrap();
    let mem = select(&sql, "SELECT count(*) AS n FROM mem").await;
    assert_eq!(column::<Int64Array>(&mem, "n").value(0), 0);
    assert_eq!(per_host(&sql).await, vec![56, 45, 41, 56, 56, 45, 41]);

    // Errors name the problem and where it is.
    for (statement, message, column) in [
        ("DELETE FROM nosuch", "not found", 13),
        ("DELETE FROM cpu WHERE usage > 1", "usage is a field", 23),
        ("DELETE FROM cpu WHERE zone = 'x'", "\"zone\" not found", 23),
        (
            "DELETE FROM cpu WHERE host LIKE 'a%'",
            "cannot compare a tag",
            28,
        ),
        ("DELETE FROM cpu WHERE time != 5", "cannot compare time", 28),
        (
            "DELETE FROM cpu WHERE host = 'a' OR time < 5",
            "only be combined with AND",
            37,
        ),
        ("DELETE FROM cpu WHERE time < 'yesterday'", "RFC 3339", 30),
        (
            "DELETE FROM cpu WHERE",
            "expected a time or tag comparison",
            22,
        ),
        (
            "DELETE FROM cpu WHERE host = 'a' x",
            "expected end of statement",
            34,
        ),
    ] {
        let err = sql.sql(DB, statement).await.expect_err(statement);
        assert!(err.to_string().contains(message), "{statement}: {err}");
        assert_eq!(
            err.position(),
            Some(Position { line: 1, column }),
            "{statement}: {err}"
        );
    }
    assert_eq!(per_host(&sql).await, vec![56, 45, 41, 56, 56, 45, 41]);

    // Compaction rewrites the parts without the deleted rows; the deletes survive a restart.
    engine.compact().unwrap();
    assert_eq!(engine.pending_tombstones(), 0);
    assert_eq!(per_host(&sql).await, vec![56, 45, 41, 56, 56, 45, 41]);
    drop(sql);
    Arc::into_inner(engine).unwrap().close().unwrap();
    let sql = QueryEngine::new(open_engine(dir.path())).unwrap();
    assert_eq!(per_host(&sql).await, vec![56, 45, 41, 56, 56, 45, 41]);
}
