//! Sending batches to a target with N worker threads, timing every request.
//!
//! Batches come from a [`Feed`]: generated before the clock ([`Work`]), or streamed by
//! generator threads that stay ahead of the senders ([`crate::feed::Stream`]), so the load
//! measures the target, not the generator. Work is a set of queues: one queue shared by
//! every worker (each takes the next batch from a shared counter, so a slow worker does not
//! hold back the others), or one queue per worker (meters: each worker owns a contiguous
//! range of meters, as taosBenchmark does). A [`Target`] sends one batch: into an in-process engine
//! ([`EmbeddedTarget`]), over HTTP ([`HttpTarget`]) or over plain TCP ([`TcpTarget`]).

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use strata_lineproto::Precision;
use strata_storage::Engine;

use crate::feed::{Feed, Prepared};
use crate::http::{BodyEncoding, HttpClient};
use crate::stats::Latencies;

/// Error messages kept per load (the first ones); the rest are only counted.
const ERROR_MESSAGES_KEPT: usize = 5;

/// One request's worth of line protocol.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The request body (gzip-compressed when the load sends gzip).
    pub body: Vec<u8>,
    /// Rows (lines) in the batch.
    pub rows: u64,
    /// Field values in the batch.
    pub points: u64,
}

/// The batches of a load, as queues.
#[derive(Debug, Clone, Default)]
pub struct Work {
    /// One queue shared by all workers, or one queue per worker.
    pub queues: Vec<Vec<Batch>>,
}

impl Work {
    /// Rows in all batches.
    pub fn rows(&self) -> u64 {
        self.batches().map(|b| b.rows).sum()
    }

    /// Points in all batches.
    pub fn points(&self) -> u64 {
        self.batches().map(|b| b.points).sum()
    }

    /// Bytes of all request bodies.
    pub fn bytes(&self) -> u64 {
        self.batches().map(|b| b.body.len() as u64).sum()
    }

    /// Number of batches.
    pub fn batch_count(&self) -> usize {
        self.queues.iter().map(Vec::len).sum()
    }

    fn batches(&self) -> impl Iterator<Item = &Batch> {
        self.queues.iter().flatten()
    }
}

/// What the target said about one batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ack {
    /// Rows stored (or, for an asynchronous target, sent).
    pub rows: u64,
    /// Points stored (or sent).
    pub points: u64,
    /// Lines the target rejected.
    pub bad_lines: u64,
}

/// Somewhere to send batches; one per worker.
pub trait Target: Send {
    /// Sends one batch and waits for whatever acknowledgement the target gives. An error is
    /// counted by the loader and the load goes on.
    fn send(&mut self, batch: &Batch) -> Result<Ack, String>;

    /// Called once after the worker's last batch (e.g. to close a connection cleanly).
    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// Writes into an in-process engine.
pub struct EmbeddedTarget {
    /// The engine.
    pub engine: Arc<Engine>,
    /// Database written to.
    pub database: String,
    /// Timestamp unit of the lines.
    pub precision: Precision,
}

impl Target for EmbeddedTarget {
    fn send(&mut self, batch: &Batch) -> Result<Ack, String> {
        let report = self
            .engine
            .write_lines(&self.database, &batch.body, self.precision)
            .map_err(|e| e.to_string())?;
        Ok(Ack {
            rows: report.rows,
            points: report.points,
            bad_lines: report.errors.len() as u64,
        })
    }
}

/// `POST` of each batch (line protocol to `/write?db=…&precision=…`, or Prometheus remote
/// write) over one keep-alive connection; 204 is success.
pub struct HttpTarget {
    client: HttpClient,
    path: String,
    encoding: BodyEncoding,
}

impl HttpTarget {
    /// Connects to `authority` now (before the clock) and will post to `path` (with query).
    pub fn connect(
        authority: &str,
        path: &str,
        encoding: BodyEncoding,
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut client = HttpClient::new(authority, timeout);
        client.connect().map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            path: path.to_string(),
            encoding,
        })
    }

    /// The InfluxDB 1.x write path for `database` and `precision` under `base_path`.
    pub fn write_path(base_path: &str, database: &str, precision: Precision) -> String {
        let unit = match precision {
            Precision::Nanoseconds => "ns",
            Precision::Microseconds => "u",
            Precision::Milliseconds => "ms",
            Precision::Seconds => "s",
        };
        format!("{base_path}/write?db={database}&precision={unit}")
    }
}

impl Target for HttpTarget {
    fn send(&mut self, batch: &Batch) -> Result<Ack, String> {
        let response = self
            .client
            .post(&self.path, &batch.body, self.encoding)
            .map_err(|e| e.to_string())?;
        if response.status == 204 {
            return Ok(Ack {
                rows: batch.rows,
                points: batch.points,
                bad_lines: 0,
            });
        }
        let body = String::from_utf8_lossy(&response.body);
        let body: String = body.chars().take(300).collect();
        Err(format!("HTTP {}: {}", response.status, body.trim()))
    }
}

/// Line protocol over plain TCP: no acknowledgement, so "acked" means written to the socket.
pub struct TcpTarget {
    stream: TcpStream,
}

