//! `strata bench matrix`: seed 003's (Lindorm's) write table, batch x worker -> tps and
//! max_cpu.
//!
//! For every pair of `--batch` (rows per request) and `--workers` (concurrent writers, one
//! keep-alive HTTP connection each), start a fresh `strata serve` (optionally confined to
//! `--cores` K cores) on a fresh data directory, and load it over HTTP from one generator
//! thread streaming batches through a bounded queue, so memory stays flat. A cell loads for
//! at least `--min-seconds`: the workload's rows in time order, and when the data set
//! (`--hosts` x `--duration`) runs out, the same hosts over the next `--duration`, lap after
//! lap, so every row is new; the cell stops taking batches once the time is up. With
//! `--min-seconds 0` a cell loads the data set exactly once. While the load runs, the
//! server's CPU time is read from /proc every 250 ms; max_cpu is the busiest interval and
//! avg_cpu the whole load, both in % of the cores the server may use. The server is
//! stopped with SIGTERM after each cell. Then the table is printed, and `matrix.csv` and the
//! heat map `matrix.svg` are written into `--out-dir` (and the JSON report to `--json`).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Args;
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig};
use strata_bench::devops::{self, Devops, DevopsConfig};
use strata_bench::feed::{Feed, Producer, Stream};
use strata_bench::http::BodyEncoding;
use strata_bench::load::{Batch, HttpTarget, Target, run_feed};
use strata_bench::matrix::{CPU_SAMPLE_PERIOD, CpuSample, MatrixCell, MatrixReport, cpu_figures};
use strata_bench::scale::check_taskset;
use strata_bench::stats::Process;
use strata_lineproto::Precision;

use crate::bench_server::{Server, ServerSpec};
use crate::generate::{Workload, WorkloadArgs};

/// The database every cell writes to.
const DATABASE: &str = "bench";
/// How long a request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// A request body is allocated for about this many bytes a row (devops lines run 200-700).
const BYTES_PER_ROW_HINT: usize = 400;
/// Most writers a cell may have: the server accepts this many connections by default.
const MAX_WORKERS: usize = strata_server::config::DEFAULT_MAX_CONNECTIONS;
/// Most CPU samples a cell keeps (about 69 hours at 4 a second): bounds the sampler.
const MAX_CPU_SAMPLES: usize = 1_000_000;

/// Flags of `strata bench matrix`. The workload defaults to devops with 10,000 hosts:
/// seed 003's 10,000 devices reporting 101 fields on nine tables every 10 s.
#[derive(Debug, Args)]
#[command(
    mut_arg("workload", |a| a.default_value("devops")),
    mut_arg("hosts", |a| a.default_value("10000"))
)]
pub struct MatrixArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Rows per request, one matrix row each (seed 003's batch).
    #[arg(long, value_delimiter = ',', default_value = "1,50,100,200,500")]
    batch: Vec<usize>,
    /// Concurrent writers, each with its own keep-alive HTTP connection, one matrix column
    /// each (seed 003's worker).
    #[arg(long, value_delimiter = ',', default_value = "1,16,50,100,200")]
    workers: Vec<usize>,
    /// Confine the server to the first K cores (taskset); all cores when absent.
    #[arg(long, value_name = "K")]
    cores: Option<usize>,
    /// Server shards; 0 means one per core the server may use.
    #[arg(long, default_value_t = 0)]
    shards: usize,
    /// WAL durability of the server (its --wal-sync): always, none, or an interval.
    #[arg(long, default_value = "1s")]
    wal_sync: String,
    /// Where the data directories, server logs, matrix.csv and matrix.svg go.
    #[arg(long, default_value = "strata-matrix")]
    out_dir: PathBuf,
    /// Each cell loads at least this many seconds (continuing the data in time when the
    /// data set runs out); 0 loads the data set exactly once. Cells under 10 s report no
    /// rate.
    #[arg(long, default_value_t = 10.0)]
    min_seconds: f64,
    /// Also write the report, every cell, as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Keep each cell's data directory (removed after the cell by default: 25 cells of
    /// data add up).
    #[arg(long)]
    keep_data: bool,
}

