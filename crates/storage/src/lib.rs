//! Strata's storage engine.
//!
//! Module map:
//! - [`model`]: ids, field types and values shared by every module.
//! - [`options`]: [`EngineOptions`] with documented defaults, the injected [`Clock`].
//! - [`catalog`]: databases, tables, tag keys and typed fields (`catalog.json`).
//! - [`ingest`]: line protocol → per-shard batches, on the writer's thread.
//! - `shard`: one shard's series index, WAL, memtables and parts; flush, merge, reads.
//! - [`memtable`]: rows not yet in parts; [`column`]: the columnar [`column::SeriesData`]
//!   form shared by memtables, parts, merges and reads.
//! - [`manifest`]: a shard's live parts, swapped atomically.
//! - [`arrow`]: reads as Arrow record batches for the query layer.
//!
//! Read path: `ReadRequest → per shard: series ids from the tag index → parts (pruned by
//! time) + frozen + active memtable → merged SeriesData → Arrow batches`, or
//! `Engine::summarize_shard` for aggregates from block pre-aggregates.
//! - [`wal`]: per-shard write-ahead log: segments of length- and CRC-framed records, group
//!   commit, torn-tail recovery.
//! - [`part`]: immutable columnar part files: checksummed codec blocks, pre-aggregates, index.
//! - [`series`]: per-shard series index: raw series key → id without allocating, tag
//!   postings for filters, persisted as a log of new series.
//!
//! Write path: `line protocol → parse (writer thread) → group by shard → shard: WAL append +
//! memtable → flush → part → merge`.

pub mod arrow;
pub mod catalog;
mod checked_json;
pub mod cold;
pub mod column;
mod dir_lock;
mod engine;
pub mod error;
mod fsutil;
#[doc(hidden)]
pub mod fuzz;
pub mod ingest;
mod ingest_series;
mod layout;
pub mod manifest;
pub mod memtable;
pub mod model;
pub mod options;
pub mod part;
pub mod series;
mod shard;
pub mod thread_priority;
mod varint;
pub mod wal;
mod wal_record;
mod write_slots;
pub mod write_stages;

pub use catalog::{Aggregate, Retention};
pub use engine::{
    BACKUP_FILE, BackupReport, CheckReport, ColdPartition, ColdTable, DeleteRequest,
    DownsampleInfo, DownsampleSpec, Engine, EngineStats, OpenReport, PURGE_DELAY_NS, ReadRequest,
    RepairReport, WriteReport, check, repair, restore,
};
pub use error::StorageError;
pub use ingest_series::SeriesWrite;
pub use options::{Clock, EngineOptions, ManualClock, SystemClock, WalSync};
pub use shard::{LatestView, QuarantinedPart, SeriesRows, SeriesSummary, TagStr};
