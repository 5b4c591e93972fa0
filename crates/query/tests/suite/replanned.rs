//! SQL that DataFusion refuses and Strata plans again: select lists whose columns share a
//! name, which SQL and Postgres allow and DataFusion's plans do not (the result keeps every
//! column, named as DataFusion names each item), and `FETCH FIRST n ROWS ONLY`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use common::{START_NS, open_engine};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_lineproto::Precision;
use strata_query::{QueryEngine, QueryError};

const SEC: i64 = 1_000_000_000;

/// Two hosts, three rows, written out of time order.
async fn engine() -> (tempfile::TempDir, QueryEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let body = format!(
        "m,host=b v=2.0 {}\nm,host=a v=1.0 {}\nm,host=a v=3.0 {}\n",
        START_NS + 60 * SEC,
        START_NS,
        START_NS + 120 * SEC,
    );
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (dir, QueryEngine::new(engine).unwrap())
}

fn names(batches: &[RecordBatch]) -> Vec<String> {
    let schema = batches[0].schema();
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

async fn table(sql: &QueryEngine, statement: &str) -> (Vec<String>, String) {
    let out = sql.sql("db", statement).await.unwrap();
    let text = pretty_format_batches(&out).unwrap().to_string();
    (names(&out), text)
}

#[tokio::test]
async fn a_constant_and_a_column_twice_keep_both_columns_and_their_names() {
    let (_dir, sql) = engine().await;
    let (names, text) = table(&sql, "SELECT 1, 1").await;
    assert_eq!(names, ["Int64(1)", "Int64(1)"]);
    assert!(text.contains("| 1        | 1        |"), "{text}");

    let (names, text) = table(&sql, "SELECT host, v, host FROM m ORDER BY time").await;
    assert_eq!(names, ["host", "v", "host"]);
    assert_eq!(
        text,
        "+------+-----+------+\n\
         | host | v   | host |\n\
         +------+-----+------+\n\
         | a    | 1.0 | a    |\n\
         | b    | 2.0 | b    |\n\
         | a    | 3.0 | a    |\n\
         +------+-----+------+"
    );

    // An aggregate twice, ordered by it; an alias keeps its name beside them.
    let (names, text) = table(
        &sql,
        "SELECT host, max(v), max(v), min(v) AS low FROM m GROUP BY host ORDER BY max(v) DESC",
    )
    .await;
    assert_eq!(names, ["host", "max(m.v)", "max(m.v)", "low"]);
    assert!(
        text.contains("| a    | 3.0      | 3.0      | 1.0 |"),
        "{text}"
    );
}

#[tokio::test]
async fn a_wildcard_beside_one_of_its_columns() {
    let (_dir, sql) = engine().await;
    let (names, text) = table(&sql, "SELECT *, v FROM m WHERE host = 'b'").await;
    assert_eq!(names, ["time", "host", "v", "v"]);
    assert!(text.contains("| b    | 2.0 | 2.0 |"), "{text}");
}

#[tokio::test]
async fn a_cast_of_the_column_the_statement_is_ordered_by() {
    // The cast is named after `time`, and so is the column ORDER BY adds to the projection.
    let (_dir, sql) = engine().await;
    let (names, text) = table(&sql, "SELECT time::date FROM m ORDER BY time LIMIT 1").await;
    assert_eq!(names, ["m.time"]);
    assert!(text.contains("| 2023-11-14 |"), "{text}");
}

#[tokio::test]
async fn each_branch_of_a_union_names_its_own_columns_alike() {
    let (_dir, sql) = engine().await;
    let (names, text) = table(&sql, "SELECT 1, 1 UNION ALL SELECT 2, 2 ORDER BY 1").await;
    assert_eq!(names, ["Int64(1)", "Int64(1)"]);
    assert!(text.contains("| 2        | 2        |"), "{text}");
}

#[tokio::test]
async fn described_columns_carry_the_same_names() {
    let (_dir, sql) = engine().await;
    let description = sql
        .describe("db", "SELECT host, host FROM m")
        .await
        .unwrap();
    let names: Vec<&str> = description
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["host", "host"]);
}

#[tokio::test]
async fn repeated_names_inside_a_subquery_are_still_refused_as_written() {
    // Only the outermost select lists are aliased; the first refusal is the one reported,
    // so its message names the items as the statement wrote them.
    let (_dir, sql) = engine().await;
    let error = sql
        .sql("db", "SELECT * FROM (SELECT host, host FROM m) t")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("require unique expression names") && error.contains("m.host"),
        "{error}"
    );
}

#[tokio::test]
async fn fetch_first_is_the_limit_it_means() {
    let (_dir, sql) = engine().await;
    let (_, text) = table(
        &sql,
        "SELECT v FROM m ORDER BY time FETCH FIRST 2 ROWS ONLY",
    )
    .await;
    assert!(text.ends_with("| 1.0 |\n| 2.0 |\n+-----+"), "{text}");
    let (_, text) = table(&sql, "SELECT v FROM m ORDER BY time FETCH FIRST ROW ONLY").await;
    assert!(text.ends_with("| 1.0 |\n+-----+"), "{text}");
    let (_, text) = table(
        &sql,
        "SELECT v FROM m ORDER BY time OFFSET 1 ROWS FETCH NEXT 1 ROW ONLY",
    )
    .await;
    assert!(text.ends_with("| 2.0 |\n+-----+"), "{text}");
    // In a subquery, and with repeated names once the FETCH is a LIMIT.
    let (names, text) = table(
        &sql,
        "SELECT count(*), count(*) FROM (SELECT v FROM m ORDER BY v DESC FETCH FIRST 2 ROWS ONLY) t",
    )
    .await;
    assert_eq!(names, ["count(*)", "count(*)"]);
    assert!(text.contains("| 2        | 2        |"), "{text}");
    let (names, text) = table(
        &sql,
        "SELECT v, v FROM m ORDER BY time DESC FETCH FIRST 1 ROW ONLY",
    )
    .await;
    assert_eq!(names, ["v", "v"]);
    assert!(text.contains("| 3.0 | 3.0 |"), "{text}");
}

#[tokio::test]
async fn fetch_with_ties_or_beside_a_limit_is_still_refused() {
    let (_dir, sql) = engine().await;
    for statement in [
        "SELECT v FROM m ORDER BY v FETCH FIRST 1 ROWS WITH TIES",
        "SELECT v FROM m ORDER BY v FETCH FIRST 50 PERCENT ROWS ONLY",
        "SELECT v FROM m ORDER BY v LIMIT 1 FETCH FIRST 1 ROWS ONLY",
    ] {
        let error = sql.sql("db", statement).await.unwrap_err();
        assert!(
            matches!(
                &error,
                QueryError::NotSupported { .. } | QueryError::Syntax { .. }
            ) && error.to_string().contains("FETCH"),
            "{statement}: {error:?}"
        );
    }
}
