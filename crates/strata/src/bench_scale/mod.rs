//! `strata bench scale`: the scaling experiments of seed 000, over cores and over disks
//! (issue 21: linear core scaling). Every column and file: `docs/bench-scale.md`.
//!
//! For each k in `--cores`, start `strata serve` (this very binary) confined to the first k
//! cores with `taskset -c 0-(k-1)`, on a free 127.0.0.1 port, a fresh data directory and k
//! shards (or `--shards`); wait for `/ping`; pin the loader (this process) to the cores the
//! server does not get, or to `--loader-cores` (unpinned when the server gets every core:
//! then it shares the server's cores, and the row says so); load it over HTTP (or its TCP
//! listener with `--tcp`) with `--workers-per-core` x k writers (or `--writers`), from the
//! workload's generators or a `--file`; read the server's CPU, disk writes and peak memory
//! from /proc, the loader's CPU from /proc/self, and the server's write stages from its
//! `/metrics` (scraped right before the load's clock starts and right after it stops);
//! with `--queries TYPE,…`, run each query type with k clients for `--query-seconds`; stop
//! the server with SIGTERM. Then print seed 000's table, the stages side by side and the
//! query table, and write `scale.csv`, `scale.svg`, `stages.csv`, `scale-queries.csv` (with
//! `--queries`) and `scale.json` into `--out-dir`.
//!
//! With `--disks D1,D2,…` the sweep is over disks instead (seed 000's second table): for n
//! = 1 … the number of directories, the server (on one `--cores` count, all cores by
//! default) gets a data directory under each of D1 … Dn and at least n shards, so its
//! partitions spread over the n disks; `--workload large-rows` is the seed's disk workload.

mod loader;
mod one_run;
mod probe;
mod queries;

use std::path::PathBuf;

use clap::Args;
use strata_bench::scale::queries::{QueryScaleRow, render_query_csv, render_query_table};
use strata_bench::scale::stages::{
    STAGE_FAMILY, render_stage_sweep, render_stage_table, render_stages_csv,
};
use strata_bench::scale::{
    ScaleRow, Sweep, check_taskset, parse_cpu_list, render_csv, render_disk_table, render_table,
    write_svg,
};

use self::loader::Loader;
use self::one_run::run_one;
use self::queries::QuerySweep;
use crate::bench_query::ProtocolArg;
use crate::generate::WorkloadArgs;

/// The database every run loads (and queries).
const DATABASE: &str = "bench";

/// Flags of `strata bench scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Core counts to run the server on, e.g. 1,2,4 [1,2; with --disks one count, all the
    /// machine's cores by default].
    #[arg(long, value_delimiter = ',')]
    cores: Vec<usize>,
    /// Sweep over disks instead of cores: run 1, 2, … n data directories, one under each of
    /// these paths (one per disk), e.g. /mnt/d1,/mnt/d2,/mnt/d3.
    #[arg(long, value_delimiter = ',', value_name = "DIR,…")]
    disks: Vec<PathBuf>,
    /// Loader writers per server core (each with its own keep-alive connection).
    #[arg(long, default_value_t = 2)]
    workers_per_core: usize,
    /// Loader writers in all, whatever the core count (instead of --workers-per-core).
    #[arg(long, value_name = "N")]
    writers: Option<usize>,
    /// Server shards (TDengine's vgroups) in every run; 0 means one per server core (and at
    /// least one per data directory).
    #[arg(long, default_value_t = 0)]
    shards: usize,
    /// Load this line-protocol file (gzip when it ends in .gz) in every run instead of
    /// generating the workload.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Unit of the timestamps in --file: ns, us, ms or s.
    #[arg(long, default_value = "ns", requires = "file")]
    precision: strata_lineproto::Precision,
    /// Write over the server's plain TCP line-protocol listener instead of HTTP
    /// (asynchronous: the rate is what the loader sent; the server flushes it all before
    /// exiting, so bytes per point still count every row).
    #[arg(long)]
    tcp: bool,
    /// Rows per request [cpu-only 10,000; meters 30,000 capped to rows per meter].
    #[arg(long)]
    batch_rows: Option<usize>,
    /// WAL durability of the server (passed to `strata serve --wal-sync`).
    #[arg(long, default_value = "1s")]
    wal_sync: String,
    /// The workload flags describe the 1-core run's data; a run on k cores loads k times as
    /// much (cpu-only, devops: --duration x k; meters, large-rows: --rows-per-meter x k), so
    /// that every run lasts about as long when the writes scale (the 10 s rule at every k
    /// without making k = 1 run for minutes). Queries are drawn over the 1-core data, which
    /// every run holds.
    #[arg(long, conflicts_with_all = ["file", "disks"])]
    size_per_core: bool,
    /// Where the data directories, server logs, scale.csv and scale.svg go.
    #[arg(long, default_value = "strata-scale")]
    out_dir: PathBuf,
    /// Generate each run's batches into memory before its clock (as `bench write
    /// --pregenerate`) instead of streaming them during the load.
    #[arg(long)]
    pregenerate: bool,
    /// Pin the loader (this process: writers, batch generators, query clients) to these
    /// cores in every run, in taskset's form (e.g. 2-15 or 0,3,5-7) [default: the cores the
    /// server does not get, when the machine has more than k; else unpinned, sharing the
    /// server's cores].
    #[arg(long, value_name = "LIST", value_parser = parse_loader_cores)]
    loader_cores: Option<CpuList>,
    /// After each run's load, run these query types (as `bench query --types` names them,
    /// e.g. double-groupby-1,lastpoint) with k clients, k the server's cores, for
    /// --query-seconds each; writes scale-queries.csv. The workload flags must describe the
    /// loaded data (as for `bench query`).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "TYPE,…",
        conflicts_with = "disks"
    )]
    queries: Vec<String>,
    /// Seconds each query type runs per core count (at least 10 for a rate: shorter runs
    /// are reported, marked as not a rate).
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    query_seconds: f64,
    /// Language of --queries: SQL on /sql (JSON answers), or InfluxQL in TSBS's wording on
    /// /query (cpu-only types only).
    #[arg(long, value_enum, default_value = "sql")]
    query_protocol: ProtocolArg,
}

