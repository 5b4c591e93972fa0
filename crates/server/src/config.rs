//! [`ServerConfig`]: every setting of `strata serve`, typed, with documented defaults; and
//! [`FileConfig`], the optional TOML file that can set any of them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use strata_query::QueryOptions;
use strata_storage::{EngineOptions, WalSync};

use crate::error::ServerError;

/// Default HTTP address: loopback only, InfluxDB's port, so clients work unchanged and
/// nothing is exposed to the network until asked.
pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8086";

/// Default Postgres wire address: loopback only, Postgres's port.
pub const DEFAULT_PG_ADDR: &str = "127.0.0.1:5432";

/// Where the Postgres wire protocol listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PgListen {
    /// Nowhere (`--pg off`).
    Off,
    /// [`DEFAULT_PG_ADDR`], unless another process (a Postgres server, most likely) holds
    /// that port: then a warning says so and the server starts without it.
    Default,
    /// This address; the server does not start if it cannot listen there.
    Addr(SocketAddr),
}

/// Parses `--pg`: `off`, or an address.
pub fn parse_pg(text: &str) -> Result<PgListen, ServerError> {
    match text.trim() {
        "" | "off" => Ok(PgListen::Off),
        addr => parse_addr("pg address", addr).map(PgListen::Addr),
    }
}

/// Default data directory, relative to the working directory.
pub const DEFAULT_DATA_DIR: &str = "strata-data";

/// Database that TCP line-protocol writes go to unless configured (TCP has no URL to name
/// one in).
pub const DEFAULT_TCP_DATABASE: &str = "strata";

/// Database that `/sql` statements name tables in unless the request gives `db`: the same
/// as TCP writes, so what a TCP client writes is what an unqualified query reads.
pub const DEFAULT_SQL_DATABASE: &str = DEFAULT_TCP_DATABASE;

/// Default request body cap: 64 MiB. A TSBS batch of 10,000 rows is about 2.5 MB and
/// Telegraf's default batch about 1 MB, so 64 MiB leaves room for very large batches
/// while bounding what one request can make the server hold (the body plus its parse).
/// The cap applies to the decompressed body too (a gzip bomb is a 413, not an OOM).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;

/// Default cap on bytes of write bodies held at once, over all requests: 256 MiB, four
/// maximal bodies. Past it a write is answered 503 with `Retry-After: 1` at once, so a
/// flood of clients cannot queue unbounded memory behind the engine's back-pressure.
pub const DEFAULT_MAX_INFLIGHT_WRITE_BYTES: usize = 256 << 20;

/// Default longest line, in bytes: the line-protocol parser's own default (1 MiB; see
/// `strata_lineproto::DEFAULT_MAX_LINE_BYTES` for why).
pub const DEFAULT_MAX_LINE_BYTES: usize = strata_lineproto::DEFAULT_MAX_LINE_BYTES;

/// Default cap on open HTTP connections: each costs a file descriptor and a few KiB, and
/// clients past this many are far more likely a leak or an attack than a fleet of agents.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

