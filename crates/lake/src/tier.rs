//! A tiering round: every shard's partitions that ended `tier after` ago, copied table by
//! table into the lake where the lake's copy is missing or older than the partition.
//!
//! The lake's state is its Delta log alone: each file's name says which shard, partition,
//! part order and delete it copies (`file.rs`). A round compares that with
//! [`Engine::cold_partitions`] and, per table and shard partition, commits the new files
//! and the removal of the old ones as one Delta version. A crash before the commit leaves
//! files no version names (vacuum removes them); after it, the next round finds the copy
//! current. Either way no row is in the table twice.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::RecordBatch;
use deltalake_core::kernel::Remove;
use serde_json::json;
use strata_storage::catalog::TableSchema;
use strata_storage::model::{TableId, Timestamp};
use strata_storage::{ColdPartition, ColdTable, Engine, SeriesRows};
use tokio::sync::mpsc;

use crate::Lake;
use crate::error::LakeError;
use crate::file::{FileOrigin, FileWriter, day_of, day_start};
use crate::schema::LakeSchema;
use crate::table::{LakeFile, LakeTable};

/// Rows per Arrow batch handed to the Parquet writer.
const BATCH_ROWS: usize = 64 * 1024;

/// What one round did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TierReport {
    /// Shard partitions (per table) copied or copied again.
    pub partitions_copied: u64,
    /// Rows written into lake files.
    pub rows: u64,
    /// Bytes of lake files written.
    pub bytes: u64,
    /// Files added.
    pub files_added: u64,
    /// Files removed (replaced by a newer copy, or expired).
    pub files_removed: u64,
    /// Files deleted from the store by vacuums.
    pub files_vacuumed: u64,
    /// How long the round waited for heavy ingest to ease (`yield_to_ingest.rs`).
    pub yielded: std::time::Duration,
    /// Delta versions committed.
    pub commits: u64,
    /// Local parts deleted or rewritten because the lake holds their rows.
    pub parts_released: u64,
    /// Tables that failed, with the reason; the others went on.
    pub failures: Vec<String>,
    /// The end of the oldest cold partition the lake still lacks after the round
    /// (`None`: none), for the tiering lag.
    pub oldest_pending_end: Option<Timestamp>,
    /// The round ended early: the server stops ([`crate::RoundStop`]).
    pub stopped: bool,
}

/// One table's work in a round: the cold shard partitions holding its rows.
type TableWork = Vec<(ColdPartition, ColdTable)>;

impl Lake {
    /// Runs one tiering round at the engine's clock's time.
    pub async fn tier(&self, engine: &Arc<Engine>) -> TierReport {
        let now = engine.now_ns();
        let catalog = engine.catalog();
        // Databases may set their own `tier after`: look as far as the shortest reaches,
        // then keep for each table the partitions its own reaches.
        let ended_by = |tier_after: std::time::Duration| {
            now.saturating_sub(i64::try_from(tier_after.as_nanos()).unwrap_or(i64::MAX))
        };
        let shortest = catalog
            .tier_after_overrides()
            .into_iter()
            .map(|(_, d)| d)
            .chain([self.options.tier_after])
            .min()
            .unwrap_or(self.options.tier_after);
        let mut work: BTreeMap<TableId, TableWork> = BTreeMap::new();
        for cold in engine.cold_partitions(ended_by(shortest)) {
            for table in &cold.tables {
                work.entry(table.table)
                    .or_default()
                    .push((cold.clone(), *table));
            }
        }
        // Every table still needs a look even without a cold partition: the lake may hold
        // days of it that have expired since (after a restart too, before it is opened).
        for database in catalog.databases() {
            for table in catalog.tables(&database) {
                work.entry(table.id).or_default();
            }
        }
        let mut report = TierReport::default();
        if self.stop.is_stopped() {
            report.stopped = true;
            return report;
        }
        self.clear_dropped(engine, &mut report).await;
        for (table, mut partitions) in work {
            if self.stop.is_stopped() {
                report.stopped = true;
                break;
            }
            let Some(schema) = catalog.table(table) else {
                // Dropped: `clear_dropped` emptied its lake table.
                self.tables.lock().await.remove(&table);
                continue;
            };
            let due = ended_by(
                catalog
                    .tier_after(&schema.database)
                    .unwrap_or(self.options.tier_after),
            );
            partitions.retain(|(partition, _)| partition.end <= due);
            let oldest_end = partitions.iter().map(|(p, _)| p.end).min();
            match self
                .tier_table(engine, &schema, partitions, &mut report)
                .await
            {
                Ok(()) => {}
                Err(LakeError::Stopped) => {
                    report.stopped = true;
                    break;
                }
                Err(error) => {
                    if let Some(end) = oldest_end {
                        report.oldest_pending_end =
                            Some(report.oldest_pending_end.map_or(end, |e| e.min(end)));
                    }
                    report
                        .failures
                        .push(format!("{}.{}: {error}", schema.database, schema.name));
                }
            }
        }
        report
    }

