//! Unit tests of `SELECT`'s translation: the SQL statements TSBS's and Grafana's InfluxQL
//! become must take the engine's direct path (pre-aggregates, latest rows), and whole
//! statements must answer what InfluxDB answers on a small data set.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Statement as SqlStatement};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use strata_influxql::{Statement, parse_query};
use strata_lineproto::Precision;
use strata_query::QueryEngine;
use strata_storage::{Engine, EngineOptions, ManualClock, WalSync};

use super::super::result::Value;
use super::pushed::Pushed;
use super::tree::{self, Where};
use super::{Context, select};

/// 2016-01-01T00:00:00Z, as TSBS's data.
pub(super) const START_NS: i64 = 1_451_606_400_000_000_000;
pub(super) const SECOND_NS: i64 = 1_000_000_000;

pub(super) fn engine(dir: &std::path::Path) -> Arc<Engine> {
    let options = EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        background: false,
        clock: Arc::new(ManualClock::new(START_NS + 86_400 * SECOND_NS)),
        partition_duration: Duration::from_secs(86_400),
        ..EngineOptions::default()
    };
    Arc::new(Engine::open(options).unwrap().0)
}

/// An engine in a fresh directory holding [`tsbs_like`]'s points, and a query engine on
/// it; the directory lives as long as the first value is kept.
fn tsbs_fixture() -> (tempfile::TempDir, Arc<Engine>, QueryEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    tsbs_like(&engine);
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    (dir, engine, query)
}

/// Three hosts, two hours at 10 s, integer fields as TSBS writes them; `h2` has no `region`.
pub(super) fn tsbs_like(engine: &Engine) {
    let mut body = String::new();
    for i in 0..720i64 {
        for (h, host) in ["h0", "h1", "h2"].iter().enumerate() {
            let region = if h == 2 {
                String::new()
            } else {
                format!(",region=r{h}")
            };
            let t = START_NS + i * 10 * SECOND_NS;
            let (user, system) = ((i * 7 + h as i64) % 100, (i * 3 + 2 * h as i64) % 100);
            body.push_str(&format!(
                "cpu,hostname={host}{region} usage_user={user}i,usage_system={system}i {t}\n"
            ));
        }
    }
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
}

fn statement(text: &str) -> Box<strata_influxql::SelectStatement> {
    match parse_query(text, &HashMap::new())
        .unwrap()
        .statements
        .remove(0)
    {
        Statement::Select(select) => select,
        other => panic!("not a SELECT: {other:?}"),
    }
}

/// A series' rows as plain vectors, to compare with literals.
fn cells(series: &super::Series) -> Vec<Vec<Value>> {
    series.values.iter().map(|row| row.to_vec()).collect()
}

pub(super) async fn run(query: &QueryEngine, engine: &Engine, text: &str) -> Vec<super::Series> {
    run_with(query, engine, text, false).await
}

/// [`run`], with raw rows left in Arrow batches when `arrow_rows`, as `/query` answers.
pub(super) async fn run_with(
    query: &QueryEngine,
    engine: &Engine,
    text: &str,
    arrow_rows: bool,
) -> Vec<super::Series> {
    let buckets = super::BucketBudget::default();
    run_budgeted(query, engine, text, arrow_rows, &buckets)
        .await
        .unwrap()
}

/// Runs `text` against `engine`'s `benchmark` database, its buckets taken from `buckets`.
async fn run_budgeted(
    query: &QueryEngine,
    engine: &Engine,
    text: &str,
    arrow_rows: bool,
    buckets: &super::BucketBudget,
) -> Result<Vec<super::Series>, String> {
    let ctx = Context {
        query,
        engine,
        database: Some("benchmark"),
        now_ns: engine.now_ns(),
        subquery: None,
        inner: false,
        arrow_rows,
        buckets,
    };
    select(&ctx, &statement(text)).await
}