/// Default time a client has to send a request's head, and most a request body may pause:
/// hyper's own header timeout. A client that trickles its request would otherwise hold a
/// connection (and, for a write, its in-flight bytes) for ever.
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything [`crate::run`] needs. Every field has a default; see [`Default`].
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// HTTP listen address. Default [`DEFAULT_HTTP_ADDR`]; port 0 picks a free port (the
    /// bound address is logged).
    pub http_addr: SocketAddr,
    /// TCP line-protocol listen address; `None` (the default) means no TCP listener.
    pub tcp_addr: Option<SocketAddr>,
    /// Database for TCP writes. Default [`DEFAULT_TCP_DATABASE`].
    pub tcp_database: String,
    /// OpenTSDB telnet (`put`) listen address; `None` (the default) means no listener.
    /// OpenTSDB's HTTP `/api/put` is on the HTTP listener whatever this says.
    pub opentsdb_addr: Option<SocketAddr>,
    /// Database for OpenTSDB writes (telnet, and `/api/put` without `?db=`). Default
    /// [`crate::opentsdb::DEFAULT_DATABASE`].
    pub opentsdb_database: String,
    /// Postgres wire listen address. Default [`PgListen::Default`].
    pub pg: PgListen,
    /// Data directories, one per disk. Default `["strata-data"]`.
    pub data_dirs: Vec<PathBuf>,
    /// Engine shards; 0 (the default) means one per core this process may use.
    pub shards: usize,
    /// Writes that parse and store their rows at once (the others wait their turn); 0 (the
    /// default) means two per core this process may use.
    pub write_concurrency: usize,
    /// While a partition holds more than this many parts, each write first merges some of
    /// them (assisted merges); 0 turns them off. Default 64
    /// ([`strata_storage::EngineOptions::merge_assist_parts`]).
    pub merge_assist_parts: usize,
    /// WAL durability. Default: fsync at least every second.
    pub wal_sync: WalSync,
    /// Default retention of every database without its own (`CREATE DATABASE … WITH
    /// RETENTION`, `ALTER DATABASE … SET RETENTION`); `None` (the default) keeps rows
    /// forever.
    pub retention: Option<Duration>,
    /// At start-up, step over damage in the middle of the WAL (losing the damaged records
    /// and rows that depend on them, each logged) instead of refusing to start
    /// (`--wal-recovery skip-damaged`). Default false (`strict`).
    pub wal_skip_damaged: bool,
    /// Most live series a database may hold; a row that would create one more is refused
    /// (named in the write's 400 answer). `None` (the default): no limit.
    pub max_series: Option<u64>,
    /// Token required on writes and `/metrics`; `None` (the default) means no auth.
    pub auth_token: Option<String>,
    /// TLS certificate chain (PEM, leaf first) for the HTTP and TCP listeners; with
    /// `tls_key`, both listeners speak only TLS. `None` (the default): plaintext.
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub tls_key: Option<PathBuf>,
    /// A second token that may only query (`/query` and `/sql` reads, `/metrics`), for
    /// dashboards; needs `auth_token`. `None` (the default) means none.
    pub read_only_token: Option<String>,
    /// Largest request body, before and after gzip decompression. Default
    /// [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// Longest line in bytes, over HTTP and TCP; a longer line is rejected (HTTP: named in
    /// the 400 answer; TCP: skipped to the next newline and counted). Default
    /// [`DEFAULT_MAX_LINE_BYTES`], which is also the most it can be: the engine's
    /// `write_lines` parses with the parser's default limits and takes no parse options.
    pub max_line_bytes: usize,
    /// Most write-body bytes held at once over all HTTP requests before new writes get 503.
    /// Default [`DEFAULT_MAX_INFLIGHT_WRITE_BYTES`].
    pub max_inflight_write_bytes: usize,
    /// How `/sql` statements run: timeout, memory limit, concurrency. Default
    /// [`QueryOptions::default`] (60 s, a quarter of RAM, twice the cores).
    pub query: QueryOptions,
    /// Most HTTP connections open at once; one more is closed as soon as it is accepted
    /// (and counted). Default [`DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// Longest a client may take to send a request's head (line and headers), on a new
    /// connection or between requests of a kept-alive one (past it the connection is
    /// closed), and longest a request body may pause (past it the request is answered
    /// 408). Default [`DEFAULT_CLIENT_TIMEOUT`].
    pub client_timeout: Duration,
    /// The lake cold partitions are copied to (`--lake`); `None` (the default): none.
    pub lake: Option<LakeConfig>,
}

/// Where and when cold partitions are copied to the lake (`docs/lake.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct LakeConfig {
    /// The lake's root, `file:///path` (checked when the server starts).
    pub url: String,
    /// A shard partition is copied once it ended this long ago. Default one day.
    pub tier_after: Duration,
    /// How often the lake looks for partitions to copy. Default one minute.
    pub tier_interval: Duration,
    /// For `s3://` lakes: endpoint, region and credentials.
    pub s3: S3Options,
    /// A read-only query server on the lake (`--lake-read-only`): no tiering; the engine
    /// mirrors the lake's tables every `tier_interval` and refuses changes.
    pub read_only: bool,
}

