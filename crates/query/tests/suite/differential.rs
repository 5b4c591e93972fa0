//! Differential test: seeded random SQL run through Strata (the engine's table provider,
//! data spread over memtable, several parts and three shards) and through DataFusion over
//! a `MemTable` holding the same rows after last-write-wins — each statement twice, with
//! and without the pre-aggregate path. Results must match exactly;
//! only sums and averages of floats (columns named `sum_f*` / `avg_f*`), whose value depends
//! on the order of additions, are compared with a relative tolerance of 1e-9. Rows are
//! sorted before comparing unless the query has a total order.
//!
//! Prints the seed and the statement on failure; rerun one seed with
//! `STRATA_QUERY_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{
    DB, HOUR_NS, HOURS, Rng, START_NS, TABLE, difference, mem_table, open_engine, rfc3339,
    sort_rows, to_rows, write_data,
};
use datafusion::prelude::{SessionConfig, SessionContext};
use strata_query::{QueryEngine, QueryOptions, register_functions};

/// Queries per seed: enough to cover every template several times, fast in debug builds.
const QUERIES: usize = 120;

/// A generated statement and whether its ORDER BY is total (rows compared in order).
struct Query {
    sql: String,
    ordered: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_queries_match_datafusion_over_a_mem_table() {
    let seeds: Vec<u64> = match std::env::var("STRATA_QUERY_SEED") {
        Ok(seed) => vec![seed.parse().unwrap()],
        Err(_) => vec![1, 2],
    };
    for seed in seeds {
        run_seed(seed).await;
    }
}

async fn run_seed(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let data = write_data(&engine, seed, 20, 4);
    // The premise: rows in several parts, in memtables and in every shard.
    let stats = engine.stats();
    assert!(stats.parts >= 6, "seed {seed}: {stats:?}");
    assert!(stats.memtable_bytes > 0, "seed {seed}: {stats:?}");
    assert_eq!(engine.shard_count(), 3);

    let strata = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let planned = QueryEngine::with_options(
        Arc::clone(&engine),
        QueryOptions {
            direct: false,
            ..QueryOptions::default()
        },
    )
    .unwrap();
    let without_preagg = QueryEngine::with_options(
        Arc::clone(&engine),
        QueryOptions {
            pre_aggregate: false,
            ..QueryOptions::default()
        },
    )
    .unwrap();
    let mut reference =
        SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3));
    register_functions(&mut reference).unwrap();
    reference
        .register_table(TABLE, Arc::new(mem_table(&engine, &data, 3)))
        .unwrap();

    let mut rng = Rng::new(seed.wrapping_mul(7919));
    // Sort directions come from their own stream, so the statements drawn from `rng` stay
    // those of earlier versions of this test.
    let mut order_rng = Rng::new(seed.wrapping_mul(104_729));
    let mut non_empty = 0;
    let mut direct = 0;
    for n in 0..QUERIES {
        let query = random_query(&mut rng, &mut order_rng);
        let context = || format!("seed {seed}, query {n}: {}", query.sql);
        let expected = reference
            .sql(&query.sql)
            .await
            .unwrap_or_else(|e| panic!("{}: reference failed: {e}", context()))
            .collect()
            .await
            .unwrap_or_else(|e| panic!("{}: reference failed: {e}", context()));
        let approx = |name: &str| name.starts_with("sum_f") || name.starts_with("avg_f");
        let mut expected = to_rows(&expected, &approx);
        if !query.ordered {
            sort_rows(&mut expected);
        }
        if !expected.is_empty() {
            non_empty += 1;
        }
        if strata.is_direct(DB, &query.sql) {
            direct += 1;
        }
        let mut schemas = Vec::new();
        for (path, engine) in [
            ("direct", &strata),
            ("pre-aggregates", &planned),
            ("scan", &without_preagg),
        ] {
            let stream = engine
                .sql_stream(DB, &query.sql)
                .await
                .unwrap_or_else(|e| panic!("{} ({path}): strata failed: {e}", context()));
            schemas.push((path, stream.schema()));
            let actual = stream
                .collect()
                .await
                .unwrap_or_else(|e| panic!("{} ({path}): strata failed: {e}", context()));
            let mut actual = to_rows(&actual, &approx);
            if !query.ordered {
                sort_rows(&mut actual);
            }
            if let Some(diff) = difference(&expected, &actual) {
                panic!("{} ({path})\n{diff}", context());
            }
        }
        // Names, types and nullability too: a client must not tell the paths apart.
        for (path, schema) in &schemas[1..] {
            assert_eq!(
                schemas[0].1.fields(),
                schema.fields(),
                "{}: schema of the direct path against {path}",
                context()
            );
        }
    }
    // The direct path must take a fair share of the statements, or it goes untested.
    assert!(
        direct >= QUERIES / 6,
        "seed {seed}: only {direct} of {QUERIES} statements took the direct path"
    );
    // Filters must not empty most results, or the comparison proves little.
    assert!(
        non_empty > QUERIES / 2,
        "seed {seed}: only {non_empty} non-empty results"
    );
}

