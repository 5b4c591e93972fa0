//! `strata repair`: rebuilds a stopped engine's metadata files from what its data files
//! hold, for when `strata check` finds one of them damaged or missing:
//!
//! - a shard's `MANIFEST`, from the recovery sections of its part files (format 3: each part
//!   records its precedence order, level, applied tombstones and the parts it replaced);
//! - a shard's series log, from the records of the old log that still check, the series
//!   keys in its parts and the series its WAL creates (`repair_series.rs`);
//! - `catalog.json`, from the table and field names in the parts, the tag keys of the
//!   series and the field types in the WAL (`repair_catalog.rs`).
//!
//! A file that loads is left as it is. A damaged one is renamed `<name>.damaged` beside its
//! replacement, never deleted. What cannot be rebuilt is reported, never guessed silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::check::{lock_stopped, shard_dirs_present};
use super::repair_catalog::{self, CatalogFacts};
use super::repair_series;
use super::{ENGINE_KIND, ENGINE_VERSION, EngineMeta};
use crate::checked_json;
use crate::error::StorageError;
use crate::fsutil;
use crate::layout;
use crate::manifest::{Manifest, PartEntry};
use crate::part::{PartReader, PartRecovery};

/// Part ids skipped past the highest one found when a manifest is rebuilt: parts merged
/// away or expired may have had higher ids, and a part id must never name two files (a
/// backup directory keeps a file whose id and size it already holds).
pub const PART_ID_MARGIN: u64 = 1 << 20;

/// What [`repair`] did and found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RepairReport {
    /// Files rebuilt, one line each.
    pub rebuilt: Vec<String>,
    /// What could not be recovered, one line each.
    pub lost: Vec<String>,
    /// Everything else worth knowing (files that were fine, damaged parts set aside).
    pub notes: Vec<String>,
}

/// A part file found on disk that opens.
pub(super) struct FoundPart {
    pub dir: usize,
    pub partition: i64,
    pub id: u64,
    pub reader: PartReader,
    /// `None` for parts written before format 3.
    pub recovery: Option<PartRecovery>,
}

/// Rebuilds what is damaged or missing among the metadata files of the engine in
/// `data_dirs` (as given to `strata serve`), which must not be open (the directories are
/// locked first).
pub fn repair(data_dirs: &[PathBuf]) -> Result<RepairReport, StorageError> {
    let (first, _locks) = lock_stopped(data_dirs)?;
    let mut report = RepairReport::default();
    let shards = engine_shards(first, &mut report)?;
    let mut facts = CatalogFacts::default();
    for shard in 0..shards {
        let parts = repair_manifest(data_dirs, shard, &mut report)?;
        for part in &parts {
            if let Some(recovery) = &part.recovery {
                facts.add_part(recovery);
            }
        }
        let home = layout::shard_dir(
            &data_dirs[layout::home_dir_index(shard, data_dirs.len())],
            shard,
        );
        repair_series::repair_shard(&home, shard, &parts, &mut facts, &mut report)?;
    }
    repair_catalog::repair(first, &facts, &mut report)?;
    Ok(report)
}

/// The shard count from `ENGINE`, or from the shard directories present when it is
/// damaged (then rewritten).
fn engine_shards(first: &Path, report: &mut RepairReport) -> Result<usize, StorageError> {
    let path = first.join(layout::ENGINE_FILE);
    match checked_json::read::<EngineMeta>(&path, ENGINE_KIND, ENGINE_VERSION) {
        Ok(Some(meta)) => Ok(meta.shards),
        Ok(None) => Err(StorageError::Invalid(format!(
            "{} has no {} file: not a Strata data directory",
            first.display(),
            layout::ENGINE_FILE
        ))),
        Err(e) => {
            let shards = shard_dirs_present(first);
            if shards == 0 {
                return Err(e);
            }
            set_damaged_aside(&path)?;
            checked_json::write(&path, ENGINE_KIND, ENGINE_VERSION, &EngineMeta { shards })?;
            report.rebuilt.push(format!(
                "{}: {shards} shards, from the shard directories ({e})",
                path.display()
            ));
            Ok(shards)
        }
    }
}

/// Loads shard `shard`'s manifest, rebuilding it from the part files when it is damaged or
/// missing; returns the live parts, opened.
fn repair_manifest(
    data_dirs: &[PathBuf],
    shard: usize,
    report: &mut RepairReport,
) -> Result<Vec<FoundPart>, StorageError> {
    let home = layout::shard_dir(
        &data_dirs[layout::home_dir_index(shard, data_dirs.len())],
        shard,
    );
    let path = home.join(layout::MANIFEST_FILE);
    let found = open_part_files(data_dirs, shard, report)?;
    let loaded = if path.exists() {
        Manifest::load(&path).map_err(|e| e.to_string())
    } else if found.is_empty() {
        Ok(Manifest::default())
    } else {
        Err("missing".to_owned())
    };
    match loaded {
        Ok(manifest) => {
            let named: BTreeSet<(i64, u64)> =
                manifest.parts.iter().map(|p| (p.partition, p.id)).collect();
            let live = found
                .into_iter()
                .filter(|p| named.contains(&(p.partition, p.id)))
                .collect();
            Ok(live)
        }
        Err(why) => {
            let (manifest, live, legacy) = rebuild_manifest(found);
            if path.exists() {
                set_damaged_aside(&path)?;
            }
            fsutil::create_dir_all_durable(&home)
                .map_err(|e| StorageError::io("cannot create shard directory", &home, e))?;
            manifest.store(&path)?;
            report.rebuilt.push(format!(
                "{}: {} parts holding {} rows, from the part files ({why}); partitions \
                 released to a lake (only the manifest records them) stay in the lake but \
                 reads no longer see them",
                path.display(),
                manifest.parts.len(),
                manifest.parts.iter().map(|p| p.rows).sum::<u64>()
            ));
            if legacy > 0 {
                report.lost.push(format!(
                    "shard {shard}: {legacy} parts were written before format 3 and record no \
                     precedence: their order is taken from their file ids, so where they \
                     overlap another part the newer write may not win"
                ));
            }
            Ok(live)
        }
    }
}