#[tokio::test]
async fn tsbs_aggregate_shapes_take_the_direct_path() {
    let (_dir, engine, query) = tsbs_fixture();
    let schema = engine.table("benchmark", "cpu").unwrap();
    let hostname = "hostname".to_owned();
    let max = [
        Pushed {
            field: "usage_user",
            functions: &["max"],
        },
        Pushed {
            field: "usage_system",
            functions: &["max"],
        },
    ];
    let mean = [Pushed {
        field: "usage_user",
        functions: &["avg"],
    }];
    let window = Where::default()
        .and(tree::time_from(START_NS))
        .and(tree::time_before(START_NS + 3_600 * SECOND_NS));
    let host = |h: &str| {
        tree::nested(tree::binary(
            tree::column("hostname"),
            BinaryOperator::Eq,
            tree::string(h),
        ))
    };
    let hosts = tree::nested(tree::binary(host("h0"), BinaryOperator::Or, host("h1")));
    let cases = [
        // cpu-max-all / single-groupby: one host (or an OR of hosts), by hour or minute.
        super::pushed::aggregate_sql(
            &schema,
            &[],
            Some((3_600 * SECOND_NS, 0)),
            &max,
            &window.and(hosts),
        ),
        // double-groupby: every host, by hour and hostname.
        super::pushed::aggregate_sql(
            &schema,
            &[&hostname],
            Some((3_600 * SECOND_NS, 0)),
            &mean,
            &window,
        ),
        // a whole-range aggregate.
        super::pushed::aggregate_sql(&schema, &[], None, &mean, &window),
    ];
    for sql in cases {
        assert!(
            query.is_direct_query("benchmark", &sql),
            "not on the direct path: {sql}"
        );
    }
    // lastpoint
    assert!(query.is_direct(
        "benchmark",
        "SELECT DISTINCT ON (\"hostname\") * FROM \"cpu\" ORDER BY \"hostname\", \"time\" DESC"
    ));
}

#[tokio::test]
async fn answers_of_tsbs_queries() {
    let (_dir, engine, query) = tsbs_fixture();

    // cpu-max-all-1 shape: max per hour for one host; integers stay integers.
    let series = run(&query, &engine, "SELECT max(usage_user),max(usage_system) from cpu where (hostname = 'h1') and time >= '2016-01-01T00:00:00Z' and time < '2016-01-01T02:00:00Z' group by time(1h)").await;
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].columns[..], ["time", "max", "max_1"]);
    assert_eq!(
        cells(&series[0]),
        vec![
            vec![
                Value::Time(START_NS),
                Value::Integer(99),
                Value::Integer(99)
            ],
            vec![
                Value::Time(START_NS + 3_600 * SECOND_NS),
                Value::Integer(99),
                Value::Integer(99)
            ],
        ]
    );

    // double-groupby shape: one series per host, means are floats; h2's missing region
    // does not matter when grouping by hostname.
    let series = run(&query, &engine, "SELECT mean(usage_user) from cpu where time >= '2016-01-01T00:00:00Z' and time < '2016-01-01T01:00:00Z' group by time(1h),hostname").await;
    let tags: Vec<Vec<(&str, &str)>> = series.iter().map(|s| s.tags.iter().collect()).collect();
    assert_eq!(
        tags,
        [
            [("hostname", "h0")],
            [("hostname", "h1")],
            [("hostname", "h2")]
        ]
    );
    for (h, s) in series.iter().enumerate() {
        let expected = (0..360i64)
            .map(|i| ((i * 7 + h as i64) % 100) as f64)
            .sum::<f64>()
            / 360.0;
        assert_eq!(
            cells(s),
            vec![vec![Value::Time(START_NS), Value::Float(expected)]]
        );
    }

    // lastpoint: the latest row of each host, hosts in descending order as InfluxDB does.
    let series = run(
        &query,
        &engine,
        "SELECT * from cpu group by \"hostname\" order by time desc limit 1",
    )
    .await;
    let last = START_NS + 719 * 10 * SECOND_NS;
    assert_eq!(series.len(), 3);
    assert_eq!(
        series[0].tags.iter().collect::<Vec<_>>(),
        [("hostname", "h2")]
    );
    assert_eq!(
        series[0].columns[..],
        ["time", "region", "usage_system", "usage_user"]
    );
    assert_eq!(
        cells(&series[0]),
        vec![vec![
            Value::Time(last),
            Value::Null,
            Value::Integer((719 * 3 + 4) % 100),
            Value::Integer((719 * 7 + 2) % 100),
        ]]
    );
    assert_eq!(series[2].values[0][1], Value::String("r0".into()));

    // groupby-orderby-limit: no lower bound, the first 5 minutes of data.
    let series = run(&query, &engine, "SELECT max(usage_user) from cpu WHERE time < '2016-01-01T01:00:00Z' group by time(1m) limit 5").await;
    let times: Vec<_> = series[0].values.iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        times,
        (0..5)
            .map(|m| Value::Time(START_NS + m * 60 * SECOND_NS))
            .collect::<Vec<_>>()
    );

    // high-cpu: integer field compared with a float, raw rows of one host in time order.
    let series = run(&query, &engine, "SELECT usage_user from cpu where usage_user > 97.0 and (hostname = 'h0') and time >= '2016-01-01T00:00:00Z' and time < '2016-01-01T00:30:00Z'").await;
    let expected: Vec<Vec<Value>> = (0..180i64)
        .filter(|i| (i * 7) % 100 > 97)
        .map(|i| {
            vec![
                Value::Time(START_NS + i * 10 * SECOND_NS),
                Value::Integer((i * 7) % 100),
            ]
        })
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(cells(&series[0]), expected);
}