/// What the flags resolve to, checked once before the first cell.
struct Plan {
    base: CpuOnlyConfig,
    server_cores: usize,
    machine_cores: usize,
    shards: usize,
    /// `None`: one pass over the data set.
    min_load: Option<Duration>,
}

/// A list flag's values: non-empty, each at least 1, at most `max`, no value twice.
fn check_list(flag: &str, values: &[usize], max: usize) -> Result<(), String> {
    if values.is_empty() || values.contains(&0) {
        return Err(format!(
            "--{flag} needs values of at least 1, e.g. --{flag} 1,50"
        ));
    }
    if let Some(v) = values.iter().find(|v| **v > max) {
        return Err(format!("--{flag} {v}: at most {max}"));
    }
    if let Some((i, v)) = values
        .iter()
        .enumerate()
        .find(|(i, v)| values[..*i].contains(v))
    {
        return Err(format!(
            "--{flag} lists {v} twice (value {}): each is a row or column of the matrix",
            i + 1
        ));
    }
    Ok(())
}

/// The server's cores: K (checked against the machine, taskset present) or all of them.
fn server_cores(cores: Option<usize>, machine_cores: usize) -> Result<usize, String> {
    match cores {
        None => Ok(machine_cores),
        Some(0) => Err("--cores needs at least 1 core".into()),
        Some(k) if k > machine_cores => Err(format!(
            "--cores {k}: this machine has {machine_cores} cores"
        )),
        Some(k) => {
            check_taskset()?;
            Ok(k)
        }
    }
}

/// `--min-seconds` as a duration; `None` for 0 (one pass over the data set).
fn min_load(seconds: f64) -> Result<Option<Duration>, String> {
    // NaN is in no range, so it is refused too.
    if !(0.0..=86_400.0).contains(&seconds) {
        return Err(format!(
            "--min-seconds {seconds}: give seconds from 0 (one pass over the data set) to 86400"
        ));
    }
    Ok((seconds > 0.0).then(|| Duration::from_secs_f64(seconds)))
}

/// Checks every flag before any server starts.
fn plan(args: &MatrixArgs) -> Result<Plan, String> {
    match args.workload.workload {
        Workload::Devops | Workload::CpuOnly => {}
        // Meters splits its meters between the workers, so its writers cannot vary
        // independently of its data; the laps here are built for these two generators.
        _ => {
            return Err(
                "bench matrix loads --workload devops (seed 003's data, the default) or \
                 cpu-only: these two stream one shared time-ordered data set that any number \
                 of writers can take from and that can continue in time"
                    .into(),
            );
        }
    }
    if args.workload.out_of_order_ratio_set() {
        return Err("--out-of-order-ratio is not supported by bench matrix".into());
    }
    let base = args.workload.cpu_only_config()?;
    if base.rows_total() == 0 {
        return Err("the data set is empty: give --hosts and --duration of at least 1".into());
    }
    check_list("batch", &args.batch, 1_000_000)?;
    check_list("workers", &args.workers, MAX_WORKERS)?;
    strata_server::config::parse_wal_sync(&args.wal_sync).map_err(|e| e.to_string())?;
    let machine_cores = strata_storage::options::available_cores();
    let server_cores = server_cores(args.cores, machine_cores)?;
    Ok(Plan {
        base,
        server_cores,
        machine_cores,
        shards: if args.shards == 0 {
            server_cores
        } else {
            args.shards
        },
        min_load: min_load(args.min_seconds)?,
    })
}

/// The generator of one lap.
enum LapGenerator {
    Devops(Box<Devops>),
    CpuOnly(Box<CpuOnly>),
}

/// A cell's rows: the data set, then (when `continue_in_time`) the same hosts over the next
/// span of time, lap after lap; never the same timestamp twice, so every row is a new row.
struct Laps {
    devops: bool,
    base: CpuOnlyConfig,
    /// Time a lap covers: its instants x the interval.
    span_ns: i64,
    lap: i64,
    continue_in_time: bool,
    current: LapGenerator,
    /// Rows written of the current lap (devops: row r is measurement r mod 9).
    rows_in_lap: u64,
}

