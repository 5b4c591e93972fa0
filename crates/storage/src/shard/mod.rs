//! A shard: the series, WAL, memtable and parts of one slice of the series space.
//!
//! Shards never wait on each other. Inside a shard, a write's critical section is the
//! append: series ids looked up (allocation-free for known series), rows pushed onto the
//! memtable, the WAL record framed into the WAL's pending buffer. WAL I/O happens after the
//! lock is released (group commit). Flushes run on the shard's flush thread, merges and
//! the rest of the upkeep on its maintenance thread, neither with the shard lock held
//! during I/O or compression; a merge writes its part without the manifest lock too, so
//! that a flush (which writers under back-pressure wait for) never waits for a merge.
//!
//! Files: `flush.rs` (memtable → parts), `merge.rs` (size-tiered merges), `expire.rs`
//! (retention: expired rows off the disk),
//! `purge.rs` (rows of dropped tables out of parts), `delete.rs` (tombstones in reads,
//! merges and purges), `read.rs` (scans and latest rows),
//! `latest.rs` (the latest-row cache), `latest_view.rs` (reading it: visiting each series'
//! latest row borrowed, or collecting owned rows), `retire.rs` (series left with no row
//! leave the index), this file (open, replay, write).

mod changes;
mod cold;
mod delete;
mod expire;
mod flush;
mod latest;
mod latest_view;
mod merge;
mod mirror;
mod part_entries;
mod purge;
mod quarantine;
mod read;
mod recovery;
mod retire;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::catalog::{Catalog, DroppedTables, Tombstones};
use crate::error::StorageError;
use crate::ingest::{BatchRow, LineError, ShardBatch};
use crate::layout;
use crate::manifest::{Manifest, PartEntry};
use crate::memtable::Memtable;
use crate::model::{FieldId, SeriesId, TableId, Timestamp, Value};
use crate::part::{IndexLeases, PartReader};
use crate::series::{SeriesIndex, SeriesLimit};
use crate::wal::{Wal, WalOptions, WalSync};
use crate::wal_record::{BatchEncoder, BatchVisitor, decode_batch};
use crate::write_slots::WriteSlot;
use crate::write_stages::{StageTimes, WriteStage};
use strata_lineproto::parse_series_key;

pub use latest_view::{LatestView, TagStr};
pub use quarantine::QuarantinedPart;
pub(crate) use read::ShardReadRequest;
pub use read::{SeriesRows, SeriesSummary};

/// What a shard needs to know from the engine's options.
#[derive(Debug, Clone)]
pub(crate) struct ShardConfig {
    pub id: usize,
    pub data_dirs: Arc<Vec<PathBuf>>,
    pub wal_sync: WalSync,
    pub memtable_bytes_max: usize,
    pub frozen_memtables_max: usize,
    pub partition_ns: i64,
    pub merge_min_parts: usize,
    /// Whether a flush thread flushes frozen memtables (writers may then wait for it).
    pub background: bool,
    /// The engine's catalog: parts name their tables and fields from it.
    pub catalog: Arc<Catalog>,
    /// Tables whose rows flushes, merges and purges leave out.
    pub dropped: Arc<DroppedTables>,
    /// Deletes in force: reads, merges and purges leave their rows out.
    pub tombstones: Arc<Tombstones>,
    /// The per-database series limit, if set: retired series are given back to it.
    pub series_limit: Option<Arc<SeriesLimit>>,
    /// Step over damage in the middle of the WAL at open (see `WalOptions::skip_damaged`).
    pub wal_skip_damaged: bool,
    /// Where rows of partitions released to the lake are read from (`cold.rs`).
    pub cold: Arc<crate::cold::ColdSlot>,
    /// Most bytes of parts' index entries one read holds (`part_entries.rs`).
    pub read_index_bytes_max: usize,
}

impl ShardConfig {
    /// This shard's directory on its home data directory.
    pub fn home(&self) -> PathBuf {
        let dirs = self.data_dirs.len();
        layout::shard_dir(
            &self.data_dirs[layout::home_dir_index(self.id, dirs)],
            self.id,
        )
    }

    /// Where part `id` of `partition` lives: on the data directory the partition is spread to.
    pub fn part_path(&self, partition: i64, id: u64) -> PathBuf {
        let dirs = self.data_dirs.len();
        let dir = &self.data_dirs[layout::partition_dir_index(self.id, partition, dirs)];
        layout::part_path(dir, self.id, partition, id)
    }

