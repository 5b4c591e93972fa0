//! `strata check`: every file of a stopped engine's data directories read and verified,
//! changing nothing. Opening the engine checks headers, indexes and the WAL too, but reads
//! part blocks only when a query needs them; this reads every block of every part (each
//! with its CRC32), and reports all the damage it finds instead of stopping at the first.

use std::collections::HashSet;
use std::fmt::Display;
use std::path::{Path, PathBuf};

use super::{ENGINE_KIND, ENGINE_VERSION, EngineMeta};
use crate::catalog::Catalog;
use crate::checked_json;
use crate::dir_lock::DirLocks;
use crate::error::StorageError;
use crate::layout;
use crate::manifest::{Manifest, PartEntry};
use crate::part::PartReader;
use crate::series::SeriesIndex;

/// What [`check`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// Files read whole.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Parts read, every block.
    pub parts: u64,
    /// Rows in them.
    pub rows: u64,
    /// Live series in the series logs.
    pub series: u64,
    /// WAL records (not yet flushed to parts).
    pub wal_records: u64,
    /// Damage, one line each naming the file: the engine would refuse to open, or a query
    /// would fail, on each of these.
    pub problems: Vec<String>,
    /// Not damage: torn tails left by a crash (cut at the next start) and leftover files of
    /// interrupted flushes and merges (removed at the next start).
    pub notes: Vec<String>,
}

/// Verifies every file of the engine in `data_dirs` (as given to `strata serve`): the
/// engine meta file, the catalog, and per shard its manifest, every block of every part it
/// names (row counts against the manifest), its series log and its WAL. The directories are
/// locked first, so a running server's directory is refused ([`StorageError::InUse`]).
pub fn check(data_dirs: &[PathBuf]) -> Result<CheckReport, StorageError> {
    let (first, _locks) = lock_stopped(data_dirs)?;
    let mut report = CheckReport::default();
    let meta_path = first.join(layout::ENGINE_FILE);
    let shards = match checked_json::read::<EngineMeta>(&meta_path, ENGINE_KIND, ENGINE_VERSION) {
        Ok(Some(meta)) => {
            report.count_file(&meta_path);
            meta.shards
        }
        Ok(None) => {
            return Err(StorageError::Invalid(format!(
                "{} has no {} file: not a Strata data directory",
                first.display(),
                layout::ENGINE_FILE
            )));
        }
        Err(e) => {
            report.problem(&meta_path, e);
            shard_dirs_present(first)
        }
    };
    let catalog_path = first.join(crate::catalog::CATALOG_FILE);
    match Catalog::open(first) {
        Ok(_) if catalog_path.exists() => report.count_file(&catalog_path),
        Ok(_) => {
            if let Err(e) = super::refuse_lost_catalog(data_dirs, shards) {
                report.problem(&catalog_path, e);
            }
        }
        Err(e) => report.problem(&catalog_path, e),
    }
    for shard in 0..shards {
        check_shard(data_dirs, shard, &mut report);
    }
    for dir in data_dirs {
        note_quarantined(dir, &mut report);
    }
    Ok(report)
}

/// Parts an engine set aside as damaged (`shard/quarantine.rs`): not damage any more (no
/// manifest names them), but rows lost to queries, worth a line.
fn note_quarantined(data_dir: &Path, report: &mut CheckReport) {
    let Ok(shards) = std::fs::read_dir(layout::quarantine_dir(data_dir)) else {
        return;
    };
    let mut found: Vec<PathBuf> = shards
        .flatten()
        .filter_map(|shard| std::fs::read_dir(shard.path()).ok())
        .flat_map(|files| files.flatten().map(|f| f.path()))
        .collect();
    found.sort();
    for path in found {
        report.notes.push(format!(
            "{}: a damaged part the server set aside; its rows are not queried",
            path.display()
        ));
    }
}

impl CheckReport {
    /// True when no damage was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, path: &Path, error: impl Display) {
        let text = error.to_string();
        // Most errors name their file already.
        if text.contains(&path.display().to_string()) {
            self.problems.push(text);
        } else {
            self.problems.push(format!("{}: {text}", path.display()));
        }
    }

    fn count_file(&mut self, path: &Path) {
        self.files += 1;
        self.bytes += std::fs::metadata(path).map_or(0, |m| m.len());
    }
}

