//! The report of a mixed run: per-operation figures ([`OpResult`]) and the whole run's
//! ([`MixedReport`]), summed from the clients' tallies, as JSON. The text form is in
//! `render.rs`.

use std::time::Duration;

use serde::Serialize;

use super::ERROR_MESSAGES_KEPT;
use super::client::{ClientRun, Tally};
use super::config::{MixedConfig, Stop, WriteProtocol};
use super::mix::Operation;
use crate::report::MIN_RATE_LOAD_S;
use crate::stats::Latencies;

/// One operation's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpResult {
    /// IoTDB-benchmark's name.
    pub operation: String,
    /// Operations run.
    pub count: u64,
    /// Answered (writes: acknowledged, or handed to the TCP socket) and, where checked,
    /// right.
    pub ok: u64,
    /// Failed: an error, a non-success status, an answer that does not parse.
    pub failed: u64,
    /// Answered, but not what the generator says it must be.
    pub wrong: u64,
    /// Reads whose answer was checked and right.
    pub verified: u64,
    /// Mean latency, ms (over the answered operations).
    pub avg_ms: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// 99.9th percentile, ms.
    pub p999_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// Operations per second over the run's wall time.
    pub ops_per_s: f64,
    /// Writes: points counted (HTTP: acknowledged; TCP: visible).
    pub points: u64,
    /// Writes: counted points per second.
    pub points_per_s: f64,
    /// Reads: rows returned.
    pub rows: u64,
}

/// Everything `strata bench mixed` reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MixedReport {
    /// `http://host:port`.
    pub target: String,
    /// `http` or `tcp` (the writes'; reads are always HTTP `/sql`).
    pub protocol: String,
    /// Database.
    pub database: String,
    /// Client threads.
    pub clients: usize,
    /// Devices (series).
    pub devices: u32,
    /// Groups.
    pub groups: u32,
    /// Sensors per device.
    pub sensors: u32,
    /// Rows per INGESTION.
    pub batch_rows: u32,
    /// Time between rows, ms.
    pub step_ms: i64,
    /// Seed.
    pub seed: u64,
    /// The mix, `name=weight,…`.
    pub mix: String,
    /// When clients stopped.
    pub stop: String,
    /// Devices per read.
    pub query_devices: usize,
    /// Sensors per read.
    pub query_sensors: usize,
    /// Rows of history per device before the clock.
    pub prefill_rows: u64,
    /// Points of that history.
    pub prefill_points: u64,
    /// Wall time of the mixed phase, TCP visibility wait included, s.
    pub elapsed_s: f64,
    /// Longest wait of a client for its TCP rows to become visible, s.
    pub visibility_wait_s: f64,
    /// Visibility counts made (TCP; not timed as operations).
    pub visibility_checks: u64,
    /// Points of the mixed phase sent (HTTP: acknowledged).
    pub points_sent: u64,
    /// Points of the mixed phase visible at the end (HTTP: acknowledged).
    pub points_visible: u64,
    /// Points sent that never became visible.
    pub shortfall_points: u64,
    /// Visible points per second.
    pub write_points_per_s: f64,
    /// Reads per second.
    pub read_ops_per_s: f64,
    /// Operations per second.
    pub ops_per_s: f64,
    /// Reads checked and right.
    pub verified: u64,
    /// Answers that were wrong.
    pub wrong: u64,
    /// Operations that failed.
    pub failed: u64,
    /// The server's CPU over the mixed phase, % of one core (when on this machine).
    pub server_cpu_percent: Option<f64>,
    /// The server's peak memory, MiB.
    pub server_peak_rss_mb: Option<f64>,
    /// One entry per operation of the mix, in IoTDB-benchmark's order.
    pub operations: Vec<OpResult>,
    /// Errors counted (failed, wrong, a shortfall, failed visibility counts).
    pub error_count: u64,
    /// The first error messages.
    pub error_messages: Vec<String>,
    /// What the figures mean.
    pub notes: Vec<String>,
    /// Why the rates (ops/s, points/s) are not reported, when the mixed phase was shorter
    /// than [`MIN_RATE_LOAD_S`]; latencies and counts still are. The JSON keeps the
    /// arithmetic rates beside the reason.
    pub rate_withheld: Option<String>,
}