pub use strata_lake::S3Options;

impl LakeConfig {
    /// The lake's root URL, checked, and its object store's options (the S3 settings;
    /// none for a `file://` lake).
    pub fn location(
        &self,
    ) -> Result<(strata_lake::Url, std::collections::HashMap<String, String>), ServerError> {
        let url =
            strata_lake::parse_url(&self.url).map_err(|e| ServerError::Config(e.to_string()))?;
        let options = if url.scheme() == "file" {
            Default::default()
        } else {
            self.s3.storage_options()
        };
        Ok((url, options))
    }
}

/// Default `tier_after`: a partition is copied a day after it ends.
pub const DEFAULT_TIER_AFTER: Duration = Duration::from_secs(86_400);
/// Default `tier_interval`.
pub const DEFAULT_TIER_INTERVAL: Duration = Duration::from_secs(60);

/// Parses `--tier-after` or `--tier-interval`: a positive duration such as `7d` or `1m`.
pub fn parse_tier_duration(what: &str, text: &str) -> Result<Duration, ServerError> {
    match humantime::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(ServerError::Config(format!(
            "{what} {text:?}: give a positive duration such as 7d or 1m"
        ))),
        Err(e) => Err(ServerError::Config(format!(
            "{what} {text:?}: {e} (a duration such as 7d or 1m)"
        ))),
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            http_addr: SocketAddr::from(([127, 0, 0, 1], 8086)),
            tcp_addr: None,
            tcp_database: DEFAULT_TCP_DATABASE.to_owned(),
            opentsdb_addr: None,
            opentsdb_database: crate::opentsdb::DEFAULT_DATABASE.to_owned(),
            pg: PgListen::Default,
            data_dirs: vec![PathBuf::from(DEFAULT_DATA_DIR)],
            shards: 0,
            write_concurrency: 0,
            merge_assist_parts: EngineOptions::default().merge_assist_parts,
            wal_sync: WalSync::Interval(Duration::from_secs(1)),
            retention: None,
            max_series: None,
            wal_skip_damaged: false,
            auth_token: None,
            read_only_token: None,
            tls_cert: None,
            tls_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_inflight_write_bytes: DEFAULT_MAX_INFLIGHT_WRITE_BYTES,
            query: QueryOptions::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            client_timeout: DEFAULT_CLIENT_TIMEOUT,
            lake: None,
        }
    }
}

