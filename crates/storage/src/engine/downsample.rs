//! Downsampling: continuous aggregates kept by the engine (`CREATE DOWNSAMPLE`).
//!
//! A downsample keeps, in a table of its own, per-bucket aggregates of every numeric field
//! of a source table, one row per series and bucket at the bucket's start. It is kept
//! current from the parts: each round looks at the source's chunks in parts newer than
//! those already folded (each shard's part orders only grow, see `shard/changes.rs`),
//! computes the buckets they touch again from all the source's rows in them — whole
//! chunks by their pre-aggregates, the rest decoded — and writes the rows over the old
//! ones (last write wins). Late rows land in a new part like any other, so their buckets
//! are computed again; a new downsample starts from order 0, which back-fills every
//! existing row. Rows still in memtables are folded once they are flushed; while
//! downsamples exist, memtables are flushed once a minute old, so a downsample is at
//! most about a minute and a round ([`DOWNSAMPLE_TICK`]) behind the writes.
//!
//! A `DELETE` on the source records the bucket-aligned range it touches as dirty (in the
//! catalog, before the source's tombstone), then clears that range of the target for the
//! same series and computes it again, so buckets cut in part keep the rows left. The
//! progress (folded orders, dirty ranges) lives in `catalog.json`: a crash repeats work,
//! which rewrites the same rows, and never skips any.
//!
//! Buckets starting before the source's retention horizon are not computed again: their
//! rows are partly gone from the source, while the target keeps what it had.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use strata_lineproto::Precision;

use super::downsample_fold::FoldPlan;
use super::{DeleteRequest, Engine, Inner, ReadRequest};
use crate::catalog::{Aggregate, DirtyRange, Downsample, Retention};
use crate::error::StorageError;
use crate::model::Timestamp;
use crate::series::TagPredicate;

/// How often the downsample thread runs a round when nothing wakes it sooner.
pub(super) const DOWNSAMPLE_TICK: Duration = Duration::from_secs(10);
/// While downsamples exist, memtables older than this are flushed (instead of after the
/// engine's flush interval, 10 minutes by default), since a downsample sees rows once
/// they are in parts: it bounds how far a downsample lags behind the writes.
const DOWNSAMPLE_FLUSH_AGE_NS: i64 = 60_000_000_000;
/// Line protocol gathered before it is written to the target.
const WRITE_BATCH_BYTES: usize = 1 << 20;

/// What `CREATE DOWNSAMPLE` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownsampleSpec {
    /// Bucket width.
    pub interval: Duration,
    /// Aggregates kept per numeric field (at least one; repeats are ignored).
    pub aggregates: Vec<Aggregate>,
    /// The target table's own retention ([`Retention::ServerDefault`]: its database's).
    pub retention: Retention,
}

/// A downsample as `SHOW DOWNSAMPLES` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownsampleInfo {
    /// Name (also the target table's).
    pub name: String,
    /// Source table.
    pub source: String,
    /// Bucket width.
    pub interval: Duration,
    /// Aggregates kept.
    pub aggregates: Vec<Aggregate>,
    /// The target's own retention setting.
    pub retention: Retention,
    /// How far behind the flushed parts it is (engine clock): now minus the start of its
    /// last round that left nothing to do; `None` before its first such round.
    pub lag: Option<Duration>,
}

/// The downsample thread's state and counters.
#[derive(Debug)]
pub(super) struct DownsampleState {
    /// Held by a round and by a delete of a source table, so that a round never writes
    /// aggregates computed before a delete after it.
    work: Mutex<()>,
    /// Wakes the thread early (a new downsample, shutdown).
    wake: Condvar,
    woken: Mutex<bool>,
    rows_written: AtomicU64,
    rounds: AtomicU64,
    /// Per downsample id: when its last complete round started (engine clock).
    caught_up: Mutex<std::collections::HashMap<u64, i64>>,
}

