//! The engine: catalog plus shards, the write entry points, reads, and background upkeep.
//!
//! `open → write_lines → read / latest → flush → close`. Writers parse and group rows by
//! shard on their own thread ([`crate::ingest`]), then hand each shard its batch; shards
//! never wait on each other. Each shard has two threads of upkeep: one flushes frozen
//! memtables and memtables that grew old, the other runs merges, purges and retention. A
//! flush, which writers under back-pressure wait for, so never waits for a merge.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use serde::{Deserialize, Serialize};
use strata_lineproto::{ParseOptions, Precision};

use crate::arrow::to_record_batch;
use crate::catalog::{Catalog, CreateOutcome, SchemaCache, TableDefinition, TableSchema};
use crate::checked_json;
use crate::dir_lock::DirLocks;
use crate::error::StorageError;
use crate::ingest::{Grouped, LineError, ShardBatch, group_lines};
use crate::ingest_series::{SeriesWrite, group_series, structured_key};
use crate::layout;
use crate::model::{FieldId, TableId, Timestamp};
use crate::options::{EngineOptions, available_cores};
use crate::series::{SeriesLimit, TagPredicate};
use crate::write_slots::{WriteSlot, WriteSlots};
use crate::write_stages::{StageTimes, WriteStage};
use retention::RetentionState;

use crate::shard::{
    Applied, LatestView, QuarantinedPart, SeriesRows, SeriesSummary, Shard, ShardConfig,
    ShardOpenReport, ShardReadRequest,
};

/// Engine meta file kind/version.
const ENGINE_KIND: &str = "engine";
const ENGINE_VERSION: u32 = 1;

mod backup;
mod check;
mod delete;
mod disk;
mod downsample;
mod downsample_fold;
mod merge_assist;
mod mirror;
mod repair;
mod repair_catalog;
mod repair_series;
mod retention;
mod tier;

#[cfg(test)]
mod upkeep_tests;

pub use backup::{BACKUP_FILE, BackupReport, restore};
pub use check::{CheckReport, check};
pub use delete::{DeleteRequest, PURGE_DELAY_NS};
pub use downsample::{DownsampleInfo, DownsampleSpec};
pub use repair::{RepairReport, repair};
pub use tier::{ColdPartition, ColdTable};
/// How often a maintenance thread wakes when nothing asks it to: bounds the delay of WAL
/// interval syncs (the default interval is 1 s) and of age-based flushes.
const MAINTENANCE_TICK: Duration = Duration::from_millis(100);

#[derive(Debug, Serialize, Deserialize)]
struct EngineMeta {
    shards: usize,
}

/// Outcome of a write.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct WriteReport {
    /// Rows stored.
    pub rows: u64,
    /// Field values stored.
    pub points: u64,
    /// Rows refused because they are older than the database's retention (each is also in
    /// `errors`).
    pub expired: u64,
    /// Rejected lines, in line order.
    pub errors: Vec<LineError>,
}

/// What opening the engine found.
#[derive(Debug, Default, Clone)]
pub struct OpenReport {
    /// Shards in use.
    pub shards: usize,
    /// WAL records replayed over all shards.
    pub replayed_records: u64,
    /// Rows recovered from the WAL.
    pub replayed_rows: u64,
    /// Torn WAL tails that were cut, one description per shard that had one.
    pub torn_wal_tails: Vec<String>,
    /// Part files removed because no manifest named them (an interrupted flush or merge).
    pub orphan_parts_removed: usize,
    /// Set when the options asked for another shard count than the data directory has.
    pub shard_count_note: Option<String>,
    /// Damaged parts set aside at open: the engine answers from the others.
    pub quarantined: Vec<QuarantinedPart>,
    /// WAL damage stepped over at open (`EngineOptions::wal_skip_damaged`).
    pub wal_damage_skipped: Vec<String>,
}

/// A read of one table.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    /// Table to read.
    pub table: TableId,
    /// Series filter on tags; every series when `None`.
    pub predicate: Option<TagPredicate>,
    /// Inclusive start of the time range.
    pub start: Timestamp,
    /// Exclusive end of the time range.
    pub end: Timestamp,
    /// Fields to decode; all when `None`.
    pub fields: Option<Vec<FieldId>>,
}

impl ReadRequest {
    /// Every row of `table`.
    pub fn all(table: TableId) -> Self {
        Self {
            table,
            predicate: None,
            start: i64::MIN,
            end: i64::MAX,
            fields: None,
        }
    }

    /// The request as a shard reads it, starting no earlier than `visible_from` (the
    /// table's retention horizon).
    fn for_shard(&self, visible_from: Timestamp) -> ShardReadRequest<'_> {
        ShardReadRequest {
            table: self.table,
            predicate: self.predicate.as_ref(),
            start: self.start.max(visible_from),
            end: self.end,
            fields: self.fields.as_deref(),
            parts_only: false,
        }
    }
}

struct Inner {
    options: EngineOptions,
    /// Shared with the shards, which name their parts' tables from it.
    catalog: Arc<Catalog>,
    shards: Vec<Shard>,
    stop: AtomicBool,
    /// Backups under way: while any runs, no tombstone is retired (`engine/backup.rs`).
    backups_running: AtomicUsize,
    /// A purge round skipped retiring tombstones for a backup: the next round retires.
    retire_owed: AtomicBool,
    /// Rotates the shard each write starts with.
    next_start: AtomicUsize,
    /// The writer's share of the write path's time (parse, catalog; `write_stages.rs`).
    stages: StageTimes,
    /// How many writes run at once (`write_slots.rs`).
    write_slots: WriteSlots,
    /// Writes merging crowded partitions before they parse (`engine/merge_assist.rs`).
    merge_assist: merge_assist::MergeAssist,
    /// Retention's counters and the state of its upkeep (`engine/retention.rs`).
    retention: RetentionState,
    /// The downsample thread's state (`engine/downsample.rs`).
    downsample: downsample::DownsampleState,
    /// Damaged parts set aside since open (`shard/quarantine.rs`).
    quarantined: parking_lot::Mutex<Vec<QuarantinedPart>>,
    /// The per-database series limit, when set (`series/limit.rs`).
    series_limit: Option<Arc<SeriesLimit>>,
    /// Where rows released to the lake are read from (`cold.rs`), shared with the shards.
    cold: Arc<crate::cold::ColdSlot>,
}

