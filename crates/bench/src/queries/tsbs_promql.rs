//! TSBS devops queries on `cpu` in PromQL, worded as TSBS's VictoriaMetrics query generator
//! (`cmd/tsbs_generate_queries/databases/victoriametrics/devops.go`, timescale/tsbs@37fced7)
//! words them, and sent as the request `tsbs_run_queries_victoriametrics` sends:
//! `GET /api/v1/query_range?end=E&query=Q&start=S&step=STEP` (Go's `url.Values.Encode`:
//! keys sorted, values encoded as `url.QueryEscape` does, `start`/`end` in whole seconds).
//!
//! Why a port rather than TSBS itself: `strata bench compare` runs the same drawn queries
//! (same hosts, same windows) as InfluxQL on InfluxDB and Strata and as PromQL on
//! VictoriaMetrics and Strata, so the languages compare on one set of random choices. The
//! hosts and windows are the ones [`super::tsbs::query`] drew; only the wording is TSBS's:
//! - a selector of one metric is `cpu_usage_user{hosts}` (`{}` for no hosts); of several,
//!   `{__name__=~'cpu_(usage_user|usage_system)', hosts}` (no `, hosts` for no hosts); one
//!   host is `hostname='host_5'`, several `hostname=~'host_5|host_9'`, in drawn order;
//! - `single-groupby-M-H-T`: `max(max_over_time(SEL[1m])) by (__name__)`, step 60;
//! - `cpu-max-all-H`: `max(max_over_time(SEL_all[1h])) by (__name__)`, step 3600;
//! - `double-groupby-M`: `avg(avg_over_time(SEL[1h])) by (__name__, hostname)`, step 3600.
//!
//! TSBS has no PromQL for `high-cpu-*`, `lastpoint` and `groupby-orderby-limit` (its
//! generator panics on them): [`supports`] says so and [`translate`] refuses them.

use super::tsbs::FIELD_COUNT;
use super::{Query, QueryType};
use crate::cpu_only::FIELDS;
use crate::http::go_query_escape;

const NS_PER_S: i64 = 1_000_000_000;

/// Whether TSBS words `query_type` in PromQL.
pub fn supports(query_type: QueryType) -> bool {
    matches!(
        query_type,
        QueryType::SingleGroupby { .. }
            | QueryType::CpuMaxAll { .. }
            | QueryType::DoubleGroupby { .. }
    )
}

/// Why a type has no PromQL form (for the report's notes).
pub fn unsupported_reason(query_type: QueryType) -> String {
    format!(
        "TSBS has no PromQL for {} (its VictoriaMetrics generator supports single-groupby, \
         cpu-max-all and double-groupby only)",
        query_type.name()
    )
}

/// The PromQL expression of `query` (a query of `query_type` drawn by the SQL generator)
/// and its step in seconds, as TSBS's VictoriaMetrics generator writes them.
pub fn expression(query_type: QueryType, query: &Query) -> Result<(String, u32), String> {
    match query_type {
        QueryType::SingleGroupby { metrics, .. } => Ok((
            format!(
                "max(max_over_time({}[1m])) by (__name__)",
                selector(metrics, &query.hosts)
            ),
            60,
        )),
        QueryType::CpuMaxAll { .. } => Ok((
            format!(
                "max(max_over_time({}[1h])) by (__name__)",
                selector(FIELD_COUNT, &query.hosts)
            ),
            3600,
        )),
        QueryType::DoubleGroupby { metrics } => Ok((
            format!(
                "avg(avg_over_time({}[1h])) by (__name__, hostname)",
                selector(metrics, &[])
            ),
            3600,
        )),
        other => Err(unsupported_reason(other)),
    }
}

/// The request target TSBS sends for `query`: `/api/v1/query_range?end=…&query=…&start=…&step=…`.
pub fn request_target(query_type: QueryType, query: &Query) -> Result<String, String> {
    let (expression, step) = expression(query_type, query)?;
    let (Some(start), Some(end)) = (query.start_ns, query.end_ns) else {
        return Err(format!(
            "a {} query has no time window to write in PromQL",
            query_type.name()
        ));
    };
    Ok(format!(
        "/api/v1/query_range?end={}&query={}&start={}&step={step}",
        end.div_euclid(NS_PER_S),
        go_query_escape(&expression),
        start.div_euclid(NS_PER_S),
    ))
}