/// `--loader-cores`' CPUs. A type of its own: clap reads an `Option<Vec<_>>` field as a
/// list of values, each parsed alone, not as one value parsed into a list.
#[derive(Debug, Clone)]
struct CpuList(Vec<usize>);

fn parse_loader_cores(text: &str) -> Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

/// One run of a sweep: the server's cores and its data directories.
#[derive(Debug, Clone, Copy)]
struct Run {
    cores: usize,
    disks: usize,
}

impl Run {
    /// The run's name in file names: `2cores`, or `3disks` in a disk sweep.
    fn name(self, sweep: Sweep) -> String {
        match sweep {
            Sweep::Cores => format!("{}cores", self.cores),
            Sweep::Disks => format!("{}disks", self.disks),
        }
    }

    /// The run in words: `on 2 core(s)`, or `on 3 disk(s)` in a disk sweep.
    fn label(self, sweep: Sweep) -> String {
        match sweep {
            Sweep::Cores => format!("on {} core(s)", self.cores),
            Sweep::Disks => format!("on {} disk(s)", self.disks),
        }
    }
}

impl ScaleArgs {
    fn sweep(&self) -> Sweep {
        if self.disks.is_empty() {
            Sweep::Cores
        } else {
            Sweep::Disks
        }
    }

    /// Server shards for a run.
    fn shards(&self, run: Run) -> usize {
        if self.shards == 0 {
            run.cores.max(run.disks)
        } else {
            self.shards
        }
    }

    /// The workload a run loads: the flags' own, or k times it with --size-per-core.
    fn workload(&self, run: Run) -> Result<WorkloadArgs, String> {
        if self.size_per_core {
            let factor = u32::try_from(run.cores).map_err(|_| "too many cores".to_string())?;
            self.workload.grown(factor)
        } else {
            Ok(self.workload.clone())
        }
    }

    /// Loader writers for a run on `cores` cores.
    fn writers(&self, cores: usize) -> usize {
        self.writers.unwrap_or(self.workers_per_core * cores).max(1)
    }

    /// The runs of the sweep, with the flags checked against a machine of `machine_cores`.
    fn runs(&self, machine_cores: usize) -> Result<Vec<Run>, String> {
        if self.cores.contains(&0) {
            return Err("--cores needs core counts of at least 1, e.g. --cores 1,2".into());
        }
        if let Some(k) = self.cores.iter().find(|k| **k > machine_cores) {
            return Err(format!(
                "--cores {k}: this machine has {machine_cores} cores"
            ));
        }
        if self.disks.is_empty() {
            let cores = if self.cores.is_empty() {
                vec![1, 2.min(machine_cores)]
            } else {
                self.cores.clone()
            };
            let mut runs: Vec<Run> = cores
                .into_iter()
                .map(|cores| Run { cores, disks: 1 })
                .collect();
            runs.dedup_by_key(|r| r.cores);
            return Ok(runs);
        }
        let cores = match self.cores.as_slice() {
            [] => machine_cores,
            [k] => *k,
            _ => {
                return Err(
                    "--disks sweeps disks on one core count: give --cores one number (or none \
                     for all cores)"
                        .into(),
                );
            }
        };
        Ok((1..=self.disks.len())
            .map(|disks| Run { cores, disks })
            .collect())
    }
}