fn random_query(rng: &mut Rng, order_rng: &mut Rng) -> Query {
    let filter = random_filter(rng);
    let where_clause = if filter.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", filter.join(" AND "))
    };
    let limit = if rng.chance(30) {
        format!(" LIMIT {}", 1 + rng.below(50))
    } else {
        String::new()
    };
    match rng.below(5) {
        // Raw rows, totally ordered by series and time.
        0 => {
            let columns = pick_columns(rng);
            Query {
                sql: format!(
                    "SELECT time, host, region, dc{columns} FROM {TABLE}{where_clause} \
                     ORDER BY host, region, dc, time{limit}"
                ),
                ordered: true,
            }
        }
        // Raw rows, no order: compared as sets (no limit, which would pick any rows).
        1 => {
            let columns = pick_columns(rng);
            Query {
                sql: format!("SELECT time, host, dc{columns} FROM {TABLE}{where_clause}"),
                ordered: false,
            }
        }
        // Aggregates grouped by tags.
        2 => {
            let keys = *rng.pick(&["host", "region", "dc", "host, region", "region, dc"]);
            let ordered = rng.chance(60);
            let tail = if ordered {
                format!(" ORDER BY {}{limit}", directed(order_rng, keys))
            } else {
                String::new()
            };
            Query {
                sql: format!(
                    "SELECT {keys}, {} FROM {TABLE}{where_clause} GROUP BY {keys}{tail}",
                    aggregates(rng)
                ),
                ordered,
            }
        }
        // Aggregates per time bucket (and maybe a tag).
        3 => {
            let width = *rng.pick(&["1 minute", "10 minutes", "1 hour", "90 minutes", "1 day"]);
            let mut tag = *rng.pick(&["", ", region", ", host"]);
            if tag == ", region" && order_rng.chance(50) {
                tag = ", dc"; // a tag some series lack: null groups
            }
            let order = directed(order_rng, &format!("bucket{tag}"));
            Query {
                sql: format!(
                    "SELECT date_bin(INTERVAL '{width}', time) AS bucket{tag}, {} \
                     FROM {TABLE}{where_clause} GROUP BY bucket{tag} ORDER BY {order}{limit}",
                    aggregates(rng)
                ),
                ordered: true,
            }
        }
        // The first or latest row of each series (TSBS lastpoint's shape).
        4 if rng.chance(40) => {
            let (order, columns) = if rng.chance(50) {
                ("DESC", "*".to_string())
            } else {
                (
                    "ASC",
                    format!("time, host, region, dc{}", pick_columns(rng)),
                )
            };
            Query {
                sql: format!(
                    "SELECT DISTINCT ON (host, region, dc) {columns} FROM {TABLE}{where_clause} \
                     ORDER BY host, region, dc, time {order}{limit}"
                ),
                ordered: true,
            }
        }
        // Whole-table aggregates.
        _ => Query {
            sql: format!("SELECT {} FROM {TABLE}{where_clause}", aggregates(rng)),
            ordered: true,
        },
    }
}

