//! `first(x)` / `last(x)`: value at the earliest / latest time, nulls skipped, ties across
//! series broken by value, with or without grouping.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use common::{START_NS, open_engine};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_lineproto::Precision;
use strata_query::{QueryEngine, QueryError};

fn table_text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

const SEC: i64 = 1_000_000_000;

/// Rows written out of time order over two hosts; host b lacks `v` at its earliest time,
/// and both hosts have a row at the latest time.
async fn engine() -> (tempfile::TempDir, QueryEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let rows = [
        ("a", 5, "v=5.0,n=50i,s=\"e\",b=true"),
        ("a", 1, "v=1.0,n=10i,s=\"a\",b=false"),
        ("b", 0, "n=0i"),
        ("b", 2, "v=2.0,n=20i,s=\"b\",b=true"),
        ("a", 9, "v=9.0,n=90i,s=\"z\",b=false"),
        ("b", 9, "v=7.0,n=70i,s=\"y\",b=true"),
    ];
    let mut body = String::new();
    for (host, second, fields) in rows {
        body.push_str(&format!(
            "m,host={host} {fields} {}\n",
            START_NS + second * SEC
        ));
    }
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, QueryEngine::new(engine).unwrap())
}

#[tokio::test]
async fn first_and_last_of_a_table_skip_nulls_and_break_ties_by_value() {
    let (_dir, sql) = engine().await;
    let out = sql
        .sql(
            "db",
            "SELECT first(v), last(v), first(n), last(n), first(s), last(s), first(b), last(b) FROM m",
        )
        .await
        .unwrap();
    // first(v): b's row at 0 has no v, so a's 1.0 at 1 s. last(v): a and b both at 9 s →
    // the larger, 9.0. first(n): b's 0 at 0 s.
    assert_eq!(
        table_text(&out),
        "+------------+-----------+------------+-----------+------------+-----------+------------+-----------+\n\
         | first(m.v) | last(m.v) | first(m.n) | last(m.n) | first(m.s) | last(m.s) | first(m.b) | last(m.b) |\n\
         +------------+-----------+------------+-----------+------------+-----------+------------+-----------+\n\
         | 1.0        | 9.0       | 0          | 90        | a          | z         | false      | true      |\n\
         +------------+-----------+------------+-----------+------------+-----------+------------+-----------+"
    );
}

#[tokio::test]
async fn first_and_last_by_group_and_bucket() {
    let (_dir, sql) = engine().await;
    let out = sql
        .sql(
            "db",
            "SELECT host, first(v) AS f, last(v) AS l, first(v, time) AS f2 FROM m \
             GROUP BY host ORDER BY host",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&out),
        "+------+-----+-----+-----+\n\
         | host | f   | l   | f2  |\n\
         +------+-----+-----+-----+\n\
         | a    | 1.0 | 9.0 | 1.0 |\n\
         | b    | 2.0 | 7.0 | 2.0 |\n\
         +------+-----+-----+-----+"
    );
    let out = sql
        .sql(
            "db",
            "SELECT time_bucket(INTERVAL '5 seconds', time) AS t, first(n) AS f, last(n) AS l \
             FROM m GROUP BY t ORDER BY t",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&out),
        "+---------------------+----+----+\n\
         | t                   | f  | l  |\n\
         +---------------------+----+----+\n\
         | 2023-11-14T22:00:00 | 0  | 20 |\n\
         | 2023-11-14T22:00:05 | 50 | 90 |\n\
         +---------------------+----+----+"
    );
}

#[tokio::test]
async fn first_of_nothing_is_null_and_misuse_is_a_plan_error() {
    let (_dir, sql) = engine().await;
    let out = sql
        .sql("db", "SELECT first(v) AS f FROM m WHERE host = 'nobody'")
        .await
        .unwrap();
    assert_eq!(table_text(&out), "+---+\n| f |\n+---+\n|   |\n+---+");
    let err = sql
        .sql("db", "SELECT first(x) FROM (VALUES (1)) AS t(x)")
        .await
        .unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert!(err.to_string().contains("time column"), "{err}");
    let err = sql
        .sql("db", "SELECT first(v, host) FROM m")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must be a timestamp"), "{err}");
}
