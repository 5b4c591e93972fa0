//! The grid path ([`super::grid`]) against the general one: the same statements, answered
//! with rows left in Arrow batches (as `/query` answers) and as cells (as a subquery's
//! answer is read), must give the same series, cells and JSON.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use strata_lineproto::Precision;
use strata_query::QueryEngine;
use strata_storage::Engine;

use super::super::encode::{self, Epoch};
use super::super::result::StatementResult;
use super::tests::{SECOND_NS, START_NS, engine, run, run_with, tsbs_like};

/// `m`, hosts a and b over 20 minutes at 7 s from 00:00:03 with gaps: a float `f` on most
/// points, a string `s` on every third, a bool `b` on every fifth, an integer `i` on every
/// fourth; no point at all in minutes 5-7 (a), 10-12 (b); host c only holds `i`, in minute 18.
fn gappy(engine: &Engine) {
    let mut body = String::new();
    for (h, host) in ["a", "b"].iter().enumerate() {
        for k in 0..172i64 {
            let t = START_NS + 3 * SECOND_NS + k * 7 * SECOND_NS;
            let minute = (t - START_NS) / (60 * SECOND_NS);
            if (h == 0 && (5..8).contains(&minute)) || (h == 1 && (10..13).contains(&minute)) {
                continue;
            }
            let mut fields = Vec::new();
            if k % 9 != 4 {
                fields.push(format!("f={}", (k * 13 + h as i64) as f64 / 8.0));
            }
            if k % 3 == 0 {
                fields.push(format!("s=\"v{k}\""));
            }
            if k % 5 == 0 {
                fields.push(format!("b={}", k % 2 == 0));
            }
            if k % 4 == 0 {
                fields.push(format!("i={}i", k - 50));
            }
            if !fields.is_empty() {
                body.push_str(&format!("m,host={host} {} {t}\n", fields.join(",")));
            }
        }
    }
    let late = START_NS + 18 * 60 * SECOND_NS + 30 * SECOND_NS;
    body.push_str(&format!("m,host=c i=7i {late}\n"));
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
}

/// The JSON `/query` writes for `series`, in the `epoch` given.
fn json(series: Vec<super::Series>, epoch: Epoch) -> String {
    let result = StatementResult {
        series,
        chunkable: true,
        ..StatementResult::default()
    };
    let mut out = Vec::new();
    encode::json_results(&[result], epoch, &mut out);
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn grid_answers_match_the_general_path() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    gappy(&engine);
    tsbs_like(&engine);
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let window = "time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:20:00Z'";
    let aggregates = "count(f), mean(f), max(i), first(s), last(b), sum(i), count(s), min(f)";
    let statements = [
        format!("SELECT {aggregates} FROM m WHERE {window} GROUP BY time(1m)"),
        format!("SELECT {aggregates} FROM m WHERE {window} GROUP BY time(1m), host"),
        format!("SELECT {aggregates} FROM m WHERE {window} GROUP BY time(1m), host, nope"),
        format!("SELECT mean(f), count(f) FROM m WHERE {window} GROUP BY time(1m, 15s), *"),
        format!("SELECT max(f) AS top, max(f) FROM m WHERE {window} GROUP BY time(2m) fill(null)"),
        format!(
            "SELECT count(s), first(f) FROM m WHERE {window} GROUP BY time(1m), host \
             ORDER BY time DESC LIMIT 5 OFFSET 2"
        ),
        format!("SELECT count(i), max(i) FROM m WHERE {window} GROUP BY time(1m), host LIMIT 3"),
        format!("SELECT mean(f) FROM m WHERE {window} AND host = 'b' GROUP BY time(30s)"),
        format!("SELECT mean(f) FROM m WHERE {window} AND host = 'z' GROUP BY time(30s)"),
        // No upper bound: the grid runs to now (the engine's clock, a day later).
        "SELECT count(f) FROM m WHERE time >= '2016-01-01T00:00:00Z' GROUP BY time(1h), host"
            .to_owned(),
        // TSBS's shapes.
        "SELECT max(usage_user), max(usage_system) FROM cpu WHERE (hostname = 'h1') AND \
         time >= '2016-01-01T00:17:00Z' AND time < '2016-01-01T01:17:00Z' GROUP BY time(1m)"
            .to_owned(),
        "SELECT mean(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' AND \
         time < '2016-01-01T02:00:00Z' GROUP BY time(1h), hostname, region"
            .to_owned(),
    ];
    for text in &statements {
        let cells = run(&query, &engine, text).await;
        let arrow = run_with(&query, &engine, text, true).await;
        assert!(
            arrow.iter().all(|s| s.arrow.is_some()),
            "not answered through the grid: {text}"
        );
        let arrow_json = json(arrow.clone(), Epoch::Rfc3339);
        let arrow_ms = json(arrow.clone(), Epoch::Units(1_000_000));
        let mut materialized = arrow;
        for s in &mut materialized {
            s.materialize().unwrap();
        }
        assert_eq!(materialized, cells, "{text}");
        assert_eq!(arrow_json, json(cells.clone(), Epoch::Rfc3339), "{text}");
        assert_eq!(arrow_ms, json(cells, Epoch::Units(1_000_000)), "{text}");
    }
}

/// The grid's cells for one statement whose answer is known: empty buckets count 0 and
/// show null, host c (only `i`) has no series for `f`, and `LIMIT` counts buckets.
#[tokio::test]
async fn grid_answer_of_gaps_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    gappy(&engine);
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let text = "SELECT count(f), max(f) FROM m WHERE time >= '2016-01-01T00:04:00Z' AND \
                time < '2016-01-01T00:20:00Z' GROUP BY time(1m), host LIMIT 4";
    let series = run_with(&query, &engine, text, true).await;
    let tags: Vec<&str> = series.iter().map(|s| s.tags.values()[0].as_str()).collect();
    assert_eq!(tags, ["a", "b"]);
    let a = json(vec![series[0].clone()], Epoch::Units(60 * SECOND_NS));
    // Minute 4 of host a: points k = 34..=42 (t = 3 + 7k s in [240, 300)), k = 40 without
    // f: 8 values, the largest at k = 42, f = 42 * 13 / 8. Minutes 5-7: no point of a.
    let m = START_NS / (60 * SECOND_NS);
    let expected = format!(
        "\"values\":[[{},8,68.25],[{},0,null],[{},0,null],[{},0,null]]",
        m + 4,
        m + 5,
        m + 6,
        m + 7
    );
    assert!(a.contains(&expected), "{a}");
}