/// `query` with its statement replaced by the PromQL request target (hosts, window and the
/// rest unchanged).
pub fn translate(query_type: QueryType, query: &Query) -> Result<Query, String> {
    Ok(Query {
        sql: request_target(query_type, query)?,
        ..query.clone()
    })
}

/// TSBS's `getSelectClause` for the first `metrics` cpu fields and `hosts`.
fn selector(metrics: usize, hosts: &[u32]) -> String {
    let fields = &FIELDS[..metrics.clamp(1, FIELD_COUNT)];
    let hosts = host_matcher(hosts);
    if let [field] = fields {
        return format!("cpu_{field}{{{hosts}}}");
    }
    let names = fields.join("|");
    if hosts.is_empty() {
        format!("{{__name__=~'cpu_({names})'}}")
    } else {
        format!("{{__name__=~'cpu_({names})', {hosts}}}")
    }
}

/// TSBS's `getHostClause`: empty, `hostname='host_5'`, or `hostname=~'host_5|host_9'`.
fn host_matcher(hosts: &[u32]) -> String {
    match hosts {
        [] => String::new(),
        [host] => format!("hostname='host_{host}'"),
        _ => {
            let names: Vec<String> = hosts.iter().map(|h| format!("host_{h}")).collect();
            format!("hostname=~'{}'", names.join("|"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::go_query_unescape as decode;
    use crate::queries::{Dataset, generate, tsbs};

    /// Requests captured from TSBS itself (see the fixture's header).
    const FIXTURE: &str =
        include_str!("../../../strata/tests/fixtures/tsbs_victoriametrics_queries.txt");

    /// The value of `key` in a request target's query string, decoded.
    fn param(target: &str, key: &str) -> String {
        let query = target.split_once('?').unwrap().1;
        let value = query
            .split('&')
            .find_map(|pair| pair.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key} in {target}"));
        decode(value)
    }

    /// The random parts of a TSBS request (hosts in order, window), as a drawn query.
    fn drawn(target: &str) -> Query {
        let expression = param(target, "query");
        let hosts = expression
            .split("host_")
            .skip(1)
            .map(|rest| {
                let end = rest.find(['\'', '|']).unwrap();
                rest[..end].parse().unwrap()
            })
            .collect();
        let seconds = |key| param(target, key).parse::<i64>().unwrap() * NS_PER_S;
        Query {
            sql: String::new(),
            start_ns: Some(seconds("start")),
            end_ns: Some(seconds("end")),
            hosts,
            clamped: false,
            streamed: false,
        }
    }

    /// Every request of the fixture, its hosts and window taken as drawn, is rendered to the
    /// very same request target, byte for byte.
    #[test]
    fn targets_match_tsbs_requests_exactly() {
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
            assert!(supports(t), "{}", t.name());
            assert_eq!(
                request_target(t, &drawn(line)).unwrap(),
                line,
                "{}",
                t.name()
            );
            if !seen.contains(&t) {
                seen.push(t);
            }
            requests += 1;
        }
        assert_eq!(requests, 33);
        assert_eq!(seen.len(), 11);
    }

    /// One seed's queries, pinned: a change of wording, hosts or windows shows here.
    #[test]
    fn exact_targets_for_seed_123() {
        let start_ns = 1_451_606_400 * NS_PER_S; // 2016-01-01T00:00:00Z
        let dataset = Dataset::CpuOnly {
            start_ns,
            end_ns: start_ns + 24 * 3_600 * NS_PER_S,
            hosts: 100,
        };
        let first = |name: &str| {
            let t = tsbs::parse(name).unwrap();
            let sql = generate(&dataset, t, 1, 123).unwrap().remove(0);
            let promql = translate(t, &sql).unwrap();
            assert_eq!(
                (promql.start_ns, promql.end_ns, &promql.hosts),
                (sql.start_ns, sql.end_ns, &sql.hosts),
                "the random choices are the SQL query's"
            );
            promql.sql
        };
        assert_eq!(
            first("single-groupby-1-1-1"),
            "/api/v1/query_range?end=1451610721&query=max%28max_over_time%28cpu_usage_user%7Bhostname%3D%27host_35%27%7D%5B1m%5D%29%29+by+%28__name__%29&start=1451607121&step=60"
        );
        assert_eq!(
            first("single-groupby-5-1-12"),
            "/api/v1/query_range?end=1451666668&query=max%28max_over_time%28%7B__name__%3D~%27cpu_%28usage_user%7Cusage_system%7Cusage_idle%7Cusage_nice%7Cusage_iowait%29%27%2C+hostname%3D%27host_2%27%7D%5B1m%5D%29%29+by+%28__name__%29&start=1451623468&step=60"
        );
        assert_eq!(
            first("cpu-max-all-8"),
            "/api/v1/query_range?end=1451636907&query=max%28max_over_time%28%7B__name__%3D~%27cpu_%28usage_user%7Cusage_system%7Cusage_idle%7Cusage_nice%7Cusage_iowait%7Cusage_irq%7Cusage_softirq%7Cusage_steal%7Cusage_guest%7Cusage_guest_nice%29%27%2C+hostname%3D~%27host_10%7Chost_1%7Chost_4%7Chost_93%7Chost_42%7Chost_59%7Chost_62%7Chost_7%27%7D%5B1h%5D%29%29+by+%28__name__%29&start=1451608107&step=3600"
        );
        assert_eq!(
            first("double-groupby-1"),
            "/api/v1/query_range?end=1451676504&query=avg%28avg_over_time%28cpu_usage_user%7B%7D%5B1h%5D%29%29+by+%28__name__%2C+hostname%29&start=1451633304&step=3600"
        );
    }

    #[test]
    fn expressions_read_as_tsbs_writes_them() {
        let query = |hosts: Vec<u32>| Query {
            sql: String::new(),
            start_ns: Some(0),
            end_ns: Some(3_600 * NS_PER_S),
            hosts,
            clamped: false,
            streamed: false,
        };
        let single = QueryType::SingleGroupby {
            metrics: 1,
            hosts: 1,
            hours: 1,
        };
        assert_eq!(
            expression(single, &query(vec![5])).unwrap(),
            (
                "max(max_over_time(cpu_usage_user{hostname='host_5'}[1m])) by (__name__)".into(),
                60
            )
        );
        let five = QueryType::SingleGroupby {
            metrics: 5,
            hosts: 2,
            hours: 1,
        };
        assert_eq!(
            expression(five, &query(vec![5, 9])).unwrap().0,
            "max(max_over_time({__name__=~'cpu_(usage_user|usage_system|usage_idle|usage_nice|\
             usage_iowait)', hostname=~'host_5|host_9'}[1m])) by (__name__)"
        );
        assert_eq!(
            expression(QueryType::DoubleGroupby { metrics: 5 }, &query(vec![]))
                .unwrap()
                .0,
            "avg(avg_over_time({__name__=~'cpu_(usage_user|usage_system|usage_idle|usage_nice|\
             usage_iowait)'}[1h])) by (__name__, hostname)"
        );
        assert_eq!(
            request_target(single, &query(vec![5])).unwrap(),
            "/api/v1/query_range?end=3600&query=max%28max_over_time%28cpu_usage_user%7B\
             hostname%3D%27host_5%27%7D%5B1m%5D%29%29+by+%28__name__%29&start=0&step=60"
        );
    }

    #[test]
    fn types_without_promql_are_refused_with_the_reason() {
        let unbounded = Query {
            sql: String::new(),
            start_ns: None,
            end_ns: None,
            hosts: Vec::new(),
            clamped: false,
            streamed: false,
        };
        for t in [
            QueryType::Lastpoint,
            QueryType::GroupbyOrderbyLimit,
            QueryType::HighCpu { hosts: None },
            QueryType::HighCpu { hosts: Some(1) },
        ] {
            assert!(!supports(t));
            let err = translate(t, &unbounded).unwrap_err();
            assert!(err.contains("TSBS has no PromQL"), "{err}");
        }
        let supported = tsbs::all_types()
            .into_iter()
            .filter(|t| supports(*t))
            .count();
        assert_eq!(supported, 13);
        let no_window = request_target(QueryType::DoubleGroupby { metrics: 1 }, &unbounded);
        assert!(no_window.unwrap_err().contains("no time window"));
    }
}
