//! The query sweep of `bench scale --queries TYPE,…`: for each core count k, each query type
//! run by k concurrent clients for a fixed time against the server on k cores. One
//! [`QueryScaleRow`] per (type, k); the printed table ([`render_query_table`]) and
//! `scale-queries.csv` ([`render_query_csv`]), with the efficiency qps(k) / (k x qps(1)) of
//! each type ([`query_efficiencies`]).

use serde::Serialize;

use super::{csv_field, efficiencies_of, opt};
use crate::report::MIN_RATE_LOAD_S;
use crate::stats::Latencies;

/// One query type run by `clients` clients against the server on `cores` cores.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueryScaleRow {
    /// The type's name (`double-groupby-1`, `lastpoint`, `avg-current`, …).
    #[serde(rename = "type")]
    pub query_type: String,
    /// Cores the server may run on.
    pub cores: usize,
    /// Concurrent clients (one connection each): k.
    pub clients: usize,
    /// Queries answered.
    pub queries: usize,
    /// Wall time of the run, seconds (the rate's clock).
    pub elapsed_s: f64,
    /// Queries answered per second, all clients together.
    pub queries_per_s: f64,
    /// Median answer, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Rows per answer, on average (a sanity check that the queries found data).
    pub rows_per_query: f64,
    /// Server CPU time (user + system, /proc) over the run per query answered, ms.
    pub server_cpu_ms_per_query: Option<f64>,
    /// The loader's (the clients') CPU over the run, percent of one core.
    pub loader_cpu_percent: Option<f64>,
    /// Whether the loader could run on the server's cores.
    pub loader_shares_cores: bool,
    /// Why `queries_per_s` is not a rate (the run lasted under 10 s); `None` for a rate.
    pub rate_withheld: Option<String>,
}

/// Figures of one timed run.
#[derive(Debug, Clone, Default)]
pub struct QueryRunFigures {
    /// Latency of every answer.
    pub latencies: Latencies,
    /// Rows of all answers.
    pub rows: u64,
    /// Wall time, seconds.
    pub elapsed_s: f64,
    /// The server's CPU time over the run, seconds; `None` when not readable.
    pub server_cpu_s: Option<f64>,
    /// The loader's CPU time over the run, seconds; `None` when not readable.
    pub loader_cpu_s: Option<f64>,
}

impl QueryScaleRow {
    /// The row of `query_type` run by `clients` clients against the server on `cores`
    /// cores; the rate is withheld when the run lasted under [`MIN_RATE_LOAD_S`].
    pub fn from_run(
        query_type: &str,
        cores: usize,
        clients: usize,
        loader_shares_cores: bool,
        run: &QueryRunFigures,
    ) -> Self {
        let queries = run.latencies.count();
        let secs = run.elapsed_s.max(1e-9);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let per_query = |cpu_s: f64| {
            if queries == 0 {
                None
            } else {
                Some(cpu_s * 1e3 / queries as f64)
            }
        };
        let rate_withheld = (run.elapsed_s < MIN_RATE_LOAD_S).then(|| {
            format!(
                "the run lasted {:.2} s, under {MIN_RATE_LOAD_S:.0} s: runs this short vary by \
                 tens of percent on a shared machine; give --query-seconds 10 or more for a rate",
                run.elapsed_s
            )
        });
        Self {
            query_type: query_type.to_string(),
            cores,
            clients,
            queries,
            elapsed_s: run.elapsed_s,
            queries_per_s: queries as f64 / secs,
            p50_ms: ms(run.latencies.percentile(50.0)),
            p99_ms: ms(run.latencies.percentile(99.0)),
            rows_per_query: run.rows as f64 / queries.max(1) as f64,
            server_cpu_ms_per_query: run.server_cpu_s.and_then(per_query),
            loader_cpu_percent: run.loader_cpu_s.map(|s| s / secs * 100.0),
            loader_shares_cores,
            rate_withheld,
        }
    }
}

