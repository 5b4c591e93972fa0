//! One client of a mixed run: it prefills its own devices' history, then runs operations
//! drawn from the mix (INGESTION over HTTP or TCP, reads as SQL on `/sql`), timing each and
//! checking every answer; what it saw is a [`ClientRun`] of per-operation [`Tally`]s.

use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::answer::{Verdict, check, parse_answer};
use super::config::{MixedConfig, Stop, WriteProtocol};
use super::mix::Operation;
use super::plan::{DeviceRows, ReadTarget, plan_read};
use super::visibility::connect_tcp;
use super::{CHECK_EVERY, ERROR_MESSAGES_KEPT};
use crate::http::{BodyEncoding, HttpClient, percent_encode};
use crate::iot::device_name;
use crate::rng::Rng;

/// Rows of one device per prefill request (prefill is not measured: larger is faster).
const PREFILL_CHUNK_ROWS: u64 = 1000;

/// Per operation, what one client saw.
#[derive(Debug, Clone, Default)]
pub(super) struct Tally {
    pub(super) latencies: Vec<Duration>,
    pub(super) ok: u64,
    pub(super) failed: u64,
    pub(super) wrong: u64,
    pub(super) verified: u64,
    pub(super) points: u64,
    pub(super) rows: u64,
}

/// What one client did.
#[derive(Debug, Clone, Default)]
pub(super) struct ClientRun {
    pub(super) tallies: Vec<Tally>,
    pub(super) points_sent: u64,
    pub(super) points_visible: u64,
    pub(super) rows_missing: u64,
    pub(super) checks: u64,
    pub(super) visibility_wait: Duration,
    pub(super) errors: Vec<String>,
    pub(super) error_count: u64,
}

/// A client thread: its devices, connections and tallies.
pub(super) struct Client<'a> {
    pub(super) config: &'a MixedConfig,
    rng: Rng,
    pub(super) http: HttpClient,
    pub(super) tcp: Option<TcpStream>,
    pub(super) devices: Vec<DeviceRows>,
    next_write: usize,
    write_path: String,
    pub(super) sql_path: String,
    pub(super) body: Vec<u8>,
    pub(super) run: ClientRun,
}

impl<'a> Client<'a> {
    /// Connects, and writes the history of the client's devices (before the clock).
    pub(super) fn prepare(config: &'a MixedConfig, index: usize) -> Result<Self, String> {
        let database = percent_encode(&config.database);
        let mut client = Client {
            config,
            // Each client its own stream, fixed by the seed and its index, so a run's
            // operations and windows repeat whatever the threads' interleaving.
            rng: Rng::new(config.iot.seed ^ (index as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407)),
            http: HttpClient::new(&config.http, config.request_timeout),
            tcp: None,
            devices: (index..config.iot.devices as usize)
                .step_by(config.clients)
                .map(|id| DeviceRows {
                    id: id as u32,
                    sent: 0,
                    visible: 0,
                    pending: 0,
                    above: vec![0; config.iot.sensors as usize],
                })
                .collect(),
            next_write: 0,
            write_path: format!("{}/write?db={database}&precision=ms", config.base_path),
            sql_path: format!("{}/sql?db={database}&format=json", config.base_path),
            body: Vec::new(),
            run: ClientRun {
                tallies: vec![Tally::default(); Operation::ALL.len()],
                ..ClientRun::default()
            },
        };
        client.http.connect().map_err(|e| e.to_string())?;
        client.prefill()?;
        if config.protocol == WriteProtocol::Tcp {
            client.tcp = Some(connect_tcp(config.tcp.as_deref().unwrap_or_default())?);
        }
        Ok(client)
    }

