//! The lake threads. Tiering: a round every `tier interval` on a runtime of its own, so that
//! tiering never runs on (or blocks) the threads that serve writes and queries. Its
//! threads run at the lowest CPU priority (nice 19): on a busy machine writes and queries
//! go first and tiering takes the idle time (without it, a concurrent TSBS load on two
//! vCPUs lost 29% of its rate; see docs/benchmarks.md, "The lake"). After a round with
//! failures the next waits twice as long (up to 32 intervals), and the first clean round
//! resets the wait. A read-only query server's mirror refreshes (`mirror.rs`) run on the
//! same loop, at normal priority: they only read the lake.
//!
//! A stop ends a tiering round in progress early ([`crate::RoundStop`]): at its next shard
//! partition, or before the commit of the copy it is writing.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use strata_storage::Engine;

use crate::{Lake, LakeMirror, LakeOptions, MirrorReport, RoundStop, TierReport};

/// Counters of the lake for `/metrics` and `/health`.
#[derive(Debug, Default)]
pub struct LakeStats {
    /// Rounds run.
    pub rounds: AtomicU64,
    /// Shard partitions (per table) copied.
    pub partitions_copied: AtomicU64,
    /// Rows written into lake files.
    pub rows: AtomicU64,
    /// Bytes of lake files written.
    pub bytes: AtomicU64,
    /// Files added.
    pub files_added: AtomicU64,
    /// Files removed.
    pub files_removed: AtomicU64,
    /// Files deleted from the store by vacuums.
    pub files_vacuumed: AtomicU64,
    /// Local parts deleted or rewritten because the lake holds their rows.
    pub parts_released: AtomicU64,
    /// Nanoseconds rounds waited for heavy ingest to ease.
    pub yielded_ns: AtomicU64,
    /// Delta versions committed.
    pub commits: AtomicU64,
    /// Table failures over all rounds.
    pub failures: AtomicU64,
    /// Engine time of the last commit (0: none yet).
    pub last_commit_ns: AtomicI64,
    /// How far the lake is behind: engine time minus `tier after` minus the end of the
    /// oldest partition still to copy (0 when none waits), in nanoseconds.
    pub lag_ns: AtomicI64,
    /// The failures of the last round (empty when it went well).
    pub last_failures: Mutex<Vec<String>>,
    /// These are a read-only server's: its rounds refresh the mirror, and only the
    /// `mirrored` counters, `rounds` and the failures count.
    pub mirror: bool,
    /// Lake tables mirrored at the last refresh.
    pub mirrored_tables: AtomicU64,
    /// Their live files.
    pub mirrored_files: AtomicU64,
    /// Series registered by refreshes.
    pub mirrored_series: AtomicU64,
    /// Engine time of the last refresh without a failure (0: none yet).
    pub last_refresh_ns: AtomicI64,
}

impl LakeStats {
    /// The counters of a read-only server's mirror.
    pub fn for_mirror() -> Self {
        Self {
            mirror: true,
            ..Self::default()
        }
    }

    /// Counts a mirror refresh that ended at engine time `now`.
    pub fn record_mirror(&self, report: &MirrorReport, now: i64) {
        self.rounds.fetch_add(1, Ordering::Relaxed);
        self.failures
            .fetch_add(report.failures.len() as u64, Ordering::Relaxed);
        self.mirrored_tables
            .store(report.tables as u64, Ordering::Relaxed);
        self.mirrored_files
            .store(report.files as u64, Ordering::Relaxed);
        self.mirrored_series
            .fetch_add(report.series_added as u64, Ordering::Relaxed);
        if report.failures.is_empty() {
            self.last_refresh_ns.store(now, Ordering::Relaxed);
        }
        for failure in &report.failures {
            tracing::warn!(target: "strata::lake", "mirroring the lake failed: {failure}");
        }
        *self.last_failures.lock() = report.failures.clone();
    }

