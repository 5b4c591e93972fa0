//! A shard's partitions released to the lake (see `crate::cold`): which copies a read
//! meets, their rows merged under the parts, and releasing local parts once the lake
//! holds their rows.
//!
//! A copy's rows come first in precedence, below every part and memtable: a row written
//! into a released partition later (a late write) is in a part of higher order and wins,
//! as a later flush wins over an earlier one. Deletes apply to a copy's rows as to a part
//! of the copy's order that was written without the tombstones up to the copy's.

use roaring::RoaringBitmap;

use super::delete::{DeleteMark, deleted_ranges_at, without_ranges};
use super::read::{ShardReadRequest, Snapshot};
use super::{Shard, ShardState};
use crate::cold::{ColdCursor, ColdRead};
use crate::column::SeriesData;
use crate::error::StorageError;
use crate::manifest::{Manifest, TieredCopy};
use crate::model::{SeriesId, TableId, Timestamp};

/// `request.table`'s copies whose partition meets the request's range, by partition.
pub(super) fn copies_in(
    state: &ShardState,
    request: &ShardReadRequest<'_>,
    partition_ns: i64,
) -> Vec<TieredCopy> {
    state
        .tiered
        .iter()
        .filter(|c| {
            let (start, end) = partition_range(c.partition, partition_ns);
            c.table == request.table && start < request.end && end > request.start
        })
        .copied()
        .collect()
}

/// The time range of `partition`: inclusive start, exclusive end.
pub(super) fn partition_range(partition: i64, partition_ns: i64) -> (Timestamp, Timestamp) {
    (
        partition.saturating_mul(partition_ns),
        partition.saturating_add(1).saturating_mul(partition_ns),
    )
}

/// The open cursors of a read's copies, each with its next series read ahead.
pub(super) struct ColdRuns {
    shard: usize,
    partition_ns: i64,
    cursors: Vec<OpenCursor>,
}

struct OpenCursor {
    copy: TieredCopy,
    cursor: Box<dyn ColdCursor>,
    /// The series read ahead; `None` once the cursor is done.
    next: Option<(usize, SeriesData)>,
}

impl Shard {
    /// Opens the snapshot's copies for the request (nothing to open, at no cost, when the
    /// read meets none).
    pub(super) fn open_cold(
        &self,
        snapshot: &Snapshot,
        request: &ShardReadRequest<'_>,
        last_only: bool,
    ) -> Result<ColdRuns, StorageError> {
        let mut runs = ColdRuns {
            shard: self.config.id,
            partition_ns: self.config.partition_ns,
            cursors: Vec::new(),
        };
        if snapshot.cold.is_empty() || snapshot.cold_tags.is_empty() {
            return Ok(runs);
        }
        let Some(table) = self.config.catalog.table(request.table) else {
            return Ok(runs);
        };
        for copy in &snapshot.cold {
            let source = self.config.cold.get(&table, copy)?;
            let read = ColdRead {
                shard: self.config.id,
                table: &table,
                copy,
                start: request.start,
                end: request.end,
                fields: request.fields,
                series: &snapshot.cold_tags,
                last_only,
            };
            for mut cursor in source.open(&read)? {
                let next = cursor.next_series()?;
                runs.cursors.push(OpenCursor {
                    copy: *copy,
                    cursor,
                    next,
                });
            }
        }
        Ok(runs)
    }
}

impl ColdRuns {
    /// The copies' rows of the snapshot's series at `position` (id `series`), deletes
    /// applied, by partition: the lowest-precedence runs of the series. Positions must be
    /// asked in increasing order.
    pub(super) fn take(
        &mut self,
        position: usize,
        series: SeriesId,
        marks: &[DeleteMark],
    ) -> Result<Vec<SeriesData>, StorageError> {
        let mut runs: Vec<(i64, SeriesData)> = Vec::new();
        for open in &mut self.cursors {
            while let Some((at, _)) = &open.next {
                if *at > position {
                    break;
                }
                let Some((at, data)) = open.next.take() else {
                    break;
                };
                open.next = open.cursor.next_series()?;
                if at < position {
                    // A series this read no longer asks for (it cannot happen: positions
                    // are asked in order); skipped rather than misattributed.
                    continue;
                }
                let (min, max) = partition_range(open.copy.partition, self.partition_ns);
                let deleted = deleted_ranges_at(
                    marks,
                    self.shard,
                    (open.copy.order, open.copy.tombstone),
                    (min, max - 1),
                    series,
                );
                let data = without_ranges(data, &deleted);
                if data.rows() > 0 {
                    runs.push((open.copy.partition, data));
                }
            }
        }
        runs.sort_by_key(|(partition, _)| *partition);
        Ok(runs.into_iter().map(|(_, data)| data).collect())
    }
}

