//! `strata bench generate`: stream a workload's line protocol to stdout or a file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig};
use strata_bench::devops::{self, Devops, DevopsConfig};
use strata_bench::disorder::Disorder;
use strata_bench::large_rows::{self, LargeRows, LargeRowsConfig};
use strata_bench::meters::{Meters, MetersConfig, MetersOrder, split_meters};
use strata_lineproto::Precision;

/// Rows generated per write to the output: large enough to amortise the write call, small
/// enough to keep memory flat (~250 bytes a cpu-only row, so about 2.5 MB a chunk).
const ROWS_PER_CHUNK: usize = 10_000;

/// Which data set to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Workload {
    /// TSBS cpu-only: measurement `cpu`, ten tags, ten integer fields, nanosecond timestamps.
    CpuOnly,
    /// TDengine smart meters: table `meters`, millisecond timestamps (load with precision=ms).
    Meters,
    /// TSBS devops (seed 003): nine measurements (cpu, diskio, disk, kernel, mem, net, nginx,
    /// postgresl, redis), 101 fields, the same hosts and flags as cpu-only; nanosecond
    /// timestamps.
    Devops,
    /// Seed 000's disk workload: table `large`, rows of 32,524 bytes (two numbers, eight
    /// long random strings), --meters subtables x --rows-per-meter rows, millisecond
    /// timestamps.
    LargeRows,
}

/// Flags of `strata bench generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Output file (gzip-compressed when it ends in .gz); stdout when absent.
    #[arg(long, short)]
    out: Option<PathBuf>,
}

/// Order of a meters worker's rows (taosBenchmark's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Order {
    /// All rows of one meter, then the next meter.
    Progressive,
    /// Round-robin over the worker's meters, --interlace-rows rows of each per turn.
    Interlace,
}

/// Which workload and how big; defaults are the seed reports' settings.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    /// Workload to generate.
    #[arg(long, value_enum, default_value = "cpu-only")]
    pub(crate) workload: Workload,
    /// Seed of every random choice: the same seed writes the same bytes.
    #[arg(long, default_value_t = 123)]
    seed: u64,
    /// cpu-only: number of hosts (TSBS -scale).
    #[arg(long, default_value_t = 4_000)]
    hosts: u32,
    /// cpu-only: first timestamp, RFC 3339.
    #[arg(long, default_value = "2019-04-01T00:00:00Z")]
    start: humantime::Timestamp,
    /// cpu-only: length of the run (e.g. 3h, 1day, 3days).
    #[arg(long, default_value = "3days")]
    duration: humantime::Duration,
    /// cpu-only: distance between two rows of a host.
    #[arg(long, default_value = "10s")]
    interval: humantime::Duration,
    /// meters, large-rows: number of meters (subtables, series) [meters: 10,000;
    /// large-rows: 100].
    #[arg(long)]
    meters: Option<u32>,
    /// meters, large-rows: rows per meter (subtable) [10,000].
    #[arg(long)]
    rows_per_meter: Option<u64>,
    /// meters: rows of one meter per turn in interlace order; 0 writes progressively.
    #[arg(long, default_value_t = 0)]
    interlace_rows: u64,
    /// meters: progressive or interlace (interlace needs --interlace-rows R; giving R alone
    /// also means interlace).
    #[arg(long, value_enum)]
    order: Option<Order>,
    /// Share of rows (0..1) that arrive late: held back until up to
    /// --out-of-order-intervals newer rows of their series were written. Seeded; every row
    /// is still written exactly once.
    #[arg(long, default_value_t = 0.0)]
    out_of_order_ratio: f64,
    /// How many intervals (rows of the series) a late row lags at most.
    #[arg(long, default_value_t = 10)]
    out_of_order_intervals: u64,
}

impl WorkloadArgs {
    /// Whether some rows are sent late.
    pub(crate) fn out_of_order_ratio_set(&self) -> bool {
        self.out_of_order_ratio > 0.0
    }

    /// The share of rows sent late, and by how much at most, in words.
    pub(crate) fn out_of_order_share(&self) -> String {
        format!(
            "{} (up to {} intervals late)",
            self.out_of_order_ratio, self.out_of_order_intervals
        )
    }