/// Writes `text` to `name` under the out dir; returns the path.
fn write_out(args: &ScaleArgs, name: &str, text: &str) -> Result<PathBuf, String> {
    let path = args.out_dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Runs the experiment and prints the tables; writes scale.csv, scale.svg, stages.csv,
/// scale-queries.csv (with --queries) and scale.json.
pub fn run(args: &ScaleArgs) -> Result<(), String> {
    check_taskset()?;
    let machine_cores = strata_storage::options::available_cores();
    let runs = args.runs(machine_cores)?;
    let sweep = args.sweep();
    let loader = Loader::new()?;
    let query_sweep = if args.queries.is_empty() {
        None
    } else {
        Some(QuerySweep::new(
            &args.workload,
            &args.queries,
            args.query_seconds,
            args.query_protocol,
            DATABASE,
        )?)
    };
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let mut rows = Vec::new();
    let mut query_rows = Vec::new();
    let mut withheld = Vec::new();
    for &run in &runs {
        let result = run_one(args, run, &loader, machine_cores, query_sweep.as_ref())?;
        let (row, report) = (&result.row, &result.report);
        if report.rate_withheld.is_some() {
            withheld.push(run.label(sweep));
        }
        match sweep {
            Sweep::Cores => println!("== server on {} core(s) ==", run.cores),
            Sweep::Disks => println!(
                "== server on {} core(s), {} data directories ==",
                run.cores, run.disks
            ),
        }
        print!("{}", report.render());
        if report.errors > 0 {
            eprintln!(
                "warning: {}: {} requests failed; the rate counts acknowledged rows only",
                run.label(sweep),
                report.errors
            );
        }
        let cpu = |v: Option<f64>, unit: &str| {
            v.map_or_else(|| "n/a".into(), |v| format!("{v:.0}{unit}"))
        };
        println!(
            "loader: cores {}{}, CPU {} of one core; server CPU {} per point",
            row.loader_cores,
            if row.loader_shares_cores {
                " (loader shares the server's cores)"
            } else {
                ""
            },
            cpu(row.loader_cpu_percent, "%"),
            cpu(row.server_cpu_ns_per_point, " ns"),
        );
        match (&row.stages, &result.stages_note) {
            (Some(costs), _) => {
                print!("{}", render_stage_table(costs, row.server_cpu_ns_per_point))
            }
            (None, Some(note)) => println!("note: {note}"),
            (None, None) => {}
        }
        if !result.queries.is_empty() {
            print!("{}", render_query_table(&result.queries));
        }
        rows.push(result.row);
        query_rows.extend(result.queries);
        // After every run, so that a sweep cut short keeps the runs it finished.
        write_files(args, &rows, &query_rows, query_sweep.is_some())?;
    }
    println!();
    match sweep {
        Sweep::Cores => print!("{}", render_table(&rows, machine_cores)),
        Sweep::Disks => print!("{}", render_disk_table(&rows)),
    }
    if !withheld.is_empty() {
        println!(
            "note: the runs {} were too short or too small for a rate (see their reports \
             above): their rows are not rates; load more data",
            withheld.join(", ")
        );
    }
    let stage_table = render_stage_sweep(&rows, sweep);
    println!();
    if stage_table.is_empty() {
        println!(
            "note: no run has write stages: the server's /metrics has no {STAGE_FAMILY} (an \
             older server) or could not be read (see each run above); stages.csv has only \
             its header"
        );
    } else {
        print!("{stage_table}");
    }
    if let Some(query_sweep) = &query_sweep {
        println!();
        println!(
            "queries: {} with k clients for {:.1} s per type and core count",
            query_sweep.describe(),
            args.query_seconds
        );
        print!("{}", render_query_table(&query_rows));
    }
    let written = write_files(args, &rows, &query_rows, query_sweep.is_some())?;
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}

/// Writes scale.csv, scale.svg, stages.csv, scale-queries.csv (with queries) and
/// scale.json for the runs so far; returns their paths.
fn write_files(
    args: &ScaleArgs,
    rows: &[ScaleRow],
    query_rows: &[QueryScaleRow],
    queried: bool,
) -> Result<Vec<PathBuf>, String> {
    let sweep = args.sweep();
    let mut written = vec![write_out(args, "scale.csv", &render_csv(rows, sweep))?];
    let svg = args.out_dir.join("scale.svg");
    write_svg(rows, sweep, &svg).map_err(|e| e.to_string())?;
    written.push(svg);
    written.push(write_out(args, "stages.csv", &render_stages_csv(rows))?);
    if queried {
        written.push(write_out(
            args,
            "scale-queries.csv",
            &render_query_csv(query_rows),
        )?);
    }
    let json = serde_json::json!({ "runs": rows, "queries": query_rows });
    let json = serde_json::to_string_pretty(&json)
        .map_err(|e| format!("cannot encode scale.json: {e}"))?;
    written.push(write_out(args, "scale.json", &json)?);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::bench_server::data_dirs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ScaleArgs,
    }

    fn runs(flags: &[&str], machine_cores: usize) -> Result<Vec<(usize, usize, usize)>, String> {
        let cli = Cli::try_parse_from(std::iter::once("scale").chain(flags.iter().copied()))
            .map_err(|e| e.to_string())?;
        let args = cli.args;
        Ok(args
            .runs(machine_cores)?
            .into_iter()
            .map(|r| (r.cores, r.disks, args.shards(r)))
            .collect())
    }

    #[test]
    fn a_core_sweep_runs_each_core_count_on_one_directory() {
        assert_eq!(runs(&[], 16).unwrap(), [(1, 1, 1), (2, 1, 2)]);
        assert_eq!(
            runs(&["--cores", "1,4,8"], 16).unwrap(),
            [(1, 1, 1), (4, 1, 4), (8, 1, 8)]
        );
        assert_eq!(
            runs(&["--cores", "2", "--shards", "12"], 2).unwrap(),
            [(2, 1, 12)]
        );
        assert!(
            runs(&["--cores", "0"], 2)
                .unwrap_err()
                .contains("at least 1")
        );
        assert!(
            runs(&["--cores", "3"], 2)
                .unwrap_err()
                .contains("has 2 cores")
        );
    }

    fn workload_rows(flags: &[&str], cores: usize) -> Result<u64, String> {
        let cli = Cli::try_parse_from(std::iter::once("scale").chain(flags.iter().copied()))
            .map_err(|e| e.to_string())?;
        let workload = cli.args.workload(Run { cores, disks: 1 })?;
        let generators = crate::generate::Generator::for_workers(&workload, 2)?;
        Ok(generators.iter().map(|g| g.rows_total()).sum())
    }

    #[test]
    fn size_per_core_gives_k_cores_k_times_the_data() {
        let cpu = ["--hosts", "10", "--duration", "1h"];
        assert_eq!(workload_rows(&cpu, 1).unwrap(), 3_600);
        assert_eq!(workload_rows(&cpu, 3).unwrap(), 3_600);
        let grown = [&cpu[..], &["--size-per-core"]].concat();
        assert_eq!(workload_rows(&grown, 1).unwrap(), 3_600);
        assert_eq!(workload_rows(&grown, 3).unwrap(), 10_800);
        let meters = [
            "--workload",
            "meters",
            "--meters",
            "4",
            "--rows-per-meter",
            "250",
            "--size-per-core",
        ];
        assert_eq!(workload_rows(&meters, 1).unwrap(), 1_000);
        assert_eq!(workload_rows(&meters, 12).unwrap(), 12_000);
        let file = ["--size-per-core", "--file", "x.lp"];
        assert!(workload_rows(&file, 1).unwrap_err().contains("--file"));
    }

    #[test]
    fn a_disk_sweep_adds_one_directory_a_run_on_one_core_count() {
        let disks = ["--disks", "/d1,/d2,/d3"];
        assert_eq!(runs(&disks, 2).unwrap(), [(2, 1, 2), (2, 2, 2), (2, 3, 3)]);
        let one_core = [&disks[..], &["--cores", "1"]].concat();
        assert_eq!(
            runs(&one_core, 2).unwrap(),
            [(1, 1, 1), (1, 2, 2), (1, 3, 3)]
        );
        let two_counts = [&disks[..], &["--cores", "1,2"]].concat();
        assert!(runs(&two_counts, 2).unwrap_err().contains("one number"));
        let cli = Cli::try_parse_from(["scale", "--disks", "/d1,/d2"]).unwrap();
        let dirs = data_dirs(
            &cli.args.disks[..2],
            &Run { cores: 2, disks: 2 }.name(Sweep::Disks),
            &cli.args.out_dir,
        );
        assert_eq!(
            dirs,
            [
                PathBuf::from("/d1/data-2disks"),
                PathBuf::from("/d2/data-2disks")
            ]
        );
    }
}
