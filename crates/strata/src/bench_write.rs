//! `strata bench write`: load a workload into Strata and report the seeds' figures.
//!
//! Targets: `--embedded` (an in-process engine). The data is generated into memory before
//! the clock starts, so the run measures the engine, not the generator.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use strata_bench::load::{LoadResult, load_embedded};
use strata_bench::stats::{dir_bytes, peak_rss_bytes, process_cpu_time, rss_bytes};
use strata_storage::{Engine, EngineOptions, WalSync};

use crate::generate::{Generator, WorkloadArgs};

/// Flags of `strata bench write`.
#[derive(Debug, Args)]
pub struct WriteArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Write into an in-process engine (the only target until the server lands).
    #[arg(long, default_value_t = true)]
    embedded: bool,
    /// Rows per request.
    #[arg(long, default_value_t = 10_000)]
    batch_rows: usize,
    /// Concurrent writers; 0 means one per core.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Engine shards; 0 means one per core.
    #[arg(long, default_value_t = 0)]
    shards: usize,
    /// Data directory of the engine (created; emptied first unless --keep-existing).
    #[arg(long, default_value = "strata-bench-data")]
    data_dir: PathBuf,
    /// Do not empty the data directory before the run.
    #[arg(long)]
    keep_existing: bool,
    /// WAL durability: always, none, or an interval such as 1s.
    #[arg(long, default_value = "1s")]
    wal_sync: String,
    /// After the load, merge every partition to one part and report its size too.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    compact: bool,
}

/// Parses `always | none | <duration>`.
pub fn parse_wal_sync(text: &str) -> Result<WalSync, String> {
    match text {
        "always" => Ok(WalSync::Always),
        "none" => Ok(WalSync::None),
        other => humantime::parse_duration(other)
            .map(WalSync::Interval)
            .map_err(|e| {
                format!(
                    "--wal-sync {other:?}: expected always, none or a duration such as 1s ({e})"
                )
            }),
    }
}

/// Runs the load and prints the report.
pub fn run(args: &WriteArgs) -> Result<(), String> {
    let wal_sync = parse_wal_sync(&args.wal_sync)?;
    let cores = strata_storage::options::available_cores();
    let workers = if args.workers == 0 {
        cores
    } else {
        args.workers
    };
    let mut generator = Generator::from_args(&args.workload)?;
    let precision = generator.precision();

    eprintln!("generating {} ...", generator.describe());
    let mut batches = Vec::new();
    loop {
        let mut batch = Vec::with_capacity(args.batch_rows * 300);
        if generator.write_lines(args.batch_rows.max(1), &mut batch) == 0 {
            break;
        }
        batches.push(batch);
    }
    let input_bytes: u64 = batches.iter().map(|b| b.len() as u64).sum();
    let batches = Arc::new(batches);

    if !args.keep_existing && args.data_dir.exists() {
        std::fs::remove_dir_all(&args.data_dir)
            .map_err(|e| format!("cannot empty {}: {e}", args.data_dir.display()))?;
    }
    let options = EngineOptions {
        data_dirs: vec![args.data_dir.clone()],
        shards: args.shards,
        wal_sync,
        ..EngineOptions::default()
    };
    let (engine, _) = Engine::open(options).map_err(|e| e.to_string())?;
    let engine = Arc::new(engine);
    let rss_before = rss_bytes().unwrap_or(0);
    let cpu_before = process_cpu_time().unwrap_or_default();

    eprintln!(
        "loading {} batches ({:.1} MB) with {workers} workers into {} shards ...",
        batches.len(),
        input_bytes as f64 / 1e6,
        engine.shard_count()
    );
    let started = Instant::now();
    let load =
        load_embedded(&engine, "bench", &batches, workers, precision).map_err(|e| e.to_string())?;
    let flush_started = Instant::now();
    engine.flush().map_err(|e| e.to_string())?;
    let flush_time = flush_started.elapsed();
    let to_parts = started.elapsed();
    let cpu_load = process_cpu_time()
        .unwrap_or_default()
        .saturating_sub(cpu_before);
    let bytes_flushed = dir_bytes(&args.data_dir);
    let compact_time = if args.compact {
        let t = Instant::now();
        engine.compact().map_err(|e| e.to_string())?;
        Some(t.elapsed())
    } else {
        None
    };
    let bytes_compacted = dir_bytes(&args.data_dir);
    let stats = engine.stats();
    let peak = peak_rss_bytes().unwrap_or(0);

    print_report(&Report {
        load: &load,
        workers,
        shards: engine.shard_count(),
        input_bytes,
        to_parts,
        flush_time,
        compact_time,
        cpu_load,
        cores,
        bytes_flushed,
        bytes_compacted,
        series: stats.series,
        flushes: stats.flushes,
        backpressure_waits: stats.backpressure_waits,
        wal_bytes: stats.wal_bytes_written,
        rss_before,
        peak,
    });
    if let Ok(engine) = Arc::try_unwrap(engine) {
        engine.close().map_err(|e| e.to_string())?;
    }
    Ok(())
}

