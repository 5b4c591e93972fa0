//! `strata bench query`: the seeds' query benchmarks (TSBS devops on `cpu-only`, TDengine's
//! queries after insert on `meters`), embedded or over HTTP `/sql`; with `--protocol
//! influxql`, the TSBS types in TSBS's own InfluxQL wording over HTTP `/query`, sent as
//! `tsbs_run_queries_influx` sends them (same hosts and windows as the SQL for the same
//! seed, same clients, timing and report, so the two protocols compare on one client).
//!
//! The workload flags are `bench write`'s, so the same flags describe the same data set: the
//! queries' random hosts and windows are drawn inside the span and hosts they give.
//! `--load` generates and loads that data first (through `bench write`'s path); without
//! it the data must already be in the target.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};
use strata_bench::http::HttpUrl;
use strata_bench::queries::{self, Dataset, Query, QueryType, QueryWorkload, tsbs_influxql};
use strata_bench::query_report::{QueryReport, QueryResult};
use strata_bench::query_run::{
    EmbeddedQueries, HttpProtocol, HttpQueryClient, QueryClient, ResultFormat, RunLimits, run_type,
};
use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions};

use crate::bench_write::{self, WriteArgs};
use crate::generate::{Workload, WorkloadArgs};

/// The embedded target's data directory unless --data-dir: `bench write`'s, so a run of
/// `bench write` can be queried as it is.
const DEFAULT_DATA_DIR: &str = "strata-bench-data";
/// How long one HTTP request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// Answer format of `/sql` (HTTP target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// JSON: `{"columns":[…],"rows":[[…]],"row_count":N}`.
    Json,
    /// CSV with a header line.
    Csv,
    /// Arrow IPC stream.
    Arrow,
}

/// The statements' language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// SQL: embedded, or POST <URL>/sql with the statement as the body.
    Sql,
    /// InfluxQL: each TSBS type in TSBS's exact wording, sent as tsbs_run_queries_influx
    /// sends it: POST <URL>/query?q=<statement>&db=<db>, empty body.
    #[value(name = "influxql")]
    InfluxQl,
}

impl ProtocolArg {
    pub(crate) fn language(self) -> &'static str {
        match self {
            ProtocolArg::Sql => "SQL",
            ProtocolArg::InfluxQl => "InfluxQL",
        }
    }
}

/// Flags of `strata bench query`.
#[derive(Debug, Clone, Args)]
pub struct QueryArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    /// Query an in-process engine opened on --data-dir (the default target).
    #[arg(long, conflicts_with = "http")]
    embedded: bool,
    /// Query a server over HTTP: POST <URL>/sql?db=<db>&format=<format> (or
    /// <URL>/query?q=…&db=<db> with --protocol influxql), one keep-alive connection per
    /// client.
    #[arg(long, value_name = "URL")]
    http: Option<String>,
    /// Language of the statements; influxql needs --http and the cpu-only workload. The same
    /// --query-seed draws the same hosts and windows in both, so the two compare. An
    /// InfluxQL answer must be 200 with no error in its results; its rows are the values of
    /// every series.
    #[arg(long, value_enum, default_value = "sql")]
    protocol: ProtocolArg,
    /// Generate the workload and load it into the target first (embedded: into an emptied
    /// --data-dir, then flushed and compacted, so queries read parts).
    #[arg(long)]
    load: bool,
    /// Database to query (and load).
    #[arg(long, default_value = "bench")]
    db: String,
    /// Embedded: the data directory [default: strata-bench-data, bench write's].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// --load: concurrent writers; 0 means one per core.
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// Embedded --load: engine shards; 0 means one per core.
    #[arg(long, default_value_t = 0)]
    shards: usize,
    /// Client counts to run every type with, comma-separated; each client is a thread with
    /// its own connection [default: 1,<cores> (seed 001's two charts)].
    #[arg(long, value_delimiter = ',')]
    clients: Vec<usize>,
    /// Queries generated per type, shared by the clients.
    #[arg(long, default_value_t = 100)]
    queries: usize,
    /// No query of a type starts after this many seconds (per client count).
    #[arg(long, default_value_t = 60.0)]
    max_seconds: f64,
    /// Query types, comma-separated [default: every type of the workload]. cpu-only:
    /// single-groupby-M-H-T, cpu-max-all-H, double-groupby-1|5|all, high-cpu-1|all,
    /// lastpoint, groupby-orderby-limit. meters: count, select-all, and AGG-COLUMN with AGG
    /// one of count, avg, sum, max, min, first, last and COLUMN one of current, voltage,
    /// phase (e.g. avg-current).
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Seed of the queries' random hosts and windows [default: --seed].
    #[arg(long)]
    query_seed: Option<u64>,
    /// HTTP SQL: format of the answers (select-all always streams Arrow and counts its
    /// rows) [default: json]. InfluxQL answers are always JSON.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Also write the report as JSON to FILE (one entry per type and client count).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Print the generated statements instead of running them, one JSON object per line
    /// (`{"type": …, "statement": …}`), for driving other clients with the same queries.
    #[arg(long)]
    print_statements: bool,
}

