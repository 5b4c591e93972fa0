//! `strata bench scale`: the core-scaling experiment of seed 000.
//!
//! For each k in `--cores`, start `strata serve` (this very binary) confined to the first k
//! cores with `taskset -c 0-(k-1)`, on a free 127.0.0.1 port, a fresh data directory and k
//! shards (or `--shards`); wait for `/ping`; load it over HTTP (or its TCP listener with
//! `--tcp`) with `--workers-per-core` x k writers (or `--writers`; the loader's threads are
//! not pinned), from the workload's generators or a `--file`; read the server's CPU, disk writes and peak memory
//! from /proc; stop it with SIGTERM. Then print seed 000's table and write `scale.csv` and
//! `scale.svg` into `--out-dir`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use strata_bench::http::HttpClient;
use strata_bench::report::WriteReport;
use strata_bench::scale::{
    ScaleRow, affinity_command, check_taskset, render_csv, render_table, write_svg,
};
use strata_bench::stats::dir_bytes;

use crate::bench_write::{WriteArgs, measure};
use crate::generate::WorkloadArgs;

/// How long a fresh server may take to answer `/ping`.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to flush and exit after SIGTERM.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(300);
/// Time between two polls while waiting for the server.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Flags of `strata bench scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Core counts to run the server on, e.g. 1,2,4.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    cores: Vec<usize>,
    /// Loader writers per server core (each with its own keep-alive connection).
    #[arg(long, default_value_t = 2)]
    workers_per_core: usize,
    /// Loader writers in all, whatever the core count (instead of --workers-per-core).
    #[arg(long, value_name = "N")]
    writers: Option<usize>,
    /// Server shards (TDengine's vgroups) in every run; 0 means one per server core.
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

/// A running server child; killed (SIGKILL) if dropped before it was stopped.
struct Server {
    child: Child,
    addr: String,
    /// The TCP line-protocol listener, with `--tcp`.
    tcp: Option<String>,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Server {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// Waits until `GET /ping` answers 204 (or the child dies, or the timeout passes).
    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < STARTUP_TIMEOUT {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the server exited ({status}) before answering /ping; its log {}:\n{}",
                    self.log.display(),
                    self.log_tail()
                ));
            }
            let mut client = HttpClient::new(&self.addr, Duration::from_secs(2));
            if client.get("/ping").is_ok_and(|r| r.status == 204) {
                return Ok(());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        Err(format!(
            "the server did not answer /ping on {} within {STARTUP_TIMEOUT:?}; its log {}:\n{}",
            self.addr,
            self.log.display(),
            self.log_tail()
        ))
    }

    /// SIGTERM, then waits for a clean exit; returns how long the shutdown took.
    fn stop(&mut self) -> Result<Duration, String> {
        let started = Instant::now();
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .map_err(|e| format!("cannot run kill -TERM {}: {e}", self.pid()))?;
        if !status.success() {
            return Err(format!("kill -TERM {} failed ({status})", self.pid()));
        }
        while started.elapsed() < SHUTDOWN_TIMEOUT {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(started.elapsed()),
                Ok(Some(status)) => {
                    return Err(format!(
                        "the server exited with {status} after SIGTERM; its log {}:\n{}",
                        self.log.display(),
                        self.log_tail()
                    ));
                }
                Ok(None) => std::thread::sleep(POLL_INTERVAL),
                Err(e) => return Err(format!("cannot wait for the server: {e}")),
            }
        }
        Err(format!(
            "the server did not exit within {SHUTDOWN_TIMEOUT:?} of SIGTERM (killed)"
        ))
    }
}

/// A port free on 127.0.0.1 right now (the OS picks it; the server binds it next).
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

/// The arguments of `strata serve` for a run with `shards` shards (and a TCP listener on
/// `tcp` when given).
fn serve_args(
    data_dir: &Path,
    addr: &str,
    tcp: Option<&str>,
    shards: usize,
    wal_sync: &str,
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--data-dir".into(),
        data_dir.display().to_string(),
        "--http".into(),
        addr.into(),
        "--shards".into(),
        shards.to_string(),
        "--wal-sync".into(),
        wal_sync.into(),
    ];
    if let Some(tcp) = tcp {
        args.extend([
            "--tcp".into(),
            tcp.into(),
            "--tcp-db".into(),
            "bench".into(),
        ]);
    }
    args
}

impl ScaleArgs {
    /// Server shards for a run on `cores` cores.
    fn shards(&self, cores: usize) -> usize {
        if self.shards == 0 { cores } else { self.shards }
    }

    /// Loader writers for a run on `cores` cores.
    fn writers(&self, cores: usize) -> usize {
        self.writers.unwrap_or(self.workers_per_core * cores).max(1)
    }
}