/// A point without a tag reads as having it empty, as in influxd: `!=` a value keeps it, `=
/// ''` keeps only it, `!= ''` drops it, and a regex it does not match keeps it under `!~`.
#[tokio::test]
async fn a_missing_tag_reads_as_empty_in_conditions() {
    let (_dir, engine, query) = tsbs_fixture();
    for (condition, hosts) in [
        ("region != 'r0'", &["h1", "h2"][..]),
        ("region = ''", &["h2"]),
        ("region != ''", &["h0", "h1"]),
        ("region !~ /r1/", &["h0", "h2"]),
        ("region =~ /^$/", &["h2"]),
    ] {
        let text = format!(
            "SELECT count(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' AND \
             time < '2016-01-01T01:00:00Z' AND {condition} GROUP BY hostname"
        );
        let series = run(&query, &engine, &text).await;
        let shown: Vec<&str> = series.iter().map(|s| s.tags.values()[0].as_str()).collect();
        assert_eq!(shown, hosts, "{condition}");
    }
}

/// Hundreds of ORed hosts, as a dashboard with a long host list sends them, are answered,
/// and an OR of hosts still takes the direct path. Each OR used to open its own
/// parentheses in the SQL, and past about 50 the SQL parser refused the statement.
#[tokio::test]
async fn long_chains_of_ored_hosts_are_answered() {
    let (_dir, engine, query) = tsbs_fixture();

    let absent: Vec<String> = (0..300).map(|i| format!("hostname = 'x{i}'")).collect();
    let text = format!(
        "SELECT count(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' AND \
         time < '2016-01-01T01:00:00Z' AND ({} OR hostname = 'h1')",
        absent.join(" OR ")
    );
    let series = run(&query, &engine, &text).await;
    assert_eq!(
        cells(&series[0]),
        [[Value::Time(START_NS), Value::Integer(360)]]
    );
    // Long AND chains and arithmetic chains in a condition, the same.
    let text = format!(
        "SELECT count(usage_user) FROM cpu WHERE time >= '2016-01-01T00:00:00Z' AND \
         time < '2016-01-01T01:00:00Z' AND hostname = 'h1' AND ({}) AND usage_user > 0{}",
        ["usage_user >= 0"; 200].join(" AND "),
        " + 0".repeat(200)
    );
    let positive = (0..360i64).filter(|i| (i * 7 + 1) % 100 > 0).count() as i64;
    let series = run(&query, &engine, &text).await;
    assert_eq!(
        cells(&series[0]),
        [[Value::Time(START_NS), Value::Integer(positive)]]
    );

    let schema = engine.table("benchmark", "cpu").unwrap();
    let three = statement(
        "SELECT max(usage_user) FROM cpu WHERE hostname = 'h0' OR hostname = 'h1' OR hostname = 'h2'",
    );
    let filter =
        super::condition::to_sql(three.condition.as_ref().unwrap(), &schema, &engine).unwrap();
    assert_eq!(
        filter.to_string(),
        "((\"hostname\" = 'h0') OR (\"hostname\" = 'h1') OR (\"hostname\" = 'h2'))"
    );
    let sql = super::pushed::aggregate_sql(
        &schema,
        &[],
        Some((3_600 * SECOND_NS, 0)),
        &[Pushed {
            field: "usage_user",
            functions: &["max"],
        }],
        &Where::default().and(tree::time_from(START_NS)).and(filter),
    );
    assert!(
        query.is_direct_query("benchmark", &sql),
        "not on the direct path: {sql}"
    );
}

