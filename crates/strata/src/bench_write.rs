//! `strata bench write`: load a workload into Strata and report the seeds' figures.
//!
//! Targets: `--embedded` (an in-process engine, the default), `--http URL` (InfluxDB 1.x
//! `POST /write`, one keep-alive connection per worker, 204 is success) and `--tcp ADDR`
//! (line protocol over plain TCP: asynchronous, nothing is acknowledged, so the report says
//! what was sent). With `--http URL --prometheus` the same data goes as Prometheus remote
//! write (`POST /api/v1/write`; see `bench_remote_write`), and with `--tcp ADDR --opentsdb`
//! as OpenTSDB telnet `put` lines (see `bench_opentsdb`). Batches are streamed by generator
//! threads that fill bounded queues before the clock and stay ahead of the senders, so
//! memory stays flat whatever the data set's size; the report shows how far ahead they
//! stayed (`bench_batches`). `--pregenerate` generates everything before the clock instead.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use strata_bench::http::{BodyEncoding, HttpUrl};
use strata_bench::load::{EmbeddedTarget, HttpTarget, LoadResult, Target, TcpTarget, run_feed};
use strata_bench::progress::Progress;
use strata_bench::report::WriteReport;
use strata_bench::stats::{Process, dir_bytes};
use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions};

use crate::bench_batches::{self, Batches};
use crate::generate::{Generator, Workload, WorkloadArgs};

/// Rows per request for cpu-only (TSBS's batch size in the measurement).
const CPU_ONLY_BATCH_ROWS: usize = 10_000;
/// Records per request for meters (taosBenchmark's default), capped to rows per meter.
const METERS_BATCH_ROWS: usize = 30_000;
/// Rows per request for large-rows: 100 rows of about 33 KB, a 3.3 MB body (well under the
/// server's 64 MiB limit).
const LARGE_ROWS_BATCH_ROWS: usize = 100;
/// How long a remote request may take before the loader counts it failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Flags of `strata bench write`.
#[derive(Debug, Clone, Args)]
pub struct WriteArgs {
    #[command(flatten)]
    pub(crate) workload: WorkloadArgs,
    /// Write into an in-process engine (the default target).
    #[arg(long, conflicts_with_all = ["http", "tcp"])]
    pub(crate) embedded: bool,
    /// Write to a server over HTTP: POST <URL>/write?db=<db>&precision=<ns|ms>.
    #[arg(long, value_name = "URL", conflicts_with = "tcp")]
    pub(crate) http: Option<String>,
    /// Write line protocol over plain TCP to ADDR (host:port); asynchronous, unacknowledged.
    #[arg(long, value_name = "ADDR")]
    pub(crate) tcp: Option<String>,
    /// Load this line-protocol file (gzip when it ends in .gz; e.g. one TSBS generated)
    /// instead of generating a workload.
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// Unit of the timestamps in --file: ns, us, ms or s.
    #[arg(long, default_value = "ns", requires = "file")]
    pub(crate) precision: Precision,
    /// Database to write to.
    #[arg(long, default_value = "bench")]
    pub(crate) db: String,
    /// Rows per request [cpu-only 10,000; meters 30,000 capped to rows per meter].
    #[arg(long)]
    pub(crate) batch_rows: Option<usize>,
    /// Concurrent writers (one connection each); 0 means one per core.
    #[arg(long, default_value_t = 0)]
    pub(crate) workers: usize,
    /// Compress request bodies with gzip (before the clock) and send Content-Encoding: gzip.
    #[arg(long)]
    pub(crate) gzip: bool,
    /// With --http: send the workload as Prometheus remote write (POST
    /// <URL>/api/v1/write?db=<db>), field f of measurement m as the metric m_f; rates then
    /// count samples as points.
    #[arg(long, requires = "http", conflicts_with = "gzip")]
    pub(crate) prometheus: bool,
    /// With --tcp: send the workload as OpenTSDB telnet put lines (to the server's
    /// --opentsdb listener), field f of measurement m as the metric m_f; rates then count
    /// data points as points.
    #[arg(long, requires = "tcp")]
    pub(crate) opentsdb: bool,
    /// Remote targets: the server's process id, to report its CPU, memory and disk writes.
    #[arg(long, value_name = "PID")]
    pub(crate) server_pid: Option<u32>,
    /// Remote targets: cores the server may use (for CPU % of its cores).
    #[arg(long)]
    pub(crate) server_cores: Option<usize>,
    /// Engine shards (embedded); 0 means one per core.
    #[arg(long, default_value_t = 0)]
    pub(crate) shards: usize,
    /// Data directory: the embedded engine's (created; emptied first unless
    /// --keep-existing; default strata-bench-data), or the remote server's, measured after
    /// the load for bytes per point.
    #[arg(long)]
    pub(crate) data_dir: Option<PathBuf>,
    /// Do not empty the embedded engine's data directory before the run.
    #[arg(long)]
    pub(crate) keep_existing: bool,
    /// WAL durability of the embedded engine: always, none, or an interval such as 1s.
    #[arg(long, default_value = "1s")]
    pub(crate) wal_sync: String,
    /// Retention of the embedded engine (its --retention): 0 keeps rows forever; a
    /// duration measures what retention costs on ingest (rows older than now minus it are
    /// refused, so make it longer than the data's age).
    #[arg(long, default_value = "0")]
    pub(crate) retention: String,
    /// Embedded: after the load, merge every partition to one part and report its size too.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) compact: bool,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<PathBuf>,
    /// Generate every batch into memory before the clock, instead of streaming them from
    /// generator threads during the load: no generator competes with the target for CPU,
    /// but memory grows with the data set (about 350 bytes a cpu-only row).
    #[arg(long)]
    pub(crate) pregenerate: bool,
}

