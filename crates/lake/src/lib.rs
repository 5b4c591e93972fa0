//! Strata's lake: shards' partitions that ended long enough ago, copied as Parquet into one
//! Delta Lake table per Strata table, for Spark, Trino, DuckDB or pandas to read.
//!
//! Module map:
//! - [`schema`]: a Strata table as Delta columns, its rows as Arrow batches of them.
//! - [`directory`]: a file's series and their rows, kept in its footer.
//! - [`file`]: one Parquet file (zstd, row groups, statistics), named after the shard
//!   partition and state it copies, and its Delta `add` action.
//! - [`table`]: one table's Delta table: create, add columns, list files, commit.
//! - [`store`]: the `s3://` object stores, registered with Delta.
//! - `read`: [`LakeReader`], the engine's source of the rows it released to the lake.
//! - `tier`: a round of copying; [`Tierer`] runs rounds on a thread of its own.
//!
//! The lake's whole state is in the Delta logs: a file's name says what it copies, so a
//! round after a restart or a crash carries on from the tables themselves. See
//! `docs/lake.md` for the layout and what this step does not do yet.

pub mod directory;
pub mod error;
pub mod file;
mod footer_cache;
mod mirror;
mod read;
pub mod schema;
pub mod store;
pub mod table;
mod tier;
mod tierer;
mod yield_to_ingest;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strata_storage::model::TableId;

pub use error::LakeError;
pub use file::FileOptions;
pub use mirror::{LakeMirror, MirrorReport};
pub use read::LakeReader;
pub use store::S3Options;
pub use tier::TierReport;
pub use tierer::{LakeStats, Tierer};
/// Lake roots and table locations are `url` crate URLs.
pub use url::Url;

/// Where the lake is and how it is kept.
#[derive(Debug, Clone)]
pub struct LakeOptions {
    /// The lake's root: `file:///path` (a mounted file system) or `s3://bucket/prefix`
    /// (an S3-compatible object store). Each table is at `ROOT/DATABASE/TABLE`.
    pub url: Url,
    /// Options handed to the object store (`object_store`'s `aws_*` keys: endpoint,
    /// region, credentials; see [`S3Options::storage_options`]).
    pub storage_options: HashMap<String, String>,
    /// Partitions are copied once they ended this long ago.
    pub tier_after: Duration,
    /// How often a round runs.
    pub tier_interval: Duration,
    /// How files are written.
    pub file: FileOptions,
    /// How often each table is vacuumed. Default one hour.
    pub vacuum_interval: Duration,
    /// How old an unreferenced file must be before a vacuum deletes it; `None` (the
    /// default): the table's own setting, Delta's 7 days.
    pub vacuum_retention: Option<Duration>,
    /// Before each copy a round waits while the server takes more rows a second than this
    /// (0: never waits). Default 100,000.
    pub yield_above_rows_per_second: u64,
    /// The most a round waits for ingest in all. Default 10 minutes.
    pub max_yield_per_round: Duration,
}

impl LakeOptions {
    /// Options for the lake at `url` (see [`parse_url`]), with the defaults: copied a day
    /// after a partition ends, a round a minute.
    pub fn new(url: Url) -> Self {
        Self {
            url,
            storage_options: HashMap::new(),
            tier_after: Duration::from_secs(86_400),
            tier_interval: Duration::from_secs(60),
            file: FileOptions::default(),
            vacuum_interval: Duration::from_secs(3600),
            vacuum_retention: None,
            yield_above_rows_per_second: 100_000,
            max_yield_per_round: Duration::from_secs(600),
        }
    }
}