    /// Partition of a time.
    pub fn partition_of(&self, time: Timestamp) -> i64 {
        time.div_euclid(self.partition_ns)
    }
}

/// What [`Shard::write`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Another writer held the shard (only when not asked to wait): nothing was done.
    Busy,
    /// No row was stored (none for this shard, or all refused).
    Nothing,
    /// The rows are stored and their WAL record, this sequence number, is pending: it must
    /// be committed ([`Shard::commit`]) before the write is acknowledged.
    Enqueued(u64),
}

/// A memtable that no longer takes writes and waits for its flush.
#[derive(Debug)]
pub(crate) struct Frozen {
    pub memtable: Memtable,
    /// WAL sequence number of the last record whose rows are in `memtable`.
    pub last_seq: u64,
}

/// A part readers can use.
#[derive(Debug, Clone)]
pub(crate) struct LivePart {
    pub entry: PartEntry,
    pub reader: Arc<PartReader>,
}

/// Keeps the indexes of `parts` in memory while a merge goes over them series by series:
/// past the budget of index memory, each would otherwise be read again for every series
/// (reads lease them through `part_entries.rs`, which bounds what they hold).
pub(super) fn lease_indexes<'p>(
    parts: impl IntoIterator<Item = &'p LivePart>,
) -> Result<IndexLeases<'p>, StorageError> {
    let mut leases = IndexLeases::default();
    for part in parts {
        leases.push(part.reader.lease_index()?);
    }
    Ok(leases)
}

/// Mutable state behind the shard lock.
pub(crate) struct ShardState {
    pub index: SeriesIndex,
    pub active: Memtable,
    /// When the first row of `active` arrived (clock ns), for age-based flushes.
    pub active_since_ns: Option<i64>,
    /// WAL sequence of the last record applied to `active`.
    pub last_seq: u64,
    /// Oldest first.
    pub frozen: Vec<Arc<Frozen>>,
    /// Live parts, replaced as a whole when flushes, merges or retention change them.
    pub parts: Arc<Vec<LivePart>>,
    /// Each series' latest row, for `latest` (see `latest.rs`).
    pub latest: latest::LatestCache,
    /// The copies in the lake reads take rows from (the manifest's, published with it).
    pub tiered: Arc<Vec<crate::manifest::TieredCopy>>,
}

/// Counters for metrics.
#[derive(Debug, Default)]
pub(crate) struct ShardStats {
    pub rows_written: AtomicU64,
    pub points_written: AtomicU64,
    pub flushes: AtomicU64,
    pub merges: AtomicU64,
    pub parts_dropped: AtomicU64,
    pub backpressure_waits: AtomicU64,
    pub series_retired: AtomicU64,
    /// Writes that found the shard's lock held and went to another shard first.
    pub busy: AtomicU64,
    /// This shard's share of the write path's time (see `write_stages.rs`).
    pub stages: StageTimes,
}

/// One shard.
pub(crate) struct Shard {
    pub config: ShardConfig,
    pub wal: Wal,
    pub state: Mutex<ShardState>,
    /// Signalled whenever a frozen memtable has been flushed (writers under back-pressure
    /// wait on it).
    pub flushed: Condvar,
    /// The maintenance thread's wake-up.
    pub work_requested: Mutex<bool>,
    pub work: Condvar,
    /// The flush thread's wake-up.
    pub flush_requested: Mutex<bool>,
    pub flush_work: Condvar,
    /// Held by whoever changes the part set (flush, retention, purges, a merge's choice of
    /// parts and its publication): one at a time.
    pub manifest: Mutex<Manifest>,
    /// Held by a merge from its choice of parts to its publication: merges run one at a
    /// time, and write their part without the manifest lock (see `merge.rs`).
    pub merging: Mutex<()>,
    /// How many live parts the partition with the most holds, set with every new part set
    /// ([`Shard::publish_parts`]): writers read it, without a lock, to know whether to
    /// merge first (assisted merges, `engine/merge_assist.rs`).
    pub most_partition_parts: AtomicUsize,
    /// Called by a merge between writing its part and publishing it, with no lock held:
    /// tests change the part set there.
    #[cfg(test)]
    pub merge_written_hook: Mutex<Option<MergeHook>>,
    pub stats: ShardStats,
    /// The [`DroppedTables::generation`] whose tables no live part holds rows of any more
    /// (`u64::MAX` until the first purge after open checks every part).
    pub purged_generation: AtomicU64,
    /// The [`Tombstones::generation`] whose deletes no live part holds rows of any more
    /// (`u64::MAX` until the first purge after open).
    pub deleted_generation: AtomicU64,
    /// Which hours of which tables each recent flush wrote (for downsamples).
    pub flush_log: Mutex<changes::FlushLog>,
    /// Set when parts lost rows (and at open): series may be left with none (`retire.rs`).
    pub series_sweep_due: AtomicBool,
    /// Why the last flush failed, until one succeeds: writers that would wait for a flush
    /// get this error instead (see [`Shard::flush_one`]).
    pub flush_failure: Mutex<Option<FlushFailure>>,
}

