//! Loading prepared line-protocol batches into an in-process engine with N worker threads,
//! timing every request.
//!
//! Batches are generated before the clock starts, so the load measures the engine, not the
//! generator. Workers take the next batch from a shared counter (so a slow worker does not
//! hold back the others) and record each request's latency.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use strata_lineproto::Precision;
use strata_storage::{Engine, StorageError};

use crate::stats::Latencies;

/// What a load did.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// Rows stored.
    pub rows: u64,
    /// Field values stored.
    pub points: u64,
    /// Lines rejected.
    pub bad_lines: u64,
    /// Wall time from the first request to the last acknowledgement.
    pub elapsed: Duration,
    /// Per-request latencies.
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

/// Writes every batch into `engine` (database `database`) using `workers` threads.
pub fn load_embedded(
    engine: &Arc<Engine>,
    database: &str,
    batches: &Arc<Vec<Vec<u8>>>,
    workers: usize,
    precision: Precision,
) -> Result<LoadResult, StorageError> {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let handles: Vec<_> = (0..workers.max(1))
        .map(|_| {
            let engine = Arc::clone(engine);
            let batches = Arc::clone(batches);
            let next = Arc::clone(&next);
            let database = database.to_string();
            std::thread::spawn(
                move || -> Result<(u64, u64, u64, Vec<Duration>), StorageError> {
                    let (mut rows, mut points, mut bad) = (0, 0, 0);
                    let mut latencies = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(batch) = batches.get(index) else {
                            break;
                        };
                        let request_started = Instant::now();
                        let report = engine.write_lines(&database, batch, precision)?;
                        latencies.push(request_started.elapsed());
                        rows += report.rows;
                        points += report.points;
                        bad += report.errors.len() as u64;
                    }
                    Ok((rows, points, bad, latencies))
                },
            )
        })
        .collect();
    let mut result = LoadResult {
        rows: 0,
        points: 0,
        bad_lines: 0,
        elapsed: Duration::ZERO,
        latencies: Latencies::default(),
        rows_per_worker: Vec::new(),
    };
    let mut all = Vec::new();
    for handle in handles {
        let (rows, points, bad, latencies) = handle
            .join()
            .map_err(|_| StorageError::Unavailable("a load worker panicked".into()))??;
        result.rows += rows;
        result.points += points;
        result.bad_lines += bad;
        result.rows_per_worker.push(rows);
        all.extend(latencies);
    }
    result.elapsed = started.elapsed();
    result.latencies = Latencies::new(all);
    Ok(result)
}
