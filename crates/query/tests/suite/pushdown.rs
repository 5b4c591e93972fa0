//! What the scan pushes into the engine, seen in plans (`EXPLAIN`) and in the rows the
//! scan itself returns (`EXPLAIN ANALYZE`'s `output_rows` of `StrataScanExec`).

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{
    DB, Data, START_NS, analyzed_metric, open_engine, physical_plan, rfc3339, write_data,
};
use datafusion::arrow::array::{Array, RecordBatch, StringArray};
use strata_query::{QueryEngine, QueryOptions};

struct Fixture {
    _dir: tempfile::TempDir,
    data: Data,
    sql: QueryEngine,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let data = write_data(&engine, 7, 12, 3);
    Fixture {
        _dir: dir,
        data,
        // Aggregates here are the scan's subject: keep them on the scan.
        sql: QueryEngine::with_options(
            engine,
            QueryOptions {
                pre_aggregate: false,
                ..QueryOptions::default()
            },
        )
        .unwrap(),
    }
}

/// The summed `output_rows` of the plan's `StrataScanExec`, from `EXPLAIN ANALYZE`.
async fn rows_scanned(sql: &QueryEngine, statement: &str) -> usize {
    analyzed_metric(sql, statement, "StrataScanExec", "output_rows").await
}

fn count_rows(data: &Data, keep: impl Fn(&common::Series, i64) -> bool) -> usize {
    data.rows
        .keys()
        .filter(|(s, t)| keep(&data.series[*s], *t))
        .count()
}

#[tokio::test]
async fn time_range_and_tag_equality_are_exact_pushdowns() {
    let f = fixture();
    let host = f.data.series[0].host.clone();
    let (from, to) = (START_NS + 3_600_000_000_000, START_NS + 5_400_000_000_000);
    let statement = format!(
        "SELECT time, f FROM cpu WHERE time >= '{}' AND time < '{}' AND host = '{host}'",
        rfc3339(from),
        rfc3339(to)
    );
    let plan = physical_plan(&f.sql, &statement).await;
    assert!(
        plan.contains(&format!("time=[{from}, {to})")),
        "time range not pushed: {plan}"
    );
    assert!(plan.contains("fields=[f]"), "projection not pushed: {plan}");
    assert!(
        plan.contains(&format!(
            "predicate=Eq {{ key: \"host\", value: \"{host}\" }}"
        )),
        "tag not pushed: {plan}"
    );
    assert!(
        !plan.contains("FilterExec"),
        "exact filters re-applied: {plan}"
    );

    let expected = count_rows(&f.data, |s, t| s.host == host && (from..to).contains(&t));
    assert!(expected > 0);
    assert_eq!(rows_scanned(&f.sql, &statement).await, expected);
}

#[tokio::test]
async fn in_lists_and_ors_of_tags_read_only_matching_series() {
    let f = fixture();
    let statement = "SELECT count(*) FROM cpu WHERE host IN ('h1', 'h2') OR region = 'r0'";
    let plan = physical_plan(&f.sql, statement).await;
    assert!(plan.contains("predicate=Or(["), "{plan}");
    assert!(!plan.contains("FilterExec"), "{plan}");
    let expected = count_rows(&f.data, |s, _| {
        s.host == "h1" || s.host == "h2" || s.region == "r0"
    });
    assert!(expected > 0 && expected < f.data.rows.len());
    assert_eq!(rows_scanned(&f.sql, statement).await, expected);
}

#[tokio::test]
async fn not_equal_is_pushed_as_a_superset_and_filtered_again() {
    let f = fixture();
    let statement = "SELECT count(*) FROM cpu WHERE dc != 'd1'";
    let plan = physical_plan(&f.sql, statement).await;
    assert!(
        plan.contains("predicate=NotEq { key: \"dc\", value: \"d1\" }"),
        "{plan}"
    );
    assert!(
        plan.contains("FilterExec"),
        "NotEq must be re-applied: {plan}"
    );
    // The engine returns series without dc too; SQL drops them afterwards.
    let scanned = count_rows(&f.data, |s, _| s.dc.as_deref() != Some("d1"));
    let kept = count_rows(&f.data, |s, _| s.dc.as_deref().is_some_and(|dc| dc != "d1"));
    assert!(kept < scanned, "the data set needs series without dc");
    assert_eq!(rows_scanned(&f.sql, statement).await, scanned);
    let batches = f.sql.sql(DB, statement).await.unwrap();
    let count = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .unwrap()
        .value(0);
    assert_eq!(count as usize, kept);
}

