//! Size-tiered merges of a partition's parts, and the rewrites and deletions of parts that
//! retention (`expire.rs`) and purges ask for.
//!
//! A merge takes a run of parts that are adjacent in precedence order within one partition
//! and of similar size, and writes one part in their place. Taking only adjacent runs keeps
//! "last write wins" exact: the merged part takes the run's highest order, and every other
//! part of the partition is older or newer than the whole run. Crash safety: the new part
//! is written and fsynced, then the manifest is swapped atomically, then the old files are
//! deleted; a crash in between leaves orphans that start-up removes. Rows of dropped tables
//! are left out of the merged part.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use roaring::RoaringBitmap;

use super::delete::{DeleteMark, deleted_ranges, without_ranges};
use super::flush::entry_from_summary;
use super::recovery::TAGS_BATCH;
use super::{LivePart, Shard, lease_indexes};
use crate::column::SeriesData;
use crate::error::StorageError;
use crate::fsutil::RemoveUnlessKept;
use crate::layout;
use crate::manifest::{Manifest, PartEntry};
use crate::part::{PartReader, PartWriter, Provenance};

/// What [`Shard::write_replacement`] wrote in the place of a run, not yet published.
struct Replacement {
    new_part: Option<LivePart>,
    /// Rows of dropped tables were left out: the latest-row cache must forget them.
    removes_rows: bool,
    /// Some series of the run have no row in `new_part`.
    loses_series: bool,
    unpublished: RemoveUnlessKept,
}

/// Most parts merged at once: bounds a merge's open files and memory per series.
const MERGE_PARTS_MAX: usize = 16;
/// A partition with this many times `merge_min_parts` parts merges its cheapest adjacent
/// window whatever the sizes (see [`pick_run`]).
const CROWDED_FACTOR: usize = 2;
/// Parts within this factor of each other's row count count as "similar size".
const SIZE_RATIO_MAX: u64 = 4;

impl Shard {
    /// Runs one size-tiered merge if some partition has enough similar parts; returns
    /// whether it did.
    pub fn merge_one(&self) -> Result<bool, StorageError> {
        let started = std::time::Instant::now();
        let merged = self.merge_with(self.config.merge_min_parts.max(2), Some(SIZE_RATIO_MAX))?;
        if merged {
            self.stats
                .stages
                .lap(crate::write_stages::WriteStage::Merge, started);
        }
        Ok(merged)
    }

    /// Purges the rows of dropped tables, then merges every partition down to one part (up
    /// to [`MERGE_PARTS_MAX`] parts a step); returns how many merges ran. For explicit
    /// compaction and cold partitions.
    pub fn compact(&self) -> Result<usize, StorageError> {
        self.purge_dropped()?;
        let mut merges = 0;
        while self.merge_with(2, None)? {
            merges += 1;
        }
        Ok(merges)
    }

    /// One merge of a run [`pick_run`] finds. The run is chosen, and the new part's id
    /// taken, under the manifest lock; the part is written without it, so that flushes
    /// (on the shard's flush thread) go on meanwhile; it is published under the lock again
    /// if every part of the run is still live. Flushes only add parts of a higher order,
    /// which leaves the run adjacent; a purge, retention, a delete's purge, a release to
    /// the lake or a quarantine may have replaced a part of it, and then the new part is
    /// thrown away (the next round chooses again). Returns whether a merge ran or was
    /// thrown away (work may be left).
    fn merge_with(
        &self,
        min_parts: usize,
        size_ratio_max: Option<u64>,
    ) -> Result<bool, StorageError> {
        let merging = self.merging.lock();
        self.merge_picked(merging, |parts| pick_run(parts, min_parts, size_ratio_max))
    }

