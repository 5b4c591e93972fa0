//! `strata bench compare`: load the same request bodies into Strata and its peers (the
//! user's own running InfluxDB 1.x and VictoriaMetrics servers; Strata downloads nothing),
//! one target after the other, run TSBS's queries against each in the language it speaks,
//! and print one side-by-side table, with `compare.csv` and `compare.svg` in `--out-dir`.
//!
//! Why it is built this way:
//! - Same bytes: before each target's clock the workload is generated (or `--file` read)
//!   again from its seed into memory through `bench write`'s batch path, and an FNV-1a
//!   checksum of the bodies is taken. Every target must show the same checksum, or the run
//!   fails: the checksum proves the generator's determinism rather than assuming it. One
//!   target's bodies are in memory at a time (about 330 bytes a cpu-only row).
//! - One target at a time: loads and queries never overlap, so no target competes with
//!   another for the machine. Confining each to the same cores (taskset) is the user's job;
//!   the tool reads each server's `Cpus_allowed_list` (given `pid=`) and warns when they
//!   differ.
//! - Every target speaks the InfluxDB 1.x write API (`POST /write?db=…&precision=…`), so
//!   the same `HttpTarget` loads all of them; `CREATE DATABASE` first where needed.
//! - Queries (cpu-only only): InfluxQL over `/query` for Strata and InfluxDB, PromQL over
//!   `/api/v1/query_range` for VictoriaMetrics, and both on Strata when a VictoriaMetrics
//!   target is present (or with `--promql-on-strata`), so Strata has a same-language number
//!   beside each peer. The same drawn hosts and windows are worded in each language.
//! - Bytes per point (given `data=`) are measured after each server's own flush: Strata's
//!   backup endpoint (it flushes the memtables first), VictoriaMetrics'
//!   `/internal/force_flush`; InfluxDB 1.x has none, so its figure includes the WAL and the
//!   report says so.
//!
//! Module map:
//! - this file: the flags, the plan every target shares, the run, and the files written.
//! - `load`: the request bodies generated (and checksummed) before each target's clock,
//!   `CREATE DATABASE`, and the load itself.
//! - `measure`: one target measured end to end (load, server CPU and RSS, flush, bytes per
//!   point, queries).
//! - `flush`: asking each server to flush before its data directory is measured.
//! - `queries`: drawing TSBS's queries once and running them in each target's languages.

mod flush;
mod load;
mod measure;
mod queries;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use strata_bench::compare::{
    Comparison, TargetKind, TargetSpec, affinity_notes, allowed_cores, render_csv, render_svg,
    render_table,
};
use strata_bench::http::percent_encode;
use strata_bench::queries::{Query, QueryType};
use strata_lineproto::Precision;

use crate::generate::{Workload, WorkloadArgs};
use measure::measure_target;
use queries::draw_queries;

/// Rows per request for cpu-only and devops (TSBS's batch size, as `bench write`).
const CPU_ONLY_BATCH_ROWS: usize = 10_000;
/// Records per request for meters (taosBenchmark's default), capped to rows per meter.
const METERS_BATCH_ROWS: usize = 30_000;
/// Rows per request for the large-rows workload (32,524-byte rows: about 3 MB a request).
const LARGE_ROWS_BATCH_ROWS: usize = 100;
/// How long a write request may take before the loader counts it failed.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a query, `CREATE DATABASE` or flush may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(300);
/// The query types run unless `--types`: one of each TSBS family that is cheap enough for
/// a small data set.
const DEFAULT_TYPES: [&str; 5] = [
    "single-groupby-1-1-1",
    "single-groupby-5-1-12",
    "cpu-max-all-8",
    "double-groupby-1",
    "lastpoint",
];

