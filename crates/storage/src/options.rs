//! Engine options: a typed struct with documented defaults, and the injected clock.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// Durability of acknowledged writes.
pub use crate::wal::WalSync;

/// Where time comes from: the system clock in production, a manual clock in tests.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Nanoseconds since the Unix epoch.
    fn now_ns(&self) -> i64;
}

/// The system's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to: deterministic tests.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ns: AtomicI64,
}

impl ManualClock {
    /// A clock reading `now_ns`.
    pub fn new(now_ns: i64) -> Self {
        Self {
            now_ns: AtomicI64::new(now_ns),
        }
    }

    /// Sets the time.
    pub fn set(&self, now_ns: i64) {
        self.now_ns.store(now_ns, Ordering::SeqCst);
    }

    /// Moves the time forward.
    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        self.now_ns.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> i64 {
        self.now_ns.load(Ordering::SeqCst)
    }
}

/// Everything [`crate::Engine::open`] needs. Every field has a default; see [`Default`].
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Data directories, one per disk. The first holds the catalog; shards and their
    /// partitions are spread over all of them. Default: `./strata-data`.
    pub data_dirs: Vec<PathBuf>,
    /// Number of shards; 0 means the number of cores this process may use (affinity and
    /// cgroup aware). Fixed when the data directory is created; a later different value is
    /// ignored with a warning in the open report.
    pub shards: usize,
    /// WAL durability. Default: fsync at least every second.
    pub wal_sync: WalSync,
    /// Writes that parse and store their rows at once; the others wait for a slot in
    /// arrival order (`write_slots.rs`). 0 (the default) means twice the number of cores
    /// this process may use.
    pub write_concurrency: usize,
    /// A shard's memtable is frozen and flushed when it holds this many bytes. Default 64 MiB:
    /// large enough that parts hold long runs per series (better compression), small enough
    /// that a few shards' memtables fit comfortably in memory.
    pub memtable_bytes_max: usize,
    /// Frozen memtables a shard may hold while flushing; writers wait beyond it
    /// (back-pressure instead of unbounded memory). Default 2.
    pub frozen_memtables_max: usize,
    /// A memtable older than this is flushed even if not full, so restarts replay little
    /// WAL. Default 10 minutes.
    pub flush_interval: Duration,
    /// Width of a time partition. Default one day.
    pub partition_duration: Duration,
    /// The server-wide default retention: rows older than now minus this are hidden from
    /// reads, refused by writes and removed from disk partition by partition; `None` (or
    /// zero) keeps everything. A database may have its own ([`crate::Retention`]).
    pub retention: Option<Duration>,
    /// Size-tiered merges: this many parts of similar size in one partition are merged into
    /// one. Default 4.
    pub merge_min_parts: usize,
    /// While a partition of a shard holds more than this many parts, each write first
    /// merges some of them itself (an assisted merge, `engine/merge_assist.rs`): merges,
    /// which run at a low priority, must keep up with flushes under a long full-speed
    /// load, or parts pile up and every read of the partition opens them all. 0 turns
    /// assisted merges off. Default 64: eight times what the maintenance thread leaves when
    /// it keeps up (`merge_min_parts` × 2 starts its merges whatever the sizes).
    pub merge_assist_parts: usize,
    /// Run flushes, merges, WAL syncs and retention on background threads. Tests turn it off
    /// and call [`crate::Engine::maintain`] themselves. Default true.
    pub background: bool,
    /// At open, step over damage in the middle of a WAL (`strata serve --wal-recovery
    /// skip-damaged`) instead of refusing to open: the damaged records, and rows that
    /// depend on them, are lost and listed in the open report. Default false.
    pub wal_skip_damaged: bool,
    /// Most live series a database may hold (`strata serve --max-series`); a row that
    /// would create one more is refused with an error naming the database and the limit.
    /// `None` (the default): no limit.
    pub max_series_per_database: Option<u64>,
    /// Serve reads only: writes, deletes and schema changes are refused
    /// ([`crate::StorageError::ReadOnly`]). The tables, series and lake copies a read-only
    /// engine reads come from its lake mirror ([`crate::Engine::mirror_table`] and the
    /// methods beside it), which only such an engine accepts. Its data directories hold
    /// nothing else: each must be empty or a mirror's (marked `LAKE-MIRROR`), and is
    /// emptied at open; a directory with other data is refused. Default false.
    pub read_only: bool,
    /// Most bytes of parts' index entries one read holds while it goes over them series by
    /// series: past it, the read goes a block of series at a time and reads each index once
    /// a block. `None` (the default): four times the process's budget of index memory
    /// ([`crate::part::PartIndexes`]).
    pub read_index_bytes_max: Option<usize>,
    /// Time source for rows without a timestamp, retention and flush age.
    pub clock: Arc<dyn Clock>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            data_dirs: vec![PathBuf::from("strata-data")],
            shards: 0,
            wal_sync: WalSync::Interval(Duration::from_secs(1)),
            write_concurrency: 0,
            memtable_bytes_max: 64 << 20,
            frozen_memtables_max: 2,
            flush_interval: Duration::from_secs(600),
            partition_duration: Duration::from_secs(86_400),
            retention: None,
            merge_min_parts: 4,
            merge_assist_parts: 64,
            background: true,
            wal_skip_damaged: false,
            max_series_per_database: None,
            read_only: false,
            read_index_bytes_max: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Cores this process may run on: its CPU affinity mask, capped by a cgroup CPU quota.
pub fn available_cores() -> usize {
    let affinity = std::thread::available_parallelism().map_or(1, usize::from);
    cgroup_cpu_limit()
        .map_or(affinity, |limit| limit.min(affinity))
        .max(1)
}

/// The cgroup v2 CPU quota (`cpu.max`), rounded up to whole cores, if one is set.
fn cgroup_cpu_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/sys/fs/cgroup/cpu.max").ok()?;
    let mut parts = text.split_whitespace();
    let quota: u64 = parts.next()?.parse().ok()?; // "max" fails to parse: no limit
    let period: u64 = parts.next()?.parse().ok()?;
    (period > 0).then(|| quota.div_ceil(period) as usize)
}