/// Raw answers kept in Arrow batches hold the same rows as cells: the same series, the same
/// empty rows left out, and points of one instant (every host writes at the same times)
/// in the same series order (by the tags' names, then values), though the batches are
/// sorted by time alone and the ties ordered afterwards.
#[tokio::test]
async fn raw_answers_from_arrow_batches_match_cells() {
    let (_dir, engine, query) = tsbs_fixture();
    let window = "time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:01:00Z'";
    for text in [
        format!("SELECT * FROM cpu WHERE {window}"),
        format!("SELECT * FROM cpu WHERE {window} ORDER BY time DESC LIMIT 7 OFFSET 2"),
        format!("SELECT usage_user, region FROM cpu WHERE {window}"),
        format!("SELECT * FROM cpu WHERE {window} GROUP BY region"),
    ] {
        let cells = run(&query, &engine, &text).await;
        let mut arrow = run_with(&query, &engine, &text, true).await;
        assert!(arrow.iter().all(|s| s.arrow.is_some()), "{text}");
        for s in &mut arrow {
            s.materialize().unwrap();
        }
        assert_eq!(arrow, cells, "{text}");
    }
    let cells = run(
        &query,
        &engine,
        &format!("SELECT * FROM cpu WHERE {window}"),
    )
    .await;
    let hosts: Vec<&Value> = cells[0].values.iter().take(3).map(|r| &r[1]).collect();
    assert_eq!(
        hosts,
        [&Value::text("h0"), &Value::text("h1"), &Value::text("h2")]
    );
}

/// Under `fill(none)` a bucket shows only the fields with points in it: a field without
/// any counts nothing (null, not 0) beside one that has points, and a bucket where no
/// selected field has a point is left out, as influxd zips each field's own buckets.
#[tokio::test]
async fn fill_none_shows_only_fields_with_points() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let body = format!(
        "m,host=a a=1i,b=1i {}\nm,host=a a=2i {}\n",
        START_NS,
        START_NS + 10 * SECOND_NS
    );
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let window = "time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:00:20Z'";
    let at = |s: i64| Value::Time(START_NS + s * SECOND_NS);
    let rows = |text: String| {
        let query = &query;
        let engine = &engine;
        async move {
            let series = run(query, engine, &text).await;
            series
                .into_iter()
                .flat_map(|s| cells(&s))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        rows(format!(
            "SELECT count(a), count(b) FROM m WHERE {window} GROUP BY time(10s) fill(none)"
        ))
        .await,
        [
            vec![at(0), Value::Integer(1), Value::Integer(1)],
            vec![at(10), Value::Integer(1), Value::Null]
        ]
    );
    assert_eq!(
        rows(format!(
            "SELECT count(b) FROM m WHERE {window} GROUP BY time(10s) fill(none)"
        ))
        .await,
        [vec![at(0), Value::Integer(1)]]
    );
    assert_eq!(
        rows(format!(
            "SELECT mean(b) FROM m WHERE {window} GROUP BY time(10s) fill(none)"
        ))
        .await,
        [vec![at(0), Value::Float(1.0)]]
    );
    assert_eq!(
        rows(format!(
            "SELECT count(b) FROM m WHERE {window} GROUP BY time(10s) fill(null)"
        ))
        .await,
        [
            vec![at(0), Value::Integer(1)],
            vec![at(10), Value::Integer(0)]
        ]
    );
}