fn start_server(args: &ScaleArgs, cores: usize) -> Result<(Server, PathBuf), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program's path to start `strata serve`: {e}"))?;
    let data_dir = args.out_dir.join(format!("data-{cores}cores"));
    if data_dir.exists() {
        std::fs::remove_dir_all(&data_dir)
            .map_err(|e| format!("cannot empty {}: {e}", data_dir.display()))?;
    }
    let log = args.out_dir.join(format!("server-{cores}cores.log"));
    let log_file =
        File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| format!("cannot open {} twice: {e}", log.display()))?;
    let addr = format!("127.0.0.1:{}", free_port()?);
    let tcp = if args.tcp {
        Some(format!("127.0.0.1:{}", free_port()?))
    } else {
        None
    };
    let mut command = affinity_command(
        cores,
        &exe,
        &serve_args(
            &data_dir,
            &addr,
            tcp.as_deref(),
            args.shards(cores),
            &args.wal_sync,
        ),
    );
    command
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start `taskset … strata serve`: {e}"))?;
    let mut server = Server {
        child,
        addr,
        tcp,
        log,
    };
    server.wait_ready()?;
    Ok((server, data_dir))
}

fn run_one(args: &ScaleArgs, cores: usize) -> Result<(ScaleRow, WriteReport), String> {
    let (mut server, data_dir) = start_server(args, cores)?;
    eprintln!(
        "k={cores}: server pid {} on cores {} at {}",
        server.pid(),
        strata_bench::scale::cpu_list(cores),
        server.addr
    );
    let write_args = WriteArgs {
        workload: args.workload.clone(),
        embedded: false,
        http: match &server.tcp {
            Some(_) => None,
            None => Some(format!("http://{}", server.addr)),
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
        shards: args.shards(cores),
        data_dir: Some(data_dir.clone()),
        keep_existing: false,
        wal_sync: args.wal_sync.clone(),
        retention: "0".into(),
        compact: false,
        json: None,
        pregenerate: args.pregenerate,
    };
    let mut report = measure(&write_args)?;
    let shutdown = server.stop()?;
    let bytes = dir_bytes(&data_dir);
    report.disk_bytes = Some(bytes);
    report.bytes_per_point = Some(bytes as f64 / report.points.max(1) as f64);
    report.disk_bytes_note = format!(
        "{} after SIGTERM (the server flushed on the way out in {:.2} s)",
        data_dir.display(),
        shutdown.as_secs_f64()
    );
    let json = args.out_dir.join(format!("write-{cores}cores.json"));
    std::fs::write(&json, report.to_json()?)
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let row = ScaleRow {
        cores,
        workers: report.workers,
        rows_per_s: report.rows_per_s,
        points_per_s: report.points_per_s,
        cpu_percent: report.server_cpu_percent.map(|p| p / cores as f64),
        disk_mb_per_s: report.disk_write_mb_per_s,
        memory_mb: report.peak_rss_mb,
    };
    Ok((row, report))
}

/// Runs the experiment and prints the table; writes scale.csv and scale.svg.
pub fn run(args: &ScaleArgs) -> Result<(), String> {
    check_taskset()?;
    let machine_cores = strata_storage::options::available_cores();
    if args.cores.is_empty() || args.cores.contains(&0) {
        return Err("--cores needs core counts of at least 1, e.g. --cores 1,2".into());
    }
    if let Some(k) = args.cores.iter().find(|k| **k > machine_cores) {
        return Err(format!(
            "--cores {k}: this machine has {machine_cores} cores"
        ));
    }
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let mut rows = Vec::new();
    let mut withheld = Vec::new();
    for &cores in &args.cores {
        let (row, report) = run_one(args, cores)?;
        if report.rate_withheld.is_some() {
            withheld.push(cores.to_string());
        }
        println!("== server on {cores} core(s) ==");
        print!("{}", report.render());
        if report.errors > 0 {
            eprintln!(
                "warning: k={cores}: {} requests failed; the rate counts acknowledged rows only",
                report.errors
            );
        }
        rows.push(row);
    }
    println!();
    print!("{}", render_table(&rows, machine_cores));
    if !withheld.is_empty() {
        println!(
            "note: the runs on {} core(s) were too short or too small for a rate (see their \
             reports above): their rows are not rates; load more data",
            withheld.join(", ")
        );
    }
    let csv = args.out_dir.join("scale.csv");
    std::fs::write(&csv, render_csv(&rows))
        .map_err(|e| format!("cannot write {}: {e}", csv.display()))?;
    let svg = args.out_dir.join("scale.svg");
    write_svg(&rows, &svg).map_err(|e| e.to_string())?;
    println!("wrote {} and {}", csv.display(), svg.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_is_started_with_k_shards_on_a_loopback_port() {
        let args = serve_args(Path::new("/d/data-2cores"), "127.0.0.1:5000", None, 2, "1s");
        assert_eq!(
            args,
            [
                "serve",
                "--data-dir",
                "/d/data-2cores",
                "--http",
                "127.0.0.1:5000",
                "--shards",
                "2",
                "--wal-sync",
                "1s"
            ]
        );
        assert!(free_port().unwrap() > 0);
        let tcp = serve_args(
            Path::new("/d"),
            "127.0.0.1:5000",
            Some("127.0.0.1:5001"),
            4,
            "1s",
        );
        assert_eq!(
            tcp[tcp.len() - 4..],
            ["--tcp", "127.0.0.1:5001", "--tcp-db", "bench"]
        );
        assert_eq!(tcp[6], "4");
    }
}