    /// The same workload `factor` times as large, for a run on `factor` cores that should
    /// last as long as one core's: cpu-only and devops span `factor` times the duration (the
    /// same hosts, more rows each), meters and large-rows have `factor` times the rows per
    /// meter. The first rows are the factor-1 workload's (same seed and start).
    pub(crate) fn grown(&self, factor: u32) -> Result<Self, String> {
        let mut grown = self.clone();
        match self.workload {
            Workload::CpuOnly | Workload::Devops => {
                let duration = self.duration.checked_mul(factor).ok_or_else(|| {
                    format!("--duration {} x {factor} is too long", self.duration)
                })?;
                grown.duration = duration.into();
            }
            Workload::Meters | Workload::LargeRows => {
                let rows = self
                    .rows_per_meter()
                    .checked_mul(factor as u64)
                    .ok_or_else(|| {
                        format!(
                            "--rows-per-meter {} x {factor} is too many",
                            self.rows_per_meter()
                        )
                    })?;
                grown.rows_per_meter = Some(rows);
            }
        }
        Ok(grown)
    }

    /// Rows a meter (or large-rows subtable) has (the cap of a meters request).
    pub(crate) fn rows_per_meter(&self) -> u64 {
        self.rows_per_meter.unwrap_or(10_000)
    }

    /// The seed of the data (and, by default, of the query benchmark's queries).
    pub(crate) fn seed(&self) -> u64 {
        self.seed
    }

    /// cpu-only: the generator's configuration (time span, hosts) these flags describe.
    pub(crate) fn cpu_only_config(&self) -> Result<CpuOnlyConfig, String> {
        cpu_only_config(self)
    }

    /// meters, large-rows: the number of meters (subtables) these flags describe; the
    /// seeds' figure by default (seed 002's 10,000 meters, seed 000's 100 subtables).
    pub(crate) fn meters(&self) -> u32 {
        self.meters.unwrap_or(match self.workload {
            Workload::LargeRows => 100,
            _ => 10_000,
        })
    }

    fn meters_order(&self) -> Result<MetersOrder, String> {
        match (self.order, self.interlace_rows) {
            (None | Some(Order::Progressive), 0) => Ok(MetersOrder::Progressive),
            (Some(Order::Progressive), _) => {
                Err("--order progressive contradicts --interlace-rows".into())
            }
            (Some(Order::Interlace), 0) => Err("--order interlace needs --interlace-rows R".into()),
            (_, rows_per_turn) => Ok(MetersOrder::Interlace { rows_per_turn }),
        }
    }

    fn disorder(&self, series: usize, seed: u64) -> Result<Option<Disorder>, String> {
        if !(0.0..=1.0).contains(&self.out_of_order_ratio) {
            return Err(format!(
                "--out-of-order-ratio {} must be between 0 and 1",
                self.out_of_order_ratio
            ));
        }
        if self.out_of_order_ratio > 0.0 && self.out_of_order_intervals == 0 {
            return Err("--out-of-order-intervals must be at least 1".into());
        }
        Ok((self.out_of_order_ratio > 0.0).then(|| {
            Disorder::new(
                series,
                self.out_of_order_ratio,
                self.out_of_order_intervals,
                seed,
            )
        }))
    }
}

/// Writes the chosen workload; errors are returned as a message for the user.
pub fn run(args: &GenerateArgs) -> Result<(), String> {
    // Check every flag before creating the output, so a bad flag leaves no empty file.
    let generator = Generator::from_args(&args.workload)?;
    let sink: Box<dyn Write> = match &args.out {
        None => Box::new(io::stdout().lock()),
        Some(path) => {
            let file =
                File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
            let file = BufWriter::with_capacity(1 << 20, file);
            if path.extension().is_some_and(|ext| ext == "gz") {
                Box::new(flate2::write::GzEncoder::new(
                    file,
                    flate2::Compression::fast(),
                ))
            } else {
                Box::new(file)
            }
        }
    };
    let where_to = args
        .out
        .as_ref()
        .map_or_else(|| "stdout".to_string(), |p| p.display().to_string());
    match generator.write_all(sink) {
        Ok(()) => Ok(()),
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(format!("cannot write to {where_to}: {e}")),
    }
}

/// A ready generator of either workload, optionally sending a share of rows late.
pub struct Generator {
    source: Source,
    /// Index of the first series, so the out-of-order state is indexed from 0.
    first_series: u32,
    disorder: Option<Disorder>,
    line: Vec<u8>,
    finished: bool,
    /// Rows and field values written so far.
    rows_written: u64,
    points_written: u64,
}

enum Source {
    CpuOnly(CpuOnly),
    Meters(Meters),
    Devops(Devops),
    LargeRows(LargeRows),
}