/// Locks the existing data directories of a stopped engine for an offline tool (`check`,
/// `repair`); returns the first. A running server's are refused ([`StorageError::InUse`]).
pub(super) fn lock_stopped(data_dirs: &[PathBuf]) -> Result<(&Path, DirLocks), StorageError> {
    let Some(first) = data_dirs.first() else {
        return Err(StorageError::Invalid("no data directory given".into()));
    };
    for dir in data_dirs {
        if !dir.is_dir() {
            return Err(StorageError::Invalid(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
    }
    Ok((first, DirLocks::acquire(data_dirs)?))
}

/// Shard count when the engine meta file is damaged: the `shard-<k>` directories there.
pub(super) fn shard_dirs_present(dir: &Path) -> usize {
    (0..)
        .take_while(|&k| layout::shard_dir(dir, k).is_dir())
        .count()
}

fn check_shard(data_dirs: &[PathBuf], shard: usize, report: &mut CheckReport) {
    let home = layout::shard_dir(
        &data_dirs[layout::home_dir_index(shard, data_dirs.len())],
        shard,
    );
    let manifest_path = home.join(layout::MANIFEST_FILE);
    match Manifest::load(&manifest_path) {
        Ok(manifest) => {
            if manifest_path.exists() {
                report.count_file(&manifest_path);
            }
            for entry in &manifest.parts {
                let Some(dir) = data_dirs.get(entry.dir) else {
                    report.problem(
                        &manifest_path,
                        format!(
                            "part {} is on data directory {}, which was not given",
                            entry.id, entry.dir
                        ),
                    );
                    continue;
                };
                let path = layout::part_path(dir, shard, entry.partition, entry.id);
                check_part(&path, entry, report);
            }
            note_leftover_parts(data_dirs, shard, &manifest_path, &manifest, report);
        }
        Err(e) => report.problem(&manifest_path, e),
    }
    let series_dir = home.join("series");
    let series_log = series_dir.join(crate::series::SERIES_LOG_FILE);
    let has_parts = Manifest::load(&manifest_path).is_ok_and(|m| !m.parts.is_empty());
    if !series_log.exists() && has_parts {
        report.problem(
            &series_log,
            "missing while the manifest names parts: `strata repair` rebuilds it from them",
        );
    }
    if series_log.exists() {
        match SeriesIndex::inspect(&series_dir) {
            Ok(opened) => {
                report.count_file(&series_log);
                report.series += opened.series as u64;
                if let Some(torn) = opened.torn_tail {
                    report.notes.push(format!(
                        "{}: torn tail of {} bytes at offset {} (an append a crash cut short; \
                         cut at the next start)",
                        series_log.display(),
                        torn.bytes_cut,
                        torn.offset
                    ));
                }
            }
            Err(e) => report.problem(&series_log, e),
        }
    }
    let wal_dir = home.join("wal");
    if wal_dir.is_dir() {
        match crate::wal::inspect(&wal_dir) {
            Ok(wal) => {
                for id in &wal.segments {
                    report.count_file(&crate::wal::segment_path(&wal_dir, *id));
                }
                report.wal_records += wal.records;
                if let Some(torn) = wal.torn_tail {
                    report.notes.push(format!(
                        "{}: torn tail of {} bytes at offset {} (a write a crash cut short, \
                         never acknowledged as synced; cut at the next start)",
                        torn.path.display(),
                        torn.bytes_cut,
                        torn.offset
                    ));
                }
            }
            Err(e) => report.problem(&wal_dir, e),
        }
    }
}

/// Opens a part (header, index) and decodes every block of every chunk (each block's CRC),
/// then compares its rows with the manifest's count.
fn check_part(path: &Path, entry: &PartEntry, report: &mut CheckReport) {
    let reader = match PartReader::open(path) {
        Ok(reader) => reader,
        Err(e) => return report.problem(path, e),
    };
    let mut rows = 0u64;
    let series: Vec<_> = reader.series_ids().map(|(id, _)| id).collect();
    for id in series {
        let chunks = match reader.chunks(id) {
            Ok(chunks) => chunks,
            Err(e) => return report.problem(path, e),
        };
        for chunk in chunks {
            match reader.read_chunk(&chunk, None) {
                Ok(data) => rows += data.rows() as u64,
                Err(e) => return report.problem(path, e),
            }
        }
    }
    if rows != entry.rows {
        return report.problem(
            path,
            format!("holds {rows} rows; the manifest says {}", entry.rows),
        );
    }
    // Queries never read the recovery section; `strata repair` needs it whole.
    if let Err(e) = reader.read_recovery() {
        return report.problem(path, e);
    }
    report.count_file(path);
    report.parts += 1;
    report.rows += rows;
}

/// Part files of `shard` that its manifest does not name: an interrupted flush or merge
/// left them, and the next start removes them. Without a manifest file they are all its
/// parts, and the engine refuses to start until `strata repair` rebuilds it.
fn note_leftover_parts(
    data_dirs: &[PathBuf],
    shard: usize,
    manifest_path: &Path,
    manifest: &Manifest,
    report: &mut CheckReport,
) {
    let named: HashSet<(usize, i64, u64)> = manifest
        .parts
        .iter()
        .map(|e| (e.dir, e.partition, e.id))
        .collect();
    let Ok(partitions) = layout::list_partitions(data_dirs, shard) else {
        return;
    };
    let mut unnamed = Vec::new();
    for partition in partitions {
        for (path, id) in partition.files {
            let Some(id) = id else { continue };
            if !named.contains(&(partition.dir_index, partition.partition, id)) {
                unnamed.push(path);
            }
        }
    }
    if !manifest_path.exists() && !unnamed.is_empty() {
        return report.problem(
            manifest_path,
            format!(
                "missing, and {} part files are there: `strata repair` rebuilds it from them",
                unnamed.len()
            ),
        );
    }
    for path in unnamed {
        report.notes.push(format!(
            "{}: not in the manifest (left by an interrupted flush or merge; removed at the \
             next start)",
            path.display()
        ));
    }
}