/// Opens every part file of `shard`; a damaged one is moved to `quarantine/` and reported.
fn open_part_files(
    data_dirs: &[PathBuf],
    shard: usize,
    report: &mut RepairReport,
) -> Result<Vec<FoundPart>, StorageError> {
    let listing = layout::list_partitions(data_dirs, shard).map_err(|e| {
        StorageError::io(
            "cannot list partitions",
            &layout::shard_dir(&data_dirs[0], shard),
            e,
        )
    })?;
    let mut found = Vec::new();
    for partition in listing {
        for (path, id) in partition.files {
            let Some(id) = id else { continue };
            let opened = PartReader::open(&path).and_then(|reader| {
                let recovery = reader.read_recovery()?;
                Ok((reader, recovery))
            });
            match opened {
                Ok((reader, recovery)) => found.push(FoundPart {
                    dir: partition.dir_index,
                    partition: partition.partition,
                    id,
                    reader,
                    recovery,
                }),
                Err(StorageError::Corrupt { reason, .. }) => {
                    let to = layout::quarantine_path(
                        &data_dirs[partition.dir_index],
                        shard,
                        partition.partition,
                        id,
                    );
                    move_file(&path, &to)?;
                    report.lost.push(format!(
                        "{}: damaged ({reason}); its rows are lost, the file moved to {}",
                        path.display(),
                        to.display()
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(found)
}

/// The manifest the parts describe: every part no other part replaced, at the order, level
/// and applied tombstones it recorded. Returns it, the live parts, and how many of them
/// predate format 3 (order taken from the file id).
fn rebuild_manifest(found: Vec<FoundPart>) -> (Manifest, Vec<FoundPart>, usize) {
    let replaced: BTreeSet<(i64, u64)> = found
        .iter()
        .filter_map(|p| Some((p.partition, p.recovery.as_ref()?)))
        .flat_map(|(partition, r)| r.provenance.replaces.iter().map(move |id| (partition, *id)))
        .collect();
    let highest_id = found
        .iter()
        .map(|p| p.id)
        .chain(replaced.iter().map(|(_, id)| *id))
        .max();
    let live: Vec<FoundPart> = found
        .into_iter()
        .filter(|p| !replaced.contains(&(p.partition, p.id)))
        .collect();
    let mut legacy = 0;
    let mut by_id = BTreeMap::new();
    for part in &live {
        let s = part.reader.summary();
        let (order, level, tombstones_applied) = match &part.recovery {
            Some(r) => (
                r.provenance.order,
                r.provenance.level,
                r.provenance.tombstones_applied,
            ),
            None => {
                legacy += 1;
                (part.id, 0, 0)
            }
        };
        by_id.insert(
            (part.partition, part.id),
            PartEntry {
                id: part.id,
                order,
                partition: part.partition,
                dir: part.dir,
                series: u64::from(s.series),
                rows: s.rows,
                points: s.points,
                bytes: s.file_bytes,
                min_time: s.min_time,
                max_time: s.max_time,
                level,
                tombstones_applied,
            },
        );
    }
    let parts: Vec<PartEntry> = by_id.into_values().collect();
    let manifest = Manifest {
        next_part_id: highest_id.map_or(0, |id| id + 1 + PART_ID_MARGIN),
        next_order: parts.iter().map(|p| p.order + 1).max().unwrap_or(0),
        parts,
        // Not recoverable from the part files: see the report's note.
        tiered: Vec::new(),
    };
    (manifest, live, legacy)
}

/// Renames a damaged metadata file to `<name>.damaged` (replacing an older one), so that
/// its replacement takes its place and the bytes stay for a look.
pub(super) fn set_damaged_aside(path: &Path) -> Result<(), StorageError> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".damaged");
    move_file(path, Path::new(&aside))
}

/// Renames `from` to `to` (creating `to`'s directory), both directories made durable.
fn move_file(from: &Path, to: &Path) -> Result<(), StorageError> {
    if let Some(parent) = to.parent() {
        fsutil::create_dir_all_durable(parent)
            .map_err(|e| StorageError::io("cannot create directory", parent, e))?;
    }
    std::fs::rename(from, to).map_err(|e| StorageError::io("cannot move", from, e))?;
    for dir in [from.parent(), to.parent()].into_iter().flatten() {
        fsutil::sync_dir(dir).map_err(|e| StorageError::io("cannot sync directory", dir, e))?;
    }
    Ok(())
}