impl Generator {
    /// The generator the flags describe (all series, one stream); a bad flag is an error.
    pub fn from_args(args: &WorkloadArgs) -> Result<Self, String> {
        let mut all = Self::for_workers(args, 1)?;
        all.pop()
            .ok_or_else(|| "the workload has no series (--hosts or --meters is 0)".to_string())
    }

    /// Generators for `workers` workers: cpu-only gives one stream the workers share;
    /// meters gives one per worker, each owning a contiguous range of meters (as
    /// taosBenchmark splits tables between threads), fewer when there are fewer meters.
    pub fn for_workers(args: &WorkloadArgs, workers: usize) -> Result<Vec<Self>, String> {
        Ok(match args.workload {
            Workload::CpuOnly => {
                let config = cpu_only_config(args)?;
                let hosts = config.hosts as usize;
                vec![Self::new(
                    Source::CpuOnly(CpuOnly::new(config)),
                    0,
                    args.disorder(hosts, args.seed)?,
                )]
            }
            Workload::Devops => {
                if args.out_of_order_ratio_set() {
                    return Err(
                        "--out-of-order-ratio is not supported with --workload devops".into(),
                    );
                }
                let c = cpu_only_config(args)?;
                let config = DevopsConfig {
                    hosts: c.hosts,
                    start_ns: c.start_ns,
                    end_ns: c.end_ns,
                    interval_ns: c.interval_ns,
                    seed: c.seed,
                };
                vec![Self::new(Source::Devops(Devops::new(config)), 0, None)]
            }
            Workload::Meters => {
                let config = MetersConfig {
                    meters: args.meters(),
                    rows_per_meter: args.rows_per_meter(),
                    seed: args.seed,
                    ..MetersConfig::default()
                };
                let order = args.meters_order()?;
                let mut generators = Vec::new();
                for (i, range) in split_meters(args.meters(), workers).into_iter().enumerate() {
                    let disorder = args.disorder(range.len(), args.seed ^ i as u64)?;
                    let first = range.start;
                    generators.push(Self::new(
                        Source::Meters(Meters::new(config.clone(), range, order)),
                        first,
                        disorder,
                    ));
                }
                generators
            }
            Workload::LargeRows => {
                if args.out_of_order_ratio_set() {
                    return Err(
                        "--out-of-order-ratio is not supported with --workload large-rows".into(),
                    );
                }
                let config = LargeRowsConfig {
                    tables: args.meters(),
                    rows_per_table: args.rows_per_meter(),
                    seed: args.seed,
                    ..LargeRowsConfig::default()
                };
                split_meters(args.meters(), workers)
                    .into_iter()
                    .map(|range| {
                        let first = range.start;
                        Self::new(
                            Source::LargeRows(LargeRows::new(config.clone(), range)),
                            first,
                            None,
                        )
                    })
                    .collect()
            }
        })
    }

    fn new(source: Source, first_series: u32, disorder: Option<Disorder>) -> Self {
        Self {
            source,
            first_series,
            disorder,
            line: Vec::with_capacity(512),
            finished: false,
            rows_written: 0,
            points_written: 0,
        }
    }

    /// Timestamp unit of the lines written.
    pub fn precision(&self) -> Precision {
        match self.source {
            Source::CpuOnly(_) | Source::Devops(_) => Precision::Nanoseconds,
            Source::Meters(_) | Source::LargeRows(_) => Precision::Milliseconds,
        }
    }

    /// Field values written so far (devops rows carry 6 to 30 fields each).
    pub fn points_written(&self) -> u64 {
        self.points_written
    }

    /// Field values of the rows `first..first + rows` of this generator's output.
    fn points_of(&self, first: u64, rows: u64) -> u64 {
        match self.source {
            Source::CpuOnly(_) => rows * strata_bench::cpu_only::FIELDS.len() as u64,
            Source::Meters(_) => rows * 3,
            Source::LargeRows(_) => rows * large_rows::FIELDS_PER_ROW,
            // Row r is measurement r mod 9 (each host writes the nine in order).
            Source::Devops(_) => (first..first + rows)
                .map(|r| {
                    let m = devops::MEASUREMENTS[(r % devops::MEASUREMENTS.len() as u64) as usize];
                    devops::fields(m).len() as u64
                })
                .sum(),
        }
    }

    /// Rows this generator writes in all (late rows included: each row is written once).
    pub fn rows_total(&self) -> u64 {
        match &self.source {
            Source::CpuOnly(g) => g.config().rows_total(),
            Source::Meters(g) => g.rows_total(),
            Source::Devops(g) => g.config().rows_total(),
            Source::LargeRows(g) => g.rows_total(),
        }
    }

