//! Fuzz entry points for every file the engine reads back: a WAL segment, a series log, a
//! part, the catalog and a shard manifest. Each takes arbitrary bytes, puts them in place
//! of that file in a small valid data directory, opens the engine on it and reads every
//! table, then runs `strata check` and `strata repair` on it. Whatever the bytes, these must
//! return (an error is fine); a panic, a hang or an allocation beyond the limits is the bug. Used by the cargo-fuzz targets in
//! `fuzz/` and, with seeded mutations, by `tests/suite/fuzz_files.rs` in stable CI.

use std::path::{Path, PathBuf};

use strata_lineproto::Precision;

use crate::engine::{Engine, ReadRequest};
use crate::layout;
use crate::options::EngineOptions;

/// The file a fuzz input replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// The shard's last WAL segment (replayed at open).
    WalSegment,
    /// The shard's series log.
    SeriesLog,
    /// One part named by the manifest (opened at open, every block read after).
    Part,
    /// `catalog.json`.
    Catalog,
    /// The shard's `MANIFEST`.
    Manifest,
}

impl FileKind {
    /// Every kind, in a fixed order (a fuzz input's first byte picks one).
    pub const ALL: [FileKind; 5] = [
        FileKind::WalSegment,
        FileKind::SeriesLog,
        FileKind::Part,
        FileKind::Catalog,
        FileKind::Manifest,
    ];
}

/// A valid data directory to put fuzz inputs into, made once per process and thread.
pub struct Template {
    dir: PathBuf,
    scratch: PathBuf,
}

impl Template {
    /// Writes the template under the system's temporary directory: one shard, two tables,
    /// rows in a part and rows only in the WAL.
    pub fn new() -> Template {
        let base = std::env::temp_dir().join(format!(
            "strata-fuzz-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("template");
        let (engine, _) = Engine::open(options(&dir)).expect("open the template engine");
        let lines = |from: i64, to: i64| -> String {
            (from..to)
                .map(|i| {
                    format!(
                        "cpu,host=h{},dc=d{} usage={}.5,n={i}i,up=true {}\n\
                         mem,host=h{} free={}u,note=\"n{i}\" {}\n",
                        i % 3,
                        i % 2,
                        i * 7 % 100,
                        1_700_000_000_000_000_000 + i * 10_000_000_000,
                        i % 2,
                        i * 3,
                        1_700_000_000_000_000_000 + i * 10_000_000_000,
                    )
                })
                .collect()
        };
        let write = |body: String| {
            engine
                .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
                .expect("write the template");
        };
        write(lines(0, 300));
        engine.flush().expect("flush the template");
        write(lines(300, 340));
        engine.close().expect("close the template");
        Template {
            dir,
            scratch: base.join("run"),
        }
    }

    /// The template's own file of `kind`: the seed a fuzzer starts from.
    pub fn file(&self, kind: FileKind) -> Vec<u8> {
        std::fs::read(path_of(&self.dir, kind)).expect("read a template file")
    }

    /// Opens the engine on the template with `data` in place of its file of `kind`, and
    /// reads every table whole. Returns whether damage was noticed: the open failed, cut a
    /// torn tail or set a part aside, or a read failed.
    pub fn open_with(&self, kind: FileKind, data: &[u8]) -> bool {
        let _ = std::fs::remove_dir_all(&self.scratch);
        copy_dir(&self.dir, &self.scratch);
        std::fs::write(path_of(&self.scratch, kind), data).expect("write the fuzz input");
        let Ok((engine, report)) = Engine::open(options(&self.scratch)) else {
            return true;
        };
        let mut noticed = !report.torn_wal_tails.is_empty() || !report.quarantined.is_empty();
        for database in engine.catalog().databases() {
            for table in engine.catalog().tables(&database) {
                noticed |= engine.read(&ReadRequest::all(table.id)).is_err();
            }
        }
        let _ = engine.close();
        // The offline tools read the same bytes: `check` must report, and `repair` must
        // rebuild or refuse, without a panic either way.
        let dirs = [self.scratch.clone()];
        noticed |= crate::engine::check(&dirs).map_or(true, |report| !report.is_clean());
        let _ = crate::engine::repair(&dirs);
        noticed
    }
}

impl Default for Template {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Template {
    fn drop(&mut self) {
        if let Some(base) = self.dir.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 1,
        background: false,
        ..EngineOptions::default()
    }
}

/// Where the file of `kind` lies in a template-shaped directory.
fn path_of(dir: &Path, kind: FileKind) -> PathBuf {
    let shard = layout::shard_dir(dir, 0);
    let last = |sub: &Path, suffix: &str| -> PathBuf {
        let mut found: Vec<PathBuf> = std::fs::read_dir(sub)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(suffix))
            .collect();
        found.sort();
        found.pop().expect("the template holds the file")
    };
    match kind {
        FileKind::WalSegment => last(&shard.join("wal"), ".wal"),
        FileKind::SeriesLog => shard.join("series").join(crate::series::SERIES_LOG_FILE),
        FileKind::Part => {
            let mut partitions: Vec<PathBuf> = std::fs::read_dir(&shard)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .and_then(layout::parse_partition_dir_name)
                        .is_some()
                })
                .map(|e| e.path())
                .collect();
            partitions.sort();
            last(&partitions[0], ".part")
        }
        FileKind::Catalog => dir.join(crate::catalog::CATALOG_FILE),
        FileKind::Manifest => shard.join(layout::MANIFEST_FILE),
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a scratch directory");
    for entry in std::fs::read_dir(from)
        .expect("list the template")
        .flatten()
    {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != layout::LOCK_FILE {
            // libFuzzer's timer signal can interrupt the copy (seen on a 16-core run).
            while let Err(e) = std::fs::copy(entry.path(), &target) {
                assert!(
                    e.kind() == std::io::ErrorKind::Interrupted,
                    "copy the template: {e}"
                );
            }
        }
    }
}
