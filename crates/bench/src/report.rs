//! The write benchmark's report: the figures, their text form in the seeds' style
//! (taosBenchmark's `insert delay` and per-thread lines, TSBS's `loaded N metrics` line),
//! and the same figures as JSON.

use std::time::Duration;

use serde::Serialize;

use crate::load::LoadResult;

/// Request latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencyMs {
    /// Fastest request.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest request.
    pub max: f64,
}

/// Everything `strata bench write` reports. `None` is "not measured" (printed `n/a`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WriteReport {
    /// `embedded`, `http://host:port` or `tcp://host:port`.
    pub target: String,
    /// False for the TCP target: rows were sent, never acknowledged.
    pub acknowledged: bool,
    /// Workload and size, one line.
    pub workload: String,
    /// Database written to.
    pub database: String,
    /// Worker threads (one connection each for a remote target).
    pub workers: usize,
    /// Rows per request asked for.
    pub batch_rows: usize,
    /// Rows acknowledged (sent, for TCP).
    pub rows: u64,
    /// Points acknowledged (sent, for TCP).
    pub points: u64,
    /// Rows the generator made (what a clean run stores).
    pub rows_generated: u64,
    /// Rows held back and sent late (out-of-order).
    pub rows_out_of_order: u64,
    /// Requests made.
    pub requests: u64,
    /// Failed requests.
    pub errors: u64,
    /// The first error messages.
    pub error_messages: Vec<String>,
    /// Lines the target rejected (embedded only; HTTP counts a rejecting request as error).
    pub bad_lines: u64,
    /// Request bodies, bytes (after gzip when used).
    pub bytes_sent: u64,
    /// Wall time of the load, seconds.
    pub elapsed_s: f64,
    /// Rows per second, all workers.
    pub rows_per_s: f64,
    /// Points per second, all workers.
    pub points_per_s: f64,
    /// Rows per second of each worker (its rows over the whole load's time).
    pub rows_per_s_per_worker: Vec<f64>,
    /// Points per second per worker, on average.
    pub points_per_s_per_worker: f64,
    /// Request latency.
    pub latency_ms: LatencyMs,
    /// The server's CPU use over the load, percent of one core (top's convention).
    pub server_cpu_percent: Option<f64>,
    /// Cores the server may use (for CPU % of its cores).
    pub server_cores: Option<usize>,
    /// The loader's CPU over the load (this process: writers, and generators unless the
    /// batches were made before the clock), percent of one core: near 100% times the
    /// cores it may use, the loader was the limit. Remote targets only.
    pub loader_cpu_percent: Option<f64>,
    /// Disk writes, MB/s over the load.
    pub disk_write_mb_per_s: Option<f64>,
    /// Where the disk figure comes from.
    pub disk_write_source: String,
    /// Server resident memory after the load, MB.
    pub rss_mb: Option<f64>,
    /// Server peak resident memory, MB.
    pub peak_rss_mb: Option<f64>,
    /// Bytes in the data directory after the load (after flush when it could be flushed).
    pub disk_bytes: Option<u64>,
    /// `disk_bytes` per point.
    pub bytes_per_point: Option<f64>,
    /// When and how `disk_bytes` was measured.
    pub disk_bytes_note: String,
    /// Further target-specific lines (flushes, WAL, compaction), printed as they are.
    pub notes: Vec<String>,
    /// Why the load's rates are not a rate (too short, or it never left the memtables):
    /// the text report then shows no rate, and `rows_per_s`/`points_per_s` are only the
    /// arithmetic of this run.
    pub rate_withheld: Option<String>,
}