    /// An assisted merge (`engine/merge_assist.rs`): one merge of a partition holding more
    /// than `above` parts, its longest run of similar parts or else its cheapest
    /// `merge_min_parts` adjacent ones. With `wait == false` it returns `Ok(None)` at once if
    /// another merge runs on this shard; otherwise whether a merge ran (or was thrown away,
    /// see [`Shard::merge_with`]): `false` when no partition holds that many parts any more.
    pub fn merge_crowded(&self, above: usize, wait: bool) -> Result<Option<bool>, StorageError> {
        let merging = if wait {
            self.merging.lock()
        } else {
            match self.merging.try_lock() {
                Some(merging) => merging,
                None => return Ok(None),
            }
        };
        let min_parts = self.config.merge_min_parts.max(2);
        self.merge_picked(merging, |parts| crowded_run(parts, above, min_parts))
            .map(Some)
    }

    /// [`Shard::merge_with`]'s work once `_merging` is held, with the run `pick` chooses.
    fn merge_picked(
        &self,
        _merging: parking_lot::MutexGuard<'_, ()>,
        pick: impl FnOnce(&[LivePart]) -> Option<Vec<LivePart>>,
    ) -> Result<bool, StorageError> {
        let (run, id) = {
            let mut manifest = self.manifest.lock();
            let Some(run) = pick(&self.parts()) else {
                return Ok(false);
            };
            (run, manifest.take_part_id())
        };
        let replacement = self.write_replacement(&run, id, 1, &RoaringBitmap::new())?;
        #[cfg(test)]
        if let Some(hook) = self.merge_written_hook.lock().as_ref() {
            hook(self);
        }
        let mut manifest = self.manifest.lock();
        let live = run
            .iter()
            .all(|part| manifest.parts.iter().any(|entry| entry.id == part.entry.id));
        if !live {
            // `replacement` removes its file when dropped unpublished.
            return Ok(true);
        }
        self.publish_replacement(&mut manifest, &run, replacement)?;
        self.stats.merges.fetch_add(1, Ordering::Relaxed);
        Ok(true)
    }

    /// Replaces `run` (parts of one partition, adjacent in precedence order) with one part
    /// holding their rows merged, less the rows of dropped tables and of the tables in
    /// `leave_out`, at the run's highest order and its highest level plus `level_step`;
    /// with no part at all when no row is left. Returns the new part's entry, if any. The
    /// caller holds the manifest lock (`manifest` is its content).
    pub(super) fn rewrite_run(
        &self,
        manifest: &mut Manifest,
        run: &[LivePart],
        level_step: u32,
        leave_out: &RoaringBitmap,
    ) -> Result<Option<PartEntry>, StorageError> {
        let id = manifest.take_part_id();
        let replacement = self.write_replacement(run, id, level_step, leave_out)?;
        self.publish_replacement(manifest, run, replacement)
    }

    /// Writes what replaces `run` as part `id` (see [`Shard::rewrite_run`]); changes
    /// nothing readers see. The file is removed unless the replacement is published.
    fn write_replacement(
        &self,
        run: &[LivePart],
        id: u64,
        level_step: u32,
        leave_out: &RoaringBitmap,
    ) -> Result<Replacement, StorageError> {
        let mut replacement = Replacement {
            new_part: None,
            removes_rows: false,
            loses_series: false,
            unpublished: RemoveUnlessKept::default(),
        };
        let Some(first) = run.first() else {
            return Ok(replacement);
        };
        let partition = first.entry.partition;
        let dropped = self.config.dropped.snapshot();
        let dropped = if leave_out.is_empty() {
            dropped
        } else {
            Arc::new(dropped.as_ref() | leave_out)
        };
        let all_series: BTreeSet<(u32, u32)> = run
            .iter()
            .flat_map(|p| p.reader.series_ids().collect::<Vec<_>>())
            .collect();
        let series_in_run = all_series.len();
        // Rows of dropped tables leave the parts: the latest-row cache must forget them.
        replacement.removes_rows = all_series.iter().any(|(_, table)| dropped.contains(*table));
        let series: BTreeSet<(u32, u32)> = all_series
            .into_iter()
            .filter(|(_, table)| !dropped.contains(*table))
            .collect();
        if !series.is_empty() {
            let order = run.iter().map(|p| p.entry.order).max().unwrap_or(0);
            let level = run.iter().map(|p| p.entry.level).max().unwrap_or(0) + level_step;
            replacement
                .unpublished
                .add(self.config.part_path(partition, id));
            replacement.new_part = self.write_merged(run, &series, partition, id, order, level)?;
        }
        let kept_series = replacement
            .new_part
            .as_ref()
            .map_or(0, |p| p.reader.series_ids().count());
        replacement.loses_series = kept_series < series_in_run;
        Ok(replacement)
    }