    async fn tier_table(
        &self,
        engine: &Arc<Engine>,
        schema: &Arc<TableSchema>,
        partitions: TableWork,
        report: &mut TierReport,
    ) -> Result<(), LakeError> {
        let lake_schema = LakeSchema::of(schema)?;
        let mut tables = self.tables.lock().await;
        let table = match tables.entry(schema.id) {
            std::collections::hash_map::Entry::Occupied(entry) => {
                let table = entry.into_mut();
                if !partitions.is_empty() {
                    // Fields and tags added since the table was opened.
                    table.keep_in_step(&lake_schema).await?;
                }
                table
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                // A table with nothing to copy is opened only if the lake has it already.
                let create = !partitions.is_empty();
                if !create && self.absent.lock().await.contains(&schema.id) {
                    return Ok(());
                }
                let url = self.table_url(&schema.database, &schema.name, create)?;
                match LakeTable::open(
                    url,
                    &self.options.storage_options,
                    schema,
                    &lake_schema,
                    create,
                )
                .await?
                {
                    Some(mut opened) => {
                        claim(&mut opened, schema.id, report).await?;
                        self.absent.lock().await.remove(&schema.id);
                        entry.insert(opened)
                    }
                    None => {
                        self.absent.lock().await.insert(schema.id);
                        return Ok(());
                    }
                }
            }
        };
        let mut files: HashMap<(usize, i64), Vec<LakeFile>> = HashMap::new();
        for file in table.files()? {
            files
                .entry((file.origin.shard, file.origin.partition))
                .or_default()
                .push(file);
        }
        let horizon = engine.read_horizon(schema.id);
        let cold: HashMap<(usize, i64), (ColdPartition, ColdTable)> = partitions
            .into_iter()
            .map(|(p, t)| ((p.shard, p.partition), (p, t)))
            .collect();
        let keys: BTreeSet<(usize, i64)> = cold.keys().chain(files.keys()).copied().collect();
        for key in keys {
            // Between partitions a stop ends the round: a copy committed above has been
            // released.
            if self.stop.is_stopped() {
                return Err(LakeError::Stopped);
            }
            let old = files.remove(&key).unwrap_or_default();
            match cold.get(&key) {
                Some((partition, cold_table)) => {
                    // The copy the lake holds: one origin for all its files (a copy
                    // replaces every file of the one before in its commit).
                    let held = old.first().map(|f| f.origin).filter(|origin| {
                        old.iter().all(|f| f.origin == *origin)
                            && origin.order >= cold_table.order
                            && origin.tombstone >= cold_table.tombstone
                    });
                    if let Some(held) = held
                        && partition.end > horizon
                    {
                        // Released already, or committed just before a crash or a failed
                        // release: (again) idempotent. The copy is recorded as the lake
                        // holds it (its delete may have retired since), so that reads find
                        // its files.
                        let copy = ColdTable {
                            order: held.order,
                            tombstone: held.tombstone,
                            ..*cold_table
                        };
                        release(engine, partition, &copy, true, report).await?;
                        continue;
                    }
                    self.give_way_to_ingest(engine, report).await;
                    if self.stop.is_stopped() {
                        return Err(LakeError::Stopped);
                    }
                    release_stale_record(engine, partition, cold_table, &old, report).await?;
                    let copied = self
                        .copy(
                            engine,
                            table,
                            &lake_schema,
                            partition,
                            cold_table,
                            old,
                            report,
                        )
                        .await?;
                    release(engine, partition, cold_table, copied, report).await?;
                }
                None => {
                    // No rows of the table in that shard partition on the server. Only
                    // retention removes the copy: a partition can also be missing because
                    // the lake outlived a data directory, and the lake is then the only
                    // copy left.
                    let (_, end) = engine.partition_range(key.1);
                    if end <= horizon {
                        remove_only(table, old, key, "expired", report).await?;
                    }
                }
            }
        }
        report.files_vacuumed += table
            .vacuum_if_due(self.options.vacuum_interval, self.options.vacuum_retention)
            .await?;
        Ok(())
    }