    fn record(&self, report: &TierReport, now: i64, ended_by: i64) {
        self.rounds.fetch_add(1, Ordering::Relaxed);
        self.partitions_copied
            .fetch_add(report.partitions_copied, Ordering::Relaxed);
        self.rows.fetch_add(report.rows, Ordering::Relaxed);
        self.bytes.fetch_add(report.bytes, Ordering::Relaxed);
        self.files_added
            .fetch_add(report.files_added, Ordering::Relaxed);
        self.files_removed
            .fetch_add(report.files_removed, Ordering::Relaxed);
        self.files_vacuumed
            .fetch_add(report.files_vacuumed, Ordering::Relaxed);
        self.parts_released
            .fetch_add(report.parts_released, Ordering::Relaxed);
        self.yielded_ns.fetch_add(
            u64::try_from(report.yielded.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.commits.fetch_add(report.commits, Ordering::Relaxed);
        self.failures
            .fetch_add(report.failures.len() as u64, Ordering::Relaxed);
        if report.commits > 0 {
            self.last_commit_ns.store(now, Ordering::Relaxed);
        }
        let lag = report
            .oldest_pending_end
            .map_or(0, |end| ended_by.saturating_sub(end).max(0));
        self.lag_ns.store(lag, Ordering::Relaxed);
        *self.last_failures.lock() = report.failures.clone();
    }
}

/// A running lake thread — tiering, or a read-only server's mirror refreshes; stops when
/// dropped.
pub struct Tierer {
    stats: Arc<LakeStats>,
    stop: Arc<(Mutex<bool>, Condvar)>,
    /// Ends a tiering round in progress (none for a mirror: its refreshes only read).
    round_stop: Option<RoundStop>,
    thread: Option<JoinHandle<()>>,
}

impl Tierer {
    /// Starts tiering `engine` into the lake of `options`.
    pub fn start(engine: Arc<Engine>, options: LakeOptions) -> std::io::Result<Self> {
        let stats = Arc::new(LakeStats::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .on_thread_start(lower_priority)
            .build()?;
        let interval = options.tier_interval;
        let lake = Lake::new(options);
        let round_stop = lake.round_stop();
        let round = {
            let stats = Arc::clone(&stats);
            move || {
                let report = runtime.block_on(lake.tier(&engine));
                let now = engine.now_ns();
                let tier_after =
                    i64::try_from(lake.options().tier_after.as_nanos()).unwrap_or(i64::MAX);
                stats.record(&report, now, now.saturating_sub(tier_after));
                for failure in &report.failures {
                    tracing::warn!(target: "strata::lake", "tiering failed: {failure}");
                }
                report.failures.is_empty()
            }
        };
        let mut tierer =
            Self::spawn_rounds("strata-lake", interval, stats, round, lower_priority, false)?;
        tierer.round_stop = Some(round_stop);
        Ok(tierer)
    }

    /// Starts refreshing the read-only `engine` from the lake through `mirror` every
    /// `interval` (the first refresh is the caller's, before it serves).
    pub fn start_mirror(
        engine: Arc<Engine>,
        mirror: LakeMirror,
        interval: std::time::Duration,
        stats: Arc<LakeStats>,
    ) -> std::io::Result<Self> {
        let round = {
            let stats = Arc::clone(&stats);
            move || {
                let report = mirror.refresh(&engine);
                stats.record_mirror(&report, engine.now_ns());
                report.failures.is_empty()
            }
        };
        Self::spawn_rounds("strata-lake-mirror", interval, stats, round, || {}, true)
    }

    /// Runs `round` on a thread of its own, which first calls `on_start`, every `interval`
    /// (first at once, or after an interval when `wait_first`); after a round with
    /// failures the next waits twice as long (up to 32 intervals), and the first clean one
    /// resets the wait.
    fn spawn_rounds(
        name: &str,
        interval: std::time::Duration,
        stats: Arc<LakeStats>,
        mut round: impl FnMut() -> bool + Send + 'static,
        on_start: fn(),
        wait_first: bool,
    ) -> std::io::Result<Self> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let thread = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    on_start();
                    let mut backoff = 1u32;
                    let mut skip = wait_first;
                    loop {
                        if !skip {
                            backoff = if round() { 1 } else { (backoff * 2).min(32) };
                        }
                        skip = false;
                        let (lock, wake) = &*stop;
                        let mut stopped = lock.lock();
                        if !*stopped {
                            wake.wait_for(&mut stopped, interval * backoff);
                        }
                        if *stopped {
                            break;
                        }
                    }
                })?
        };
        Ok(Self {
            stats,
            stop,
            round_stop: None,
            thread: Some(thread),
        })
    }

    /// The lake's counters.
    pub fn stats(&self) -> &Arc<LakeStats> {
        &self.stats
    }

    /// Stops the thread: a tiering round in progress ends early ([`RoundStop`]), a mirror
    /// refresh is let finish.
    pub fn stop(&mut self) {
        if let Some(round_stop) = &self.round_stop {
            round_stop.stop();
        }
        *self.stop.0.lock() = true;
        self.stop.1.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Lowers the calling thread's CPU priority by 19 steps: to the lowest (nice 19) in a
/// process at the normal priority.
fn lower_priority() {
    strata_storage::thread_priority::lower_thread_priority(19, "lake tiering");
}

impl Drop for Tierer {
    fn drop(&mut self) {
        self.stop();
    }
}
