//! Retention on disk: parts of partitions whose end has passed a table's retention horizon
//! lose that table's rows.
//!
//! Rows are hidden from reads as soon as they are older than the horizon (the engine
//! starts every read there); this file returns their disk space. A partition is a window
//! of time, and a part holds rows of one partition, possibly of several databases with
//! different retentions. Once the partition's end is at or before the horizon of every
//! table in a part, the part is deleted whole (no I/O but the unlink); when only some of
//! its tables have expired, the part is rewritten without them, as a purge rewrites parts
//! without dropped tables. A partition that straddles a horizon keeps its rows on disk
//! until the partition as a whole expires (as InfluxDB keeps a shard group whole).

use roaring::RoaringBitmap;

use super::Shard;
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};

/// What one expiry pass removed from a shard.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpiryReport {
    /// Parts deleted whole.
    pub parts_dropped: u64,
    /// Parts rewritten without their expired tables.
    pub parts_rewritten: u64,
    /// Rows removed from disk.
    pub rows: u64,
    /// Bytes of part files freed.
    pub bytes: u64,
}

impl Shard {
    /// Removes from disk the rows of every table whose horizon (`horizon_of(table)`; rows
    /// before it have expired) is at or after the end of the partition they are in.
    /// `latest_horizon` is the latest horizon of any table: partitions ending after it
    /// are not looked at.
    pub(crate) fn expire(
        &self,
        horizon_of: &mut dyn FnMut(TableId) -> Timestamp,
        latest_horizon: Timestamp,
    ) -> Result<ExpiryReport, StorageError> {
        let partition_ns = self.config.partition_ns;
        let partition_end = |partition: i64| (partition + 1).saturating_mul(partition_ns);
        let mut report = ExpiryReport::default();
        let mut manifest = self.manifest.lock();
        // Expired copies in the lake: reads start at the horizon, and the lake removes them.
        self.forget_tiered(&mut manifest, &mut |c| {
            let end = partition_end(c.partition);
            end > latest_horizon || horizon_of(c.table) < end
        })?;
        let parts = self.parts();
        let mut whole = Vec::new();
        for part in parts.iter() {
            let end = partition_end(part.entry.partition);
            if end > latest_horizon {
                continue;
            }
            let tables: RoaringBitmap = part.reader.tables().collect();
            let expired: RoaringBitmap = tables.iter().filter(|t| horizon_of(*t) >= end).collect();
            if expired.is_empty() {
                continue;
            }
            if expired.len() == tables.len() {
                whole.push(part.entry.id);
                report.parts_dropped += 1;
                report.rows += part.entry.rows;
                report.bytes += part.entry.bytes;
                continue;
            }
            let rewritten =
                self.rewrite_run(&mut manifest, std::slice::from_ref(part), 0, &expired)?;
            let (rows, bytes) = rewritten.map_or((0, 0), |e| (e.rows, e.bytes));
            report.parts_rewritten += 1;
            report.rows += part.entry.rows.saturating_sub(rows);
            report.bytes += part.entry.bytes.saturating_sub(bytes);
        }
        self.drop_parts(&mut manifest, &whole)?;
        Ok(report)
    }
}