impl Laps {
    fn new(devops: bool, base: CpuOnlyConfig, continue_in_time: bool) -> Result<Self, String> {
        let span_ns = i64::try_from(base.rows_per_host())
            .ok()
            .and_then(|instants| instants.checked_mul(base.interval_ns))
            .ok_or_else(|| "--duration over --interval is too many instants".to_string())?;
        Ok(Self {
            devops,
            current: Self::generator(devops, base.clone()),
            base,
            span_ns,
            lap: 0,
            continue_in_time,
            rows_in_lap: 0,
        })
    }

    fn generator(devops: bool, config: CpuOnlyConfig) -> LapGenerator {
        if devops {
            LapGenerator::Devops(Box::new(Devops::new(DevopsConfig {
                hosts: config.hosts,
                start_ns: config.start_ns,
                end_ns: config.end_ns,
                interval_ns: config.interval_ns,
                seed: config.seed,
            })))
        } else {
            LapGenerator::CpuOnly(Box::new(CpuOnly::new(config)))
        }
    }

    /// Moves to the next lap: the same hosts and seed, `span` later. False when the stream
    /// is one pass, or time would pass the year 2262.
    fn next_lap(&mut self) -> bool {
        if !self.continue_in_time {
            return false;
        }
        let lap = self.lap + 1;
        let Some(shift) = lap.checked_mul(self.span_ns) else {
            return false;
        };
        let (Some(start_ns), Some(end_ns)) = (
            self.base.start_ns.checked_add(shift),
            self.base.end_ns.checked_add(shift),
        ) else {
            return false;
        };
        self.lap = lap;
        self.rows_in_lap = 0;
        self.current = Self::generator(
            self.devops,
            CpuOnlyConfig {
                start_ns,
                end_ns,
                ..self.base.clone()
            },
        );
        true
    }

    /// Field values of rows `first..first + rows` of a lap.
    fn points_of(&self, first: u64, rows: u64) -> u64 {
        if !self.devops {
            return rows * strata_bench::cpu_only::FIELDS.len() as u64;
        }
        let measurements = devops::MEASUREMENTS.len() as u64;
        (first..first + rows)
            .map(|r| devops::fields(devops::MEASUREMENTS[(r % measurements) as usize]).len() as u64)
            .sum()
    }

    /// Appends up to `max_rows` lines; returns the rows and field values written (no rows
    /// at the end of the stream).
    fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> (u64, u64) {
        let (mut rows, mut points) = (0u64, 0u64);
        // Bounded: each pass writes rows or starts a lap; an empty lap ends the stream.
        while (rows as usize) < max_rows {
            let want = max_rows - rows as usize;
            let written = match &mut self.current {
                LapGenerator::Devops(g) => g.write_lines(want, out),
                LapGenerator::CpuOnly(g) => g.write_lines(want, out),
            } as u64;
            points += self.points_of(self.rows_in_lap, written);
            self.rows_in_lap += written;
            rows += written;
            if written == 0 && (self.rows_in_lap == 0 || !self.next_lap()) {
                break;
            }
        }
        (rows, points)
    }
}

/// When a cell's load started and how long it must last; the generator stops once the
/// time is up (before the start, while the queue fills, it never stops).
struct LoadClock {
    started: OnceLock<Instant>,
    min_load: Option<Duration>,
}

impl LoadClock {
    fn time_is_up(&self) -> bool {
        match (self.min_load, self.started.get()) {
            (Some(min), Some(started)) => started.elapsed() >= min,
            _ => false,
        }
    }
}

/// The generator of a cell: batches of `batch` rows of line protocol until the stream ends
/// or the clock says the time is up.
fn producer(mut laps: Laps, batch: usize, clock: Arc<LoadClock>) -> Producer {
    Box::new(move || {
        if clock.time_is_up() {
            return Ok(None);
        }
        let mut body = Vec::with_capacity(batch.saturating_mul(BYTES_PER_ROW_HINT));
        let (rows, points) = laps.write_lines(batch, &mut body);
        Ok((rows > 0).then_some(Batch { body, rows, points }))
    })
}

/// Reads the server's CPU time every [`CPU_SAMPLE_PERIOD`] on its own thread until told
/// to stop, then once more.
struct CpuSampler {
    stop: mpsc::Sender<()>,
    handle: JoinHandle<Vec<CpuSample>>,
}