impl TcpTarget {
    /// Connects to `addr` now (before the clock).
    pub fn connect(addr: &str) -> Result<Self, String> {
        let stream =
            TcpStream::connect(addr).map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        stream
            .set_nodelay(true)
            .map_err(|e| format!("cannot set TCP_NODELAY on {addr}: {e}"))?;
        Ok(Self { stream })
    }
}

impl Target for TcpTarget {
    fn send(&mut self, batch: &Batch) -> Result<Ack, String> {
        self.stream
            .write_all(&batch.body)
            .map_err(|e| format!("TCP send: {e}"))?;
        Ok(Ack {
            rows: batch.rows,
            points: batch.points,
            bad_lines: 0,
        })
    }

    fn finish(&mut self) -> Result<(), String> {
        self.stream
            .flush()
            .and_then(|()| self.stream.shutdown(std::net::Shutdown::Write))
            .map_err(|e| format!("TCP close: {e}"))
    }
}

/// What a load did.
#[derive(Debug, Clone, Default)]
pub struct LoadResult {
    /// Rows stored (acknowledged; sent for an asynchronous target).
    pub rows: u64,
    /// Field values stored (or sent).
    pub points: u64,
    /// Lines rejected.
    pub bad_lines: u64,
    /// Requests made (successful or not).
    pub requests: u64,
    /// Requests that failed (a non-success status, an I/O or engine error).
    pub errors: u64,
    /// The first few error messages.
    pub error_messages: Vec<String>,
    /// Wall time from the first request to the last acknowledgement.
    pub elapsed: Duration,
    /// Per-request latencies (successful requests).
    pub latencies: Latencies,
    /// Rows acknowledged per worker.
    pub rows_per_worker: Vec<u64>,
}

impl LoadResult {
    /// Rows per second over the whole load.
    pub fn rows_per_second(&self) -> f64 {
        self.rows as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Points per second over the whole load.
    pub fn points_per_second(&self) -> f64 {
        self.points as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

struct WorkerResult {
    ack: Ack,
    requests: u64,
    errors: u64,
    messages: Vec<String>,
    latencies: Vec<Duration>,
}

/// Sends all of `work` with one worker thread per target. Worker `i` takes batches from
/// queue `i % queues`. `progress` (if given) is advanced by the rows of each batch done.
pub fn run_load(
    work: &Arc<Work>,
    targets: Vec<Box<dyn Target>>,
    progress: Option<Arc<AtomicU64>>,
) -> LoadResult {
    let feed: Arc<dyn Feed + Send> = Arc::new(Prepared::new(Arc::clone(work)));
    run_feed(&feed, targets, progress)
}

/// Sends every batch of `feed` with one worker thread per target. Worker `i` takes batches
/// from queue `i % queue_count`. `progress` (if given) is advanced by each batch's rows.
pub fn run_feed(
    feed: &Arc<dyn Feed + Send>,
    targets: Vec<Box<dyn Target>>,
    progress: Option<Arc<AtomicU64>>,
) -> LoadResult {
    let queue_count = feed.queue_count();
    let started = Instant::now();
    let handles: Vec<_> = targets
        .into_iter()
        .enumerate()
        .map(|(worker, mut target)| {
            let feed = Arc::clone(feed);
            let progress = progress.clone();
            std::thread::spawn(move || {
                let mut result = WorkerResult {
                    ack: Ack::default(),
                    requests: 0,
                    errors: 0,
                    messages: Vec::new(),
                    latencies: Vec::new(),
                };
                let queue = worker % queue_count;
                // Bounded by the feed's batches.
                while let Some(batch) = feed.next(queue) {
                    let request_started = Instant::now();
                    let outcome = target.send(&batch);
                    let latency = request_started.elapsed();
                    result.requests += 1;
                    match outcome {
                        Ok(ack) => {
                            result.latencies.push(latency);
                            result.ack.rows += ack.rows;
                            result.ack.points += ack.points;
                            result.ack.bad_lines += ack.bad_lines;
                        }
                        Err(message) => {
                            result.errors += 1;
                            if result.messages.len() < ERROR_MESSAGES_KEPT {
                                result.messages.push(message);
                            }
                        }
                    }
                    if let Some(progress) = &progress {
                        progress.fetch_add(batch.rows, Ordering::Relaxed);
                    }
                }
                if let Err(message) = target.finish() {
                    result.errors += 1;
                    result.messages.push(message);
                }
                result
            })
        })
        .collect();
    let mut load = LoadResult::default();
    let mut all = Vec::new();
    for handle in handles {
        let Ok(worker) = handle.join() else {
            load.errors += 1;
            load.error_messages.push("a load worker panicked".into());
            load.rows_per_worker.push(0);
            continue;
        };
        load.rows += worker.ack.rows;
        load.points += worker.ack.points;
        load.bad_lines += worker.ack.bad_lines;
        load.requests += worker.requests;
        load.errors += worker.errors;
        for message in worker.messages {
            if load.error_messages.len() < ERROR_MESSAGES_KEPT {
                load.error_messages.push(message);
            }
        }
        load.rows_per_worker.push(worker.ack.rows);
        all.extend(worker.latencies);
    }
    load.elapsed = started.elapsed();
    load.latencies = Latencies::new(all);
    load
}
