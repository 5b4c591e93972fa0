//! The text form of a mixed run's report: a header, then IoTDB-benchmark's result and
//! latency matrices, then totals and the first errors.

use super::report::MixedReport;

impl MixedReport {
    /// The report as text: a header, then IoTDB-benchmark's result and latency matrices.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(
            "target: {}  writes: {}  database: {}",
            self.target, self.protocol, self.database
        ));
        line(format!(
            "clients: {}  devices: {} in {} groups  sensors: {}  rows per write: {} ({} points)  \
             step: {} ms  seed: {}",
            self.clients,
            self.devices,
            self.groups,
            self.sensors,
            self.batch_rows,
            u64::from(self.batch_rows) * u64::from(self.sensors),
            self.step_ms,
            self.seed
        ));
        line(format!(
            "mix: {}  stop: {}  per read: {} device(s), {} sensor(s)  prefill: {} rows per \
             device ({} points)",
            self.mix,
            self.stop,
            self.query_devices,
            self.query_sensors,
            self.prefill_rows,
            self.prefill_points
        ));
        for note in &self.notes {
            line(format!("note: {note}"));
        }
        line(String::new());
        line("Result Matrix".into());
        line(format!(
            "{:<24} {:>9} {:>9} {:>7} {:>7} {:>9} {:>11} {:>13} {:>15} {:>11}",
            "operation",
            "count",
            "ok",
            "failed",
            "wrong",
            "verified",
            "ops/s",
            "points",
            "points/s",
            "rows"
        ));
        let withheld = self.rate_withheld.is_some();
        let rate = |value: f64, decimals: usize| {
            if withheld {
                "-".to_string()
            } else {
                format!("{value:.decimals$}")
            }
        };
        for o in &self.operations {
            line(format!(
                "{:<24} {:>9} {:>9} {:>7} {:>7} {:>9} {:>11} {:>13} {:>15} {:>11}",
                o.operation,
                o.count,
                o.ok,
                o.failed,
                o.wrong,
                o.verified,
                rate(o.ops_per_s, 1),
                o.points,
                rate(o.points_per_s, 0),
                o.rows
            ));
        }
        line(String::new());
        line("Latency Matrix (ms)".into());
        line(format!(
            "{:<24} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "operation", "avg", "p50", "p99", "p999", "max"
        ));
        for o in &self.operations {
            line(format!(
                "{:<24} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}",
                o.operation, o.avg_ms, o.p50_ms, o.p99_ms, o.p999_ms, o.max_ms
            ));
        }
        line(String::new());
        match &self.rate_withheld {
            None => line(format!(
                "elapsed {:.2} s (TCP visibility wait {:.2} s, {} counts)  writes {:.0} \
                 points/s  reads {:.1} ops/s  all {:.1} ops/s",
                self.elapsed_s,
                self.visibility_wait_s,
                self.visibility_checks,
                self.write_points_per_s,
                self.read_ops_per_s,
                self.ops_per_s
            )),
            Some(why) => line(format!(
                "elapsed {:.2} s (TCP visibility wait {:.2} s, {} counts)  rates: not \
                 reported: {why}",
                self.elapsed_s, self.visibility_wait_s, self.visibility_checks
            )),
        }
        line(format!(
            "points: {} sent, {} visible, {} short  answers: {} verified, {} wrong  \
             operations failed: {}",
            self.points_sent,
            self.points_visible,
            self.shortfall_points,
            self.verified,
            self.wrong,
            self.failed
        ));
        let cpu = self
            .server_cpu_percent
            .map_or("n/a".to_string(), |p| format!("{p:.0}%"));
        let rss = self
            .server_peak_rss_mb
            .map_or("n/a".to_string(), |m| format!("{m:.0} MiB"));
        line(format!("server: cpu {cpu}, peak memory {rss}"));
        if self.error_count > 0 {
            line(format!("errors: {}", self.error_count));
            for message in &self.error_messages {
                line(format!("  {message}"));
            }
        }
        out
    }
}
