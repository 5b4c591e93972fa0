//! Where the write path's time goes, stage by stage, for `/metrics` and `strata bench
//! scale`.
//!
//! Each stage is a running total of nanoseconds, summed over every thread that ran it. The
//! clock is read at stage boundaries, a few times per request and shard, never per row:
//! the writer's stages (`parse`, `catalog`) are added once per request to the engine's
//! totals; a shard's stages once per request's share of that shard, to the shard's own
//! totals, so writers on different shards touch different cache lines. Divided by the
//! points written, the totals say how much of each point's cost is work and how much is
//! waiting (`admission`, `lock_wait`, `backpressure`, and `wal_commit` under `--wal-sync
//! always`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One stage of a write (see `docs/architecture.md`, "The write path, stage by stage").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStage {
    /// Waiting for a write slot: more writes arrived than may run at once
    /// (`write_slots.rs`), and they wait their turn here, before any work, holding nothing.
    Admission,
    /// Merging a crowded partition's parts before parsing, because a partition held more
    /// than `merge_assist_parts` parts (`engine/merge_assist.rs`), or waiting for another
    /// merge of it to end.
    MergeAssist,
    /// Line protocol parsed, tables, tags and fields resolved through the request's schema
    /// cache, rows routed to their shards (the writer's thread, no lock).
    Parse,
    /// New tables, tags or fields made durable before the rows that use them.
    Catalog,
    /// Waiting for a shard's lock that another writer holds.
    LockWait,
    /// Waiting for a flush because the shard's memtables are full (back-pressure).
    Backpressure,
    /// Series ids found (or series created) under the shard lock.
    Series,
    /// Rows appended to the memtable, the latest-row cache and the WAL record, under the
    /// shard lock.
    Memtable,
    /// The WAL record framed into the WAL's pending buffer, under the shard lock.
    WalAppend,
    /// After every shard of the request has its rows and the write slot is given back: the
    /// records written to the WAL files (and fsynced under `--wal-sync always`), by this
    /// writer or the one leading each shard's group commit.
    WalCommit,
    /// Memtables written as parts (the shard's flush thread).
    Flush,
    /// Parts merged (the shard's maintenance thread).
    Merge,
}

impl WriteStage {
    /// Every stage, in the order of the write path.
    pub const ALL: [WriteStage; 12] = [
        WriteStage::Admission,
        WriteStage::MergeAssist,
        WriteStage::Parse,
        WriteStage::Catalog,
        WriteStage::LockWait,
        WriteStage::Backpressure,
        WriteStage::Series,
        WriteStage::Memtable,
        WriteStage::WalAppend,
        WriteStage::WalCommit,
        WriteStage::Flush,
        WriteStage::Merge,
    ];

    /// The stage's label on `/metrics`.
    pub fn name(self) -> &'static str {
        match self {
            WriteStage::Admission => "admission",
            WriteStage::MergeAssist => "merge_assist",
            WriteStage::Parse => "parse",
            WriteStage::Catalog => "catalog",
            WriteStage::LockWait => "lock_wait",
            WriteStage::Backpressure => "backpressure",
            WriteStage::Series => "series",
            WriteStage::Memtable => "memtable",
            WriteStage::WalAppend => "wal_append",
            WriteStage::WalCommit => "wal_commit",
            WriteStage::Flush => "flush",
            WriteStage::Merge => "merge",
        }
    }
}

/// Nanoseconds spent in each stage.
#[derive(Debug, Default)]
pub(crate) struct StageTimes {
    ns: [AtomicU64; WriteStage::ALL.len()],
}

impl StageTimes {
    /// Adds the time from `since` to `until` to `stage`.
    #[inline]
    pub fn add(&self, stage: WriteStage, since: Instant, until: Instant) {
        let ns = until.saturating_duration_since(since).as_nanos() as u64;
        self.ns[stage as usize].fetch_add(ns, Ordering::Relaxed);
    }

    /// Adds the time from `since` to now to `stage`, and returns now.
    #[inline]
    pub fn lap(&self, stage: WriteStage, since: Instant) -> Instant {
        let now = Instant::now();
        self.add(stage, since, now);
        now
    }

    /// Adds each stage's total to `out` (indexed as [`WriteStage::ALL`]).
    pub fn add_to(&self, out: &mut [u64; WriteStage::ALL.len()]) {
        for (total, ns) in out.iter_mut().zip(&self.ns) {
            *total += ns.load(Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn stages_add_up_by_name() {
        let times = StageTimes::default();
        let start = Instant::now();
        times.add(WriteStage::Series, start, start + Duration::from_micros(3));
        times.add(WriteStage::Series, start, start + Duration::from_micros(2));
        times.add(WriteStage::Merge, start + Duration::from_secs(1), start);
        let mut totals = [0; WriteStage::ALL.len()];
        times.add_to(&mut totals);
        times.add_to(&mut totals);
        for (stage, ns) in WriteStage::ALL.iter().zip(totals) {
            let want = if *stage == WriteStage::Series {
                10_000
            } else {
                0
            };
            assert_eq!(ns, want, "{}", stage.name());
        }
        let names: Vec<&str> = WriteStage::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), 12);
        assert!(names.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(
            WriteStage::ALL[WriteStage::WalCommit as usize],
            WriteStage::WalCommit
        );
    }
}
