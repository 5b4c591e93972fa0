//! One run of `bench scale`: start the server on k cores, place the loader, load with the
//! sampler around the clock, run the query types, stop the server; the run's row and its
//! `write-<run>.json`.

use std::path::PathBuf;

use strata_bench::report::WriteReport;
use strata_bench::scale::queries::QueryScaleRow;
use strata_bench::scale::stages::STAGE_FAMILY;
use strata_bench::scale::{LoaderPlacement, ScaleRow, loader_placement};
use strata_bench::stats::dir_bytes;

use super::loader::Loader;
use super::probe::LoadSampler;
use super::queries::QuerySweep;
use super::{DATABASE, Run, ScaleArgs};
use crate::bench_server::{Server, ServerSpec, data_dirs};
use crate::bench_write::{WriteArgs, measure_probed};

/// The server of a run, logging to `server-<run><log_suffix>.log`.
fn server_spec(args: &ScaleArgs, run: Run, log_suffix: &str) -> ServerSpec {
    let name = run.name(args.sweep());
    ServerSpec {
        cores: Some(run.cores),
        data_dirs: data_dirs(
            &args.disks[..run.disks.min(args.disks.len())],
            &name,
            &args.out_dir,
        ),
        shards: args.shards(run),
        wal_sync: args.wal_sync.clone(),
        tcp: args.tcp,
        log: args.out_dir.join(format!("server-{name}{log_suffix}.log")),
        extra_args: Vec::new(),
    }
}

fn start_server(args: &ScaleArgs, run: Run) -> Result<(Server, Vec<PathBuf>), String> {
    let spec = server_spec(args, run, "");
    let server = Server::start(&spec)?;
    Ok((server, spec.data_dirs))
}

/// What one run measured.
pub(super) struct RunResult {
    pub(super) row: ScaleRow,
    pub(super) report: WriteReport,
    /// Why the run has no stage figures, when it has none.
    pub(super) stages_note: Option<String>,
    pub(super) queries: Vec<QueryScaleRow>,
}

/// The loader's placement in words, for the run's header.
fn describe_placement(placement: &LoaderPlacement, asked: bool, machine_cores: usize) -> String {
    match (&placement.cpus, placement.shares_cores) {
        (Some(_), false) if asked => {
            format!("loader on cores {} (--loader-cores)", placement.describe())
        }
        (Some(_), false) => format!(
            "loader on cores {} (the cores the server does not get)",
            placement.describe()
        ),
        (Some(_), true) => format!(
            "loader on cores {} (--loader-cores): loader shares the server's cores",
            placement.describe()
        ),
        (None, _) => format!(
            "loader unpinned: loader shares the server's cores (the machine has {machine_cores} \
             cores)"
        ),
    }
}