    /// Copies `table`'s rows of one shard partition into new files and commits them with
    /// the removal of `old`; `true` when the lake now holds a copy of them, `false` when
    /// the partition has no rows of the table left (deleted) and the lake none either.
    #[allow(clippy::too_many_arguments)]
    async fn copy(
        &self,
        engine: &Arc<Engine>,
        table: &mut LakeTable,
        schema: &LakeSchema,
        partition: &ColdPartition,
        cold_table: &ColdTable,
        old: Vec<LakeFile>,
        report: &mut TierReport,
    ) -> Result<bool, LakeError> {
        let origin = FileOrigin {
            shard: partition.shard,
            partition: partition.partition,
            order: cold_table.order,
            tombstone: cold_table.tombstone,
        };
        let (sender, mut receiver) = mpsc::channel::<DayBatch>(2);
        let reader = {
            let engine = Arc::clone(engine);
            let partition = partition.clone();
            let table_id = cold_table.table;
            let schema = schema.clone();
            tokio::task::spawn_blocking(move || {
                read_days(&engine, &partition, table_id, &schema, &sender)
            })
        };
        let store = table.store();
        let mut writers: BTreeMap<i64, FileWriter> = BTreeMap::new();
        let mut failed: Option<LakeError> = None;
        while let Some(batch) = receiver.recv().await {
            if self.stop.is_stopped() {
                // Abandoned before its commit: the reader sees the channel closed and
                // ends, and the files written so far are left for vacuum.
                failed = Some(LakeError::Stopped);
                break;
            }
            if failed.is_some() {
                continue;
            }
            let writer = match writers.entry(batch.day) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    match FileWriter::create(
                        Arc::clone(&store),
                        schema,
                        origin,
                        batch.day,
                        self.options.file,
                    ) {
                        Ok(w) => e.insert(w),
                        Err(error) => {
                            failed = Some(error);
                            continue;
                        }
                    }
                }
            };
            if let Err(error) = writer
                .write(&batch.batch, &batch.times, &batch.series)
                .await
            {
                failed = Some(error);
            }
        }
        drop(receiver);
        let read = reader
            .await
            .map_err(|e| LakeError::Invalid(format!("the partition reader stopped: {e}")))?;
        read?;
        if let Some(error) = failed {
            return Err(error);
        }
        let mut adds = Vec::new();
        let mut rows = 0;
        for writer in writers.into_values() {
            rows += writer.rows();
            if let Some(add) = writer.finish().await? {
                adds.push(add);
            }
        }
        if adds.is_empty() && old.is_empty() {
            return Ok(false);
        }
        let bytes: i64 = adds.iter().map(|a| a.size).sum();
        let files_added = adds.len() as u64;
        let files_removed = old.len() as u64;
        let removes: Vec<Remove> = old.into_iter().map(|f| f.remove).collect();
        let info = HashMap::from([(
            "strata".to_string(),
            json!({
                "operation": "tier",
                "shard": origin.shard,
                "partition": origin.partition,
                "order": origin.order,
                "tombstone": origin.tombstone,
                "rows": rows,
            }),
        )]);
        table.commit(adds, removes, info).await?;
        report.commits += 1;
        report.partitions_copied += 1;
        report.rows += rows;
        report.bytes += bytes.max(0) as u64;
        report.files_added += files_added;
        report.files_removed += files_removed;
        Ok(files_added > 0)
    }
}

