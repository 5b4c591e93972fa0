//! TSBS devops queries on `cpu`, in TSBS's own InfluxQL wording.
//!
//! [`statement`] words a query drawn by [`super::tsbs::query`] exactly as TSBS's influx
//! query generator (`cmd/tsbs_generate_queries/databases/influx/devops.go`) words it, text
//! for text: spacing, quoting and casing included (`from cpu where`, `group by time(1m)`,
//! the two spaces of `high-cpu-all`), so `strata bench query --protocol influxql` sends
//! what `tsbs_run_queries_influx` sends. The hosts and windows are the drawn query's, so the
//! SQL and the InfluxQL forms of one query ask for the same data:
//! - `single-groupby-M-H-T`: `SELECT max(f1), max(f2) from cpu where (hostname = 'a' or
//!   hostname = 'b') and time >= 'S' and time < 'E' group by time(1m)`;
//! - `cpu-max-all-H`: the same with all ten `max(f)` joined by `,` (no space) and
//!   `group by time(1h)`;
//! - `double-groupby-M`: `SELECT mean(f1), … from cpu where time >= 'S' and time < 'E'
//!   group by time(1h),hostname`;
//! - `high-cpu-H`: `SELECT * from cpu where usage_user > 90.0 and (hosts) and time >= 'S'
//!   and time < 'E'` (`high-cpu-all`: no host clause, two spaces before `and time`);
//! - `lastpoint`: `SELECT * from cpu group by "hostname" order by time desc limit 1`;
//! - `groupby-orderby-limit`: `SELECT max(usage_user) from cpu WHERE time < 'E' group by
//!   time(1m) limit 5`.

use super::tsbs::{FIELD_COUNT, rfc3339};
use super::{Query, QueryType};
use crate::cpu_only::FIELDS;

/// TSBS's InfluxQL for `query`, a query of `query_type` drawn by the SQL generator. Errors
/// for the meters types (TSBS has no InfluxQL for them) and for a query without the window
/// its type needs.
pub fn statement(query_type: QueryType, query: &Query) -> Result<String, String> {
    let window = || -> Result<(String, String), String> {
        match (query.start_ns, query.end_ns) {
            (Some(start), Some(end)) => Ok((rfc3339(start), rfc3339(end))),
            _ => Err(format!(
                "a {} query has no time window to write in InfluxQL",
                query_type.name()
            )),
        }
    };
    Ok(match query_type {
        QueryType::SingleGroupby { metrics, .. } => {
            let (start, end) = window()?;
            format!(
                "SELECT {} from cpu where {} and time >= '{start}' and time < '{end}' \
                 group by time(1m)",
                aggregates("max", metrics, ", "),
                host_clause(&query.hosts),
            )
        }
        QueryType::CpuMaxAll { .. } => {
            let (start, end) = window()?;
            format!(
                "SELECT {} from cpu where {} and time >= '{start}' and time < '{end}' \
                 group by time(1h)",
                aggregates("max", FIELD_COUNT, ","),
                host_clause(&query.hosts),
            )
        }
        QueryType::DoubleGroupby { metrics } => {
            let (start, end) = window()?;
            format!(
                "SELECT {} from cpu where time >= '{start}' and time < '{end}' \
                 group by time(1h),hostname",
                aggregates("mean", metrics, ", "),
            )
        }
        QueryType::HighCpu { hosts } => {
            let (start, end) = window()?;
            // TSBS writes `where <cpu clause> <host clause> and time …`: with no host
            // clause, two spaces.
            let hosts = match hosts {
                Some(_) => format!("and {}", host_clause(&query.hosts)),
                None => String::new(),
            };
            format!(
                "SELECT * from cpu where usage_user > 90.0 {hosts} and time >= '{start}' \
                 and time < '{end}'"
            )
        }
        QueryType::Lastpoint => {
            "SELECT * from cpu group by \"hostname\" order by time desc limit 1".to_string()
        }
        QueryType::GroupbyOrderbyLimit => {
            let end = query.end_ns.ok_or_else(|| {
                "a groupby-orderby-limit query has no end to write in InfluxQL".to_string()
            })?;
            format!(
                "SELECT max(usage_user) from cpu WHERE time < '{}' group by time(1m) limit 5",
                rfc3339(end)
            )
        }
        QueryType::MetersCount | QueryType::MetersAggregate { .. } | QueryType::MetersSelectAll => {
            return Err(format!(
                "query type {} reads meters: TSBS's InfluxQL covers the cpu-only devops \
                 types only (run the meters queries as SQL)",
                query_type.name()
            ));
        }
    })
}

/// `query` with its statement in TSBS's InfluxQL (hosts, window and the rest unchanged).
pub fn translate(query_type: QueryType, query: &Query) -> Result<Query, String> {
    Ok(Query {
        sql: statement(query_type, query)?,
        ..query.clone()
    })
}

/// `max(usage_user), max(usage_system)` for the first `metrics` fields.
fn aggregates(function: &str, metrics: usize, separator: &str) -> String {
    FIELDS[..metrics.min(FIELD_COUNT)]
        .iter()
        .map(|f| format!("{function}({f})"))
        .collect::<Vec<_>>()
        .join(separator)
}

