//! The direct path: which statements take it, and that its answers, names and types are
//! DataFusion's own. (The differential test also runs random statements both ways.)

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{DB, HOUR_NS, START_NS, difference, open_engine, rfc3339, to_rows, write_data};
use strata_query::{QueryEngine, QueryOptions};
use strata_storage::Engine;

struct Engines {
    _dir: tempfile::TempDir,
    direct: QueryEngine,
    planned: QueryEngine,
}

fn engines() -> Engines {
    let dir = tempfile::tempdir().unwrap();
    let engine: Arc<Engine> = open_engine(dir.path());
    write_data(&engine, 11, 14, 3);
    let direct = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let planned = QueryEngine::with_options(
        engine,
        QueryOptions {
            direct: false,
            ..QueryOptions::default()
        },
    )
    .unwrap();
    Engines {
        _dir: dir,
        direct,
        planned,
    }
}

/// Runs `statement` both ways: it must take the direct path and answer exactly as
/// DataFusion's plan, with the same schema. Returns the row count.
async fn same_answer(engines: &Engines, statement: &str) -> usize {
    assert!(
        engines.direct.is_direct(DB, statement),
        "not direct: {statement}"
    );
    let direct = engines.direct.sql_stream(DB, statement).await.unwrap();
    let direct_schema = direct.schema();
    let direct = direct.collect().await.unwrap();
    let planned = engines.planned.sql_stream(DB, statement).await.unwrap();
    let planned_schema = planned.schema();
    let planned = planned.collect().await.unwrap();
    assert_eq!(
        direct_schema.fields(),
        planned_schema.fields(),
        "{statement}"
    );
    let approx = |name: &str| name.contains("avg") || name.contains("sum") || name.contains("mean");
    let (direct, planned) = (to_rows(&direct, &approx), to_rows(&planned, &approx));
    if let Some(diff) = difference(&planned, &direct) {
        panic!("{statement}\n{diff}");
    }
    direct.len()
}

fn window(from_hour: i64, to_hour: i64) -> String {
    format!(
        "time >= '{}' AND time < '{}'",
        rfc3339(START_NS + from_hour * HOUR_NS),
        rfc3339(START_NS + to_hour * HOUR_NS)
    )
}

#[tokio::test]
async fn tsbs_and_meters_shapes_take_the_direct_path_and_match_datafusion() {
    let engines = engines();
    let w = window(1, 3);
    let statements = [
        // single-groupby, cpu-max-all
        format!(
            "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, max(i) AS max_i FROM cpu \
             WHERE (host = 'h1' OR host = 'h2') AND {w} GROUP BY minute ORDER BY minute"
        ),
        format!(
            "SELECT time_bucket(INTERVAL '1 hour', time) AS hour, max(i) AS max_i, max(f) AS max_f \
             FROM cpu WHERE host IN ('h3', 'h4', 'h5') AND {w} GROUP BY hour ORDER BY hour"
        ),
        // double-groupby
        format!(
            "SELECT time_bucket(INTERVAL '1 hour', time) AS hour, host, avg(i) AS mean_i, \
             avg(f) AS mean_f FROM cpu WHERE {w} GROUP BY hour, host ORDER BY hour, host"
        ),
        // groupby-orderby-limit
        format!(
            "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, max(f) AS max_f FROM cpu \
             WHERE time < '{}' GROUP BY minute ORDER BY minute DESC LIMIT 5",
            rfc3339(START_NS + 2 * HOUR_NS)
        ),
        // lastpoint
        "SELECT DISTINCT ON (host) * FROM cpu ORDER BY host, time DESC".to_string(),
        "SELECT DISTINCT ON (host, region) * FROM cpu WHERE region = 'r1' \
         ORDER BY host, region, time ASC LIMIT 3"
            .to_string(),
        // meters' whole-table aggregates, unaliased
        "SELECT count(*) FROM cpu".to_string(),
        "SELECT avg(f) FROM cpu".to_string(),
        "SELECT sum(i) FROM cpu".to_string(),
        "SELECT max(f) FROM cpu".to_string(),
        "SELECT min(i) FROM cpu".to_string(),
        "SELECT first(f) FROM cpu".to_string(),
        "SELECT last(i) FROM cpu".to_string(),
        // tags, null groups, orders and limits
        "SELECT dc, region, count(i) AS n, sum(f) AS total FROM cpu GROUP BY dc, region \
         ORDER BY dc DESC, region"
            .to_string(),
        "SELECT dc, count(*) AS n FROM cpu GROUP BY dc ORDER BY dc NULLS FIRST LIMIT 2".to_string(),
        format!(
            "SELECT date_trunc('hour', time) AS h, first(b) AS fb, last(s) AS ls FROM cpu \
             WHERE time BETWEEN '{}' AND '{}' GROUP BY h ORDER BY h",
            rfc3339(START_NS),
            rfc3339(START_NS + 2 * HOUR_NS)
        ),
    ];
    let mut rows = 0;
    for statement in &statements {
        rows += same_answer(&engines, statement).await;
    }
    assert!(rows > 100, "only {rows} rows over all statements");
}