/// The optional TOML config file: each key sets the [`ServerConfig`] field of the same
/// meaning; a key that is absent leaves the default. Unknown keys are an error naming them.
///
/// ```toml
/// data_dirs = ["/disk1/strata", "/disk2/strata"]
/// http = "0.0.0.0:8086"
/// tcp = "127.0.0.1:8089"
/// tcp_db = "telegraf"
/// opentsdb = "127.0.0.1:4242" # OpenTSDB telnet put
/// opentsdb_db = "opentsdb"
/// pg = "127.0.0.1:5432"       # or "off"
/// shards = 8
/// write_concurrency = 16      # writes storing at once; 0: two per core
/// merge_assist_parts = 64     # writes merge first above this many parts a partition; 0: off
/// wal_sync = "500ms"          # always | none | a duration
/// wal_recovery = "strict"     # strict | skip-damaged
/// retention = "30d"           # default retention of databases; 0 keeps rows forever
/// max_series = "1000000"      # live series per database, or none
/// auth_token = "secret"
/// read_only_token = "dashboards"
/// tls_cert = "/etc/strata/cert.pem"
/// tls_key = "/etc/strata/key.pem"
/// max_body_bytes = 67108864
/// max_line_bytes = 1048576
/// max_inflight_write_bytes = 268435456
/// query_timeout = "60s"       # a duration, or none
/// query_memory_limit = "4G"   # bytes with an optional K, M or G suffix, or none
/// index_memory = "2G"         # parts' indexes held in memory (default: memory / 16)
/// query_concurrency = 16
/// query_queue = 64
/// max_connections = 4096
/// client_timeout = "30s"
/// lake = "file:///mnt/lake"   # or s3://bucket/prefix: cold partitions as Delta tables
/// lake_endpoint = "http://127.0.0.1:8333"  # S3-compatible store (AWS when unset)
/// lake_region = "us-east-1"
/// lake_access_key_id = "…"
/// lake_secret_access_key = "…"
/// tier_after = "1d"           # once a partition ended this long ago
/// tier_interval = "1m"        # how often to look
/// lake_read_only = false      # true: a query server on the lake, writes refused
/// log = "info"
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Data directories.
    pub data_dirs: Option<Vec<PathBuf>>,
    /// HTTP listen address.
    pub http: Option<String>,
    /// TCP listen address.
    pub tcp: Option<String>,
    /// Database for TCP writes.
    pub tcp_db: Option<String>,
    /// OpenTSDB telnet listen address.
    pub opentsdb: Option<String>,
    /// Database for OpenTSDB writes.
    pub opentsdb_db: Option<String>,
    /// Postgres wire listen address, or `off`.
    pub pg: Option<String>,
    /// Engine shards.
    pub shards: Option<usize>,
    /// Writes storing at once.
    pub write_concurrency: Option<usize>,
    /// Parts of a partition above which writes merge first.
    pub merge_assist_parts: Option<usize>,
    /// WAL durability (`always`, `none` or a duration such as `1s`).
    pub wal_sync: Option<String>,
    /// What start-up does with damage in the middle of the WAL (`strict`, `skip-damaged`).
    pub wal_recovery: Option<String>,
    /// Default retention (a duration such as `30d`, or `0` for forever).
    pub retention: Option<String>,
    /// Live series per database (a number, or `none`).
    pub max_series: Option<String>,
    /// Auth token.
    pub auth_token: Option<String>,
    /// Read-only token.
    pub read_only_token: Option<String>,
    /// TLS certificate chain (PEM).
    pub tls_cert: Option<PathBuf>,
    /// TLS private key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Request body cap in bytes.
    pub max_body_bytes: Option<usize>,
    /// Line length cap in bytes.
    pub max_line_bytes: Option<usize>,
    /// In-flight write bytes cap.
    pub max_inflight_write_bytes: Option<usize>,
    /// Statement timeout (a duration or `none`).
    pub query_timeout: Option<String>,
    /// Query memory limit (bytes with an optional K/M/G suffix, or `none`).
    pub query_memory_limit: Option<String>,
    /// Memory for parts' indexes (bytes with an optional K/M/G suffix).
    pub index_memory: Option<String>,
    /// Statements running at once.
    pub query_concurrency: Option<usize>,
    /// Statements that may wait for a slot.
    pub query_queue: Option<usize>,
    /// HTTP connections open at once.
    pub max_connections: Option<usize>,
    /// Time to send a request head, and most a body may pause (a duration).
    pub client_timeout: Option<String>,
    /// The lake's root URL.
    pub lake: Option<String>,
    /// S3 endpoint of the lake.
    pub lake_endpoint: Option<String>,
    /// S3 region of the lake.
    pub lake_region: Option<String>,
    /// S3 access key id of the lake.
    pub lake_access_key_id: Option<String>,
    /// S3 secret access key of the lake.
    pub lake_secret_access_key: Option<String>,
    /// Copy partitions once they ended this long ago (a duration).
    pub tier_after: Option<String>,
    /// How often the lake looks for partitions to copy (a duration).
    pub tier_interval: Option<String>,
    /// A read-only query server on the lake.
    pub lake_read_only: Option<bool>,
    /// Log filter (`RUST_LOG` syntax).
    pub log: Option<String>,
}

impl FileConfig {
    /// Parses the TOML text of a config file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ServerError> {
        toml::from_str(text).map_err(|e| ServerError::Config(format!("{origin}: {e}")))
    }

    /// Reads and parses a config file.
    pub fn read(path: &std::path::Path) -> Result<Self, ServerError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ServerError::Config(format!(
                "cannot read config file \"{}\": {e}",
                path.display()
            ))
        })?;
        Self::parse(&text, &format!("config file \"{}\"", path.display()))
    }
}