/// Efficiency of each row: qps(k) / (k x qps(1)) among the rows of its query type (qps(1)
/// the type's row on 1 core, or its smallest k's rate per core).
pub fn query_efficiencies(rows: &[QueryScaleRow]) -> Vec<f64> {
    let mut out = vec![0.0; rows.len()];
    let mut types: Vec<&str> = Vec::new();
    for row in rows {
        if !types.contains(&row.query_type.as_str()) {
            types.push(&row.query_type);
        }
    }
    for query_type in types {
        let indexes: Vec<usize> = (0..rows.len())
            .filter(|i| rows[*i].query_type == query_type)
            .collect();
        let rates: Vec<(usize, f64)> = indexes
            .iter()
            .map(|i| (rows[*i].cores, rows[*i].queries_per_s))
            .collect();
        for (i, efficiency) in indexes.into_iter().zip(efficiencies_of(&rates)) {
            out[i] = efficiency;
        }
    }
    out
}

/// The query sweep as a table: one line per (type, cores), grouped by type in the order
/// the rows came. A row whose rate is withheld is marked `(not a rate)`; a row where the
/// loader shared the server's cores is marked `*`.
pub fn render_query_table(rows: &[QueryScaleRow]) -> String {
    let mut out = String::from(
        "Query Type | CPU Cores | Clients | Queries | Queries per Second | p50 ms | p99 ms | Server CPU ms/query | Loader CPU | Scaling Efficiency |\n\
         ---|---|---|---|---|---|---|---|---|---|\n",
    );
    let efficiencies = query_efficiencies(rows);
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let first_of = |t: &str| rows.iter().position(|r| r.query_type == t).unwrap_or(0);
    order.sort_by_key(|i| (first_of(&rows[*i].query_type), *i));
    let (mut shared, mut withheld) = (false, false);
    for i in order {
        let row = &rows[i];
        let mark = if row.loader_shares_cores {
            shared = true;
            " *"
        } else {
            ""
        };
        let not_a_rate = if row.rate_withheld.is_some() {
            withheld = true;
            " (not a rate)"
        } else {
            ""
        };
        out.push_str(&format!(
            "{} | {}{mark} | {} | {} | {:.1}{not_a_rate} | {:.2} | {:.2} | {} | {}% | {:.2} |\n",
            row.query_type,
            row.cores,
            row.clients,
            row.queries,
            row.queries_per_s,
            row.p50_ms,
            row.p99_ms,
            opt(row.server_cpu_ms_per_query, 3),
            opt(row.loader_cpu_percent, 0),
            efficiencies[i]
        ));
    }
    if shared {
        out.push_str(
            "* the clients share the server's cores at this k: they compete with it, so the \
             rate understates the server.\n",
        );
    }
    if withheld {
        out.push_str(&format!(
            "(not a rate): the run lasted under {MIN_RATE_LOAD_S:.0} s; its queries per second \
             and efficiency are this run's arithmetic, not rates: give --query-seconds 10 or \
             more\n"
        ));
    }
    out
}

/// The header of `scale-queries.csv`.
pub const QUERY_CSV_HEADER: &str = "cores,type,clients,queries,elapsed_s,queries_per_s,p50_ms,p99_ms,rows_per_query,server_cpu_ms_per_query,loader_cpu_percent,loader_shares_cores,efficiency,rate_withheld";

