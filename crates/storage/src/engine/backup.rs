//! Backups of a running engine, and restoring one into a new data directory.
//!
//! A backup is a data directory of its own, with one data directory's layout (every part
//! under the backup's `shard-<k>/p<partition>/`), plus a `BACKUP` file written last:
//!
//! ```text
//! <backup>/BACKUP                       what was taken, when (checked JSON; its absence
//!                                       means the backup did not finish)
//! <backup>/ENGINE, catalog.json         copies
//! <backup>/shard-<k>/MANIFEST           the shard's parts at the backup, all in directory 0
//! <backup>/shard-<k>/series/series.log  copy (may end in a torn record: cut when opened)
//! <backup>/shard-<k>/p<n>/<id>.part     hard links to the live parts (copies across
//!                                       file systems)
//! ```
//!
//! Consistency without stopping writes: every memtable is flushed first, so every row
//! acknowledged before the backup started is in a part; then, shard by shard under the
//! manifest lock (no flush or merge changes the shard's parts meanwhile), its parts are
//! linked or copied with its series log and manifest; the catalog is copied last, so it
//! names every table and series those parts use. Rows written during the backup may be in
//! it or not; no row is torn (parts are immutable and complete). No WAL is needed: what
//! the WAL held at the start is in the flushed parts.
//!
//! Incremental: a part file already in the target with the same size is kept (part files
//! never change once written, and their ids are never reused in a shard), so a second
//! backup into the same directory copies only the parts written since, and deletes the
//! ones merged away.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use super::{ENGINE_KIND, ENGINE_VERSION, EngineMeta};
use crate::catalog::CATALOG_FILE;
use crate::checked_json;
use crate::error::StorageError;
use crate::layout;
use crate::manifest::Manifest;
use crate::series::SERIES_LOG_FILE;

use super::Engine;

/// Name of the file that marks a finished backup.
pub const BACKUP_FILE: &str = "BACKUP";
const BACKUP_KIND: &str = "backup";
const BACKUP_VERSION: u32 = 1;

/// What a backup took (also the body of its `BACKUP` file).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupReport {
    /// When it was taken (engine clock, ns since the epoch).
    pub created_ns: i64,
    /// Shards.
    pub shards: usize,
    /// Parts in the backup.
    pub parts: u64,
    /// Rows in those parts.
    pub rows: u64,
    /// Bytes of those parts.
    pub part_bytes: u64,
    /// Parts hard-linked or copied by this backup (the others were already there).
    pub parts_new: u64,
    /// Bytes copied (not hard-linked) by this backup, metadata included.
    pub bytes_copied: u64,
    /// Part files of an earlier backup in the same directory removed (merged away since).
    pub parts_removed: u64,
}

