//! Strata's workloads: seeded, deterministic generators of the seed reports' data sets
//! (WORKLOADS.md), streaming line protocol so no data set has to fit in memory.
//!
//! Module map:
//! - [`rng`]: the portable seeded generator every workload draws from.
//! - [`cpu_only`]: TSBS `cpu-only` (measurement `cpu`, ten tags, ten integer fields).
//! - [`meters`]: TDengine smart meters (`meters`, tags `groupid`/`location`, three fields).
//! - [`load`]: writing prepared batches into an in-process engine with N workers.
//! - [`stats`]: latency percentiles, CPU time, peak memory, bytes on disk.
//!
//! Data path: `config → generator (per-series state) → rows → line-protocol bytes`.
//! The same config and seed always give the same bytes; the loaders and benchmarks of later
//! issues read from these generators.

pub mod cpu_only;
pub mod load;
pub mod meters;
pub mod rng;
pub mod stats;

/// Appends the decimal form of `value`.
pub(crate) fn write_int(out: &mut Vec<u8>, value: i64) {
    let mut buffer = itoa::Buffer::new();
    out.extend_from_slice(buffer.format(value).as_bytes());
}