/// Parses `always | none | <duration>` (`1s`, `500ms`, ...) as a [`WalSync`].
pub fn parse_wal_sync(text: &str) -> Result<WalSync, ServerError> {
    match text {
        "always" => Ok(WalSync::Always),
        "none" => Ok(WalSync::None),
        other => humantime::parse_duration(other)
            .map(WalSync::Interval)
            .map_err(|e| {
                ServerError::Config(format!(
                    "wal sync {other:?}: expected always, none or a duration such as 1s ({e})"
                ))
            }),
    }
}

/// Parses `--wal-recovery`: `strict` (damage stops the start) or `skip-damaged`; returns
/// whether to skip.
pub fn parse_wal_recovery(text: &str) -> Result<bool, ServerError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "strict" => Ok(false),
        "skip-damaged" => Ok(true),
        _ => Err(ServerError::Config(format!(
            "wal recovery {text:?}: give strict (damage in the WAL stops the start) or \
             skip-damaged (start anyway, losing the damaged records)"
        ))),
    }
}

/// Parses the per-database series limit: a positive number, or `none` for no limit.
pub fn parse_max_series(text: &str) -> Result<Option<u64>, ServerError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match text.replace('_', "").parse::<u64>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(ServerError::Config(format!(
            "max series {text:?}: give the most live series a database may hold (a positive \
             number), or none for no limit"
        ))),
    }
}

/// Parses the server's default retention: a duration such as `30d`, or `0` (also `inf`,
/// `forever`) to keep rows forever.
pub fn parse_retention(text: &str) -> Result<Option<Duration>, ServerError> {
    match strata_storage::Retention::parse(text) {
        Ok(strata_storage::Retention::Keep(d)) => Ok(Some(d)),
        Ok(strata_storage::Retention::Forever) => Ok(None),
        Ok(strata_storage::Retention::ServerDefault) => Err(ServerError::Config(format!(
            "retention {text:?}: the server's retention is the default; give a duration such as 30d, or 0 for forever"
        ))),
        Err(e) => Err(ServerError::Config(e)),
    }
}

/// Parses the header timeout: a positive duration.
pub fn parse_client_timeout(text: &str) -> Result<Duration, ServerError> {
    match humantime::parse_duration(text) {
        Ok(limit) if !limit.is_zero() => Ok(limit),
        Ok(_) => Err(ServerError::Config(format!(
            "client timeout {text:?}: must be positive"
        ))),
        Err(e) => Err(ServerError::Config(format!(
            "client timeout {text:?}: expected a duration such as 30s ({e})"
        ))),
    }
}

/// Parses a statement timeout: a duration such as `60s` or `500ms`, or `none` (no limit).
pub fn parse_query_timeout(text: &str) -> Result<Option<Duration>, ServerError> {
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match humantime::parse_duration(text) {
        Ok(limit) if !limit.is_zero() => Ok(Some(limit)),
        Ok(_) => Err(ServerError::Config(format!(
            "query timeout {text:?}: must be positive (or none for no limit)"
        ))),
        Err(e) => Err(ServerError::Config(format!(
            "query timeout {text:?}: expected a duration such as 60s, or none ({e})"
        ))),
    }
}

/// Parses a memory size: bytes with an optional `K`, `M`, `G` or `T` suffix (powers of
/// 1024, `KiB`/`KB` spellings too), or `none` (unlimited).
pub fn parse_memory_limit(text: &str) -> Result<Option<usize>, ServerError> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    parse_byte_size("query memory limit", text, ", or none").map(Some)
}

