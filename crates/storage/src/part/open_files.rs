//! Part files kept open within a budget.
//!
//! A live part used to hold its file open for as long as it lived, so the open files of a
//! server grew with its history: shards × partitions × parts. A year of daily partitions
//! on four shards passed 1,024, the usual default limit of open files; from then on every
//! flush failed with "Too many open files" and writes were refused. Now a part's file is
//! open while it is read and stays open while the open part files are within a budget;
//! opening one more past the budget closes one that was not used lately. The next read of
//! a closed part opens it again.
//!
//! Which file to close is chosen by CLOCK (`budget.rs`): reads of open files take no
//! shared lock, and the sweep never waits for a read.
//!
//! A part that is unlinked (merged away, dropped by retention) while readers still hold it
//! is pinned open first ([`PartFile::pin_open`]): an open file outlives its unlink, a
//! closed one could not be opened again. Pinned files are never closed by the sweep; they
//! close when their last reader lets go of the part.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::budget::{Budget, Charge, Held};

/// Fewest part files kept open, whatever the limit of open files says.
const BUDGET_MIN: usize = 16;

/// The open part files of a process and their budget. The engine uses [`PartFiles::global`];
/// tests make their own.
#[derive(Debug)]
pub struct PartFiles {
    files: Arc<Budget<File>>,
}

/// A part's file, opened on demand within its [`PartFiles`]' budget. `Send + Sync`.
#[derive(Debug)]
pub struct PartFile {
    path: PathBuf,
    file: Held<File>,
}

/// One open file counted in a [`PartFiles`]' budget for as long as it lives: a part being
/// written holds one, so that parts read and parts written share the budget.
#[derive(Debug)]
pub struct OpenFileTicket {
    _charge: Charge<File>,
}

/// What [`PartFiles::stats`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartFilesStats {
    /// Most part files kept open (pinned ones aside).
    pub budget: usize,
    /// Part files open now.
    pub open: usize,
    /// Times a part file closed for the budget was opened again to be read.
    pub reopens: u64,
    /// Times a part file was closed to keep within the budget.
    pub closes: u64,
}

impl PartFiles {
    /// At most `budget` part files open (at least [`BUDGET_MIN`]), pinned ones aside.
    pub fn new(budget: usize) -> Arc<Self> {
        Arc::new(Self {
            files: Budget::new(budget.max(BUDGET_MIN)),
        })
    }

    /// The process's part files, with half the soft limit of open files as their budget
    /// (read once, at the first part opened; `strata serve` raises the soft limit to the
    /// hard one before it opens the engine). The other half is for connections, WAL
    /// segments, parts being written and everything else.
    pub fn global() -> &'static Arc<Self> {
        static GLOBAL: OnceLock<Arc<PartFiles>> = OnceLock::new();
        GLOBAL.get_or_init(|| Self::new(default_budget()))
    }

    /// The budget, the files open now, and counts since the process started.
    pub fn stats(&self) -> PartFilesStats {
        PartFilesStats {
            budget: self.files.limit(),
            open: self.files.held(),
            reopens: self
                .files
                .reloads
                .load(std::sync::atomic::Ordering::Relaxed),
            closes: self.files.drops.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Registers `file`, just opened at `path`, as open and recently used; closes others
    /// when that passes the budget.
    pub fn adopt(&self, path: &Path, file: File) -> PartFile {
        PartFile {
            path: path.to_path_buf(),
            file: self.files.hold(file, 1),
        }
    }

    /// Counts one more open file, closing others when that passes the budget; taken before
    /// the file is opened.
    pub fn ticket(&self) -> OpenFileTicket {
        OpenFileTicket {
            _charge: self.files.charge(1),
        }
    }
}

impl PartFile {
    /// Reads exactly `buf.len()` bytes at `offset`, opening the file again if the budget
    /// closed it.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file
            .with(|| self.open(), |file| file.read_exact_at(buf, offset))?
    }

    /// Opens the file if the budget closed it, and keeps it open until the part is
    /// dropped: for a part about to be unlinked that readers may still hold.
    pub fn pin_open(&self) -> io::Result<()> {
        self.file.pin(|| self.open())
    }

    /// Whether the file is open now (tests).
    pub fn is_open(&self) -> bool {
        self.file.is_held()
    }

    fn open(&self) -> io::Result<(File, usize)> {
        File::open(&self.path).map(|file| (file, 1))
    }
}

