//! Seed 004's mixed read/write workload: IoTDB-benchmark's operations run by N clients
//! against a server, writes over HTTP `/write` or the plain TCP listener, reads as SQL on
//! HTTP `/sql`, every answer checked against the generator ([`crate::iot`]).
//!
//! Clients. Client `i` of `N` owns devices `i, i+N, i+2N, …` (IoTDB-benchmark's
//! `IS_CLIENT_BIND`): it prefills their history over HTTP, then, once every client is ready,
//! loops until its operation count or the run's duration is spent. Each turn it draws the
//! next operation from the mix with its own seeded generator, runs it and times it.
//!
//! - INGESTION: `batch_rows` rows of one of its devices (round robin), the next rows in
//!   time. HTTP: a write counts when the server answers 204. TCP has no answer: the latency
//!   is the time to hand the batch to the socket, and the rows count only once a read sees
//!   them (below).
//! - Reads pick devices among the client's own and a window inside the rows known to be
//!   visible, so each answer is known in advance: points and the latest row are compared
//!   value by value, row counts and `count` aggregates exactly (see [`Expect`]).
//!
//! TCP visibility. Every [`CHECK_EVERY`] operations a TCP client asks, per device, for the
//! count of rows before the boundary it had sent at the previous check; when all are there
//! the reads may use them. At the end it closes its connection and waits (bounded by
//! `visibility_timeout`) until a `/sql` count of every device equals the rows it sent. The
//! run's wall time includes that wait, so the write throughput is of visible points, and
//! rows that never show up are reported as a shortfall, never counted.
//!
//! The SQL of each operation and the default mix are in `docs/bench-mixed.md`.

mod answer;
mod client;
mod config;
mod mix;
mod plan;
mod render;
mod report;
mod timestamps;
mod visibility;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::Instant;

pub use answer::{Answer, Verdict, check, parse_answer};
pub use config::{MixedConfig, Stop, WriteProtocol};
pub use mix::{Mix, Operation};
pub use plan::{DeviceRows, Expect, Order, Read, ReadTarget, plan_read};
pub use report::{MixedReport, OpResult};
pub use timestamps::{parse_rfc3339_ns, rfc3339_ms, time_literal};

use crate::stats::Process;
use client::{Client, ClientRun};

/// A TCP client checks which of its rows are visible every this many operations.
pub const CHECK_EVERY: u64 = 64;
/// Error messages kept per run (the first ones); the rest are only counted.
const ERROR_MESSAGES_KEPT: usize = 10;

/// Runs the workload of `config` and reports it. Errors only when the run could not
/// happen (bad settings, an unreachable server, a failed prefill); failed or wrong
/// operations are in the report.
pub fn run(config: &MixedConfig) -> Result<MixedReport, String> {
    config.validate()?;
    // Checked here, not in `validate`: a caller validates the flags before it starts the
    // server whose listener this is.
    if config.protocol == WriteProtocol::Tcp && config.tcp.is_none() {
        return Err("TCP writes need the server's TCP listener address".into());
    }
    let abort = AtomicBool::new(false);
    let barrier = Barrier::new(config.clients + 1);
    let setup_error: Mutex<Option<String>> = Mutex::new(None);
    let server = config.server_pid.map(Process::Pid);
    let (runs, elapsed, cpu) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.clients)
            .map(|index| {
                let (abort, barrier, setup_error) = (&abort, &barrier, &setup_error);
                scope.spawn(move || {
                    let prepared = Client::prepare(config, index);
                    if let Err(e) = &prepared {
                        abort.store(true, Ordering::Relaxed);
                        if let Ok(mut slot) = setup_error.lock() {
                            slot.get_or_insert_with(|| format!("client {index}: {e}"));
                        }
                    }
                    // Every client waits here, failed or not, so the others are released.
                    barrier.wait();
                    match prepared {
                        Ok(client) if !abort.load(Ordering::Relaxed) => Some(client.run(abort)),
                        _ => None,
                    }
                })
            })
            .collect();
        barrier.wait();
        let cpu_before = server.and_then(|p| p.cpu_time());
        let started = Instant::now();
        let runs: Vec<Option<ClientRun>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect();
        let elapsed = started.elapsed();
        let cpu = cpu_before
            .zip(server.and_then(|p| p.cpu_time()))
            .map(|(a, b)| b.saturating_sub(a));
        (runs, elapsed, cpu)
    });
    if let Some(e) = setup_error.lock().ok().and_then(|mut s| s.take()) {
        return Err(e);
    }
    let runs: Vec<ClientRun> = runs
        .into_iter()
        .collect::<Option<_>>()
        .ok_or("a client thread stopped before reporting")?;
    let mut report = MixedReport::from_runs(config, &runs, elapsed);
    let secs = elapsed.as_secs_f64().max(1e-9);
    report.server_cpu_percent = cpu.map(|c| c.as_secs_f64() / secs * 100.0);
    report.server_peak_rss_mb = server
        .and_then(|p| p.peak_rss_bytes())
        .map(|b| b as f64 / (1u64 << 20) as f64);
    Ok(report)
}

#[cfg(test)]
mod test_support {
    use super::MixedConfig;
    use crate::iot::IotConfig;

    /// A small run: 6 devices of 3 sensors in 2 groups, 3 clients, 100 rows of history.
    pub(super) fn config() -> MixedConfig {
        let mut config = MixedConfig::new("127.0.0.1:1");
        config.iot = IotConfig {
            groups: 2,
            devices: 6,
            sensors: 3,
            batch_rows: 4,
            ..IotConfig::default()
        };
        config.clients = 3;
        config.prefill_rows = 100;
        config.query_interval_ms = 30_000;
        config.group_by_ms = 20_000;
        config
    }
}