/// The comma-separated `keys` as ORDER BY keys, mostly ascending, some descending, some
/// with an explicit null order (`dc` is missing from some series).
fn directed(rng: &mut Rng, keys: &str) -> String {
    keys.split(", ")
        .map(|key| {
            let direction = if rng.chance(30) { " DESC" } else { "" };
            let nulls = match rng.below(6) {
                0 => " NULLS FIRST",
                1 => " NULLS LAST",
                _ => "",
            };
            format!("{key}{direction}{nulls}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `, i, s, …`: a random subset of the fields (possibly none).
fn pick_columns(rng: &mut Rng) -> String {
    let mut out = String::new();
    for field in ["i", "f", "b", "s"] {
        if rng.chance(50) {
            out.push_str(", ");
            out.push_str(field);
        }
    }
    out
}

/// Two to five aggregates, named so the comparison knows which are float sums.
fn aggregates(rng: &mut Rng) -> String {
    const ALL: [&str; 18] = [
        "count(*) AS n",
        "count(f) AS count_f",
        "count(s) AS count_s",
        "sum(i) AS sum_i",
        "sum(f) AS sum_f",
        "min(f) AS min_f",
        "max(f) AS max_f",
        "min(i) AS min_i",
        "max(i) AS max_i",
        "avg(f) AS avg_f",
        "avg(i) AS avg_i",
        "min(s) AS min_s",
        "max(time) AS last_time",
        "first(f) AS first_f",
        "last(f) AS last_f",
        "first(i) AS first_i",
        "last(b) AS last_b",
        "first(s) AS first_s",
    ];
    let count = 2 + rng.below(4) as usize;
    let mut chosen: Vec<&str> = Vec::new();
    while chosen.len() < count {
        let a = *rng.pick(&ALL);
        if !chosen.contains(&a) {
            chosen.push(a);
        }
    }
    chosen.join(", ")
}

/// Zero to three conditions, each pushed down exactly, inexactly or not at all.
fn random_filter(rng: &mut Rng) -> Vec<String> {
    let count = rng.below(4);
    (0..count).map(|_| random_condition(rng)).collect()
}

fn random_time(rng: &mut Rng) -> i64 {
    // A little outside the data on both sides; sometimes on a whole second (where rows are).
    let span = (HOURS + 1) * HOUR_NS;
    let mut t = START_NS - HOUR_NS / 2 + rng.below(span as u64) as i64;
    if rng.chance(50) {
        t -= t.rem_euclid(1_000_000_000);
    }
    t
}

fn random_condition(rng: &mut Rng) -> String {
    let host = |rng: &mut Rng| format!("'h{}'", rng.below(11)); // h10 matches nothing
    let region = |rng: &mut Rng| format!("'r{}'", rng.below(3));
    let dc = |rng: &mut Rng| format!("'d{}'", rng.below(3));
    match rng.below(16) {
        0 => format!("time >= '{}'", rfc3339(random_time(rng))),
        1 => format!("time < '{}'", rfc3339(random_time(rng))),
        2 => format!(
            "time > TIMESTAMP '{}'",
            rfc3339(random_time(rng)).trim_end_matches('Z')
        ),
        3 => format!("time <= '{}'", rfc3339(random_time(rng))),
        4 => {
            let a = random_time(rng);
            let b = a + rng.below(2 * HOUR_NS as u64) as i64;
            format!("time BETWEEN '{}' AND '{}'", rfc3339(a), rfc3339(b))
        }
        5 => format!("host = {}", host(rng)),
        6 => format!("host IN ({}, {}, {})", host(rng), host(rng), host(rng)),
        7 => format!("host != {}", host(rng)),
        8 => format!("dc != {}", dc(rng)),
        9 => format!("(host = {} OR region = {})", host(rng), region(rng)),
        10 => format!("(dc = {} OR dc = {})", dc(rng), dc(rng)),
        11 => format!("region = {}", region(rng)),
        12 => "f > 0".to_string(),
        13 => "dc IS NULL".to_string(),
        14 => format!("(host = {} AND i > 0)", host(rng)),
        _ => format!("dc NOT IN ({}, {})", dc(rng), dc(rng)),
    }
}

#[test]
fn rfc3339_formats_instants() {
    assert_eq!(rfc3339(START_NS), "2023-11-14T22:00:00.000000000Z");
    assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
    assert_eq!(
        rfc3339(951_782_400_000_000_000),
        "2000-02-29T00:00:00.000000000Z"
    );
}
