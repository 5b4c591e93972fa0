//! Retention in the engine: which rows a read may see, which rows a write refuses, and
//! when the shards return expired rows' disk space.
//!
//! A table's horizon is now minus its database's retention ([`Retention`], falling back to
//! [`EngineOptions::retention`](crate::EngineOptions::retention)); `i64::MIN` when kept
//! forever. Every read starts at the horizon, so expired rows vanish from queries at once,
//! before any file changes; writes of rows before it are refused and counted; the
//! maintenance threads remove them from disk (`shard/expire.rs`) at most every
//! [`EXPIRY_INTERVAL`] of the engine's clock, and at once after a setting changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use super::{Engine, EngineStats, Inner, ReadRequest};
use crate::catalog::Retention;
use crate::error::StorageError;
use crate::ingest::WriteTimes;
use crate::model::{TableId, Timestamp};
use crate::shard::ShardReadRequest;

/// How often (engine clock) a shard looks for parts to expire: partitions are a day wide
/// by default, so a minute late costs nothing, and looking costs a pass over the index of
/// every old part.
const EXPIRY_INTERVAL_NS: i64 = 60_000_000_000;

/// Retention's counters and upkeep state, shared by the writers and maintenance threads.
#[derive(Debug)]
pub(super) struct RetentionState {
    /// Rows refused by writes for being older than the horizon.
    pub rows_rejected: AtomicU64,
    parts_dropped: AtomicU64,
    parts_rewritten: AtomicU64,
    rows_dropped: AtomicU64,
    bytes_dropped: AtomicU64,
    /// Bumped when a database's setting changes, so every shard looks again at once.
    generation: AtomicU64,
    /// Per shard: the generation it last expired under, and when (engine clock).
    shard_generation: Vec<AtomicU64>,
    shard_last_ns: Vec<AtomicI64>,
}

impl RetentionState {
    pub(super) fn new(shards: usize) -> Self {
        Self {
            rows_rejected: AtomicU64::new(0),
            parts_dropped: AtomicU64::new(0),
            parts_rewritten: AtomicU64::new(0),
            rows_dropped: AtomicU64::new(0),
            bytes_dropped: AtomicU64::new(0),
            generation: AtomicU64::new(1),
            shard_generation: (0..shards).map(|_| AtomicU64::new(0)).collect(),
            shard_last_ns: (0..shards).map(|_| AtomicI64::new(i64::MIN)).collect(),
        }
    }

    pub(super) fn add_to(&self, stats: &mut EngineStats) {
        stats.retention_rows_rejected = self.rows_rejected.load(Ordering::Relaxed);
        stats.retention_parts_dropped = self.parts_dropped.load(Ordering::Relaxed);
        stats.retention_parts_rewritten = self.parts_rewritten.load(Ordering::Relaxed);
        stats.retention_rows_dropped = self.rows_dropped.load(Ordering::Relaxed);
        stats.retention_bytes_dropped = self.bytes_dropped.load(Ordering::Relaxed);
    }
}

/// Now minus `retention`: the first time still kept (`i64::MIN` when kept forever).
fn horizon(now: Timestamp, retention: Option<Duration>) -> Timestamp {
    match retention {
        Some(keep) => now.saturating_sub(i64::try_from(keep.as_nanos()).unwrap_or(i64::MAX)),
        None => i64::MIN,
    }
}

impl Engine {
    /// How long `database` keeps rows (`None`: forever): its own setting, else the
    /// server's default.
    pub fn retention(&self, database: &str) -> Option<Duration> {
        self.inner
            .catalog
            .retention(database)
            .effective(self.inner.options.retention)
    }

    /// `database`'s own retention setting ([`Retention::ServerDefault`] when it has none).
    pub fn retention_setting(&self, database: &str) -> Retention {
        self.inner.catalog.retention(database)
    }

    /// The server's default retention (`None`: forever).
    pub fn default_retention(&self) -> Option<Duration> {
        self.inner.options.retention.filter(|d| !d.is_zero())
    }

    /// Sets how long `database` keeps rows, durably. Rows older than the new retention
    /// vanish from queries at once and leave the disk within a maintenance round. The
    /// database must exist.
    pub fn set_retention(&self, database: &str, retention: Retention) -> Result<(), StorageError> {
        if matches!(retention, Retention::Keep(d) if d.is_zero()) {
            return Err(StorageError::Invalid(
                "a retention must be positive (keeping rows forever is its own setting)".into(),
            ));
        }
        self.inner.catalog.set_retention(database, retention)?;
        self.inner
            .retention
            .generation
            .fetch_add(1, Ordering::AcqRel);
        for shard in &self.inner.shards {
            shard.invalidate_latest();
            shard.request_work();
        }
        Ok(())
    }

