//! TSBS devops queries on `cpu`, in Strata's SQL (TSBS's own InfluxQL wording of the same
//! queries: [`super::tsbs_influxql`]).
//!
//! Semantics follow TSBS's query generator (`uses/devops`, with the TimescaleDB builder's
//! SQL shapes and the Influx builder's RFC 3339 literals):
//! - a window of T hours starts uniformly at random in `[data start, data end - T)` and is
//!   written with whole seconds, as TSBS's Influx queries write it;
//! - H random hosts are H distinct hosts drawn uniformly (redrawn until unseen), filtered
//!   with `hostname = 'a' OR hostname = 'b' …`;
//! - M metrics are the first M of the ten cpu fields, in TSBS's order.
//!
//! Shapes (`time_bucket` is Strata's `date_bin`):
//! - `single-groupby-M-H-T`: `max` of M fields per 1-minute bucket, H hosts, T hours;
//! - `cpu-max-all-H`: `max` of all fields per hour, H hosts, 8 hours;
//! - `double-groupby-M`: `avg` of M fields per hour and hostname, all hosts, 12 hours;
//! - `high-cpu-H`: `SELECT *` of rows with `usage_user > 90.0`, 12 hours, H hosts or all;
//! - `lastpoint`: `SELECT DISTINCT ON (hostname) * … ORDER BY hostname, time DESC`;
//! - `groupby-orderby-limit`: `max(usage_user)` per minute with `time <` a random end
//!   (the end of a random 1-hour window), newest 5 buckets.

use super::{Query, QueryType};
use crate::cpu_only::FIELDS;
use crate::rng::Rng;

/// Number of cpu fields (`double-groupby-all` and `cpu-max-all` use them all).
pub const FIELD_COUNT: usize = FIELDS.len();

const NS_PER_S: i64 = 1_000_000_000;
const NS_PER_HOUR: i64 = 3_600 * NS_PER_S;
/// TSBS's `MaxAllDuration`.
const MAX_ALL_HOURS: u32 = 8;
/// TSBS's `DoubleGroupByDuration` and `HighCPUDuration`.
const DOUBLE_GROUPBY_HOURS: u32 = 12;
const HIGH_CPU_HOURS: u32 = 12;
/// TSBS's `usage_user` threshold for high-cpu.
const HIGH_CPU_THRESHOLD: &str = "90.0";

/// The data the queries read: its time span and hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First timestamp, nanoseconds (inclusive).
    pub start_ns: i64,
    /// End, nanoseconds (exclusive).
    pub end_ns: i64,
    /// Number of hosts.
    pub hosts: u32,
}

/// The devops types the bench runs by default: seed 001's set. `single-groupby` takes
/// every combination of M in {1, 5}, H in {1, 8}, T in {1, 12} (TSBS ships six of the
/// eight; the other two are the same query shape).
pub fn all_types() -> Vec<QueryType> {
    let mut types = Vec::new();
    for metrics in [1, 5] {
        for hosts in [1, 8] {
            for hours in [1, 12] {
                types.push(QueryType::SingleGroupby {
                    metrics,
                    hosts,
                    hours,
                });
            }
        }
    }
    types.extend([
        QueryType::CpuMaxAll { hosts: 1 },
        QueryType::CpuMaxAll { hosts: 8 },
        QueryType::DoubleGroupby { metrics: 1 },
        QueryType::DoubleGroupby { metrics: 5 },
        QueryType::DoubleGroupby {
            metrics: FIELD_COUNT,
        },
        QueryType::HighCpu { hosts: Some(1) },
        QueryType::HighCpu { hosts: None },
        QueryType::Lastpoint,
        QueryType::GroupbyOrderbyLimit,
    ]);
    types
}

/// Parses a devops type name (`single-groupby-1-1-1`, `cpu-max-all-8`, `double-groupby-all`,
/// `high-cpu-1`, `high-cpu-all`, `lastpoint`, `groupby-orderby-limit`).
pub fn parse(name: &str) -> Option<QueryType> {
    let positive = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0);
    let metrics = |s: &str| match s {
        "all" => Some(FIELD_COUNT),
        _ => positive(s)
            .map(|n| n as usize)
            .filter(|n| *n <= FIELD_COUNT),
    };
    if let Some(rest) = name.strip_prefix("single-groupby-") {
        let mut parts = rest.split('-');
        let (m, h, t) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        return Some(QueryType::SingleGroupby {
            metrics: metrics(m)?,
            hosts: positive(h)?,
            hours: positive(t)?,
        });
    }
    if let Some(h) = name.strip_prefix("cpu-max-all-") {
        return Some(QueryType::CpuMaxAll {
            hosts: positive(h)?,
        });
    }
    if let Some(m) = name.strip_prefix("double-groupby-") {
        return Some(QueryType::DoubleGroupby {
            metrics: metrics(m)?,
        });
    }
    if let Some(h) = name.strip_prefix("high-cpu-") {
        let hosts = match h {
            "all" => None,
            _ => Some(positive(h)?),
        };
        return Some(QueryType::HighCpu { hosts });
    }
    match name {
        "lastpoint" => Some(QueryType::Lastpoint),
        "groupby-orderby-limit" => Some(QueryType::GroupbyOrderbyLimit),
        _ => None,
    }
}

