//! TDengine's super tables in Strata's SQL: seed 002's statements (taosBenchmark's smart
//! meters) run as written; subtables made by `CREATE TABLE … USING` and by `INSERT … USING`
//! keep their tags across a restart; `tbname` and the TAGS group and filter exactly; and
//! every refusal says what is wrong, where.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{Cell, HOUR_NS, HOURS, Rng, START_NS, open_engine, to_rows};
use datafusion::arrow::array::{Array, TimestampNanosecondArray};
use strata_query::{QueryEngine, QueryError};
use strata_storage::Engine;

/// Seed 002, verbatim: taosBenchmark's database and super table.
const SEED_DATABASE: &str = "CREATE DATABASE IF NOT EXISTS test PRECISION 'ms';";
const SEED_STABLE: &str = "CREATE TABLE test.meters (ts TIMESTAMP,current float,voltage int,\
                           phase float) TAGS (groupid int,location binary(24))";
/// taosBenchmark's default start time, 2017-07-14T02:40:00Z, in milliseconds.
const START_MS: i64 = 1_500_000_000_000;
/// The engine's (manual) clock: what `NOW` reads.
const NOW_NS: i64 = START_NS + HOURS * HOUR_NS;

const CITIES: [&str; 4] = [
    "California.SanFrancisco",
    "California.LosAngeles",
    "California.SanDiego",
    "California.Campbell",
];

/// Every row of a query's answer as text.
async fn rows(sql: &QueryEngine, database: &str, query: &str) -> Vec<Vec<String>> {
    let batches = sql.sql(database, query).await.unwrap();
    to_rows(&batches, &|_| false)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|cell| match cell {
                    Cell::Exact(text) => text,
                    Cell::Approx(v) => v.to_string(),
                })
                .collect()
        })
        .collect()
}

/// The first column of a query's answer, a timestamp, in nanoseconds.
async fn times(sql: &QueryEngine, database: &str, query: &str) -> Vec<i64> {
    let batches = sql.sql(database, query).await.unwrap();
    let mut out = Vec::new();
    for batch in &batches {
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<TimestampNanosecondArray>()
            .unwrap();
        out.extend((0..column.len()).map(|i| column.value(i)));
    }
    out
}

fn restart(dir: &std::path::Path, sql: QueryEngine, engine: Arc<Engine>) -> Arc<Engine> {
    drop(sql);
    Arc::try_unwrap(engine).ok().unwrap().close().unwrap();
    open_engine(dir)
}

/// One seeded meter: its tags and rows (ms, current, voltage, phase).
struct Meter {
    groupid: u64,
    location: &'static str,
    rows: Vec<(i64, f64, i64, f64)>,
}

/// Seeded meters; currents and phases are multiples of 1/8, so sums (and averages of
/// them) are exact in f64 whatever order they are added in.
fn meters(seed: u64, count: usize) -> Vec<Meter> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|_| {
            let groupid = 1 + rng.below(3);
            let location = *rng.pick(&CITIES);
            let n = 3 + rng.below(12) as i64;
            let rows = (0..n)
                .map(|k| {
                    (
                        START_MS + k * 10,
                        rng.below(120) as f64 / 8.0,
                        200 + rng.below(30) as i64,
                        rng.below(8) as f64 / 8.0,
                    )
                })
                .collect();
            Meter {
                groupid,
                location,
                rows,
            }
        })
        .collect()
}

/// taosBenchmark's `INSERT`: rows one after another, no commas between them.
fn seed_insert(index: usize, meter: &Meter) -> String {
    let values: String = meter
        .rows
        .iter()
        .map(|(ts, current, voltage, phase)| format!("({ts},{current},{voltage},{phase})"))
        .collect();
    format!("INSERT INTO test.d{index} VALUES {values}")
}