/// `(hostname = 'host_3' or hostname = 'host_7')`, in the order the hosts were drawn.
fn host_clause(hosts: &[u32]) -> String {
    let terms: Vec<String> = hosts
        .iter()
        .map(|h| format!("hostname = 'host_{h}'"))
        .collect();
    format!("({})", terms.join(" or "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::go_query_unescape as decode;
    use crate::queries::{Dataset, generate, tsbs};
    use crate::query_run::influxql_path;

    /// Requests captured from TSBS itself (see the fixture's README).
    const FIXTURE: &str = include_str!("../../../strata/tests/fixtures/tsbs_influx_queries.txt");

    /// Nanoseconds of `YYYY-MM-DDTHH:MM:SSZ` (days from civil, Howard Hinnant's).
    fn parse_rfc3339(text: &str) -> i64 {
        let n = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
        let (y, m, d) = (n(0..4), n(5..7), n(8..10));
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        (days * 86_400 + n(11..13) * 3_600 + n(14..16) * 60 + n(17..19)) * 1_000_000_000
    }

    /// The literal after `prefix` up to the closing quote.
    fn literal_after(statement: &str, prefix: &str) -> Option<i64> {
        let at = statement.find(prefix)? + prefix.len();
        let end = statement[at..].find('\'')?;
        Some(parse_rfc3339(&statement[at..at + end]))
    }

    /// The random parts of a TSBS statement (hosts in order, window), as a drawn query.
    fn drawn(statement: &str) -> Query {
        let hosts = statement
            .split("hostname = 'host_")
            .skip(1)
            .map(|rest| rest[..rest.find('\'').unwrap()].parse().unwrap())
            .collect();
        Query {
            sql: String::new(),
            start_ns: literal_after(statement, "time >= '"),
            end_ns: literal_after(statement, "time < '"),
            hosts,
            clamped: false,
            streamed: false,
        }
    }

    #[test]
    fn rfc3339_parse_matches_the_writer() {
        for ns in [0, 1_451_606_400_000_000_000, 1_451_614_628_000_000_000] {
            assert_eq!(parse_rfc3339(&rfc3339(ns)), ns);
        }
        assert_eq!(
            parse_rfc3339("2016-01-01T00:00:00Z"),
            1_451_606_400 * 1_000_000_000
        );
    }

    /// Every request of the fixture, its hosts and window taken as drawn, is rendered to the
    /// same statement and the same request target (`POST /query?q=…&db=benchmark`).
    #[test]
    fn statements_match_tsbs_requests_exactly() {
        let mut query_type = None;
        let mut seen: Vec<QueryType> = Vec::new();
        let mut requests = 0;
        for line in FIXTURE.lines() {
            if let Some(comment) = line.strip_prefix('#') {
                if let Some(t) = tsbs::parse(comment.trim()) {
                    query_type = Some(t);
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            let t = query_type.expect("a request before any type heading");
            let q = line
                .strip_prefix("/query?q=")
                .and_then(|rest| rest.strip_suffix("&db=benchmark"))
                .unwrap_or_else(|| panic!("unexpected request line {line}"));
            let expected = decode(q);
            let rendered = statement(t, &drawn(&expected)).unwrap();
            assert_eq!(rendered, expected, "{}", t.name());
            assert_eq!(
                influxql_path("", &rendered, "benchmark"),
                line,
                "{}",
                t.name()
            );
            if !seen.contains(&t) {
                seen.push(t);
            }
            requests += 1;
        }
        assert_eq!(requests, 45);
        assert_eq!(seen.len(), 15);
        // Every type the bench runs is in the fixture but two single-groupby shapes TSBS
        // does not ship (same wording as the ones it does).
        for t in tsbs::all_types() {
            let missing_ok = matches!(
                t,
                QueryType::SingleGroupby {
                    hosts: 8,
                    hours: 12,
                    ..
                }
            );
            assert!(seen.contains(&t) || missing_ok, "{} not covered", t.name());
        }
    }

    /// The InfluxQL form asks for the hosts and the window the SQL form asks for.
    #[test]
    fn translation_keeps_the_random_choices() {
        let start_ns = 1_451_606_400 * 1_000_000_000;
        let dataset = Dataset::CpuOnly {
            start_ns,
            end_ns: start_ns + 24 * 3_600 * 1_000_000_000,
            hosts: 100,
        };
        for t in tsbs::all_types() {
            for sql in generate(&dataset, t, 5, 123).unwrap() {
                let influxql = translate(t, &sql).unwrap();
                assert_eq!(
                    (&influxql.hosts, influxql.start_ns, influxql.end_ns),
                    (&sql.hosts, sql.start_ns, sql.end_ns)
                );
                let again = drawn(&influxql.sql);
                assert_eq!(again.hosts, sql.hosts, "{}", influxql.sql);
                if t != QueryType::Lastpoint {
                    assert_eq!(again.end_ns, sql.end_ns, "{}", influxql.sql);
                }
                if !matches!(t, QueryType::Lastpoint | QueryType::GroupbyOrderbyLimit) {
                    assert_eq!(again.start_ns, sql.start_ns, "{}", influxql.sql);
                }
                for literal in [sql.start_ns, sql.end_ns].into_iter().flatten() {
                    assert!(sql.sql.contains(&rfc3339(literal)), "{}", sql.sql);
                }
            }
        }
        let meters = generate(&Dataset::Meters, QueryType::MetersCount, 1, 1).unwrap();
        let err = statement(QueryType::MetersCount, &meters[0]).unwrap_err();
        assert!(err.contains("cpu-only"), "{err}");
    }
}