    fn prefill(&mut self) -> Result<(), String> {
        for index in 0..self.devices.len() {
            while self.devices[index].sent < self.config.prefill_rows {
                let rows =
                    PREFILL_CHUNK_ROWS.min(self.config.prefill_rows - self.devices[index].sent);
                self.post_rows(index, rows).map_err(|e| {
                    format!(
                        "prefill of {} failed: {e}",
                        device_name(self.devices[index].id)
                    )
                })?;
                self.advance(index, rows);
                self.devices[index].visible = self.devices[index].sent;
                self.devices[index].pending = self.devices[index].sent;
            }
        }
        Ok(())
    }

    /// Puts the next `rows` rows of device `index` in the request body.
    fn build(&mut self, index: usize, rows: u64) {
        let device = &self.devices[index];
        self.body.clear();
        self.config
            .iot
            .write_rows(device.id, device.sent, rows, &mut self.body);
    }

    /// `POST /write` of the next `rows` rows of device `index`; Ok on 204.
    fn post_rows(&mut self, index: usize, rows: u64) -> Result<(), String> {
        self.build(index, rows);
        self.post_body()
    }

    /// `POST /write` of the body built; Ok on 204.
    fn post_body(&mut self) -> Result<(), String> {
        let response = self
            .http
            .post(&self.write_path, &self.body, BodyEncoding::Text)
            .map_err(|e| e.to_string())?;
        if response.status == 204 {
            return Ok(());
        }
        Err(http_failure(response.status, &response.body))
    }

    /// Records that the next `rows` rows of device `index` were sent.
    fn advance(&mut self, index: usize, rows: u64) {
        let iot = &self.config.iot;
        let device = &mut self.devices[index];
        for row in device.sent..device.sent + rows {
            for sensor in 0..iot.sensors {
                if iot.value_centi(device.id, sensor, row) > self.config.lower_value_centi {
                    device.above[sensor as usize] += 1;
                }
            }
        }
        device.sent += rows;
    }

    /// Runs operations until the stop condition (or an abort), then, over TCP, waits for
    /// the rows to become visible.
    pub(super) fn run(mut self, abort: &AtomicBool) -> ClientRun {
        let started = Instant::now();
        let mut done = 0u64;
        loop {
            let finished = match self.config.stop {
                Stop::Ops(n) => done >= n,
                Stop::Duration(d) => started.elapsed() >= d,
            };
            if finished || abort.load(Ordering::Relaxed) {
                break;
            }
            let op = self.config.mix.draw(&mut self.rng);
            if op == Operation::Ingestion {
                self.ingest();
            } else {
                self.read(op);
            }
            done += 1;
            if self.config.protocol == WriteProtocol::Tcp && done.is_multiple_of(CHECK_EVERY) {
                self.check_visibility();
            }
        }
        if self.config.protocol == WriteProtocol::Tcp {
            self.wait_visible();
        }
        let sensors = u64::from(self.config.iot.sensors);
        let prefill = self.config.prefill_rows;
        for device in &self.devices {
            self.run.points_sent += (device.sent - prefill) * sensors;
            self.run.points_visible += (device.visible - prefill) * sensors;
            self.run.rows_missing += device.sent - device.visible;
        }
        self.run
    }

    pub(super) fn note_error(&mut self, message: String) {
        self.run.error_count += 1;
        if self.run.errors.len() < ERROR_MESSAGES_KEPT {
            self.run.errors.push(message);
        }
    }

    /// One INGESTION: the next batch of the next device (round robin).
    fn ingest(&mut self) {
        let index = self.next_write;
        self.next_write = (self.next_write + 1) % self.devices.len();
        let rows = u64::from(self.config.iot.batch_rows);
        // The batch is made before the clock, as IoTDB-benchmark's come ready from its
        // data workload: the latency is the server's (or the socket's), not the generator's.
        self.build(index, rows);
        let started = Instant::now();
        let result = match self.config.protocol {
            WriteProtocol::Http => self.post_body(),
            WriteProtocol::Tcp => self.send_body(),
        };
        let latency = started.elapsed();
        let tally = &mut self.run.tallies[Operation::Ingestion.index()];
        match result {
            Ok(()) => {
                tally.ok += 1;
                tally.points += self.config.iot.points_per_batch();
                tally.latencies.push(latency);
                // A failed batch is not advanced past: the next write of the device sends
                // the same rows again, which overwrite whatever part arrived.
                self.advance(index, rows);
                if self.config.protocol == WriteProtocol::Http {
                    self.devices[index].visible = self.devices[index].sent;
                }
            }
            Err(e) => {
                tally.failed += 1;
                self.note_error(format!("INGESTION: {e}"));
            }
        }
    }

