//! The SQL front: database resolution over a live catalog, `time_bucket`, errors.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::sync::Arc;

use common::{HOUR_NS, START_NS, open_engine};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_lineproto::Precision;
use strata_query::{Position, QueryEngine, QueryError};

fn table_text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

#[tokio::test]
async fn time_bucket_is_date_bin() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let minute = 60_000_000_000;
    let mut body = String::new();
    for (offset, value) in [(0, 1.0), (minute, 2.0), (59 * minute, 3.0), (HOUR_NS, 4.0)] {
        body.push_str(&format!("m,host=a v={value:?} {}\n", START_NS + offset));
    }
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    let bucketed = sql
        .sql(
            "db",
            "SELECT time_bucket(INTERVAL '30 minutes', time) AS b, count(*) AS n, sum(v) AS s \
             FROM m GROUP BY b ORDER BY b",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&bucketed),
        "+---------------------+---+-----+\n\
         | b                   | n | s   |\n\
         +---------------------+---+-----+\n\
         | 2023-11-14T22:00:00 | 2 | 3.0 |\n\
         | 2023-11-14T22:30:00 | 1 | 3.0 |\n\
         | 2023-11-14T23:00:00 | 1 | 4.0 |\n\
         +---------------------+---+-----+"
    );
    let with_origin = sql
        .sql(
            "db",
            "SELECT time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2000-01-01T00:30:00') AS b, \
             count(*) AS n FROM m GROUP BY b ORDER BY b",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&with_origin),
        "+---------------------+---+\n\
         | b                   | n |\n\
         +---------------------+---+\n\
         | 2023-11-14T21:30:00 | 2 |\n\
         | 2023-11-14T22:30:00 | 2 |\n\
         +---------------------+---+"
    );
}

#[tokio::test]
async fn unqualified_names_resolve_in_the_statement_database() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let t = START_NS;
    engine
        .write_lines(
            "one",
            format!("m v=1i {t}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    // A table made after the query engine: visible to the next statement.
    engine
        .write_lines(
            "two",
            format!("m v=2i {t}\nm v=3i {}\n", t + 1).as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    let count = |batches: Vec<RecordBatch>| table_text(&batches);
    assert!(count(sql.sql("one", "SELECT sum(v) FROM m").await.unwrap()).contains("| 1 "));
    assert!(count(sql.sql("two", "SELECT sum(v) FROM m").await.unwrap()).contains("| 5 "));
    assert!(
        count(sql.sql("one", "SELECT sum(v) FROM two.m").await.unwrap()).contains("| 5 "),
        "database-qualified"
    );
    assert!(
        count(
            sql.sql("one", "SELECT sum(v) FROM strata.two.m")
                .await
                .unwrap()
        )
        .contains("| 5 "),
        "fully qualified"
    );
    // A column added after the first query is seen by the next.
    engine
        .write_lines(
            "one",
            format!("m w=7i {}\n", t + 5).as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    assert!(count(sql.sql("one", "SELECT sum(w) FROM m").await.unwrap()).contains("| 7 "));

    let err = sql.sql("three", "SELECT * FROM m").await.unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert!(err.to_string().contains("not found"), "{err}");
}

#[tokio::test]
async fn errors_say_what_and_where() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    engine
        .write_lines("db", b"m,host=a v=1i 1\n", Precision::Nanoseconds)
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();

    let err = sql
        .sql("db", "SELECT v\nFROM m WHERE ) AND")
        .await
        .unwrap_err();
    assert!(matches!(err, QueryError::Syntax { .. }), "{err:?}");
    assert_eq!(
        err.position(),
        Some(Position {
            line: 2,
            column: 14
        }),
        "{err}"
    );

    // At the end of input the parser gives no position: it is just past the last character.
    let err = sql.sql("db", "SELECT v\nFROM m WHERE").await.unwrap_err();
    assert!(matches!(err, QueryError::Syntax { .. }), "{err:?}");
    assert_eq!(
        err.position(),
        Some(Position {
            line: 2,
            column: 13
        }),
        "{err}"
    );

    let err = sql.sql("db", "SELECT nope FROM m").await.unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");
    assert_eq!(
        err.position(),
        Some(Position { line: 1, column: 8 }),
        "{err}"
    );

    let err = sql.sql("db", "INSERT INTO m VALUES (1)").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Plan { .. } | QueryError::NotSupported { .. }
        ),
        "{err:?}"
    );
    let err = sql.sql("db", "CREATE TABLE x (a INT)").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Plan { .. } | QueryError::NotSupported { .. }
        ),
        "{err:?}"
    );
}

/// The server shares one engine among request tasks: it and its futures must be `Send`.
#[test]
fn the_query_engine_can_be_shared_across_tasks() {
    fn shared<T: Send + Sync + 'static>() {}
    fn sendable<F: Future + Send>(_: F) {}
    shared::<QueryEngine>();
    let dir = tempfile::tempdir().unwrap();
    let sql = QueryEngine::new(open_engine(dir.path())).unwrap();
    sendable(sql.sql("db", "SELECT 1"));
}