/// Loads shorter than this report no rate: on a shared machine their rates are noise
/// (measured: two back-to-back 0.5-0.8 s runs of the same load differed by 20-40%).
pub const MIN_RATE_LOAD_S: f64 = 10.0;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl WriteReport {
    /// Fills the load figures from `load`.
    pub fn with_load(mut self, load: &LoadResult) -> Self {
        let secs = load.elapsed.as_secs_f64().max(1e-9);
        let l = &load.latencies;
        self.rows = load.rows;
        self.points = load.points;
        self.requests = load.requests;
        self.errors = load.errors;
        self.error_messages = load.error_messages.clone();
        self.bad_lines = load.bad_lines;
        self.elapsed_s = load.elapsed.as_secs_f64();
        self.rows_per_s = load.rows as f64 / secs;
        self.points_per_s = load.points as f64 / secs;
        self.rows_per_s_per_worker = load
            .rows_per_worker
            .iter()
            .map(|rows| *rows as f64 / secs)
            .collect();
        self.points_per_s_per_worker = self.points_per_s / load.rows_per_worker.len().max(1) as f64;
        if self.elapsed_s < MIN_RATE_LOAD_S {
            self.rate_withheld = Some(format!(
                "the load lasted {:.2} s, under {MIN_RATE_LOAD_S:.0} s: runs this short vary by \
                 tens of percent on a shared machine; load more data for a rate",
                self.elapsed_s
            ));
        }
        self.latency_ms = LatencyMs {
            min: ms(l.min()),
            avg: ms(l.mean()),
            p50: ms(l.percentile(50.0)),
            p90: ms(l.percentile(90.0)),
            p95: ms(l.percentile(95.0)),
            p99: ms(l.percentile(99.0)),
            p999: ms(l.percentile(99.9)),
            max: ms(l.max()),
        };
        self
    }

    /// The report as text, in the seeds' style.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        let verb = if self.acknowledged {
            "inserted"
        } else {
            "sent (not acknowledged)"
        };
        line(format!(
            "target: {}  workload: {}",
            self.target, self.workload
        ));
        if !self.acknowledged {
            line(
                "note: TCP line protocol is asynchronous: the server acknowledges nothing, so \
                 rates below are what the loader sent, not what the server stored"
                    .into(),
            );
        }
        let withheld = self.rate_withheld.is_some();
        for (i, rate) in self.rows_per_s_per_worker.iter().enumerate() {
            let rows = (rate * self.elapsed_s).round() as u64;
            line(if withheld {
                format!("SUCC: thread[{i}] completed total {verb} rows: {rows}")
            } else {
                format!(
                    "SUCC: thread[{i}] completed total {verb} rows: {rows}, {rate:.2} records/second"
                )
            });
        }
        line(format!(
            "SUCC: Spent {:.6} seconds to insert rows: {} with {} thread(s) into {}{}",
            self.elapsed_s,
            self.rows,
            self.workers,
            self.database,
            if withheld {
                " (no rate: see below)".to_string()
            } else {
                format!(" {:.2} records/second", self.rows_per_s)
            }
        ));
        let l = &self.latency_ms;
        line(format!(
            "SUCC: insert delay, min: {:.2}ms, avg: {:.2}ms, p90: {:.2}ms, p95: {:.2}ms, p99: {:.2}ms, max: {:.2}ms",
            l.min, l.avg, l.p90, l.p95, l.p99, l.max
        ));
        line(format!(
            "latency ms: min {:.2}, avg {:.2}, p50 {:.2}, p90 {:.2}, p95 {:.2}, p99 {:.2}, p999 {:.2}, max {:.2} ({} requests of {} rows)",
            l.min, l.avg, l.p50, l.p90, l.p95, l.p99, l.p999, l.max, self.requests, self.batch_rows
        ));
        if withheld {
            line(format!(
                "loaded {} metrics ({} rows) in {:.3}sec with {} workers (no rate: see below)",
                self.points, self.rows, self.elapsed_s, self.workers
            ));
        } else {
            line(format!(
                "loaded {} metrics in {:.3}sec with {} workers (mean rate {:.2} metrics/sec)",
                self.points, self.elapsed_s, self.workers, self.points_per_s
            ));
            line(format!(
                "loaded {} rows in {:.3}sec with {} workers (mean rate {:.2} rows/sec)",
                self.rows, self.elapsed_s, self.workers, self.rows_per_s
            ));
            line(format!(
                "per worker: {:.0} rows/s, {:.0} points/s on average",
                self.rows_per_s / self.workers.max(1) as f64,
                self.points_per_s_per_worker
            ));
        }
        line(format!(
            "errors: {} failed requests, {} bad lines; {} of {} generated rows {verb}; {} rows out of order",
            self.errors, self.bad_lines, self.rows, self.rows_generated, self.rows_out_of_order
        ));
        for message in &self.error_messages {
            line(format!("  error: {message}"));
        }
        let cpu = match (self.server_cpu_percent, self.server_cores) {
            (Some(p), Some(cores)) => format!(
                "{p:.0}% of one core ({:.0}% of {cores} cores)",
                p / cores.max(1) as f64
            ),
            (Some(p), None) => format!("{p:.0}% of one core"),
            (None, _) => "n/a (give --server-pid)".into(),
        };
        line(format!("server CPU: {cpu}"));
        if let Some(p) = self.loader_cpu_percent {
            line(format!("loader CPU: {p:.0}% of one core"));
        }
        line(format!(
            "disk write: {} ({})",
            opt(self.disk_write_mb_per_s, |v| format!("{v:.1} MB/s")),
            self.disk_write_source
        ));
        line(format!(
            "server memory: RSS {}, peak {}",
            opt(self.rss_mb, |v| format!("{v:.0} MB")),
            opt(self.peak_rss_mb, |v| format!("{v:.0} MB"))
        ));
        line(format!(
            "disk: {}, {} ({})",
            opt(self.disk_bytes, |v| format!("{:.1} MB", v as f64 / 1e6)),
            opt(self.bytes_per_point, |v| format!("{v:.3} bytes/point")),
            self.disk_bytes_note
        ));
        for note in &self.notes {
            line(note.clone());
        }
        if let Some(reason) = &self.rate_withheld {
            line(format!("rate: not reported: {reason}"));
        }
        out
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| format!("cannot encode the report: {e}"))
    }
}