    /// Rows sent late so far (out-of-order).
    pub fn rows_out_of_order(&self) -> u64 {
        self.disorder.as_ref().map_or(0, Disorder::held_rows)
    }

    /// A one-line description for progress messages.
    pub fn describe(&self) -> String {
        match &self.source {
            Source::CpuOnly(g) => {
                let c = g.config();
                format!(
                    "cpu-only: {} hosts, {} rows, {} points",
                    c.hosts,
                    c.rows_total(),
                    c.points_total()
                )
            }
            Source::Meters(g) => {
                let c = g.config();
                format!(
                    "meters: {} meters, {} rows, {} points",
                    c.meters,
                    c.rows_total(),
                    c.points_total()
                )
            }
            Source::Devops(g) => {
                let c = g.config();
                format!(
                    "devops: {} hosts, 9 measurements, {} rows, {} points",
                    c.hosts,
                    c.rows_total(),
                    c.points_total()
                )
            }
            Source::LargeRows(g) => {
                let c = g.config();
                format!(
                    "large-rows: {} subtables, {} rows of {} bytes, {} points",
                    c.tables,
                    c.rows_total(),
                    large_rows::ROW_BYTES,
                    c.points_total()
                )
            }
        }
    }

    /// Appends about `max_rows` lines (a few more when late rows fall due); 0 at the end.
    pub fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        let written = self.write_source_lines(max_rows, out);
        self.points_written += self.points_of(self.rows_written, written as u64);
        self.rows_written += written as u64;
        written
    }

    fn write_source_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        let Some(disorder) = self.disorder.as_mut() else {
            return match &mut self.source {
                Source::CpuOnly(generator) => generator.write_lines(max_rows, out),
                Source::Meters(generator) => generator.write_lines(max_rows, out),
                Source::Devops(generator) => generator.write_lines(max_rows, out),
                Source::LargeRows(generator) => generator.write_lines(max_rows, out),
            };
        };
        let mut written = 0;
        while written < max_rows {
            self.line.clear();
            let series = match &mut self.source {
                Source::CpuOnly(g) => g.next_row().map(|row| {
                    g.write_line(&row, &mut self.line);
                    row.host
                }),
                Source::Meters(g) => g.next_row().map(|row| {
                    g.write_line(&row, &mut self.line);
                    row.meter
                }),
                // Never: devops and large-rows take no disorder (refused in `for_workers`).
                Source::Devops(_) | Source::LargeRows(_) => None,
            };
            match series {
                Some(series) => {
                    let index = (series - self.first_series) as usize;
                    written += disorder.push(index, &self.line, out);
                }
                None => {
                    if !self.finished {
                        self.finished = true;
                        written += disorder.finish(out);
                    }
                    break;
                }
            }
        }
        written
    }

    fn write_all(mut self, mut sink: Box<dyn Write>) -> io::Result<()> {
        let mut chunk = Vec::with_capacity(ROWS_PER_CHUNK * 300);
        while self.write_lines(ROWS_PER_CHUNK, &mut chunk) > 0 {
            sink.write_all(&chunk)?;
            chunk.clear();
        }
        sink.flush()
    }
}

fn cpu_only_config(args: &WorkloadArgs) -> Result<CpuOnlyConfig, String> {
    let start = SystemTime::from(args.start);
    let start_ns = nanos_since_epoch(start)
        .ok_or_else(|| format!("--start {} is out of range", args.start))?;
    let duration_ns = duration_ns(*args.duration)
        .ok_or_else(|| format!("--duration {} is too long", args.duration))?;
    let interval_ns = duration_ns_nonzero(*args.interval).ok_or_else(|| {
        format!(
            "--interval {} must be between 1ns and 292 years",
            args.interval
        )
    })?;
    let end_ns = start_ns
        .checked_add(duration_ns)
        .ok_or_else(|| "--start plus --duration is past the year 2262".to_string())?;
    Ok(CpuOnlyConfig {
        hosts: args.hosts,
        start_ns,
        end_ns,
        interval_ns,
        seed: args.seed,
    })
}

fn nanos_since_epoch(time: SystemTime) -> Option<i64> {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => duration_ns(after),
        Err(before) => duration_ns(before.duration()).map(|ns| -ns),
    }
}

fn duration_ns(duration: Duration) -> Option<i64> {
    i64::try_from(duration.as_nanos()).ok()
}

fn duration_ns_nonzero(duration: Duration) -> Option<i64> {
    duration_ns(duration).filter(|ns| *ns > 0)
}
