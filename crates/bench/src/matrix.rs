//! The batch x worker write matrix of seed 003 (Lindorm's TSBS devops write test): one cell
//! per (rows per request, concurrent writers) pair, each a fresh server loaded over HTTP,
//! with its rate in field values per second (Lindorm's `tps`) and the server's CPU (its
//! `max_cpu`).
//!
//! This module holds the pure parts so they can be tested without a server: a cell's
//! figures ([`MatrixCell`]), the CPU maths over `/proc` samples ([`cpu_figures`]), and the
//! outputs: the seed's table ([`MatrixReport::render_table`]), `matrix.csv`
//! ([`MatrixReport::render_csv`]), the heat map `matrix.svg` ([`MatrixReport::render_svg`],
//! plain SVG written by hand: a grid of coloured rectangles needs no chart library) and the
//! JSON report. `strata bench matrix` runs the servers and the loads.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::load::LoadResult;
use crate::report::MIN_RATE_LOAD_S;
use crate::scale::grouped;

/// How often the server's CPU time is read during a load. Short enough to catch a busy
/// spell, long enough that `/proc`'s 10 ms ticks are a small error (4% of one core).
pub const CPU_SAMPLE_PERIOD: Duration = Duration::from_millis(250);

/// Intervals shorter than this (the load's last, cut short) count in the average but not
/// in the maximum: 10 ms ticks over under 125 ms are an error above 8% of a core.
const SHORTEST_MAX_INTERVAL: Duration = Duration::from_millis(125);

/// Senders waiting this share of their time for a batch means the generator, not the
/// server, set the pace; the cell says so.
const GENERATOR_BOUND_SHARE: f64 = 0.10;

/// One reading of the server's CPU time (user + system, all threads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuSample {
    /// When, since the sampler started.
    pub at: Duration,
    /// The server's CPU time so far.
    pub cpu: Duration,
}

/// The server's CPU over a load, in percent of the cores it may use (100 = all busy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuFigures {
    /// The busiest sampling interval.
    pub max_percent: f64,
    /// The whole load: CPU time over wall time.
    pub avg_percent: f64,
    /// Intervals the maximum was taken over.
    pub intervals: usize,
}

/// CPU time over wall time, in percent of `cores` cores, at most 100: `/proc` counts CPU
/// in 10 ms ticks, so an interval of a saturated server can read a tick or two above its
/// cores' capacity, which no server can use.
fn percent_of_cores(cpu: Duration, wall: Duration, cores: usize) -> f64 {
    let wall = wall.as_secs_f64();
    if wall <= 0.0 {
        return 0.0;
    }
    (cpu.as_secs_f64() / wall / cores.max(1) as f64 * 100.0).min(100.0)
}

/// The maximum and average CPU of a load from `samples` (in time order) of a server that
/// may use `cores` cores; `None` with fewer than two samples or no time between them. The
/// maximum is over the intervals between consecutive samples at least 125 ms long (all of
/// them when none is) and never below the average.
pub fn cpu_figures(samples: &[CpuSample], cores: usize) -> Option<CpuFigures> {
    let (first, last) = (samples.first()?, samples.last()?);
    let span = last.at.checked_sub(first.at)?;
    if span.is_zero() {
        return None;
    }
    let avg_percent = percent_of_cores(last.cpu.saturating_sub(first.cpu), span, cores);
    let intervals: Vec<(Duration, f64)> = samples
        .windows(2)
        .map(|pair| {
            let wall = pair[1].at.saturating_sub(pair[0].at);
            let cpu = pair[1].cpu.saturating_sub(pair[0].cpu);
            (wall, percent_of_cores(cpu, wall, cores))
        })
        .filter(|(wall, _)| !wall.is_zero())
        .collect();
    let long: Vec<f64> = intervals
        .iter()
        .filter(|(wall, _)| *wall >= SHORTEST_MAX_INTERVAL)
        .map(|(_, percent)| *percent)
        .collect();
    let counted = if long.is_empty() {
        intervals.iter().map(|(_, percent)| *percent).collect()
    } else {
        long
    };
    let max_percent = counted.iter().copied().fold(avg_percent, f64::max);
    Some(CpuFigures {
        max_percent,
        avg_percent,
        intervals: counted.len(),
    })
}

