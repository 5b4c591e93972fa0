//! `strata bench mixed`: seed 004's IoT workload, IoTDB-benchmark's mixed reads and writes.
//!
//! N clients, each bound to its own devices of a wind farm (`strata_bench::iot`), prefill
//! every device's history over HTTP, then draw operations from `--mix` (default: read:write
//! 1:9, the eleven reads equally) until `--ops` per client or `--duration`: INGESTION
//! batches over HTTP `/write` (`--http`, the default; a write counts on 204) or the TCP
//! listener (`--tcp`; a write counts once `/sql` sees it), reads as SQL on `/sql`, each
//! answer checked against the generator. The report is IoTDB-benchmark's result and
//! latency matrices (count, ok, failed, wrong, avg/p50/p99/p999/max ms, ops/s, points/s).
//!
//! Against `--server URL` (and `--tcp-addr` for TCP writes), or a `strata serve` this
//! command starts on free loopback ports (optionally confined to `--cores K`) and stops
//! afterwards. Exit status 1 when an operation failed, an answer was wrong or TCP points
//! never became visible. See `docs/bench-mixed.md`.

use std::path::PathBuf;

use clap::Args;
use strata_bench::http::HttpUrl;
use strata_bench::iot::IotConfig;
use strata_bench::mixed::{self, Mix, MixedConfig, Stop, WriteProtocol};
use strata_bench::scale::check_taskset;

use crate::bench_server::{Server, ServerSpec};

/// Operations per client when neither --ops nor --duration is given.
const DEFAULT_OPS: u64 = 1000;
/// The database a started server's TCP listener writes into (`bench_server`).
const STARTED_TCP_DB: &str = "bench";

