//! A data directory's size as `du` counts it (allocated blocks, not file lengths), for
//! bytes per point.

use std::path::Path;

/// Directories deeper than this under a data directory are not counted (a guard against
/// loops; no server nests its files anywhere near this deep).
const DISK_USAGE_DEPTH_MAX: usize = 64;

/// Bytes allocated on disk to the files under `dir`, recursively, as `du` counts them
/// (512-byte blocks): a sparse or preallocated file counts what it uses, not its length.
/// InfluxDB 1.x preallocates its series file (8 segments of 4 MB, mostly holes), so a
/// file's length would charge it 32 MB it does not use. Symbolic links are not followed.
pub fn disk_usage(dir: &Path) -> u64 {
    usage_below(dir, 0)
}

fn usage_below(dir: &Path, depth: usize) -> u64 {
    use std::os::unix::fs::MetadataExt;
    if depth > DISK_USAGE_DEPTH_MAX {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.path().symlink_metadata() {
            Ok(meta) if meta.is_dir() => usage_below(&entry.path(), depth + 1),
            Ok(meta) if meta.is_file() => meta.blocks() * 512,
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_usage_counts_allocated_blocks_not_lengths() {
        let dir = std::env::temp_dir().join(format!("strata-disk-usage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/written"), vec![7u8; 10_000]).unwrap();
        let sparse = std::fs::File::create(dir.join("sparse")).unwrap();
        sparse.set_len(4 << 20).unwrap();
        let used = disk_usage(&dir);
        assert!(used >= 10_000, "{used}");
        assert!(used < 1 << 20, "the 4 MB hole is not counted: {used}");
        assert_eq!(disk_usage(&dir.join("missing")), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