impl Shard {
    /// The end of the latest partition of a copy in the lake that the request meets
    /// (`None`: it meets none): no row of a copy is that late.
    pub(super) fn copies_end(
        &self,
        state: &ShardState,
        request: &ShardReadRequest<'_>,
    ) -> Option<Timestamp> {
        if state.tiered.is_empty() {
            return None;
        }
        copies_in(state, request, self.config.partition_ns)
            .iter()
            .map(|c| partition_range(c.partition, self.config.partition_ns).1)
            .max()
    }

    /// This shard's copies in the lake.
    pub(crate) fn tiered(&self) -> std::sync::Arc<Vec<TieredCopy>> {
        std::sync::Arc::clone(&self.state.lock().tiered)
    }

    /// Records that the lake committed `copy` (the table's rows of the partition up to
    /// its order, without the tombstones up to its id), then releases the local parts
    /// whose rows of the table it holds: a part of the partition with an order at most
    /// the copy's is deleted when every table in it is held by a copy, else rewritten
    /// without the held ones. Parts of a higher order (rows written after the copy was
    /// read) stay. Returns how many parts were deleted or rewritten. Idempotent.
    pub(crate) fn release_tiered(&self, copy: TieredCopy) -> Result<usize, StorageError> {
        let mut manifest = self.manifest.lock();
        if !manifest.tiered.contains(&copy) {
            let mut next = manifest.clone();
            next.tiered
                .retain(|c| !(c.partition == copy.partition && c.table == copy.table));
            next.tiered.push(copy);
            next.tiered.sort_by_key(|c| (c.partition, c.table));
            self.store_manifest(&mut manifest, next)?;
        }
        let held_by = |table: TableId, order: u64| {
            manifest
                .tiered
                .iter()
                .any(|c| c.partition == copy.partition && c.table == table && c.order >= order)
        };
        let mut whole = Vec::new();
        let mut partly = Vec::new();
        for part in self.parts().iter() {
            if part.entry.partition != copy.partition || part.entry.order > copy.order {
                continue;
            }
            let tables: RoaringBitmap = part.reader.table_bytes().iter().map(|(t, _)| *t).collect();
            if !tables.contains(copy.table) {
                continue;
            }
            let held: RoaringBitmap = tables
                .iter()
                .filter(|t| held_by(*t, part.entry.order))
                .collect();
            if held.len() == tables.len() {
                whole.push(part.entry.id);
            } else {
                partly.push((part.clone(), held));
            }
        }
        let released = whole.len() + partly.len();
        self.drop_parts(&mut manifest, &whole)?;
        for (part, held) in partly {
            self.rewrite_run(&mut manifest, std::slice::from_ref(&part), 0, &held)?;
        }
        Ok(released)
    }

    /// Forgets the copy of `table`'s rows of `partition`, if recorded.
    pub(crate) fn forget_copy(&self, partition: i64, table: TableId) -> Result<(), StorageError> {
        let mut manifest = self.manifest.lock();
        self.forget_tiered(&mut manifest, &mut |c| {
            !(c.partition == partition && c.table == table)
        })
    }

    /// Forgets the copies `keep` refuses (expired or dropped tables), in the manifest and
    /// for reads.
    pub(super) fn forget_tiered(
        &self,
        manifest: &mut Manifest,
        keep: &mut dyn FnMut(&TieredCopy) -> bool,
    ) -> Result<(), StorageError> {
        if manifest.tiered.iter().all(&mut *keep) {
            return Ok(());
        }
        let mut next = manifest.clone();
        next.tiered.retain(|c| keep(c));
        self.store_manifest(manifest, next)
    }

    /// Stores `next` as the manifest and publishes its copies to reads.
    pub(super) fn store_manifest(
        &self,
        manifest: &mut Manifest,
        next: Manifest,
    ) -> Result<(), StorageError> {
        next.store(&self.config.home().join(crate::layout::MANIFEST_FILE))?;
        let mut state = self.state.lock();
        state.tiered = std::sync::Arc::new(next.tiered.clone());
        // The latest-row cache knows only local rows.
        state.latest.invalidate();
        drop(state);
        *manifest = next;
        Ok(())
    }
}
