//! Rows that left the shards' parts for the lake: the interface through which reads take
//! them back.
//!
//! Once the lake (`crates/lake`) has committed its copy of a table's rows of one shard
//! partition, the shard records a [`TieredCopy`] in its manifest and releases the local
//! parts holding those rows. From then on every read of that table over that partition —
//! scans, aggregates, latest rows, the lake's own re-copies — asks the engine's
//! [`ColdSource`] for the copy's rows of the series it reads, and merges them under the
//! shard's parts and memtables (late writes win, deletes apply), exactly as it merges
//! parts. The storage crate knows nothing of Parquet or object stores: the lake implements
//! the trait and hands it to [`crate::Engine::set_cold_source`].

use std::sync::Arc;

use parking_lot::RwLock;

use crate::catalog::TableSchema;
use crate::column::SeriesData;
use crate::error::StorageError;
use crate::manifest::TieredCopy;
use crate::model::{FieldId, Timestamp};

/// A read of one copy's rows.
#[derive(Debug, Clone, Copy)]
pub struct ColdRead<'a> {
    /// The shard whose partition the copy holds.
    pub shard: usize,
    /// The table.
    pub table: &'a TableSchema,
    /// The copy.
    pub copy: &'a TieredCopy,
    /// Inclusive start of the rows wanted.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// The fields wanted (all when `None`).
    pub fields: Option<&'a [FieldId]>,
    /// The series wanted, by canonical tags (sorted by key), in increasing order.
    pub series: &'a [Vec<(String, String)>],
    /// Only each series' latest row in the range is wanted (more rows may come: the
    /// reader merges and keeps the latest).
    pub last_only: bool,
}

/// The rows of one copy, series by series.
pub trait ColdCursor: Send {
    /// The next series with rows: its position in [`ColdRead::series`] (increasing from
    /// one call to the next) and its rows in the range, sorted by time, columns sorted by
    /// field id. `None` when no series is left.
    fn next_series(&mut self) -> Result<Option<(usize, SeriesData)>, StorageError>;
}

/// Where copies are read from.
pub trait ColdSource: Send + Sync {
    /// Cursors over the rows of `read`: several when the copy is stored in several files
    /// (each cursor's positions increase; together they give every row once).
    fn open(&self, read: &ColdRead<'_>) -> Result<Vec<Box<dyn ColdCursor>>, StorageError>;
}

/// The engine's cold source, shared by its shards; empty until one is set.
#[derive(Default)]
pub(crate) struct ColdSlot(RwLock<Option<Arc<dyn ColdSource>>>);

impl ColdSlot {
    pub fn set(&self, source: Arc<dyn ColdSource>) {
        *self.0.write() = Some(source);
    }

    /// The source, or the error a read of a released partition gets without one.
    pub fn get(
        &self,
        table: &TableSchema,
        copy: &TieredCopy,
    ) -> Result<Arc<dyn ColdSource>, StorageError> {
        self.0.read().clone().ok_or_else(|| {
            StorageError::Unavailable(format!(
                "rows of {}.{} in partition {} are in the lake, and this server was not \
                 started with one: start it with the same --lake",
                table.database, table.name, copy.partition
            ))
        })
    }
}

impl std::fmt::Debug for ColdSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ColdSlot")
            .field(&self.0.read().is_some())
            .finish()
    }
}