impl Engine {
    /// Takes a backup into `target` (created if needed; an earlier backup there is brought
    /// up to date, copying only new parts) without stopping writes. See the module docs
    /// for what it holds.
    pub fn backup(&self, target: &Path) -> Result<BackupReport, StorageError> {
        crate::fsutil::create_dir_all_durable(target)
            .map_err(|e| StorageError::io("cannot create backup directory", target, e))?;
        // An unfinished backup must not look finished: the marker goes first and comes
        // back last.
        remove_if_present(&target.join(BACKUP_FILE))?;
        // Before the first manifest is read: no tombstone a copied part is subject to may
        // leave the catalog before the catalog is copied (see `purge_shard`).
        let _running = BackupRunning::start(&self.inner.backups_running);
        self.flush()?;
        let mut report = BackupReport {
            created_ns: self.now_ns(),
            shards: self.inner.shards.len(),
            ..BackupReport::default()
        };
        for shard in &self.inner.shards {
            let manifest = shard.manifest.lock();
            let home = shard.config.home();
            let out = layout::shard_dir(target, shard.config.id);
            let mut copy = manifest.clone();
            let mut wanted: Vec<PathBuf> = Vec::new();
            for entry in &mut copy.parts {
                let from = layout::part_path(
                    &shard.config.data_dirs[entry.dir],
                    shard.config.id,
                    entry.partition,
                    entry.id,
                );
                let to = layout::part_path(target, shard.config.id, entry.partition, entry.id);
                if !same_size(&to, entry.bytes) {
                    report.bytes_copied += link_or_copy(&from, &to)?;
                    report.parts_new += 1;
                }
                entry.dir = 0;
                report.parts += 1;
                report.rows += entry.rows;
                report.part_bytes += entry.bytes;
                wanted.push(to);
            }
            report.parts_removed += remove_other_parts(&out, &wanted)?;
            let series_from = home.join("series").join(SERIES_LOG_FILE);
            let series_to = out.join("series").join(SERIES_LOG_FILE);
            report.bytes_copied += copy_file(&series_from, &series_to)?;
            copy.store(&out.join(layout::MANIFEST_FILE))?;
        }
        let first = &self.inner.options.data_dirs[0];
        report.bytes_copied += copy_file(&first.join(CATALOG_FILE), &target.join(CATALOG_FILE))?;
        report.bytes_copied += copy_file(
            &first.join(layout::ENGINE_FILE),
            &target.join(layout::ENGINE_FILE),
        )?;
        crate::fsutil::sync_dir(target)
            .map_err(|e| StorageError::io("cannot sync backup directory", target, e))?;
        checked_json::write(
            &target.join(BACKUP_FILE),
            BACKUP_KIND,
            BACKUP_VERSION,
            &report,
        )?;
        Ok(report)
    }
}

/// Counts a backup as running from `start` until dropped (on every way out).
struct BackupRunning<'a>(&'a AtomicUsize);

impl<'a> BackupRunning<'a> {
    fn start(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        BackupRunning(count)
    }
}

impl Drop for BackupRunning<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Restores the backup in `from` into the new data directory `to` (which must not exist
/// or be empty): copies its files, then opens the result once to check it.
pub fn restore(from: &Path, to: &Path) -> Result<BackupReport, StorageError> {
    let report: BackupReport =
        checked_json::read(&from.join(BACKUP_FILE), BACKUP_KIND, BACKUP_VERSION)?.ok_or_else(
            || {
                StorageError::Invalid(format!(
                    "{} is not a finished backup (no {BACKUP_FILE} file)",
                    from.display()
                ))
            },
        )?;
    if std::fs::read_dir(to).is_ok_and(|mut d| d.next().is_some()) {
        return Err(StorageError::Invalid(format!(
            "{} is not empty: restore into a new data directory",
            to.display()
        )));
    }
    let meta: EngineMeta =
        checked_json::read(&from.join(layout::ENGINE_FILE), ENGINE_KIND, ENGINE_VERSION)?
            .ok_or_else(|| {
                StorageError::Invalid(format!("{} has no ENGINE file", from.display()))
            })?;
    copy_file(
        &from.join(layout::ENGINE_FILE),
        &to.join(layout::ENGINE_FILE),
    )?;
    copy_file(&from.join(CATALOG_FILE), &to.join(CATALOG_FILE))?;
    for shard in 0..meta.shards {
        let source = layout::shard_dir(from, shard);
        let manifest = Manifest::load(&source.join(layout::MANIFEST_FILE))?;
        for entry in &manifest.parts {
            copy_file(
                &layout::part_path(from, shard, entry.partition, entry.id),
                &layout::part_path(to, shard, entry.partition, entry.id),
            )?;
        }
        let target = layout::shard_dir(to, shard);
        copy_file(
            &source.join("series").join(SERIES_LOG_FILE),
            &target.join("series").join(SERIES_LOG_FILE),
        )?;
        manifest.store(&target.join(layout::MANIFEST_FILE))?;
    }
    // Open once: a damaged backup is found now, not at the first start.
    let options = crate::EngineOptions {
        data_dirs: vec![to.to_path_buf()],
        shards: meta.shards,
        background: false,
        ..crate::EngineOptions::default()
    };
    let (engine, _) = Engine::open(options)?;
    engine.close()?;
    Ok(report)
}

fn same_size(path: &Path, bytes: u64) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == bytes)
}