impl CpuSampler {
    fn start(pid: u32) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            let process = Process::Pid(pid);
            let origin = Instant::now();
            let read = |samples: &mut Vec<CpuSample>| {
                if let Some(cpu) = process.cpu_time() {
                    samples.push(CpuSample {
                        at: origin.elapsed(),
                        cpu,
                    });
                }
            };
            let mut samples = Vec::new();
            read(&mut samples);
            // Bounded by the stop message (sent after the load) and the sample cap.
            while samples.len() < MAX_CPU_SAMPLES {
                let last = matches!(
                    stopped.recv_timeout(CPU_SAMPLE_PERIOD),
                    Ok(()) | Err(RecvTimeoutError::Disconnected)
                );
                read(&mut samples);
                if last {
                    break;
                }
            }
            samples
        });
        Self { stop, handle }
    }

    fn finish(self) -> Vec<CpuSample> {
        let _ = self.stop.send(());
        self.handle.join().unwrap_or_default()
    }
}

/// How far ahead of its senders the queue may run: two batches per sender, at least four.
fn queue_depth(workers: usize) -> usize {
    (2 * workers).max(4)
}

/// One keep-alive connection per writer, opened before the clock.
fn connect(server: &Server, workers: usize) -> Result<Vec<Box<dyn Target>>, String> {
    let path = HttpTarget::write_path("", DATABASE, Precision::Nanoseconds);
    (0..workers)
        .map(|_| {
            HttpTarget::connect(&server.addr, &path, BodyEncoding::Text, REQUEST_TIMEOUT)
                .map(|t| Box::new(t) as Box<dyn Target>)
        })
        .collect()
}

/// Runs one cell on a fresh server and returns its figures.
fn run_cell(
    args: &MatrixArgs,
    plan: &Plan,
    batch: usize,
    workers: usize,
) -> Result<MatrixCell, String> {
    let name = format!("b{batch}-w{workers}");
    let data_dir = args.out_dir.join(format!("data-{name}"));
    let mut server = Server::start(&ServerSpec {
        cores: args.cores,
        data_dirs: vec![data_dir.clone()],
        shards: plan.shards,
        wal_sync: args.wal_sync.clone(),
        tcp: false,
        log: args.out_dir.join(format!("server-{name}.log")),
        extra_args: Vec::new(),
    })?;
    let clock = Arc::new(LoadClock {
        started: OnceLock::new(),
        min_load: plan.min_load,
    });
    let devops = args.workload.workload == Workload::Devops;
    let laps = Laps::new(devops, plan.base.clone(), plan.min_load.is_some())?;
    let stream = Arc::new(Stream::start(
        vec![producer(laps, batch, Arc::clone(&clock))],
        queue_depth(workers),
    ));
    let targets = connect(&server, workers)?;
    let sampler = CpuSampler::start(server.pid());
    let _ = clock.started.set(Instant::now());
    let feed: Arc<dyn Feed + Send> = Arc::clone(&stream) as Arc<dyn Feed + Send>;
    let load = run_feed(&feed, targets, None);
    let samples = sampler.finish();
    let generated = stream.finish();
    server.stop()?;
    if let Some(error) = generated.error {
        return Err(format!(
            "cell {name}: generating the batches failed: {error}"
        ));
    }
    if !args.keep_data {
        std::fs::remove_dir_all(&data_dir)
            .map_err(|e| format!("cannot remove {}: {e}", data_dir.display()))?;
    }
    Ok(MatrixCell::from_load(
        batch,
        workers,
        &load,
        generated.rows,
        cpu_figures(&samples, plan.server_cores),
        generated.workers_waited,
    ))
}

/// Rows of one pass over the data set: devops writes nine rows a host and instant.
fn dataset_rows(args: &MatrixArgs, plan: &Plan) -> u64 {
    match args.workload.workload {
        Workload::Devops => plan.base.rows_total() * devops::MEASUREMENTS.len() as u64,
        _ => plan.base.rows_total(),
    }
}

/// One line describing the data set and how cells use it.
fn describe(args: &MatrixArgs, plan: &Plan) -> String {
    let name = match args.workload.workload {
        Workload::Devops => "devops (9 tables, 101 fields a host and instant)",
        _ => "cpu-only (10 fields a row)",
    };
    let how = match plan.min_load {
        None => "each cell loads it once".to_string(),
        Some(min) => format!(
            "each cell loads at least {:.1} s of it, continued in time past its end",
            min.as_secs_f64()
        ),
    };
    format!(
        "{name}: {} hosts, {} rows a pass; {how}",
        plan.base.hosts,
        dataset_rows(args, plan)
    )
}

