//! Strata's workloads: seeded, deterministic generators of the seed reports' data sets
//! (docs/workloads.md), streaming line protocol so no data set has to fit in memory.
//!
//! Module map:
//! - [`rng`]: the portable seeded generator every workload draws from.
//! - [`cpu_only`]: TSBS `cpu-only` (measurement `cpu`, ten tags, ten integer fields).
//! - [`devops`]: TSBS `devops` (nine measurements per host, `cpu` … `redis`, 101 fields).
//! - [`meters`]: TDengine smart meters (`meters`, tags `groupid`/`location`, three fields).
//! - [`large_rows`]: seed 000's disk workload (rows of 32,524 bytes: two numbers and eight
//!   long random strings).
//! - [`disorder`]: out-of-order rows (a seeded share arrives late, every row once).
//! - [`iot`]: IoTDB-benchmark's wind farm (seed 004: groups, devices, `s_i` sensors).
//! - [`feed`]: batches for the load's workers, prepared in memory or streamed by generator
//!   threads through bounded queues (memory bounded whatever the data set's size).
//! - [`load`]: sending batches with N workers to a target (embedded, HTTP, TCP).
//! - [`http`]: the small keep-alive HTTP/1.1 client the HTTP target uses.
//! - [`stats`]: latency percentiles; CPU time, memory and disk writes of a process.
//! - [`progress`]: the progress bar on stderr while a load runs.
//! - [`report`]: the write report (seeds' text style and JSON).
//! - [`queries`]: seeded query generators (TSBS devops on `cpu`, TDengine's on `meters`).
//! - [`query_run`]: running queries with N clients, embedded or over HTTP (`/sql`, or
//!   InfluxQL on `/query`).
//! - [`query_report`]: the query report (per type and client count; text and JSON).
//! - [`scale`]: the core-scaling table, CSV and SVG chart.
//! - [`compare`]: `bench compare`'s pure parts: target specs, the bodies' checksum, cores
//!   allowed, Prometheus answers, and the side-by-side table, CSV and SVG bar chart.
//! - [`matrix`]: seed 003's batch x worker write matrix: cells, CPU maths over `/proc`
//!   samples, the table, CSV, SVG heat map and JSON.
//! - [`mixed`]: seed 004's mixed read/write run (IoTDB-benchmark's operations, HTTP/TCP).
//!
//! Data path: `config → generator (per-series state) → rows → line-protocol bytes`.
//! The same config and seed always give the same bytes; the loaders and benchmarks of later
//! issues read from these generators.

pub mod compare;
pub mod cpu_only;
pub mod devops;
pub mod disorder;
pub mod feed;
pub mod http;
pub mod iot;
pub mod large_rows;
pub mod load;
pub mod matrix;
pub mod meters;
pub mod mixed;
pub mod progress;
pub mod queries;
pub mod query_report;
pub mod query_run;
pub mod report;
pub mod rng;
pub mod scale;
pub mod stats;

/// Appends the decimal form of `value`.
pub(crate) fn write_int(out: &mut Vec<u8>, value: i64) {
    let mut buffer = itoa::Buffer::new();
    out.extend_from_slice(buffer.format(value).as_bytes());
}