impl MixedReport {
    /// Sums the clients' runs.
    pub(super) fn from_runs(config: &MixedConfig, runs: &[ClientRun], elapsed: Duration) -> Self {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let sum = |f: fn(&ClientRun) -> u64| runs.iter().map(f).sum::<u64>();
        let points_visible = sum(|r| r.points_visible);
        let rows_missing = sum(|r| r.rows_missing);
        let operations: Vec<OpResult> = config
            .mix
            .operations()
            .into_iter()
            .map(|op| {
                let tallies: Vec<&Tally> = runs.iter().map(|r| &r.tallies[op.index()]).collect();
                let mut result = op_result(op, &tallies, secs);
                if op == Operation::Ingestion {
                    result.points = points_visible;
                    result.points_per_s = points_visible as f64 / secs;
                }
                result
            })
            .collect();
        let reads: u64 = operations
            .iter()
            .filter(|o| o.operation != Operation::Ingestion.name())
            .map(|o| o.count)
            .sum();
        let total: u64 = operations.iter().map(|o| o.count).sum();
        let mut error_messages: Vec<String> = runs
            .iter()
            .flat_map(|r| r.errors.iter().cloned())
            .take(ERROR_MESSAGES_KEPT)
            .collect();
        let mut error_count = sum(|r| r.error_count);
        let shortfall_points = rows_missing * u64::from(config.iot.sensors);
        if shortfall_points > 0 {
            error_count += 1;
            error_messages.insert(
                0,
                format!(
                    "{shortfall_points} points sent over TCP were not visible {:?} after the \
                     last write",
                    config.visibility_timeout
                ),
            );
        }
        MixedReport {
            target: config.target.clone(),
            protocol: match config.protocol {
                WriteProtocol::Http => "http".into(),
                WriteProtocol::Tcp => "tcp".into(),
            },
            database: config.database.clone(),
            clients: config.clients,
            devices: config.iot.devices,
            groups: config.iot.groups,
            sensors: config.iot.sensors,
            batch_rows: config.iot.batch_rows,
            step_ms: config.iot.step_ms,
            seed: config.iot.seed,
            mix: config.mix.describe(),
            stop: match config.stop {
                Stop::Ops(n) => format!("{n} operations per client"),
                Stop::Duration(d) => format!("{:.1} s", d.as_secs_f64()),
            },
            query_devices: config.query_devices,
            query_sensors: config.query_sensors,
            prefill_rows: config.prefill_rows,
            prefill_points: config.prefill_rows
                * u64::from(config.iot.devices)
                * u64::from(config.iot.sensors),
            elapsed_s: elapsed.as_secs_f64(),
            visibility_wait_s: runs
                .iter()
                .map(|r| r.visibility_wait.as_secs_f64())
                .fold(0.0, f64::max),
            visibility_checks: sum(|r| r.checks),
            points_sent: sum(|r| r.points_sent),
            points_visible,
            shortfall_points,
            write_points_per_s: points_visible as f64 / secs,
            read_ops_per_s: reads as f64 / secs,
            ops_per_s: total as f64 / secs,
            verified: operations.iter().map(|o| o.verified).sum(),
            wrong: operations.iter().map(|o| o.wrong).sum(),
            failed: operations.iter().map(|o| o.failed).sum(),
            server_cpu_percent: None,
            server_peak_rss_mb: None,
            operations,
            error_count,
            error_messages,
            notes: notes(config),
            rate_withheld: rate_withheld(elapsed),
        }
    }

    /// Whether nothing failed, nothing was wrong and every point sent became visible.
    pub fn is_clean(&self) -> bool {
        self.failed == 0 && self.wrong == 0 && self.shortfall_points == 0 && self.error_count == 0
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| e.to_string())
    }
}

/// The reason a mixed phase of `elapsed` reports no rates, as `bench write` withholds them.
fn rate_withheld(elapsed: Duration) -> Option<String> {
    let secs = elapsed.as_secs_f64();
    (secs < MIN_RATE_LOAD_S).then(|| {
        format!(
            "the mixed phase lasted {secs:.2} s, under {MIN_RATE_LOAD_S:.0} s: runs this short \
             vary by tens of percent on a shared machine; run longer (--duration 60s) for rates"
        )
    })
}

fn op_result(op: Operation, tallies: &[&Tally], secs: f64) -> OpResult {
    let latencies = Latencies::new(
        tallies
            .iter()
            .flat_map(|t| t.latencies.iter().copied())
            .collect(),
    );
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(|t| f(t)).sum::<u64>();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (ok, failed, wrong) = (sum(|t| t.ok), sum(|t| t.failed), sum(|t| t.wrong));
    let count = ok + failed + wrong;
    let points = sum(|t| t.points);
    OpResult {
        operation: op.name().to_string(),
        count,
        ok,
        failed,
        wrong,
        verified: sum(|t| t.verified),
        avg_ms: ms(latencies.mean()),
        p50_ms: ms(latencies.percentile(50.0)),
        p99_ms: ms(latencies.percentile(99.0)),
        p999_ms: ms(latencies.percentile(99.9)),
        max_ms: ms(latencies.max()),
        ops_per_s: count as f64 / secs,
        points,
        points_per_s: points as f64 / secs,
        rows: sum(|t| t.rows),
    }
}

