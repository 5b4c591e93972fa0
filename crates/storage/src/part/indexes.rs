//! Parts' indexes kept in memory within a budget.
//!
//! A part's index (every chunk's time range, block lengths and pre-aggregates) is about a
//! fifth of the part's bytes on TSBS cpu-only: 1 MB per hour of 4,000 hosts, 24 MB a day,
//! 8.8 GB a year. Every part held its whole index for its whole life, so a server's memory
//! grew with its history. Now an index is held while the indexes held are within a budget
//! (by default a sixteenth of the memory the process may use); past it, the one used least
//! lately is dropped (CLOCK, `budget.rs`) and read again from the file (one read, its
//! CRC32 checked, decompressed, its directory walked) when next used. An index is held with
//! its directory (16 bytes a series), and both count in the budget. What a part keeps for
//! its whole life is the set of series it holds (`directory.rs`): a bitmap per table.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use super::budget::Budget;
use super::directory::PartIndex;

/// Fewest index bytes held, whatever the memory.
const BUDGET_MIN_BYTES: usize = 64 << 20;

/// The share of memory indexes may hold: one part in this many.
const MEMORY_SHARE: u64 = 16;

/// Budgets one read may hold: a sixteenth of memory each by default, so a quarter.
const READ_BUDGETS: usize = 4;

static GLOBAL: OnceLock<Arc<PartIndexes>> = OnceLock::new();

/// The indexes of a process's parts and their budget in bytes.
#[derive(Debug)]
pub struct PartIndexes {
    pub(crate) indexes: Arc<Budget<PartIndex>>,
}

/// What [`PartIndexes::stats`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartIndexesStats {
    /// Most index bytes held (pinned ones and those in use aside).
    pub budget_bytes: usize,
    /// Index bytes held now.
    pub bytes: usize,
    /// Times an index dropped for the budget was read again from its part.
    pub reloads: u64,
}

impl PartIndexes {
    /// At most `budget_bytes` of indexes held.
    pub fn new(budget_bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            indexes: Budget::new(budget_bytes),
        })
    }

    /// The process's indexes: a sixteenth of the memory it may use (physical memory, or
    /// the cgroup's `memory.max` when lower), at least 64 MiB; read once.
    pub fn global() -> &'static Arc<Self> {
        GLOBAL.get_or_init(|| {
            let budget = (usable_memory() / MEMORY_SHARE) as usize;
            Self::new(budget.max(BUDGET_MIN_BYTES))
        })
    }

    /// Sets the process's budget (`strata serve --index-memory`) before any part is opened;
    /// false if [`PartIndexes::global`] was already taken.
    pub fn set_global_budget(bytes: usize) -> bool {
        GLOBAL.set(Self::new(bytes)).is_ok()
    }

    /// Most index bytes one read over many parts holds past the budget, for its duration
    /// (`shard/part_entries.rs`): four budgets.
    pub fn read_bytes_max(&self) -> usize {
        self.indexes.limit().saturating_mul(READ_BUDGETS)
    }

    /// The budget, the bytes held now, and reloads since the process started.
    pub fn stats(&self) -> PartIndexesStats {
        PartIndexesStats {
            budget_bytes: self.indexes.limit(),
            bytes: self.indexes.held(),
            reloads: self.indexes.reloads.load(Ordering::Relaxed),
        }
    }
}

/// Physical memory, or the cgroup v2 limit (`memory.max`) when lower.
fn usable_memory() -> u64 {
    let physical = physical_memory();
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    cgroup.map_or(physical, |limit| limit.min(physical))
}

#[allow(unsafe_code)] // sysconf: a libc call the standard library does not wrap.
fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages <= 0 || page <= 0 {
        return 1 << 30;
    }
    pages as u64 * page as u64
}
