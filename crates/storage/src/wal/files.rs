//! Segment files in the WAL directory: listing, creating, and the recovery at open.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::WalError;
use super::format::{
    SEGMENT_TMP_SUFFIX, encode_segment_header, parse_segment_file_name, segment_path,
    segment_tmp_path,
};
use super::replay::{Replay, ReplayMode, replay_segment};

/// Recovers the WAL in `dir`: creates the directory if needed, checks that the segment ids
/// have no gap, replays every segment oldest first (cutting a torn tail of the last one),
/// and creates the next segment. Returns the replay summary, the new segment's file
/// (positioned after its header) and the ids of all segments, the new one last.
pub(crate) fn open_dir<F, E>(
    dir: &Path,
    mode: ReplayMode,
    on_record: &mut F,
) -> Result<(Replay, File, Vec<u64>), WalError>
where
    F: FnMut(u64, &[u8]) -> Result<(), E>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    crate::fsutil::create_dir_all_durable(dir)
        .map_err(|e| WalError::io("create WAL directory", dir, e))?;
    let mut ids = list_segments(dir)?;
    let mut replay = replay_segments(dir, &ids, mode, on_record)?;
    let last = ids.last().copied().unwrap_or(0);
    let active = last.checked_add(1).ok_or_else(|| WalError::Corrupt {
        path: segment_path(dir, last),
        offset: 0,
        reason: "segment ids are exhausted".to_string(),
    })?;
    let file = create_segment(dir, active)?;
    ids.push(active);
    replay.active_segment = active;

    Ok((replay, file, ids))
}

/// Reads the WAL in `dir` as opening it would, changing nothing: every segment's header and
/// record checksums, no gap between segment ids. A torn tail of the last segment is reported
/// (opening would cut it); other damage is [`WalError::Corrupt`]. For `strata check`.
pub fn inspect(dir: &Path) -> Result<Replay, WalError> {
    inspect_records(dir, |_: u64, _: &[u8]| Ok::<(), WalError>(()))
}

/// [`inspect`], handing each record's payload (with its segment id) to `on_record`: for
/// `strata repair`, which reads the series the WAL creates and the rows it holds.
pub fn inspect_records<F, E>(dir: &Path, mut on_record: F) -> Result<Replay, WalError>
where
    F: FnMut(u64, &[u8]) -> Result<(), E>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let entries = fs::read_dir(dir).map_err(|e| WalError::io("list WAL directory", dir, e))?;
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| WalError::io("list WAL directory", dir, e))?;
        if let Some(id) = entry.file_name().to_str().and_then(parse_segment_file_name) {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    replay_segments(dir, &ids, ReplayMode::Inspect, &mut on_record)
}

/// Replays segments `ids` of `dir`, oldest first, after checking that no id is missing;
/// only the last may end in a torn tail.
fn replay_segments<F, E>(
    dir: &Path,
    ids: &[u64],
    mode: ReplayMode,
    on_record: &mut F,
) -> Result<Replay, WalError>
where
    F: FnMut(u64, &[u8]) -> Result<(), E>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    check_no_gap(dir, ids)?;
    let mut replay = Replay {
        segments: ids.to_vec(),
        records: 0,
        payload_bytes: 0,
        torn_tail: None,
        skipped: Vec::new(),
        active_segment: 0,
    };
    for (i, &id) in ids.iter().enumerate() {
        let is_last = i + 1 == ids.len();
        let seg = replay_segment(&segment_path(dir, id), id, is_last, mode, on_record)?;
        replay.records += seg.records;
        replay.payload_bytes += seg.payload_bytes;
        replay.torn_tail = seg.torn_tail;
        replay.skipped.extend(seg.skipped);
    }
    Ok(replay)
}

/// A missing segment between two others is damage: its records are lost.
fn check_no_gap(dir: &Path, ids: &[u64]) -> Result<(), WalError> {
    match ids.windows(2).find(|w| w[1] != w[0] + 1) {
        Some(pair) => Err(WalError::Corrupt {
            path: segment_path(dir, pair[0] + 1),
            offset: 0,
            reason: format!(
                "segment is missing: segments {} and {} exist, nothing in between",
                pair[0], pair[1]
            ),
        }),
        None => Ok(()),
    }
}

/// Lists the segment ids in `dir`, sorted, after deleting leftovers of interrupted segment
/// creations (`*.wal.tmp`). Other files are left alone.
pub(crate) fn list_segments(dir: &Path) -> Result<Vec<u64>, WalError> {
    let entries = fs::read_dir(dir).map_err(|e| WalError::io("list WAL directory", dir, e))?;
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| WalError::io("list WAL directory", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(id) = parse_segment_file_name(name) {
            ids.push(id);
        } else if name.ends_with(SEGMENT_TMP_SUFFIX) {
            let path = entry.path();
            fs::remove_file(&path)
                .map_err(|e| WalError::io("remove unfinished WAL segment", path, e))?;
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Creates segment `id` in `dir`: writes the header to `{id}.wal.tmp`, fsyncs it, renames
/// it into place and fsyncs the directory, so a segment file never exists with a partial
/// header. Returns the file, positioned after the header.
pub(crate) fn create_segment(dir: &Path, id: u64) -> Result<File, WalError> {
    let tmp = segment_tmp_path(dir, id);
    let path = segment_path(dir, id);
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| WalError::io("create WAL segment", &tmp, e))?;
    file.write_all(&encode_segment_header(id))
        .and_then(|()| file.sync_data())
        .map_err(|e| WalError::io("write WAL segment header", &tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| WalError::io("rename WAL segment into place", &path, e))?;
    sync_dir(dir)?;
    Ok(file)
}

/// Fsyncs a directory so that file creations, renames and deletions in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), WalError> {
    crate::fsutil::sync_dir(dir).map_err(|e| WalError::io("sync WAL directory", dir, e))
}
