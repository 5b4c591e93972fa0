//! Flushing frozen memtables into parts, and start-up clean-up of unreferenced part files.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::recovery::TAGS_BATCH;
use super::{FlushFailure, Frozen, LivePart, Shard, ShardConfig};
use crate::error::StorageError;
use crate::fsutil::RemoveUnlessKept;
use crate::layout;
use crate::manifest::{Manifest, PartEntry};
use crate::model::{TableId, Timestamp};
use crate::part::{PartReader, PartSummary, PartWriter, Provenance};

impl Shard {
    /// Freezes the active memtable if it is older than `max_age_ns` (clock `now_ns`).
    pub fn freeze_if_old(&self, now_ns: i64, max_age_ns: i64) -> bool {
        let mut state = self.state.lock();
        let old = state
            .active_since_ns
            .is_some_and(|since| now_ns.saturating_sub(since) >= max_age_ns);
        if old {
            self.freeze_locked(&mut state);
        }
        old
    }

    /// Freezes whatever the active memtable holds, then flushes every frozen memtable.
    pub fn flush_all(&self) -> Result<(), StorageError> {
        self.freeze_locked(&mut self.state.lock());
        while self.flush_one()? {}
        Ok(())
    }

    /// Flushes the oldest frozen memtable, if any, into one part per time partition it
    /// touches; returns whether it flushed. Order of durability: series log, parts (each
    /// fsynced), manifest (atomic swap); only then are the memtable dropped and the WAL
    /// segments it covered deleted.
    ///
    /// While flushes fail (a full disk), writers that would wait for one get the error
    /// instead (see [`Shard::flush_failure`]); the first success clears it.
    pub fn flush_one(&self) -> Result<bool, StorageError> {
        let started = std::time::Instant::now();
        let result = self.flush_oldest();
        if matches!(result, Ok(true)) {
            self.stats
                .stages
                .lap(crate::write_stages::WriteStage::Flush, started);
        }
        let failure = result.as_ref().err().map(FlushFailure::of);
        if failure.is_some() || self.flush_failure.lock().is_some() {
            // Under the shard lock, so that a writer checks the failure and starts waiting
            // in one step and cannot miss this wake-up.
            let _state = self.state.lock();
            *self.flush_failure.lock() = failure;
            self.flushed.notify_all();
        }
        result
    }

    fn flush_oldest(&self) -> Result<bool, StorageError> {
        let mut manifest = self.manifest.lock();
        let Some(frozen) = self.state.lock().frozen.first().cloned() else {
            return Ok(false);
        };
        // Its freeze ended the WAL segment after its records: once that end is written,
        // the segments it covered hold nothing later and are removed once it is in parts.
        self.wal.write_pending()?;
        // Series ids in the new parts must be in the series log before the manifest names
        // the parts.
        self.state.lock().index.persist()?;

        let mut unpublished = RemoveUnlessKept::default();
        let order = manifest.next_order;
        let (written, hours) =
            self.write_frozen(&frozen, order, &mut manifest, &mut unpublished)?;
        let mut next = manifest.clone();
        next.next_order = order + 1;
        let mut new_parts = Vec::with_capacity(written.len());
        for (partition, id, summary) in written {
            let entry = entry_from_summary(&self.config, id, order, partition, &summary, 0);
            let reader = PartReader::open(&summary.path)?;
            next.parts.push(entry.clone());
            new_parts.push(LivePart {
                entry,
                reader: Arc::new(reader),
            });
        }
        next.store(&self.config.home().join(layout::MANIFEST_FILE))?;
        unpublished.keep();
        *manifest = next;
        self.flush_log.lock().record(order, hours);
        {
            let mut state = self.state.lock();
            let mut parts: Vec<LivePart> = state.parts.as_ref().clone();
            parts.extend(new_parts);
            self.publish_parts(&mut state, parts);
            state.frozen.retain(|f| !Arc::ptr_eq(f, &frozen));
        }
        self.flushed.notify_all();
        self.stats.flushes.fetch_add(1, Ordering::Relaxed);
        self.wal.remove_segments_covered(frozen.last_seq)?;
        Ok(true)
    }

