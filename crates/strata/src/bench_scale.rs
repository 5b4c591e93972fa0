//! `strata bench scale`: the scaling experiments of seed 000, over cores and over disks.
//!
//! For each k in `--cores`, start `strata serve` (this very binary) confined to the first k
//! cores with `taskset -c 0-(k-1)`, on a free 127.0.0.1 port, a fresh data directory and k
//! shards (or `--shards`); wait for `/ping`; load it over HTTP (or its TCP listener with
//! `--tcp`) with `--workers-per-core` x k writers (or `--writers`; the loader's threads are
//! not pinned), from the workload's generators or a `--file`; read the server's CPU, disk
//! writes and peak memory from /proc; stop it with SIGTERM. Then print seed 000's table and
//! write `scale.csv` and `scale.svg` into `--out-dir`.
//!
//! With `--disks D1,D2,…` the sweep is over disks instead (seed 000's second table): for n
//! = 1 … the number of directories, the server (on one `--cores` count, all cores by
//! default) gets a data directory under each of D1 … Dn and at least n shards, so its
//! partitions spread over the n disks; `--workload large-rows` is the seed's disk workload.

use std::path::PathBuf;

use clap::Args;
use strata_bench::report::WriteReport;
use strata_bench::scale::{
    ScaleRow, Sweep, check_taskset, render_csv, render_disk_table, render_table, write_svg,
};
use strata_bench::stats::dir_bytes;

use crate::bench_server::{Server, ServerSpec, data_dirs};
use crate::bench_write::{WriteArgs, measure};
use crate::generate::WorkloadArgs;

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
    /// Where the data directories, server logs, scale.csv and scale.svg go.
    #[arg(long, default_value = "strata-scale")]
    out_dir: PathBuf,
    /// Generate each run's batches into memory before its clock (as `bench write
    /// --pregenerate`) instead of streaming them during the load.
    #[arg(long)]
    pregenerate: bool,
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

fn start_server(args: &ScaleArgs, run: Run) -> Result<(Server, Vec<PathBuf>), String> {
    let sweep = args.sweep();
    let name = run.name(sweep);
    let dirs = data_dirs(
        &args.disks[..run.disks.min(args.disks.len())],
        &name,
        &args.out_dir,
    );
    let server = Server::start(&ServerSpec {
        cores: Some(run.cores),
        data_dirs: dirs.clone(),
        shards: args.shards(run),
        wal_sync: args.wal_sync.clone(),
        tcp: args.tcp,
        log: args.out_dir.join(format!("server-{name}.log")),
        extra_args: Vec::new(),
    })?;
    Ok((server, dirs))
}

fn run_one(args: &ScaleArgs, run: Run) -> Result<(ScaleRow, WriteReport), String> {
    let (mut server, dirs) = start_server(args, run)?;
    let cores = run.cores;
    eprintln!(
        "{}: server pid {} on cores {} at {}, data in {}",
        run.name(args.sweep()),
        server.pid(),
        strata_bench::scale::cpu_list(cores),
        server.addr,
        display_dirs(&dirs)
    );
    let write_args = WriteArgs {
        workload: args.workload.clone(),
        embedded: false,
        http: match &server.tcp {
            Some(_) => None,
            None => Some(server.url()),
        },
        tcp: server.tcp.clone(),
        file: args.file.clone(),
        precision: args.precision,
        db: "bench".into(),
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
    let mut report = measure(&write_args)?;
    let shutdown = server.stop()?;
    let bytes: u64 = dirs.iter().map(|d| dir_bytes(d)).sum();
    report.disk_bytes = Some(bytes);
    report.bytes_per_point = Some(bytes as f64 / report.points.max(1) as f64);
    report.disk_bytes_note = format!(
        "{} after SIGTERM (the server flushed on the way out in {:.2} s)",
        display_dirs(&dirs),
        shutdown.as_secs_f64()
    );
    let json = args
        .out_dir
        .join(format!("write-{}.json", run.name(args.sweep())));
    std::fs::write(&json, report.to_json()?)
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
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
    };
    Ok((row, report))
}

fn display_dirs(dirs: &[PathBuf]) -> String {
    let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    names.join(" + ")
}

/// Runs the experiment and prints the table; writes scale.csv and scale.svg.
pub fn run(args: &ScaleArgs) -> Result<(), String> {
    check_taskset()?;
    let machine_cores = strata_storage::options::available_cores();
    let runs = args.runs(machine_cores)?;
    let sweep = args.sweep();
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let mut rows = Vec::new();
    let mut withheld = Vec::new();
    for &run in &runs {
        let (row, report) = run_one(args, run)?;
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
        rows.push(row);
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
    let csv = args.out_dir.join("scale.csv");
    std::fs::write(&csv, render_csv(&rows, sweep))
        .map_err(|e| format!("cannot write {}: {e}", csv.display()))?;
    let svg = args.out_dir.join("scale.svg");
    write_svg(&rows, sweep, &svg).map_err(|e| e.to_string())?;
    println!("wrote {} and {}", csv.display(), svg.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

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