    /// Puts `replacement` in the place of `run`: in the manifest (stored), then for
    /// readers; then removes the run's files. The caller holds the manifest lock
    /// (`manifest` is its content) and has checked that every part of `run` is live.
    fn publish_replacement(
        &self,
        manifest: &mut Manifest,
        run: &[LivePart],
        mut replacement: Replacement,
    ) -> Result<Option<PartEntry>, StorageError> {
        if replacement.loses_series {
            self.series_may_be_empty();
        }
        let replaced: Vec<u64> = run.iter().map(|p| p.entry.id).collect();
        let new_part = replacement.new_part.take();
        let emptied = new_part.is_none();
        let mut next = manifest.clone();
        next.parts.retain(|p| !replaced.contains(&p.id));
        if let Some(part) = &new_part {
            next.parts.push(part.entry.clone());
        }
        next.store(&self.config.home().join(layout::MANIFEST_FILE))?;
        replacement.unpublished.keep();
        *manifest = next;
        let new_entry = new_part.as_ref().map(|p| p.entry.clone());
        {
            let mut state = self.state.lock();
            let mut parts: Vec<LivePart> = state
                .parts
                .iter()
                .filter(|p| !replaced.contains(&p.entry.id))
                .cloned()
                .collect();
            parts.extend(new_part);
            self.publish_parts(&mut state, parts);
            if replacement.removes_rows {
                state.latest.invalidate();
            }
        }
        for part in run {
            let data_dir = &self.config.data_dirs[part.entry.dir];
            remove_part_file(data_dir, self.config.id, &part.entry, Some(&part.reader))?;
            if emptied {
                // A purge removed the partition's last rows; a failure (another part is
                // there) only leaves the directory.
                let _ = std::fs::remove_dir(layout::partition_dir(
                    data_dir,
                    self.config.id,
                    part.entry.partition,
                ));
            }
        }
        Ok(new_entry)
    }

    /// Writes the rows of `series` from `run`, merged by precedence, less the rows that
    /// tombstones delete, as part `id`; `None` (and no file) when no row is left.
    fn write_merged(
        &self,
        run: &[LivePart],
        series: &BTreeSet<(u32, u32)>,
        partition: i64,
        id: u64,
        order: u64,
        level: u32,
    ) -> Result<Option<LivePart>, StorageError> {
        // Tombstones up to `applied` are left out here; reads and purges apply later ones
        // (a delete recorded while a merge writes without the manifest lock) to the new
        // part, whose order is its run's, older than the delete.
        let applied = self.config.tombstones.highest_id();
        let marks = self.marks(&self.state.lock());
        let mut writer = PartWriter::create(&self.config.part_path(partition, id))?;
        writer.set_provenance(Provenance {
            order,
            level,
            tombstones_applied: applied,
            replaces: run.iter().map(|p| p.entry.id).collect(),
        });
        writer.set_tables(
            self.table_names(
                series
                    .iter()
                    .map(|(_, table)| *table)
                    .collect::<BTreeSet<_>>(),
            ),
        );
        let mut written = 0usize;
        let series: Vec<(u32, u32)> = series.iter().copied().collect();
        // The run is read series by series: its indexes stay in memory meanwhile.
        let _indexes = lease_indexes(run)?;
        for batch in series.chunks(TAGS_BATCH) {
            let tags = self.batch_tags(batch.iter().map(|(series, _)| *series));
            for (at, &(series_id, table)) in batch.iter().enumerate() {
                let Some(merged) = self.merged_rows(run, &marks, series_id)? else {
                    continue;
                };
                writer.write_series(series_id, table, &merged)?;
                writer.add_series_key(series_id, table, tags.tags(at));
                written += 1;
            }
        }
        let summary = writer.finish()?;
        if written == 0 {
            // Every row was deleted: no part replaces the run.
            std::fs::remove_file(&summary.path)
                .map_err(|e| StorageError::io("cannot remove empty part", &summary.path, e))?;
            return Ok(None);
        }
        if let Some(parent) = summary.path.parent() {
            crate::fsutil::sync_dir(parent)
                .map_err(|e| StorageError::io("cannot sync directory", parent, e))?;
        }
        let mut entry = entry_from_summary(&self.config, id, order, partition, &summary, level);
        entry.tombstones_applied = applied;
        let reader = Arc::new(PartReader::open(&summary.path)?);
        Ok(Some(LivePart { entry, reader }))
    }