/// Runs the benchmark and prints the report (and writes the JSON when asked).
pub fn run(args: &QueryArgs) -> Result<(), String> {
    if args.print_statements {
        for (query_type, queries) in statements(args)? {
            for query in queries {
                let line = serde_json::json!({"type": query_type.name(), "statement": query.sql});
                println!("{line}");
            }
        }
        return Ok(());
    }
    let report = measure(args)?;
    print!("{}", report.render());
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

/// Every query of every type asked for, generated (and, for InfluxQL, worded as TSBS
/// words it: same hosts and windows) before any clock starts.
fn statements(args: &QueryArgs) -> Result<Vec<(QueryType, Vec<Query>)>, String> {
    let (dataset, workload, _) = dataset(&args.workload)?;
    let types = query_types(&args.types, workload)?;
    if args.queries == 0 {
        return Err("--queries must be at least 1".into());
    }
    let seed = args.query_seed.unwrap_or(args.workload.seed());
    let mut generated: Vec<(QueryType, Vec<Query>)> = Vec::with_capacity(types.len());
    for query_type in &types {
        let mut queries = queries::generate(&dataset, *query_type, args.queries, seed)?;
        if args.protocol == ProtocolArg::InfluxQl {
            queries = queries
                .iter()
                .map(|q| tsbs_influxql::translate(*query_type, q))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--protocol influxql: {e}"))?;
        }
        generated.push((*query_type, queries));
    }
    Ok(generated)
}

/// The target, with what it needs.
enum Destination {
    Embedded(PathBuf),
    Http(HttpUrl),
}

/// Loads (when asked), generates the queries, runs every (type, clients) and reports.
pub fn measure(args: &QueryArgs) -> Result<QueryReport, String> {
    let cores = strata_storage::options::available_cores();
    if args.protocol == ProtocolArg::InfluxQl {
        if args.http.is_none() {
            return Err(
                "--protocol influxql needs --http URL: InfluxQL is sent to a \
                 server's /query (the embedded target runs SQL only)"
                    .into(),
            );
        }
        if args.format.is_some() {
            return Err(
                "--format is the format of /sql answers; with --protocol influxql \
                 the answers are /query's JSON"
                    .into(),
            );
        }
    }
    let (dataset, _, table) = dataset(&args.workload)?;
    let clients = client_counts(&args.clients, cores)?;
    if !(args.max_seconds > 0.0 && args.max_seconds.is_finite()) {
        return Err(format!(
            "--max-seconds {} must be a positive number",
            args.max_seconds
        ));
    }
    let limits = RunLimits {
        max_duration: Duration::from_secs_f64(args.max_seconds),
    };
    let seed = args.query_seed.unwrap_or(args.workload.seed());
    let generated = statements(args)?;
    let destination = match &args.http {
        Some(url) => Destination::Http(HttpUrl::parse(url).map_err(|e| e.to_string())?),
        None => Destination::Embedded(
            args.data_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR)),
        ),
    };
    let mut report = QueryReport {
        workload: describe(&args.workload, &dataset),
        database: args.db.clone(),
        queries_per_type: args.queries,
        seed,
        ..QueryReport::default()
    };
    if args.load {
        report.notes.push(load(args, &destination)?);
    }
    for (query_type, queries) in &generated {
        if queries.iter().any(|q| q.clamped) {
            report.notes.push(format!(
                "{}: its window is longer than the data, so each query reads the whole span \
                 (TSBS would refuse; load a longer --duration for its real shape)",
                query_type.name()
            ));
        }
    }
    match destination {
        Destination::Embedded(dir) => {
            let engine = open_embedded(args, &dir, table, &mut report)?;
            let target = EmbeddedQueries::new(Arc::clone(&engine), &args.db)?;
            report.target = format!(
                "embedded ({} shards, {})",
                engine.shard_count(),
                dir.display()
            );
            report.protocol = "sql".into();
            run_all(&generated, &clients, limits, "SQL", &mut report, || {
                Ok(Box::new(target.client()) as Box<dyn QueryClient>)
            })?;
        }
        Destination::Http(url) => {
            report.target = format!("http://{}{}", url.authority, url.base_path);
            let protocol = match (args.protocol, args.format.unwrap_or(FormatArg::Json)) {
                (ProtocolArg::InfluxQl, _) => HttpProtocol::InfluxQl,
                (ProtocolArg::Sql, FormatArg::Json) => HttpProtocol::Sql(ResultFormat::Json),
                (ProtocolArg::Sql, FormatArg::Csv) => HttpProtocol::Sql(ResultFormat::Csv),
                (ProtocolArg::Sql, FormatArg::Arrow) => HttpProtocol::Sql(ResultFormat::Arrow),
            };
            report.format = protocol.format_name().to_string();
            report.protocol = protocol.name().to_string();
            let language = args.protocol.language();
            run_all(&generated, &clients, limits, language, &mut report, || {
                HttpQueryClient::connect(
                    &url.authority,
                    &url.base_path,
                    &args.db,
                    protocol,
                    REQUEST_TIMEOUT,
                )
                .map(|c| Box::new(c) as Box<dyn QueryClient>)
            })?;
        }
    }
    Ok(report)
}