    /// Picks the devices, sensors and window of a read among what is visible.
    fn read_target(&mut self) -> ReadTarget<'_> {
        let config = self.config;
        let picked = sample(&mut self.rng, self.devices.len(), config.query_devices);
        let sensors = sample(
            &mut self.rng,
            config.iot.sensors as usize,
            config.query_sensors,
        );
        let visible = picked
            .iter()
            .map(|i| self.devices[*i].visible)
            .min()
            .unwrap_or(0)
            .max(1);
        let rows = config.window_rows().min(visible);
        let first_row = self.rng.below(visible - rows + 1);
        let point_row = self.rng.below(visible);
        ReadTarget {
            devices: picked.iter().map(|i| &self.devices[*i]).collect(),
            sensors: sensors.into_iter().map(|s| s as u32).collect(),
            first_row,
            rows,
            point_row,
        }
    }

    /// One read: plan, send (timed), check.
    fn read(&mut self, op: Operation) {
        let config = self.config;
        let read = {
            let target = self.read_target();
            plan_read(op, &target, config)
        };
        let started = Instant::now();
        let response = self
            .http
            .post(&self.sql_path, read.sql.as_bytes(), BodyEncoding::Text);
        let latency = started.elapsed();
        let answer = match response {
            Ok(r) if r.status == 200 => parse_answer(&r.body),
            Ok(r) => Err(http_failure(r.status, &r.body)),
            Err(e) => Err(e.to_string()),
        };
        let tally = &mut self.run.tallies[op.index()];
        let message = match answer {
            Ok(answer) => {
                tally.latencies.push(latency);
                tally.rows += answer.rows.len() as u64;
                match check(&read.expect, &answer, &self.config.iot) {
                    Verdict::Right => {
                        tally.ok += 1;
                        tally.verified += 1;
                        None
                    }
                    Verdict::Unchecked => {
                        tally.ok += 1;
                        None
                    }
                    Verdict::Wrong(why) => {
                        tally.wrong += 1;
                        Some(format!(
                            "{} answered wrong: {why}; SQL: {}",
                            op.name(),
                            read.sql
                        ))
                    }
                }
            }
            Err(e) => {
                tally.failed += 1;
                Some(format!("{} failed: {e}; SQL: {}", op.name(), read.sql))
            }
        };
        if let Some(message) = message {
            self.note_error(message);
        }
    }
}

/// `count` distinct indexes below `n` (a partial Fisher-Yates shuffle), in drawn order.
fn sample(rng: &mut Rng, n: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..n).collect();
    let count = count.min(n);
    for i in 0..count {
        let j = i + rng.below((n - i) as u64) as usize;
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

/// `HTTP 500: <the start of the body>`.
pub(super) fn http_failure(status: u16, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text: String = text.chars().take(300).collect();
    format!("HTTP {status}: {}", text.trim())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn samples_are_distinct_and_seeded() {
        let mut a = Rng::new(9);
        let mut b = Rng::new(9);
        for n in 1..20 {
            let s = sample(&mut a, n, 3);
            assert_eq!(s, sample(&mut b, n, 3));
            assert_eq!(s.len(), n.min(3));
            assert_eq!(s.iter().collect::<BTreeSet<_>>().len(), s.len());
            assert!(s.iter().all(|i| *i < n));
        }
    }
}
