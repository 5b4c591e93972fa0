//! Guard rails: statement timeout, concurrency slots with a bounded queue, memory limit.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{START_NS, open_engine};
use futures::StreamExt;
use strata_lineproto::Precision;
use strata_query::{QueryEngine, QueryError, QueryOptions};
use strata_storage::Engine;

/// 5,000 rows of table `m`: 50 hosts x 100 points.
fn engine_with_rows(dir: &std::path::Path) -> Arc<Engine> {
    let engine = open_engine(dir);
    let mut body = String::new();
    for host in 0..50 {
        for point in 0..100i64 {
            body.push_str(&format!(
                "m,host=h{host} v={point}.5 {}\n",
                START_NS + point * 1_000_000_000
            ));
        }
    }
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty());
    engine
}

#[tokio::test]
async fn a_statement_past_its_timeout_fails_with_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        timeout: Some(Duration::from_nanos(1)),
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    // The direct path answers within the timer's first tick: the deadline must still hold.
    assert!(sql.is_direct("db", "SELECT count(*) FROM m"));
    let err = sql.sql("db", "SELECT count(*) FROM m").await.unwrap_err();
    assert!(matches!(err, QueryError::Timeout { .. }), "{err:?}");
    assert_eq!(err.kind(), "timeout");
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[tokio::test]
async fn without_a_timeout_the_same_statement_answers() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        timeout: None,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    let batches = sql.sql("db", "SELECT count(*) AS n FROM m").await.unwrap();
    let n = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .unwrap()
        .value(0);
    assert_eq!(n, 5000);
}

#[tokio::test]
async fn statements_beyond_the_slots_and_queue_are_turned_away_until_a_slot_frees() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        max_concurrent: 1,
        timeout: None,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    // The one slot: a stream not yet read holds it.
    let held = sql.sql_stream("db", "SELECT * FROM m").await.unwrap();
    // Four may wait (4 per slot); each is polled once so it has joined the queue.
    let mut waiting: Vec<_> = (0..4)
        .map(|_| Box::pin(sql.sql("db", "SELECT count(*) FROM m")))
        .collect();
    for statement in &mut waiting {
        assert!(futures::poll!(statement.as_mut()).is_pending());
    }
    let err = sql.sql("db", "SELECT 1").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Busy {
                limit: 1,
                queued: 4
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "too many queries: 1 running and 4 waiting; retry later"
    );
    assert_eq!(err.kind(), "busy");
    // Reading the held stream to its end frees the slot; the queue then drains in turn.
    let rows: usize = held
        .map(|b| b.unwrap().num_rows())
        .collect::<Vec<_>>()
        .await
        .iter()
        .sum();
    assert_eq!(rows, 5000);
    for statement in waiting {
        assert_eq!(statement.await.unwrap()[0].num_rows(), 1);
    }
    // And nobody is turned away any more.
    sql.sql("db", "SELECT 1").await.unwrap();
}

#[tokio::test]
async fn the_queue_length_is_a_setting_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        max_concurrent: 1,
        max_queued: Some(9),
        timeout: None,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    let held = sql.sql_stream("db", "SELECT * FROM m").await.unwrap();
    // Nine wait where the default would have turned the fifth away.
    let mut waiting: Vec<_> = (0..9)
        .map(|_| Box::pin(sql.sql("db", "SELECT count(*) FROM m")))
        .collect();
    for statement in &mut waiting {
        assert!(futures::poll!(statement.as_mut()).is_pending());
    }
    let err = sql.sql("db", "SELECT 1").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Busy {
                limit: 1,
                queued: 9
            }
        ),
        "{err:?}"
    );
    drop(held);
    for statement in waiting {
        assert_eq!(statement.await.unwrap()[0].num_rows(), 1);
    }
    // No queue at all: a statement that finds the slot taken fails at once.
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        max_concurrent: 1,
        max_queued: Some(0),
        timeout: None,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    let _held = sql.sql_stream("db", "SELECT * FROM m").await.unwrap();
    let err = sql.sql("db", "SELECT 1").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Busy {
                limit: 1,
                queued: 0
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_sort_larger_than_the_memory_limit_fails_with_resources_exhausted() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        memory_limit: Some(4 * 1024),
        target_partitions: 1,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    // A group per row: the hash table outgrows 4 KiB (spilling needs more than that too).
    let err = sql
        .sql(
            "db",
            "SELECT host, time, max(v) FROM m GROUP BY host, time ORDER BY host, time",
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, QueryError::ResourcesExhausted { .. }),
        "{err:?}"
    );
    assert_eq!(err.kind(), "resources_exhausted");
    assert!(err.to_string().contains("memory limit"), "{err}");
}

/// A join makes batch after batch out of one batch of each input, so DataFusion's yield
/// points on the scans do not bound the work between two yields. This cross join (5,000 x
/// 5,000 rows, a cosine and a logarithm per pair) must yield while it runs, so that on this
/// one-thread runtime the timer below fires before it ends, and stop when its task is
/// dropped (as the HTTP handler is when the client goes away). Before the yield points
/// above joins, it ran to its end in a single poll: no timeout check, no cancel.
#[tokio::test]
async fn a_cross_join_yields_while_it_runs_and_stops_when_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let options = QueryOptions {
        timeout: None,
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(engine_with_rows(dir.path()), options).unwrap();
    let sql = Arc::new(sql);
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let task = tokio::spawn({
        let (sql, finished) = (Arc::clone(&sql), Arc::clone(&finished));
        async move {
            let statement =
                "SELECT sum(cos(a.v * b.v) * ln(a.v + b.v + 1)) FROM m a CROSS JOIN m b";
            let answer = sql.sql("db", statement).await;
            finished.store(true, std::sync::atomic::Ordering::SeqCst);
            answer
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !finished.load(std::sync::atomic::Ordering::SeqCst),
        "the join ran to its end without yielding once"
    );
    task.abort();
    let err = task.await.expect_err("aborted");
    assert!(err.is_cancelled(), "{err:?}");
    assert!(!finished.load(std::sync::atomic::Ordering::SeqCst));
}