/// Flags of `strata bench compare`. The workload flags are `bench write`'s, with a smaller
/// default size (100 hosts, one day: 864,000 rows), since every target loads it in turn.
#[derive(Debug, Args)]
#[command(
    mut_arg("hosts", |a| a.default_value("100")),
    mut_arg("duration", |a| a.default_value("1day"))
)]
pub struct CompareArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// A server to load and query, in load order; give one per server (at least one):
    /// NAME=URL[,pid=PID][,data=DIR][,kind=strata|influxdb|victoriametrics]. The kind
    /// defaults from NAME when NAME is a kind. pid: the server's CPU time, peak RSS and
    /// allowed cores from /proc; data: its data directory, for bytes per point.
    #[arg(
        long = "target",
        value_name = "NAME=URL[,pid=PID][,data=DIR][,kind=KIND]",
        required = true,
        value_parser = TargetSpec::parse
    )]
    targets: Vec<TargetSpec>,
    /// Load this line-protocol file (gzip when it ends in .gz) instead of generating the
    /// workload; no queries then run (they need the generated data's hosts and span).
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Unit of the timestamps in --file: ns, us, ms or s.
    #[arg(long, default_value = "ns", requires = "file")]
    precision: Precision,
    /// Database to create, write to and query on every target.
    #[arg(long, default_value = "bench")]
    db: String,
    /// Rows per request [cpu-only 10,000; meters 30,000 capped to rows per meter].
    #[arg(long)]
    batch_rows: Option<usize>,
    /// Concurrent writers per load (one connection each); 0 means one per core.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Queries per type and target (cpu-only), run by one client.
    #[arg(long, default_value_t = 20)]
    queries: usize,
    /// Query types, comma-separated [default: single-groupby-1-1-1, single-groupby-5-1-12,
    /// cpu-max-all-8, double-groupby-1, lastpoint]. Any TSBS devops type of `bench query`;
    /// TSBS has PromQL for single-groupby, cpu-max-all and double-groupby only.
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Seed of the queries' random hosts and windows [default: --seed].
    #[arg(long)]
    query_seed: Option<u64>,
    /// No query of a type starts after this many seconds (per target and language).
    #[arg(long, default_value_t = 60.0)]
    max_seconds: f64,
    /// Also run the PromQL queries on Strata targets (done anyway when a VictoriaMetrics
    /// target is present).
    #[arg(long)]
    promql_on_strata: bool,
    /// Where compare.csv, compare.svg and Strata's flush scratch go.
    #[arg(long, default_value = "strata-compare")]
    out_dir: PathBuf,
    /// Also write the comparison as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// What every target shares: the load's shape and the queries, drawn once.
struct Plan {
    workers: usize,
    batch_rows: usize,
    /// The drawn queries (SQL wording), per type; empty when no queries run.
    queries: Vec<(QueryType, Vec<Query>)>,
    promql_on_strata: bool,
    max_duration: Duration,
    notes: Vec<String>,
}

/// Runs the comparison, prints the table and writes the files. `Ok(false)` when a load
/// request or a query failed (all of it is still reported); an error when the targets were
/// sent different bodies.
pub fn run(args: &CompareArgs) -> Result<bool, String> {
    let plan = plan(args)?;
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let mut comparison = Comparison {
        database: args.db.clone(),
        batch_rows: plan.batch_rows,
        query_types: plan.queries.iter().map(|(t, _)| t.name()).collect(),
        queries_per_type: args.queries,
        ..Comparison::default()
    };
    for spec in &args.targets {
        eprintln!("== {} ({}) at {} ==", spec.name, spec.kind.name(), spec.url);
        let (result, workload, workers) = measure_target(args, &plan, spec)?;
        comparison.workload = workload;
        comparison.workers = workers;
        comparison.targets.push(result);
    }
    let cores: Vec<(String, Option<String>)> = comparison
        .targets
        .iter()
        .map(|t| (t.name.clone(), t.cores.clone()))
        .collect();
    comparison.notes = affinity_notes(&cores, allowed_cores(None).as_deref());
    comparison.notes.extend(plan.notes.iter().cloned());
    print_and_write(args, &comparison)?;
    comparison.same_bodies()?;
    Ok(comparison.failures().is_empty())
}

/// Checks the flags and draws the queries.
fn plan(args: &CompareArgs) -> Result<Plan, String> {
    let mut names: Vec<&str> = args.targets.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    if let Some(pair) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "--target name {:?} is given twice: each target needs its own name",
            pair[0]
        ));
    }
    if args.queries == 0 {
        return Err("--queries must be at least 1".into());
    }
    if !(args.max_seconds > 0.0 && args.max_seconds.is_finite()) {
        return Err(format!(
            "--max-seconds {} must be a positive number",
            args.max_seconds
        ));
    }
    let workers = match args.workers {
        0 => strata_storage::options::available_cores(),
        n => n,
    };
    let promql_on_strata = args.promql_on_strata
        || args
            .targets
            .iter()
            .any(|t| t.kind == TargetKind::VictoriaMetrics);
    let mut notes = Vec::new();
    let queries = draw_queries(args, &mut notes)?;
    Ok(Plan {
        workers,
        batch_rows: batch_rows(args),
        queries,
        promql_on_strata,
        max_duration: Duration::from_secs_f64(args.max_seconds),
        notes,
    })
}