#[tokio::test]
async fn unaliased_names_and_qualified_tables_are_datafusions() {
    let engines = engines();
    for statement in [
        "SELECT MAX(i) FROM cpu",
        "SELECT max(i), Count(*) FROM db.cpu",
        "SELECT count(f), min(f) FROM strata.db.cpu WHERE cpu.host = 'h1'",
        "SELECT host, max(f) FROM cpu GROUP BY host ORDER BY host",
        "SELECT date_trunc('minute', time) AS m, count(time) AS n FROM cpu GROUP BY m ORDER BY m",
        "SELECT date_bin(INTERVAL '15 minutes', time) AS m, count(*) AS n FROM cpu \
         GROUP BY m ORDER BY m",
    ] {
        same_answer(&engines, statement).await;
    }
}

#[tokio::test]
async fn empty_ranges_answer_one_row_without_groups_and_none_with_groups() {
    let engines = engines();
    let at = rfc3339(START_NS + HOUR_NS);
    let empty = format!("time >= '{at}' AND time < '{at}'");
    assert_eq!(
        same_answer(
            &engines,
            &format!("SELECT count(*) AS n, sum(f) AS total FROM cpu WHERE {empty}")
        )
        .await,
        1
    );
    assert_eq!(
        same_answer(
            &engines,
            &format!("SELECT host, count(*) AS n FROM cpu WHERE {empty} GROUP BY host")
        )
        .await,
        0
    );
    // A host that does not exist.
    assert_eq!(
        same_answer(
            &engines,
            "SELECT max(i) AS m FROM cpu WHERE host = 'nowhere'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn other_statements_and_errors_stay_with_datafusion() {
    let engines = engines();
    for statement in [
        "SELECT * FROM cpu",
        "SELECT count(*) FROM cpu WHERE i > 3",
        "SELECT host, count(*) FROM cpu GROUP BY host HAVING count(*) > 1",
        "SELECT count(DISTINCT host) FROM cpu",
        "SELECT max(nope) FROM cpu",
        "SELECT max(i) FROM nowhere",
        "SELECT host FROM cpu GROUP BY host, region",
        "SELECT time_bucket(INTERVAL '1 hour', time), count(*) FROM cpu GROUP BY 1",
        "SELECT time_bucket(INTERVAL '1 month', time) AS m, count(*) FROM cpu GROUP BY m",
        "SELECT host, count(*) AS n FROM cpu GROUP BY host ORDER BY n",
        "SELECT count(*) FROM cpu LIMIT 1 OFFSET 1",
        "SELECT count(*) FROM cpu WHERE time > now() - INTERVAL '1 hour'",
        "SELECT count(*) FROM cpu WHERE host != 'h1'",
        "SELECT max(s) FROM cpu",
        "SELECT count(*) FROM cpu c",
        "SELECT count(*) AS host FROM cpu",
        "WITH x AS (SELECT 1) SELECT count(*) FROM cpu",
        "SELECT count(*) FROM cpu; SELECT 1",
        "SELECT count(*) FROM cpu WHERE time > 'not a time'",
    ] {
        assert!(
            !engines.direct.is_direct(DB, statement),
            "direct: {statement}"
        );
    }
    // Errors are DataFusion's, with their positions.
    let direct = engines
        .direct
        .sql(DB, "SELECT max(nope) FROM cpu")
        .await
        .unwrap_err();
    let planned = engines
        .planned
        .sql(DB, "SELECT max(nope) FROM cpu")
        .await
        .unwrap_err();
    assert_eq!(direct.to_string(), planned.to_string());
}

/// Top-n over time buckets (`ORDER BY minute DESC LIMIT n`) reads a narrowed range first and
/// widens it over empty stretches: on sparse data with long gaps, every limit, end and
/// direction answers exactly as DataFusion over the whole range.
#[tokio::test]
async fn top_n_over_time_buckets_matches_datafusion_across_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let engine: Arc<Engine> = open_engine(dir.path());
    let minute = 60_000_000_000_i64;
    // Rows every 7 minutes in the first hour, none in the second and third, a burst in the
    // fourth; some flushed to parts, the rest left in the memtable.
    let mut body = String::new();
    for m in (0..60).step_by(7).chain(190..200) {
        for host in ["h1", "h2", "h3"] {
            let t = START_NS + m * minute + 13_000_000_000;
            body.push_str(&format!("cpu,host={host} f={m}.5,i={m}i {t}\n"));
        }
    }
    engine
        .write_lines(
            DB,
            body.as_bytes(),
            strata_lineproto::Precision::Nanoseconds,
        )
        .unwrap();
    engine.flush().unwrap();
    let late = format!("cpu,host=h4 f=1.0 {}\n", START_NS + 198 * minute);
    engine
        .write_lines(
            DB,
            late.as_bytes(),
            strata_lineproto::Precision::Nanoseconds,
        )
        .unwrap();
    let storage = Arc::clone(&engine);
    let engines = Engines {
        direct: QueryEngine::new(Arc::clone(&engine)).unwrap(),
        planned: QueryEngine::with_options(
            engine,
            QueryOptions {
                direct: false,
                ..QueryOptions::default()
            },
        )
        .unwrap(),
        _dir: dir,
    };
    let at = |m: i64| rfc3339(START_NS + m * minute);
    let mut rows = 0;
    for limit in [1, 3, 5, 12, 40] {
        // Ends inside the data, inside the gap, after it, and long after it.
        for end in [30, 61, 150, 199, 10_000] {
            rows += same_answer(
                &engines,
                &format!(
                    "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, max(f) AS max_f, \
                     count(*) AS n FROM cpu WHERE time < '{}' GROUP BY minute \
                     ORDER BY minute DESC LIMIT {limit}",
                    at(end)
                ),
            )
            .await;
            rows += same_answer(
                &engines,
                &format!(
                    "SELECT date_bin(INTERVAL '5 minutes', time) AS b, host, sum(i) AS sum_i \
                     FROM cpu WHERE time <= '{}' GROUP BY b, host ORDER BY b DESC, host \
                     LIMIT {limit}",
                    at(end)
                ),
            )
            .await;
        }
        // Oldest first from a start.
        for start in [-100, 0, 20, 70] {
            rows += same_answer(
                &engines,
                &format!(
                    "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, min(i) AS min_i \
                     FROM cpu WHERE time >= '{}' GROUP BY minute ORDER BY minute LIMIT {limit}",
                    at(start)
                ),
            )
            .await;
        }
    }
    // Oldest first with no lower bound (InfluxQL's `GROUP BY time(1m) LIMIT n`): from the
    // oldest stored time, over parts and the memtable, for all hosts and for the one whose
    // only row is in the memtable at the end. First with cpu's rows the oldest stored, then
    // with another table's a month earlier, a loose bound.
    for loose in [false, true] {
        if loose {
            let old = format!("mem,host=h1 used=1i {}\n", START_NS - 30 * 24 * 60 * minute);
            storage
                .write_lines(DB, old.as_bytes(), strata_lineproto::Precision::Nanoseconds)
                .unwrap();
        }
        for limit in [1, 3, 5, 12, 40] {
            for end in [None, Some(30), Some(150), Some(199), Some(10_000)] {
                for host in [None, Some("h4"), Some("nobody")] {
                    let mut filter: Vec<String> =
                        end.iter().map(|e| format!("time < '{}'", at(*e))).collect();
                    filter.extend(host.map(|h| format!("host = '{h}'")));
                    let filter = if filter.is_empty() {
                        String::new()
                    } else {
                        format!(" WHERE {}", filter.join(" AND "))
                    };
                    rows += same_answer(
                        &engines,
                        &format!(
                            "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, \
                             max(f) AS max_f FROM cpu{filter} GROUP BY minute \
                             ORDER BY minute LIMIT {limit}"
                        ),
                    )
                    .await;
                }
            }
        }
    }
    assert!(rows > 800, "only {rows} rows");
}

/// A statement given as sqlparser's tree (`query_stream`, as InfluxQL runs) takes the path
/// its text takes and answers as the text does: on the direct path, and where only
/// DataFusion answers, with the direct path on and off.
#[tokio::test]
async fn a_statement_as_a_tree_answers_as_its_text() {
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::dialect::GenericDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    let engines = engines();
    let w = window(1, 3);
    let statements = [
        format!(
            "SELECT date_bin(INTERVAL '60000000000 nanoseconds', \"time\") AS \"__bucket\", \
             max(\"i\") AS \"__a0_0\" FROM \"cpu\" WHERE {w} AND (\"host\" = 'h1') \
             GROUP BY \"__bucket\" ORDER BY \"__bucket\""
        ),
        "SELECT DISTINCT ON (\"host\") * FROM \"cpu\" ORDER BY \"host\", \"time\" DESC".into(),
        // Not direct: a condition on a field's arithmetic, a subquery.
        format!("SELECT host, time, f FROM cpu WHERE {w} AND (f * 2 > i) ORDER BY host, time"),
        "SELECT count(*) AS n FROM (SELECT DISTINCT host FROM cpu)".into(),
    ];
    let mut direct_seen = 0;
    for text in &statements {
        let tree = || match Parser::parse_sql(&GenericDialect {}, text).unwrap().pop() {
            Some(Statement::Query(query)) => query,
            other => panic!("{other:?}"),
        };
        let direct = engines.direct.is_direct(DB, text);
        assert_eq!(
            engines.direct.is_direct_query(DB, &tree()),
            direct,
            "{text}"
        );
        assert!(!engines.planned.is_direct_query(DB, &tree()), "{text}");
        direct_seen += usize::from(direct);
        let want = engines.planned.sql_stream(DB, text).await.unwrap();
        let want = to_rows(&want.collect().await.unwrap(), &|_| false);
        assert!(!want.is_empty(), "{text}: no rows");
        for engine in [&engines.direct, &engines.planned] {
            let got = engine.query_stream(DB, tree()).await.unwrap();
            let got = to_rows(&got.collect().await.unwrap(), &|_| false);
            if let Some(diff) = difference(&want, &got) {
                panic!("{text}\n{diff}");
            }
        }
    }
    assert_eq!(direct_seen, 2);
}