/// Before a copy reads `partition`: when the shard's manifest records an older copy than
/// the one the lake holds (`old`, one origin), a crash or a failed release came between
/// that copy's commit and its release, and a round that would have released it again
/// (the partition unchanged since) did not run before rows were flushed into it (a stop
/// ends a round early). Reading the partition would look in the lake for the copy the
/// manifest names, which the commit replaced: release the lake's copy first. Only when the
/// manifest records a copy: without one, the lake's copy may be another data directory's
/// (a lake that outlived its data directory), and releasing it would drop local parts.
async fn release_stale_record(
    engine: &Arc<Engine>,
    partition: &ColdPartition,
    cold_table: &ColdTable,
    old: &[LakeFile],
    report: &mut TierReport,
) -> Result<(), LakeError> {
    let Some(current) = old
        .first()
        .map(|f| f.origin)
        .filter(|origin| old.iter().all(|f| f.origin == *origin))
    else {
        return Ok(());
    };
    let Some((order, tombstone)) = engine.recorded_copy(partition, cold_table.table) else {
        return Ok(());
    };
    let stale = (order, tombstone) != (current.order, current.tombstone)
        && order <= current.order
        && tombstone <= current.tombstone;
    if !stale {
        return Ok(());
    }
    let copy = ColdTable {
        order: current.order,
        tombstone: current.tombstone,
        ..*cold_table
    };
    release(engine, partition, &copy, true, report).await
}

/// Releases the local parts whose rows of the table the lake's copy of `partition` (made
/// at `cold_table`'s signature) holds, on a blocking thread (it deletes or rewrites parts);
/// when the lake holds no copy (`copied` false: no row left), reads stop looking there.
async fn release(
    engine: &Arc<Engine>,
    partition: &ColdPartition,
    cold_table: &ColdTable,
    copied: bool,
    report: &mut TierReport,
) -> Result<(), LakeError> {
    let engine = Arc::clone(engine);
    let (partition, cold_table) = (partition.clone(), *cold_table);
    let released = tokio::task::spawn_blocking(move || {
        if copied {
            engine.release_tiered(&partition, &cold_table)
        } else {
            engine
                .forget_tiered(&partition, cold_table.table)
                .map(|()| 0)
        }
    })
    .await
    .map_err(|e| LakeError::Invalid(format!("the release stopped: {e}")))??;
    report.parts_released += released as u64;
    Ok(())
}

impl Lake {
    /// Waits while the server takes heavy ingest, within what is left of the round's
    /// allowance (`yield_to_ingest.rs`).
    async fn give_way_to_ingest(&self, engine: &Engine, report: &mut TierReport) {
        let remaining = self
            .options
            .max_yield_per_round
            .saturating_sub(report.yielded);
        report.yielded += self
            .ingest
            .lock()
            .await
            .wait_for_quiet(
                engine,
                self.options.yield_above_rows_per_second,
                remaining,
                &self.stop,
            )
            .await;
    }

    /// Removes the files of dropped tables from their lake tables (once per dropped table
    /// and process): other engines stop reading them at once, and vacuums delete them.
    /// A lake table that a table created since under the same name has claimed is left to
    /// it ([`claim`]).
    async fn clear_dropped(&self, engine: &Arc<Engine>, report: &mut TierReport) {
        let catalog = engine.catalog();
        for (id, database, name) in catalog.dropped_names() {
            if self.cleared.lock().await.contains(&id) {
                continue;
            }
            let result = async {
                let url = self.table_url(&database, &name, false)?;
                let label = format!("{database}.{name}");
                let Some(mut table) =
                    LakeTable::open_existing(url, &self.options.storage_options, label).await?
                else {
                    return Ok(());
                };
                let owner = table.strata_table_id()?;
                // Written before the id was recorded: the dropped table's, unless a live
                // table has the name now.
                let dropped_one = owner == Some(id)
                    || (owner.is_none() && catalog.table_id(&database, &name).is_none());
                if dropped_one {
                    remove_all(&mut table, "table dropped", report).await?;
                }
                Ok::<(), LakeError>(())
            }
            .await;
            match result {
                Ok(()) => {
                    self.cleared.lock().await.insert(id);
                }
                Err(error) => report
                    .failures
                    .push(format!("{database}.{name} (dropped): {error}")),
            }
        }
    }
}

/// Makes sure the lake table `table` holds Strata table `id`'s rows: one that still holds
/// the rows of a dropped table of the same name loses them (one commit) before it is
/// marked as `id`'s; one written before tables were marked is taken as `id`'s.
async fn claim(
    table: &mut LakeTable,
    id: TableId,
    report: &mut TierReport,
) -> Result<(), LakeError> {
    match table.strata_table_id()? {
        Some(owner) if owner == id => return Ok(()),
        Some(_) => remove_all(table, "table dropped and created again", report).await?,
        None => {}
    }
    table.set_strata_table_id(id).await
}