/// Parses a lake URL: `file:///absolute/path` (or a plain absolute path), or
/// `s3://bucket/prefix` (`s3a://` too).
pub fn parse_url(text: &str) -> Result<Url, LakeError> {
    let url = if text.starts_with('/') {
        Url::from_directory_path(text)
            .map_err(|()| LakeError::Invalid(format!("{text:?} is not an absolute path")))?
    } else {
        Url::parse(text).map_err(|e| LakeError::Invalid(format!("{text:?}: {e}")))?
    };
    match url.scheme() {
        "file" => {
            url.to_file_path().map_err(|()| {
                LakeError::Invalid(format!("{text:?} is not a local path (file:///path)"))
            })?;
            Ok(url)
        }
        scheme if store::S3_SCHEMES.contains(&scheme) => {
            if url.host_str().is_none_or(str::is_empty) {
                return Err(LakeError::Invalid(format!(
                    "{text:?} names no bucket (s3://bucket/prefix)"
                )));
            }
            Ok(url)
        }
        other => Err(LakeError::Invalid(format!(
            "{text:?}: unknown lake scheme {other:?} (expected file:///path or s3://bucket/prefix)"
        ))),
    }
}

/// A lake: the Delta tables of one Strata server's tables.
pub struct Lake {
    options: LakeOptions,
    /// The tables opened so far.
    tables: tokio::sync::Mutex<HashMap<TableId, table::LakeTable>>,
    /// Tables found absent from the lake: not looked for again until they have rows to
    /// copy (this server is the lake's only writer, so none appears meanwhile), which
    /// spares an object store listing per table and round.
    absent: tokio::sync::Mutex<std::collections::HashSet<TableId>>,
    /// Dropped tables whose lake tables were looked at (and cleared) in this process.
    cleared: tokio::sync::Mutex<std::collections::HashSet<TableId>>,
    /// The engine's write rate, for giving way to heavy ingest (`yield_to_ingest.rs`).
    ingest: tokio::sync::Mutex<yield_to_ingest::IngestGauge>,
    /// Set when the server stops: rounds end early ([`RoundStop`]).
    stop: RoundStop,
}

/// Ends tiering rounds early, for a server that stops: a round in progress ends before its
/// next shard partition, and a copy not yet committed is abandoned where it is (its files
/// are left for vacuum, as a crash would leave them). A copy once committed is always
/// released before the round ends, so a stop never leaves the lake and the local parts out
/// of step. Once stopped, every later round of the lake ends at once.
///
/// Without it a stop waited for the whole round, and rounds run at the lowest CPU priority:
/// on a machine whose cores are busy one can take minutes.
#[derive(Debug, Clone, Default)]
pub struct RoundStop(Arc<AtomicBool>);

impl RoundStop {
    /// Stops the lake's round in progress and every later one.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`RoundStop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl Lake {
    /// A lake with `options`; nothing is touched until a round.
    pub fn new(options: LakeOptions) -> Self {
        store::register();
        Self {
            options,
            tables: tokio::sync::Mutex::new(HashMap::new()),
            absent: tokio::sync::Mutex::new(std::collections::HashSet::new()),
            cleared: tokio::sync::Mutex::new(std::collections::HashSet::new()),
            ingest: tokio::sync::Mutex::new(yield_to_ingest::IngestGauge::default()),
            stop: RoundStop::default(),
        }
    }

    /// What stops this lake's rounds early.
    pub fn round_stop(&self) -> RoundStop {
        self.stop.clone()
    }

    /// The lake's options.
    pub fn options(&self) -> &LakeOptions {
        &self.options
    }

    /// Where the Delta table of `database.table` is: `ROOT/DATABASE/TABLE`, each name one
    /// percent-encoded path segment. With `create`, a local directory is made for it.
    pub fn table_url(&self, database: &str, table: &str, create: bool) -> Result<Url, LakeError> {
        let url = table_url(&self.options.url, database, table)?;
        if create
            && url.scheme() == "file"
            && let Ok(path) = url.to_file_path()
        {
            std::fs::create_dir_all(&path)
                .map_err(|e| LakeError::Invalid(format!("{}: {e}", path.display())))?;
        }
        Ok(url)
    }
}

/// Where the Delta table of `database.table` is in the lake at `root`:
/// `ROOT/DATABASE/TABLE`, each name one percent-encoded path segment.
pub fn table_url(root: &Url, database: &str, table: &str) -> Result<Url, LakeError> {
    let mut url = root.clone();
    {
        let mut segments = url
            .path_segments_mut()
            .map_err(|()| LakeError::Invalid(format!("{root} cannot hold tables")))?;
        segments.pop_if_empty().push(database).push(table);
    }
    Ok(url)
}
