//! `CREATE DOWNSAMPLE` against SQL: after a back-fill, more rows (late ones and
//! overwrites among them), a `DELETE` that cuts buckets in part, and a restart, every row
//! of the downsample's table must equal the same aggregates computed by `GROUP BY
//! date_bin(…)` over the source table.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{DB, HOUR_NS, START_NS, open_engine, write_data};
use datafusion::arrow::array::{Array, Float64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::{cast, concat_batches};
use datafusion::arrow::datatypes::DataType;
use strata_query::QueryEngine;

const AGGREGATES: [&str; 7] = ["avg", "min", "max", "sum", "count", "first", "last"];

/// Rows of a result as text tags and f64 numbers (`None` for NULL, and for a count of 0,
/// which the downsample leaves out as it leaves out a field with no value).
fn rows(batches: &[RecordBatch]) -> Vec<Vec<Option<String>>> {
    let batch = concat_batches(&batches[0].schema(), batches).unwrap();
    (0..batch.num_rows())
        .map(|row| {
            (0..batch.num_columns())
                .map(|c| {
                    let column = batch.column(c);
                    if column.is_null(row) {
                        return None;
                    }
                    if column.data_type().is_numeric() {
                        let numbers = cast(column, &DataType::Float64).unwrap();
                        let numbers = numbers.as_any().downcast_ref::<Float64Array>().unwrap();
                        let v = numbers.value(row);
                        let is_count = batch.schema().field(c).name().ends_with("count");
                        return (!(is_count && v == 0.0)).then(|| format!("{v}"));
                    }
                    let text = cast(column, &DataType::Utf8).unwrap();
                    let text = text.as_any().downcast_ref::<StringArray>().unwrap();
                    Some(text.value(row).to_string())
                })
                .collect()
        })
        .collect()
}

fn same(a: &Option<String>, b: &Option<String>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => match (x.parse::<f64>(), y.parse::<f64>()) {
            (Ok(x), Ok(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0),
            _ => x == y,
        },
        _ => a == b,
    }
}

async fn compare(sql: &QueryEngine, when: &str) {
    let mut raw = Vec::new();
    let mut kept = Vec::new();
    for field in ["f", "i"] {
        for aggregate in AGGREGATES {
            let function = match aggregate {
                "first" | "last" => format!("{aggregate}({field}, time)"),
                _ => format!("{aggregate}({field})"),
            };
            raw.push(format!("{function} AS {field}_{aggregate}"));
            kept.push(format!("{field}_{aggregate}"));
        }
    }
    let from_source = format!(
        "SELECT host, region, dc, date_bin(INTERVAL '10 minutes', time) AS t, {} FROM cpu \
         GROUP BY host, region, dc, t HAVING count(f) + count(i) > 0 \
         ORDER BY host, region, dc, t",
        raw.join(", ")
    );
    let from_target = format!(
        "SELECT host, region, dc, time AS t, {} FROM cpu_10m ORDER BY host, region, dc, t",
        kept.join(", ")
    );
    let want = rows(&sql.sql(DB, &from_source).await.unwrap());
    let got = rows(&sql.sql(DB, &from_target).await.unwrap());
    assert!(!want.is_empty());
    assert_eq!(want.len(), got.len(), "{when}: rows");
    for (w, g) in want.iter().zip(&got) {
        assert!(
            w.iter().zip(g).all(|(a, b)| same(a, b)),
            "{when}:\n expected {w:?}\n      got {g:?}"
        );
    }
}

#[tokio::test]
async fn a_downsample_equals_group_by_date_bin_over_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    write_data(&engine, 41, 12, 3);
    sql.sql(
        DB,
        "CREATE DOWNSAMPLE cpu_10m FROM cpu INTERVAL 10m \
         AGGREGATES (avg, min, max, sum, count, first, last) RETENTION 400d",
    )
    .await
    .unwrap();
    let shown = rows(&sql.sql(DB, "SHOW DOWNSAMPLES").await.unwrap());
    assert_eq!(
        shown[0][..5],
        [
            Some("cpu_10m".to_string()),
            Some("cpu".to_string()),
            Some("10m".to_string()),
            Some("avg, min, max, sum, count, first, last".to_string()),
            Some("400d".to_string()),
        ]
    );
    assert_eq!(shown[0][5].as_deref(), Some("pending"));
    engine.flush().unwrap();
    engine.run_downsamples().unwrap();
    compare(&sql, "after the back-fill").await;

    // More rows over the same hours: late for the buckets already folded.
    write_data(&engine, 42, 12, 2);
    engine.flush().unwrap();
    engine.run_downsamples().unwrap();
    compare(&sql, "after late rows").await;

    // A delete that starts and ends inside buckets, for some series.
    let start = START_NS + HOUR_NS + 7 * 60_000_000_000;
    let end = start + HOUR_NS / 2;
    sql.sql(
        DB,
        &format!(
            "DELETE FROM cpu WHERE time >= {start} AND time < {end} \
             AND host IN ('h1', 'h2', 'h3')"
        ),
    )
    .await
    .unwrap();
    compare(&sql, "after a delete").await;
    drop(sql);

    let engine = Arc::into_inner(engine).unwrap();
    engine.close().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    write_data(&engine, 43, 12, 1);
    engine.flush().unwrap();
    engine.run_downsamples().unwrap();
    compare(&sql, "after a restart and more rows").await;

    let err = sql
        .sql(DB, "CREATE DOWNSAMPLE x FROM cpu INTERVAL soon")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("interval \"soon\""), "{err}");
    let err = sql
        .sql(
            DB,
            "CREATE DOWNSAMPLE x FROM cpu INTERVAL 1h AGGREGATES (median)",
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown aggregate \"median\""),
        "{err}"
    );
    let err = sql.sql(DB, "DROP DOWNSAMPLE nope").await.unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
    sql.sql(DB, "DROP DOWNSAMPLE IF EXISTS nope").await.unwrap();
    sql.sql(DB, "DROP DOWNSAMPLE cpu_10m").await.unwrap();
    assert!(rows(&sql.sql(DB, "SHOW DOWNSAMPLES").await.unwrap()).is_empty());
}