#[tokio::test]
async fn seed_002_statements_run_as_written_and_group_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql("db", SEED_DATABASE).await.unwrap();
    sql.sql("db", SEED_STABLE).await.unwrap();
    // taosBenchmark creates its child tables in batches of several per statement.
    let meters = meters(2002, 10);
    for batch in (0..meters.len()).collect::<Vec<_>>().chunks(4) {
        let create: String = batch
            .iter()
            .map(|&i| {
                format!(
                    " IF NOT EXISTS test.d{i} USING test.meters TAGS ({},'{}')",
                    meters[i].groupid, meters[i].location
                )
            })
            .collect();
        sql.sql("db", &format!("CREATE TABLE{create}"))
            .await
            .unwrap();
    }
    let mut written = 0;
    for (i, meter) in meters.iter().enumerate() {
        let batches = sql.sql("db", &seed_insert(i, meter)).await.unwrap();
        assert_eq!(rows_written(&batches), meter.rows.len() as u64);
        written += meter.rows.len();
    }

    let describe = rows(&sql, "test", "DESCRIBE meters").await;
    let columns: Vec<(&str, &str)> = describe
        .iter()
        .map(|r| (r[0].as_str(), r[2].as_str()))
        .collect();
    assert_eq!(
        columns,
        [
            ("time", "time"),
            ("groupid", "tag"),
            ("location", "tag"),
            ("tbname", "tag"),
            ("current", "field"),
            ("voltage", "field"),
            ("phase", "field"),
        ]
    );

    // Per subtable (tbname): counts, averages and sums are exact.
    let got = rows(
        &sql,
        "test",
        "SELECT tbname, count(*), avg(current), sum(voltage), max(phase) FROM meters \
         GROUP BY tbname ORDER BY tbname",
    )
    .await;
    let mut want: Vec<Vec<String>> = meters
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let n = m.rows.len() as f64;
            let current: f64 = m.rows.iter().map(|r| r.1).sum();
            let voltage: i64 = m.rows.iter().map(|r| r.2).sum();
            let phase = m.rows.iter().map(|r| r.3).fold(f64::MIN, f64::max);
            vec![
                format!("d{i}"),
                m.rows.len().to_string(),
                (current / n).to_string(),
                voltage.to_string(),
                phase.to_string(),
            ]
        })
        .collect();
    want.sort();
    assert_eq!(numeric(got), numeric(want));

    // Per TAG value: groupid is stored as its text.
    let got = rows(
        &sql,
        "test",
        "SELECT groupid, count(*), avg(voltage) FROM meters GROUP BY groupid ORDER BY groupid",
    )
    .await;
    let mut groups: BTreeMap<String, (usize, i64)> = BTreeMap::new();
    for meter in &meters {
        let entry = groups.entry(meter.groupid.to_string()).or_default();
        entry.0 += meter.rows.len();
        entry.1 += meter.rows.iter().map(|r| r.2).sum::<i64>();
    }
    let want: Vec<Vec<String>> = groups
        .iter()
        .map(|(g, (n, v))| {
            vec![
                g.clone(),
                n.to_string(),
                (*v as f64 / *n as f64).to_string(),
            ]
        })
        .collect();
    assert_eq!(numeric(got), numeric(want));
    let total = rows(&sql, "test", "SELECT count(*) FROM meters").await;
    assert_eq!(total, [[written.to_string()]]);

    // A subtable is a filter on tbname; its integer times were milliseconds.
    let d3 = times(
        &sql,
        "test",
        "SELECT time FROM meters WHERE tbname = 'd3' ORDER BY time",
    )
    .await;
    let want: Vec<i64> = meters[3].rows.iter().map(|r| r.0 * 1_000_000).collect();
    assert_eq!(d3, want);
    let location = rows(
        &sql,
        "test",
        "SELECT DISTINCT location FROM meters WHERE tbname = 'd3'",
    )
    .await;
    assert_eq!(location, [[meters[3].location]]);
}

/// The `count` an INSERT returns.
fn rows_written(batches: &[datafusion::arrow::array::RecordBatch]) -> u64 {
    let text = to_rows(batches, &|_| false);
    match &text[0][0] {
        Cell::Exact(n) => n.parse().unwrap(),
        Cell::Approx(v) => *v as u64,
    }
}

/// Rows with their numbers parsed, so `2.5` and `2.50` compare equal but `2.5` and `2.6`
/// do not.
fn numeric(rows: Vec<Vec<String>>) -> Vec<Vec<Result<f64, String>>> {
    rows.into_iter()
        .map(|row| {
            row.into_iter()
                .map(|cell| cell.parse::<f64>().map_err(|_| cell))
                .collect()
        })
        .collect()
}

/// TDengine's documentation's meters, its subtables made both ways.
const DOC_STABLE: &str = "CREATE STABLE meters (ts TIMESTAMP, current FLOAT, voltage INT, \
                          phase FLOAT) TAGS (location BINARY(64), groupId INT)";