/// See [`Shard::merge_written_hook`].
#[cfg(test)]
pub(crate) type MergeHook = Box<dyn Fn(&Shard) + Send>;

/// A failed flush, kept to answer writers with while flushes fail.
#[derive(Debug, Clone)]
pub(crate) struct FlushFailure {
    kind: std::io::ErrorKind,
    message: String,
}

impl FlushFailure {
    pub(crate) fn of(error: &StorageError) -> Self {
        FlushFailure {
            kind: error.io_kind().unwrap_or(std::io::ErrorKind::Other),
            message: error.to_string(),
        }
    }

    /// What the flush said.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The error a writer gets: the flush's own, with its I/O kind kept (so that a full
    /// disk is still told apart).
    pub(crate) fn error(&self, shard_home: &std::path::Path) -> StorageError {
        StorageError::io(
            "cannot take more writes: the memtables are full and flushing them fails",
            shard_home,
            std::io::Error::new(self.kind, self.message.clone()),
        )
    }
}

/// What opening a shard found.
#[derive(Debug, Default, Clone)]
pub(crate) struct ShardOpenReport {
    pub replayed_records: u64,
    pub replayed_rows: u64,
    pub torn_wal_tail: Option<String>,
    pub orphan_parts_removed: usize,
    /// Damaged parts set aside (see `quarantine`).
    pub quarantined: Vec<QuarantinedPart>,
    /// WAL damage stepped over (`wal_skip_damaged`), one description each.
    pub wal_damage_skipped: Vec<String>,
}