/// Parses a positive size in bytes with an optional `K`, `M`, `G` or `T` suffix (powers of
/// 1024, `KiB`/`KB` spellings too); errors name `what` and end with `or_else`.
pub fn parse_byte_size(what: &str, text: &str, or_else: &str) -> Result<usize, ServerError> {
    let bad = |why: &str| {
        ServerError::Config(format!(
            "{what} {text:?}: {why}; expected bytes such as 4G, 512M or 1073741824{or_else}"
        ))
    };
    let trimmed = text.trim();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let (number, suffix) = trimmed.split_at(digits);
    let number: usize = number.parse().map_err(|_| bad("no number"))?;
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad("unknown suffix")),
    };
    let bytes = number
        .checked_mul(1usize << shift)
        .ok_or_else(|| bad("too large"))?;
    if bytes == 0 {
        return Err(bad("must be positive"));
    }
    Ok(bytes)
}

/// Parses a listen address such as `127.0.0.1:8086` or `[::1]:8086`.
pub fn parse_addr(what: &str, text: &str) -> Result<SocketAddr, ServerError> {
    text.parse().map_err(|e| {
        ServerError::Config(format!(
            "{what} {text:?}: expected IP:PORT such as 127.0.0.1:8086 ({e})"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_named() {
        let err = FileConfig::parse("http = \"127.0.0.1:1\"\nhttp_port = 3\n", "f.toml")
            .expect_err("unknown key");
        assert!(err.to_string().contains("http_port"), "{err}");
    }

    #[test]
    fn known_keys_parse() {
        let file = FileConfig::parse(
            "data_dirs = [\"a\", \"b\"]\nshards = 3\nwal_sync = \"500ms\"\n\
             write_concurrency = 5\nmerge_assist_parts = 0\n",
            "f.toml",
        )
        .expect("parse");
        assert_eq!(
            file.data_dirs,
            Some(vec![PathBuf::from("a"), PathBuf::from("b")])
        );
        assert_eq!(file.shards, Some(3));
        assert_eq!(file.write_concurrency, Some(5));
        assert_eq!(file.merge_assist_parts, Some(0));
        assert_eq!(
            parse_wal_sync(file.wal_sync.as_deref().unwrap_or_default()).ok(),
            Some(WalSync::Interval(Duration::from_millis(500)))
        );
    }

    #[test]
    fn wal_sync_words_and_errors() {
        assert_eq!(parse_wal_sync("always").ok(), Some(WalSync::Always));
        assert_eq!(parse_wal_sync("none").ok(), Some(WalSync::None));
        assert!(parse_wal_sync("sometimes").is_err());
        assert!(parse_addr("http", "localhost").is_err());
    }

    #[test]
    fn query_settings_parse() {
        assert_eq!(
            parse_query_timeout("250ms").ok(),
            Some(Some(Duration::from_millis(250)))
        );
        assert_eq!(parse_query_timeout("none").ok(), Some(None));
        assert!(parse_query_timeout("0s").is_err());
        assert!(parse_query_timeout("soon").is_err());
        assert_eq!(parse_memory_limit("1048576").ok(), Some(Some(1 << 20)));
        assert_eq!(parse_memory_limit("512M").ok(), Some(Some(512 << 20)));
        assert_eq!(parse_memory_limit("4GiB").ok(), Some(Some(4 << 30)));
        assert_eq!(parse_memory_limit("none").ok(), Some(None));
        assert!(parse_memory_limit("4X").is_err());
        assert!(parse_memory_limit("G").is_err());
        assert!(parse_memory_limit("0").is_err());
        assert_eq!(
            parse_byte_size("index memory", "16K", "").ok(),
            Some(16 << 10)
        );
        let error = parse_byte_size("index memory", "none", "").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid configuration: index memory \"none\": no number; expected bytes such as 4G, \
             512M or 1073741824"
        );
        let file = FileConfig::parse(
            "query_timeout = \"5s\"\nquery_memory_limit = \"1G\"\nquery_concurrency = 3\n\
             query_queue = 50\n",
            "f.toml",
        )
        .expect("parse");
        assert_eq!(file.query_timeout.as_deref(), Some("5s"));
        assert_eq!(file.query_memory_limit.as_deref(), Some("1G"));
        assert_eq!(file.query_concurrency, Some(3));
        assert_eq!(file.query_queue, Some(50));
    }
}
