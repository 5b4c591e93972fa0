//! Queries over the tier boundary: seeded random SQL and InfluxQL queries over four days of
//! rows (three of them cold) answer exactly the same from a server that keeps every row in
//! its parts, from the same server once `--lake` copied the cold days and released their
//! parts (reads take them from the Delta tables), and after a restart of it (footers read
//! afresh); and from a read-only query server on the lake (`--lake-read-only`) exactly as
//! from a server holding only the lake's days. Values are multiples of 0.25, so sums are
//! exact whatever order rows are folded in. `STRATA_LAKE_QUERY_SEED` picks another
//! sequence.

#![allow(clippy::unwrap_used)]

mod common;
mod sql_common;

use std::time::Duration;

use common::lake::{Rng, now_ns, wait_for_metrics};
use common::{Server, data_dir, metric};

const DAY_NS: i64 = 86_400_000_000_000;
const HOUR_NS: i64 = 3_600_000_000_000;
const DAYS: i64 = 4;
const QUERIES: usize = 40;

/// Rows of 8 hosts in 2 racks every 10 minutes from `start` to `end` (`idle` on two rows
/// in three).
fn rows(start: i64, end: i64) -> String {
    let mut body = String::new();
    let mut time = start;
    let mut i = 0u64;
    while time < end {
        for host in 0..8u64 {
            let usage = ((i * 7 + host * 13) % 97) as f64 * 0.25;
            if (i + host).is_multiple_of(3) {
                body.push_str(&format!(
                    "cpu,host=h{host},rack=r{} usage={usage} {time}\n",
                    host % 2
                ));
            } else {
                body.push_str(&format!(
                    "cpu,host=h{host},rack=r{} usage={usage},idle={}i {time}\n",
                    host % 2,
                    (i + host) % 50
                ));
            }
        }
        time += 600_000_000_000;
        i += 1;
    }
    body
}

/// A query language and its text.
#[derive(Debug, Clone)]
enum Query {
    Sql(String),
    InfluxQl(String),
}

/// A random query over `start..end` (times in ns).
fn query(rng: &mut Rng, start: i64, end: i64) -> Query {
    let span = (end - start) as u64;
    let a = start + rng.below(span) as i64 - DAY_NS / 4;
    let b = a + rng.below(2 * DAY_NS as u64) as i64 + HOUR_NS;
    let host = format!("h{}", rng.below(9));
    let range = format!("time >= {a} AND time < {b}");
    let sql_range = format!("time >= to_timestamp_nanos({a}) AND time < to_timestamp_nanos({b})");
    match rng.below(10) {
        0 => Query::Sql(format!(
            "SELECT count(*), sum(usage), min(usage), max(idle), count(idle) FROM cpu WHERE {sql_range}"
        )),
        1 => Query::Sql(format!(
            "SELECT host, date_bin(INTERVAL '1 hour', time) AS hour, avg(usage), count(idle), max(usage) \
             FROM cpu WHERE {sql_range} GROUP BY host, hour ORDER BY host, hour"
        )),
        2 => Query::Sql(format!(
            "SELECT * FROM cpu WHERE host = '{host}' AND {sql_range} ORDER BY time LIMIT 25"
        )),
        3 => Query::Sql(format!(
            "SELECT time, host, usage FROM cpu WHERE rack = 'r1' AND time < to_timestamp_nanos({b}) \
             ORDER BY time DESC, host LIMIT 12"
        )),
        4 => Query::Sql(format!(
            "SELECT rack, sum(idle), count(usage) FROM cpu WHERE host <> '{host}' GROUP BY rack ORDER BY rack"
        )),
        5 => Query::InfluxQl(format!(
            "SELECT mean(usage), count(idle), max(usage) FROM cpu WHERE {range} GROUP BY time(1h), host"
        )),
        6 => Query::InfluxQl(format!(
            "SELECT last(usage), first(idle) FROM cpu WHERE time < {b} GROUP BY host"
        )),
        7 => Query::InfluxQl(format!(
            "SELECT usage, idle FROM cpu WHERE host = '{host}' AND {range} LIMIT 20"
        )),
        8 => Query::InfluxQl(format!(
            "SELECT sum(usage), min(idle) FROM cpu WHERE rack = 'r0' AND {range} GROUP BY time(6h)"
        )),
        _ => Query::InfluxQl(format!(
            "SELECT max(usage) FROM cpu WHERE {range} GROUP BY time(30m) fill(none) LIMIT 7"
        )),
    }
}

fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// The server's answer to `query` (status and body).
fn answer(server: &Server, query: &Query) -> String {
    let path = match query {
        Query::Sql(q) => format!("/sql?db=db&format=csv&q={}", encode(q)),
        Query::InfluxQl(q) => format!("/query?db=db&epoch=ns&q={}", encode(q)),
    };
    let response = sql_common::send(server.http, "GET", &path, &[], b"");
    assert_eq!(response.status, 200, "{query:?}: {}", response.text());
    assert!(
        response.complete,
        "{query:?}: cut short: {}",
        response.text()
    );
    response.text()
}

