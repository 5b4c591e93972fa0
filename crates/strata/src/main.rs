//! The `strata` binary: one executable for every job.
//!
//! Subcommands:
//! - `bench generate`: write a workload (docs/workloads.md) as line protocol, to stdout or a
//!   file.
//! - `bench write`: load a workload (embedded, HTTP or TCP) and report the seeds' figures.
//! - `bench scale`: seed 000's scaling tables: server confined to k cores, or given 1 … n
//!   data directories (`--disks`).
//! - `bench matrix`: seed 003's batch x worker table (tps, max CPU) with a heat map.
//! - `bench query`: the seeds' query benchmarks (TSBS devops, TDengine meters), embedded or
//!   over HTTP `/sql`.
//! - `bench compare`: the same bodies loaded into Strata and the user's InfluxDB 1.x and
//!   VictoriaMetrics, TSBS queries in each one's language, one side-by-side table and chart.
//! - `bench mixed`: seed 004's IoT read/write mix (IoTDB-benchmark's operations) over HTTP
//!   or TCP writes and `/sql` reads, every answer checked.
//! - `lp check`: parse a line-protocol file and report every bad line with line and column.
//! - `serve`: the server (HTTP and TCP writes, SQL, metrics); see `strata serve --help`.
//! - `sql`: SQL against a server: a shell, one statement, or a script on stdin.
//! - `backup`, `restore`: a running server's backup, and a new data directory from one.
//! - `check`: verify every file of a stopped server's data directories.
//! - `repair`: rebuild a stopped server's damaged or missing manifest, series log or catalog
//!   from its parts and WAL.
//!
//! Flags are parsed here and only here; library crates take typed options.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod backup;
mod bench_batches;
mod bench_compare;
mod bench_matrix;
mod bench_mixed;
mod bench_opentsdb;
mod bench_query;
mod bench_remote_write;
mod bench_scale;
mod bench_server;
mod bench_write;
mod check;
mod generate;
mod lp_check;
mod repair;
mod serve;
mod sql_client;
mod sql_input;
mod sql_shell;
mod sql_table;

/// Strata: a time-series database for DevOps and IoT metrics that scales up.
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmarks and the workloads they run (docs/workloads.md).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Line-protocol tools.
    #[command(subcommand)]
    Lp(LpCommand),
    /// Run the server: InfluxDB-compatible HTTP writes, TCP line protocol, /metrics.
    Serve(Box<serve::ServeArgs>),
    /// SQL against a running server: an interactive shell, one statement, or the
    /// statements of a script on stdin.
    Sql(Box<sql_shell::SqlArgs>),
    /// Back up a running server (consistent, without stopping writes; incremental into
    /// an earlier backup's directory).
    Backup(backup::BackupArgs),
    /// Restore a backup into a new data directory (no server may run on it).
    Restore(backup::RestoreArgs),
    /// Verify every file of a stopped server's data directories, every part block included
    /// (exit status 1 when one is damaged).
    Check(check::CheckArgs),
    /// Rebuild the damaged or missing metadata files (shard manifests, series logs,
    /// catalog) of a stopped server's data directories from its parts and WAL.
    Repair(repair::RepairArgs),
}

#[derive(Debug, Subcommand)]
enum LpCommand {
    /// Parse a file and report every bad line (exit status 1 when there is one).
    Check(lp_check::CheckArgs),
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Write a seeded workload as InfluxDB line protocol.
    Generate(Box<generate::GenerateArgs>),
    /// Load a workload into Strata and report rows/s, points/s, latency, CPU, memory and
    /// bytes on disk per point.
    Write(Box<bench_write::WriteArgs>),
    /// Run the server on 1, 2, … cores (CPU affinity), or on 1, 2, … data directories
    /// (--disks), load it over HTTP or TCP, and print seed 000's scaling table with scale.csv
    /// and scale.svg.
    Scale(Box<bench_scale::ScaleArgs>),
    /// Load a fresh server for each batch size x writer count (seed 003, devops by
    /// default) and print tps (field values/s) and max CPU per cell, with matrix.csv and a
    /// heat map matrix.svg.
    Matrix(Box<bench_matrix::MatrixArgs>),
    /// Run the seeds' queries (TSBS devops on cpu-only, TDengine's on meters) with 1 and
    /// N clients and report latency (min, median, mean, p99, max) and queries per minute.
    Query(Box<bench_query::QueryArgs>),
    /// Load the same request bodies into Strata and its peers (your running InfluxDB 1.x
    /// and VictoriaMetrics), one at a time, run TSBS queries in each one's language, and
    /// print one side-by-side table with compare.csv and compare.svg.
    Compare(Box<bench_compare::CompareArgs>),
    /// Seed 004's IoT mix (IoTDB-benchmark's operations: INGESTION over HTTP or TCP, eleven
    /// read shapes over /sql) with N clients bound to devices; per operation count, ok,
    /// failed, wrong, avg/p50/p99/p999/max latency and throughput.
    Mixed(Box<bench_mixed::MixedArgs>),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(BenchCommand::Generate(args)) => generate::run(&args).map(|()| true),
        Command::Bench(BenchCommand::Write(args)) => bench_write::run(&args).map(|()| true),
        Command::Bench(BenchCommand::Scale(args)) => bench_scale::run(&args).map(|()| true),
        Command::Bench(BenchCommand::Matrix(args)) => bench_matrix::run(&args).map(|()| true),
        Command::Bench(BenchCommand::Query(args)) => bench_query::run(&args).map(|()| true),
        Command::Bench(BenchCommand::Compare(args)) => bench_compare::run(&args),
        Command::Bench(BenchCommand::Mixed(args)) => bench_mixed::run(&args),
        Command::Lp(LpCommand::Check(args)) => lp_check::run(&args),
        Command::Serve(args) => serve::run(*args).map(|()| true),
        Command::Sql(args) => sql_shell::run(&args),
        Command::Backup(args) => backup::backup(&args).map(|()| true),
        Command::Restore(args) => backup::restore(&args).map(|()| true),
        Command::Check(args) => check::run(&args),
        Command::Repair(args) => repair::run(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("strata: {message}");
            ExitCode::FAILURE
        }
    }
}