fn opt<T: Copy>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "n/a".to_string(), show)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Latencies;

    fn sample() -> WriteReport {
        let load = LoadResult {
            rows: 3000,
            points: 30_000,
            requests: 3,
            elapsed: Duration::from_secs(2),
            latencies: Latencies::new(vec![
                Duration::from_millis(10),
                Duration::from_millis(20),
                Duration::from_millis(30),
            ]),
            rows_per_worker: vec![2000, 1000],
            ..LoadResult::default()
        };
        WriteReport {
            target: "http://127.0.0.1:1".into(),
            acknowledged: true,
            workload: "cpu-only".into(),
            database: "bench".into(),
            workers: 2,
            batch_rows: 1000,
            rows_generated: 3000,
            server_cpu_percent: Some(150.0),
            server_cores: Some(2),
            ..WriteReport::default()
        }
        .with_load(&load)
    }

    /// `sample()` with a 20 s load: long enough for a rate.
    fn long_sample() -> WriteReport {
        let mut report = sample();
        report.elapsed_s = 20.0;
        report.rows_per_s = 150.0;
        report.points_per_s = 1500.0;
        report.rows_per_s_per_worker = vec![100.0, 50.0];
        report.rate_withheld = None;
        report
    }

    #[test]
    fn text_in_the_seeds_style() {
        let text = long_sample().render();
        assert!(
            text.contains(
                "SUCC: thread[0] completed total inserted rows: 2000, 100.00 records/second"
            ),
            "{text}"
        );
        assert!(text.contains("SUCC: Spent 20.000000 seconds to insert rows: 3000 with 2 thread(s) into bench 150.00 records/second"), "{text}");
        assert!(text.contains("SUCC: insert delay, min: 10.00ms, avg: 20.00ms, p90: 30.00ms, p95: 30.00ms, p99: 30.00ms, max: 30.00ms"), "{text}");
        assert!(
            text.contains(
                "loaded 30000 metrics in 20.000sec with 2 workers (mean rate 1500.00 metrics/sec)"
            ),
            "{text}"
        );
        assert!(
            text.contains("server CPU: 150% of one core (75% of 2 cores)"),
            "{text}"
        );
        assert!(text.contains("disk write: n/a"), "{text}");
        assert!(!text.contains("not reported"), "{text}");
    }

    #[test]
    fn a_load_under_ten_seconds_reports_no_rate_and_says_why() {
        let report = sample();
        let reason = report.rate_withheld.clone().unwrap_or_default();
        assert!(reason.contains("lasted 2.00 s, under 10 s"), "{reason}");
        let text = report.render();
        assert!(!text.contains("records/second"), "{text}");
        assert!(!text.contains("mean rate"), "{text}");
        assert!(!text.contains("per worker:"), "{text}");
        assert!(
            text.contains(
                "loaded 30000 metrics (3000 rows) in 2.000sec with 2 workers (no rate: see below)"
            ),
            "{text}"
        );
        assert!(
            text.contains(&format!("rate: not reported: {reason}")),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["rate_withheld"], serde_json::json!(reason));
        assert!(
            long_sample()
                .to_json()
                .unwrap()
                .contains("\"rate_withheld\": null")
        );
    }

    #[test]
    fn tcp_report_says_unacknowledged() {
        let mut report = sample();
        report.acknowledged = false;
        let text = report.render();
        assert!(text.contains("asynchronous"), "{text}");
        assert!(
            text.contains("completed total sent (not acknowledged) rows: 2000"),
            "{text}"
        );
    }

    #[test]
    fn json_has_every_figure() {
        let json: serde_json::Value = serde_json::from_str(&sample().to_json().unwrap()).unwrap();
        assert_eq!(json["rows"], 3000);
        assert_eq!(json["points"], 30_000);
        assert_eq!(json["workers"], 2);
        assert_eq!(json["rows_per_s"], 1500.0);
        assert_eq!(json["points_per_s"], 15_000.0);
        assert_eq!(
            json["rows_per_s_per_worker"],
            serde_json::json!([1000.0, 500.0])
        );
        assert_eq!(json["latency_ms"]["p50"], 20.0);
        assert_eq!(json["latency_ms"]["p999"], 30.0);
        assert_eq!(json["latency_ms"]["max"], 30.0);
        assert_eq!(json["server_cpu_percent"], 150.0);
        assert!(json["disk_write_mb_per_s"].is_null());
        assert!(json["bytes_per_point"].is_null());
        assert_eq!(json["acknowledged"], true);
        for key in [
            "rss_mb",
            "peak_rss_mb",
            "disk_bytes",
            "errors",
            "elapsed_s",
            "target",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
    }
}