impl Shard {
    /// Opens (or creates) the shard: manifest and parts, series index, then WAL replay.
    pub fn open(config: ShardConfig) -> Result<(Shard, ShardOpenReport), StorageError> {
        let home = config.home();
        crate::fsutil::create_dir_all_durable(&home)
            .map_err(|e| StorageError::io("cannot create shard directory", &home, e))?;
        let manifest_path = home.join(layout::MANIFEST_FILE);
        let mut manifest = Manifest::load(&manifest_path)?;
        let mut report = ShardOpenReport {
            orphan_parts_removed: flush::remove_orphan_parts(&config, &manifest)?,
            ..ShardOpenReport::default()
        };
        if !manifest_path.exists() {
            // A new shard's empty manifest, so that part files without one always mean a
            // lost manifest (refused above), never a first flush cut short.
            manifest.store(&manifest_path)?;
        }
        let series_log = home.join("series").join(crate::series::SERIES_LOG_FILE);
        if !manifest.parts.is_empty() && !series_log.exists() {
            return Err(StorageError::Invalid(format!(
                "shard {} has parts but no series log ({}): run `strata repair` on the \
                 stopped server's data directories to rebuild it from the parts",
                config.id,
                series_log.display()
            )));
        }
        let mut parts = Vec::with_capacity(manifest.parts.len());
        for entry in &manifest.parts {
            let path = layout::part_path(
                &config.data_dirs[entry.dir],
                config.id,
                entry.partition,
                entry.id,
            );
            match PartReader::open(&path) {
                Ok(reader) => parts.push(LivePart {
                    entry: entry.clone(),
                    reader: Arc::new(reader),
                }),
                Err(e) if quarantine::is_damage(&e) => {
                    let set_aside = quarantine::set_aside(&config, entry, &path, &e)?;
                    report.quarantined.push(set_aside);
                }
                Err(e) => return Err(e),
            }
        }
        if !report.quarantined.is_empty() {
            manifest.parts.retain(|entry| {
                !report
                    .quarantined
                    .iter()
                    .any(|q| q.id == entry.id && q.partition == entry.partition)
            });
            manifest.store(&manifest_path)?;
        }
        let mut index = SeriesIndex::open(home.join("series"))?;
        let mut active = Memtable::new();
        let mut replay = Replayer {
            index: &mut index,
            memtable: &mut active,
            rows: 0,
        };
        let (wal, wal_report) = Wal::open(
            &home.join("wal"),
            WalOptions {
                sync: config.wal_sync,
                skip_damaged: config.wal_skip_damaged,
            },
            |_segment, payload| decode_batch(payload, &mut replay),
        )?;
        report.replayed_records = wal_report.records;
        report.replayed_rows = replay.rows;
        report.torn_wal_tail = wal_report.torn_tail.as_ref().map(|t| format!("{t:?}"));
        report.wal_damage_skipped = wal_report.skipped.iter().map(|s| s.to_string()).collect();
        // Replayed records have sequence numbers 1..=records; rows in `active` are covered by
        // them, so the flush of `active` may drop the replayed segments.
        let replayed_seq = wal_report.records;
        let most_partition_parts = AtomicUsize::new(most_parts_in_a_partition(&parts));
        let shard = Shard {
            config,
            wal,
            state: Mutex::new(ShardState {
                index,
                active,
                active_since_ns: None,
                last_seq: replayed_seq,
                frozen: Vec::new(),
                parts: Arc::new(parts),
                latest: latest::LatestCache::default(),
                tiered: Arc::new(manifest.tiered.clone()),
            }),
            flushed: Condvar::new(),
            work_requested: Mutex::new(false),
            work: Condvar::new(),
            flush_requested: Mutex::new(false),
            flush_work: Condvar::new(),
            merging: Mutex::new(()),
            most_partition_parts,
            #[cfg(test)]
            merge_written_hook: Mutex::new(None),
            flush_log: Mutex::new(changes::FlushLog::new(manifest.next_order)),
            manifest: Mutex::new(manifest),
            stats: ShardStats::default(),
            purged_generation: AtomicU64::new(u64::MAX),
            deleted_generation: AtomicU64::new(u64::MAX),
            // A crash may have come between a purge and the retirement it allowed.
            series_sweep_due: AtomicBool::new(true),
            flush_failure: Mutex::new(None),
        };
        Ok((shard, report))
    }

    /// Applies one write's rows for this shard: they are in the memtable and their WAL record
    /// in the WAL's pending buffer when it returns [`Applied::Enqueued`] with the record's
    /// sequence number, which [`Shard::commit`] then waits for (the write is acknowledged only
    /// after). Rows the series index refuses (limits) are reported in `errors` by line and
    /// skipped.
    ///
    /// With `wait == false` it returns [`Applied::Busy`] at once, doing nothing, if another
    /// writer holds the shard: the caller can serve another shard first and come back. A
    /// write that must wait for a flush gives its `slot` back first. `admit` is
    /// asked before each new series is created (the series limit); its `Err(reason)`
    /// refuses the row like any other index error.
    ///
    /// Under the lock, series ids are found for every row first, then every row is
    /// appended: two tight loops, each timed as its stage (`write_stages.rs`).
    pub fn write(
        &self,
        batch: &ShardBatch<'_>,
        now_ns: i64,
        errors: &mut Vec<LineError>,
        wait: bool,
        admit: &mut dyn FnMut(TableId) -> Result<(), String>,
        slot: &mut WriteSlot<'_>,
    ) -> Result<Applied, StorageError> {
        if batch.is_empty() {
            return Ok(Applied::Nothing);
        }
        let stages = &self.stats.stages;
        let mut encoder = BatchEncoder::with_room_for(batch.rows.len(), batch.fields.len());
        let mut ids: Vec<Option<SeriesId>> = Vec::with_capacity(batch.rows.len());
        let mut points = 0u64;
        let mut rows = 0u64;
        // Records are pending behind a failed WAL write (a full disk): try them again, and
        // take no new rows until they are written.
        if self.wal.stalled().is_some() {
            self.wal.write_pending()?;
        }
        let asked = Instant::now();
        let (seq, freeze, appended) = {
            let mut state = if wait {
                self.state.lock()
            } else {
                match self.state.try_lock() {
                    Some(state) => state,
                    None => {
                        self.stats.busy.fetch_add(1, Ordering::Relaxed);
                        return Ok(Applied::Busy);
                    }
                }
            };
            let mut lap = stages.lap(WriteStage::LockWait, asked);
            if self.config.background && state.frozen.len() >= self.config.frozen_memtables_max {
                slot.give_back();
                while state.frozen.len() >= self.config.frozen_memtables_max {
                    if let Some(failure) = self.flush_failure.lock().as_ref() {
                        return Err(failure.error(&self.config.home()));
                    }
                    self.stats
                        .backpressure_waits
                        .fetch_add(1, Ordering::Relaxed);
                    self.request_flush();
                    self.flushed.wait(&mut state);
                }
                lap = stages.lap(WriteStage::Backpressure, lap);
            }
            for row in &batch.rows {
                let id = match state.index.lookup_raw_hash(row.raw_hash) {
                    Some(id) => Some(id),
                    None => self.create_series(&mut state, batch, row, &mut encoder, admit, errors),
                };
                ids.push(id);
            }
            lap = stages.lap(WriteStage::Series, lap);
            for (row, id) in batch.rows.iter().zip(&ids) {
                let Some(id) = *id else { continue };
                let fields = batch.fields_of(row);
                encoder.row(id, row.time, fields);
                state
                    .active
                    .append(id, row.table, row.time, fields.iter().cloned());
                state.latest.record(id, row.time, fields);
                rows += 1;
                points += fields.len() as u64;
            }
            lap = stages.lap(WriteStage::Memtable, lap);
            if encoder.rows() == 0 {
                return Ok(Applied::Nothing);
            }
            let seq = self.wal.enqueue(&encoder.finish())?;
            state.last_seq = seq;
            state.active_since_ns.get_or_insert(now_ns);
            let freeze = state.active.bytes() >= self.config.memtable_bytes_max;
            if freeze {
                self.freeze_locked(&mut state);
            }
            (seq, freeze, lap)
        };
        stages.lap(WriteStage::WalAppend, appended);
        self.stats.rows_written.fetch_add(rows, Ordering::Relaxed);
        self.stats
            .points_written
            .fetch_add(points, Ordering::Relaxed);
        if freeze {
            self.request_flush();
        }
        Ok(Applied::Enqueued(seq))
    }