    /// The rows of `series` in `run`, merged by precedence, less those tombstones delete;
    /// `None` when none is left.
    fn merged_rows(
        &self,
        run: &[LivePart],
        marks: &[DeleteMark],
        series: u32,
    ) -> Result<Option<SeriesData>, StorageError> {
        let mut runs: Vec<SeriesData> = Vec::with_capacity(run.len());
        for part in run {
            if let Some(data) = part.reader.read_series(series, i64::MIN, i64::MAX, None)? {
                let deleted = deleted_ranges(marks, self.config.id, &part.entry, series);
                let data = without_ranges(data, &deleted);
                if data.rows() > 0 {
                    runs.push(data);
                }
            }
        }
        Ok(match runs.len() {
            0 => None,
            1 => runs.pop(),
            _ => Some(SeriesData::merge(&runs.iter().collect::<Vec<_>>())),
        })
    }

    /// Deletes the parts `ids` whole (every row in them has expired). The caller holds the
    /// manifest lock (`manifest` is its content).
    pub(super) fn drop_parts(
        &self,
        manifest: &mut Manifest,
        ids: &[u64],
    ) -> Result<(), StorageError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut next = manifest.clone();
        let dropped: Vec<PartEntry> = next
            .parts
            .iter()
            .filter(|p| ids.contains(&p.id))
            .cloned()
            .collect();
        next.parts.retain(|p| !ids.contains(&p.id));
        next.store(&self.config.home().join(layout::MANIFEST_FILE))?;
        *manifest = next;
        let gone: Vec<LivePart> = {
            let mut state = self.state.lock();
            let (parts, gone): (Vec<LivePart>, Vec<LivePart>) = state
                .parts
                .iter()
                .cloned()
                .partition(|p| !ids.contains(&p.entry.id));
            self.publish_parts(&mut state, parts);
            // Some series' latest rows may have been in the dropped parts.
            state.latest.invalidate();
            gone
        };
        self.series_may_be_empty();
        for entry in &dropped {
            let data_dir = &self.config.data_dirs[entry.dir];
            let reader = gone.iter().find(|p| p.entry.id == entry.id);
            remove_part_file(data_dir, self.config.id, entry, reader.map(|p| &*p.reader))?;
            // Fails unless the partition's last part is gone; then the directory goes too.
            let _ = std::fs::remove_dir(layout::partition_dir(
                data_dir,
                self.config.id,
                entry.partition,
            ));
        }
        self.stats
            .parts_dropped
            .fetch_add(dropped.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

/// Removes a part's file. Readers that still hold the part keep reading it: its file is
/// pinned open first, and an open file outlives its unlink. Where it cannot be opened
/// (no file descriptor left), the file is removed all the same (the part is already gone
/// from the manifest), and a reader still holding the part gets an error, not wrong rows.
fn remove_part_file(
    data_dir: &std::path::Path,
    shard: usize,
    entry: &PartEntry,
    reader: Option<&PartReader>,
) -> Result<(), StorageError> {
    let path = layout::part_path(data_dir, shard, entry.partition, entry.id);
    if let Some(Err(e)) = reader.map(PartReader::pin_open) {
        tracing::warn!("removing part {} unpinned: {e}", path.display());
    }
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io("cannot remove part", &path, e)),
    }
}

