//! Damaged parts set aside: a part that fails its checksums (or that its manifest names but
//! is gone) is moved out of the shard and out of its manifest, so that the engine opens and
//! answers from the other parts instead of refusing to start. The rows it held are lost to
//! queries; the file is kept under `quarantine/` for a look (`strata check` lists it).

use std::path::Path;

use crate::error::StorageError;
use crate::fsutil;
use crate::layout;
use crate::manifest::PartEntry;

use super::ShardConfig;

/// A part set aside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuarantinedPart {
    /// Its shard.
    pub shard: usize,
    /// Its time partition.
    pub partition: i64,
    /// Its id.
    pub id: u64,
    /// Rows it held, by its manifest entry.
    pub rows: u64,
    /// Where the file went (`None` when it was missing).
    pub moved_to: Option<std::path::PathBuf>,
    /// What was wrong with it.
    pub reason: String,
}

impl std::fmt::Display for QuarantinedPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "part {} of shard {}, partition {} ({} rows): {}",
            self.id, self.shard, self.partition, self.rows, self.reason
        )?;
        match &self.moved_to {
            Some(path) => write!(f, "; moved to {}", path.display()),
            None => write!(f, "; the file was missing"),
        }
    }
}

/// Whether `error`, met opening or reading a part, means the part itself is damaged (as
/// opposed to the machine failing to read it: those errors are not the file's fault).
pub(crate) fn is_damage(error: &StorageError) -> bool {
    match error {
        StorageError::Corrupt { .. } => true,
        StorageError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    }
}

/// Moves the part of `entry` (at `path`) into the quarantine directory of its data
/// directory. The caller removes it from the manifest afterwards: a crash in between leaves
/// a manifest naming a missing part, which the next open sets aside in turn.
pub(crate) fn set_aside(
    config: &ShardConfig,
    entry: &PartEntry,
    path: &Path,
    error: &StorageError,
) -> Result<QuarantinedPart, StorageError> {
    let data_dir = &config.data_dirs[entry.dir];
    let target = layout::quarantine_path(data_dir, config.id, entry.partition, entry.id);
    let moved_to = if path.exists() {
        let dir = target.parent().unwrap_or(data_dir);
        fsutil::create_dir_all_durable(dir)
            .map_err(|e| StorageError::io("cannot create quarantine directory", dir, e))?;
        std::fs::rename(path, &target)
            .map_err(|e| StorageError::io("cannot move damaged part to", &target, e))?;
        fsutil::sync_dir(dir)
            .map_err(|e| StorageError::io("cannot sync quarantine directory", dir, e))?;
        Some(target)
    } else {
        None
    };
    Ok(QuarantinedPart {
        shard: config.id,
        partition: entry.partition,
        id: entry.id,
        rows: entry.rows,
        moved_to,
        reason: error.to_string(),
    })
}

impl super::Shard {
    /// Sets aside the live part at `path` after a read found it damaged (`error`): out of
    /// the manifest and the live set, its file moved to the quarantine directory. Readers
    /// that hold it keep their open file; later reads go without it. `None` when no live
    /// part of this shard lies at `path` (another call set it aside first).
    pub(crate) fn set_aside_live_part(
        &self,
        path: &Path,
        error: &StorageError,
    ) -> Result<Option<QuarantinedPart>, StorageError> {
        let mut manifest = self.manifest.lock();
        let found = manifest.parts.iter().position(|entry| {
            layout::part_path(
                &self.config.data_dirs[entry.dir],
                self.config.id,
                entry.partition,
                entry.id,
            ) == path
        });
        let Some(index) = found else {
            return Ok(None);
        };
        let entry = manifest.parts[index].clone();
        let set_aside = set_aside(&self.config, &entry, path, error)?;
        let mut next = manifest.clone();
        next.parts.remove(index);
        next.store(&self.config.home().join(layout::MANIFEST_FILE))?;
        *manifest = next;
        {
            let mut state = self.state.lock();
            let parts: Vec<super::LivePart> = state
                .parts
                .iter()
                .filter(|p| p.entry.id != entry.id || p.entry.partition != entry.partition)
                .cloned()
                .collect();
            self.publish_parts(&mut state, parts);
        }
        drop(manifest);
        self.invalidate_latest();
        self.series_may_be_empty();
        Ok(Some(set_aside))
    }
}