/// One query of `query_type` over `span`, drawing hosts and window from `rng`.
pub fn query(span: &Span, query_type: QueryType, rng: &mut Rng) -> Result<Query, String> {
    let mut query = match query_type {
        QueryType::SingleGroupby {
            metrics,
            hosts,
            hours,
        } => grouped_max(span, rng, metrics, hosts, hours, "1 minute", "minute")?,
        QueryType::CpuMaxAll { hosts } => grouped_max(
            span,
            rng,
            FIELD_COUNT,
            hosts,
            MAX_ALL_HOURS,
            "1 hour",
            "hour",
        )?,
        QueryType::DoubleGroupby { metrics } => double_groupby(span, rng, metrics),
        QueryType::HighCpu { hosts } => high_cpu(span, rng, hosts)?,
        QueryType::Lastpoint => Query {
            sql: "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC".into(),
            ..unbounded()
        },
        QueryType::GroupbyOrderbyLimit => {
            let window = Window::draw(span, 1, rng);
            Query {
                sql: format!(
                    "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, \
                     max(usage_user) AS max_usage_user FROM cpu WHERE time < '{}' \
                     GROUP BY minute ORDER BY minute DESC LIMIT 5",
                    rfc3339(window.end_ns)
                ),
                end_ns: Some(window.end_ns),
                clamped: window.clamped,
                ..unbounded()
            }
        }
        other => {
            return Err(format!("query type {} reads meters, not cpu", other.name()));
        }
    };
    query.streamed = query_type.streamed();
    Ok(query)
}

fn unbounded() -> Query {
    Query {
        sql: String::new(),
        start_ns: None,
        end_ns: None,
        hosts: Vec::new(),
        clamped: false,
        streamed: false,
    }
}

/// `single-groupby` and `cpu-max-all`: max of fields per bucket for random hosts.
fn grouped_max(
    span: &Span,
    rng: &mut Rng,
    metrics: usize,
    hosts: u32,
    hours: u32,
    bucket: &str,
    bucket_name: &str,
) -> Result<Query, String> {
    let window = Window::draw(span, hours, rng);
    let hosts = random_hosts(span, hosts, rng)?;
    let aggregates = select_list("max", metrics);
    let sql = format!(
        "SELECT time_bucket(INTERVAL '{bucket}', time) AS {bucket_name}, {aggregates} \
         FROM cpu WHERE {} AND time >= '{}' AND time < '{}' \
         GROUP BY {bucket_name} ORDER BY {bucket_name}",
        host_filter(&hosts),
        rfc3339(window.start_ns),
        rfc3339(window.end_ns),
    );
    Ok(window.query(sql, hosts))
}

fn double_groupby(span: &Span, rng: &mut Rng, metrics: usize) -> Query {
    let window = Window::draw(span, DOUBLE_GROUPBY_HOURS, rng);
    let sql = format!(
        "SELECT time_bucket(INTERVAL '1 hour', time) AS hour, hostname, {} FROM cpu \
         WHERE time >= '{}' AND time < '{}' GROUP BY hour, hostname ORDER BY hour, hostname",
        select_list("avg", metrics),
        rfc3339(window.start_ns),
        rfc3339(window.end_ns),
    );
    window.query(sql, Vec::new())
}

fn high_cpu(span: &Span, rng: &mut Rng, hosts: Option<u32>) -> Result<Query, String> {
    let window = Window::draw(span, HIGH_CPU_HOURS, rng);
    let hosts = match hosts {
        Some(n) => random_hosts(span, n, rng)?,
        None => Vec::new(),
    };
    let host_clause = if hosts.is_empty() {
        String::new()
    } else {
        format!(" AND {}", host_filter(&hosts))
    };
    let sql = format!(
        "SELECT * FROM cpu WHERE usage_user > {HIGH_CPU_THRESHOLD} AND time >= '{}' \
         AND time < '{}'{host_clause}",
        rfc3339(window.start_ns),
        rfc3339(window.end_ns),
    );
    Ok(window.query(sql, hosts))
}