    /// Writes the frozen memtable's series, partition by partition, as parts of precedence
    /// `order`; returns (partition, part id, summary) for each part written, and the hours
    /// of each table the rows fall in (for the flush log). Part ids are taken from the
    /// manifest (the caller stores it).
    fn write_frozen(
        &self,
        frozen: &Frozen,
        order: u64,
        manifest: &mut Manifest,
        unpublished: &mut RemoveUnlessKept,
    ) -> Result<(Vec<WrittenPart>, super::changes::TableHours), StorageError> {
        let mut hours: BTreeMap<TableId, Vec<i64>> = BTreeMap::new();
        let mut parts = FlushParts {
            config: &self.config,
            order,
            manifest,
            unpublished,
            writers: BTreeMap::new(),
        };
        // Taken under the manifest lock, like a purge's: a drop published after this is
        // purged from the parts written here by the next purge.
        let dropped = self.config.dropped.snapshot();
        let mut kept = frozen.memtable.series();
        kept.retain(|(_, table)| !dropped.contains(*table));
        let mut written = Vec::new();
        // Partitions whose parts are written; a pass leaves the partitions past the first
        // `FLUSH_WRITERS_MAX` it meets to a later one.
        let mut finished = BTreeSet::new();
        for pass in 0.. {
            let mut left_for_later = false;
            for batch in kept.chunks(TAGS_BATCH) {
                let tags = self.batch_tags(batch.iter().map(|(series, _)| *series));
                for (at, &(series, table)) in batch.iter().enumerate() {
                    let Some(data) = frozen.memtable.series_data(series) else {
                        continue;
                    };
                    if pass == 0 {
                        super::changes::add_hours(hours.entry(table).or_default(), &data.times);
                    }
                    for (partition, range) in partition_runs(&data.times, &self.config) {
                        if finished.contains(&partition) {
                            continue;
                        }
                        if !parts.writers.contains_key(&partition)
                            && parts.writers.len() >= FLUSH_WRITERS_MAX
                        {
                            left_for_later = true;
                            continue;
                        }
                        let (writer, tables) = parts.writer(partition)?;
                        let rows = data.slice_rows(range.start, range.end);
                        writer.write_series(series, table, &rows)?;
                        writer.add_series_key(series, table, tags.tags(at));
                        tables.insert(table);
                    }
                }
            }
            for (partition, (id, mut writer, tables)) in std::mem::take(&mut parts.writers) {
                writer.set_tables(self.table_names(tables));
                let summary = writer.finish()?;
                // The part's directory entry must be durable before the manifest names it.
                if let Some(parent) = summary.path.parent() {
                    crate::fsutil::sync_dir(parent)
                        .map_err(|e| StorageError::io("cannot sync directory", parent, e))?;
                }
                finished.insert(partition);
                written.push((partition, id, summary));
            }
            if !left_for_later {
                break;
            }
        }
        Ok((written, hours.into_iter().collect()))
    }
}

/// Most parts a flush writes at once. A memtable of backfilled rows can span months of
/// partitions; writing them all at once would hold a file open for each. Past this, the
/// flush reads the memtable again for the next partitions: one pass in the usual case of
/// recent rows, a pass per this many partitions for a backfill.
const FLUSH_WRITERS_MAX: usize = 16;

/// The parts a flush is writing, one per partition its rows fall in.
struct FlushParts<'a> {
    config: &'a ShardConfig,
    order: u64,
    manifest: &'a mut Manifest,
    unpublished: &'a mut RemoveUnlessKept,
    /// By partition: the part id, its writer and the tables it holds.
    writers: BTreeMap<i64, (u64, PartWriter, BTreeSet<TableId>)>,
}

