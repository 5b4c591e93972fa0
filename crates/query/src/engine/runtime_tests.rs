//! Long statements run on the query threads, not on the thread that reads them; short
//! ones where they are read.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::arrow::array::{Array, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::DataFusionError;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{ColumnarValue, Volatility, create_udf};
use futures::StreamExt;
use strata_lineproto::Precision;

use super::QueryEngine;
use crate::test_engine::engine_with_rows;

/// `probe(v)`: on its first call, waits until `released` says so; then 1 for each row
/// when it runs on a thread named `strata-query`, 0 otherwise.
fn register_probe(sql: &mut QueryEngine, released: std_mpsc::Receiver<()>) {
    let released = Mutex::new(Some(released));
    let probe = create_udf(
        "probe",
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(move |args: &[ColumnarValue]| {
            if let Some(released) = released.lock().unwrap().take() {
                released
                    .recv_timeout(Duration::from_secs(30))
                    .map_err(|_| DataFusionError::Execution("never released".into()))?;
            }
            let on_query_thread = std::thread::current().name() == Some("strata-query");
            let rows = match &args[0] {
                ColumnarValue::Array(array) => array.len(),
                ColumnarValue::Scalar(_) => 1,
            };
            let flags = vec![i64::from(on_query_thread); rows];
            Ok(ColumnarValue::Array(Arc::new(Int64Array::from(flags))))
        }),
    );
    sql.state.register_udf(Arc::new(probe)).unwrap();
}

/// The statement (a sort: it goes to the query threads) blocks its thread until a task of
/// the caller's single-threaded runtime releases it: run on the caller's thread, it would
/// wait for itself until it failed.
#[tokio::test(flavor = "current_thread")]
async fn a_long_statement_computes_on_the_query_threads_while_the_caller_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut sql = QueryEngine::new(engine_with_rows(dir.path())).unwrap();
    let (release, released) = std_mpsc::channel();
    register_probe(&mut sql, released);
    let statement = "SELECT probe(v) AS on_query_thread FROM m ORDER BY time";
    assert!(!sql.is_direct("db", statement));
    let releaser = tokio::spawn(async move {
        tokio::task::yield_now().await;
        release.send(()).unwrap();
    });
    let stream = sql.sql_stream("db", statement).await.unwrap();
    let flags = flags(stream).await;
    releaser.await.unwrap();
    assert_eq!(flags.len(), 100);
    assert!(flags.iter().all(|&f| f == 1), "not all on query threads");
}

/// A projection over a scan stays on the thread that reads it (`plan_weight`).
#[tokio::test(flavor = "current_thread")]
async fn a_short_statement_computes_where_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut sql = QueryEngine::new(engine_with_rows(dir.path())).unwrap();
    let (release, released) = std_mpsc::channel();
    register_probe(&mut sql, released);
    release.send(()).unwrap();
    let stream = sql
        .sql_stream("db", "SELECT probe(v) FROM m")
        .await
        .unwrap();
    let flags = flags(stream).await;
    assert_eq!(flags.len(), 100);
    assert!(flags.iter().all(|&f| f == 0), "ran on a query thread");
}

async fn flags(mut stream: crate::QueryStream) -> Vec<i64> {
    let mut flags = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.unwrap();
        let column = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        flags.extend(column.values().iter().copied());
    }
    flags
}

/// Every statement executes with the engine's one task context; the database a statement
/// names is still its own, on either side of the hop.
#[tokio::test]
async fn each_statement_sees_its_own_database() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine_with_rows(dir.path());
    let report = engine
        .write_lines(
            "other",
            b"m,host=h0 v=1i 1\nm,host=h1 v=2i 2\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    assert!(report.errors.is_empty());
    let sql = QueryEngine::new(engine).unwrap();
    for database in ["db", "other", "db"] {
        for statement in [
            "SELECT current_database() AS d, v FROM m",
            "SELECT current_database() AS d, v FROM m ORDER BY v",
        ] {
            let batches = sql.sql(database, statement).await.unwrap();
            let names: Vec<String> = batches
                .iter()
                .flat_map(|b| {
                    let column = datafusion::arrow::array::AsArray::as_string::<i32>(b.column(0));
                    column
                        .iter()
                        .map(|v| v.unwrap().to_string())
                        .collect::<Vec<_>>()
                })
                .collect();
            assert!(!names.is_empty(), "{database}: {statement}");
            assert!(
                names.iter().all(|n| n == database),
                "{database}: {statement}: {names:?}"
            );
        }
    }
}
