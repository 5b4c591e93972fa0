#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use super::may_hold_a_thread;
use crate::QueryEngine;
use crate::engine::Statement;
use crate::test_engine::engine_with_rows;

fn query_engine(dir: &std::path::Path) -> QueryEngine {
    QueryEngine::new(engine_with_rows(dir)).unwrap()
}

async fn long(sql: &QueryEngine, statement: &str) -> bool {
    let (plan, _, _) = sql
        .physical_plan("db", Statement::Text(statement))
        .await
        .unwrap();
    may_hold_a_thread(&plan)
}

#[tokio::test]
async fn plans_that_work_batch_by_batch_stay_on_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let sql = query_engine(dir.path());
    for statement in [
        "SELECT v FROM m WHERE host = 'h1' AND time = '2023-11-14T22:13:00Z'",
        "SELECT v * 2, upper(s) FROM m WHERE v > 10 LIMIT 5",
        "SELECT host, count(v), sum(v), min(v), max(v), avg(v) FROM m GROUP BY host",
        "SELECT host, first(v), last(v), stddev(v) FROM m WHERE v > 3 GROUP BY host",
        "SELECT * FROM m ORDER BY v DESC LIMIT 10",
        "SELECT v FROM m WHERE host = 'h1' UNION ALL SELECT v FROM m WHERE host = 'h2'",
        "SELECT 1",
    ] {
        assert!(!long(&sql, statement).await, "{statement}");
    }
}

#[tokio::test]
async fn plans_that_may_hold_a_thread_go_to_the_query_threads() {
    let dir = tempfile::tempdir().unwrap();
    let sql = query_engine(dir.path());
    for statement in [
        "SELECT * FROM m ORDER BY v",
        "SELECT * FROM m ORDER BY v LIMIT 100000",
        "SELECT host, median(v) FROM m GROUP BY host",
        "SELECT host, count(DISTINCT v) FROM m GROUP BY host",
        "SELECT DISTINCT s FROM m",
        "SELECT host, string_agg(s, ',') FROM m GROUP BY host",
        "SELECT row_number() OVER (ORDER BY v) FROM m",
        "SELECT a.v FROM m a JOIN m b ON a.host = b.host AND a.time = b.time",
        "SELECT host, count(v) FROM m GROUP BY host ORDER BY 2",
    ] {
        assert!(long(&sql, statement).await, "{statement}");
    }
}