/// Runs every type with every client count, clients made fresh (connected) for each run;
/// a failure names the statement's `language`.
fn run_all(
    generated: &[(QueryType, Vec<Query>)],
    clients: &[usize],
    limits: RunLimits,
    language: &str,
    report: &mut QueryReport,
    make_client: impl Fn() -> Result<Box<dyn QueryClient>, String>,
) -> Result<(), String> {
    for (query_type, queries) in generated {
        let name = query_type.name();
        for &count in clients {
            let mut runners = (0..count)
                .map(|_| make_client())
                .collect::<Result<Vec<_>, String>>()?;
            eprintln!(
                "running {name}: {} queries, {count} client(s) ...",
                queries.len()
            );
            let run =
                run_type(&name, queries, &mut runners, limits).map_err(|f| f.describe(language))?;
            report.results.push(QueryResult::from_run(&name, &run));
        }
    }
    Ok(())
}

/// The data set the flags describe, its workload and its table.
pub(crate) fn dataset(
    workload: &WorkloadArgs,
) -> Result<(Dataset, QueryWorkload, &'static str), String> {
    Ok(match workload.workload {
        Workload::CpuOnly => {
            let config = workload.cpu_only_config()?;
            if config.hosts == 0 || config.rows_per_host() == 0 {
                return Err("the workload has no rows (--hosts or --duration is 0)".into());
            }
            (
                Dataset::CpuOnly {
                    start_ns: config.start_ns,
                    end_ns: config.end_ns,
                    hosts: config.hosts,
                },
                QueryWorkload::CpuOnly,
                "cpu",
            )
        }
        Workload::Meters => (Dataset::Meters, QueryWorkload::Meters, "meters"),
        Workload::Devops | Workload::LargeRows => {
            return Err(
                "bench query runs the cpu-only and meters queries; load devops or large-rows \
                 with `bench write --workload …`"
                    .into(),
            );
        }
    })
}

