//! Memory that reads freed past the budget of index memory, returned to the system once
//! reads have left it alone for a while.
//!
//! A read over many parts holds every index it goes over until it ends (`IndexLeases`),
//! whatever the budget: over 90 days of 100,000 series, 1.6 GB. Once it ends they are
//! dropped down to the budget, but glibc keeps freed heap memory for the next allocations
//! (all the more with the server's settings, `server/src/allocator.rs`), so the process
//! stayed at its peak for good: 2.6 GB resident under `--index-memory 64M`. Returning it at
//! once (`malloc_trim`) made the next such query fault all its pages in again: 1.7 s became
//! 3.1-4.5 s. So it is returned only when no read has held indexes past the budget for
//! [`IDLE_BEFORE_RETURN`]: a dashboard that queries again within that keeps its memory, and
//! a server left alone gives it back.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// How long reads must leave freed memory alone before it is returned.
pub const IDLE_BEFORE_RETURN: Duration = Duration::from_secs(30);

/// Index bytes a read must drop when it ends for its memory to be worth returning.
pub(crate) const RETURN_AFTER_DROPPED_BYTES: usize = 256 << 20;

/// The process's freed memory, and the reads that may use it again.
#[derive(Debug, Default)]
pub struct FreedMemory {
    /// Reads holding leases now.
    reads: AtomicUsize,
    /// Whether a read dropped more than [`RETURN_AFTER_DROPPED_BYTES`] since the last return.
    pending: AtomicBool,
    /// Reads that ended so, ever: a count that moves means reads are not leaving it alone.
    releases: AtomicU64,
    /// When (engine clock, ns) the memory was first seen left alone, with `releases` then.
    idle: Mutex<Option<(u64, i64)>>,
}

static GLOBAL: FreedMemory = FreedMemory {
    reads: AtomicUsize::new(0),
    pending: AtomicBool::new(false),
    releases: AtomicU64::new(0),
    idle: Mutex::new(None),
};

impl FreedMemory {
    /// The process's.
    pub fn global() -> &'static Self {
        &GLOBAL
    }

    pub(crate) fn read_started(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// A read ended, its leases given back, which dropped `dropped` index bytes.
    pub(crate) fn read_ended(&self, dropped: usize) {
        if dropped > RETURN_AFTER_DROPPED_BYTES {
            self.releases.fetch_add(1, Ordering::Relaxed);
            self.pending.store(true, Ordering::Relaxed);
        }
        self.reads.fetch_sub(1, Ordering::Relaxed);
    }

    /// Called on every round of upkeep: returns freed memory to the system (and says so)
    /// once no read has held leases, nor ended dropping many, for [`IDLE_BEFORE_RETURN`]
    /// of the engine's clock up to `now_ns`.
    pub fn return_when_idle(&self, now_ns: i64) -> bool {
        if !self.pending.load(Ordering::Relaxed) {
            return false;
        }
        let mut idle = self.idle.lock();
        if self.reads.load(Ordering::Relaxed) > 0 {
            *idle = None;
            return false;
        }
        let releases = self.releases.load(Ordering::Relaxed);
        match *idle {
            Some((seen, since))
                if seen == releases
                    && now_ns.saturating_sub(since) >= IDLE_BEFORE_RETURN.as_nanos() as i64 =>
            {
                *idle = None;
                self.pending.store(false, Ordering::Relaxed);
                return_free_memory();
                true
            }
            Some((seen, _)) if seen == releases => false,
            _ => {
                *idle = Some((releases, now_ns));
                false
            }
        }
    }
}

/// Asks glibc to return the free memory of its heaps to the system (`malloc_trim`: the
/// free top of each heap, and the free pages inside them).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // malloc_trim: a libc call the standard library does not wrap.
fn return_free_memory() {
    // SAFETY: malloc_trim only releases memory the allocator holds free; it takes each
    // arena's lock, as an allocation does.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_free_memory() {}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000_000;

    #[test]
    fn freed_memory_is_returned_once_reads_leave_it_alone() {
        let freed = FreedMemory::default();
        let big = RETURN_AFTER_DROPPED_BYTES + 1;
        // Nothing freed: nothing to return, however long the wait.
        assert!(!freed.return_when_idle(0));
        assert!(!freed.return_when_idle(3600 * SECOND));
        // A read that dropped little leaves nothing to return.
        freed.read_started();
        freed.read_ended(RETURN_AFTER_DROPPED_BYTES);
        assert!(!freed.return_when_idle(3600 * SECOND));
        assert!(!freed.return_when_idle(7200 * SECOND));

        // A read that dropped much: returned 30 s after it was first seen left alone.
        freed.read_started();
        freed.read_ended(big);
        assert!(!freed.return_when_idle(100 * SECOND));
        assert!(!freed.return_when_idle(129 * SECOND));
        // A read running holds it back, and the wait starts again after it.
        freed.read_started();
        assert!(!freed.return_when_idle(131 * SECOND));
        freed.read_ended(0);
        assert!(!freed.return_when_idle(132 * SECOND));
        assert!(!freed.return_when_idle(161 * SECOND));
        // Another big read ending in between starts the wait again too.
        freed.read_started();
        freed.read_ended(big);
        assert!(!freed.return_when_idle(162 * SECOND));
        assert!(!freed.return_when_idle(163 * SECOND));
        assert!(!freed.return_when_idle(191 * SECOND));
        assert!(freed.return_when_idle(193 * SECOND));
        // Returned once.
        assert!(!freed.return_when_idle(300 * SECOND));
        assert!(!freed.return_when_idle(400 * SECOND));
    }
}