#[tokio::test]
async fn filters_on_fields_stay_in_datafusion() {
    let f = fixture();
    let plan = physical_plan(&f.sql, "SELECT time FROM cpu WHERE i > 0").await;
    assert!(plan.contains("FilterExec"), "{plan}");
    assert!(plan.contains("time=[-∞, ∞)"), "{plan}");
    assert!(
        plan.contains("fields=[i]"),
        "only the filtered field is read: {plan}"
    );
    assert!(!plan.contains("predicate="), "{plan}");
}

#[tokio::test]
async fn a_limit_without_filters_reaches_the_scan() {
    let f = fixture();
    let statement = "SELECT time, host FROM cpu LIMIT 5";
    let plan = physical_plan(&f.sql, statement).await;
    assert!(plan.contains("limit=5"), "{plan}");
    assert!(plan.contains("fields=[]"), "no field is decoded: {plan}");
    // At most the limit from each of the three shards.
    let scanned = rows_scanned(&f.sql, statement).await;
    assert!((5..=15).contains(&scanned), "{scanned}");
    let batches = f.sql.sql(DB, statement).await.unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 5);
}

#[tokio::test]
async fn a_limit_after_exact_filters_reaches_the_scan_too() {
    let f = fixture();
    let host = f.data.series[0].host.clone();
    let statement = format!("SELECT time, host FROM cpu WHERE host = '{host}' LIMIT 3");
    let plan = physical_plan(&f.sql, &statement).await;
    assert!(
        plan.contains("limit=3") && plan.contains("predicate=Eq"),
        "{plan}"
    );
    let batches = f.sql.sql(DB, &statement).await.unwrap();
    let hosts: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let column = datafusion::arrow::compute::cast(
                b.column(1),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            let strings = column.as_any().downcast_ref::<StringArray>().unwrap();
            (0..strings.len())
                .map(|i| strings.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(hosts, vec![host; 3]);

    // With an inexact filter DataFusion keeps the limit above its own filter.
    let plan = physical_plan(&f.sql, "SELECT time FROM cpu WHERE dc != 'd0' LIMIT 3").await;
    assert!(!plan.contains("limit=3"), "{plan}");
}

#[tokio::test]
async fn now_arithmetic_is_folded_and_pushed() {
    let f = fixture();
    // now() is the wall clock: the range starts somewhere after 2000 and is unbounded above.
    let plan = physical_plan(
        &f.sql,
        "SELECT time FROM cpu WHERE time > now() - INTERVAL '3650 days'",
    )
    .await;
    let at = plan.find("time=[").unwrap() + "time=[".len();
    let start: i64 = plan[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("time range not pushed: {plan}"));
    assert!(start > 946_684_800_000_000_000, "{plan}");
    assert!(plan[at..].starts_with(&format!("{start}, ∞)")), "{plan}");
    assert!(!plan.contains("FilterExec"), "{plan}");
}

#[tokio::test]
async fn an_empty_time_range_reads_nothing() {
    let f = fixture();
    let statement = format!(
        "SELECT count(*) FROM cpu WHERE time >= '{}' AND time < '{}'",
        rfc3339(START_NS + 10),
        rfc3339(START_NS + 10)
    );
    assert_eq!(rows_scanned(&f.sql, &statement).await, 0);
}

#[tokio::test]
async fn shards_are_scanned_as_separate_partitions() {
    let f = fixture();
    let plan = physical_plan(&f.sql, "SELECT max(f) FROM cpu").await;
    assert!(
        plan.contains("StrataScanExec: table=db.cpu, shards=3"),
        "{plan}"
    );
    let engine = Arc::clone(f.sql.engine());
    assert_eq!(engine.shard_count(), 3);
}
