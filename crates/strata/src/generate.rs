//! `strata bench generate`: stream a workload's line protocol to stdout or a file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, ValueEnum};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig};
use strata_bench::meters::{Meters, MetersConfig, MetersOrder};
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

/// Which workload and how big; defaults are the seed reports' settings.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    /// Workload to generate.
    #[arg(long, value_enum, default_value = "cpu-only")]
    workload: Workload,
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
    /// meters: number of meters (series).
    #[arg(long, default_value_t = 10_000)]
    meters: u32,
    /// meters: rows per meter.
    #[arg(long, default_value_t = 10_000)]
    rows_per_meter: u64,
    /// meters: rows of one meter per turn in interlace order; 0 writes progressively.
    #[arg(long, default_value_t = 0)]
    interlace_rows: u64,
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

/// A ready generator of either workload.
pub enum Generator {
    CpuOnly(CpuOnly),
    Meters(Meters),
}

impl Generator {
    /// The generator the flags describe; a bad flag is an error message.
    pub fn from_args(args: &WorkloadArgs) -> Result<Self, String> {
        Ok(match args.workload {
            Workload::CpuOnly => Self::CpuOnly(CpuOnly::new(cpu_only_config(args)?)),
            Workload::Meters => {
                let config = MetersConfig {
                    meters: args.meters,
                    rows_per_meter: args.rows_per_meter,
                    seed: args.seed,
                    ..MetersConfig::default()
                };
                let order = match args.interlace_rows {
                    0 => MetersOrder::Progressive,
                    rows_per_turn => MetersOrder::Interlace { rows_per_turn },
                };
                Self::Meters(Meters::new(config, 0..args.meters, order))
            }
        })
    }

    /// Timestamp unit of the lines written.
    pub fn precision(&self) -> Precision {
        match self {
            Self::CpuOnly(_) => Precision::Nanoseconds,
            Self::Meters(_) => Precision::Milliseconds,
        }
    }

    /// A one-line description for progress messages.
    pub fn describe(&self) -> String {
        match self {
            Self::CpuOnly(g) => {
                let c = g.config();
                format!(
                    "cpu-only: {} hosts, {} rows, {} points",
                    c.hosts,
                    c.rows_total(),
                    c.points_total()
                )
            }
            Self::Meters(g) => {
                let c = g.config();
                format!(
                    "meters: {} meters, {} rows, {} points",
                    c.meters,
                    c.rows_total(),
                    c.points_total()
                )
            }
        }
    }

    /// Appends up to `max_rows` lines; 0 at the end.
    pub fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        match self {
            Self::CpuOnly(generator) => generator.write_lines(max_rows, out),
            Self::Meters(generator) => generator.write_lines(max_rows, out),
        }
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