/// Runs the load and prints the report (and writes the JSON when asked).
pub fn run(args: &WriteArgs) -> Result<(), String> {
    let report = measure(args)?;
    print!("{}", report.render());
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// The batch size: the flag, or the workload's default (meters: capped to rows per meter).
fn batch_rows(args: &WriteArgs) -> usize {
    let rows = match (args.batch_rows, args.workload.workload) {
        (Some(rows), _) => rows,
        (None, Workload::CpuOnly | Workload::Devops) => CPU_ONLY_BATCH_ROWS,
        (None, Workload::Meters) => {
            let cap = usize::try_from(args.workload.rows_per_meter()).unwrap_or(usize::MAX);
            METERS_BATCH_ROWS.min(cap)
        }
        (None, Workload::LargeRows) => LARGE_ROWS_BATCH_ROWS,
    };
    rows.max(1)
}

/// How request bodies are sent to `destination`.
fn body_encoding(args: &WriteArgs, destination: &Destination) -> BodyEncoding {
    match destination {
        Destination::Http(_) if args.prometheus => BodyEncoding::RemoteWrite,
        Destination::Http(_) if args.gzip => BodyEncoding::GzipText,
        Destination::Tcp(_) if args.opentsdb => BodyEncoding::OpenTsdbTelnet,
        _ => BodyEncoding::Text,
    }
}

/// Where the load goes.
enum Destination {
    Embedded,
    Http(HttpUrl),
    Tcp(String),
}

/// Called right before a load's clock starts and right after it stops, on the loader's
/// thread: `bench scale` reads the loader's and the server's CPU time and the server's
/// `/metrics` there, over exactly the load's clock.
pub trait LoadProbe {
    /// The clock is about to start.
    fn before_load(&mut self);
    /// The clock has just stopped.
    fn after_load(&mut self);
}

/// No probe.
impl LoadProbe for () {
    fn before_load(&mut self) {}
    fn after_load(&mut self) {}
}

/// Generates, loads and measures; returns the report (printed by the caller).
pub fn measure(args: &WriteArgs) -> Result<WriteReport, String> {
    measure_probed(args, &mut ())
}

/// [`measure`], with `probe` called around the load's clock.
pub fn measure_probed(args: &WriteArgs, probe: &mut dyn LoadProbe) -> Result<WriteReport, String> {
    let destination = match (&args.http, &args.tcp) {
        (Some(url), _) => Destination::Http(HttpUrl::parse(url).map_err(|e| e.to_string())?),
        (None, Some(addr)) => Destination::Tcp(addr.clone()),
        (None, None) => Destination::Embedded,
    };
    let cores = strata_storage::options::available_cores();
    let workers = if args.workers == 0 {
        cores
    } else {
        args.workers
    };
    let batch_rows = batch_rows(args);
    if let Some(path) = &args.file {
        let encoding = body_encoding(args, &destination);
        eprintln!(
            "reading {} in batches of {batch_rows} lines ...",
            path.display()
        );
        let batches = bench_batches::from_file(
            path,
            batch_rows,
            encoding,
            args.precision,
            workers,
            args.pregenerate,
        )?;
        let report = WriteReport {
            workload: format!("file {}", path.display()),
            database: args.db.clone(),
            workers,
            batch_rows,
            acknowledged: !matches!(destination, Destination::Tcp(_)),
            ..WriteReport::default()
        };
        return load_to(
            args,
            destination,
            &batches,
            workers,
            args.precision,
            cores,
            encoding,
            report,
            probe,
        );
    }
    let generators = Generator::for_workers(&args.workload, workers)?;
    let Some(first) = generators.first() else {
        return Err("the workload has no series (--hosts or --meters is 0)".into());
    };
    let precision = first.precision();
    let workload = first.describe();
    // Meters: each worker owns its range of meters, so there are no more workers than
    // meters; cpu-only: every worker takes from one shared queue.
    let workers = if generators.len() > 1 {
        generators.len()
    } else {
        workers
    };
    eprintln!("generating {workload} in batches of {batch_rows} rows ...");
    let encoding = body_encoding(args, &destination);
    let batches = bench_batches::from_generators(
        generators,
        batch_rows,
        encoding,
        workers,
        args.pregenerate,
    )?;
    let report = WriteReport {
        workload: args.workload_label(&workload),
        database: args.db.clone(),
        workers,
        batch_rows,
        acknowledged: !matches!(destination, Destination::Tcp(_)),
        ..WriteReport::default()
    };
    load_to(
        args,
        destination,
        &batches,
        workers,
        precision,
        cores,
        encoding,
        report,
        probe,
    )
}

/// Loads prepared work into the destination and fills the report.
#[allow(clippy::too_many_arguments)] // the run's context, passed flat on purpose
fn load_to(
    args: &WriteArgs,
    destination: Destination,
    batches: &Batches,
    workers: usize,
    precision: Precision,
    cores: usize,
    encoding: BodyEncoding,
    mut report: WriteReport,
    probe: &mut dyn LoadProbe,
) -> Result<WriteReport, String> {
    match destination {
        Destination::Embedded => {
            measure_embedded(args, batches, workers, precision, cores, report, probe)
        }
        Destination::Http(url) => {
            report.target = format!("http://{}{}", url.authority, url.base_path);
            let path = if encoding == BodyEncoding::RemoteWrite {
                format!("{}/api/v1/write?db={}", url.base_path, args.db)
            } else {
                HttpTarget::write_path(&url.base_path, &args.db, precision)
            };
            let mut targets: Vec<Box<dyn Target>> = Vec::with_capacity(workers);
            for _ in 0..workers {
                targets.push(Box::new(HttpTarget::connect(
                    &url.authority,
                    &path,
                    encoding,
                    REQUEST_TIMEOUT,
                )?));
            }
            measure_remote(args, batches, targets, report, probe)
        }
        Destination::Tcp(addr) => {
            report.target = format!("tcp://{addr}");
            let mut targets: Vec<Box<dyn Target>> = Vec::with_capacity(workers);
            for _ in 0..workers {
                targets.push(Box::new(TcpTarget::connect(&addr)?));
            }
            measure_remote(args, batches, targets, report, probe)
        }
    }
}

impl WriteArgs {
    fn workload_label(&self, describe: &str) -> String {
        if self.workload.out_of_order_ratio_set() {
            format!(
                "{describe}; out-of-order share {}",
                self.workload.out_of_order_share()
            )
        } else {
            describe.to_string()
        }
    }
}

/// Runs the load with a progress bar, `probe` called right around it.
fn load_with_progress(
    batches: &Batches,
    targets: Vec<Box<dyn Target>>,
    probe: &mut dyn LoadProbe,
) -> LoadResult {
    eprintln!(
        "loading {} with {} workers ...",
        batches.describe(),
        targets.len()
    );
    let progress = Progress::start(batches.expected_rows);
    probe.before_load();
    let load = run_feed(batches.feed(), targets, Some(progress.counter()));
    probe.after_load();
    progress.finish();
    load
}

/// Figures of a process before a load, to subtract afterwards.
struct Before {
    cpu: Option<Duration>,
    write_bytes: Option<u64>,
    dir_bytes: Option<u64>,
}

fn sample(process: Option<Process>, data_dir: Option<&PathBuf>) -> Before {
    Before {
        cpu: process.and_then(Process::cpu_time),
        write_bytes: process.and_then(Process::write_bytes),
        dir_bytes: data_dir.map(|d| dir_bytes(d)),
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Fills CPU, disk-write and memory figures from the process and data dir, over `elapsed`.
fn fill_process_figures(
    report: &mut WriteReport,
    process: Option<Process>,
    data_dir: Option<&PathBuf>,
    before: &Before,
    elapsed: Duration,
) {
    let secs = elapsed.as_secs_f64().max(1e-9);
    if let (Some(before), Some(after)) = (before.cpu, process.and_then(Process::cpu_time)) {
        report.server_cpu_percent = Some(after.saturating_sub(before).as_secs_f64() / secs * 100.0);
    }
    let written = match (before.write_bytes, process.and_then(Process::write_bytes)) {
        (Some(b), Some(a)) if a > b => Some((a - b, "write_bytes of /proc/<pid>/io")),
        _ => None,
    };
    let grown = match (before.dir_bytes, data_dir.map(|d| dir_bytes(d))) {
        (Some(b), Some(a)) => Some((a.saturating_sub(b), "growth of the data directory")),
        _ => None,
    };
    match written.or(grown) {
        Some((bytes, source)) => {
            report.disk_write_mb_per_s = Some(mb(bytes) / secs);
            report.disk_write_source = source.into();
        }
        None => {
            report.disk_write_source =
                "no --server-pid and no --data-dir: nothing to measure".into()
        }
    }
    report.rss_mb = process.and_then(Process::rss_bytes).map(mb);
    report.peak_rss_mb = process.and_then(Process::peak_rss_bytes).map(mb);
}

fn measure_remote(
    args: &WriteArgs,
    batches: &Batches,
    targets: Vec<Box<dyn Target>>,
    mut report: WriteReport,
    probe: &mut dyn LoadProbe,
) -> Result<WriteReport, String> {
    let process = args.server_pid.map(Process::Pid);
    let data_dir = args.data_dir.as_ref();
    let before = sample(process, data_dir);
    let loader_before = Process::Current.cpu_time();
    let load = load_with_progress(batches, targets, probe);
    if let (Some(before), Some(after)) = (loader_before, Process::Current.cpu_time()) {
        let secs = load.elapsed.as_secs_f64().max(1e-9);
        report.loader_cpu_percent = Some(after.saturating_sub(before).as_secs_f64() / secs * 100.0);
    }
    report = report.with_load(&load);
    batches.finish(&mut report)?;
    if let Some(peak) = Process::Current.peak_rss_bytes() {
        report
            .notes
            .push(format!("loader: peak RSS {:.0} MB", mb(peak)));
    }
    report.server_cores = args.server_cores.filter(|_| process.is_some());
    fill_process_figures(&mut report, process, data_dir, &before, load.elapsed);
    match data_dir {
        Some(dir) => {
            let bytes = dir_bytes(dir);
            report.disk_bytes = Some(bytes);
            report.bytes_per_point = Some(bytes as f64 / report.points.max(1) as f64);
            report.disk_bytes_note = format!(
                "{} right after the load, not flushed: WAL included, memtables not",
                dir.display()
            );
        }
        None => report.disk_bytes_note = "give --data-dir of the server to measure".into(),
    }
    Ok(report)
}

fn measure_embedded(
    args: &WriteArgs,
    batches: &Batches,
    workers: usize,
    precision: Precision,
    cores: usize,
    mut report: WriteReport,
    probe: &mut dyn LoadProbe,
) -> Result<WriteReport, String> {
    let wal_sync =
        strata_server::config::parse_wal_sync(&args.wal_sync).map_err(|e| e.to_string())?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("strata-bench-data"));
    if !args.keep_existing && data_dir.exists() {
        std::fs::remove_dir_all(&data_dir)
            .map_err(|e| format!("cannot empty {}: {e}", data_dir.display()))?;
    }
    let retention =
        strata_server::config::parse_retention(&args.retention).map_err(|e| e.to_string())?;
    let options = EngineOptions {
        data_dirs: vec![data_dir.clone()],
        shards: args.shards,
        wal_sync,
        retention,
        ..EngineOptions::default()
    };
    let (engine, _) = Engine::open(options).map_err(|e| e.to_string())?;
    let engine = Arc::new(engine);
    report.target = format!(
        "embedded ({} shards, {})",
        engine.shard_count(),
        data_dir.display()
    );
    let process = Some(Process::Current);
    let rss_before = Process::Current.rss_bytes().unwrap_or(0);
    let before = sample(process, Some(&data_dir));
    let targets: Vec<Box<dyn Target>> = (0..workers)
        .map(|_| {
            Box::new(EmbeddedTarget {
                engine: Arc::clone(&engine),
                database: args.db.clone(),
                precision,
            }) as Box<dyn Target>
        })
        .collect();
    let started = Instant::now();
    let load = load_with_progress(batches, targets, probe);
    let flushed_during_load = engine.stats().flushes;
    let flush_started = Instant::now();
    engine.flush().map_err(|e| e.to_string())?;
    let flush_time = flush_started.elapsed();
    let to_parts = started.elapsed();
    report = report.with_load(&load);
    batches.finish(&mut report)?;
    if flushed_during_load == 0 && report.rate_withheld.is_none() {
        report.rate_withheld = Some(
            "no memtable was flushed during the load: it measured memory, not the engine's \
             sustained rate; load more data than the memtables hold"
                .into(),
        );
    }
    report.server_cores = Some(cores);
    // CPU and disk writes over ingest + final flush: the work the load caused.
    fill_process_figures(&mut report, process, Some(&data_dir), &before, to_parts);
    let bytes_flushed = dir_bytes(&data_dir);
    let points = report.points.max(1) as f64;
    report.disk_bytes = Some(bytes_flushed);
    report.bytes_per_point = Some(bytes_flushed as f64 / points);
    report.disk_bytes_note = format!("{} after the final flush", data_dir.display());
    let stats = engine.stats();
    report.notes.push(format!(
        "to parts: {:.3} s including the final flush of {:.3} s: {:.0} points/s",
        to_parts.as_secs_f64(),
        flush_time.as_secs_f64(),
        points / to_parts.as_secs_f64().max(1e-9)
    ));
    report.notes.push(format!(
        "series {}; flushes {} ({} writer waits for a flush); WAL written {:.1} MB ({:.2} bytes/point)",
        stats.series,
        stats.flushes,
        stats.backpressure_waits,
        mb(stats.wal_bytes_written),
        stats.wal_bytes_written as f64 / points
    ));
    if args.compact {
        let t = Instant::now();
        engine.compact().map_err(|e| e.to_string())?;
        let bytes = dir_bytes(&data_dir);
        report.notes.push(format!(
            "disk, compacted: {:.1} MB, {:.3} bytes/point (compaction {:.2} s)",
            mb(bytes),
            bytes as f64 / points,
            t.elapsed().as_secs_f64()
        ));
    }
    report.notes.push(format!(
        "memory: {:.0} MB before the load{}; peak RSS {:.0} MB (engine and loader)",
        mb(rss_before),
        if args.pregenerate {
            " (the pregenerated input held in memory, counted in RSS)"
        } else {
            ""
        },
        mb(Process::Current.peak_rss_bytes().unwrap_or(0))
    ));
    if let Ok(engine) = Arc::try_unwrap(engine) {
        engine.close().map_err(|e| e.to_string())?;
    }
    Ok(report)
}