impl FlushParts<'_> {
    /// The writer of `partition`'s part (created, with an id from the manifest, when new)
    /// and its tables.
    fn writer(
        &mut self,
        partition: i64,
    ) -> Result<(&mut PartWriter, &mut BTreeSet<TableId>), StorageError> {
        let entry = match self.writers.entry(partition) {
            std::collections::btree_map::Entry::Occupied(entry) => entry.into_mut(),
            std::collections::btree_map::Entry::Vacant(entry) => {
                let id = self.manifest.take_part_id();
                let path = self.config.part_path(partition, id);
                if let Some(parent) = path.parent() {
                    crate::fsutil::create_dir_all_durable(parent).map_err(|e| {
                        StorageError::io("cannot create partition directory", parent, e)
                    })?;
                }
                let mut writer = PartWriter::create(&path)?;
                self.unpublished.add(path);
                writer.set_provenance(Provenance {
                    order: self.order,
                    ..Provenance::default()
                });
                entry.insert((id, writer, BTreeSet::new()))
            }
        };
        Ok((&mut entry.1, &mut entry.2))
    }
}

/// A part a flush wrote: its partition, file id and summary.
type WrittenPart = (i64, u64, PartSummary);

/// Runs of consecutive rows (sorted times) that fall in one partition.
pub(crate) fn partition_runs(
    times: &[Timestamp],
    config: &ShardConfig,
) -> Vec<(i64, std::ops::Range<usize>)> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < times.len() {
        let partition = config.partition_of(times[start]);
        let end_time = (partition + 1).saturating_mul(config.partition_ns);
        let end = start + times[start..].partition_point(|t| *t < end_time);
        runs.push((partition, start..end));
        start = end;
    }
    runs
}

/// A manifest entry for a part just written.
pub(crate) fn entry_from_summary(
    config: &ShardConfig,
    id: u64,
    order: u64,
    partition: i64,
    summary: &PartSummary,
    level: u32,
) -> PartEntry {
    PartEntry {
        id,
        order,
        partition,
        dir: layout::partition_dir_index(config.id, partition, config.data_dirs.len()),
        series: summary.series as u64,
        rows: summary.rows,
        points: summary.points,
        bytes: summary.file_bytes,
        min_time: summary.min_time,
        max_time: summary.max_time,
        level,
        // Flushes and merges write only rows no earlier tombstone deletes; a merge sets
        // this to the highest tombstone it applied.
        tombstones_applied: 0,
    }
}

/// Deletes part files (and temporary files) of this shard that the manifest does not name:
/// leftovers of a flush or merge cut short by a crash. Returns how many were removed.
pub(crate) fn remove_orphan_parts(
    config: &ShardConfig,
    manifest: &Manifest,
) -> Result<usize, StorageError> {
    let home = config.home();
    let partitions = layout::list_partitions(&config.data_dirs, config.id)
        .map_err(|e| StorageError::io("cannot list partitions", &home, e))?;
    if !home.join(layout::MANIFEST_FILE).exists() && partitions.iter().any(|p| !p.files.is_empty())
    {
        // Without its manifest every part would look like a leftover: refuse rather than
        // delete them all. `strata repair` rebuilds the manifest from the parts.
        return Err(StorageError::Invalid(format!(
            "shard {} has part files but no {} in {}: run `strata repair` on the stopped \
             server's data directories to rebuild it from the parts",
            config.id,
            layout::MANIFEST_FILE,
            home.display()
        )));
    }
    let mut removed = 0;
    for partition in partitions {
        let mut kept = 0;
        for (path, id) in &partition.files {
            let live = id.is_some_and(|id| {
                manifest
                    .parts
                    .iter()
                    .any(|p| p.id == id && p.partition == partition.partition)
            });
            if live {
                kept += 1;
                continue;
            }
            std::fs::remove_file(path)
                .map_err(|e| StorageError::io("cannot remove orphan part", path, e))?;
            removed += 1;
        }
        if kept == 0 {
            // Ignore failure: another file may have appeared; the directory is harmless.
            let _ = std::fs::remove_dir(&partition.path);
        }
    }
    Ok(removed)
}