/// `GROUP BY time(…) LIMIT n` with no lower bound shows the first n buckets from each
/// series' first point on: in every fill, with offsets, over sparse data whose early rows
/// hold only another field (buckets with rows but no value), it answers exactly what the
/// same statement answers with that series' first bucket as its lower bound. (influxd 1.6
/// cannot be asked: with no lower bound it answers most of these shapes with buckets in
/// 1677, see docs/influxql.md; the differential test covers the shapes it answers.)
#[tokio::test]
async fn first_buckets_without_a_lower_bound_match_the_bounded_statement() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let minute = 60 * SECOND_NS;
    // A seeded LCG: which minutes have `f`, its values, and the second in the minute.
    let mut state = 7u64;
    let mut below = |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let mut body = String::new();
    // h0 from minute 0, h1 from minute 130; the first 20 minutes of each hold only `g`,
    // then `f` in about one minute of three, with gaps.
    for (host, from) in [("h0", 0i64), ("h1", 130)] {
        for m in from..from + 200 {
            let t = START_NS + m * minute + below(60) as i64 * SECOND_NS;
            let fields = if m < from + 20 || below(3) != 0 {
                format!("g={m}i")
            } else {
                format!("f={}i,g={m}i", below(1000))
            };
            body.push_str(&format!("m,host={host} {fields} {t}\n"));
        }
    }
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let end = format!("time < {}", START_NS + 400 * minute);
    let mut compared = 0;
    // Each call with the field whose first value starts its grid.
    let calls = [
        ("max(f)", "f"),
        ("count(f)", "f"),
        ("mean(f)", "f"),
        ("last(f)", "f"),
        ("spread(f), min(g)", "g"),
    ];
    for (call, lead) in calls {
        for fill in [
            "",
            "fill(null)",
            "fill(none)",
            "fill(previous)",
            "fill(linear)",
            "fill(-1)",
        ] {
            for (group, offset) in [("5m", 0i64), ("2m", 1), ("10m", 3)] {
                for (host, limit, skip) in [("h0", 4, 0), ("h1", 7, 2), ("h0", 30, 5)] {
                    let tail = format!(
                        "GROUP BY time({group}, {offset}m) {fill} LIMIT {limit} OFFSET {skip}"
                    );
                    let open =
                        format!("SELECT {call} FROM m WHERE host = '{host}' AND {end} {tail}");
                    let answer = run(&query, &engine, &open).await;
                    // The bounded statement's start: the bucket of the first value read.
                    let first = run(
                        &query,
                        &engine,
                        &format!("SELECT first({lead}) FROM m WHERE host = '{host}' AND {end}"),
                    )
                    .await;
                    let Value::Time(t) = first[0].values[0][0] else {
                        panic!("no first point: {first:?}");
                    };
                    let (width, shift) = (
                        group.trim_end_matches('m').parse::<i64>().unwrap() * minute,
                        offset * minute,
                    );
                    let bucket = t - (t - shift).rem_euclid(width);
                    let bounded = format!(
                        "SELECT {call} FROM m WHERE host = '{host}' AND time >= {bucket} AND {end} {tail}"
                    );
                    let expected = run(&query, &engine, &bounded).await;
                    assert_eq!(answer, expected, "{open}\nagainst\n{bounded}");
                    assert!(!answer.is_empty(), "{open}");
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 5 * 6 * 3 * 3);
}

/// `LIMIT n OFFSET k` on a transformation of buckets (`derivative(max(x))`) shows rows k to
/// k + n of the same statement without them, in either order, per series: the buckets
/// the transformation reads before its first shown one are not cut away by the limit.
#[tokio::test]
async fn limits_on_transformed_buckets_cut_the_unlimited_answer() {
    let (_dir, engine, query) = tsbs_fixture();
    let range = format!(
        "time >= {} AND time < {}",
        START_NS + 600 * SECOND_NS,
        START_NS + 4_200 * SECOND_NS
    );
    let mut compared = 0;
    for call in [
        "derivative(max(usage_user))",
        "difference(mean(usage_user))",
        "non_negative_derivative(max(usage_user), 1m)",
        "moving_average(mean(usage_user), 3)",
        "cumulative_sum(max(usage_user))",
        "elapsed(max(usage_user))",
    ] {
        for group in ["", ", hostname"] {
            for order in ["", " ORDER BY time DESC"] {
                let base =
                    format!("SELECT {call} FROM cpu WHERE {range} GROUP BY time(5m){group}{order}");
                let all = run(&query, &engine, &base).await;
                assert!(!all.is_empty(), "{base}");
                for (limit, skip) in [(1, 0), (3, 0), (2, 1), (4, 3)] {
                    let text = format!("{base} LIMIT {limit} OFFSET {skip}");
                    let limited = run(&query, &engine, &text).await;
                    let expected: Vec<Vec<Vec<Value>>> = all
                        .iter()
                        .map(|s| cells(s).into_iter().skip(skip).take(limit).collect())
                        .filter(|rows: &Vec<Vec<Value>>| !rows.is_empty())
                        .collect();
                    let got: Vec<Vec<Vec<Value>>> = limited.iter().map(cells).collect();
                    assert_eq!(got, expected, "{text}");
                    compared += 1;
                }
            }
        }
    }
    assert_eq!(compared, 6 * 2 * 2 * 4);
}

/// SLIMIT/SOFFSET count series in series key order, where a missing tag is not written
/// (`net,dc=a,…` before `net,host=…`), and keep the answer's own order (missing tag first).
/// Each series of a filled `GROUP BY time` takes every bucket of the range from the
/// query's budget before its rows are built: 2,000 series of a million buckets once took
/// all the memory there was. Three hosts of 720 buckets are 2,160: within a budget of
/// 2,160, one over a budget of 2,159, on each path that fills (the grid of pushed
/// aggregates, the general rows under another fill, selectors' point rows).
#[tokio::test]
async fn filled_buckets_over_all_series_stay_within_the_budget() {
    let (_dir, engine, query) = tsbs_fixture();
    let range = format!(
        "time >= {START_NS} AND time < {}",
        START_NS + 7_200 * SECOND_NS
    );
    for text in [
        format!("SELECT mean(usage_user) FROM cpu WHERE {range} GROUP BY time(10s), hostname"),
        format!(
            "SELECT mean(usage_user) * 2 FROM cpu WHERE {range} GROUP BY time(10s), hostname fill(0)"
        ),
        format!(
            "SELECT max(usage_user), usage_system FROM cpu WHERE {range} GROUP BY time(10s), hostname"
        ),
    ] {
        let within = super::BucketBudget::with_limit(2_160);
        let answer = run_budgeted(&query, &engine, &text, true, &within)
            .await
            .unwrap();
        assert_eq!(answer.len(), 3, "{text}");
        assert!(answer.iter().all(|s| s.row_count() == 720), "{text}");
        let over = super::BucketBudget::with_limit(2_159);
        let err = match run_budgeted(&query, &engine, &text, true, &over).await {
            Ok(answer) => panic!("{text}: {} series answered past the budget", answer.len()),
            Err(err) => err,
        };
        assert!(
            err.starts_with("too many buckets: the answer's series would hold more than 2159"),
            "{text}: {err}"
        );
    }
    // fill(none) builds only the buckets with data, and takes nothing.
    let unfilled = super::BucketBudget::with_limit(0);
    let text = format!(
        "SELECT mean(usage_user) FROM cpu WHERE {range} GROUP BY time(10s), hostname fill(none)"
    );
    assert_eq!(
        run_budgeted(&query, &engine, &text, true, &unfilled)
            .await
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn slimit_counts_series_in_series_key_order() {
    let series = |dc: &str, host: &str| super::super::result::Series {
        name: "net".into(),
        tags: super::super::result::Tags::from_pairs([("dc", dc), ("host", host)]),
        ..Default::default()
    };
    // The answer's order: by tag values, "" first.
    let all = vec![
        series("", "beta"),
        series("", "delta"),
        series("dc1", "alpha"),
        series("dc2", "gamma"),
    ];
    let hosts = |statement: &str| -> Vec<String> {
        let Ok(mut query) = parse_query(statement, &HashMap::new()) else {
            panic!("{statement}");
        };
        let Statement::Select(statement) = query.statements.remove(0) else {
            panic!("{statement}");
        };
        super::limit_series(all.clone(), &statement)
            .into_iter()
            .map(|s| s.tags.values()[1].clone())
            .collect()
    };
    assert_eq!(hosts("SELECT x FROM net GROUP BY * SLIMIT 1"), ["alpha"]);
    assert_eq!(
        hosts("SELECT x FROM net GROUP BY * SLIMIT 3"),
        ["beta", "alpha", "gamma"]
    );
    assert_eq!(
        hosts("SELECT x FROM net GROUP BY * SLIMIT 2 SOFFSET 2"),
        ["beta", "delta"]
    );
    assert_eq!(hosts("SELECT x FROM net GROUP BY * SOFFSET 3"), ["delta"]);
}

/// Fills apply to each aggregate call's own buckets before the expressions over them, as
/// influxd 1.x fills each call's iterator: a field with no point in a bucket where another
/// field has some is filled (a count of it too), and `last(x) + first(y)` adds the filled
/// values. The expected rows are influxd 1.6.7's answers to the same data and statements.
#[tokio::test]
async fn fills_apply_to_each_call_before_its_expression() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    // x every 10 s in [0, 400) and [600, 700); y only in [200, 300).
    let mut body = String::new();
    for t in (0..400).step_by(10).chain((600..700).step_by(10)) {
        body.push_str(&format!("p x={t} {}\n", START_NS + t * SECOND_NS));
    }
    for t in (200..300).step_by(10) {
        body.push_str(&format!("p y={t} {}\n", START_NS + t * SECOND_NS));
    }
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let range = "WHERE time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:13:20Z'";
    // Numbers as f64 (x and y are floats, counts and fills integers), null as None.
    let column = |series: &[super::Series], i: usize| -> Vec<Option<f64>> {
        series[0].values.iter().map(|row| row[i].as_f64()).collect()
    };
    let ints = |v: &[i64]| -> Vec<Option<f64>> { v.iter().map(|n| Some(*n as f64)).collect() };
    let text = format!("SELECT last(x) + first(y) FROM p {range} GROUP BY time(100s) fill(-1)");
    let got = run(&query, &engine, &text).await;
    assert_eq!(
        column(&got, 1),
        ints(&[89, 189, 490, 389, -2, -2, 689, -2]),
        "{text}"
    );
    let text = format!("SELECT count(y), last(x) FROM p {range} GROUP BY time(100s) fill(-1)");
    let got = run(&query, &engine, &text).await;
    assert_eq!(
        column(&got, 1),
        ints(&[-1, -1, 10, -1, -1, -1, -1, -1]),
        "{text}"
    );
    assert_eq!(
        column(&got, 2),
        ints(&[90, 190, 290, 390, -1, -1, 690, -1]),
        "{text}"
    );
    let text =
        format!("SELECT last(x) + first(y) FROM p {range} GROUP BY time(100s) fill(previous)");
    let got = run(&query, &engine, &text).await;
    let mut want = vec![None, None];
    want.extend(ints(&[490, 590, 590, 590, 890, 890]));
    assert_eq!(column(&got, 1), want, "{text}");
    // Without GROUP BY time, a field with no point counts null, not 0.
    let text = "SELECT count(x), count(y) FROM p WHERE time >= '2016-01-01T00:00:00Z' AND \
                time < '2016-01-01T00:01:40Z'";
    let got = run(&query, &engine, text).await;
    assert_eq!(column(&got, 1), ints(&[10]), "{text}");
    assert_eq!(column(&got, 2), [None], "{text}");
}

/// Points of one instant in several series: `first` and `last` read them in series order
/// (the sort by the other tags), as influxd does, whatever order they were stored in;
/// `max`, `min` and `percentile` read them in any order, and answer the same.
#[tokio::test]
async fn selectors_over_points_of_one_instant() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let (t0, t1) = one_instant_in_three_series(&engine);
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let window = "time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:01:00Z'";
    let mut answers = Vec::new();
    for function in ["first", "last", "max", "min", "percentile"] {
        let args = if function == "percentile" {
            "v, 50"
        } else {
            "v"
        };
        let series = run(
            &query,
            &engine,
            &format!("SELECT {function}({args}) FROM m WHERE {window}"),
        )
        .await;
        answers.push(
            series
                .into_iter()
                .flat_map(|s| cells(&s))
                .collect::<Vec<_>>(),
        );
    }
    let point = |t: i64, v: i64| vec![vec![Value::Time(t), Value::Integer(v)]];
    assert_eq!(
        answers,
        [
            point(t0, 3), // a's, first of the instant in series order
            point(t1, 5), // c's, last of it
            point(t1, 5),
            point(t0, 1),
            point(t0, 3), // the 3rd of 1, 2, 3, 3, 4, 5: a's at t0 (the two 3s differ in time)
        ]
    );
}

/// `m`'s points at two instants in series `host=a`, `b` and `c`, stored (and given series
/// ids) in the reverse of series order: a, b, c hold 3, 1, 2 at the first instant and 3, 4,
/// 5 at the second. Returns the two instants.
fn one_instant_in_three_series(engine: &Engine) -> (i64, i64) {
    let (t0, t1) = (START_NS, START_NS + 10 * SECOND_NS);
    let body = format!(
        "m,host=c v=2i {t0}\nm,host=b v=1i {t0}\nm,host=a v=3i {t0}\n\
         m,host=c v=5i {t1}\nm,host=b v=4i {t1}\nm,host=a v=3i {t1}\n"
    );
    engine
        .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    (t0, t1)
}

/// A raw answer over several series without `GROUP BY` shows the points of one instant in
/// series order, as influxd merges them, from Arrow batches and from cells alike.
#[tokio::test]
async fn raw_points_of_one_instant_come_in_series_order() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    let (t0, t1) = one_instant_in_three_series(&engine);
    let query = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let text =
        "SELECT v FROM m WHERE time >= '2016-01-01T00:00:00Z' AND time < '2016-01-01T00:01:00Z'";
    let expected: Vec<Vec<Value>> = [(t0, 3), (t0, 1), (t0, 2), (t1, 3), (t1, 4), (t1, 5)]
        .into_iter()
        .map(|(t, v)| vec![Value::Time(t), Value::Integer(v)])
        .collect();
    for arrow_rows in [false, true] {
        let mut series = run_with(&query, &engine, text, arrow_rows).await;
        for s in &mut series {
            s.materialize().unwrap();
        }
        let rows: Vec<Vec<Value>> = series.into_iter().flat_map(|s| cells(&s)).collect();
        assert_eq!(rows, expected, "arrow rows: {arrow_rows}");
    }
}

#[test]
fn aggregate_sql_names_tags_bucket_and_each_aggregate() {
    // The tree is the one the engine would parse from the statement's text.
    let parsed = |text: &str| match Parser::parse_sql(&GenericDialect {}, text).unwrap().pop() {
        Some(SqlStatement::Query(query)) => query,
        other => panic!("{other:?}"),
    };
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(dir.path());
    tsbs_like(&engine);
    let schema = engine.table("benchmark", "cpu").unwrap();
    let (host, odd) = ("hostname".to_owned(), "we\"ird".to_owned());
    let pushed = [
        Pushed {
            field: "usage_user",
            functions: &["max", "min"],
        },
        Pushed {
            field: "us\"er",
            functions: &["count"],
        },
    ];
    assert_eq!(
        super::pushed::aggregate_sql(
            &schema,
            &[&host, &odd],
            Some((60 * SECOND_NS, 15 * SECOND_NS)),
            &pushed,
            &Where::new(Some(tree::column("x"))),
        ),
        parsed(
            "SELECT \"hostname\", \"we\"\"ird\", date_bin(INTERVAL '60000000000 nanoseconds', \
         \"time\", TIMESTAMP '1970-01-01T00:00:15.000000000Z') AS \"__bucket\", \
         max(\"usage_user\") AS \"__a0_0\", min(\"usage_user\") AS \"__a0_1\", \
         count(\"us\"\"er\") AS \"__a1_0\" FROM \"cpu\" WHERE \"x\" \
         GROUP BY \"hostname\", \"we\"\"ird\", \"__bucket\""
        )
    );
    assert_eq!(
        super::pushed::aggregate_sql(&schema, &[], None, &pushed[1..], &Where::default()),
        parsed("SELECT count(\"us\"\"er\") AS \"__a0_0\" FROM \"cpu\"")
    );
}