fn describe(workload: &WorkloadArgs, dataset: &Dataset) -> String {
    match dataset {
        Dataset::CpuOnly {
            start_ns,
            end_ns,
            hosts,
        } => format!(
            "cpu-only: {hosts} hosts, {:.2} h from {}",
            (end_ns - start_ns) as f64 / 3.6e12,
            u64::try_from(*start_ns).map_or_else(
                |_| format!("{start_ns} ns"),
                |ns| humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + Duration::from_nanos(ns)
                )
                .to_string()
            )
        ),
        Dataset::Meters => format!(
            "meters: {} meters x {} rows",
            workload.meters(),
            workload.rows_per_meter()
        ),
    }
}

pub(crate) fn query_types(
    names: &[String],
    workload: QueryWorkload,
) -> Result<Vec<QueryType>, String> {
    if names.is_empty() {
        return Ok(QueryType::all(workload));
    }
    let mut types = Vec::with_capacity(names.len());
    for name in names {
        let t = QueryType::parse(name.trim(), workload)?;
        if !types.contains(&t) {
            types.push(t);
        }
    }
    Ok(types)
}

fn client_counts(asked: &[usize], cores: usize) -> Result<Vec<usize>, String> {
    let mut counts = if asked.is_empty() {
        vec![1, cores]
    } else {
        asked.to_vec()
    };
    if counts.contains(&0) {
        return Err("--clients: every count must be at least 1".into());
    }
    counts.dedup();
    Ok(counts)
}

/// Loads the workload through `bench write`'s path; returns the note for the report.
fn load(args: &QueryArgs, destination: &Destination) -> Result<String, String> {
    let (http, data_dir) = match destination {
        Destination::Embedded(dir) => (None, Some(dir.clone())),
        Destination::Http(_) => (args.http.clone(), None),
    };
    let write = WriteArgs {
        workload: args.workload.clone(),
        embedded: http.is_none(),
        http,
        tcp: None,
        file: None,
        precision: Precision::Nanoseconds,
        db: args.db.clone(),
        batch_rows: None,
        workers: args.workers,
        gzip: false,
        prometheus: false,
        opentsdb: false,
        server_pid: None,
        server_cores: None,
        shards: args.shards,
        data_dir,
        keep_existing: false,
        wal_sync: "1s".into(),
        retention: "0".into(),
        compact: true,
        json: None,
        pregenerate: false,
    };
    let written = bench_write::measure(&write)?;
    if written.errors > 0 || written.bad_lines > 0 || written.rows != written.rows_generated {
        return Err(format!(
            "the load failed: {} of {} rows stored, {} failed requests, {} bad lines; {}",
            written.rows,
            written.rows_generated,
            written.errors,
            written.bad_lines,
            written.error_messages.join("; ")
        ));
    }
    let how = match destination {
        Destination::Embedded(_) => {
            "then flushed and compacted: the queries read parts, not memtables"
        }
        Destination::Http(_) => {
            "over HTTP: the server holds the data as it chose to (memtables and parts)"
        }
    };
    Ok(format!(
        "loaded {} rows ({} points) in {:.2} s ({:.0} rows/s), {how}",
        written.rows, written.points, written.elapsed_s, written.rows_per_s
    ))
}

/// Opens the embedded engine on `dir` and checks the table is there.
fn open_embedded(
    args: &QueryArgs,
    dir: &std::path::Path,
    table: &str,
    report: &mut QueryReport,
) -> Result<Arc<Engine>, String> {
    if !dir.exists() {
        return Err(format!(
            "{} does not exist: load the data first (--load, or strata bench write with the \
             same workload flags)",
            dir.display()
        ));
    }
    let options = EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: args.shards,
        ..EngineOptions::default()
    };
    let (engine, _) = Engine::open(options).map_err(|e| e.to_string())?;
    if engine.table(&args.db, table).is_none() {
        return Err(format!(
            "no table {table} in database {} under {}: load the data first (--load, or \
             strata bench write with the same workload flags)",
            args.db,
            dir.display()
        ));
    }
    if !args.load {
        // Rows replayed from the WAL sit in memtables; queries should read parts, as
        // after --load.
        engine.flush().map_err(|e| e.to_string())?;
        report.notes.push(format!(
            "data as found in {} (not loaded by this run), flushed after opening",
            dir.display()
        ));
    }
    Ok(Arc::new(engine))
}