/// One cell of the matrix: a fresh server loaded with `workers` writers sending `batch`
/// rows per request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixCell {
    /// Rows per request (Lindorm's `batch`).
    pub batch: usize,
    /// Concurrent writers, one keep-alive connection each (Lindorm's `worker`).
    pub workers: usize,
    /// Rows the server acknowledged (204).
    pub rows: u64,
    /// Field values in those rows.
    pub points: u64,
    /// Rows the generator made for this cell: a clean cell acknowledges all of them.
    pub rows_generated: u64,
    /// Requests sent.
    pub requests: u64,
    /// Requests that failed (not 204, or an I/O error).
    pub errors: u64,
    /// The first error messages.
    pub error_messages: Vec<String>,
    /// Wall time from the first request to the last answer, seconds.
    pub elapsed_s: f64,
    /// Rows per second.
    pub rows_per_s: f64,
    /// Field values per second: Lindorm's `tps`.
    pub tps: f64,
    /// Median request latency, ms.
    pub latency_p50_ms: f64,
    /// 99th-percentile request latency, ms.
    pub latency_p99_ms: f64,
    /// The server's busiest sampling interval, % of the cores it may use.
    pub max_cpu_percent: Option<f64>,
    /// The server's CPU over the whole load, % of the cores it may use.
    pub avg_cpu_percent: Option<f64>,
    /// Sampling intervals behind `max_cpu_percent`.
    pub cpu_intervals: usize,
    /// Share of the senders' time spent waiting for the generator's next batch.
    pub senders_waited_share: f64,
    /// Why this cell's rates are not a rate (its load was too short); `tps` and
    /// `rows_per_s` are then only the arithmetic of this run.
    pub rate_withheld: Option<String>,
}

impl MatrixCell {
    /// The cell of a finished load: its figures, the generator's row count, the CPU
    /// figures (when the server could be read) and the senders' total wait for batches.
    pub fn from_load(
        batch: usize,
        workers: usize,
        load: &LoadResult,
        rows_generated: u64,
        cpu: Option<CpuFigures>,
        senders_waited: Duration,
    ) -> Self {
        let elapsed = load.elapsed.as_secs_f64();
        let sender_time = elapsed * workers.max(1) as f64;
        let rate_withheld = (elapsed < MIN_RATE_LOAD_S).then(|| {
            format!(
                "the load lasted {elapsed:.2} s, under {MIN_RATE_LOAD_S:.0} s: runs this short \
                 vary by tens of percent on a shared machine; give --min-seconds 10 or more"
            )
        });
        Self {
            batch,
            workers,
            rows: load.rows,
            points: load.points,
            rows_generated,
            requests: load.requests,
            errors: load.errors,
            error_messages: load.error_messages.clone(),
            elapsed_s: elapsed,
            rows_per_s: load.rows_per_second(),
            tps: load.points_per_second(),
            latency_p50_ms: load.latencies.percentile(50.0).as_secs_f64() * 1e3,
            latency_p99_ms: load.latencies.percentile(99.0).as_secs_f64() * 1e3,
            max_cpu_percent: cpu.map(|c| c.max_percent),
            avg_cpu_percent: cpu.map(|c| c.avg_percent),
            cpu_intervals: cpu.map_or(0, |c| c.intervals),
            senders_waited_share: if sender_time > 0.0 {
                (senders_waited.as_secs_f64() / sender_time).min(1.0)
            } else {
                0.0
            },
            rate_withheld,
        }
    }

    /// `(batch 50, workers 16)`, for notes.
    fn label(&self) -> String {
        format!("(batch {}, workers {})", self.batch, self.workers)
    }

    /// What the reader must know about this cell beyond its numbers, one line each.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(reason) = &self.rate_withheld {
            notes.push(format!("{}: rate withheld: {reason}", self.label()));
        }
        if self.errors > 0 {
            notes.push(format!(
                "{}: {} of {} requests failed (rates count acknowledged rows only){}",
                self.label(),
                self.errors,
                self.requests,
                self.error_messages
                    .first()
                    .map_or_else(String::new, |m| format!("; first: {m}"))
            ));
        }
        // Without a failed request every generated row must have been acknowledged.
        if self.errors == 0 && self.rows != self.rows_generated {
            notes.push(format!(
                "{}: {} rows generated but {} acknowledged",
                self.label(),
                self.rows_generated,
                self.rows
            ));
        }
        if self.senders_waited_share >= GENERATOR_BOUND_SHARE {
            notes.push(format!(
                "{}: generator-bound: the senders waited {:.0}% of their time for batches, so \
                 the rate understates the server",
                self.label(),
                self.senders_waited_share * 100.0
            ));
        }
        notes
    }
}