/// `scale-queries.csv`: [`QUERY_CSV_HEADER`], then one line per row, in the rows' order.
pub fn render_query_csv(rows: &[QueryScaleRow]) -> String {
    let mut out = format!("{QUERY_CSV_HEADER}\n");
    let field = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.4}"));
    for (row, efficiency) in rows.iter().zip(query_efficiencies(rows)) {
        out.push_str(&format!(
            "{},{},{},{},{:.3},{:.3},{:.3},{:.3},{:.1},{},{},{},{:.4},{}\n",
            row.cores,
            csv_field(&row.query_type),
            row.clients,
            row.queries,
            row.elapsed_s,
            row.queries_per_s,
            row.p50_ms,
            row.p99_ms,
            row.rows_per_query,
            field(row.server_cpu_ms_per_query),
            field(row.loader_cpu_percent),
            row.loader_shares_cores,
            efficiency,
            row.rate_withheld.is_some()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn figures(queries: u64, ms_each: u64, elapsed_s: f64) -> QueryRunFigures {
        QueryRunFigures {
            latencies: Latencies::new(
                (0..queries)
                    .map(|i| Duration::from_millis(ms_each + i % 3))
                    .collect(),
            ),
            rows: queries * 10,
            elapsed_s,
            server_cpu_s: Some(queries as f64 * 0.002),
            loader_cpu_s: Some(elapsed_s * 0.25),
        }
    }

    #[test]
    fn a_row_from_a_run() {
        let row = QueryScaleRow::from_run("lastpoint", 2, 2, false, &figures(300, 4, 10.0));
        assert_eq!(row.queries, 300);
        assert_eq!(row.queries_per_s, 30.0);
        assert_eq!(row.p50_ms, 5.0);
        assert_eq!(row.p99_ms, 6.0);
        assert_eq!(row.rows_per_query, 10.0);
        assert!((row.server_cpu_ms_per_query.unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(row.loader_cpu_percent, Some(25.0));
        assert_eq!(row.rate_withheld, None);

        let short = QueryScaleRow::from_run("lastpoint", 1, 1, true, &figures(10, 4, 1.0));
        let reason = short.rate_withheld.unwrap();
        assert!(reason.contains("lasted 1.00 s, under 10 s"), "{reason}");
        let none = QueryScaleRow::from_run("lastpoint", 1, 1, false, &QueryRunFigures::default());
        assert_eq!(none.server_cpu_ms_per_query, None);
        assert_eq!(none.queries, 0);
    }

    fn rows() -> Vec<QueryScaleRow> {
        vec![
            QueryScaleRow::from_run("double-groupby-1", 1, 1, false, &figures(100, 90, 10.0)),
            QueryScaleRow::from_run("lastpoint", 1, 1, false, &figures(1000, 9, 10.0)),
            QueryScaleRow::from_run("double-groupby-1", 2, 2, true, &figures(150, 120, 10.0)),
            QueryScaleRow::from_run("lastpoint", 2, 2, true, &figures(2000, 9, 5.0)),
        ]
    }

    #[test]
    fn efficiency_is_per_type() {
        // dg: 10 qps, then 15 qps on 2 cores: 0.75. lastpoint: 100 qps, then 400 on 2: 2.0.
        assert_eq!(query_efficiencies(&rows()), [1.0, 1.0, 0.75, 2.0]);
        assert!(query_efficiencies(&[]).is_empty());
    }

    #[test]
    fn table_groups_by_type_and_marks_what_is_not_a_rate() {
        let table = render_query_table(&rows());
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].starts_with("Query Type | CPU Cores | Clients"),
            "{table}"
        );
        assert_eq!(
            lines[2],
            "double-groupby-1 | 1 | 1 | 100 | 10.0 | 91.00 | 92.00 | 2.000 | 25% | 1.00 |"
        );
        assert!(
            lines[3].starts_with("double-groupby-1 | 2 * | 2 | 150 | 15.0 |"),
            "{table}"
        );
        assert!(lines[4].starts_with("lastpoint | 1 | 1 |"), "{table}");
        assert!(
            lines[5].starts_with("lastpoint | 2 * | 2 | 2000 | 400.0 (not a rate) |"),
            "{table}"
        );
        assert!(lines[6].contains("compete"), "{table}");
        assert!(lines[7].contains("not rates"), "{table}");
    }

    #[test]
    fn csv_has_one_line_per_row() {
        let csv = render_query_csv(&rows());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], QUERY_CSV_HEADER);
        assert!(lines[0].starts_with("cores,") && lines[0].contains(",efficiency,"));
        assert_eq!(
            lines[1],
            "1,double-groupby-1,1,100,10.000,10.000,91.000,92.000,10.0,2.0000,25.0000,false,1.0000,false"
        );
        assert!(
            lines[4].starts_with("2,lastpoint,2,2000,5.000,400.000,"),
            "{csv}"
        );
        assert!(lines[4].ends_with(",true,2.0000,true"), "{csv}");
        assert_eq!(lines.len(), 5);
    }
}
