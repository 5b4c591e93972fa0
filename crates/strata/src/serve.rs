//! `strata serve`: flags, environment variables and the optional TOML file, merged into a
//! [`ServerConfig`] (flag > environment > file > default), then [`strata_server::run`].

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use strata_server::config::{
    self, parse_addr, parse_client_timeout, parse_max_series, parse_memory_limit,
    parse_query_timeout, parse_retention, parse_wal_recovery, parse_wal_sync,
};
use strata_server::{FileConfig, ServerConfig};

/// Flags of `strata serve`. Every setting is also an environment variable and a key of
/// the `--config` file (the key is the flag's name with `_` for `-`, `data_dirs` for
/// `--data-dir`, `http`/`tcp` for the addresses).
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TOML config file; any key below may be set in it. Unknown keys are an error.
    #[arg(long, env = "STRATA_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Data directory; repeat for one per disk (env: comma-separated) [default: strata-data]
    #[arg(
        long = "data-dir",
        env = "STRATA_DATA_DIR",
        value_name = "DIR",
        value_delimiter = ','
    )]
    data_dirs: Vec<PathBuf>,
    /// HTTP listen address (port 0 picks a free port; the bound address is logged)
    /// [default: 127.0.0.1:8086]
    #[arg(long, env = "STRATA_HTTP", value_name = "ADDR")]
    http: Option<String>,
    /// TCP line-protocol listen address; off unless set [default: off]
    #[arg(long, env = "STRATA_TCP", value_name = "ADDR")]
    tcp: Option<String>,
    /// OpenTSDB telnet listen address (`put <metric> <timestamp> <value> <tagk=tagv>...`
    /// lines, as collectd, tcollector and OpenTSDB's own clients send); off unless set.
    /// OpenTSDB's HTTP /api/put is on the HTTP listener [default: off]
    #[arg(long, env = "STRATA_OPENTSDB", value_name = "ADDR")]
    opentsdb: Option<String>,
    /// Database that OpenTSDB writes go to (telnet, and /api/put without ?db=)
    /// [default: opentsdb]
    #[arg(long, env = "STRATA_OPENTSDB_DB", value_name = "NAME")]
    opentsdb_db: Option<String>,
    /// Postgres wire protocol listen address (psql, Postgres drivers, Grafana's PostgreSQL
    /// data source), or off. When left at the default and the port is taken (a Postgres
    /// server), a warning says so and Strata starts without it [default: 127.0.0.1:5432]
    #[arg(long, env = "STRATA_PG", value_name = "ADDR|off")]
    pg: Option<String>,
    /// Database that TCP writes go to [default: strata]
    #[arg(long, env = "STRATA_TCP_DB", value_name = "NAME")]
    tcp_db: Option<String>,
    /// Engine shards; 0 means one per core. Fixed when the data directory is created
    /// [default: 0]
    #[arg(long, env = "STRATA_SHARDS", value_name = "N")]
    shards: Option<usize>,
    /// Writes that parse and store their rows at once; more wait their turn in arrival
    /// order. 0 means two per core [default: 0]
    #[arg(long, env = "STRATA_WRITE_CONCURRENCY", value_name = "N")]
    write_concurrency: Option<usize>,
    /// While a partition holds more than this many parts, each write first merges some of
    /// them (merges must keep up with a long full-speed load); 0 turns it off [default: 64]
    #[arg(long, env = "STRATA_MERGE_ASSIST_PARTS", value_name = "N")]
    merge_assist_parts: Option<usize>,
    /// WAL durability: always (fsync before acknowledging), none, or a sync interval such
    /// as 1s or 500ms [default: 1s]
    #[arg(long, env = "STRATA_WAL_SYNC", value_name = "always|DURATION|none")]
    wal_sync: Option<String>,
    /// Damage in the middle of the WAL at start-up: strict refuses to start (naming the
    /// file and offset); skip-damaged starts anyway, losing the damaged records and rows
    /// that depend on them, each logged [default: strict]
    #[arg(long, env = "STRATA_WAL_RECOVERY", value_name = "strict|skip-damaged")]
    wal_recovery: Option<String>,
    /// Default retention of every database that has none of its own: rows older than now
    /// minus this are hidden from queries, refused by writes and removed from disk. A
    /// duration such as 30d or 12h, or 0 to keep rows forever [default: 0]
    #[arg(long, env = "STRATA_RETENTION", value_name = "DURATION|0")]
    retention: Option<String>,
    /// Most live series a database may hold: a row that would create one more is refused
    /// with an error naming the database and the limit (the rest of the write is kept).
    /// A number, or none [default: none]
    #[arg(long, env = "STRATA_MAX_SERIES", value_name = "N|none")]
    max_series: Option<String>,
    /// Token required on writes and /metrics (Authorization: Token/Bearer/Basic, or 1.x
    /// p=); no auth unless set [default: none]
    #[arg(
        long,
        env = "STRATA_AUTH_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    auth_token: Option<String>,
    /// A token that may only query (/query and /sql reads, /metrics), for dashboards;
    /// needs --auth-token [default: none]
    #[arg(
        long,
        env = "STRATA_READ_ONLY_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    read_only_token: Option<String>,
    /// TLS certificate chain (PEM, leaf first); with --tls-key, HTTP and TCP listeners
    /// speak only TLS [default: none]
    #[arg(long, env = "STRATA_TLS_CERT", value_name = "PEM")]
    tls_cert: Option<PathBuf>,
    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1) of --tls-cert [default: none]
    #[arg(long, env = "STRATA_TLS_KEY", value_name = "PEM")]
    tls_key: Option<PathBuf>,
    /// Largest request body in bytes, also after gzip decompression; larger gets 413
    /// [default: 67108864 (64 MiB)]
    #[arg(long, env = "STRATA_MAX_BODY_BYTES", value_name = "BYTES")]
    max_body_bytes: Option<usize>,
    /// Longest line in bytes, HTTP and TCP; longer lines are rejected and the rest of the
    /// request kept. At most 1 MiB, the parser's own limit [default: 1048576]
    #[arg(long, env = "STRATA_MAX_LINE_BYTES", value_name = "BYTES")]
    max_line_bytes: Option<usize>,
    /// Write-body bytes held at once over all HTTP requests; past it writes get 503 with
    /// Retry-After [default: 268435456 (256 MiB)]
    #[arg(long, env = "STRATA_MAX_INFLIGHT_WRITE_BYTES", value_name = "BYTES")]
    max_inflight_write_bytes: Option<usize>,
    /// Longest a SQL statement may run, from its request to its last row; past it the
    /// statement is cancelled and answered 504. A duration, or none [default: 60s]
    #[arg(long, env = "STRATA_QUERY_TIMEOUT", value_name = "DURATION|none")]
    query_timeout: Option<String>,
    /// Memory that the sorts, aggregates and joins of all SQL statements may hold together
    /// (bytes, optional K/M/G suffix), or none; a statement needing more fails
    /// [default: a quarter of physical memory]
    #[arg(long, env = "STRATA_QUERY_MEMORY_LIMIT", value_name = "BYTES|none")]
    query_memory_limit: Option<String>,
    /// Memory for parts' indexes (bytes, optional K/M/G suffix); past it the indexes used
    /// least lately are dropped and read again from their parts when next used
    /// [default: a sixteenth of the memory the process may use, at least 64 MiB]
    #[arg(long, env = "STRATA_INDEX_MEMORY", value_name = "BYTES")]
    index_memory: Option<String>,
    /// SQL statements running at once; more wait for a slot within their timeout, and when
    /// --query-queue wait, new ones get 503 with Retry-After [default: twice the cores]
    #[arg(long, env = "STRATA_QUERY_CONCURRENCY", value_name = "N")]
    query_concurrency: Option<usize>,
    /// SQL statements that may wait for a running slot before new ones get 503; raise it
    /// for many clients with short statements [default: four per --query-concurrency slot]
    #[arg(long, env = "STRATA_QUERY_QUEUE", value_name = "N")]
    query_queue: Option<usize>,
    /// HTTP connections open at once; one more is closed as soon as it is accepted and
    /// counted in strata_http_connections_refused_total [default: 4096]
    #[arg(long, env = "STRATA_MAX_CONNECTIONS", value_name = "N")]
    max_connections: Option<usize>,
    /// Longest a client may take to send a request's line and headers (past it the
    /// connection is closed), and longest a request body may pause (past it: 408)
    /// [default: 30s]
    #[arg(long, env = "STRATA_CLIENT_TIMEOUT", value_name = "DURATION")]
    client_timeout: Option<String>,
    /// Lake for cold partitions: each shard partition that ended --tier-after ago is copied
    /// as Parquet into one Delta Lake table per table at LAKE/DATABASE/TABLE, for Spark,
    /// Trino, DuckDB or pandas (see docs/lake.md). file:///path or s3://bucket/prefix
    /// [default: off]
    #[arg(long, env = "STRATA_LAKE", value_name = "URL")]
    lake: Option<String>,
    /// S3 endpoint of an s3:// lake, e.g. http://127.0.0.1:8333 for SeaweedFS or MinIO
    /// (else AWS_ENDPOINT_URL) [default: AWS]
    #[arg(long, env = "STRATA_LAKE_ENDPOINT", value_name = "URL")]
    lake_endpoint: Option<String>,
    /// S3 region of an s3:// lake (else AWS_REGION) [default: us-east-1]
    #[arg(long, env = "STRATA_LAKE_REGION", value_name = "REGION")]
    lake_region: Option<String>,
    /// S3 access key id of an s3:// lake (else AWS_ACCESS_KEY_ID) [default: none]
    #[arg(long, env = "STRATA_LAKE_ACCESS_KEY_ID", value_name = "ID")]
    lake_access_key_id: Option<String>,
    /// S3 secret access key of an s3:// lake (else AWS_SECRET_ACCESS_KEY) [default: none]
    #[arg(
        long,
        env = "STRATA_LAKE_SECRET_ACCESS_KEY",
        value_name = "KEY",
        hide_env_values = true
    )]
    lake_secret_access_key: Option<String>,
    /// Copy a partition to the lake once it ended this long ago [default: 1d]
    #[arg(long, env = "STRATA_TIER_AFTER", value_name = "DURATION")]
    tier_after: Option<String>,
    /// How often the lake looks for partitions to copy (with --lake-read-only: for tables
    /// and files it has not mirrored yet) [default: 1m]
    #[arg(long, env = "STRATA_TIER_INTERVAL", value_name = "DURATION")]
    tier_interval: Option<String>,
    /// A stateless query server on --lake: answers every query over the lake's tables
    /// (mirrored from the lake at start, then every --tier-interval), copies nothing,
    /// refuses writes. Its data directory must be empty (or a read-only server's): it is
    /// emptied at every start [default: off]
    #[arg(long, env = "STRATA_LAKE_READ_ONLY")]
    lake_read_only: bool,
    /// Log filter in RUST_LOG syntax, e.g. info or strata_server=debug [default: info]
    #[arg(long, env = "RUST_LOG", value_name = "FILTER")]
    log: Option<String>,
}

