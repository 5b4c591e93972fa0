//! The query benchmark's report: one line per (query type, clients) in the seeds' style
//! (TSBS's min/median/mean/max per query type, seed 001's requests per minute), and the
//! same figures as JSON.

use serde::Serialize;

use crate::query_run::TypeRun;

/// The figures of one query type at one client count.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueryResult {
    /// The type's name (`single-groupby-1-1-1`, `avg-current`, …).
    #[serde(rename = "type")]
    pub query_type: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Queries completed.
    pub count: usize,
    /// Fastest answer, ms.
    pub min_ms: f64,
    /// Median answer, ms.
    pub median_ms: f64,
    /// Mean answer, ms.
    pub mean_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Slowest answer, ms.
    pub max_ms: f64,
    /// Queries answered per minute, all clients together (seed 001's rpm).
    pub queries_per_minute: f64,
    /// Rows per answer, on average (a sanity check of the result size).
    pub rows_per_query: f64,
    /// Fewest rows of an answer.
    pub rows_min: u64,
    /// Most rows of an answer.
    pub rows_max: u64,
    /// Rows of all answers.
    pub rows_total: u64,
    /// Rows received per second over the run (the figure of `select-all`).
    pub rows_per_s: f64,
    /// Wall time of the run, seconds.
    pub elapsed_s: f64,
}

impl QueryResult {
    /// The figures of `run` of `query_type`.
    pub fn from_run(query_type: &str, run: &TypeRun) -> Self {
        let l = &run.latencies;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let secs = run.elapsed.as_secs_f64().max(1e-9);
        let rows_total: u64 = run.rows.iter().sum();
        Self {
            query_type: query_type.to_string(),
            clients: run.clients,
            count: l.count(),
            min_ms: ms(l.min()),
            median_ms: ms(l.percentile(50.0)),
            mean_ms: ms(l.mean()),
            p99_ms: ms(l.percentile(99.0)),
            max_ms: ms(l.max()),
            queries_per_minute: l.count() as f64 / secs * 60.0,
            rows_per_query: rows_total as f64 / run.rows.len().max(1) as f64,
            rows_min: run.rows.iter().copied().min().unwrap_or(0),
            rows_max: run.rows.iter().copied().max().unwrap_or(0),
            rows_total,
            rows_per_s: rows_total as f64 / secs,
            elapsed_s: run.elapsed.as_secs_f64(),
        }
    }
}

/// Everything `strata bench query` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct QueryReport {
    /// `embedded (…)` or `http://host:port`.
    pub target: String,
    /// Workload and size, one line.
    pub workload: String,
    /// Database queried.
    pub database: String,
    /// Queries generated per type (fewer run when the time budget ran out).
    pub queries_per_type: usize,
    /// Seed of the queries' random hosts and windows.
    pub seed: u64,
    /// HTTP answer format (`select-all` always streams Arrow); empty when embedded.
    pub format: String,
    /// The statements' language: `sql`, or `influxql` (TSBS's wording, on `/query`).
    pub protocol: String,
    /// How the data got there (loaded, flushed, compacted), windows clamped, and the like.
    pub notes: Vec<String>,
    /// One entry per (type, clients).
    pub results: Vec<QueryResult>,
}

impl QueryReport {
    /// The report as text: a header, then a table with one line per (type, clients).
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(
            "target: {}  workload: {}  database: {}",
            self.target, self.workload, self.database
        ));
        let format = if self.format.is_empty() {
            String::new()
        } else {
            format!(", answers as {}", self.format)
        };
        let protocol = match self.protocol.as_str() {
            "" => String::new(),
            "influxql" => ", InfluxQL (TSBS's wording) on /query".to_string(),
            "sql" => ", SQL".to_string(),
            other => format!(", {other}"),
        };
        line(format!(
            "queries: up to {} per type and client count, seed {}{protocol}{format}",
            self.queries_per_type, self.seed
        ));
        for note in &self.notes {
            line(format!("note: {note}"));
        }
        line(format!(
            "{:<26} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12} {:>11} {:>12}",
            "query type",
            "clients",
            "count",
            "min ms",
            "median ms",
            "mean ms",
            "p99 ms",
            "max ms",
            "queries/min",
            "rows/query",
            "rows/s"
        ));
        for r in &self.results {
            line(format!(
                "{:<26} {:>7} {:>6} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>12.1} {:>11.1} {:>12.0}",
                r.query_type,
                r.clients,
                r.count,
                r.min_ms,
                r.median_ms,
                r.mean_ms,
                r.p99_ms,
                r.max_ms,
                r.queries_per_minute,
                r.rows_per_query,
                r.rows_per_s
            ));
        }
        out
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| format!("cannot encode the report: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::stats::Latencies;

    fn run() -> TypeRun {
        TypeRun {
            latencies: Latencies::new((1..=4).map(Duration::from_millis).collect()),
            rows: vec![60, 60, 61, 60],
            elapsed: Duration::from_secs(2),
            clients: 2,
        }
    }

    #[test]
    fn figures_from_a_run() {
        let r = QueryResult::from_run("single-groupby-1-1-1", &run());
        assert_eq!(r.count, 4);
        assert_eq!(r.min_ms, 1.0);
        assert_eq!(r.median_ms, 2.0);
        assert_eq!(r.mean_ms, 2.5);
        assert_eq!(r.p99_ms, 4.0);
        assert_eq!(r.max_ms, 4.0);
        assert_eq!(r.queries_per_minute, 120.0);
        assert_eq!(r.rows_per_query, 60.25);
        assert_eq!((r.rows_min, r.rows_max, r.rows_total), (60, 61, 241));
        assert_eq!(r.rows_per_s, 120.5);
    }

    #[test]
    fn text_and_json() {
        let report = QueryReport {
            target: "embedded".into(),
            workload: "cpu-only".into(),
            database: "bench".into(),
            queries_per_type: 4,
            seed: 7,
            notes: vec!["flushed".into()],
            results: vec![QueryResult::from_run("lastpoint", &run())],
            ..QueryReport::default()
        };
        let text = report.render();
        assert!(text.contains("note: flushed"), "{text}");
        let influxql = QueryReport {
            protocol: "influxql".into(),
            format: "json".into(),
            ..report.clone()
        };
        let header = influxql.render();
        assert!(
            header.contains("seed 7, InfluxQL (TSBS's wording) on /query, answers as json"),
            "{header}"
        );
        let row = text.lines().last().unwrap();
        assert!(row.starts_with("lastpoint"), "{text}");
        assert!(row.contains("120.0"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["results"][0]["type"], "lastpoint");
        assert_eq!(json["results"][0]["clients"], 2);
        assert_eq!(json["results"][0]["median_ms"], 2.0);
        assert_eq!(json["seed"], 7);
    }
}
