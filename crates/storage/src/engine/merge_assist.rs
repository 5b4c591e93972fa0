//! Assisted merges: while a partition holds more than `merge_assist_parts` parts, each
//! write first merges some of them itself, so that parts cannot pile up faster than they
//! merge.
//!
//! Merges run on each shard's maintenance thread, at a lower priority than writes (see
//! `MAINTENANCE_NICE`): on a saturated core they get what the writers leave, which under a
//! long full-speed load is almost nothing. Flushes go on adding a part per memtable, so a
//! partition's parts grew by about one a second on one core and were merged only after the
//! load stopped; every read of the partition opens them all. A bound on the parts must slow
//! the writers that make them. Rather than have writers sleep (which frees the core only
//! once every write slot sleeps), a write that finds a crowded partition merges one run of
//! it, at its own priority and holding its write slot, before it parses: the work lands on
//! the writes that cause it, in proportion, and the rate left is the one merges sustain.
//!
//! The check is one relaxed load per shard ([`crate::shard::Shard::most_partition_parts`]).
//! A write tries the crowded shards in turn (starting where the last write left off) and
//! merges in the first whose merge lock is free; when every crowded shard is merging, it
//! waits for the most crowded one's merge to end (its core goes to that merge, which may be
//! the maintenance thread's at low priority) and then merges there if still crowded. A
//! failed assisted merge is logged and does not fail the write; that shard is not assisted
//! again for [`FAILED_PAUSE`], and its maintenance thread goes on retrying.
//!
//! Under a long one-core load (`docs/benchmarks.md`, "Assisted merges") the waiting is what
//! happened every time: the maintenance thread had begun a merge early in the load and
//! starved in it, so no write found the merge lock free; the writers waited, and that merge
//! ran on their core.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::Inner;
use crate::write_stages::WriteStage;

/// How long a shard whose assisted merge failed is left to its maintenance thread.
const FAILED_PAUSE: Duration = Duration::from_secs(10);

/// Assisted merges' counters and state.
pub(super) struct MergeAssist {
    /// Assisted merges run since open.
    merges: AtomicU64,
    /// The crowded shard the next write tries first.
    next: AtomicUsize,
    /// Per shard: until when it is not assisted (after a failed assisted merge).
    paused_until: Vec<Mutex<Option<Instant>>>,
}