    /// Waits until the WAL record `seq` of [`Shard::write`] is written (and fsynced for
    /// `WalSync::Always`), leading the group commit if no other writer does.
    pub fn commit(&self, seq: u64) -> Result<(), StorageError> {
        let started = Instant::now();
        self.wal.commit(seq)?;
        self.stats.stages.lap(WriteStage::WalCommit, started);
        Ok(())
    }

    /// The series of `row`, which the index did not find by its raw key: found by its tags
    /// or created (recorded in `encoder` when created). `None` when the index refuses it
    /// (the reason is in `errors`). `state` is this shard's, locked.
    fn create_series(
        &self,
        state: &mut ShardState,
        batch: &ShardBatch<'_>,
        row: &BatchRow<'_>,
        encoder: &mut BatchEncoder,
        admit: &mut dyn FnMut(TableId) -> Result<(), String>,
        errors: &mut Vec<LineError>,
    ) -> Option<SeriesId> {
        let parsed;
        let tags = if batch.tags_in_raw_keys {
            let key = std::str::from_utf8(row.raw_key).map_err(|e| e.to_string());
            match key.and_then(|key| parse_series_key(key).map_err(|e| e.to_string())) {
                Ok(line) => {
                    parsed = line;
                    &parsed.tags[..]
                }
                Err(e) => {
                    errors.push(LineError {
                        line: row.line,
                        column: None,
                        message: format!("cannot read the series key back: {e}"),
                    });
                    return None;
                }
            }
        } else {
            batch.tags_of(row)
        };
        match state
            .index
            .get_or_create_hashed(row.table, row.raw_hash, tags, admit)
        {
            Ok((id, created)) => {
                if created && let Some(tags) = state.index.tags_of(id) {
                    let tags: Vec<(String, String)> =
                        tags.map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    encoder.new_series(
                        id,
                        row.table,
                        tags.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                    );
                }
                Some(id)
            }
            Err(e) => {
                errors.push(LineError {
                    line: row.line,
                    column: None,
                    message: e.to_string(),
                });
                None
            }
        }
    }

