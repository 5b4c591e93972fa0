//! What the lake copies: each shard's partitions that have ended, with a signature of their
//! contents, and their rows table by table in series order.
//!
//! The lake (`crates/lake`) asks for the partitions that ended before `now - tier after`
//! and, for each table in them, compares the signature with the one it recorded for the
//! copy it holds. The signature only grows when the rows change: a flush into the
//! partition gives its parts a higher order (merges keep the highest order of their run),
//! and a delete over it adds a tombstone with a higher id. Retention is not part of it:
//! expired days leave the lake by date (reads here start at the horizon as every read).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Engine, Inner};
use crate::cold::ColdSource;
use crate::error::StorageError;
use crate::manifest::TieredCopy;
use crate::model::{SeriesId, TableId, Timestamp};
use crate::shard::{SeriesRows, ShardReadRequest};

/// One table's rows in a shard's partition, as the lake copies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColdTable {
    /// The table.
    pub table: TableId,
    /// The highest precedence order of the partition's parts that hold the table's rows:
    /// grows when rows of the table are flushed into the partition.
    pub order: u64,
    /// The highest id of the deletes in force over the table and the partition's time
    /// range (0: none). Deletes only add higher ids, so a copy made at a lower one misses
    /// a delete.
    pub tombstone: u64,
}

/// A shard's partition whose time range has ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColdPartition {
    /// The shard.
    pub shard: usize,
    /// The partition number (time divided by the partition width, floored).
    pub partition: i64,
    /// Inclusive start of the partition's time range.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// The tables with rows in its parts, by increasing id.
    pub tables: Vec<ColdTable>,
}

impl Engine {
    /// Every shard's partitions that ended at or before `ended_by` and have parts, by shard
    /// then partition. Rows still in memtables are not counted: once flushed, they raise
    /// their table's order there.
    pub fn cold_partitions(&self, ended_by: Timestamp) -> Vec<ColdPartition> {
        let tombstones = self.inner.catalog.tombstones().snapshot();
        let mut out = Vec::new();
        for (shard_index, shard) in self.inner.shards.iter().enumerate() {
            let parts = shard.parts();
            let tiered = shard.tiered();
            let mut partitions: Vec<i64> = parts
                .iter()
                .map(|p| p.entry.partition)
                .chain(tiered.iter().map(|c| c.partition))
                .collect();
            partitions.sort_unstable();
            partitions.dedup();
            for partition in partitions {
                let (start, end) = self.inner.partition_range(partition);
                if end > ended_by {
                    continue;
                }
                // Each table's highest part order, the copies' in the lake included (rows
                // released from parts are there).
                let mut tables: BTreeMap<TableId, u64> = tiered
                    .iter()
                    .filter(|c| c.partition == partition)
                    .map(|c| (c.table, c.order))
                    .collect();
                for part in parts.iter().filter(|p| p.entry.partition == partition) {
                    // The part's tables, from its per-table byte counts (kept since it
                    // was opened): no walk over its series.
                    for (table, _) in part.reader.table_bytes() {
                        let order = tables.entry(*table).or_default();
                        *order = (*order).max(part.entry.order);
                    }
                }
                let tables = tables
                    .into_iter()
                    .map(|(table, order)| ColdTable {
                        table,
                        order,
                        tombstone: tombstones
                            .iter()
                            .filter(|t| t.table == table && t.start < end && t.end > start)
                            .map(|t| t.id)
                            .max()
                            .unwrap_or(0),
                    })
                    .collect();
                out.push(ColdPartition {
                    shard: shard_index,
                    partition,
                    start,
                    end,
                    tables,
                });
            }
        }
        out
    }

    /// Hands `table`'s rows in `cold`'s shard and time range (from the start of the
    /// table's retention horizon, deletes applied, rows still in memtables left out) to
    /// `visit`, one series at a time in the order of their tags (canonical: sorted by key,
    /// then compared key by key), each sorted by time; stops when `visit` returns `false`.
    pub fn read_partition_each(
        &self,
        cold: &ColdPartition,
        table: TableId,
        visit: &mut dyn FnMut(SeriesRows) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let shard = self
            .inner
            .shards
            .get(cold.shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {}", cold.shard)))?;
        let mut series: Vec<(Vec<(String, String)>, SeriesId)> = shard
            .series_of_table_with_tags(table)
            .into_iter()
            .map(|(id, tags)| (tags, id))
            .collect();
        series.sort();
        let ids: Vec<SeriesId> = series.into_iter().map(|(_, id)| id).collect();
        let request = ShardReadRequest {
            table,
            predicate: None,
            start: cold.start.max(self.inner.visible_from(table)),
            end: cold.end,
            fields: None,
            parts_only: true,
        };
        shard
            .read_series_each(&request, &ids, visit)
            .map_err(|e| self.inner.after_read_error(cold.shard, e))
    }
}

impl Engine {
    /// Sets where reads take the rows of partitions released to the lake from (see
    /// [`crate::cold`]). Until it is set, a read that meets such a partition fails with an
    /// error saying so.
    pub fn set_cold_source(&self, source: Arc<dyn ColdSource>) {
        self.inner.cold.set(source);
    }

    /// The copy of `table`'s rows of `cold`'s partition that the shard's manifest records
    /// as in the lake, as (order, tombstone); `None` when it records none.
    pub fn recorded_copy(&self, cold: &ColdPartition, table: TableId) -> Option<(u64, u64)> {
        let shard = self.inner.shards.get(cold.shard)?;
        shard
            .tiered()
            .iter()
            .find(|c| c.partition == cold.partition && c.table == table)
            .map(|c| (c.order, c.tombstone))
    }

    /// Records that the lake committed its copy of `cold`'s rows of `table` (the
    /// signature the copy was made at) and releases the local parts that copy holds: from
    /// then on reads take those rows from the [cold source](Engine::set_cold_source).
    /// Parts written after the copy was read stay. Returns how many parts were released.
    /// Idempotent: call it again after a crash.
    pub fn release_tiered(
        &self,
        cold: &ColdPartition,
        table: &ColdTable,
    ) -> Result<usize, StorageError> {
        let shard = self
            .inner
            .shards
            .get(cold.shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {}", cold.shard)))?;
        shard.release_tiered(TieredCopy {
            partition: cold.partition,
            table: table.table,
            order: table.order,
            tombstone: table.tombstone,
        })
    }

    /// Records that the lake holds no copy of `table`'s rows of `cold`'s partition (none
    /// is left: deleted): reads stop looking for one. Local parts are left to the purge.
    pub fn forget_tiered(&self, cold: &ColdPartition, table: TableId) -> Result<(), StorageError> {
        let shard = self
            .inner
            .shards
            .get(cold.shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {}", cold.shard)))?;
        shard.forget_copy(cold.partition, table)
    }

    /// The time range of `partition`: inclusive start, exclusive end.
    pub fn partition_range(&self, partition: i64) -> (Timestamp, Timestamp) {
        self.inner.partition_range(partition)
    }

    /// The first time of `table` a read sees now (its retention horizon; `i64::MIN`
    /// without retention).
    pub fn read_horizon(&self, table: TableId) -> Timestamp {
        self.inner.visible_from(table)
    }
}

impl Inner {
    /// The time range of `partition`: inclusive start, exclusive end.
    fn partition_range(&self, partition: i64) -> (Timestamp, Timestamp) {
        let width = i64::try_from(self.options.partition_duration.as_nanos()).unwrap_or(i64::MAX);
        (
            partition.saturating_mul(width),
            partition.saturating_add(1).saturating_mul(width),
        )
    }
}