    /// `CREATE DATABASE … WITH RETENTION`: creates `database` (if new) and sets its
    /// retention. Returns whether the database was new.
    pub fn create_database_with_retention(
        &self,
        database: &str,
        retention: Retention,
    ) -> Result<bool, StorageError> {
        let created = self.create_database(database)?;
        if retention != Retention::ServerDefault || !created {
            self.set_retention(database, retention)?;
        }
        Ok(created)
    }

    /// `request` as the shards read it: starting no earlier than the table's horizon.
    pub(super) fn shard_request<'r>(&self, request: &'r ReadRequest) -> ShardReadRequest<'r> {
        request.for_shard(self.inner.visible_from(request.table))
    }
}

impl Inner {
    /// The first time of `table` a read may see now.
    pub(super) fn visible_from(&self, table: TableId) -> Timestamp {
        let retention = self
            .catalog
            .table_retention(table)
            .effective(self.options.retention);
        match retention {
            Some(_) => horizon(self.options.clock.now_ns(), retention),
            None => i64::MIN,
        }
    }

    /// The clock reading and horizon a write into `database` is checked against.
    pub(super) fn write_times(&self, database: &str) -> WriteTimes {
        let now = self.options.clock.now_ns();
        let retention = self
            .catalog
            .retention(database)
            .effective(self.options.retention);
        WriteTimes {
            now,
            horizon: horizon(now, retention),
            retention,
        }
    }
}

/// One shard's expiry pass, when due: at most every [`EXPIRY_INTERVAL_NS`], and at once
/// after a retention setting changed.
pub(super) fn expire_shard(
    inner: &Inner,
    shard_index: usize,
    now: Timestamp,
) -> Result<(), StorageError> {
    let state = &inner.retention;
    let generation = state.generation.load(Ordering::Acquire);
    let last = state.shard_last_ns[shard_index].load(Ordering::Relaxed);
    let changed = state.shard_generation[shard_index].load(Ordering::Relaxed) != generation;
    if !changed && now.saturating_sub(last) < EXPIRY_INTERVAL_NS {
        return Ok(());
    }
    let default = inner.options.retention;
    let overrides = inner.catalog.retention_overrides();
    let table_overrides = inner.catalog.table_retention_overrides();
    // The shortest retention in use gives the latest horizon: no older partition is looked at.
    let shortest = overrides
        .iter()
        .map(|(_, r)| r)
        .chain(&table_overrides)
        .filter_map(|r| r.effective(default))
        .chain(default.filter(|d| !d.is_zero()))
        .min();
    if let Some(shortest) = shortest {
        let latest_horizon = horizon(now, Some(shortest));
        let mut horizons: HashMap<TableId, Timestamp> = HashMap::new();
        let mut horizon_of = |table: TableId| {
            *horizons.entry(table).or_insert_with(|| {
                let retention = inner.catalog.table_retention(table).effective(default);
                horizon(now, retention)
            })
        };
        let report = inner.shards[shard_index].expire(&mut horizon_of, latest_horizon)?;
        if report.parts_dropped + report.parts_rewritten > 0 {
            tracing::info!(
                "retention: shard {shard_index} dropped {} and rewrote {} parts, {} rows and {} bytes removed",
                report.parts_dropped,
                report.parts_rewritten,
                report.rows,
                report.bytes
            );
        }
        state
            .parts_dropped
            .fetch_add(report.parts_dropped, Ordering::Relaxed);
        state
            .parts_rewritten
            .fetch_add(report.parts_rewritten, Ordering::Relaxed);
        state.rows_dropped.fetch_add(report.rows, Ordering::Relaxed);
        state
            .bytes_dropped
            .fetch_add(report.bytes, Ordering::Relaxed);
    }
    state.shard_generation[shard_index].store(generation, Ordering::Relaxed);
    state.shard_last_ns[shard_index].store(now, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::horizon;
    use std::time::Duration;

    #[test]
    fn the_horizon_is_now_minus_the_retention() {
        assert_eq!(
            horizon(10_000_000_000, Some(Duration::from_secs(3))),
            7_000_000_000
        );
        assert_eq!(horizon(5, None), i64::MIN);
        assert_eq!(
            horizon(i64::MIN + 1, Some(Duration::from_secs(1))),
            i64::MIN
        );
    }
}