    /// Moves the active memtable to the frozen list, and ends the WAL segment after its
    /// records (no I/O; see [`Wal::end_segment`]). `state` is this shard's, locked.
    pub fn freeze_locked(&self, state: &mut ShardState) {
        if state.active.is_empty() {
            return;
        }
        self.wal.end_segment();
        let memtable = std::mem::take(&mut state.active);
        state.frozen.push(Arc::new(Frozen {
            memtable,
            last_seq: state.last_seq,
        }));
        state.active_since_ns = None;
    }

    /// Wakes the maintenance thread and the flush thread.
    pub fn request_work(&self) {
        *self.work_requested.lock() = true;
        self.work.notify_one();
        self.request_flush();
    }

    /// Wakes the flush thread alone (a memtable froze, or a writer waits for a flush).
    pub fn request_flush(&self) {
        *self.flush_requested.lock() = true;
        self.flush_work.notify_one();
    }

    /// Live series of this shard (created and not retired).
    pub fn series_count(&self) -> usize {
        self.state.lock().index.live_series_count()
    }

    /// Bytes held by memtables (active and frozen).
    pub fn memtable_bytes(&self) -> usize {
        let state = self.state.lock();
        state.active.bytes()
            + state
                .frozen
                .iter()
                .map(|f| f.memtable.bytes())
                .sum::<usize>()
    }

    /// Makes `parts` the live parts (`state` is the shard lock's) and records how many the
    /// most crowded partition holds.
    pub(crate) fn publish_parts(&self, state: &mut ShardState, parts: Vec<LivePart>) {
        self.most_partition_parts
            .store(most_parts_in_a_partition(&parts), Ordering::Relaxed);
        state.parts = Arc::new(parts);
    }

    /// The live parts.
    pub fn parts(&self) -> Arc<Vec<LivePart>> {
        Arc::clone(&self.state.lock().parts)
    }

    /// The values tag `key` takes in `table`'s series of this shard, sorted (from the
    /// series index: no data is read).
    pub fn tag_values(&self, table: TableId, key: &str) -> Vec<String> {
        self.state.lock().index.tag_values(table, key)
    }

    /// The tag keys used by `table`'s series of this shard, sorted (from the series index).
    pub fn tag_keys(&self, table: TableId) -> Vec<String> {
        self.state.lock().index.tag_keys(table)
    }

    /// Each of `table`'s series in this shard with its tag set, sorted by key (from the
    /// series index: no data is read).
    pub fn series_of_table_with_tags(
        &self,
        table: TableId,
    ) -> Vec<(SeriesId, Vec<(String, String)>)> {
        let state = self.state.lock();
        let index = &state.index;
        index
            .series_of_table(table)
            .iter()
            .filter_map(|id| {
                let tags = index.tags_of(id)?;
                Some((
                    id,
                    tags.map(|(k, v)| (k.to_owned(), v.to_owned())).collect(),
                ))
            })
            .collect()
    }

    /// The tag set of each of `table`'s series in this shard, each sorted by key (from the
    /// series index: no data is read).
    pub fn series_tags(&self, table: TableId) -> Vec<Vec<(String, String)>> {
        let state = self.state.lock();
        let index = &state.index;
        index
            .series_of_table(table)
            .iter()
            .filter_map(|id| index.tags_of(id))
            .map(|tags| tags.map(|(k, v)| (k.to_owned(), v.to_owned())).collect())
            .collect()
    }
}

/// How many of `parts` the partition with the most holds (0 for none).
fn most_parts_in_a_partition(parts: &[LivePart]) -> usize {
    merge::by_partition(parts)
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
}

/// Applies replayed WAL batches to the series index and memtable.
struct Replayer<'a> {
    index: &'a mut SeriesIndex,
    memtable: &'a mut Memtable,
    rows: u64,
}

impl BatchVisitor for Replayer<'_> {
    fn series(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: &[(&str, &str)],
    ) -> Result<(), String> {
        self.index
            .insert_replayed(id, table, tags)
            .map_err(|e| e.to_string())
    }

    fn row(
        &mut self,
        series: SeriesId,
        time: Timestamp,
        fields: Vec<(FieldId, Value)>,
    ) -> Result<(), String> {
        let Some(table) = self.index.table_of(series) else {
            return Err(format!("row of unknown series {series}"));
        };
        if self.index.is_retired(series) {
            // Flushed, then removed from the parts before the series was retired: the
            // segment holding it outlived that (see `docs/format.md`, series log).
            return Ok(());
        }
        self.memtable.append(series, table, time, fields);
        self.rows += 1;
        Ok(())
    }
}
