//! The pre-aggregate path: which plans use it, that whole clean chunks are answered from
//! their stored pre-aggregates without decoding, and that answers equal DataFusion's own
//! aggregation over the scan.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{
    DB, analyzed_metric, difference, open_engine, physical_plan, sort_rows, to_rows, write_data,
};
use strata_query::{QueryEngine, QueryOptions};
use strata_storage::Engine;

/// A metric of `StrataPreAggExec` from `EXPLAIN ANALYZE`, summed over shards.
async fn preagg_metric(sql: &QueryEngine, statement: &str, metric: &str) -> usize {
    analyzed_metric(sql, statement, "StrataPreAggExec", metric).await
}

fn engines(engine: &Arc<Engine>) -> (QueryEngine, QueryEngine) {
    let with = QueryEngine::new(Arc::clone(engine)).unwrap();
    let without = QueryEngine::with_options(
        Arc::clone(engine),
        QueryOptions {
            pre_aggregate: false,
            ..QueryOptions::default()
        },
    )
    .unwrap();
    (with, without)
}

const WHOLE_TABLE: &str = "SELECT count(*) AS n, count(f) AS count_f, sum(i) AS sum_i, \
     min(f) AS min_f, max(i) AS max_i, avg(i) AS avg_i, first(f) AS first_f, last(i) AS last_i \
     FROM cpu";

#[tokio::test]
async fn supported_aggregates_are_planned_on_pre_aggregates_and_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    write_data(&engine, 3, 6, 2);
    let (sql, _) = engines(&engine);
    for statement in [
        WHOLE_TABLE.to_string(),
        "SELECT host, max(f) FROM cpu WHERE host IN ('h1', 'h2') GROUP BY host".to_string(),
        "SELECT date_bin(INTERVAL '1 hour', time) AS bucket, region, avg(f) FROM cpu \
         WHERE time >= '2023-11-14T23:00:00Z' GROUP BY bucket, region"
            .to_string(),
        "SELECT time_bucket(INTERVAL '10 minutes', time) AS bucket, count(*) FROM cpu GROUP BY bucket"
            .to_string(),
        // TSBS lastpoint: DISTINCT ON becomes first_value(.. ORDER BY host, time DESC).
        "SELECT DISTINCT ON (host) * FROM cpu ORDER BY host, time DESC".to_string(),
    ] {
        let plan = physical_plan(&sql, &statement).await;
        assert!(plan.contains("StrataPreAggExec"), "{statement}\n{plan}");
        if statement.contains("IN (") {
            assert!(plan.contains("predicate=Or([Eq { key: \"host\""), "{plan}");
        }
        if statement.contains("time >=") {
            assert!(plan.contains("time=[1700002800000000000, ∞)"), "{plan}");
        }
        assert!(!plan.contains("StrataScanExec"), "{statement}\n{plan}");
    }
    for statement in [
        // A filter on a field is not pushed down: the scan's rows must be filtered first.
        "SELECT count(*) FROM cpu WHERE f > 0",
        // An aggregate of a tag, an expression argument, grouping by a field.
        "SELECT min(host) FROM cpu",
        "SELECT sum(f * 2) FROM cpu",
        "SELECT i, count(*) FROM cpu GROUP BY i",
    ] {
        let plan = physical_plan(&sql, statement).await;
        assert!(!plan.contains("StrataPreAggExec"), "{statement}\n{plan}");
        assert!(plan.contains("StrataScanExec"), "{statement}\n{plan}");
    }
}

#[tokio::test]
async fn clean_chunks_are_answered_without_decoding_and_agree_with_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    write_data(&engine, 5, 8, 3);
    engine.flush().unwrap();
    engine.compact().unwrap();
    let (with, without) = engines(&engine);
    // After a full compaction every chunk is clean and inside the (unbounded) range, and
    // these aggregates need nothing but the pre-aggregates.
    let counted = "SELECT count(*) AS n, count(f) AS count_f, sum(i) AS sum_i, min(f) AS min_f, \
                   max(i) AS max_i, avg(i) AS avg_i FROM cpu";
    assert!(preagg_metric(&with, counted, "chunks_preaggregated").await > 0);
    assert_eq!(preagg_metric(&with, counted, "rows_decoded").await, 0);
    // first(f) needs the time of f's first value: chunks where some rows lack f are read.
    assert!(preagg_metric(&with, WHOLE_TABLE, "rows_decoded").await > 0);
    // One-minute buckets cut every chunk: all decoded, still pre-aggregated per bucket.
    let bucketed = "SELECT date_bin(INTERVAL '1 minute', time) AS bucket, host, max(f) AS max_f, \
                    count(*) AS n FROM cpu GROUP BY bucket, host";
    assert_eq!(
        preagg_metric(&with, bucketed, "chunks_preaggregated").await,
        0
    );
    assert!(preagg_metric(&with, bucketed, "rows_decoded").await > 0);

    let approx = |name: &str| name.starts_with("sum_f") || name.starts_with("avg_f");
    for statement in [
        WHOLE_TABLE,
        counted,
        bucketed,
        "SELECT region, dc, count(*) AS n, sum(f) AS sum_f, first(s) AS first_s, \
         last(b) AS last_b FROM cpu GROUP BY region, dc",
    ] {
        let mut a = to_rows(&with.sql(DB, statement).await.unwrap(), &approx);
        let mut b = to_rows(&without.sql(DB, statement).await.unwrap(), &approx);
        sort_rows(&mut a);
        sort_rows(&mut b);
        assert!(!a.is_empty());
        if let Some(diff) = difference(&b, &a) {
            panic!("{statement}\n{diff}");
        }
    }
}

#[tokio::test]
async fn aggregates_of_an_empty_range_give_one_row_without_group_by_and_none_with() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    write_data(&engine, 4, 4, 2);
    let (with, without) = engines(&engine);
    let empty = "WHERE time < '2000-01-01T00:00:00Z'";
    for statement in [
        format!("SELECT count(*) AS n, sum(f) AS s, avg(i) AS a, first(f) AS f FROM cpu {empty}"),
        format!("SELECT host, count(*) FROM cpu {empty} GROUP BY host"),
    ] {
        let a = to_rows(&with.sql(DB, &statement).await.unwrap(), &|_| false);
        let b = to_rows(&without.sql(DB, &statement).await.unwrap(), &|_| false);
        if let Some(diff) = difference(&b, &a) {
            panic!("{statement}\n{diff}");
        }
        assert_eq!(a.len(), usize::from(!statement.contains("GROUP BY")));
    }
}