/// The storage engine.
pub struct Engine {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
    /// Held while the engine is open; dropped (released) after the threads are stopped.
    _locks: DirLocks,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("data_dirs", &self.inner.options.data_dirs)
            .field("shards", &self.inner.shards.len())
            .finish()
    }
}

impl Inner {
    /// Whether the engine stops: background loops end, and long work (merges, downsample
    /// rounds) ends early, leaving the rest to the next start.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// A read (or a merge) of shard `shard` failed with `error`: if it names a live part
    /// that is damaged, that part is set aside (`shard/quarantine.rs`), logged and listed,
    /// and the error says so; later reads answer without it. Other errors pass unchanged.
    fn after_read_error(&self, shard: usize, error: StorageError) -> StorageError {
        let StorageError::Corrupt {
            path,
            offset,
            reason,
        } = &error
        else {
            return error;
        };
        match self.shards[shard].set_aside_live_part(path, &error) {
            Ok(Some(part)) => {
                tracing::error!("damaged part set aside, its rows are not queried: {part}");
                let rows = part.rows;
                self.quarantined.lock().push(part);
                StorageError::Corrupt {
                    path: path.clone(),
                    offset: *offset,
                    reason: format!(
                        "{reason}; the part was set aside (quarantine/): later queries answer \
                         without its {rows} rows"
                    ),
                }
            }
            Ok(None) => error,
            Err(e) => {
                tracing::error!("cannot set aside the damaged part {}: {e}", path.display());
                error
            }
        }
    }

    /// [`Engine::write_lines`], for the engine's own threads too (downsamples).
    fn write_lines(
        &self,
        database: &str,
        body: &[u8],
        precision: Precision,
    ) -> Result<WriteReport, StorageError> {
        if database.is_empty() {
            return Err(StorageError::Invalid("a database name is needed".into()));
        }
        let options = ParseOptions {
            precision,
            ..ParseOptions::default()
        };
        let (slot, started) = self.admit_write();
        let times = self.write_times(database);
        let now = times.now;
        let mut cache = SchemaCache::new(database);
        let mut batches: Vec<ShardBatch<'_>> = (0..self.shards.len())
            .map(|_| ShardBatch::default())
            .collect();
        let mut errors = Vec::new();
        let grouped = group_lines(
            body,
            &options,
            &self.catalog,
            &mut cache,
            times,
            &mut batches,
            &mut errors,
        );
        self.stages.lap(WriteStage::Parse, started);
        self.store_batches(database, &batches, grouped, errors, now, slot)
    }