#[tokio::test]
async fn subtables_made_by_create_and_by_insert_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    for statement in [
        DOC_STABLE,
        "CREATE TABLE d1001 USING meters TAGS ('California.SanFrancisco', 2)",
        "INSERT INTO d1001 VALUES ('2018-10-03 14:38:05.000', 10.25, 219, 0.25) \
         ('2018-10-03 14:38:15.000', 12.5, 218, 0.375)",
        "INSERT INTO d1002 USING meters TAGS ('California.SanFrancisco', 3) \
         VALUES ('2018-10-03 14:38:16.650', 10.25, 218, 0.25)",
        // Several tables in one statement, some made on the fly, one with only some tags.
        "INSERT INTO d1001 VALUES (1538548696800, 12.25, 221, 0.25) \
         d1003 USING meters (groupId) TAGS (2) VALUES (1538548685500, 11.75, 221, 0.25), \
         (1538548696600, 13.5, 223, 0.25) \
         d1004 USING meters TAGS ('California.LosAngeles', 3) \
         VALUES (1538548685500, 10.75, 223, 0.25)",
        "INSERT INTO d1001 (ts, current) VALUES (1538548697000, 9.5)",
    ] {
        sql.sql("db", statement).await.unwrap();
    }
    let per_table = "SELECT tbname, location, groupid, count(*), sum(current) FROM meters \
                     GROUP BY tbname, location, groupid ORDER BY tbname";
    let want = [
        ["d1001", "California.SanFrancisco", "2", "4", "44.5"],
        ["d1002", "California.SanFrancisco", "3", "1", "10.25"],
        ["d1003", "NULL", "2", "2", "25.25"],
        ["d1004", "California.LosAngeles", "3", "1", "10.75"],
    ];
    assert_eq!(rows(&sql, "db", per_table).await, want);
    // A quoted time without an offset is UTC; integers are milliseconds.
    let d1001 = times(
        &sql,
        "db",
        "SELECT time FROM meters WHERE tbname = 'd1001' ORDER BY time",
    )
    .await;
    let ms = [1538577485000, 1538577495000, 1538548696800, 1538548697000];
    let mut want: Vec<i64> = ms.iter().map(|t| t * 1_000_000).collect();
    want.sort();
    assert_eq!(d1001, want);

    let engine = restart(dir.path(), sql, engine);
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    // The subtables and their tags are still known: plain INSERTs find them.
    sql.sql(
        "db",
        "INSERT INTO d1003 VALUES (NOW, 1.5, 220, 0.5) (now() - 1s, 2.5, 221, 0.5) \
         d1004 (time, voltage) VALUES (1538548700000, 230)",
    )
    .await
    .unwrap();
    let d1003 = times(
        &sql,
        "db",
        "SELECT time FROM meters WHERE tbname = 'd1003' ORDER BY time",
    )
    .await;
    assert_eq!(
        d1003,
        [
            1538548685500 * 1_000_000,
            1538548696600 * 1_000_000,
            NOW_NS - 1_000_000_000,
            NOW_NS
        ]
    );
    let want = [
        ["d1001", "California.SanFrancisco", "2", "4", "44.5"],
        ["d1002", "California.SanFrancisco", "3", "1", "10.25"],
        ["d1003", "NULL", "2", "4", "29.25"],
        ["d1004", "California.LosAngeles", "3", "2", "10.75"],
    ];
    assert_eq!(rows(&sql, "db", per_table).await, want);
    // Re-declaring is accepted only as it was.
    sql.sql(
        "db",
        "CREATE TABLE IF NOT EXISTS d1002 USING meters TAGS ('California.SanFrancisco', 3)",
    )
    .await
    .unwrap();
    sql.sql(
        "db",
        &DOC_STABLE.replacen("STABLE", "STABLE IF NOT EXISTS", 1),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn a_database_precision_sets_the_unit_of_integer_times_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql("db", "CREATE DATABASE power PRECISION 'us'")
        .await
        .unwrap();
    let engine = restart(dir.path(), sql, engine);
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        "db",
        "CREATE STABLE power.m (ts TIMESTAMP, v DOUBLE, n BIGINT UNSIGNED, ok BOOL, note \
         NCHAR(8)) TAGS (g TINYINT, f FLOAT, b BOOL, since TIMESTAMP)",
    )
    .await
    .unwrap();
    sql.sql(
        "power",
        "INSERT INTO d1 USING m TAGS (-7, 2.50, true, 1538548685000000) \
         VALUES (1538548685000001, 1.5, 3, TRUE, \"x\"), (NOW + 1a, 2.5, 4, FALSE, 'y')",
    )
    .await
    .unwrap();
    let got = times(&sql, "power", "SELECT time FROM m ORDER BY time").await;
    assert_eq!(got, [1538548685000001000, NOW_NS + 1_000_000]);
    // Tag values of any type are stored as their (canonical) text.
    let tags = rows(
        &sql,
        "power",
        "SELECT DISTINCT tbname, g, f, b, since FROM m",
    )
    .await;
    assert_eq!(tags, [["d1", "-7", "2.5", "true", "2018-10-03T06:38:05Z"]]);
    let fields = rows(&sql, "power", "SELECT n, ok, note FROM m ORDER BY time").await;
    assert_eq!(fields, [["3", "true", "x"], ["4", "false", "y"]]);
}