/// Half the soft limit of open files (`RLIMIT_NOFILE`); an unlimited one counts as 2^20.
#[allow(unsafe_code)] // getrlimit: a libc call the standard library does not wrap.
fn default_budget() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given and reads nothing else.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1024
    };
    let soft = if soft == libc::RLIM_INFINITY {
        1 << 20
    } else {
        soft.min(1 << 20)
    };
    (soft / 2) as usize
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `n` files of 64 bytes each, byte `j` of file `i` being `i * 64 + j` (mod 256).
    fn files(dir: &Path, n: usize) -> Vec<PathBuf> {
        (0..n)
            .map(|i| {
                let path = dir.join(format!("{i}.part"));
                let bytes: Vec<u8> = (0..64).map(|j| (i * 64 + j) as u8).collect();
                std::fs::write(&path, bytes).unwrap();
                path
            })
            .collect()
    }

    fn adopt(files: &Arc<PartFiles>, path: &Path) -> PartFile {
        files.adopt(path, File::open(path).unwrap())
    }

    /// Files of this process open under `dir`, counted from /proc/self/fd: the cache's
    /// own count could be wrong in the same way as what it counts.
    fn open_under(dir: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir))
            .count()
    }

    /// Reads 4 bytes of a file `state` picks (the next xorshift value), at an offset it
    /// picks, and checks they are that file's bytes (see [`files`]).
    fn read_checked(parts: &[PartFile], state: &mut u64) {
        let pick = crate::part::tests::xorshift(state);
        let i = (pick % parts.len() as u64) as usize;
        let offset = (pick >> 32) % 60;
        let mut buf = [0u8; 4];
        parts[i].read_exact_at(&mut buf, offset).unwrap();
        let want: Vec<u8> = (0..4)
            .map(|k| (i * 64 + offset as usize + k) as u8)
            .collect();
        assert_eq!(buf.to_vec(), want, "file {i} at {offset}");
    }

    #[test]
    fn reads_stay_right_while_at_most_the_budget_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 40);
        let cache = PartFiles::new(BUDGET_MIN);
        let parts: Vec<PartFile> = paths.iter().map(|p| adopt(&cache, p)).collect();
        assert_eq!(open_under(dir.path()), BUDGET_MIN);
        // A seeded walk over the files: every read gives that file's bytes, and never
        // more than the budget is open.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..2_000 {
            read_checked(&parts, &mut state);
            assert!(open_under(dir.path()) <= BUDGET_MIN);
        }
        let stats = cache.stats();
        assert_eq!(stats.open, BUDGET_MIN);
        assert!(stats.reopens > 1_000, "{stats:?}");
        drop(parts);
        assert_eq!(open_under(dir.path()), 0);
        assert_eq!(cache.stats().open, 0);
    }

    #[test]
    fn threads_reading_while_files_close_read_right() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 48);
        let cache = PartFiles::new(BUDGET_MIN);
        let parts: Vec<PartFile> = paths.iter().map(|p| adopt(&cache, p)).collect();
        std::thread::scope(|scope| {
            for seed in 1..=4u64 {
                let parts = &parts;
                scope.spawn(move || {
                    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    for _ in 0..5_000 {
                        read_checked(parts, &mut state);
                    }
                });
            }
        });
        // Four readers may each hold one file past the budget for a moment; at rest it is met.
        assert!(cache.stats().open <= BUDGET_MIN + 4, "{:?}", cache.stats());
        assert!(open_under(dir.path()) <= BUDGET_MIN + 4);
        drop(parts);
        assert_eq!(open_under(dir.path()), 0);
    }

    #[test]
    fn files_read_often_stay_open() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 64);
        let cache = PartFiles::new(BUDGET_MIN);
        let parts: Vec<PartFile> = paths.iter().map(|p| adopt(&cache, p)).collect();
        let mut buf = [0u8; 1];
        // Files 0..4 are read between every other read: the sweep finds them used.
        for round in 0..10 {
            for i in 4..64 {
                for hot in &parts[..4] {
                    hot.read_exact_at(&mut buf, 0).unwrap();
                }
                parts[(i + round) % 60 + 4]
                    .read_exact_at(&mut buf, 0)
                    .unwrap();
            }
        }
        for (i, hot) in parts[..4].iter().enumerate() {
            assert!(hot.is_open(), "hot file {i} was closed");
        }
    }

    #[test]
    fn a_pinned_file_is_read_after_its_unlink() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 40);
        let cache = PartFiles::new(BUDGET_MIN);
        let parts: Vec<PartFile> = paths.iter().map(|p| adopt(&cache, p)).collect();
        // File 0 was closed to make room for the later ones.
        assert!(!parts[0].is_open());
        parts[0].pin_open().unwrap();
        std::fs::remove_file(&paths[0]).unwrap();
        let mut buf = [0u8; 1];
        for part in &parts[1..] {
            part.read_exact_at(&mut buf, 0).unwrap();
        }
        assert!(parts[0].is_open());
        parts[0].read_exact_at(&mut buf, 10).unwrap();
        assert_eq!(buf, [10]);
        // An unpinned file closed by the sweep is gone with its unlink.
        assert!(!parts[1].is_open());
        std::fs::remove_file(&paths[1]).unwrap();
        let err = parts[1].read_exact_at(&mut buf, 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn files_being_written_share_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 20);
        let cache = PartFiles::new(BUDGET_MIN);
        let parts: Vec<PartFile> = paths.iter().map(|p| adopt(&cache, p)).collect();
        assert_eq!(open_under(dir.path()), BUDGET_MIN);
        let tickets: Vec<OpenFileTicket> = (0..4).map(|_| cache.ticket()).collect();
        assert_eq!(open_under(dir.path()), BUDGET_MIN - 4);
        assert_eq!(cache.stats().open, BUDGET_MIN);
        drop(tickets);
        assert_eq!(cache.stats().open, BUDGET_MIN - 4);
        drop(parts);
    }

    #[test]
    fn parts_that_come_and_go_do_not_grow_the_ring() {
        let dir = tempfile::tempdir().unwrap();
        let paths = files(dir.path(), 4);
        let cache = PartFiles::new(1_000);
        let kept = adopt(&cache, &paths[0]);
        for i in 0..10_000 {
            drop(adopt(&cache, &paths[1 + i % 3]));
        }
        assert_eq!(cache.files.live(), 1);
        let entries = cache.files.ring_len();
        assert!(entries <= 66, "{entries} entries");
        assert_eq!(cache.stats().open, 1);
        drop(kept);
        assert_eq!(cache.stats().open, 0);
    }
}
