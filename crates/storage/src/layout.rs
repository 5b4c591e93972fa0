//! Every file and directory name the engine uses, declared in one place.
//!
//! ```text
//! <data_dirs[d]>/LOCK                        held (flock) while an engine has the directory open
//! <data_dirs[0]>/ENGINE                      engine meta: shard count (checked JSON)
//! <data_dirs[d]>/LAKE-MIRROR                 marks a read-only engine's directory (emptied at open)
//! <data_dirs[0]>/catalog.json                 tables, tags, fields (checked JSON)
//! <data_dirs[k % n]>/shard-<k>/MANIFEST       live parts of shard k (checked JSON)
//! <data_dirs[k % n]>/shard-<k>/wal/           WAL segments of shard k
//! <data_dirs[k % n]>/shard-<k>/series/        series index log of shard k
//! <data_dirs[d]>/shard-<k>/p<partition>/<id>.part   parts; d = (k + partition) mod n
//! <data_dirs[d]>/quarantine/shard-<k>/p<partition>-<id>.part   damaged parts set aside
//! ```
//!
//! A shard's WAL, series log and manifest live on its "home" directory; its partitions are
//! spread over all directories so that the write bandwidth of several disks adds up.

use std::path::{Path, PathBuf};

/// Lock file in every data directory (see `dir_lock`).
pub const LOCK_FILE: &str = "LOCK";
/// Marks the data directories of a read-only engine, a lake mirror: whatever else they
/// hold is rebuilt from the lake, so they are emptied when it opens.
pub const MIRROR_FILE: &str = "LAKE-MIRROR";
/// Engine meta file in the first data directory.
pub const ENGINE_FILE: &str = "ENGINE";
/// Manifest file in a shard's home directory.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// Suffix of part files.
pub const PART_SUFFIX: &str = "part";

/// Index of the data directory that holds shard `shard`'s WAL, series log and manifest.
pub fn home_dir_index(shard: usize, dirs: usize) -> usize {
    shard % dirs.max(1)
}

/// A shard's directory under one data directory.
pub fn shard_dir(data_dir: &Path, shard: usize) -> PathBuf {
    data_dir.join(format!("shard-{shard}"))
}

/// Index of the data directory holding `partition` of `shard`.
pub fn partition_dir_index(shard: usize, partition: i64, dirs: usize) -> usize {
    let dirs = dirs.max(1) as i64;
    ((shard as i64 + partition.rem_euclid(dirs)) % dirs) as usize
}

/// The directory of one partition of one shard.
pub fn partition_dir(data_dir: &Path, shard: usize, partition: i64) -> PathBuf {
    shard_dir(data_dir, shard).join(format!("p{partition}"))
}

/// A part file.
pub fn part_path(data_dir: &Path, shard: usize, partition: i64, id: u64) -> PathBuf {
    partition_dir(data_dir, shard, partition).join(format!("{id:016}.{PART_SUFFIX}"))
}

/// The directory of a data directory's set-aside parts, one subdirectory per shard.
pub fn quarantine_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("quarantine")
}

/// Where a damaged part is moved: beside its data directory's shards, on the same file
/// system (a rename), out of every directory the engine lists.
pub fn quarantine_path(data_dir: &Path, shard: usize, partition: i64, id: u64) -> PathBuf {
    quarantine_dir(data_dir)
        .join(format!("shard-{shard}"))
        .join(format!("p{partition}-{id:016}.{PART_SUFFIX}"))
}

/// Parses `<id>.part`.
pub fn parse_part_file_name(name: &str) -> Option<u64> {
    name.strip_suffix(".part")?.parse().ok()
}

/// Parses `p<partition>`.
pub fn parse_partition_dir_name(name: &str) -> Option<i64> {
    name.strip_prefix('p')?.parse().ok()
}

/// One partition directory of a shard, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionFiles {
    /// Index of the data directory holding it.
    pub dir_index: usize,
    /// The partition.
    pub partition: i64,
    /// The directory.
    pub path: PathBuf,
    /// Its files: each path, with the part id when the name is a part's.
    pub files: Vec<(PathBuf, Option<u64>)>,
}

/// Every partition directory of shard `shard` on every data directory, with its files, in
/// directory then partition order. A shard directory that does not exist has none.
pub fn list_partitions(
    data_dirs: &[PathBuf],
    shard: usize,
) -> std::io::Result<Vec<PartitionFiles>> {
    let mut found = Vec::new();
    for (dir_index, data_dir) in data_dirs.iter().enumerate() {
        let Ok(entries) = std::fs::read_dir(shard_dir(data_dir, shard)) else {
            continue;
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(partition) = name.to_str().and_then(parse_partition_dir_name) else {
                continue;
            };
            let path = entry.path();
            let mut files = Vec::new();
            for file in std::fs::read_dir(&path)? {
                let file = file?;
                let id = file.file_name().to_str().and_then(parse_part_file_name);
                files.push((file.path(), id));
            }
            files.sort();
            found.push(PartitionFiles {
                dir_index,
                partition,
                path,
                files,
            });
        }
    }
    found.sort_by_key(|p| (p.dir_index, p.partition));
    Ok(found)
}