/// The whole matrix and how it was run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixReport {
    /// Workload and size, one line.
    pub workload: String,
    /// Rows of one pass over the data set (`--hosts` x `--duration`).
    pub dataset_rows: u64,
    /// Cores the server may use: the denominator of the CPU percentages.
    pub server_cores: usize,
    /// Whether the server was confined to them (`--cores`) or had the whole machine.
    pub cores_confined: bool,
    /// Cores of the machine (the loader runs on them too).
    pub machine_cores: usize,
    /// Server shards.
    pub shards: usize,
    /// The server's `--wal-sync`.
    pub wal_sync: String,
    /// Each cell loads at least this long (0: one pass over the data set).
    pub min_seconds: f64,
    /// The CPU sampling period, ms.
    pub cpu_sample_ms: u64,
    /// The cells, batch by batch, workers within a batch.
    pub cells: Vec<MatrixCell>,
}

/// `4,846.48`: thousands grouped, two decimals, as the seed prints tps.
pub fn grouped_2dp(value: f64) -> String {
    let cents = (value.max(0.0) * 100.0).round() as u64;
    format!("{}.{:02}", grouped((cents / 100) as f64), cents % 100)
}

fn opt_2dp(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
}

/// One table row: the seed's columns, then ours.
fn table_row(cell: &MatrixCell) -> String {
    let (tps, rows_per_s) = if cell.rate_withheld.is_some() {
        ("withheld".to_string(), "withheld".to_string())
    } else {
        (grouped_2dp(cell.tps), grouped_2dp(cell.rows_per_s))
    };
    format!(
        "{:>5}  {:>6}  {:>16}  {:>7}  {:>7}  {:>14}  {:>8.2}  {:>6}\n",
        cell.batch,
        cell.workers,
        tps,
        opt_2dp(cell.max_cpu_percent),
        opt_2dp(cell.avg_cpu_percent),
        rows_per_s,
        cell.latency_p99_ms,
        cell.errors
    )
}

/// Quotes a CSV field when it holds a comma, quote or line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Escapes text for SVG (XML) content and attributes.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The distinct values of `key` over `cells`, in the order they first appear.
fn axis(cells: &[MatrixCell], key: impl Fn(&MatrixCell) -> usize) -> Vec<usize> {
    let mut values = Vec::new();
    for cell in cells {
        let value = key(cell);
        if !values.contains(&value) {
            values.push(value);
        }
    }
    values
}

/// The heat map's colour ramp, light (slow) to dark (fast).
const RAMP: [(u8, u8, u8); 3] = [(255, 247, 188), (254, 153, 41), (153, 52, 4)];
/// A withheld cell's fill: no rate, no colour on the ramp.
const WITHHELD_FILL: &str = "#d9d9d9";