pub(super) fn run_one(
    args: &ScaleArgs,
    run: Run,
    loader: &Loader,
    machine_cores: usize,
    sweep_queries: Option<&QuerySweep>,
) -> Result<RunResult, String> {
    let (mut server, dirs) = start_server(args, run)?;
    let cores = run.cores;
    let placement = loader_placement(
        args.loader_cores.as_ref().map(|list| &list.0[..]),
        cores,
        machine_cores,
        loader.allowed(),
    );
    loader.place(&placement)?;
    eprintln!(
        "{}: server pid {} on cores {} at {}, data in {}; {}",
        run.name(args.sweep()),
        server.pid(),
        strata_bench::scale::cpu_list(cores),
        server.addr,
        display_dirs(&dirs),
        describe_placement(&placement, args.loader_cores.is_some(), machine_cores)
    );
    let write_args = WriteArgs {
        workload: args.workload(run)?,
        embedded: false,
        http: match &server.tcp {
            Some(_) => None,
            None => Some(server.url()),
        },
        tcp: server.tcp.clone(),
        file: args.file.clone(),
        precision: args.precision,
        db: DATABASE.into(),
        batch_rows: args.batch_rows,
        workers: args.writers(cores),
        gzip: false,
        prometheus: false,
        opentsdb: false,
        server_pid: Some(server.pid()),
        server_cores: Some(cores),
        shards: args.shards(run),
        data_dir: Some(dirs[0].clone()),
        keep_existing: false,
        wal_sync: args.wal_sync.clone(),
        retention: "0".into(),
        compact: false,
        json: None,
        pregenerate: args.pregenerate,
    };
    let mut sampler = LoadSampler::new(server.pid(), &server.addr);
    let mut report = measure_probed(&write_args, &mut sampler)?;
    let figures = sampler.figures(report.points);
    let (stages, stages_note) = match figures.stages {
        Ok(Some(costs)) => (Some(costs), None),
        Ok(None) => (
            None,
            Some(format!(
                "the server's /metrics has no {STAGE_FAMILY} (an older server): no stage \
                 accounting for this run"
            )),
        ),
        Err(e) => (None, Some(format!("no stage accounting for this run: {e}"))),
    };
    // SIGTERM flushes: the data's size on disk, and what the queries read.
    let shutdown = server.stop()?;
    let bytes: u64 = dirs.iter().map(|d| dir_bytes(d)).sum();
    let queries = match sweep_queries {
        Some(sweep) => {
            // Queried as parts only, as data is once its memtables flush (after
            // `flush_interval` at the latest): right after the load, each shard's memtable
            // still holds rows without pre-aggregates, k shards k times as many, and the
            // sweep measured that instead of the query path.
            let mut server = Server::reopen(&server_spec(args, run, "-queries"))?;
            let rows = sweep.run(&server.addr, server.pid(), cores, placement.shares_cores)?;
            server.stop()?;
            rows
        }
        None => Vec::new(),
    };
    loader.unpin()?;
    report.disk_bytes = Some(bytes);
    report.bytes_per_point = Some(bytes as f64 / report.points.max(1) as f64);
    report.disk_bytes_note = format!(
        "{} after SIGTERM (the server flushed on the way out in {:.2} s)",
        display_dirs(&dirs),
        shutdown.as_secs_f64()
    );
    let points = report.points.max(1) as f64;
    let row = ScaleRow {
        cores,
        disks: run.disks,
        shards: args.shards(run),
        workers: report.workers,
        rows_per_s: report.rows_per_s,
        points_per_s: report.points_per_s,
        cpu_percent: report.server_cpu_percent.map(|p| p / cores as f64),
        disk_mb_per_s: report.disk_write_mb_per_s,
        memory_mb: report.peak_rss_mb,
        server_cpu_ns_per_point: figures.server_cpu_s.map(|s| s * 1e9 / points),
        loader_cpu_percent: figures
            .loader_cpu_s
            .map(|s| s / report.elapsed_s.max(1e-9) * 100.0),
        loader_cores: placement.describe(),
        loader_shares_cores: placement.shares_cores,
        rate_withheld: report.rate_withheld.clone(),
        stages,
    };
    let json = args
        .out_dir
        .join(format!("write-{}.json", run.name(args.sweep())));
    std::fs::write(
        &json,
        run_json(&report, &row, stages_note.as_deref(), &queries)?,
    )
    .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    Ok(RunResult {
        row,
        report,
        stages_note,
        queries,
    })
}

/// A run's `write-<run>.json`: the write report's figures, then the scale row's own
/// (`server_cpu_ns_per_point`, `loader_cpu_percent`, `loader_cores`,
/// `loader_shares_cores`, `write_stages`, `write_stages_note`) and the run's `queries`.
fn run_json(
    report: &WriteReport,
    row: &ScaleRow,
    stages_note: Option<&str>,
    queries: &[QueryScaleRow],
) -> Result<String, String> {
    let encode = |e: serde_json::Error| format!("cannot encode the report: {e}");
    let mut json = serde_json::to_value(report).map_err(encode)?;
    if let Some(object) = json.as_object_mut() {
        object.insert(
            "server_cpu_ns_per_point".into(),
            serde_json::json!(row.server_cpu_ns_per_point),
        );
        object.insert(
            "loader_cpu_percent".into(),
            serde_json::json!(row.loader_cpu_percent),
        );
        object.insert("loader_cores".into(), serde_json::json!(row.loader_cores));
        object.insert(
            "loader_shares_cores".into(),
            serde_json::json!(row.loader_shares_cores),
        );
        object.insert(
            "write_stages".into(),
            serde_json::to_value(&row.stages).map_err(encode)?,
        );
        object.insert("write_stages_note".into(), serde_json::json!(stages_note));
        object.insert(
            "queries".into(),
            serde_json::to_value(queries).map_err(encode)?,
        );
    }
    serde_json::to_string_pretty(&json).map_err(encode)
}

fn display_dirs(dirs: &[PathBuf]) -> String {
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    names.join(" + ")
}