/// Runs the server until SIGINT/SIGTERM.
pub fn run(args: ServeArgs) -> Result<(), String> {
    let file = match &args.config {
        Some(path) => FileConfig::read(path).map_err(|e| e.to_string())?,
        None => FileConfig::default(),
    };
    let filter = args
        .log
        .clone()
        .or_else(|| file.log.clone())
        .unwrap_or_else(|| "info".to_owned());
    init_logging(&filter)?;
    strata_server::allocator::tune();
    strata_server::open_files_limit::raise();
    let index_memory = args.index_memory.clone().or(file.index_memory.clone());
    let config = merge(args, file).map_err(|e| e.to_string())?;
    strata_server::index_memory::set(index_memory.as_deref()).map_err(|e| e.to_string())?;
    strata_server::run(config).map_err(|e| e.to_string())
}

/// Flag or environment (clap has already preferred the flag), else file, else default.
fn merge(args: ServeArgs, file: FileConfig) -> Result<ServerConfig, strata_server::ServerError> {
    let defaults = ServerConfig::default();
    let data_dirs = if args.data_dirs.is_empty() {
        file.data_dirs.unwrap_or(defaults.data_dirs)
    } else {
        args.data_dirs
    };
    let http_addr = match args.http.or(file.http) {
        Some(text) => parse_addr("http address", &text)?,
        None => defaults.http_addr,
    };
    let tcp_addr = match args.tcp.or(file.tcp) {
        Some(text) if text.is_empty() || text == "off" => None,
        Some(text) => Some(parse_addr("tcp address", &text)?),
        None => defaults.tcp_addr,
    };
    let opentsdb_addr = match args.opentsdb.or(file.opentsdb) {
        Some(text) if text.is_empty() || text == "off" => None,
        Some(text) => Some(parse_addr("opentsdb address", &text)?),
        None => defaults.opentsdb_addr,
    };
    let pg = match args.pg.or(file.pg) {
        Some(text) => config::parse_pg(&text)?,
        None => defaults.pg,
    };
    let wal_sync = match args.wal_sync.or(file.wal_sync) {
        Some(text) => parse_wal_sync(&text)?,
        None => defaults.wal_sync,
    };
    let retention = match args.retention.or(file.retention) {
        Some(text) => parse_retention(&text)?,
        None => defaults.retention,
    };
    let wal_skip_damaged = match args.wal_recovery.or(file.wal_recovery) {
        Some(text) => parse_wal_recovery(&text)?,
        None => defaults.wal_skip_damaged,
    };
    let max_series = match args.max_series.or(file.max_series) {
        Some(text) => parse_max_series(&text)?,
        None => defaults.max_series,
    };
    let lake_read_only = args.lake_read_only || file.lake_read_only.unwrap_or(false);
    let tier_after = args.tier_after.or(file.tier_after);
    let tier_interval = args.tier_interval.or(file.tier_interval);
    let lake = match args.lake.or(file.lake).filter(|url| !url.is_empty()) {
        Some(url) => Some(config::LakeConfig {
            url,
            tier_after: match tier_after {
                Some(text) => config::parse_tier_duration("tier after", &text)?,
                None => config::DEFAULT_TIER_AFTER,
            },
            tier_interval: match tier_interval {
                Some(text) => config::parse_tier_duration("tier interval", &text)?,
                None => config::DEFAULT_TIER_INTERVAL,
            },
            s3: config::S3Options {
                endpoint: or_aws(
                    args.lake_endpoint.or(file.lake_endpoint),
                    "AWS_ENDPOINT_URL",
                ),
                region: or_aws(args.lake_region.or(file.lake_region), "AWS_REGION"),
                access_key_id: or_aws(
                    args.lake_access_key_id.or(file.lake_access_key_id),
                    "AWS_ACCESS_KEY_ID",
                ),
                secret_access_key: or_aws(
                    args.lake_secret_access_key.or(file.lake_secret_access_key),
                    "AWS_SECRET_ACCESS_KEY",
                ),
            },
            read_only: lake_read_only,
        }),
        None if tier_after.is_some() || tier_interval.is_some() || lake_read_only => {
            return Err(strata_server::ServerError::Config(
                "--tier-after, --tier-interval and --lake-read-only need a lake (--lake \
                 file:///path)"
                    .into(),
            ));
        }
        None => None,
    };
    let mut query = defaults.query.clone();
    if let Some(text) = args.query_timeout.or(file.query_timeout) {
        query.timeout = parse_query_timeout(&text)?;
    }
    if let Some(text) = args.query_memory_limit.or(file.query_memory_limit) {
        query.memory_limit = parse_memory_limit(&text)?;
    }
    if let Some(concurrency) = args.query_concurrency.or(file.query_concurrency) {
        if concurrency == 0 {
            return Err(strata_server::ServerError::Config(
                "query concurrency must be positive".into(),
            ));
        }
        query.max_concurrent = concurrency;
    }
    if let Some(queue) = args.query_queue.or(file.query_queue) {
        query.max_queued = Some(queue);
    }
    let config = ServerConfig {
        http_addr,
        tcp_addr,
        pg,
        tcp_database: args.tcp_db.or(file.tcp_db).unwrap_or(defaults.tcp_database),
        opentsdb_addr,
        opentsdb_database: args
            .opentsdb_db
            .or(file.opentsdb_db)
            .unwrap_or(defaults.opentsdb_database),
        data_dirs,
        shards: args.shards.or(file.shards).unwrap_or(defaults.shards),
        write_concurrency: args
            .write_concurrency
            .or(file.write_concurrency)
            .unwrap_or(defaults.write_concurrency),
        merge_assist_parts: args
            .merge_assist_parts
            .or(file.merge_assist_parts)
            .unwrap_or(defaults.merge_assist_parts),
        wal_sync,
        retention,
        max_series,
        wal_skip_damaged,
        auth_token: args
            .auth_token
            .or(file.auth_token)
            .filter(|t| !t.is_empty()),
        read_only_token: args
            .read_only_token
            .or(file.read_only_token)
            .filter(|t| !t.is_empty()),
        tls_cert: args.tls_cert.or(file.tls_cert),
        tls_key: args.tls_key.or(file.tls_key),
        max_body_bytes: args
            .max_body_bytes
            .or(file.max_body_bytes)
            .unwrap_or(defaults.max_body_bytes),
        max_line_bytes: args
            .max_line_bytes
            .or(file.max_line_bytes)
            .unwrap_or(defaults.max_line_bytes),
        max_inflight_write_bytes: args
            .max_inflight_write_bytes
            .or(file.max_inflight_write_bytes)
            .unwrap_or(defaults.max_inflight_write_bytes),
        query,
        max_connections: args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(defaults.max_connections),
        client_timeout: match args.client_timeout.or(file.client_timeout) {
            Some(text) => parse_client_timeout(&text)?,
            None => defaults.client_timeout,
        },
        lake,
    };
    if config.max_connections == 0 {
        return Err(strata_server::ServerError::Config(
            "max connections must be positive".into(),
        ));
    }
    if config.read_only_token.is_some() && config.auth_token.is_none() {
        return Err(strata_server::ServerError::Config(
            "a read-only token needs an auth token (--auth-token): without one, anyone may write"
                .into(),
        ));
    }
    if config.read_only_token.is_some() && config.read_only_token == config.auth_token {
        return Err(strata_server::ServerError::Config(
            "the read-only token must differ from the auth token".into(),
        ));
    }
    if config.tls_cert.is_some() != config.tls_key.is_some() {
        return Err(strata_server::ServerError::Config(
            "TLS needs both --tls-cert and --tls-key".into(),
        ));
    }
    if config.tcp_database.is_empty() {
        return Err(strata_server::ServerError::Config(
            "the TCP database name is empty".into(),
        ));
    }
    if config.opentsdb_database.is_empty() {
        return Err(strata_server::ServerError::Config(
            "the OpenTSDB database name is empty".into(),
        ));
    }
    if config.max_body_bytes == 0 || config.max_line_bytes == 0 {
        return Err(strata_server::ServerError::Config(
            "max body bytes and max line bytes must be positive".into(),
        ));
    }
    if config.max_line_bytes > config::DEFAULT_MAX_LINE_BYTES {
        return Err(strata_server::ServerError::Config(format!(
            "max line bytes {} is over the line-protocol parser's limit of {} bytes",
            config.max_line_bytes,
            config::DEFAULT_MAX_LINE_BYTES
        )));
    }
    Ok(config)
}

/// A lake setting, else the AWS environment variable of the same meaning (what every S3
/// client reads), else unset.
fn or_aws(value: Option<String>, variable: &str) -> Option<String> {
    value
        .or_else(|| std::env::var(variable).ok())
        .filter(|v| !v.is_empty())
}

/// Logs to stderr, filtered like `RUST_LOG`; colours only on a terminal.
fn init_logging(filter: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .map_err(|e| format!("log filter {filter:?}: {e}"))?;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init()
        .map_err(|e| format!("cannot start logging: {e}"))
}