fn answers(server: &Server, queries: &[Query]) -> Vec<String> {
    queries.iter().map(|q| answer(server, q)).collect()
}

fn assert_same(found: &[String], expected: &[String], queries: &[Query], what: &str) {
    for ((f, e), q) in found.iter().zip(expected).zip(queries) {
        assert_eq!(f, e, "{what}: {q:?}");
    }
}

#[test]
fn queries_over_the_tier_boundary_answer_the_same_from_parts_and_lake() {
    let seed = std::env::var("STRATA_LAKE_QUERY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x01a4_e9e7_u64);
    println!("seed {seed} (STRATA_LAKE_QUERY_SEED)");
    let dir = data_dir();
    let data = dir.path().join("data");
    let lake = dir.path().join("lake");
    let end = now_ns();
    let start = (end / DAY_NS - (DAYS - 1)) * DAY_NS;
    let server = Server::start(&data, &[]);
    assert_eq!(server.post("/write?db=db", &rows(start, end)).status, 204);
    assert!(server.stop().success());

    let mut rng = Rng(seed.max(1));
    let mut queries: Vec<Query> = (0..QUERIES).map(|_| query(&mut rng, start, end)).collect();
    queries.push(Query::InfluxQl(
        "SHOW TAG VALUES FROM cpu WITH KEY = host".into(),
    ));
    queries.push(Query::Sql("SELECT count(*) FROM cpu".into()));

    // Every row in local parts.
    let server = Server::start(&data, &[]);
    let parts_before = metric(&server.metrics(), "strata_parts");
    let expected = answers(&server, &queries);
    // Most queries find rows (the comparison below would mean little otherwise).
    let with_rows = expected
        .iter()
        .filter(|a| a.contains("\"values\"") || a.lines().count() > 1)
        .count();
    assert!(
        with_rows * 4 >= queries.len() * 3,
        "{with_rows} of {} answers have rows",
        queries.len()
    );
    assert!(server.stop().success());

    // The cold days copied to the lake and their parts released.
    let url = format!("file://{}", lake.display());
    let args = [
        "--lake",
        url.as_str(),
        "--tier-after",
        "1h",
        "--tier-interval",
        "200ms",
    ];
    let server = Server::start(&data, &args);
    let released = wait_for_metrics("released", &server, Duration::from_secs(60), |m| {
        metric(m, "strata_lake_parts_released_total") > 0.0
    });
    // Rounds until one commits nothing more.
    let mut commits = metric(&released, "strata_lake_commits_total");
    let settled = wait_for_metrics("settled", &server, Duration::from_secs(60), |m| {
        let now = metric(m, "strata_lake_commits_total");
        let done = now == commits && metric(m, "strata_lake_rounds_total") >= 3.0;
        commits = now;
        done
    });
    assert_eq!(metric(&settled, "strata_lake_failures_total"), 0.0);
    let parts_after = metric(&settled, "strata_parts");
    assert!(
        parts_after < parts_before,
        "parts {parts_before} -> {parts_after}"
    );
    assert_same(&answers(&server, &queries), &expected, &queries, "tiered");
    assert!(server.stop().success());

    // A restart reads the lake's footers afresh.
    let server = Server::start(&data, &args);
    assert_same(
        &answers(&server, &queries),
        &expected,
        &queries,
        "restarted",
    );
    assert!(server.stop().success());

    // A read-only query server on the lake, started on an empty directory with the writer
    // stopped, answers as a server holding the lake's days (those that ended an hour
    // before the rounds) and nothing else; it refuses writes and schema changes.
    let lake_end = (end - HOUR_NS) / DAY_NS * DAY_NS;
    let reference = Server::start(&dir.path().join("reference"), &[]);
    assert_eq!(
        reference
            .post("/write?db=db", &rows(start, lake_end))
            .status,
        204
    );
    let expected = answers(&reference, &queries);
    assert!(reference.stop().success());
    let read_only = Server::start(
        &dir.path().join("read-only"),
        &["--lake", url.as_str(), "--lake-read-only"],
    );
    let metrics = read_only.metrics();
    assert_eq!(metric(&metrics, "strata_lake_mirror_tables"), 1.0);
    assert_eq!(metric(&metrics, "strata_parts"), 0.0);
    assert_same(
        &answers(&read_only, &queries),
        &expected,
        &queries,
        "read-only",
    );
    let refused = read_only.post("/write?db=db", "cpu,host=x usage=1 1\n");
    assert_eq!(refused.status, 403, "{}", refused.text());
    assert!(refused.text().contains("read-only"), "{}", refused.text());
    let drop = sql_common::send(read_only.http, "POST", "/sql?db=db", &[], b"DROP TABLE cpu");
    assert_eq!(drop.status, 403, "{}", drop.text());
    assert_same(
        &answers(&read_only, &queries),
        &expected,
        &queries,
        "read-only after refused changes",
    );
    assert!(read_only.stop().success());
}
