//! A shard's manifest: the list of its live parts, replaced atomically on every change.
//!
//! Flushes and merges write their part first (fsynced), then a new manifest naming it, and
//! only then delete what it replaced; a crash at any point leaves a manifest that names only
//! complete parts. Part files not named by the manifest are leftovers of such a crash and are
//! deleted at start-up.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checked_json;
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};

/// Kind and version written in the manifest's header.
const MANIFEST_KIND: &str = "manifest";
const MANIFEST_VERSION: u32 = 3;
/// Oldest version still read (1 lacks `tombstones_applied`, 2 lacks `tiered`).
const MANIFEST_OLDEST_VERSION: u32 = 1;

/// One live part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartEntry {
    /// File id, unique within the shard.
    pub id: u64,
    /// Precedence: where the same (series, time) is in several parts, the highest order wins.
    /// A flush gets a new, highest order; a merge of a contiguous run takes the run's highest.
    pub order: u64,
    /// Time partition (time divided by the partition width, floored).
    pub partition: i64,
    /// Index of the data directory holding the file.
    pub dir: usize,
    /// Series in the part.
    pub series: u64,
    /// Rows in the part.
    pub rows: u64,
    /// Present field values in the part.
    pub points: u64,
    /// File size.
    pub bytes: u64,
    /// Smallest row time.
    pub min_time: Timestamp,
    /// Largest row time.
    pub max_time: Timestamp,
    /// How many merges produced it (0 = straight from a flush).
    pub level: u32,
    /// Version 2: the highest tombstone id whose rows the part was written without (0:
    /// none); tombstones up to it never apply to the part (see `catalog/tombstones.rs`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tombstones_applied: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Version 3: one table's rows of one partition that the lake holds instead of local parts
/// (`crates/lake`). Recorded once the lake's commit of the copy was acknowledged, before
/// the local parts holding those rows are released; reads then take the partition's rows
/// of the table from the lake, under the shard's remaining parts (late writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TieredCopy {
    /// The partition.
    pub partition: i64,
    /// The table.
    pub table: TableId,
    /// The highest part order the copy holds: parts of the partition up to it are in the
    /// copy; later ones (late writes) are read over it.
    pub order: u64,
    /// The highest tombstone id the copy was written without: tombstones up to it never
    /// apply to the copy's rows.
    pub tombstone: u64,
}

/// The manifest of one shard.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Next part file id.
    pub next_part_id: u64,
    /// Next precedence order for a flush.
    pub next_order: u64,
    /// Live parts, in no particular order.
    pub parts: Vec<PartEntry>,
    /// Version 3: the copies in the lake that reads take rows from, by partition then
    /// table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiered: Vec<TieredCopy>,
}

impl Manifest {
    /// A new part file id, kept from every later one whether or not this manifest is
    /// stored with it (an unstored id is an orphan's at most, removed at the next start).
    pub fn take_part_id(&mut self) -> u64 {
        let id = self.next_part_id;
        self.next_part_id += 1;
        id
    }

    /// Loads the manifest at `path`; an absent file is an empty manifest.
    pub fn load(path: &Path) -> Result<Self, StorageError> {
        let found = checked_json::read_versions(
            path,
            MANIFEST_KIND,
            MANIFEST_OLDEST_VERSION..=MANIFEST_VERSION,
        )?;
        Ok(found.map(|(_, manifest)| manifest).unwrap_or_default())
    }

    /// Replaces the manifest at `path` atomically and durably.
    pub fn store(&self, path: &Path) -> Result<(), StorageError> {
        checked_json::write(path, MANIFEST_KIND, MANIFEST_VERSION, self)
    }

    /// Live parts of `partition`, oldest precedence first.
    pub fn partition_parts(&self, partition: i64) -> Vec<&PartEntry> {
        let mut parts: Vec<&PartEntry> = self
            .parts
            .iter()
            .filter(|p| p.partition == partition)
            .collect();
        parts.sort_by_key(|p| p.order);
        parts
    }

    /// Distinct partitions with parts, ascending.
    pub fn partitions(&self) -> Vec<i64> {
        let mut partitions: Vec<i64> = self.parts.iter().map(|p| p.partition).collect();
        partitions.sort_unstable();
        partitions.dedup();
        partitions
    }
}