/// The batch size: the flag, or the workload's default (meters: capped to rows per meter).
fn batch_rows(args: &CompareArgs) -> usize {
    let rows = match (args.batch_rows, args.workload.workload) {
        (Some(rows), _) => rows,
        (None, _) if args.file.is_some() => CPU_ONLY_BATCH_ROWS,
        (None, Workload::CpuOnly | Workload::Devops) => CPU_ONLY_BATCH_ROWS,
        (None, Workload::Meters) => {
            let cap = usize::try_from(args.workload.rows_per_meter()).unwrap_or(usize::MAX);
            METERS_BATCH_ROWS.min(cap)
        }
        (None, Workload::LargeRows) => LARGE_ROWS_BATCH_ROWS,
    };
    rows.max(1)
}

/// Prints the table and writes compare.csv, compare.svg and the JSON.
fn print_and_write(args: &CompareArgs, comparison: &Comparison) -> Result<(), String> {
    let first = comparison.targets.first();
    println!(
        "strata bench compare: {}; {} rows, {} points per target; {} writers, {} rows a \
         request; database {}",
        comparison.workload,
        first.map_or(0, |t| t.load.rows_generated),
        first.map_or(0, |t| t.load.points),
        comparison.workers,
        comparison.batch_rows,
        comparison.database
    );
    println!();
    print!("{}", render_table(comparison));
    let csv = args.out_dir.join("compare.csv");
    write(&csv, render_csv(comparison).as_bytes())?;
    let svg = args.out_dir.join("compare.svg");
    write(&svg, render_svg(comparison).as_bytes())?;
    println!("wrote {} and {}", csv.display(), svg.display());
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(comparison)
            .map_err(|e| format!("cannot encode the comparison: {e}"))?;
        write(path, json.as_bytes())?;
    }
    Ok(())
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: CompareArgs,
    }

    pub(super) fn parse(extra: &[&str]) -> Result<CompareArgs, String> {
        let argv = ["compare"].iter().chain(extra);
        Cli::try_parse_from(argv)
            .map(|c| c.args)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn flags_parse_with_the_small_default_size() {
        let args = parse(&[
            "--target",
            "strata=http://127.0.0.1:1,pid=7",
            "--target",
            "influxdb=http://127.0.0.1:2,data=/d",
        ])
        .unwrap();
        assert_eq!(args.targets.len(), 2);
        assert_eq!(args.targets[1].kind, TargetKind::InfluxDb);
        assert_eq!(args.queries, 20);
        let config = args.workload.cpu_only_config().unwrap();
        assert_eq!(config.hosts, 100);
        assert_eq!(config.end_ns - config.start_ns, 86_400 * 1_000_000_000);
        let err = parse(&[]).unwrap_err();
        assert!(err.contains("--target"), "{err}");
        let err = parse(&["--target", "peer=http://h:1"]).unwrap_err();
        assert!(err.contains("add kind=strata"), "{err}");
    }

    #[test]
    fn the_plan_draws_the_default_types_and_checks_flags() {
        let args = parse(&[
            "--target",
            "strata=http://127.0.0.1:1",
            "--hosts",
            "10",
            "--duration",
            "2h",
            "--queries",
            "3",
        ])
        .unwrap();
        let drawn = plan(&args).unwrap();
        let names: Vec<String> = drawn.queries.iter().map(|(t, _)| t.name()).collect();
        assert_eq!(names, DEFAULT_TYPES);
        assert!(drawn.queries.iter().all(|(_, q)| q.len() == 3));
        assert!(!drawn.promql_on_strata);
        assert!(
            drawn
                .notes
                .iter()
                .any(|n| n.starts_with("single-groupby-5-1-12: its window is longer")),
            "{:?}",
            drawn.notes
        );
        let twice = parse(&[
            "--target",
            "a=http://h:1,kind=strata",
            "--target",
            "a=http://h:2,kind=influxdb",
        ])
        .unwrap();
        assert!(plan(&twice).err().unwrap().contains("\"a\" is given twice"));
        let vm = parse(&[
            "--target",
            "strata=http://h:1",
            "--target",
            "victoriametrics=http://h:2",
            "--types",
            "lastpoint",
        ])
        .unwrap();
        assert!(plan(&vm).unwrap().promql_on_strata);
        let meters = parse(&[
            "--target",
            "strata=http://h:1",
            "--workload",
            "meters",
            "--types",
            "lastpoint",
        ])
        .unwrap();
        assert!(
            plan(&meters)
                .err()
                .unwrap()
                .contains("cpu-only workload only")
        );
        let zero = parse(&["--target", "strata=http://h:1", "--queries", "0"]).unwrap();
        assert!(plan(&zero).err().unwrap().contains("at least 1"));
    }
}