/// Hard-links `from` to `to` (replacing it), or copies it when linking fails (another
/// file system); returns the bytes copied (0 for a link). Either way the new name is
/// durable on return (the part's bytes already were).
fn link_or_copy(from: &Path, to: &Path) -> Result<u64, StorageError> {
    let parent = to.parent().unwrap_or(Path::new("."));
    crate::fsutil::create_dir_all_durable(parent)
        .map_err(|e| StorageError::io("cannot create directory", parent, e))?;
    remove_if_present(to)?;
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            crate::fsutil::sync_dir(parent)
                .map_err(|e| StorageError::io("cannot sync directory", parent, e))?;
            Ok(0)
        }
        Err(_) => copy_file(from, to),
    }
}

/// Copies `from` to `to` durably (written to a temporary name, fsynced, renamed).
fn copy_file(from: &Path, to: &Path) -> Result<u64, StorageError> {
    if let Some(parent) = to.parent() {
        crate::fsutil::create_dir_all_durable(parent)
            .map_err(|e| StorageError::io("cannot create directory", parent, e))?;
    }
    let bytes = std::fs::read(from).map_err(|e| StorageError::io("cannot read", from, e))?;
    crate::fsutil::write_atomic(to, &bytes).map_err(|e| StorageError::io("cannot write", to, e))?;
    Ok(bytes.len() as u64)
}

fn remove_if_present(path: &Path) -> Result<(), StorageError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io("cannot remove", path, e)),
    }
}

/// Removes the part files under a backup's shard directory that are not in `wanted`;
/// returns how many.
fn remove_other_parts(shard_dir: &Path, wanted: &[PathBuf]) -> Result<u64, StorageError> {
    let mut removed = 0;
    let Ok(partitions) = std::fs::read_dir(shard_dir) else {
        return Ok(0);
    };
    for partition in partitions.flatten() {
        let name = partition.file_name();
        let is_partition = name
            .to_str()
            .is_some_and(|n| layout::parse_partition_dir_name(n).is_some());
        if !is_partition {
            continue;
        }
        let Ok(files) = std::fs::read_dir(partition.path()) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if !wanted.contains(&path) {
                remove_if_present(&path)?;
                removed += 1;
            }
        }
        let _ = std::fs::remove_dir(partition.path()); // only when now empty
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use strata_lineproto::Precision;

    use crate::engine::{DeleteRequest, Engine};
    use crate::options::EngineOptions;

    /// While a backup runs, purges still rewrite parts but retire no tombstone: the
    /// backup's manifests, copied one shard at a time, may hold parts a tombstone applies
    /// to, and its catalog, copied last, must still hold that tombstone. (The power-cut
    /// torture found a backup restoring deleted rows this way.)
    #[test]
    fn no_tombstone_is_retired_while_a_backup_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(EngineOptions {
            data_dirs: vec![dir.path().to_path_buf()],
            shards: 2,
            background: false,
            ..EngineOptions::default()
        })
        .unwrap();
        let lines: String = (0..20)
            .map(|i: i64| format!("m,host=h{} v={i}i {}\n", i % 4, 1_000_000_000 * (i + 1)))
            .collect();
        engine
            .write_lines("db", lines.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        engine.flush().unwrap();
        let table = engine.catalog().table_id("db", "m").unwrap();
        engine
            .delete(&DeleteRequest {
                table,
                start: 0,
                end: 5_000_000_000,
                predicate: None,
            })
            .unwrap();
        let pending = || engine.inner.catalog.tombstones().snapshot().len();
        assert_eq!(pending(), 1);

        engine.inner.backups_running.fetch_add(1, Ordering::SeqCst);
        engine.compact().unwrap();
        assert_eq!(pending(), 1, "retired while a backup runs");
        engine.inner.backups_running.fetch_sub(1, Ordering::SeqCst);
        engine.compact().unwrap();
        assert_eq!(pending(), 0, "retired once the backup is over");
        engine.close().unwrap();
    }
}