impl MergeAssist {
    pub(super) fn new(shards: usize) -> Self {
        MergeAssist {
            merges: AtomicU64::new(0),
            next: AtomicUsize::new(0),
            paused_until: (0..shards).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Assisted merges run since open.
    pub(super) fn merges(&self) -> u64 {
        self.merges.load(Ordering::Relaxed)
    }
}

/// What one try of an assisted merge did.
enum Assisted {
    /// A run was merged (or its merge thrown away: see `Shard::merge_with`).
    Merged,
    /// No partition of the shard holds more than the limit any more.
    NotCrowded,
    /// Another merge holds the shard's merge lock.
    Busy,
    /// The merge failed (logged; the shard is paused).
    Failed,
}

impl Inner {
    /// Before a write parses (its slot taken): if some shard has a partition with more than
    /// `merge_assist_parts` parts, merges one run of one of them (see the module's doc).
    /// The time is counted as [`WriteStage::MergeAssist`]. Returns when it was done:
    /// `taken` (when the write's slot was taken) if it did nothing.
    pub(super) fn assist_merges(&self, taken: Instant) -> Instant {
        let above = self.options.merge_assist_parts;
        if above == 0 {
            return taken;
        }
        let is_crowded = |index: &usize| {
            self.shards[*index]
                .most_partition_parts
                .load(Ordering::Relaxed)
                > above
        };
        if !(0..self.shards.len()).any(|index| is_crowded(&index)) {
            return taken;
        }
        let started = Instant::now();
        let crowded: Vec<usize> = (0..self.shards.len())
            .filter(is_crowded)
            .filter(|&index| !self.assist_paused(index, started))
            .collect();
        if crowded.is_empty() {
            return taken;
        }
        let first = self.merge_assist.next.fetch_add(1, Ordering::Relaxed) % crowded.len();
        let mut merging = Vec::new();
        for &index in crowded[first..].iter().chain(&crowded[..first]) {
            match self.assisted_merge(index, above, false) {
                Assisted::Merged => return self.stages.lap(WriteStage::MergeAssist, started),
                Assisted::Busy => merging.push(index),
                Assisted::NotCrowded | Assisted::Failed => {}
            }
        }
        // Every shard still crowded was merging: wait for the most crowded one's merge,
        // then merge there if it still needs it.
        let most = merging.into_iter().max_by_key(|&index| {
            self.shards[index]
                .most_partition_parts
                .load(Ordering::Relaxed)
        });
        if let Some(index) = most {
            self.assisted_merge(index, above, true);
        }
        self.stages.lap(WriteStage::MergeAssist, started)
    }

    /// One assisted merge on shard `index`, waiting for its merge lock if `wait`.
    fn assisted_merge(&self, index: usize, above: usize, wait: bool) -> Assisted {
        match self.shards[index].merge_crowded(above, wait) {
            Ok(Some(true)) => {
                self.merge_assist.merges.fetch_add(1, Ordering::Relaxed);
                Assisted::Merged
            }
            Ok(Some(false)) => Assisted::NotCrowded,
            Ok(None) => Assisted::Busy,
            Err(e) => {
                let e = self.after_read_error(index, e);
                tracing::warn!(
                    "shard {index}: an assisted merge failed; its maintenance thread retries, \
                     and writes do not merge there for {FAILED_PAUSE:?}: {e}"
                );
                *self.merge_assist.paused_until[index].lock() = Some(Instant::now() + FAILED_PAUSE);
                Assisted::Failed
            }
        }
    }

    /// Whether shard `index` is left to its maintenance thread at `now` (a failed assisted
    /// merge, less than [`FAILED_PAUSE`] ago).
    fn assist_paused(&self, index: usize, now: Instant) -> bool {
        let mut paused = self.merge_assist.paused_until[index].lock();
        match *paused {
            Some(until) if now < until => true,
            Some(_) => {
                *paused = None;
                false
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

    use std::path::Path;
    use std::time::Duration;

    use strata_lineproto::Precision;

    use super::super::{Engine, ReadRequest};
    use crate::options::EngineOptions;
    use crate::write_stages::WriteStage;

    fn open(dir: &Path, merge_assist_parts: usize) -> Engine {
        Engine::open(EngineOptions {
            data_dirs: vec![dir.to_path_buf()],
            shards: 1,
            background: false,
            merge_min_parts: 4,
            merge_assist_parts,
            partition_duration: Duration::from_secs(3600),
            ..EngineOptions::default()
        })
        .unwrap()
        .0
    }

    fn write(engine: &Engine, row: i64) {
        let body = format!("m v={row} {row}\n");
        let report = engine
            .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
    }

    /// Writes rows `0..n` of one partition, flushing each into a part of its own (no
    /// maintenance runs: `background` is off).
    fn crowd(engine: &Engine, n: i64) {
        for row in 0..n {
            write(engine, row);
            engine.flush().unwrap();
        }
    }

    fn values(engine: &Engine) -> Vec<i64> {
        let table = engine.inner.catalog.table_id("db", "m").unwrap();
        let mut values: Vec<i64> = engine
            .read(&ReadRequest::all(table))
            .unwrap()
            .iter()
            .flat_map(|series| series.data.times.clone())
            .collect();
        values.sort_unstable();
        values
    }

    #[test]
    fn a_write_merges_a_partition_holding_more_than_the_limit_before_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path(), 6);
        // Seven writes each find at most six parts: none merges.
        crowd(&engine, 7);
        let stats = engine.stats();
        assert_eq!(
            (stats.parts, stats.assisted_merges, stats.merges),
            (7, 0, 0)
        );
        assert_eq!(
            engine.inner.shards[0]
                .most_partition_parts
                .load(std::sync::atomic::Ordering::Relaxed),
            7
        );

        // The eighth finds seven: it merges the run of seven one-row parts first.
        write(&engine, 7);
        let stats = engine.stats();
        assert_eq!(
            (stats.parts, stats.assisted_merges, stats.merges),
            (1, 1, 1)
        );
        assert!(stats.write_stage_ns[WriteStage::MergeAssist as usize] > 0);
        assert_eq!(values(&engine), (0..8).collect::<Vec<_>>());

        // One part left: the next write merges nothing.
        write(&engine, 8);
        assert_eq!(engine.stats().assisted_merges, 1);
        assert_eq!(values(&engine), (0..9).collect::<Vec<_>>());
    }

    #[test]
    fn a_limit_of_zero_leaves_the_parts_to_maintenance() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path(), 0);
        crowd(&engine, 12);
        write(&engine, 12);
        let stats = engine.stats();
        assert_eq!(
            (stats.parts, stats.assisted_merges, stats.merges),
            (12, 0, 0)
        );
        assert_eq!(stats.write_stage_ns[WriteStage::MergeAssist as usize], 0);
        engine.maintain().unwrap();
        assert!(engine.stats().parts < 12);
        assert_eq!(values(&engine), (0..13).collect::<Vec<_>>());
    }

    /// A write that finds the crowded shard merging waits for that merge (its core goes
    /// to it), then merges itself if the partition is still crowded.
    #[test]
    fn a_write_waits_for_a_merge_under_way_then_merges() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path(), 6);
        crowd(&engine, 7);
        let merging = engine.inner.shards[0].merging.lock();
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| write(&engine, 7));
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !writer.is_finished(),
                "the write did not wait for the merge"
            );
            drop(merging);
            writer.join().unwrap();
        });
        let stats = engine.stats();
        assert_eq!((stats.parts, stats.assisted_merges), (1, 1));
        assert_eq!(values(&engine), (0..8).collect::<Vec<_>>());
    }
}
