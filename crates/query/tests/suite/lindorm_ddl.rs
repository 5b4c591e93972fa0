//! Seed 003's DDL and INSERTs run as Lindorm's report writes them: `VARCHAR primary TAG`,
//! `time BIGINT` (integer milliseconds in `INSERT`, a timestamp to queries), backquoted
//! names; the unit survives a restart, and the errors point at what is wrong.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{DB, open_engine};
use datafusion::arrow::array::{Array, Float64Array, Int64Array, TimestampNanosecondArray};
use datafusion::arrow::compute::concat_batches;
use strata_query::{QueryEngine, QueryError};

/// Seed 003's `mem` table, verbatim.
const MEM_DDL: &str = "CREATE table mem(hostname VARCHAR primary TAG, region VARCHAR TAG, \
    datacenter VARCHAR TAG, rack VARCHAR TAG, os VARCHAR TAG, arch VARCHAR TAG, team VARCHAR \
    TAG, service VARCHAR TAG, service_version VARCHAR TAG, service_environment VARCHAR TAG, \
    time BIGINT,total BIGINT, available BIGINT, used BIGINT, `free` BIGINT, cached BIGINT, \
    buffered BIGINT, used_percent double, available_percent double, buffered_percent double);";

/// 2016-01-01T00:00:00Z in milliseconds, as the seed's INSERTs write times.
const T0_MS: i64 = 1_451_606_400_000;

fn insert(row: usize) -> String {
    format!(
        "INSERT INTO mem(hostname,region,datacenter,rack,os,arch,team,service,service_version,\
         service_environment, time ,total,available,used,`free`,cached,buffered,used_percent,\
         available_percent,buffered_percent) VALUES ('host_0','ap-northeast-1',\
         'ap-northeast-1a','72','Ubuntu16.10','x86','CHI','10','0','test',{},8589934592,\
         {},{},{},0,0,50.5,49.5,0.0)",
        T0_MS + row as i64 * 10_000,
        4_000_000_000 + row,
        4_589_934_592 - row as i64,
        1_000 + row
    )
}

async fn times_and_used(sql: &QueryEngine) -> (Vec<i64>, Vec<i64>, Vec<f64>) {
    let batches = sql
        .sql(DB, "SELECT time, used, used_percent FROM mem ORDER BY time")
        .await
        .unwrap();
    let batch = concat_batches(&batches[0].schema(), &batches).unwrap();
    let time = batch
        .column(0)
        .as_any()
        .downcast_ref::<TimestampNanosecondArray>()
        .unwrap();
    let used = batch
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    let pct = batch
        .column(2)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    (
        (0..time.len()).map(|i| time.value(i)).collect(),
        (0..used.len()).map(|i| used.value(i)).collect(),
        (0..pct.len()).map(|i| pct.value(i)).collect(),
    )
}

#[tokio::test]
async fn seed_003_ddl_and_inserts_run_as_written_and_the_unit_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(DB, MEM_DDL).await.unwrap();
    for row in 0..3 {
        sql.sql(DB, &insert(row)).await.unwrap();
    }
    let (times, used, pct) = times_and_used(&sql).await;
    let want: Vec<i64> = (0..3).map(|r| (T0_MS + r * 10_000) * 1_000_000).collect();
    assert_eq!(times, want);
    assert_eq!(used, [4_589_934_592, 4_589_934_591, 4_589_934_590]);
    assert_eq!(pct, [50.5; 3]);

    // The same DDL again with IF NOT EXISTS agrees; a TIMESTAMP time does not.
    let again = MEM_DDL.replacen("CREATE table mem", "CREATE TABLE IF NOT EXISTS mem", 1);
    sql.sql(DB, &again).await.unwrap();
    let timestamp = again.replacen("time BIGINT", "time TIMESTAMP", 1);
    let err = sql.sql(DB, &timestamp).await.unwrap_err().to_string();
    assert!(
        err.contains("time") && err.contains("another type"),
        "{err}"
    );

    // After a restart, integer times still count milliseconds.
    drop(sql);
    Arc::try_unwrap(engine).ok().unwrap().close().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(DB, &insert(3)).await.unwrap();
    let (times, _, _) = times_and_used(&sql).await;
    assert_eq!(times.last(), Some(&((T0_MS + 30_000) * 1_000_000)));
}

#[tokio::test]
async fn time_units_and_their_errors() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        DB,
        "CREATE TABLE s (h VARCHAR TAG, time BIGINT UNIT s, v DOUBLE)",
    )
    .await
    .unwrap();
    sql.sql(
        DB,
        "INSERT INTO s (h, time, v) VALUES ('a', 1451606400, 1.0)",
    )
    .await
    .unwrap();
    // A text timestamp is a timestamp whatever the unit.
    sql.sql(
        DB,
        "INSERT INTO s (h, time, v) VALUES ('a', '2016-01-01T00:00:01Z', 2.0)",
    )
    .await
    .unwrap();
    let batches = sql
        .sql(DB, "SELECT time FROM s ORDER BY time")
        .await
        .unwrap();
    let time = batches[0]
        .column(0)
        .as_any()
        .downcast_ref::<TimestampNanosecondArray>()
        .unwrap();
    assert_eq!(
        (time.value(0), time.value(1)),
        (1_451_606_400_000_000_000, 1_451_606_401_000_000_000)
    );

    let plan_error = |e: QueryError| match e {
        QueryError::Plan { message, position } => (message, position.map(|p| p.column)),
        other => panic!("not a plan error: {other}"),
    };
    let (message, column) = plan_error(
        sql.sql(DB, "CREATE TABLE u (time BIGINT UNIT days, v DOUBLE)")
            .await
            .unwrap_err(),
    );
    assert!(message.contains("unknown time unit \"days\""), "{message}");
    assert_eq!(column, Some(34), "the column of \"days\"");
    let (message, _) = plan_error(
        sql.sql(
            DB,
            "CREATE TABLE u (h VARCHAR PRIMARY, time TIMESTAMP, v DOUBLE)",
        )
        .await
        .unwrap_err(),
    );
    assert!(
        message.contains("PRIMARY is only allowed before TAG"),
        "{message}"
    );
    // Seconds past i64 nanoseconds are refused, not wrapped.
    let (message, _) = plan_error(
        sql.sql(
            DB,
            "INSERT INTO s (h, time, v) VALUES ('a', 9300000000, 1.0)",
        )
        .await
        .unwrap_err(),
    );
    assert!(
        message.contains("9300000000 (seconds) is out of range"),
        "{message}"
    );
}