struct Report<'a> {
    load: &'a LoadResult,
    workers: usize,
    shards: usize,
    input_bytes: u64,
    to_parts: Duration,
    flush_time: Duration,
    compact_time: Option<Duration>,
    cpu_load: Duration,
    cores: usize,
    bytes_flushed: u64,
    bytes_compacted: u64,
    series: u64,
    flushes: u64,
    backpressure_waits: u64,
    wal_bytes: u64,
    rss_before: u64,
    peak: u64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn print_report(r: &Report<'_>) {
    let load = r.load;
    let points = load.points.max(1) as f64;
    let secs = load.elapsed.as_secs_f64().max(1e-9);
    println!("rows            {}", load.rows);
    println!("points          {}", load.points);
    println!("bad lines       {}", load.bad_lines);
    println!("series          {}", r.series);
    println!("workers/shards  {}/{}", r.workers, r.shards);
    println!(
        "ingest          {:.3} s: {:.0} rows/s, {:.0} points/s, {:.1} MB/s of line protocol",
        secs,
        load.rows_per_second(),
        load.points_per_second(),
        r.input_bytes as f64 / 1e6 / secs
    );
    println!(
        "to parts        {:.3} s (final flush {:.3} s): {:.0} points/s",
        r.to_parts.as_secs_f64(),
        r.flush_time.as_secs_f64(),
        points / r.to_parts.as_secs_f64().max(1e-9)
    );
    let per_worker: Vec<String> = load
        .rows_per_worker
        .iter()
        .map(|rows| format!("{:.0}", *rows as f64 / secs))
        .collect();
    println!("rows/s/worker   {}", per_worker.join(" "));
    let l = &load.latencies;
    println!(
        "latency ms      min {:.2} avg {:.2} p50 {:.2} p90 {:.2} p95 {:.2} p99 {:.2} p999 {:.2} max {:.2}",
        ms(l.min()),
        ms(l.mean()),
        ms(l.percentile(50.0)),
        ms(l.percentile(90.0)),
        ms(l.percentile(95.0)),
        ms(l.percentile(99.0)),
        ms(l.percentile(99.9)),
        ms(l.max())
    );
    println!(
        "cpu             {:.0}% of {} cores during ingest+flush",
        r.cpu_load.as_secs_f64() / r.to_parts.as_secs_f64().max(1e-9) / r.cores as f64 * 100.0,
        r.cores
    );
    println!(
        "flushes         {} ({} writer waits for a flush)",
        r.flushes, r.backpressure_waits
    );
    println!(
        "wal written     {:.1} MB ({:.2} bytes/point)",
        r.wal_bytes as f64 / 1e6,
        r.wal_bytes as f64 / points
    );
    println!(
        "disk, flushed   {:.1} MB, {:.3} bytes/point",
        r.bytes_flushed as f64 / 1e6,
        r.bytes_flushed as f64 / points
    );
    if let Some(t) = r.compact_time {
        println!(
            "disk, compacted {:.1} MB, {:.3} bytes/point (compaction {:.2} s)",
            r.bytes_compacted as f64 / 1e6,
            r.bytes_compacted as f64 / points,
            t.as_secs_f64()
        );
    }
    println!(
        "memory          peak RSS {:.0} MB; {:.0} MB before the load (input held in memory)",
        r.peak as f64 / 1e6,
        r.rss_before as f64 / 1e6
    );
}