/// Runs every cell, prints the table and writes matrix.csv, matrix.svg and the JSON.
pub fn run(args: &MatrixArgs) -> Result<(), String> {
    let plan = plan(args)?;
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let workload = describe(args, &plan);
    let dataset_rows = dataset_rows(args, &plan);
    let mut cells = Vec::with_capacity(args.batch.len() * args.workers.len());
    for &batch in &args.batch {
        for &workers in &args.workers {
            eprintln!("cell batch {batch}, workers {workers}: {workload} ...");
            let cell = run_cell(args, &plan, batch, workers)?;
            eprintln!(
                "cell batch {batch}, workers {workers}: {} rows, {} points in {:.2} s, {} errors",
                cell.rows, cell.points, cell.elapsed_s, cell.errors
            );
            cells.push(cell);
        }
    }
    let report = MatrixReport {
        workload,
        dataset_rows,
        server_cores: plan.server_cores,
        cores_confined: args.cores.is_some(),
        machine_cores: plan.machine_cores,
        shards: plan.shards,
        wal_sync: args.wal_sync.clone(),
        min_seconds: args.min_seconds,
        cpu_sample_ms: CPU_SAMPLE_PERIOD.as_millis() as u64,
        cells,
    };
    write_outputs(args, &report)
}

/// Prints the table and writes the files.
fn write_outputs(args: &MatrixArgs, report: &MatrixReport) -> Result<(), String> {
    print!("{}", report.render_table());
    let write = |path: &PathBuf, text: &str| {
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    let csv = args.out_dir.join("matrix.csv");
    write(&csv, &report.render_csv())?;
    let svg = args.out_dir.join("matrix.svg");
    write(&svg, &report.render_svg())?;
    println!("wrote {} and {}", csv.display(), svg.display());
    if let Some(path) = &args.json {
        write(path, &report.to_json()?)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(hosts: u32, instants: i64) -> CpuOnlyConfig {
        let start_ns = 1_000_000_000_000;
        CpuOnlyConfig {
            hosts,
            start_ns,
            end_ns: start_ns + instants * 10_000_000_000,
            interval_ns: 10_000_000_000,
            seed: 7,
        }
    }

    fn all_lines(laps: &mut Laps, batch: usize, limit: usize) -> (Vec<String>, u64) {
        let mut lines = Vec::new();
        let mut points = 0;
        while lines.len() < limit {
            let mut body = Vec::new();
            let (rows, p) = laps.write_lines(batch, &mut body);
            if rows == 0 {
                break;
            }
            let text = String::from_utf8(body).unwrap_or_default();
            assert_eq!(text.lines().count() as u64, rows);
            lines.extend(text.lines().map(str::to_string));
            points += p;
        }
        (lines, points)
    }

    fn timestamp(line: &str) -> i64 {
        line.rsplit(' ')
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or(-1)
    }

    #[test]
    fn one_pass_is_the_data_set_with_its_101_fields_per_host_and_instant() {
        let mut laps = Laps::new(true, config(3, 4), false).unwrap();
        let (lines, points) = all_lines(&mut laps, 7, 10_000);
        assert_eq!(lines.len(), 3 * 4 * 9);
        assert_eq!(points, 3 * 4 * devops::FIELDS_TOTAL as u64);
        let mut cpu = Laps::new(false, config(2, 5), false).unwrap();
        let (lines, points) = all_lines(&mut cpu, 3, 10_000);
        assert_eq!((lines.len(), points), (10, 100));
    }

    #[test]
    fn laps_continue_in_time_with_the_same_hosts_and_no_timestamp_twice() {
        let mut laps = Laps::new(true, config(2, 3), true).unwrap();
        // Three laps and a bit: 2 hosts x 3 instants x 9 rows each.
        let (lines, points) = all_lines(&mut laps, 5, 3 * 54 + 10);
        assert!(
            lines.len() >= 3 * 54 + 10,
            "the stream went on past its data set"
        );
        assert_eq!(laps.lap, 3);
        let mut stamps: Vec<(String, i64)> = lines
            .iter()
            .map(|l| (l.split(' ').next().unwrap_or("").to_string(), timestamp(l)))
            .collect();
        let first_lap_end = config(2, 3).start_ns + 3 * 10_000_000_000;
        assert!(
            stamps
                .iter()
                .any(|(_, t)| *t >= first_lap_end + 2 * 30_000_000_000)
        );
        let total = stamps.len();
        stamps.sort();
        stamps.dedup();
        assert_eq!(stamps.len(), total, "a series and timestamp never repeat");
        let per_lap = 2 * 3 * devops::FIELDS_TOTAL as u64;
        assert!(points > 3 * per_lap, "{points}");
        // The same hosts in every lap.
        let host = |l: &String| {
            l.split(",hostname=")
                .nth(1)
                .map(|r| r.split(',').next().unwrap_or("").to_string())
        };
        let mut hosts: Vec<_> = lines.iter().filter_map(host).collect();
        hosts.sort();
        hosts.dedup();
        assert_eq!(hosts, ["host_0", "host_1"]);
    }

    #[test]
    fn the_generator_stops_once_the_time_is_up_but_not_before_the_start() {
        let clock = Arc::new(LoadClock {
            started: OnceLock::new(),
            min_load: Some(Duration::from_millis(30)),
        });
        let laps = Laps::new(false, config(1, 2), true).unwrap();
        let mut produce = producer(laps, 4, Arc::clone(&clock));
        // Before the start: batches whatever the time (the queue fills before the clock).
        std::thread::sleep(Duration::from_millis(40));
        let batch = produce().unwrap().unwrap();
        assert_eq!((batch.rows, batch.points), (4, 40), "two laps of two rows");
        let _ = clock.started.set(Instant::now());
        assert!(produce().unwrap().is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(produce().unwrap().is_none(), "time is up");
        // One pass: no clock, the stream ends with the data set.
        let once = Arc::new(LoadClock {
            started: OnceLock::new(),
            min_load: None,
        });
        let mut produce = producer(Laps::new(false, config(1, 2), false).unwrap(), 4, once);
        assert_eq!(produce().unwrap().map(|b| b.rows), Some(2));
        assert!(produce().unwrap().is_none());
    }

    #[test]
    fn the_sampler_reads_this_process_until_stopped() {
        let sampler = CpuSampler::start(std::process::id());
        let started = Instant::now();
        // Busy for 600 ms: at least two full sampling intervals.
        let mut x = 0u64;
        while started.elapsed() < Duration::from_millis(600) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let samples = sampler.finish();
        assert!(samples.len() >= 3, "{samples:?}");
        assert!(
            samples
                .windows(2)
                .all(|p| p[0].at <= p[1].at && p[0].cpu <= p[1].cpu)
        );
        let cpu = cpu_figures(&samples, 1).unwrap();
        // Busy on one core; other work on a shared machine can take some of it.
        assert!(cpu.max_percent > 20.0, "{cpu:?}");
    }

    #[test]
    fn bad_flags_are_refused_with_a_reason() {
        assert!(check_list("batch", &[1, 50], 100).is_ok());
        assert!(
            check_list("batch", &[], 10)
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(
            check_list("batch", &[0], 10)
                .unwrap_err()
                .contains("at least 1")
        );
        assert_eq!(
            check_list("workers", &[11], 10).unwrap_err(),
            "--workers 11: at most 10"
        );
        assert!(
            check_list("batch", &[1, 50, 1], 100)
                .unwrap_err()
                .contains("lists 1 twice")
        );
        assert_eq!(min_load(0.0), Ok(None));
        assert_eq!(min_load(1.5), Ok(Some(Duration::from_millis(1500))));
        assert!(min_load(-1.0).is_err());
        assert!(min_load(f64::NAN).is_err());
        assert!(server_cores(Some(0), 4).is_err());
        assert!(
            server_cores(Some(5), 4)
                .unwrap_err()
                .contains("has 4 cores")
        );
        assert_eq!(server_cores(None, 4), Ok(4));
        assert_eq!(queue_depth(1), 4);
        assert_eq!(queue_depth(200), 400);
    }
}