/// Flags of `strata bench mixed`.
#[derive(Debug, Args)]
pub struct MixedArgs {
    /// Client threads, each bound to its own devices (client i: devices i, i+N, …).
    #[arg(long, default_value_t = 200)]
    clients: usize,
    /// Devices (series) [default: one per client].
    #[arg(long)]
    devices: Option<u32>,
    /// Storage groups (the `group` tag; device d is in group d mod groups).
    #[arg(long, default_value_t = 20)]
    groups: u32,
    /// Sensors (float fields s_0, s_1, …) per device.
    #[arg(long, default_value_t = 10)]
    sensors: u32,
    /// Rows of one device per INGESTION (IoTDB's BATCH_SIZE_PER_WRITE).
    #[arg(long, default_value_t = 20)]
    batch_rows: u32,
    /// Time between two rows of a device, ms (IoTDB's POINT_STEP).
    #[arg(long, default_value_t = 1000)]
    step_ms: i64,
    /// Operation weights, e.g. ingestion=9,precise_point=1,latest_point=1 (operations left
    /// out weigh 0) [default: ingestion=99 and each of the 11 reads 1: read:write 1:9].
    /// Names: ingestion, precise_point, time_range, value_range, agg_range, agg_value,
    /// agg_range_value, group_by, latest_point, range_query_desc, value_range_query_desc,
    /// group_by_desc.
    #[arg(long, value_name = "NAME=WEIGHT,...")]
    mix: Option<String>,
    /// Operations per client [default 1000].
    #[arg(long, conflicts_with = "duration")]
    ops: Option<u64>,
    /// Run each client for this long instead of a number of operations (e.g. 60s).
    #[arg(long)]
    duration: Option<humantime::Duration>,
    /// Write over the server's plain TCP line-protocol listener (asynchronous: a point
    /// counts once a /sql count sees it).
    #[arg(long, conflicts_with = "http")]
    tcp: bool,
    /// Write over HTTP /write (the default; a write counts when the server answers 204).
    #[arg(long)]
    http: bool,
    /// A running server's HTTP URL (e.g. http://127.0.0.1:8086); without it a server is
    /// started on free loopback ports.
    #[arg(long, value_name = "URL")]
    server: Option<String>,
    /// With --server and --tcp: the server's TCP line-protocol listener (host:port); its
    /// --tcp-db must be --db.
    #[arg(long, value_name = "ADDR", requires = "server")]
    tcp_addr: Option<String>,
    /// Database written and queried (a started server's TCP listener writes into `bench`).
    #[arg(long, default_value = "bench")]
    db: String,
    /// Started server: confine it to the first K cores (taskset).
    #[arg(long, value_name = "K", conflicts_with = "server")]
    cores: Option<usize>,
    /// Started server: shards; 0 means one per core it may use.
    #[arg(long, default_value_t = 0, conflicts_with = "server")]
    shards: usize,
    /// Started server: WAL durability (its --wal-sync).
    #[arg(long, default_value = "1s", conflicts_with = "server")]
    wal_sync: String,
    /// Started server: where its data directory and log go.
    #[arg(long, default_value = "strata-mixed")]
    out_dir: PathBuf,
    /// Rows of history per device written (over HTTP) before the clock, for reads to query.
    #[arg(long, default_value_t = 500)]
    prefill_rows: u64,
    /// Devices per read (IoTDB's QUERY_DEVICE_NUM), among the client's own.
    #[arg(long, default_value_t = 1)]
    query_devices: usize,
    /// Sensors per read (IoTDB's QUERY_SENSOR_NUM).
    #[arg(long, default_value_t = 1)]
    query_sensors: usize,
    /// How long TCP points may take to become visible after a client's last write.
    #[arg(long, default_value = "30s")]
    visibility_timeout: humantime::Duration,
    /// Seed of the values, the operation draws and the reads' windows.
    #[arg(long, default_value_t = 4)]
    seed: u64,
    /// Also write the report as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs the benchmark and prints the report; false (exit status 1) when it was not clean.
pub fn run(args: &MixedArgs) -> Result<bool, String> {
    let mut config = config(args)?;
    config.validate()?;
    let mut server = match &args.server {
        Some(url) => {
            let url = HttpUrl::parse(url).map_err(|e| format!("--server: {e}"))?;
            config.http = url.authority.clone();
            config.base_path = url.base_path;
            config.tcp = args.tcp_addr.clone();
            None
        }
        None => Some(start_server(args, &mut config)?),
    };
    config.target = format!("http://{}{}", config.http, config.base_path);
    let report = mixed::run(&config)?;
    if let Some(server) = server.as_mut() {
        server.stop()?;
    }
    print!("{}", report.render());
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if !report.is_clean() {
        eprintln!(
            "strata: the run was not clean: {} failed, {} wrong, {} points short (see the errors \
             above)",
            report.failed, report.wrong, report.shortfall_points
        );
    }
    Ok(report.is_clean())
}

/// The run's settings from the flags (the server's address is filled in later).
fn config(args: &MixedArgs) -> Result<MixedConfig, String> {
    let mix = match &args.mix {
        Some(text) => Mix::parse(text)?,
        None => Mix::default(),
    };
    let stop = match (args.ops, args.duration) {
        (_, Some(d)) => Stop::Duration(d.into()),
        (Some(n), None) => Stop::Ops(n),
        (None, None) => Stop::Ops(DEFAULT_OPS),
    };
    if args.tcp && args.server.is_some() && args.tcp_addr.is_none() {
        return Err(
            "--tcp with --server needs --tcp-addr HOST:PORT, the server's TCP listener".into(),
        );
    }
    if args.tcp_addr.is_some() && !args.tcp {
        return Err("--tcp-addr is for TCP writes: add --tcp".into());
    }
    if args.tcp && args.server.is_none() && args.db != STARTED_TCP_DB {
        return Err(format!(
            "a started server's TCP listener writes into database `{STARTED_TCP_DB}`: leave \
             --db out, or start the server yourself and pass --server and --tcp-addr"
        ));
    }
    let clients = args.clients;
    let devices = args
        .devices
        .unwrap_or(u32::try_from(clients).unwrap_or(u32::MAX));
    let mut config = MixedConfig::new("");
    config.iot = IotConfig {
        groups: args.groups,
        devices,
        sensors: args.sensors,
        batch_rows: args.batch_rows,
        step_ms: args.step_ms,
        seed: args.seed,
        ..IotConfig::default()
    };
    config.clients = clients;
    config.mix = mix;
    config.stop = stop;
    config.protocol = if args.tcp {
        WriteProtocol::Tcp
    } else {
        WriteProtocol::Http
    };
    config.database = args.db.clone();
    config.prefill_rows = args.prefill_rows;
    config.query_devices = args.query_devices;
    config.query_sensors = args.query_sensors;
    config.visibility_timeout = args.visibility_timeout.into();
    Ok(config)
}

/// Starts `strata serve` for the run (TCP listener when --tcp) and points `config` at it.
fn start_server(args: &MixedArgs, config: &mut MixedConfig) -> Result<Server, String> {
    let machine_cores = strata_storage::options::available_cores();
    if let Some(cores) = args.cores {
        if cores == 0 || cores > machine_cores {
            return Err(format!(
                "--cores {cores}: give between 1 and this machine's {machine_cores} cores"
            ));
        }
        check_taskset()?;
    }
    let shards = match (args.shards, args.cores) {
        (0, Some(cores)) => cores,
        (0, None) => machine_cores,
        (shards, _) => shards,
    };
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("cannot create {}: {e}", args.out_dir.display()))?;
    let server = Server::start(&ServerSpec {
        cores: args.cores,
        data_dirs: vec![args.out_dir.join("data")],
        shards,
        wal_sync: args.wal_sync.clone(),
        tcp: args.tcp,
        log: args.out_dir.join("server.log"),
        // Every client may have a read waiting for a query slot: the run measures how long
        // reads take under the write load, not how many the default queue turns away.
        extra_args: vec!["--query-queue".into(), args.clients.to_string()],
    })?;
    eprintln!(
        "started strata serve (pid {}) at {}{}",
        server.pid(),
        server.url(),
        server
            .tcp
            .as_ref()
            .map(|t| format!(", TCP {t}"))
            .unwrap_or_default()
    );
    config.http = server.addr.clone();
    config.tcp = server.tcp.clone();
    config.server_pid = Some(server.pid());
    Ok(server)
}
