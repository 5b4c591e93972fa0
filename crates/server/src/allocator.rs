//! The C allocator's settings for a server process.
//!
//! Measured (issue 21, `docs/benchmarks.md`, "Where a write's CPU goes"): with glibc's
//! defaults, a blocking writer's large buffers (request bodies, per-shard batches) and the
//! memtables' 4 MiB payload chunks are mapped and unmapped by the allocator at every use,
//! because its adaptive threshold for `mmap` keeps falling back behind them and the heap's
//! top is trimmed as soon as it is free. Every write then faults its buffers' pages in again
//! and the kernel zeroes them: 16% of a core's time on TSBS cpu-only with 12 shards, and it
//! grows with the shard count, since each shard's share of a request is one more buffer.
//! Allocations up to 64 MiB from the heap, and up to 256 MiB of free heap top kept per
//! arena, make the same load cost 19% less CPU per point at 12 shards and 4% less at one
//! shard, for about 10% more peak memory.
//!
//! A user who sets any of glibc's `MALLOC_*_` tunables in the environment keeps them: then
//! nothing is changed here.

/// Allocations below this come from the heap, not from their own mapping.
const MMAP_THRESHOLD_BYTES: i32 = 64 << 20;
/// Free memory at the top of a heap is given back to the system only above this.
const TRIM_THRESHOLD_BYTES: i32 = 256 << 20;

/// Applies the settings above, before the server starts its threads, and logs what it did.
pub fn tune() {
    let names = std::env::vars_os().map(|(name, _)| name);
    let done = if user_tuned(names) {
        "allocator: left as the environment's MALLOC_*_ or GLIBC_TUNABLES set it".into()
    } else {
        apply()
    };
    tracing::info!("{done}");
}

/// Whether the environment (variable names) tunes glibc's allocator itself.
fn user_tuned(mut names: impl Iterator<Item = std::ffi::OsString>) -> bool {
    names.any(|name| {
        name.to_str().is_some_and(|n| {
            (n.starts_with("MALLOC_") && n.ends_with('_')) || n == "GLIBC_TUNABLES"
        })
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // mallopt: a libc call the standard library does not wrap.
fn apply() -> String {
    // SAFETY: mallopt only changes the allocator's parameters; it is called before the
    // server starts threads, and glibc serialises it with allocations anyway.
    let ok = unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    };
    if ok {
        format!(
            "allocator: glibc mmap threshold {} MiB, trim threshold {} MiB",
            MMAP_THRESHOLD_BYTES >> 20,
            TRIM_THRESHOLD_BYTES >> 20
        )
    } else {
        "allocator: glibc refused the mmap and trim thresholds; its defaults stay".into()
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> String {
    "allocator: the platform's defaults (the tuning is for glibc)".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_own_tunables_win() {
        let names = |list: &[&str]| {
            list.iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(user_tuned(names(&["PATH", "MALLOC_ARENA_MAX_"])));
        assert!(user_tuned(names(&["GLIBC_TUNABLES"])));
        assert!(!user_tuned(names(&["PATH", "MALLOC_CONF", "HOME"])));
        assert!(!user_tuned(names(&[])));
    }
}