fn notes(config: &MixedConfig) -> Vec<String> {
    let mut notes = vec![format!(
        "reads are SQL on /sql over windows of up to {} ms inside each client's visible rows; \
         every answer is checked against the generator",
        config.query_interval_ms
    )];
    notes.push(match config.protocol {
        WriteProtocol::Http => {
            "writes are HTTP /write; a write counts when the server answers 204".into()
        }
        WriteProtocol::Tcp => "writes are TCP line protocol, unacknowledged: INGESTION latency \
                               is the time to hand a batch to the socket, and a point counts \
                               only once /sql sees it (the wall time includes that wait)"
            .into(),
    });
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixed::Mix;
    use crate::mixed::test_support::config;

    fn tally(ok: u64, failed: u64, wrong: u64, latency_ms: u64, points: u64, rows: u64) -> Tally {
        Tally {
            latencies: vec![Duration::from_millis(latency_ms); (ok + wrong) as usize],
            ok,
            failed,
            wrong,
            verified: ok,
            points,
            rows,
        }
    }

    fn two_clients() -> Vec<ClientRun> {
        let mut first = ClientRun {
            tallies: vec![Tally::default(); 12],
            points_sent: 800,
            points_visible: 800,
            ..ClientRun::default()
        };
        first.tallies[0] = tally(8, 0, 0, 2, 800, 0);
        first.tallies[1] = tally(2, 1, 0, 4, 0, 2);
        first.errors.push("PRECISE_POINT failed: HTTP 500".into());
        first.error_count = 1;
        let mut second = ClientRun {
            tallies: vec![Tally::default(); 12],
            points_sent: 400,
            points_visible: 200,
            rows_missing: 2,
            ..ClientRun::default()
        };
        second.tallies[0] = tally(4, 0, 0, 1, 400, 0);
        second.tallies[8] = tally(1, 0, 1, 6, 0, 2);
        vec![first, second]
    }

    #[test]
    fn the_report_sums_clients_and_counts_only_visible_points() {
        let mut c = config();
        c.protocol = WriteProtocol::Tcp;
        c.tcp = Some("127.0.0.1:2".into());
        let report = MixedReport::from_runs(&c, &two_clients(), Duration::from_secs(2));
        assert_eq!(report.protocol, "tcp");
        assert_eq!(report.operations.len(), 12);
        let ingestion = &report.operations[0];
        assert_eq!((ingestion.count, ingestion.ok), (12, 12));
        // Sent 1200, visible 1000: throughput and the INGESTION row count visible points.
        assert_eq!(ingestion.points, 1000);
        assert_eq!(ingestion.points_per_s, 500.0);
        assert_eq!((report.points_sent, report.points_visible), (1200, 1000));
        assert_eq!(report.shortfall_points, 2 * 3);
        let precise = &report.operations[1];
        assert_eq!((precise.count, precise.ok, precise.failed), (3, 2, 1));
        assert_eq!(precise.p50_ms, 4.0);
        let latest = &report.operations[8];
        assert_eq!((latest.count, latest.wrong, latest.verified), (2, 1, 1));
        assert_eq!((report.failed, report.wrong, report.verified), (1, 1, 15));
        assert_eq!(report.read_ops_per_s, 2.5);
        assert_eq!(report.ops_per_s, 8.5);
        assert_eq!(report.prefill_points, 100 * 6 * 3);
        assert_eq!(report.error_count, 2);
        assert!(report.error_messages[0].contains("6 points sent over TCP were not visible"));
        assert!(!report.is_clean());

        let text = report.render();
        for needle in [
            "Result Matrix",
            "Latency Matrix (ms)",
            "VALUE_RANGE_QUERY_DESC",
            "writes: tcp",
            "1200 sent, 1000 visible, 6 short",
            "errors: 2",
            "PRECISE_POINT failed: HTTP 500",
        ] {
            assert!(text.contains(needle), "{needle} missing:\n{text}");
        }
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["operations"][8]["operation"], "LATEST_POINT");
        assert_eq!(json["operations"][8]["wrong"], 1);
        assert_eq!(json["shortfall_points"], 6);
        assert_eq!(json["mix"], Mix::default().describe());
    }

    #[test]
    fn only_the_mixes_operations_are_reported() {
        let mut c = config();
        c.mix = Mix::parse("ingestion=3,latest_point=1").unwrap();
        let report = MixedReport::from_runs(&c, &two_clients(), Duration::from_secs(1));
        let names: Vec<&str> = report
            .operations
            .iter()
            .map(|o| o.operation.as_str())
            .collect();
        assert_eq!(names, ["INGESTION", "LATEST_POINT"]);
        assert!(report.notes.iter().any(|n| n.contains("answers 204")));
    }

    #[test]
    fn a_run_under_ten_seconds_reports_no_rates() {
        let c = config();
        let short = MixedReport::from_runs(&c, &two_clients(), Duration::from_secs(2));
        let why = short.rate_withheld.as_deref().unwrap();
        assert!(why.contains("lasted 2.00 s, under 10 s"), "{why}");
        let text = short.render();
        assert!(
            text.contains("rates: not reported: the mixed phase lasted 2.00 s"),
            "{text}"
        );
        assert!(!text.contains("points/s  reads"), "{text}");
        // The INGESTION row shows its count and points, not its rates.
        let ingestion = text.lines().find(|l| l.starts_with("INGESTION")).unwrap();
        assert!(ingestion.contains(" - "), "{ingestion}");

        let long = MixedReport::from_runs(&c, &two_clients(), Duration::from_secs(20));
        assert_eq!(long.rate_withheld, None);
        let text = long.render();
        assert!(text.contains("writes 50 points/s"), "{text}");
    }
}
