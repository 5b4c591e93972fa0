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
    /// part: a delete costs a flush of each shard. The rewrite of the parts holding deleted
    /// rows waits up to [`PURGE_DELAY_NS`] (engine clock) so that deletes made close
    /// together share one rewrite; merges meanwhile leave the rows out of what they write.
    ///
    /// Where downsamples read the table, the buckets the delete touches are computed again
    /// before this returns (see `engine/downsample.rs`).
    pub fn delete(&self, request: &DeleteRequest) -> Result<(), StorageError> {
        self.inner.catalog.check_writable()?;
        if request.start >= request.end || self.inner.catalog.table(request.table).is_none() {
            return Ok(());
        }
        let downsamples = self.inner.catalog.downsamples_of(request.table);
        if downsamples.is_empty() {
            self.inner.delete_rows(request)
        } else {
            self.delete_with_downsamples(request, &downsamples)
        }
    }

    /// Tombstones in force (deletes whose rows some part may still hold).
    pub fn pending_tombstones(&self) -> usize {
        self.inner.catalog.tombstones().snapshot().len()
    }
}

impl Inner {
    /// [`Engine::delete`] of the rows alone, whatever reads the table.
    pub(super) fn delete_rows(&self, request: &DeleteRequest) -> Result<(), StorageError> {
        if request.start >= request.end || self.catalog.table(request.table).is_none() {
            return Ok(());
        }
        for shard in &self.shards {
            shard.flush_all()?;
        }
        {
            // Under every manifest lock no flush is writing a part: the orders taken here
            // split the parts into those written before (possibly holding deleted rows)
            // and after. A merge may be writing one, without the tombstone; its part
            // takes its run's order, below these, so reads and purges still apply it.
            let manifests: Vec<_> = self.shards.iter().map(|s| s.manifest.lock()).collect();
            let before_order = manifests.iter().map(|m| m.next_order).collect();
            self.catalog.add_tombstone(
                request.table,
                request.start,
                request.end,
                request.predicate.clone(),
                before_order,
                self.options.clock.now_ns(),
            )?;
        }
        for shard in &self.shards {
            shard.invalidate_latest();
            shard.request_work();
        }
        Ok(())
    }
}

/// How long (engine clock) a tombstone waits before the shards rewrite the parts holding
/// its rows, unless [`PURGE_PENDING_MAX`] are waiting: a delete touches the parts of every
/// partition its range meets (all of a table's series share parts), so purging after each
/// of many deletes made close together would rewrite the same parts again and again.
pub const PURGE_DELAY_NS: i64 = 60_000_000_000;
/// Tombstones waiting at which the shards purge at once.
const PURGE_PENDING_MAX: usize = 64;

/// A shard's part of delete upkeep, when due: rewrites its parts holding deleted rows,
/// then retires the tombstones no shard's parts are subject to any more. `now` is the
/// engine clock; `force` purges whatever the tombstones' age (compaction).
pub(super) fn purge_shard(
    inner: &Inner,
    shard_index: usize,
    now: i64,
    force: bool,
) -> Result<(), StorageError> {
    let tombstones = inner.catalog.tombstones().snapshot();
    if tombstones.is_empty() {
        return Ok(());
    }
    let oldest = tombstones.iter().map(|t| t.created_ns).min().unwrap_or(0);
    let due = force
        || tombstones.len() >= PURGE_PENDING_MAX
        || now.saturating_sub(oldest) >= PURGE_DELAY_NS;
    if !due {
        return Ok(());
    }
    use std::sync::atomic::Ordering::SeqCst;
    let rewritten = inner.shards[shard_index].purge_deleted()?;
    // Retiring is checked by the shard that purged something, or by any once a round
    // skipped it for a backup.
    if rewritten.is_none() && !inner.retire_owed.load(SeqCst) {
        return Ok(());
    }
    let rewritten = rewritten.unwrap_or(0);
    // A backup copies the shards' manifests one by one and the catalog last: a tombstone
    // retired in between would leave the backup with parts it applies to and without it
    // (deleted rows back in the restore). Retiring waits for a round without a backup.
    if inner.backups_running.load(SeqCst) > 0 {
        inner.retire_owed.store(true, SeqCst);
        return Ok(());
    }
    inner.retire_owed.store(false, SeqCst);
    let done: Vec<u64> = tombstones
        .iter()
        .filter(|t| !inner.shards.iter().any(|s| s.subject_to(t)))
        .map(|t| t.id)
        .collect();
    if rewritten > 0 || !done.is_empty() {
        tracing::info!(
            "deletes: shard {shard_index} rewrote {rewritten} parts without deleted rows; {} of {} tombstones retired",
            done.len(),
            tombstones.len()
        );
    }
    inner.catalog.retire_tombstones(&done)
}