    /// [`Engine::write_series`].
    fn write_series(
        &self,
        database: &str,
        series: &[SeriesWrite<'_>],
    ) -> Result<WriteReport, StorageError> {
        if database.is_empty() {
            return Err(StorageError::Invalid("a database name is needed".into()));
        }
        let mut keys = Vec::new();
        let key_ranges: Vec<std::ops::Range<usize>> = series
            .iter()
            .map(|one| {
                let start = keys.len();
                structured_key(&mut keys, one);
                start..keys.len()
            })
            .collect();
        let (slot, started) = self.admit_write();
        let times = self.write_times(database);
        let mut cache = SchemaCache::new(database);
        let mut batches: Vec<ShardBatch<'_>> = (0..self.shards.len())
            .map(|_| ShardBatch::default())
            .collect();
        let mut errors = Vec::new();
        let grouped = group_series(
            series,
            &keys,
            &key_ranges,
            &self.catalog,
            &mut cache,
            times,
            &mut batches,
            &mut errors,
        );
        self.stages.lap(WriteStage::Parse, started);
        self.store_batches(database, &batches, grouped, errors, times.now, slot)
    }

    /// Waits for a write slot (`write_slots.rs`), counting the wait as `admission`, then
    /// merges first if a partition holds too many parts (`engine/merge_assist.rs`); returns
    /// the slot and when the write's own work may start.
    fn admit_write(&self) -> (WriteSlot<'_>, Instant) {
        let arrived = Instant::now();
        let (slot, taken) = self.write_slots.acquire();
        self.stages.add(WriteStage::Admission, arrived, taken);
        let ready = self.assist_merges(taken);
        (slot, ready)
    }

    /// The part of a write after its rows are grouped by shard: the catalog made durable,
    /// each shard's batch applied (series limit checked), the write slot given back, the
    /// WAL records committed, and the report.
    fn store_batches(
        &self,
        database: &str,
        batches: &[ShardBatch<'_>],
        grouped: Grouped,
        mut errors: Vec<LineError>,
        now: Timestamp,
        mut slot: WriteSlot<'_>,
    ) -> Result<WriteReport, StorageError> {
        // New tables, tags or fields must be durable before rows that use them are.
        let started = Instant::now();
        self.catalog.persist()?;
        self.stages.lap(WriteStage::Catalog, started);
        let mut shard_errors = Vec::new();
        let mut database_tables: Option<Vec<TableId>> = None;
        let mut admit = |table: TableId| -> Result<(), String> {
            let Some(limit) = &self.series_limit else {
                return Ok(());
            };
            // The database's tables, once per request: new tables of this request are
            // in the catalog already.
            let tables = database_tables.get_or_insert_with(|| {
                self.catalog.tables(database).iter().map(|t| t.id).collect()
            });
            if limit.admit(table, tables) {
                Ok(())
            } else {
                Err(format!(
                    "database \"{database}\" has reached its limit of {} series \
                     (--max-series): the series was not created",
                    limit.max()
                ))
            }
        };
        let pending = self.apply_batches(batches, now, &mut shard_errors, &mut admit, &mut slot);
        // The rows are stored and their records pending: waiting for the WAL's I/O leaves
        // the core to another write.
        drop(slot);
        let pending = pending?;
        for (shard, seq) in pending {
            self.shards[shard].commit(seq)?;
        }
        let rejected_by_shards = shard_errors.len() as u64;
        errors.extend(shard_errors);
        errors.sort_by_key(|e| e.line);
        if grouped.expired > 0 {
            self.retention
                .rows_rejected
                .fetch_add(grouped.expired, Ordering::Relaxed);
        }
        Ok(WriteReport {
            rows: grouped.rows - rejected_by_shards,
            points: grouped.points,
            expired: grouped.expired,
            errors,
        })
    }

    /// Hands each shard its batch. Shards whose lock another writer holds are skipped and
    /// retried after the others, so concurrent writers spread over the shards instead of
    /// queueing behind one; each request starts at a different shard for the same reason.
    fn apply_batches(
        &self,
        batches: &[ShardBatch<'_>],
        now: Timestamp,
        errors: &mut Vec<LineError>,
        admit: &mut dyn FnMut(TableId) -> Result<(), String>,
        slot: &mut WriteSlot<'_>,
    ) -> Result<Vec<(usize, u64)>, StorageError> {
        let count = batches.len();
        let start = self.next_start.fetch_add(1, Ordering::Relaxed) % count.max(1);
        let mut pending: Vec<usize> = (0..count)
            .map(|i| (start + i) % count)
            .filter(|i| !batches[*i].is_empty())
            .collect();
        let mut enqueued = Vec::with_capacity(pending.len());
        while let Some(&first) = pending.first() {
            let mut index = 0;
            let mut progressed = false;
            while index < pending.len() {
                let shard = pending[index];
                match self.shards[shard].write(&batches[shard], now, errors, false, admit, slot)? {
                    Applied::Busy => index += 1,
                    applied => {
                        if let Applied::Enqueued(seq) = applied {
                            enqueued.push((shard, seq));
                        }
                        pending.remove(index);
                        progressed = true;
                    }
                }
            }
            if !progressed {
                if let Applied::Enqueued(seq) =
                    self.shards[first].write(&batches[first], now, errors, true, admit, slot)?
                {
                    enqueued.push((first, seq));
                }
                pending.retain(|shard| *shard != first);
            }
        }
        Ok(enqueued)
    }
}

impl Engine {
    /// Opens the engine: creates the data directories if new, loads the catalog, opens every
    /// shard (parts, series index, WAL replay), and starts the flush and maintenance threads.
    pub fn open(options: EngineOptions) -> Result<(Engine, OpenReport), StorageError> {
        if options.data_dirs.is_empty() {
            return Err(StorageError::Invalid(
                "at least one data directory is needed".into(),
            ));
        }
        if options.partition_duration.is_zero() {
            return Err(StorageError::Invalid(
                "the partition duration must be positive".into(),
            ));
        }
        for dir in &options.data_dirs {
            crate::fsutil::create_dir_all_durable(dir)
                .map_err(|e| StorageError::io("cannot create data directory", dir, e))?;
        }
        // Before any file is read or written: a directory another engine has open is
        // refused, not shared.
        let locks = DirLocks::acquire(&options.data_dirs)?;
        if options.read_only {
            mirror::clear_dirs(&options.data_dirs)?;
        }
        let first = options.data_dirs[0].clone();
        let meta_path = first.join(layout::ENGINE_FILE);
        let wanted = if options.shards == 0 {
            available_cores()
        } else {
            options.shards
        };
        let mut report = OpenReport::default();
        let shard_count = match checked_json::read::<EngineMeta>(
            &meta_path,
            ENGINE_KIND,
            ENGINE_VERSION,
        )? {
            Some(meta) => {
                if options.shards != 0 && meta.shards != options.shards {
                    report.shard_count_note = Some(format!(
                        "the data directory has {} shards; {} were asked for. Series are placed by \
                         shard, so the count is fixed when the directory is created",
                        meta.shards, options.shards
                    ));
                }
                meta.shards
            }
            None => {
                checked_json::write(
                    &meta_path,
                    ENGINE_KIND,
                    ENGINE_VERSION,
                    &EngineMeta { shards: wanted },
                )?;
                wanted
            }
        };
        refuse_lost_catalog(&options.data_dirs, shard_count)?;
        let catalog = Arc::new(Catalog::open(&first)?);
        if options.read_only {
            catalog.set_read_only();
        }
        let series_limit = options
            .max_series_per_database
            .map(|max| Arc::new(SeriesLimit::new(max)));
        let data_dirs: Arc<Vec<PathBuf>> = Arc::new(options.data_dirs.clone());
        let cold = Arc::new(crate::cold::ColdSlot::default());
        let partition_ns = i64::try_from(options.partition_duration.as_nanos()).unwrap_or(i64::MAX);
        let configs: Vec<ShardConfig> = (0..shard_count)
            .map(|id| ShardConfig {
                id,
                data_dirs: Arc::clone(&data_dirs),
                wal_sync: options.wal_sync,
                memtable_bytes_max: options.memtable_bytes_max.max(1),
                frozen_memtables_max: options.frozen_memtables_max.max(1),
                partition_ns,
                merge_min_parts: options.merge_min_parts,
                background: options.background,
                catalog: Arc::clone(&catalog),
                dropped: Arc::clone(catalog.dropped_tables()),
                tombstones: Arc::clone(catalog.tombstones()),
                series_limit: series_limit.clone(),
                wal_skip_damaged: options.wal_skip_damaged,
                cold: Arc::clone(&cold),
                read_index_bytes_max: options
                    .read_index_bytes_max
                    .unwrap_or_else(|| crate::part::PartIndexes::global().read_bytes_max()),
            })
            .collect();
        let mut shards = Vec::with_capacity(shard_count);
        for opened in open_shards(configs) {
            let (shard, shard_report): (Shard, ShardOpenReport) = opened?;
            if let Some(limit) = &series_limit {
                shard.count_live_series(limit);
            }
            report.replayed_records += shard_report.replayed_records;
            report.replayed_rows += shard_report.replayed_rows;
            report.orphan_parts_removed += shard_report.orphan_parts_removed;
            report.torn_wal_tails.extend(shard_report.torn_wal_tail);
            report.quarantined.extend(shard_report.quarantined);
            report
                .wal_damage_skipped
                .extend(shard_report.wal_damage_skipped);
            shards.push(shard);
        }
        report.shards = shard_count;
        let write_slots = WriteSlots::new(match options.write_concurrency {
            0 => 2 * available_cores(),
            n => n,
        });
        let inner = Arc::new(Inner {
            options,
            catalog,
            shards,
            stop: AtomicBool::new(false),
            backups_running: AtomicUsize::new(0),
            retire_owed: AtomicBool::new(false),
            next_start: AtomicUsize::new(0),
            stages: StageTimes::default(),
            write_slots,
            merge_assist: merge_assist::MergeAssist::new(shard_count),
            retention: RetentionState::new(shard_count),
            downsample: downsample::DownsampleState::new(),
            quarantined: parking_lot::Mutex::new(report.quarantined.clone()),
            series_limit,
            cold,
        });
        let mut threads = Vec::new();
        if inner.options.background {
            for shard in 0..inner.shards.len() {
                for upkeep in [Upkeep::Flush, Upkeep::Maintain] {
                    let inner = Arc::clone(&inner);
                    let handle = std::thread::Builder::new()
                        .name(format!("strata-{}-{shard}", upkeep.name()))
                        .spawn(move || upkeep_loop(&inner, shard, upkeep))
                        .map_err(|e| {
                            StorageError::Unavailable(format!(
                                "cannot start {} thread: {e}",
                                upkeep.name()
                            ))
                        })?;
                    threads.push(handle);
                }
            }
            if let crate::wal::WalSync::Interval(interval) = inner.options.wal_sync {
                let syncer = Arc::clone(&inner);
                let handle = std::thread::Builder::new()
                    .name("strata-wal-sync".into())
                    .spawn(move || wal_sync_loop(&syncer, interval))
                    .map_err(|e| {
                        StorageError::Unavailable(format!("cannot start WAL sync thread: {e}"))
                    })?;
                threads.push(handle);
            }
            let downsampler = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name("strata-downsample".into())
                .spawn(move || downsample::downsample_loop(&downsampler))
                .map_err(|e| {
                    StorageError::Unavailable(format!("cannot start downsample thread: {e}"))
                })?;
            threads.push(handle);
        }
        Ok((
            Engine {
                inner,
                threads,
                _locks: locks,
            },
            report,
        ))
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.inner.shards.len()
    }

    /// Writes line protocol into `database`. Good lines are stored even when others are
    /// bad; bad lines are in the report. Returns once every stored row is in the WAL.
    pub fn write_lines(
        &self,
        database: &str,
        body: &[u8],
        precision: Precision,
    ) -> Result<WriteReport, StorageError> {
        self.inner.catalog.check_writable()?;
        self.inner.write_lines(database, body, precision)
    }

    /// Writes series already parsed by a protocol other than line protocol (Prometheus
    /// remote write, OpenTSDB): the same checks, WAL and shards as [`Engine::write_lines`].
    /// In the report a series' 1-based place in `series` stands for the line number; a
    /// refused series is skipped whole, the others go in. Returns once every stored row is
    /// in the WAL.
    pub fn write_series(
        &self,
        database: &str,
        series: &[SeriesWrite<'_>],
    ) -> Result<WriteReport, StorageError> {
        self.inner.catalog.check_writable()?;
        self.inner.write_series(database, series)
    }

    /// As [`Engine::read`], handing each series' rows to `visit` as it is decoded (shard by
    /// shard), so that no more than one series' rows are held; stops when `visit` returns
    /// `false`.
    pub fn read_each(
        &self,
        request: &ReadRequest,
        visit: &mut dyn FnMut(SeriesRows) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let mut open = true;
        for (index, shard) in self.inner.shards.iter().enumerate() {
            shard
                .read_each(&self.shard_request(request), &mut |rows| {
                    open = visit(rows)?;
                    Ok(open)
                })
                .map_err(|e| self.inner.after_read_error(index, e))?;
            if !open {
                break;
            }
        }
        Ok(())
    }

    /// Rows of a table (see [`ReadRequest`]), one entry per series with rows, over all shards.
    pub fn read(&self, request: &ReadRequest) -> Result<Vec<SeriesRows>, StorageError> {
        let mut out = Vec::new();
        self.read_each(request, &mut |rows| {
            out.push(rows);
            Ok(true)
        })?;
        Ok(out)
    }

    /// Rows of one shard (for parallel scans: call from several threads).
    pub fn read_shard(
        &self,
        shard: usize,
        request: &ReadRequest,
    ) -> Result<Vec<SeriesRows>, StorageError> {
        let index = shard;
        let shard = self
            .inner
            .shards
            .get(shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {shard}")))?;
        shard
            .read(&self.shard_request(request))
            .map_err(|e| self.inner.after_read_error(index, e))
    }

    /// Rows of one shard as Arrow record batches of at most `batch_rows` rows (a series is
    /// never split across batches unless it alone exceeds the limit; see
    /// [`crate::arrow::table_schema`] for the columns). `Ok(vec![])` for an unknown table.
    pub fn scan_shard(
        &self,
        shard: usize,
        request: &ReadRequest,
        batch_rows: usize,
    ) -> Result<Vec<RecordBatch>, StorageError> {
        let mut batches = Vec::new();
        self.scan_shard_each(shard, request, batch_rows, &mut |batch| {
            batches.push(batch);
            true
        })?;
        Ok(batches)
    }

    /// As [`Engine::scan_shard`], but hands each batch to `sink` as soon as it is built and
    /// decodes the next series only after; stops when `sink` returns `false`. A scan of any
    /// size holds one batch at a time.
    pub fn scan_shard_each(
        &self,
        shard: usize,
        request: &ReadRequest,
        batch_rows: usize,
        sink: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), StorageError> {
        let Some(schema) = self.inner.catalog.table(request.table) else {
            return Ok(());
        };
        let index = shard;
        let shard = self
            .inner
            .shards
            .get(shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {shard}")))?;
        let fields = request.fields.as_deref();
        let limit = batch_rows.max(1);
        let mut group: Vec<SeriesRows> = Vec::new();
        let mut group_rows = 0;
        let mut open = true;
        shard
            .read_each(&self.shard_request(request), &mut |rows| {
                if group_rows > 0 && group_rows + rows.data.rows() > limit {
                    open = sink(to_record_batch(&schema, fields, &group)?);
                    group.clear();
                    group_rows = 0;
                }
                group_rows += rows.data.rows();
                group.push(rows);
                Ok(open)
            })
            .map_err(|e| self.inner.after_read_error(index, e))?;
        if open && !group.is_empty() {
            sink(to_record_batch(&schema, fields, &group)?);
        }
        Ok(())
    }

    /// For aggregates: each series of one shard as whole chunks with exact pre-aggregates
    /// plus the decoded rest (see [`SeriesSummary`]). A chunk is kept whole only if
    /// `usable(chunk)` also says its pre-aggregates answer the caller (e.g. the chunk lies
    /// inside one time bucket); otherwise its rows go to the rest.
    pub fn summarize_shard(
        &self,
        shard: usize,
        request: &ReadRequest,
        usable: &dyn Fn(&crate::part::ChunkMeta) -> bool,
    ) -> Result<Vec<SeriesSummary>, StorageError> {
        let index = shard;
        let shard = self
            .inner
            .shards
            .get(shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {shard}")))?;
        shard
            .summarize(&self.shard_request(request), usable)
            .map_err(|e| self.inner.after_read_error(index, e))
    }

    /// [`Engine::summarize_shard`] one series at a time: hands each [`SeriesSummary`] to
    /// `visit` as soon as it is built, and stops early when `visit` returns `false`. The
    /// caller folds a series while its rows are still in cache, and memory stays at one
    /// series whatever the size of the shard. An error from `visit` is returned as is.
    /// Each summary carries the tags of `tag_keys` that its series has (every tag when
    /// `None`): copying only the tags a fold groups by saves two strings per other tag and
    /// series.
    pub fn summarize_shard_each(
        &self,
        shard: usize,
        request: &ReadRequest,
        usable: &dyn Fn(&crate::part::ChunkMeta) -> bool,
        tag_keys: Option<&[String]>,
        visit: &mut dyn FnMut(SeriesSummary) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let index = shard;
        let shard = self
            .inner
            .shards
            .get(shard)
            .ok_or_else(|| StorageError::Invalid(format!("no shard {shard}")))?;
        shard
            .summarize_each(&self.shard_request(request), usable, tag_keys, visit)
            .map_err(|e| self.inner.after_read_error(index, e))
    }

    /// The latest row of each series of the request (one row each, its time in the range),
    /// without a scan: each shard keeps the latest row of every series, built at its first
    /// `latest` call (which costs what [`Engine::latest_uncached`] costs) and kept current
    /// by writes; afterwards a call costs a lookup per series, plus the uncached path for
    /// series whose latest row lies at or after `request.end`. Shard by shard, each in
    /// series id order. Allocates the tags and columns of every series; for many series
    /// [`Engine::latest_each`] is much cheaper.
    pub fn latest(&self, request: &ReadRequest) -> Result<Vec<SeriesRows>, StorageError> {
        let mut out = Vec::new();
        for (index, shard) in self.inner.shards.iter().enumerate() {
            let rows = shard.latest(&self.shard_request(request));
            out.extend(rows.map_err(|e| self.inner.after_read_error(index, e))?);
        }
        Ok(out)
    }

    /// A time no row `request` reads is older than (see `Shard::earliest_time`): where an
    /// ascending top-n over time buckets with no lower bound can start looking. `None` when
    /// no part or memtable of any shard overlaps the request's range. A bound, not a first
    /// row: parts and memtables hold every table's rows, and deleted rows still count.
    pub fn earliest_time(&self, request: &ReadRequest) -> Option<i64> {
        let request = self.shard_request(request);
        self.inner
            .shards
            .iter()
            .filter_map(|shard| shard.earliest_time(&request))
            .min()
    }

    /// What [`Engine::latest`] returns, handed to `visit` one series at a time as a
    /// [`LatestView`] that borrows the cached row and the interned tags: nothing is
    /// allocated per series. Shard by shard; within a shard the cached rows come in series
    /// id order, then (when `request.end` lies before some series' latest row) the rows of
    /// the uncached path, in series id order. `visit` runs under the shard's lock: it must
    /// not call into the engine, and writes to that shard wait while it runs, so it should
    /// only copy out what it needs.
    pub fn latest_each(
        &self,
        request: &ReadRequest,
        mut visit: impl FnMut(LatestView<'_>),
    ) -> Result<(), StorageError> {
        for (index, shard) in self.inner.shards.iter().enumerate() {
            shard
                .latest_each(&self.shard_request(request), index, &mut visit)
                .map_err(|e| self.inner.after_read_error(index, e))?;
        }
        Ok(())
    }

    /// What [`Engine::latest`] returns, computed from the memtables and parts without the
    /// latest-row cache (for tests and benchmarks).
    #[doc(hidden)]
    pub fn latest_uncached(&self, request: &ReadRequest) -> Result<Vec<SeriesRows>, StorageError> {
        let mut out = Vec::new();
        for shard in &self.inner.shards {
            out.extend(shard.latest_uncached(&self.shard_request(request))?);
        }
        Ok(out)
    }

    /// The engine's clock (its [`EngineOptions::clock`]): nanoseconds since the Unix epoch.
    /// The query layer's `now()` reads it, so tests with an injected clock get fixed times.
    pub fn now_ns(&self) -> i64 {
        self.inner.options.clock.now_ns()
    }

    /// The schema of `database.table`.
    pub fn table(&self, database: &str, table: &str) -> Option<Arc<TableSchema>> {
        let id = self.inner.catalog.table_id(database, table)?;
        self.inner.catalog.table(id)
    }

    /// Makes every acknowledged row durable in parts: freezes and flushes all memtables.
    pub fn flush(&self) -> Result<(), StorageError> {
        for shard in &self.inner.shards {
            shard.flush_all()?;
        }
        Ok(())
    }

    /// Merges each partition down to one part, after purging the rows of dropped tables
    /// and of every delete (without waiting for [`delete::PURGE_DELAY_NS`]).
    pub fn compact(&self) -> Result<usize, StorageError> {
        let now = self.now_ns();
        let mut merges = 0;
        for (index, shard) in self.inner.shards.iter().enumerate() {
            delete::purge_shard(&self.inner, index, now, true)?;
            merges += shard.compact()?;
            shard.retire_empty_series()?;
        }
        Ok(merges)
    }

    /// One round of upkeep on every shard, then of every downsample (what the flush,
    /// maintenance, WAL sync and downsample threads do); for tests and for callers that run with
    /// `background: false`.
    pub fn maintain(&self) -> Result<(), StorageError> {
        for (index, shard) in self.inner.shards.iter().enumerate() {
            shard.wal.sync_if_due(Instant::now())?;
            maintain_shard(&self.inner, index)?;
        }
        downsample::run_round(&self.inner)
    }

    /// Totals for metrics and reports.
    pub fn stats(&self) -> EngineStats {
        let mut stats = EngineStats::default();
        for shard in &self.inner.shards {
            let s = &shard.stats;
            stats.rows_written += s.rows_written.load(Ordering::Relaxed);
            stats.points_written += s.points_written.load(Ordering::Relaxed);
            stats.flushes += s.flushes.load(Ordering::Relaxed);
            stats.merges += s.merges.load(Ordering::Relaxed);
            stats.backpressure_waits += s.backpressure_waits.load(Ordering::Relaxed);
            stats.series += shard.series_count() as u64;
            stats.series_retired += s.series_retired.load(Ordering::Relaxed);
            stats.memtable_bytes += shard.memtable_bytes() as u64;
            let parts = shard.parts();
            stats.parts += parts.len() as u64;
            stats.part_bytes += parts.iter().map(|p| p.entry.bytes).sum::<u64>();
            stats.wal_bytes_written += shard.wal.bytes_written();
            stats.wal_syncs += shard.wal.syncs();
            stats.shard_busy += s.busy.load(Ordering::Relaxed);
            s.stages.add_to(&mut stats.write_stage_ns);
        }
        self.inner.stages.add_to(&mut stats.write_stage_ns);
        self.inner.retention.add_to(&mut stats);
        stats.tombstones_pending = self.pending_tombstones() as u64;
        stats.parts_quarantined = self.inner.quarantined.lock().len() as u64;
        stats.assisted_merges = self.inner.merge_assist.merges();
        stats.shards_refusing_writes = self.write_problems().len() as u64;
        downsample::add_to(&self.inner, &mut stats);
        stats
    }

    /// Why shards refuse writes now: (shard, reason) for each shard that does, with records
    /// pending behind a failed WAL write, or with flushes failing (a full disk, most often).
    /// Empty when every shard takes writes. For `/health`.
    pub fn write_problems(&self) -> Vec<(usize, String)> {
        self.inner
            .shards
            .iter()
            .enumerate()
            .filter_map(|(index, shard)| {
                if let Some(error) = shard.wal.write_error() {
                    return Some((index, format!("WAL writes fail: {error}")));
                }
                let failure = shard.flush_failure.lock().clone()?;
                Some((index, format!("flushes fail: {}", failure.message())))
            })
            .collect()
    }

    /// Damaged parts set aside since open, for `/health` and the logs.
    pub fn quarantined(&self) -> Vec<QuarantinedPart> {
        self.inner.quarantined.lock().clone()
    }

    /// Stops the background threads, flushes pending WAL bytes and fsyncs them. Memtables
    /// stay in the WAL (replayed at the next open); call [`Engine::flush`] first to write
    /// them to parts.
    pub fn close(mut self) -> Result<(), StorageError> {
        self.stop_threads();
        for shard in &self.inner.shards {
            shard.wal.sync()?;
        }
        Ok(())
    }

    /// `CREATE TABLE`: registers `database.table` with `definition`'s tags and typed fields,
    /// durably (see [`Catalog::create_table`] for `if_not_exists` on an existing table).
    /// Rows are written as usual ([`Engine::write_lines`]); the table only fixes the names
    /// and types they must use.
    pub fn create_table(
        &self,
        database: &str,
        table: &str,
        definition: &TableDefinition,
        if_not_exists: bool,
    ) -> Result<CreateOutcome, StorageError> {
        self.inner.catalog.check_writable()?;
        if database.is_empty() || table.is_empty() {
            return Err(StorageError::Invalid(
                "a database and a table name are needed".into(),
            ));
        }
        let outcome =
            self.inner
                .catalog
                .create_table(database, table, definition, if_not_exists)?;
        self.inner.catalog.persist()?;
        Ok(outcome)
    }

    /// `DROP TABLE`: `database.table` disappears at once and durably (catalog rewritten
    /// before this returns); its rows are never read again, even by a table created later
    /// under the same name (which gets a new id). Its rows leave the disk as flushes, merges
    /// and purges rewrite parts: the maintenance threads purge every shard within a round
    /// (with `background: false`, at [`Engine::maintain`] or [`Engine::compact`]). Returns
    /// the dropped table's id, `None` if there was no such table.
    pub fn drop_table(&self, database: &str, table: &str) -> Result<Option<TableId>, StorageError> {
        self.inner.catalog.check_writable()?;
        self.drop_table_unchecked(database, table)
    }

    /// [`Engine::drop_table`] in a read-only engine too (its lake mirror's).
    fn drop_table_unchecked(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Option<TableId>, StorageError> {
        let dropped = self.inner.catalog.drop_table_unchecked(database, table)?;
        if dropped.is_some() {
            for shard in &self.inner.shards {
                shard.invalidate_latest();
                shard.request_work();
            }
        }
        Ok(dropped)
    }

    /// `CREATE DATABASE`: `database` exists (durably) from now on, with no tables yet.
    /// Returns whether it was new.
    pub fn create_database(&self, database: &str) -> Result<bool, StorageError> {
        self.inner.catalog.create_database(database)
    }

    /// `DROP DATABASE`: drops every table of `database` (as [`Engine::drop_table`]) and
    /// forgets the database. Returns whether it existed.
    pub fn drop_database(&self, database: &str) -> Result<bool, StorageError> {
        let mut existed = false;
        for table in self.inner.catalog.tables(database) {
            existed |= self.drop_table(database, &table.name)?.is_some();
        }
        existed |= self.inner.catalog.forget_database(database)?;
        Ok(existed)
    }

    /// The distinct values of tag `key` over the series of table `table` in every shard,
    /// sorted; from the series indexes, without reading rows. Values of series whose rows
    /// have all expired stay listed (as InfluxDB's `SHOW TAG VALUES` does).
    pub fn tag_values(&self, table: TableId, key: &str) -> Vec<String> {
        let mut values: Vec<String> = Vec::new();
        for shard in &self.inner.shards {
            values.extend(shard.tag_values(table, key));
        }
        values.sort_unstable();
        values.dedup();
        values
    }

    /// The tag keys used by the series of table `table` in every shard, sorted and
    /// distinct; from the series indexes.
    pub fn tag_keys(&self, table: TableId) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for shard in &self.inner.shards {
            keys.extend(shard.tag_keys(table));
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The tag set of every series of table `table` (each sorted by key, the list sorted
    /// and distinct), from the series indexes without reading rows. Like
    /// [`Engine::tag_values`], series whose rows have all expired stay listed.
    pub fn series_tags(&self, table: TableId) -> Vec<Vec<(String, String)>> {
        let mut series: Vec<Vec<(String, String)>> = Vec::new();
        for shard in &self.inner.shards {
            series.extend(shard.series_tags(table));
        }
        series.sort_unstable();
        series.dedup();
        series
    }

    fn stop_threads(&mut self) {
        self.inner.stop.store(true, Ordering::SeqCst);
        for shard in &self.inner.shards {
            shard.request_work();
            shard.flushed.notify_all();
        }
        self.inner.downsample.request_round();
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

/// Engine-wide counters.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Damaged parts set aside since open.
    pub parts_quarantined: u64,
    /// Shards that refuse writes now (see [`Engine::write_problems`]).
    pub shards_refusing_writes: u64,
    /// Rows written since open.
    pub rows_written: u64,
    /// Field values written since open.
    pub points_written: u64,
    /// Memtable flushes since open.
    pub flushes: u64,
    /// Merges since open (assisted ones included).
    pub merges: u64,
    /// Merges run by writes, before their own rows, because a partition held more than
    /// `merge_assist_parts` parts (`engine/merge_assist.rs`).
    pub assisted_merges: u64,
    /// Times a writer waited for a flush (back-pressure).
    pub backpressure_waits: u64,
    /// Live series over all shards.
    pub series: u64,
    /// Series retired since open: every row of theirs was gone (deleted, expired, dropped).
    pub series_retired: u64,
    /// Bytes in memtables.
    pub memtable_bytes: u64,
    /// Live parts.
    pub parts: u64,
    /// Bytes of live part files.
    pub part_bytes: u64,
    /// WAL bytes written since open.
    pub wal_bytes_written: u64,
    /// WAL fsyncs since open.
    pub wal_syncs: u64,
    /// Rows refused by writes because they were older than their database's retention.
    pub retention_rows_rejected: u64,
    /// Parts deleted whole because every row in them had expired.
    pub retention_parts_dropped: u64,
    /// Parts rewritten without the rows of databases whose retention had passed.
    pub retention_parts_rewritten: u64,
    /// Rows removed from disk by retention (dropped or rewritten parts).
    pub retention_rows_dropped: u64,
    /// Bytes of part files freed by retention.
    pub retention_bytes_dropped: u64,
    /// Deletes whose rows some part may still hold (tombstones not yet purged).
    pub tombstones_pending: u64,
    /// Downsamples defined.
    pub downsamples: u64,
    /// Rows written into downsample tables since open.
    pub downsample_rows_written: u64,
    /// Downsample rounds run since open.
    pub downsample_rounds: u64,
    /// The largest lag of a downsample behind the flushed parts (engine clock), in ns.
    pub downsample_lag_ns: u64,
    /// Nanoseconds spent in each stage of the write path since open, summed over threads,
    /// indexed as [`WriteStage::ALL`].
    pub write_stage_ns: [u64; WriteStage::ALL.len()],
    /// Times a write found a shard's lock held and served another shard first.
    pub shard_busy: u64,
}

/// How many nice steps below the process the shards' maintenance threads run: merges,
/// purges and retention take the CPU that writes, flushes and queries leave (at 100% CPU,
/// a nice-10 thread gets about a tenth of a busy thread's share; at nice 19 merges
/// stopped altogether under a full 1-core meters load).
const MAINTENANCE_NICE: i32 = 10;

/// The two kinds of a shard's background upkeep, each on a thread of its own.
#[derive(Debug, Clone, Copy)]
enum Upkeep {
    /// Flushes of frozen memtables and of memtables that grew old ([`flush_shard`]).
    Flush,
    /// Everything else: merges, purges, retention ([`maintain_parts`]).
    Maintain,
}

impl Upkeep {
    fn name(self) -> &'static str {
        match self {
            Upkeep::Flush => "flush",
            Upkeep::Maintain => "maintenance",
        }
    }
}

fn upkeep_loop(inner: &Inner, shard_index: usize, upkeep: Upkeep) {
    let shard = &inner.shards[shard_index];
    let (requested, wake) = match upkeep {
        Upkeep::Flush => (&shard.flush_requested, &shard.flush_work),
        Upkeep::Maintain => (&shard.work_requested, &shard.work),
    };
    if let Upkeep::Maintain = upkeep {
        crate::thread_priority::lower_thread_priority(MAINTENANCE_NICE, "shard maintenance");
    }
    let mut failures = 0u32;
    while !inner.stopping() {
        {
            let mut requested = requested.lock();
            if !*requested {
                wake.wait_for(&mut requested, MAINTENANCE_TICK);
            }
            *requested = false;
        }
        if inner.stopping() {
            break;
        }
        let round = match upkeep {
            Upkeep::Flush => flush_shard(inner, shard_index),
            Upkeep::Maintain => maintain_parts(inner, shard_index),
        };
        // An error here (disk full, I/O) must not kill the thread: later rounds retry, less
        // and less often while it lasts, and writers see errors of their own from the WAL.
        match round.map_err(|e| inner.after_read_error(shard_index, e)) {
            Ok(()) if failures > 0 => {
                tracing::info!(
                    "shard {shard_index} {} works again after {failures} failed rounds",
                    upkeep.name()
                );
                failures = 0;
            }
            Ok(()) => {}
            Err(e) => {
                failures += 1;
                let delay = retry_delay(failures);
                if failures.is_power_of_two() {
                    tracing::error!(
                        "shard {shard_index} {} failed ({failures} rounds in a row; \
                         next try in {delay:?}): {e}",
                        upkeep.name()
                    );
                }
                pause(inner, delay);
            }
        }
    }
}

/// `--wal-sync <interval>`: fsyncs every shard's WAL once the interval has passed since its
/// last timed fsync, on a thread of its own, so that no flush or merge of a maintenance
/// round delays it (the promise is that a power cut loses at most the last interval of
/// acknowledged writes). Wakes four times an interval, at most every 100 ms.
fn wal_sync_loop(inner: &Inner, interval: Duration) {
    let tick = (interval / 4).clamp(Duration::from_millis(1), MAINTENANCE_TICK);
    let mut failed = vec![false; inner.shards.len()];
    while !inner.stopping() {
        std::thread::sleep(tick);
        for (index, shard) in inner.shards.iter().enumerate() {
            match shard.wal.sync_if_due(Instant::now()) {
                Ok(_) => failed[index] = false,
                // Writers get the error too; say it once until it goes away.
                Err(e) if !failed[index] => {
                    failed[index] = true;
                    tracing::error!("shard {index}: timed WAL fsync failed: {e}");
                }
                Err(_) => {}
            }
        }
    }
}

/// Longest wait between two tries of a failing maintenance round.
const RETRY_DELAY_MAX: Duration = Duration::from_secs(10);

/// Opens the shards side by side, one thread each, as many at a time as there are cores:
/// loading a shard's series log and replaying its WAL is CPU work (10M series take tens of
/// seconds), and shards share nothing while they open. Results come back in shard order.
fn open_shards(configs: Vec<ShardConfig>) -> Vec<Result<(Shard, ShardOpenReport), StorageError>> {
    let at_once = available_cores().max(1);
    let mut results = Vec::with_capacity(configs.len());
    let mut configs = configs.into_iter().peekable();
    while configs.peek().is_some() {
        let wave: Vec<ShardConfig> = configs.by_ref().take(at_once).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = wave
                .into_iter()
                .map(|config| scope.spawn(move || Shard::open(config)))
                .collect();
            for handle in handles {
                results.push(handle.join().unwrap_or_else(|_| {
                    Err(StorageError::Unavailable(
                        "a shard panicked while opening".into(),
                    ))
                }));
            }
        });
    }
    results
}

/// How long to wait after the `failures`-th failed round in a row: one tick, doubling up to
/// [`RETRY_DELAY_MAX`], so that a lasting failure (a full disk) is neither retried nor
/// logged ten times a second.
fn retry_delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    MAINTENANCE_TICK
        .saturating_mul(1 << doublings)
        .min(RETRY_DELAY_MAX)
}

/// Sleeps `delay`, a tick at a time, returning early when the engine stops.
fn pause(inner: &Inner, delay: Duration) {
    let end = Instant::now() + delay;
    while !inner.stopping() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(MAINTENANCE_TICK));
    }
}

/// One round of upkeep on a shard: its flushes, then the rest (what its two threads do).
fn maintain_shard(inner: &Inner, shard_index: usize) -> Result<(), StorageError> {
    // The second runs even when the first failed: on a full disk, flushes fail but
    // retention may free the space they need. The first error is reported.
    let flushed = flush_shard(inner, shard_index);
    let maintained = maintain_parts(inner, shard_index);
    flushed.and(maintained)
}

/// The flush thread's round: freezes the memtable if it grew old, then flushes every
/// frozen memtable.
fn flush_shard(inner: &Inner, shard_index: usize) -> Result<(), StorageError> {
    let shard = &inner.shards[shard_index];
    let options = &inner.options;
    let now = options.clock.now_ns();
    let max_age = i64::try_from(options.flush_interval.as_nanos()).unwrap_or(i64::MAX);
    shard.freeze_if_old(now, max_age);
    while shard.flush_one()? {}
    Ok(())
}

/// The maintenance thread's round: everything but flushes.
fn maintain_parts(inner: &Inner, shard_index: usize) -> Result<(), StorageError> {
    let shard = &inner.shards[shard_index];
    let now = inner.options.clock.now_ns();
    // Each step runs even when an earlier one failed: on a full disk, merges fail but
    // retention may free the space they need. The first error is reported.
    let mut first_error = None;
    let mut step = |result: Result<(), StorageError>| {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    };
    // Writes records left pending by a failed write, if any (the WAL's timed fsyncs are
    // the WAL sync thread's).
    step(shard.wal.write_pending().map_err(StorageError::from));
    step(shard.purge_dropped().map(drop));
    step(delete::purge_shard(inner, shard_index, now, false));
    step(retention::expire_shard(inner, shard_index, now));
    step(merge_until_done(inner, shard));
    step(shard.retire_empty_series().map(drop));
    if crate::part::FreedMemory::global().return_when_idle(now) {
        tracing::debug!("memory freed by reads past --index-memory returned to the system");
    }
    first_error.map_or(Ok(()), Err)
}

/// Merges until no run is left, or the engine stops: a stop waits for the merge under way,
/// not for the rest of a backlog, which after a long load can take minutes at the
/// maintenance threads' priority (the next start merges it). Writers under back-pressure do
/// not wait for this: they wait for a flush, which runs on the flush thread and publishes
/// between two merges' publications.
fn merge_until_done(inner: &Inner, shard: &Shard) -> Result<(), StorageError> {
    while !inner.stopping() {
        if !shard.merge_one()? {
            break;
        }
    }
    Ok(())
}

/// Refuses to open when `catalog.json` is missing but some shard holds series (its log
/// has records) or parts: an empty catalog would leave their rows nameless, and the first
/// table created would take a lost table's id. `strata repair` rebuilds it from the parts.
fn refuse_lost_catalog(data_dirs: &[PathBuf], shards: usize) -> Result<(), StorageError> {
    let catalog = data_dirs[0].join(crate::catalog::CATALOG_FILE);
    if catalog.exists() {
        return Ok(());
    }
    for shard in 0..shards {
        let home = layout::shard_dir(
            &data_dirs[layout::home_dir_index(shard, data_dirs.len())],
            shard,
        );
        let log = home.join("series").join(crate::series::SERIES_LOG_FILE);
        let has_series =
            std::fs::metadata(&log).is_ok_and(|m| m.len() > crate::series::HEADER_LEN as u64);
        let has_parts = crate::manifest::Manifest::load(&home.join(layout::MANIFEST_FILE))
            .map_or(true, |m| !m.parts.is_empty());
        if has_series || has_parts {
            return Err(StorageError::Invalid(format!(
                "{} is missing but shard {shard} holds data: run `strata repair` on the \
                 stopped server's data directories to rebuild it from the parts",
                catalog.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{MAINTENANCE_TICK, RETRY_DELAY_MAX, retry_delay};

    #[test]
    fn failing_rounds_are_retried_less_and_less_often_up_to_a_cap() {
        assert_eq!(retry_delay(1), MAINTENANCE_TICK);
        assert_eq!(retry_delay(2), MAINTENANCE_TICK * 2);
        assert_eq!(retry_delay(4), MAINTENANCE_TICK * 8);
        let delays: Vec<_> = (1..200).map(retry_delay).collect();
        assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
        assert_eq!(delays.last(), Some(&RETRY_DELAY_MAX));
        assert_eq!(retry_delay(u32::MAX), RETRY_DELAY_MAX);
    }
}