/// A failed statement's kind, message and column (line 1).
fn failure(error: QueryError) -> (&'static str, String, u64) {
    let kind = error.kind();
    let position = error.position().expect("a position");
    assert_eq!(position.line, 1, "{error}");
    let message = match error {
        QueryError::Plan { message, .. } | QueryError::Syntax { message, .. } => message,
        other => panic!("not a plan or syntax error: {other}"),
    };
    (kind, message, position.column)
}

/// The column (from 1) of the first `needle` in `statement`.
fn column_of(statement: &str, needle: &str) -> u64 {
    statement.find(needle).expect(needle) as u64 + 1
}

#[tokio::test]
async fn every_refusal_says_what_is_wrong_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql("db", DOC_STABLE).await.unwrap();
    sql.sql("db", "CREATE TABLE d1 USING meters TAGS ('a', 2)")
        .await
        .unwrap();
    sql.sql(
        "db",
        "CREATE TABLE plain (h VARCHAR TAG, time TIMESTAMP, v DOUBLE)",
    )
    .await
    .unwrap();
    // (statement, where the error points, what its message says, its kind)
    let cases: [(&str, &str, &str, &str); 23] = [
        (
            "CREATE TABLE d2 USING meters TAGS ('a')",
            "('a')",
            "TAGS needs 2 values (location, groupid), got 1",
            "plan",
        ),
        (
            "CREATE TABLE d2 USING meters TAGS ('a', 'two')",
            "'two'",
            "tag \"groupid\" is integer; 'two' is not",
            "plan",
        ),
        (
            "CREATE TABLE d2 USING meters (nope) TAGS (1)",
            "nope",
            "\"nope\" is not a tag of the super table (its tags: location string, groupid \
             integer)",
            "plan",
        ),
        (
            "CREATE TABLE d2 USING sensors TAGS ('a', 2)",
            "sensors",
            "super table \"sensors\" not found in database \"db\"",
            "plan",
        ),
        (
            "CREATE TABLE d2 USING plain TAGS ('a', 2)",
            "plain",
            "\"plain\" is not a super table",
            "plan",
        ),
        (
            "CREATE TABLE d1 USING meters TAGS ('a', 2)",
            "d1",
            "subtable \"d1\" already exists in database \"db\"",
            "plan",
        ),
        (
            "CREATE TABLE IF NOT EXISTS d1 USING meters TAGS ('b', 2)",
            "d1",
            "subtable \"d1\" already exists with other tags (meters: location=a, groupid=2)",
            "plan",
        ),
        (
            "CREATE TABLE plain USING meters TAGS ('a', 2)",
            "plain",
            "table \"plain\" already exists in database \"db\" (a table, not a subtable)",
            "plan",
        ),
        (
            "CREATE TABLE d1 (h VARCHAR TAG, time TIMESTAMP, v DOUBLE)",
            "d1",
            "table \"d1\" already exists in database \"db\"",
            "plan",
        ),
        (
            "CREATE STABLE s (v INT, ts TIMESTAMP) TAGS (g INT)",
            "INT,",
            "the first column of a super table is its timestamp: declare \"v\" TIMESTAMP",
            "plan",
        ),
        (
            "CREATE STABLE s (ts TIMESTAMP, v INT, t2 TIMESTAMP) TAGS (g INT)",
            "TIMESTAMP)",
            "only the first column can be TIMESTAMP",
            "plan",
        ),
        (
            "CREATE STABLE s (ts TIMESTAMP, v INT) TAGS (tbname BINARY(8))",
            "tbname",
            "\"tbname\" is the subtable's name",
            "plan",
        ),
        (
            "CREATE STABLE s (ts TIMESTAMP, v INT, w INT) TAGS (v INT)",
            "v INT)",
            "column \"v\" is declared twice",
            "plan",
        ),
        (
            "CREATE STABLE d9 USING meters TAGS ('a', 2)",
            "STABLE",
            "CREATE STABLE declares a super table",
            "plan",
        ),
        (
            "CREATE DATABASE x PRECISION 's'",
            "'s'",
            "unknown precision 's'; TDengine's are 'ms', 'us' and 'ns'",
            "plan",
        ),
        (
            "INSERT INTO d1 VALUES (1538548685000, 10.3, 219)",
            "(1538",
            "row has 3 values for 4 columns (ts, current, voltage, phase)",
            "plan",
        ),
        (
            "INSERT INTO d1 (ts, groupid) VALUES (1538548685000, 2)",
            "groupid",
            "\"groupid\" is a tag: a subtable's tags are set by USING … TAGS (…)",
            "plan",
        ),
        (
            "INSERT INTO d1 (ts, nope) VALUES (1538548685000, 2)",
            "nope",
            "column \"nope\" is not in super table \"meters\"",
            "plan",
        ),
        (
            "INSERT INTO d1 (current) VALUES (2)",
            "(current",
            "the column list needs the timestamp (\"ts\")",
            "plan",
        ),
        (
            "INSERT INTO d1 VALUES (NOW, NOW, 219, 0.5)",
            "NOW, 219",
            "column \"current\" is a field; only the timestamp takes NOW",
            "plan",
        ),
        (
            "INSERT INTO d1 VALUES (1538548685000, 1.5, 219, 0.5) d7 VALUES (NOW, 1, 2, 3)",
            "d7",
            "subtable \"d7\" not found in database \"db\" (nor a table of that name): \
             create it with CREATE TABLE d7 USING <super table> TAGS (…), or write INSERT \
             INTO d7 USING <super table> TAGS (…) VALUES (…)",
            "plan",
        ),
        (
            "INSERT INTO d8 (ts, current) VALUES (NOW, 1.5)",
            "d8",
            "subtable \"d8\" not found in database \"db\" (nor a table of that name): \
             create it with CREATE TABLE d8 USING",
            "plan",
        ),
        (
            "INSERT INTO meters (time, tbname, current) VALUES (NOW, 'd5', 1.5)",
            "meters",
            "\"meters\" is a TDengine super table: rows go into its subtables",
            "plan",
        ),
    ];
    for (statement, at, message, kind) in cases {
        let error = sql.sql("db", statement).await.expect_err(statement);
        let (got_kind, got_message, column) = failure(error);
        assert!(
            got_message.contains(message),
            "{statement}\n  got: {got_message}\n want: {message}"
        );
        assert_eq!(
            column,
            column_of(statement, at),
            "{statement}: {got_message}"
        );
        assert_eq!(got_kind, kind, "{statement}");
    }
    // Nothing of the refused statements was written or registered.
    assert!(engine.catalog().subtable("db", "d2").is_none());
    assert!(engine.catalog().subtable("db", "d9").is_none());
    let count = rows(&sql, "db", "SELECT count(*) FROM meters").await;
    assert_eq!(count, [["0"]]);
}

#[tokio::test]
async fn a_bad_row_anywhere_writes_nothing_and_registers_no_subtable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql("db", DOC_STABLE).await.unwrap();
    let statement = "INSERT INTO d1 USING meters TAGS ('a', 1) VALUES (NOW, 1.5, 2, 0.5) \
                     d2 USING meters TAGS ('b', 2) VALUES (NOW, 'high', 2, 0.5)";
    let (_, message, column) = failure(sql.sql("db", statement).await.unwrap_err());
    assert!(message.contains("column \"current\" is float"), "{message}");
    assert_eq!(column, column_of(statement, "'high'"));
    assert!(engine.catalog().subtable("db", "d1").is_none());
    assert_eq!(
        rows(&sql, "db", "SELECT count(*) FROM meters").await,
        [["0"]]
    );
}