impl DownsampleState {
    pub(super) fn new() -> Self {
        Self {
            work: Mutex::new(()),
            wake: Condvar::new(),
            woken: Mutex::new(false),
            rows_written: AtomicU64::new(0),
            rounds: AtomicU64::new(0),
            caught_up: Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// Wakes the thread for a round now.
    pub(super) fn request_round(&self) {
        *self.woken.lock() = true;
        self.wake.notify_all();
    }

    /// Waits up to [`DOWNSAMPLE_TICK`] or until woken.
    pub(super) fn wait(&self) {
        let mut woken = self.woken.lock();
        if !*woken {
            self.wake.wait_for(&mut woken, DOWNSAMPLE_TICK);
        }
        *woken = false;
    }
}

impl Engine {
    /// `CREATE DOWNSAMPLE name FROM source …`: creates table `database.name` (and
    /// `source`, when it does not exist yet) with `source`'s tags and starts keeping it current (the back-fill of existing rows runs
    /// in the background). Returns whether it was created; `if_not_exists` makes an
    /// existing downsample of that name no error.
    pub fn create_downsample(
        &self,
        database: &str,
        name: &str,
        source: &str,
        spec: &DownsampleSpec,
        if_not_exists: bool,
    ) -> Result<bool, StorageError> {
        let catalog = &self.inner.catalog;
        // Before the target table is made.
        catalog.check_writable()?;
        if catalog
            .downsamples()
            .iter()
            .any(|d| d.database == database && d.name == name)
        {
            if if_not_exists {
                return Ok(false);
            }
            return Err(StorageError::Invalid(format!(
                "downsample \"{name}\" already exists in database \"{database}\""
            )));
        }
        let interval_ns = i64::try_from(spec.interval.as_nanos())
            .ok()
            .filter(|ns| *ns > 0)
            .ok_or_else(|| {
                StorageError::Invalid("a downsample interval must be positive".into())
            })?;
        let mut aggregates = Vec::new();
        for a in &spec.aggregates {
            if !aggregates.contains(a) {
                aggregates.push(*a);
            }
        }
        if aggregates.is_empty() {
            return Err(StorageError::Invalid(
                "a downsample needs at least one aggregate".into(),
            ));
        }
        if matches!(spec.retention, Retention::Keep(d) if d.is_zero()) {
            return Err(StorageError::Invalid(
                "a retention must be positive (keeping rows forever is its own setting)".into(),
            ));
        }
        if catalog.table_id(database, name).is_some() {
            return Err(StorageError::Invalid(format!(
                "table \"{name}\" already exists in database \"{database}\": a downsample \
                 creates its own table"
            )));
        }
        if name == source {
            return Err(StorageError::Invalid(
                "a downsample cannot be its own source".into(),
            ));
        }
        // A source not written yet is created (empty), as `CREATE TABLE` would: a
        // downsample may be set up before the first row arrives.
        let source_id = catalog.get_or_create_table(database, source);
        if catalog.is_downsample_target(source_id) {
            return Err(StorageError::Invalid(format!(
                "table \"{source}\" is itself a downsample: aggregates of aggregates would be \
                 wrong for avg, so downsample the raw table with a wider interval instead"
            )));
        }
        let _work = self.inner.downsample.work.lock();
        let target = catalog.get_or_create_table(database, name);
        let source_tags = catalog
            .table(source_id)
            .map(|s| s.tags.clone())
            .unwrap_or_default();
        catalog
            .ensure_tags(target, source_tags.iter().map(String::as_str))
            .map_err(|e| StorageError::Invalid(e.to_string()))?;
        catalog.persist()?;
        catalog.add_downsample(
            Downsample {
                id: 0,
                database: database.to_string(),
                name: name.to_string(),
                source: source_id,
                target,
                interval_ns,
                aggregates,
                folded_order: vec![0; self.inner.shards.len()],
                dirty: Vec::new(),
                created_ns: self.now_ns(),
            },
            spec.retention,
        )?;
        self.inner.downsample.request_round();
        Ok(true)
    }

    /// `DROP DOWNSAMPLE`: stops keeping `database.name` current; its table and rows stay
    /// (drop them with `DROP TABLE`). Returns whether there was one.
    pub fn drop_downsample(&self, database: &str, name: &str) -> Result<bool, StorageError> {
        let _work = self.inner.downsample.work.lock();
        let removed = self.inner.catalog.remove_downsample(database, name)?;
        if let Some(d) = &removed {
            self.inner.downsample.caught_up.lock().remove(&d.id);
        }
        Ok(removed.is_some())
    }

    /// The downsamples of `database`, in creation order.
    pub fn downsamples(&self, database: &str) -> Vec<DownsampleInfo> {
        let catalog = &self.inner.catalog;
        let now = self.now_ns();
        let caught_up = self.inner.downsample.caught_up.lock().clone();
        catalog
            .downsamples()
            .into_iter()
            .filter(|d| d.database == database)
            .map(|d| DownsampleInfo {
                source: catalog
                    .table(d.source)
                    .map(|t| t.name.clone())
                    .unwrap_or_default(),
                interval: Duration::from_nanos(d.interval_ns.unsigned_abs()),
                retention: catalog.own_table_retention(d.target),
                lag: caught_up
                    .get(&d.id)
                    .map(|since| Duration::from_nanos(now.saturating_sub(*since).max(0) as u64)),
                aggregates: d.aggregates,
                name: d.name,
            })
            .collect()
    }

    /// One round of downsample upkeep now (what the background thread does every
    /// [`DOWNSAMPLE_TICK`]); for tests and callers that run with `background: false`.
    pub fn run_downsamples(&self) -> Result<(), StorageError> {
        run_round(&self.inner)
    }

    /// A delete of a table that downsamples read: marks the buckets it touches dirty
    /// (durably, before the rows go), deletes, then computes those buckets again, all
    /// while no round runs.
    pub(super) fn delete_with_downsamples(
        &self,
        request: &DeleteRequest,
        downsamples: &[Downsample],
    ) -> Result<(), StorageError> {
        let _work = self.inner.downsample.work.lock();
        for d in downsamples {
            let range = DirtyRange {
                start: d.bucket_start(request.start),
                end: d.bucket_end(request.end.saturating_sub(1)),
                predicate: request.predicate.clone(),
            };
            self.inner
                .catalog
                .update_downsample(d.id, |d| d.dirty.push(range))?;
        }
        self.inner.delete_rows(request)?;
        for d in self.inner.catalog.downsamples_of(request.table) {
            run_one(&self.inner, &d)?;
        }
        Ok(())
    }
}

/// Every downsample's round, under the work lock.
pub(super) fn run_round(inner: &Inner) -> Result<(), StorageError> {
    let _work = inner.downsample.work.lock();
    let started = inner.options.clock.now_ns();
    let downsamples = inner.catalog.downsamples();
    if !downsamples.is_empty() {
        for shard in &inner.shards {
            if shard.freeze_if_old(started, DOWNSAMPLE_FLUSH_AGE_NS) {
                shard.request_work();
            }
        }
    }
    for d in downsamples {
        run_one(inner, &d)?;
    }
    // A stop ends a round early, leaving its work recorded as not done: a back-fill over a
    // long history can take minutes, and a stop waits for the round. The next start folds
    // the same ranges again, which writes the same target rows over the ones there.
    if !inner.stopping() {
        inner.downsample.rounds.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

/// Brings one downsample up to date with the parts and its dirty ranges.
fn run_one(inner: &Inner, d: &Downsample) -> Result<(), StorageError> {
    let started = inner.options.clock.now_ns();
    let Some(source) = inner.catalog.table(d.source) else {
        return Ok(());
    };
    // Buckets that begin before a horizon are left alone: the source no longer has all
    // their rows, or the target would not keep them.
    let floor = inner
        .visible_from(d.source)
        .max(inner.visible_from(d.target));
    let floor = if floor == i64::MIN {
        i64::MIN
    } else {
        d.bucket_start(floor.saturating_sub(1))
            .saturating_add(d.interval_ns)
    };
    let mut folded = d.folded_order.clone();
    folded.resize(inner.shards.len(), 0);
    let mut ranges: Vec<(Timestamp, Timestamp)> = Vec::new();
    for (index, shard) in inner.shards.iter().enumerate() {
        let changes = shard.changes_since(d.source, folded[index])?;
        folded[index] = changes.next_order;
        ranges.extend(
            changes
                .spans
                .into_iter()
                .map(|(first, last)| (d.bucket_start(first), d.bucket_end(last))),
        );
    }
    let plan = FoldPlan::new(d, &source.fields);
    for (start, end) in coalesce(ranges) {
        fold_range(inner, d, &plan, start.max(floor), end, None)?;
    }
    for range in &d.dirty {
        let start = range.start.max(floor);
        if start < range.end && !inner.stopping() {
            inner.delete_rows(&DeleteRequest {
                table: d.target,
                start,
                end: range.end,
                predicate: range.predicate.clone(),
            })?;
            fold_range(inner, d, &plan, start, range.end, range.predicate.as_ref())?;
        }
    }
    if inner.stopping() {
        return Ok(());
    }
    let done = d.dirty.len();
    inner.catalog.update_downsample(d.id, |stored| {
        stored.folded_order = folded;
        // Ranges added meanwhile (none can be: deletes hold the work lock) would follow.
        stored.dirty.drain(..done.min(stored.dirty.len()));
    })?;
    inner.downsample.caught_up.lock().insert(d.id, started);
    Ok(())
}

/// Folds the source's rows in `start..end` (bucket-aligned) into target rows, a slice of
/// buckets at a time so that a long range (a back-fill) never holds much.
fn fold_range(
    inner: &Inner,
    d: &Downsample,
    plan: &FoldPlan<'_>,
    start: Timestamp,
    end: Timestamp,
    predicate: Option<&TagPredicate>,
) -> Result<(), StorageError> {
    if start >= end {
        return Ok(());
    }
    let partition_ns =
        i64::try_from(inner.options.partition_duration.as_nanos()).unwrap_or(i64::MAX);
    let slice = (partition_ns / d.interval_ns)
        .max(1)
        .saturating_mul(d.interval_ns);
    let fields = plan.field_ids();
    let mut lo = start;
    while lo < end && !inner.stopping() {
        let hi = lo.saturating_add(slice).min(end);
        let request = ReadRequest {
            table: d.source,
            predicate: predicate.cloned(),
            start: lo,
            end: hi,
            fields: Some(fields.clone()),
        };
        let mut body = Vec::new();
        let mut shard_request = request.for_shard(inner.visible_from(d.source));
        // Rows still in memtables are folded when their flush brings them into a part.
        shard_request.parts_only = true;
        for shard in &inner.shards {
            let mut failed = None;
            shard.summarize_each(
                &shard_request,
                &|chunk| plan.chunk_usable(chunk),
                None,
                &mut |summary| {
                    plan.fold_series(&summary, &mut body);
                    if body.len() >= WRITE_BATCH_BYTES
                        && let Err(e) = write_target(inner, d, &mut body)
                    {
                        failed = Some(e);
                        return Ok(false);
                    }
                    Ok(true)
                },
            )?;
            if let Some(e) = failed {
                return Err(e);
            }
        }
        write_target(inner, d, &mut body)?;
        lo = hi;
    }
    Ok(())
}

/// Writes the gathered lines into the target table and empties `body`.
fn write_target(inner: &Inner, d: &Downsample, body: &mut Vec<u8>) -> Result<(), StorageError> {
    if body.is_empty() {
        return Ok(());
    }
    let report = inner.write_lines(&d.database, body, Precision::Nanoseconds)?;
    body.clear();
    inner
        .downsample
        .rows_written
        .fetch_add(report.rows, Ordering::Relaxed);
    if let Some(error) = report.errors.first() {
        // A user may have written rows of other types into the target; the lines that
        // clash are left out, and said so.
        tracing::warn!(
            "downsample {}.{}: {} rows not written: {}",
            d.database,
            d.name,
            report.errors.len(),
            error.message
        );
    }
    Ok(())
}

/// Sorted, merged ranges: overlapping or touching ones become one.
fn coalesce(mut ranges: Vec<(Timestamp, Timestamp)>) -> Vec<(Timestamp, Timestamp)> {
    ranges.sort_unstable();
    let mut out: Vec<(Timestamp, Timestamp)> = Vec::new();
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => out.push((start, end)),
        }
    }
    out
}

/// The thread that runs a round every [`DOWNSAMPLE_TICK`] and when woken.
pub(super) fn downsample_loop(inner: &Inner) {
    while !inner.stopping() {
        inner.downsample.wait();
        if inner.stopping() {
            break;
        }
        if inner.catalog.downsamples().is_empty() {
            continue;
        }
        if let Err(e) = run_round(inner) {
            tracing::error!("downsample round failed (retried next round): {e}");
        }
    }
}

/// Downsample counters for [`super::EngineStats`].
pub(super) fn add_to(inner: &Inner, stats: &mut super::EngineStats) {
    let state = &inner.downsample;
    stats.downsample_rows_written = state.rows_written.load(Ordering::Relaxed);
    stats.downsample_rounds = state.rounds.load(Ordering::Relaxed);
    let downsamples = inner.catalog.downsamples();
    stats.downsamples = downsamples.len() as u64;
    let now = inner.options.clock.now_ns();
    let caught_up = state.caught_up.lock();
    stats.downsample_lag_ns = downsamples
        .iter()
        .map(|d| {
            let since = caught_up.get(&d.id).copied().unwrap_or(d.created_ns);
            now.saturating_sub(since).max(0) as u64
        })
        .max()
        .unwrap_or(0);
}

#[cfg(test)]
mod tests {
    use super::coalesce;
    use crate::catalog::{Aggregate, Retention};
    use crate::{DownsampleSpec, Engine, EngineOptions};

    #[test]
    fn a_stop_leaves_the_back_fill_to_the_next_start() {
        const HOUR_NS: i64 = 3_600_000_000_000;
        let dir = tempfile::tempdir().unwrap();
        let open = || {
            Engine::open(EngineOptions {
                data_dirs: vec![dir.path().to_path_buf()],
                shards: 1,
                background: false,
                partition_duration: std::time::Duration::from_secs(3600),
                ..EngineOptions::default()
            })
            .unwrap()
            .0
        };
        let engine = open();
        // Two days of a row a minute: 48 hourly buckets, one partition each.
        let start = 1_700_000_000_000_000_000 / HOUR_NS * HOUR_NS;
        let body: String = (0..48 * 60)
            .map(|i| format!("cpu v={i} {}\n", start + i * HOUR_NS / 60))
            .collect();
        engine
            .write_lines(
                "db",
                body.as_bytes(),
                strata_lineproto::Precision::Nanoseconds,
            )
            .unwrap();
        engine.flush().unwrap();
        let spec = DownsampleSpec {
            interval: std::time::Duration::from_secs(3600),
            aggregates: vec![Aggregate::Count],
            retention: Retention::ServerDefault,
        };
        assert!(
            engine
                .create_downsample("db", "cpu_1h", "cpu", &spec, false)
                .unwrap()
        );
        engine.inner.stop.store(true, super::Ordering::SeqCst);
        super::run_round(&engine.inner).unwrap();
        let stats = engine.stats();
        assert_eq!(
            (stats.downsample_rows_written, stats.downsample_rounds),
            (0, 0)
        );
        drop(engine);
        let engine = open();
        engine.maintain().unwrap();
        let stats = engine.stats();
        assert_eq!(
            (stats.downsample_rows_written, stats.downsample_rounds),
            (48, 1)
        );
    }

    #[test]
    fn ranges_coalesce_when_they_overlap_or_touch() {
        assert_eq!(
            coalesce(vec![(10, 20), (0, 5), (20, 30), (4, 6), (40, 50)]),
            vec![(0, 6), (10, 30), (40, 50)]
        );
        assert!(coalesce(Vec::new()).is_empty());
    }
}