/// Commits the removal of every file Strata wrote into `table`, with `why` recorded.
async fn remove_all(
    table: &mut LakeTable,
    why: &str,
    report: &mut TierReport,
) -> Result<(), LakeError> {
    let files = table.files()?;
    let info = json!({ "operation": "remove", "why": why });
    commit_removal(table, files, info, report).await
}

/// Commits the removal of `old` (one shard partition's files) with `why` recorded.
async fn remove_only(
    table: &mut LakeTable,
    old: Vec<LakeFile>,
    (shard, partition): (usize, i64),
    why: &str,
    report: &mut TierReport,
) -> Result<(), LakeError> {
    let info = json!({ "operation": "remove", "shard": shard, "partition": partition, "why": why });
    commit_removal(table, old, info, report).await
}

/// Commits the removal of `files` (nothing when there are none), with `info` as the
/// commit's `strata` object.
async fn commit_removal(
    table: &mut LakeTable,
    files: Vec<LakeFile>,
    info: serde_json::Value,
    report: &mut TierReport,
) -> Result<(), LakeError> {
    if files.is_empty() {
        return Ok(());
    }
    let removed = files.len() as u64;
    let removes = files.into_iter().map(|f| f.remove).collect();
    table
        .commit(
            Vec::new(),
            removes,
            HashMap::from([("strata".to_string(), info)]),
        )
        .await?;
    report.commits += 1;
    report.files_removed += removed;
    Ok(())
}

/// A batch of rows of one UTC day.
struct DayBatch {
    day: i64,
    batch: RecordBatch,
    /// The rows' times in nanoseconds.
    times: Vec<i64>,
    /// Its series in row order, with their row counts.
    series: Vec<(Arc<SeriesRows>, usize)>,
}

/// A series' rows from an index to another.
type SeriesRange = (Arc<SeriesRows>, usize, usize);

/// Reads `table`'s rows of `partition` series by series and sends them as batches of at
/// most [`BATCH_ROWS`] rows, each of one day. Runs on a blocking thread.
fn read_days(
    engine: &Engine,
    partition: &ColdPartition,
    table: TableId,
    schema: &LakeSchema,
    sender: &mpsc::Sender<DayBatch>,
) -> Result<(), LakeError> {
    // Per day: the series (with their row range of that day) waiting for a batch.
    let mut pending: BTreeMap<i64, (Vec<SeriesRange>, usize)> = BTreeMap::new();
    let send = |day: i64, series: &[SeriesRange]| -> Result<bool, LakeError> {
        let refs: Vec<(&SeriesRows, usize, usize)> = series
            .iter()
            .map(|(s, a, b)| (s.as_ref(), *a, *b))
            .collect();
        let batch = schema.batch(&refs)?;
        let times = series
            .iter()
            .flat_map(|(s, a, b)| s.data.times[*a..*b].iter().copied())
            .collect();
        let series = series
            .iter()
            .map(|(s, a, b)| (Arc::clone(s), b - a))
            .collect();
        Ok(sender
            .blocking_send(DayBatch {
                day,
                batch,
                times,
                series,
            })
            .is_ok())
    };
    let mut failed: Option<LakeError> = None;
    engine.read_partition_each(partition, table, &mut |rows| {
        let rows = Arc::new(rows);
        let times = &rows.data.times;
        let mut from = 0;
        while from < times.len() {
            let day = day_of(times[from]);
            let next_day_start = day_start(day + 1);
            let to = from + times[from..].partition_point(|t| *t < next_day_start);
            let entry = pending.entry(day).or_default();
            entry.0.push((Arc::clone(&rows), from, to));
            entry.1 += to - from;
            if entry.1 >= BATCH_ROWS {
                let (series, _) = std::mem::take(entry);
                match send(day, &series) {
                    Ok(true) => {}
                    Ok(false) => return Ok(false),
                    Err(error) => {
                        failed = Some(error);
                        return Ok(false);
                    }
                }
            }
            from = to;
        }
        Ok(true)
    })?;
    if let Some(error) = failed {
        return Err(error);
    }
    for (day, (series, _)) in pending {
        if !series.is_empty() && !send(day, &series)? {
            break;
        }
    }
    Ok(())
}
