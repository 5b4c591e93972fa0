//! The pure parts of `strata bench compare` (Strata beside the user's own InfluxDB 1.x and
//! VictoriaMetrics servers, loaded with the same request bodies): parsing `--target`
//! specs, the checksum that proves every target got the same bytes, reading a server's
//! allowed cores (`Cpus_allowed_list`) and checking they agree, checking a Prometheus
//! answer, and rendering the results as the side-by-side table, `compare.csv` and
//! `compare.svg` (a hand-written bar chart: one panel for the load rate, one per query
//! type).
//!
//! Kept apart from the command so every rule here is unit-tested without a server.
//!
//! Module map (everything is re-exported here, so callers name `compare::X`):
//! - `target`: [`TargetKind`], [`Language`] and [`TargetSpec`] (`--target` parsing).
//! - `checksum`: [`Checksum`], FNV-1a over the request bodies.
//! - `affinity`: [`parse_cpu_list`], [`cpus_allowed_list`], [`allowed_cores`] and
//!   [`affinity_notes`] (whether the targets share the same cores).
//! - `disk`: [`disk_usage`], a data directory's allocated bytes as `du` counts them.
//! - `prometheus`: [`prometheus_rows`], checking a Prometheus answer.
//! - `result`: [`TypeResult`], [`LanguageRun`], [`TargetResult`] and [`Comparison`].
//! - `render`: [`render_table`] and [`render_csv`], one line per target and language.
//! - `svg`: [`render_svg`], the bar chart.

mod affinity;
mod checksum;
mod disk;
#[cfg(test)]
mod fixtures;
mod prometheus;
mod render;
mod result;
mod svg;
mod target;

pub use affinity::{affinity_notes, allowed_cores, cpus_allowed_list, parse_cpu_list};
pub use checksum::Checksum;
pub use disk::disk_usage;
pub use prometheus::prometheus_rows;
pub use render::{render_csv, render_table};
pub use result::{Comparison, LanguageRun, TargetResult, TypeResult};
pub use svg::render_svg;
pub use target::{Language, TargetKind, TargetSpec};