/// The ramp's colour at `t` in [0, 1].
fn ramp(t: f64) -> (u8, u8, u8) {
    let t = t.clamp(0.0, 1.0) * (RAMP.len() - 1) as f64;
    let i = (t.floor() as usize).min(RAMP.len() - 2);
    let f = t - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Geometry of the heat map, px.
const CELL_W: usize = 140;
const CELL_H: usize = 64;
const LEFT: usize = 110;
const TOP: usize = 96;
const LEGEND_H: usize = 120;
/// The narrowest map: room for the subtitle and the legend's sentences.
const MIN_WIDTH: usize = 900;

impl MatrixReport {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> Result<String, String> {
        serde_json::to_string_pretty(self).map_err(|e| format!("cannot encode the report: {e}"))
    }

    /// Every cell's notes (withheld rates, errors, generator-bound).
    pub fn notes(&self) -> Vec<String> {
        self.cells.iter().flat_map(MatrixCell::notes).collect()
    }

    /// What the CPU columns mean, one sentence.
    fn cpu_meaning(&self) -> String {
        let whose = if self.cores_confined {
            format!(
                "the {} cores it is confined to (of the machine's {})",
                self.server_cores, self.machine_cores
            )
        } else {
            format!(
                "all {} cores of the machine, which the loader shares",
                self.server_cores
            )
        };
        format!(
            "max_cpu, avg_cpu: the server's CPU in % of {whose}; 100% = all of them busy. \
             max_cpu is its busiest {} ms interval during the load, avg_cpu the whole load.",
            self.cpu_sample_ms
        )
    }

    /// Seed 003's table (`batch worker tps max_cpu`) with avg_cpu, rows/s, p99 latency and
    /// errors, then what the columns mean and every cell's notes.
    pub fn render_table(&self) -> String {
        let load = if self.min_seconds > 0.0 {
            format!("at least {} s of load", self.min_seconds)
        } else {
            "one pass over the data set".to_string()
        };
        let mut out = format!(
            "workload: {}\nserver: {} shards, --wal-sync {}; each cell a fresh server, {load}\n",
            self.workload, self.shards, self.wal_sync
        );
        out.push_str(&format!(
            "{:>5}  {:>6}  {:>16}  {:>7}  {:>7}  {:>14}  {:>8}  {:>6}\n",
            "batch", "worker", "tps", "max_cpu", "avg_cpu", "rows/s", "p99_ms", "errors"
        ));
        for cell in &self.cells {
            out.push_str(&table_row(cell));
        }
        out.push_str(
            "tps: field values written per second (Lindorm's tps); rows/s: lines per second; \
             batch: rows per request; worker: concurrent writers.\n",
        );
        out.push_str(&self.cpu_meaning());
        out.push('\n');
        for note in self.notes() {
            out.push_str(&format!("note: {note}\n"));
        }
        out
    }

    /// The cells as CSV with a header line; a withheld cell has no tps or rows/s, and says
    /// why in `rate_withheld`.
    pub fn render_csv(&self) -> String {
        let mut out = String::from(
            "batch,workers,rows,points,rows_generated,elapsed_s,tps,rows_per_s,max_cpu_percent,\
             avg_cpu_percent,p50_ms,p99_ms,requests,errors,rate_withheld\n",
        );
        let cpu = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.2}"));
        for c in &self.cells {
            let (tps, rows_per_s) = match c.rate_withheld {
                Some(_) => (String::new(), String::new()),
                None => (format!("{:.2}", c.tps), format!("{:.2}", c.rows_per_s)),
            };
            out.push_str(&format!(
                "{},{},{},{},{},{:.3},{tps},{rows_per_s},{},{},{:.3},{:.3},{},{},{}\n",
                c.batch,
                c.workers,
                c.rows,
                c.points,
                c.rows_generated,
                c.elapsed_s,
                cpu(c.max_cpu_percent),
                cpu(c.avg_cpu_percent),
                c.latency_p50_ms,
                c.latency_p99_ms,
                c.requests,
                c.errors,
                csv_field(c.rate_withheld.as_deref().unwrap_or(""))
            ));
        }
        out
    }

    /// The lowest and highest tps of the cells with a rate (the colour ramp's ends).
    fn tps_range(&self) -> Option<(f64, f64)> {
        self.cells
            .iter()
            .filter(|c| c.rate_withheld.is_none())
            .map(|c| c.tps)
            .fold(None, |range, tps| match range {
                None => Some((tps, tps)),
                Some((lo, hi)) => Some((f64::min(lo, tps), f64::max(hi, tps))),
            })
    }

    /// The heat map: workers across, batch down, each cell coloured by tps with its tps and
    /// max_cpu written in it; withheld cells grey; a legend below.
    pub fn render_svg(&self) -> String {
        let workers = axis(&self.cells, |c| c.workers);
        let batches = axis(&self.cells, |c| c.batch);
        let width = (LEFT + CELL_W * workers.len().max(1) + 30).max(MIN_WIDTH);
        let grid_bottom = TOP + CELL_H * batches.len().max(1);
        let height = grid_bottom + LEGEND_H;
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
             viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">\n\
             <rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n\
             <text x=\"{}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">Write tps (field \
             values/s) by batch and workers</text>\n\
             <text x=\"{}\" y=\"44\" font-size=\"11\" text-anchor=\"middle\" fill=\"#444\">{}</text>\n",
            width / 2,
            width / 2,
            xml(&self.workload)
        );
        self.svg_axes(&mut svg, &workers, &batches);
        let range = self.tps_range();
        for cell in &self.cells {
            let (Some(col), Some(row)) = (
                workers.iter().position(|w| *w == cell.workers),
                batches.iter().position(|b| *b == cell.batch),
            ) else {
                continue;
            };
            svg_cell(
                &mut svg,
                cell,
                LEFT + col * CELL_W,
                TOP + row * CELL_H,
                range,
            );
        }
        self.svg_legend(&mut svg, grid_bottom + 20, range);
        svg.push_str("</svg>\n");
        svg
    }

    /// Axis titles and the workers (columns) and batch (rows) labels.
    fn svg_axes(&self, svg: &mut String, workers: &[usize], batches: &[usize]) {
        let grid_w = CELL_W * workers.len().max(1);
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"66\" font-size=\"13\" text-anchor=\"middle\">workers \
             (concurrent writers)</text>",
            LEFT + grid_w / 2
        );
        for (i, w) in workers.iter().enumerate() {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{w}</text>",
                LEFT + i * CELL_W + CELL_W / 2,
                TOP - 8
            );
        }
        let mid = TOP + CELL_H * batches.len().max(1) / 2;
        let _ = writeln!(
            svg,
            "<text x=\"20\" y=\"{mid}\" font-size=\"13\" text-anchor=\"middle\" \
             transform=\"rotate(-90 20 {mid})\">batch (rows per request)</text>"
        );
        for (i, b) in batches.iter().enumerate() {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"end\">{b}</text>",
                LEFT - 10,
                TOP + i * CELL_H + CELL_H / 2 + 4
            );
        }
    }

    /// The colour ramp with its ends' tps, and what grey, red borders and CPU mean.
    fn svg_legend(&self, svg: &mut String, y: usize, range: Option<(f64, f64)>) {
        let stops: String = RAMP
            .iter()
            .enumerate()
            .map(|(i, c)| {
                format!(
                    "<stop offset=\"{}%\" stop-color=\"{}\"/>",
                    i * 100 / (RAMP.len() - 1),
                    hex(*c)
                )
            })
            .collect();
        let _ = writeln!(
            svg,
            "<defs><linearGradient id=\"ramp\">{stops}</linearGradient></defs>\n\
             <g class=\"legend\">\n\
             <rect x=\"{LEFT}\" y=\"{y}\" width=\"240\" height=\"14\" fill=\"url(#ramp)\" \
             stroke=\"#888\"/>"
        );
        let (lo, hi) = range.map_or_else(
            || ("no rate".to_string(), "no rate".to_string()),
            |(lo, hi)| (grouped(lo), grouped(hi)),
        );
        let _ = writeln!(
            svg,
            "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\">{lo} tps</text>\n\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{hi} tps</text>\n\
             <rect x=\"{}\" y=\"{y}\" width=\"14\" height=\"14\" fill=\"{WITHHELD_FILL}\" \
             stroke=\"#888\"/>\n\
             <text x=\"{}\" y=\"{}\" font-size=\"11\">rate withheld (load under {:.0} s)</text>",
            y + 28,
            LEFT + 240,
            y + 28,
            LEFT + 260,
            LEFT + 280,
            y + 11,
            MIN_RATE_LOAD_S
        );
        let _ = writeln!(
            svg,
            "<text x=\"{LEFT}\" y=\"{}\" font-size=\"11\">cpu: the server's max CPU, % of \
             its {} cores (100% = all busy); red border: failed requests</text>\n</g>",
            y + 50,
            self.server_cores
        );
    }
}

