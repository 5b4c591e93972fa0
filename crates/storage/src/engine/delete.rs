//! `DELETE`: removing rows of a table by time range and series (see
//! `catalog/tombstones.rs` for how a delete is recorded and applied).

use super::{Engine, Inner};
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};
use crate::series::TagPredicate;

/// Rows to delete: one table's, in a time range, of some series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRequest {
    /// The table.
    pub table: TableId,
    /// Inclusive start of the time range.
    pub start: Timestamp,
    /// Exclusive end of the time range.
    pub end: Timestamp,
    /// The series; every series of the table when `None`.
    pub predicate: Option<TagPredicate>,
}

impl Engine {
    /// Deletes the rows `request` names that were written before this call. They vanish
    /// from every read when it returns, durably (the tombstone is in the catalog, fsynced);
    /// their disk space comes back as the shards' maintenance rewrites the parts holding
    /// them (within a round; with `background: false`, at [`Engine::maintain`]). Rows
    /// written after the call are kept, whatever their time. An empty range deletes
    /// nothing.
    ///
    /// Every memtable is flushed first, so that every row the delete may remove is in a
    /// part: a delete costs a flush of each shard.
    pub fn delete(&self, request: &DeleteRequest) -> Result<(), StorageError> {
        if request.start >= request.end || self.inner.catalog.table(request.table).is_none() {
            return Ok(());
        }
        for shard in &self.inner.shards {
            shard.flush_all()?;
        }
        {
            // Under every manifest lock no flush or merge is writing a part: the orders
            // taken here split the parts into those written before (possibly holding
            // deleted rows) and after, and every merge from now on sees the tombstone.
            let manifests: Vec<_> = self
                .inner
                .shards
                .iter()
                .map(|s| s.manifest.lock())
                .collect();
            let before_order = manifests.iter().map(|m| m.next_order).collect();
            self.inner.catalog.add_tombstone(
                request.table,
                request.start,
                request.end,
                request.predicate.clone(),
                before_order,
            )?;
        }
        for shard in &self.inner.shards {
            shard.invalidate_latest();
            shard.request_work();
        }
        Ok(())
    }

    /// Tombstones in force (deletes whose rows some part may still hold).
    pub fn pending_tombstones(&self) -> usize {
        self.inner.catalog.tombstones().snapshot().len()
    }
}

/// A shard's part of delete upkeep: rewrites its parts holding deleted rows, then retires
/// the tombstones no shard's parts are subject to any more.
pub(super) fn purge_shard(inner: &Inner, shard_index: usize) -> Result<(), StorageError> {
    inner.shards[shard_index].purge_deleted()?;
    let tombstones = inner.catalog.tombstones().snapshot();
    if tombstones.is_empty() {
        return Ok(());
    }
    let done: Vec<u64> = tombstones
        .iter()
        .filter(|t| !inner.shards.iter().any(|s| s.subject_to(t)))
        .map(|t| t.id)
        .collect();
    inner.catalog.retire_tombstones(&done)
}