/// The first run (by partition, then order) of at least `min_parts` adjacent parts whose
/// row counts are within `size_ratio_max` of each other (any sizes when `None`), at most
/// [`MERGE_PARTS_MAX`] long. When no partition has such a run but one holds at least
/// [`CROWDED_FACTOR`] times `min_parts` parts, its `min_parts` adjacent parts with the
/// fewest rows: flushes of uneven size (a delete flushes whatever the memtable holds) leave
/// small parts between big ones that no similar-size run would ever take, and the parts
/// of a partition must stay few for reads.
fn pick_run(
    parts: &[LivePart],
    min_parts: usize,
    size_ratio_max: Option<u64>,
) -> Option<Vec<LivePart>> {
    for in_partition in by_partition(parts) {
        if in_partition.len() < min_parts {
            continue;
        }
        for start in 0..in_partition.len() {
            let mut end = start;
            let (mut low, mut high) = (u64::MAX, 0u64);
            while end < in_partition.len() && end - start < MERGE_PARTS_MAX {
                let rows = in_partition[end].entry.rows.max(1);
                let (new_low, new_high) = (low.min(rows), high.max(rows));
                if size_ratio_max.is_some_and(|ratio| new_high > new_low.saturating_mul(ratio)) {
                    break;
                }
                (low, high) = (new_low, new_high);
                end += 1;
            }
            if end - start >= min_parts {
                return Some(
                    in_partition[start..end]
                        .iter()
                        .map(|p| (*p).clone())
                        .collect(),
                );
            }
        }
    }
    crowded_window(parts, min_parts)
}

/// The `min_parts` adjacent parts (in precedence order) with the fewest rows in total, in
/// the first partition holding at least [`CROWDED_FACTOR`] times `min_parts` parts.
fn crowded_window(parts: &[LivePart], min_parts: usize) -> Option<Vec<LivePart>> {
    let crowded = min_parts.saturating_mul(CROWDED_FACTOR);
    let in_partition = by_partition(parts)
        .into_iter()
        .find(|in_partition| in_partition.len() >= crowded)?;
    cheapest_window(&in_partition, min_parts)
}

/// The `min_parts` adjacent parts of one partition with the fewest rows in total.
fn cheapest_window(in_partition: &[&LivePart], min_parts: usize) -> Option<Vec<LivePart>> {
    let cheapest = in_partition
        .windows(min_parts)
        .min_by_key(|w| w.iter().map(|p| p.entry.rows).sum::<u64>())?;
    Some(cheapest.iter().map(|p| (*p).clone()).collect())
}

/// The run an assisted merge takes: in the first partition holding more than `above`
/// parts, the first run of at least `min_parts` similar parts (as [`pick_run`] finds it,
/// at most [`MERGE_PARTS_MAX`]: a run of equal flushes shrinks the partition the most),
/// else its cheapest `min_parts` adjacent parts.
fn crowded_run(parts: &[LivePart], above: usize, min_parts: usize) -> Option<Vec<LivePart>> {
    let in_partition = by_partition(parts)
        .into_iter()
        .find(|in_partition| in_partition.len() > above)?;
    let owned: Vec<LivePart> = in_partition.iter().map(|p| (*p).clone()).collect();
    pick_run(&owned, min_parts, Some(SIZE_RATIO_MAX))
        .or_else(|| cheapest_window(&in_partition, min_parts))
}

/// The parts of each partition in precedence order, partitions in time order.
pub(super) fn by_partition(parts: &[LivePart]) -> Vec<Vec<&LivePart>> {
    let mut sorted: Vec<&LivePart> = parts.iter().collect();
    sorted.sort_by_key(|p| (p.entry.partition, p.entry.order));
    sorted
        .chunk_by(|a, b| a.entry.partition == b.entry.partition)
        .map(<[&LivePart]>::to_vec)
        .collect()
}