/// One cell of the heat map: its rectangle (carrying its figures as data attributes) and
/// its text.
fn svg_cell(svg: &mut String, cell: &MatrixCell, x: usize, y: usize, range: Option<(f64, f64)>) {
    let withheld = cell.rate_withheld.is_some();
    let t = match range {
        Some((lo, hi)) if hi > lo => (cell.tps - lo) / (hi - lo),
        _ => 1.0,
    };
    let fill = if withheld {
        WITHHELD_FILL.to_string()
    } else {
        hex(ramp(t))
    };
    let (stroke, stroke_width) = if cell.errors > 0 {
        ("#d00000", 3)
    } else {
        ("white", 1)
    };
    let _ = writeln!(
        svg,
        "<rect class=\"cell\" data-batch=\"{}\" data-workers=\"{}\" data-tps=\"{:.2}\" \
         data-withheld=\"{withheld}\" x=\"{x}\" y=\"{y}\" width=\"{CELL_W}\" \
         height=\"{CELL_H}\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{stroke_width}\"/>",
        cell.batch, cell.workers, cell.tps
    );
    let ink = if !withheld && t > 0.6 {
        "white"
    } else {
        "black"
    };
    let main = if withheld {
        "withheld".to_string()
    } else {
        grouped(cell.tps)
    };
    let cpu = cell
        .max_cpu_percent
        .map_or_else(|| "cpu n/a".to_string(), |p| format!("cpu {p:.1}%"));
    let cx = x + CELL_W / 2;
    let _ = writeln!(
        svg,
        "<text x=\"{cx}\" y=\"{}\" font-size=\"14\" text-anchor=\"middle\" \
         fill=\"{ink}\">{main}</text>\n\
         <text x=\"{cx}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\" \
         fill=\"{ink}\">{cpu}</text>",
        y + 28,
        y + 46
    );
    if cell.errors > 0 {
        let _ = writeln!(
            svg,
            "<text x=\"{cx}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" \
             fill=\"#d00000\">{} errors</text>",
            y + 59,
            cell.errors
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Latencies;

    fn sample(ms: u64, cpu_ms: u64) -> CpuSample {
        CpuSample {
            at: Duration::from_millis(ms),
            cpu: Duration::from_millis(cpu_ms),
        }
    }

    #[test]
    fn max_cpu_is_the_busiest_interval_and_avg_the_whole_load() {
        // Two cores; 250 ms intervals using 250, 500, 100 and 150 ms of CPU.
        let samples = [
            sample(0, 1000),
            sample(250, 1250),
            sample(500, 1750),
            sample(750, 1850),
            sample(1000, 2000),
        ];
        let cpu = cpu_figures(&samples, 2).unwrap();
        assert_eq!(cpu.intervals, 4);
        assert!((cpu.max_percent - 100.0).abs() < 1e-9, "{cpu:?}");
        // 1000 ms of CPU over 1 s on 2 cores.
        assert!((cpu.avg_percent - 50.0).abs() < 1e-9, "{cpu:?}");
        // On four cores the same load is half as busy.
        let four = cpu_figures(&samples, 4).unwrap();
        assert!((four.max_percent - 50.0).abs() < 1e-9, "{four:?}");
        assert!((four.avg_percent - 25.0).abs() < 1e-9, "{four:?}");
    }

    #[test]
    fn a_short_last_interval_counts_in_the_average_only_and_ticks_are_clamped() {
        // 250 ms at 40% of one core, then a 50 ms tail that reads 100% (5 ticks).
        let samples = [sample(0, 0), sample(250, 100), sample(300, 150)];
        let cpu = cpu_figures(&samples, 1).unwrap();
        assert_eq!(cpu.intervals, 1);
        // max: the long interval, but never below the average (150 ms over 300 ms).
        assert!((cpu.avg_percent - 50.0).abs() < 1e-9, "{cpu:?}");
        assert!((cpu.max_percent - 50.0).abs() < 1e-9, "{cpu:?}");
        // A tick over: 260 ms of CPU in 250 ms on one core reads 100%, not 104%.
        let over = cpu_figures(&[sample(0, 0), sample(250, 260)], 1).unwrap();
        assert_eq!(over.max_percent, 100.0);
        assert_eq!(over.avg_percent, 100.0);
        // Only short intervals: the maximum is taken over them.
        let short = cpu_figures(&[sample(0, 0), sample(50, 10), sample(100, 40)], 1).unwrap();
        assert_eq!(short.intervals, 2);
        assert!((short.max_percent - 60.0).abs() < 1e-9, "{short:?}");
    }

    #[test]
    fn too_few_samples_give_no_cpu() {
        assert_eq!(cpu_figures(&[], 1), None);
        assert_eq!(cpu_figures(&[sample(0, 0)], 1), None);
        assert_eq!(cpu_figures(&[sample(5, 0), sample(5, 10)], 1), None);
    }

    fn cell(batch: usize, workers: usize, tps: f64, elapsed_s: f64) -> MatrixCell {
        MatrixCell {
            batch,
            workers,
            rows: 1000,
            points: 11_000,
            rows_generated: 1000,
            requests: 10,
            errors: 0,
            error_messages: Vec::new(),
            elapsed_s,
            rows_per_s: tps / 11.0,
            tps,
            latency_p50_ms: 1.5,
            latency_p99_ms: 3.25,
            max_cpu_percent: Some(36.68),
            avg_cpu_percent: Some(30.0),
            cpu_intervals: 40,
            senders_waited_share: 0.0,
            rate_withheld: (elapsed_s < MIN_RATE_LOAD_S).then(|| "too short".to_string()),
        }
    }

    fn report() -> MatrixReport {
        let mut failing = cell(50, 16, 460_032.75, 12.0);
        failing.errors = 2;
        failing.error_messages = vec!["HTTP 500: disk full".into()];
        MatrixReport {
            workload: "devops: 10 hosts <test>".into(),
            dataset_rows: 1000,
            server_cores: 4,
            cores_confined: true,
            machine_cores: 16,
            shards: 4,
            wal_sync: "1s".into(),
            min_seconds: 10.0,
            cpu_sample_ms: 250,
            cells: vec![
                cell(1, 1, 4_846.48, 11.0),
                cell(1, 16, 36_862.15, 10.5),
                cell(50, 1, 126_462.85, 3.0),
                failing,
            ],
        }
    }

    #[test]
    fn table_in_the_seeds_layout_marks_withheld_and_failed_cells() {
        let table = report().render_table();
        let lines: Vec<&str> = table.lines().collect();
        let header: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            header,
            [
                "batch", "worker", "tps", "max_cpu", "avg_cpu", "rows/s", "p99_ms", "errors"
            ]
        );
        let first: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            first,
            [
                "1", "1", "4,846.48", "36.68", "30.00", "440.59", "3.25", "0"
            ]
        );
        let withheld: Vec<&str> = lines[5].split_whitespace().collect();
        assert_eq!(withheld[..4], ["50", "1", "withheld", "36.68"], "{table}");
        assert_eq!(withheld[5], "withheld", "{table}");
        assert!(
            lines[6].starts_with("   50      16        460,032.75"),
            "{table}"
        );
        assert!(
            table.contains(
                "% of the 4 cores it is confined to (of the machine's 16); 100% = all of them busy"
            ),
            "{table}"
        );
        assert!(
            table.contains("note: (batch 50, workers 1): rate withheld: too short"),
            "{table}"
        );
        assert!(
            table.contains(
                "note: (batch 50, workers 16): 2 of 10 requests failed (rates count acknowledged \
                 rows only); first: HTTP 500: disk full"
            ),
            "{table}"
        );
        assert_eq!(table.matches("note:").count(), 2, "{table}");
    }

    #[test]
    fn csv_has_a_line_per_cell_and_no_rate_for_withheld_ones() {
        let mut r = report();
        r.cells[2].rate_withheld = Some("lasted 3.00 s, under 10 s, \"short\"".into());
        let csv = r.render_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("batch,workers,rows,points,"), "{csv}");
        assert_eq!(
            lines[1],
            "1,1,1000,11000,1000,11.000,4846.48,440.59,36.68,30.00,1.500,3.250,10,0,"
        );
        assert_eq!(
            lines[3],
            "50,1,1000,11000,1000,3.000,,,36.68,30.00,1.500,3.250,10,0,\
             \"lasted 3.00 s, under 10 s, \"\"short\"\"\""
        );
        assert!(
            lines[4].starts_with("50,16,") && lines[4].contains(",10,2,"),
            "{csv}"
        );
    }

    #[test]
    fn heat_map_has_a_coloured_cell_each_with_its_value_and_a_legend() {
        let svg = report().render_svg();
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{svg}"
        );
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"cell\"").count(), 4, "{svg}");
        // Lowest rate at the light end, highest at the dark end; withheld grey.
        assert!(svg.contains(
            "data-batch=\"1\" data-workers=\"1\" data-tps=\"4846.48\" data-withheld=\"false\""
        ));
        let fill = |batch: usize, workers: usize| {
            let key = format!("data-batch=\"{batch}\" data-workers=\"{workers}\"");
            let at = svg.find(&key).unwrap();
            let rest = &svg[at..];
            let f = rest.find("fill=\"").unwrap() + 6;
            rest[f..f + 7].to_string()
        };
        assert_eq!(fill(1, 1), hex(RAMP[0]));
        assert_eq!(fill(50, 16), hex(RAMP[2]));
        assert_eq!(fill(50, 1), WITHHELD_FILL);
        assert!(svg.contains(">4,846<"), "values written in the cells");
        assert!(svg.contains(">460,033<"));
        assert!(svg.contains(">withheld<"));
        assert!(svg.contains(">cpu 36.7%<"));
        assert!(svg.contains(">2 errors<"), "failed requests shown");
        assert!(svg.contains("class=\"legend\""));
        assert!(
            svg.contains(">4,846 tps<") && svg.contains(">460,033 tps<"),
            "legend ends"
        );
        assert!(svg.contains("workers (concurrent writers)"));
        assert!(svg.contains("batch (rows per request)"));
        assert!(
            svg.contains("devops: 10 hosts &lt;test&gt;"),
            "text escaped"
        );
        // The axes: workers 1 and 16 across, batch 1 and 50 down.
        assert!(svg.contains(">16</text>") && svg.contains(">50</text>"));
    }

    #[test]
    fn ramp_and_number_formats() {
        assert_eq!(ramp(0.0), RAMP[0]);
        assert_eq!(ramp(0.5), RAMP[1]);
        assert_eq!(ramp(1.0), RAMP[2]);
        assert_eq!(ramp(7.0), RAMP[2]);
        assert_eq!(grouped_2dp(4_846.48), "4,846.48");
        assert_eq!(grouped_2dp(1_123_739.875), "1,123,739.88");
        assert_eq!(grouped_2dp(0.999), "1.00");
        assert_eq!(grouped_2dp(-3.0), "0.00");
    }

    #[test]
    fn a_cell_from_a_load_withholds_a_short_rate_and_flags_a_slow_generator() {
        let load = LoadResult {
            rows: 900,
            points: 10_100,
            requests: 9,
            elapsed: Duration::from_secs(2),
            latencies: Latencies::new((1..=100).map(Duration::from_millis).collect()),
            rows_per_worker: vec![450, 450],
            ..LoadResult::default()
        };
        let cpu = CpuFigures {
            max_percent: 80.0,
            avg_percent: 60.0,
            intervals: 8,
        };
        let c = MatrixCell::from_load(100, 2, &load, 900, Some(cpu), Duration::from_secs(1));
        assert_eq!((c.rows, c.points, c.rows_generated), (900, 10_100, 900));
        assert_eq!(c.tps, 5_050.0);
        assert_eq!(c.rows_per_s, 450.0);
        assert_eq!((c.latency_p50_ms, c.latency_p99_ms), (50.0, 99.0));
        assert_eq!(
            (c.max_cpu_percent, c.avg_cpu_percent),
            (Some(80.0), Some(60.0))
        );
        assert!((c.senders_waited_share - 0.25).abs() < 1e-9);
        let reason = c.rate_withheld.clone().unwrap();
        assert!(reason.contains("lasted 2.00 s, under 10 s"), "{reason}");
        let notes = c.notes();
        assert!(
            notes[1].contains("generator-bound: the senders waited 25%"),
            "{notes:?}"
        );
        let long = LoadResult {
            elapsed: Duration::from_secs(12),
            ..load
        };
        let c = MatrixCell::from_load(100, 2, &long, 1000, None, Duration::ZERO);
        assert_eq!(c.rate_withheld, None);
        assert_eq!(c.max_cpu_percent, None);
        assert_eq!(
            c.notes(),
            ["(batch 100, workers 2): 1000 rows generated but 900 acknowledged"]
        );
        let json = serde_json::to_value(&c).unwrap();
        assert_eq!(json["tps"], 10_100.0 / 12.0);
        assert!(json["rate_withheld"].is_null());
    }
}