/// `agg(f) AS agg_f` for the first `metrics` fields (`avg` is named `mean_f`, as TSBS does).
fn select_list(aggregate: &str, metrics: usize) -> String {
    let alias = if aggregate == "avg" {
        "mean"
    } else {
        aggregate
    };
    FIELDS[..metrics.min(FIELD_COUNT)]
        .iter()
        .map(|f| format!("{aggregate}({f}) AS {alias}_{f}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `(hostname = 'host_3' OR hostname = 'host_7')`.
fn host_filter(hosts: &[u32]) -> String {
    let terms: Vec<String> = hosts
        .iter()
        .map(|h| format!("hostname = 'host_{h}'"))
        .collect();
    format!("({})", terms.join(" OR "))
}

/// `count` distinct hosts, uniformly: TSBS's `getRandomSubsetPerm` (draw until unseen).
fn random_hosts(span: &Span, count: u32, rng: &mut Rng) -> Result<Vec<u32>, String> {
    if count > span.hosts {
        return Err(format!(
            "the query asks for {count} random hosts but the data has {} (--hosts)",
            span.hosts
        ));
    }
    let mut chosen = Vec::with_capacity(count as usize);
    // Bounded in expectation: at most `hosts` draws per pick on average (count <= hosts).
    while chosen.len() < count as usize {
        let host = rng.below(u64::from(span.hosts)) as u32;
        if !chosen.contains(&host) {
            chosen.push(host);
        }
    }
    Ok(chosen)
}

/// A random window of the data.
struct Window {
    start_ns: i64,
    end_ns: i64,
    clamped: bool,
}

impl Window {
    /// TSBS's `RandWindow`: start uniform in `[start, end - window)`, then cut to whole
    /// seconds as its RFC 3339 literals are. A window not shorter than the data is the
    /// whole data span (`clamped`).
    fn draw(span: &Span, hours: u32, rng: &mut Rng) -> Self {
        let length = i64::from(hours).saturating_mul(NS_PER_HOUR);
        let upper = span.end_ns.saturating_sub(length);
        if upper <= span.start_ns {
            return Self {
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                clamped: true,
            };
        }
        let offset = rng.below((upper - span.start_ns) as u64) as i64;
        let start_ns = (span.start_ns + offset).div_euclid(NS_PER_S) * NS_PER_S;
        Self {
            start_ns,
            end_ns: start_ns + length,
            clamped: false,
        }
    }

    fn query(&self, sql: String, hosts: Vec<u32>) -> Query {
        Query {
            sql,
            start_ns: Some(self.start_ns),
            end_ns: Some(self.end_ns),
            hosts,
            clamped: self.clamped,
            streamed: false,
        }
    }
}

/// `2019-04-01T05:23:17Z` (whole seconds: the window starts are whole seconds). Every
/// nanosecond timestamp (years 1677 to 2262) has a four-digit year.
pub(super) fn rfc3339(ns: i64) -> String {
    let seconds = ns.div_euclid(NS_PER_S);
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in all_types() {
            assert_eq!(parse(&t.name()), Some(t), "{}", t.name());
        }
        assert_eq!(parse("single-groupby-11-1-1"), None);
        assert_eq!(parse("single-groupby-1-1"), None);
        assert_eq!(parse("high-cpu-0"), None);
        assert_eq!(
            parse("double-groupby-10").map(|t| t.name()),
            Some("double-groupby-all".into())
        );
    }

    #[test]
    fn literals_are_rfc3339_seconds() {
        assert_eq!(rfc3339(1_554_076_800_000_000_000), "2019-04-01T00:00:00Z");
        assert_eq!(rfc3339(1_554_076_800_999_999_999), "2019-04-01T00:00:00Z");
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century leap year), 2262-04-11 (near i64::MAX ns).
        assert_eq!(rfc3339(951_782_400 * NS_PER_S + 1), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(i64::MAX), "2262-04-11T23:47:16Z");
        assert_eq!(rfc3339(i64::MIN), "1677-09-21T00:12:43Z");
    }

    #[test]
    fn windows_lie_inside_the_data() {
        let span = Span {
            start_ns: 1_554_076_800_000_000_000,
            end_ns: 1_554_076_800_000_000_000 + 24 * NS_PER_HOUR,
            hosts: 4,
        };
        let mut rng = Rng::new(1);
        for _ in 0..1000 {
            let w = Window::draw(&span, 12, &mut rng);
            assert!(!w.clamped);
            assert!(w.start_ns >= span.start_ns && w.end_ns <= span.end_ns);
            assert_eq!(w.end_ns - w.start_ns, 12 * NS_PER_HOUR);
            assert_eq!(w.start_ns % NS_PER_S, 0);
        }
        let w = Window::draw(&span, 24, &mut rng);
        assert!(w.clamped);
        assert_eq!((w.start_ns, w.end_ns), (span.start_ns, span.end_ns));
        let hosts = random_hosts(&span, 4, &mut rng).unwrap();
        let mut sorted = hosts.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert!(random_hosts(&span, 5, &mut rng).is_err());
    }
}
