//! The series log `series.log`: its bytes (see the table in [`super`]), creation, loading
//! with torn-tail recovery, and appends of series records and retire records.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::SeriesError;
use crate::model::{SeriesId, TableId};

/// File name of the series log inside the index directory.
pub const SERIES_LOG_FILE: &str = "series.log";
/// First 8 bytes of the series log.
pub const MAGIC: [u8; 8] = *b"STRASER\0";
/// Format version written in the header of a new log; bump it when the bytes change.
/// Version 2 added retire records; a version 1 log is read as it is and its header is
/// rewritten to version 2 before its first retire record is appended.
pub const VERSION: u32 = 2;
/// Oldest version still read.
const OLDEST_VERSION: u32 = 1;
/// Bit of a frame's length word that marks a retire record (version 2); the low 31 bits
/// are the body length, which [`MAX_BODY_LEN`] keeps far below 2^31.
const RETIRE_FLAG: u32 = 1 << 31;
/// Retire body bytes before the ids: id count u32.
const RETIRE_FIXED_LEN: usize = 4;
/// Most ids one retire record holds (its body stays within [`MAX_BODY_LEN`]).
pub(crate) const RETIRE_IDS_MAX: usize = (MAX_BODY_LEN - RETIRE_FIXED_LEN) / 4;
/// Header bytes: magic, version, CRC32 of the 12 bytes before.
pub const HEADER_LEN: usize = 16;
/// Record frame bytes before the body: body length, CRC32 of the body.
pub const FRAME_LEN: usize = 8;
/// Body bytes before the tags: series id u32, table id u32, tag count u16.
const BODY_FIXED_LEN: usize = 10;
/// Longest record body accepted. A series key comes from one line of at most 1 MiB (the
/// parser's default limit); 4 MiB leaves room for length prefixes and bounds what a
/// corrupt length field can make the reader believe.
pub const MAX_BODY_LEN: usize = 4 << 20;

/// What loading found at the end of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TornTail {
    /// Offset where the first incomplete or bad record began; the file was cut there.
    pub offset: u64,
    /// Bytes cut off.
    pub bytes_cut: u64,
}

/// The open log, positioned at its end.
#[derive(Debug)]
pub(crate) struct SeriesLog {
    path: PathBuf,
    file: File,
    /// Length of the valid log; appends go here.
    len: u64,
    /// Version in the file's header.
    version: u32,
}

/// One record of the log, decoded.
#[derive(Debug)]
pub(crate) enum Record<'a> {
    /// A new series: its id, table and canonical tags.
    Series(SeriesId, TableId, &'a [(&'a str, &'a str)]),
    /// Series whose every row is gone: they leave the index (their ids are never reused).
    Retire(&'a [SeriesId]),
}

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> SeriesError + 'p {
    move |source| SeriesError::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

fn header(version: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The version of a log whose bytes start with a valid header of a version still read.
fn header_version(path: &Path, data: &[u8]) -> Result<u32, SeriesError> {
    (OLDEST_VERSION..=VERSION)
        .find(|&v| data.len() >= HEADER_LEN && data[..HEADER_LEN] == header(v))
        .ok_or_else(|| SeriesError::Corrupt {
            path: path.to_path_buf(),
            offset: 0,
            reason: format!(
                "bad header (want magic STRASER\\0, version {OLDEST_VERSION} to {VERSION}, valid CRC)"
            ),
        })
}

impl SeriesLog {
    /// Opens (or creates, with just a header) `dir/series.log` and reads it whole.
    pub(crate) fn open(dir: &Path) -> Result<(Self, Vec<u8>), SeriesError> {
        crate::fsutil::create_dir_all_durable(dir).map_err(io("create directory for", dir))?;
        let path = dir.join(SERIES_LOG_FILE);
        if !path.exists() {
            // Header written to a temporary file and renamed: a crash leaves no log or a
            // log with a whole header, never a short one.
            crate::fsutil::write_atomic(&path, &header(VERSION)).map_err(io("create", &path))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(io("open", &path))?;
        let mut data = Vec::new();
        file.read_to_end(&mut data).map_err(io("read", &path))?;
        let version = header_version(&path, &data)?;
        let len = data.len() as u64;
        Ok((
            Self {
                path,
                file,
                len,
                version,
            },
            data,
        ))
    }

    /// Reads the log at `path` whole without opening it for writing: its bytes and the
    /// version in its header. For `strata check`.
    pub(crate) fn read(path: &Path) -> Result<(Vec<u8>, u32), SeriesError> {
        let data = fs::read(path).map_err(io("read", path))?;
        let version = header_version(path, &data)?;
        Ok((data, version))
    }

    /// The version in the file's header.
    pub(crate) fn version(&self) -> u32 {
        self.version
    }

    /// The log's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Cuts the log to `len` bytes (a torn tail) and syncs.
    pub(crate) fn truncate(&mut self, len: u64) -> Result<(), SeriesError> {
        self.file.set_len(len).map_err(io("truncate", &self.path))?;
        self.file.sync_all().map_err(io("sync", &self.path))?;
        self.len = len;
        Ok(())
    }

    /// Appends retire records (`bytes`, from [`encode_retire`]) and fsyncs, first
    /// rewriting a version 1 header as version 2 (16 bytes in the first sector, fsynced on
    /// their own: a crash leaves the old header or the new one, and either reads every
    /// record before the retire records).
    pub(crate) fn append_retire(&mut self, bytes: &[u8]) -> Result<(), SeriesError> {
        if self.version < VERSION {
            self.file
                .seek(SeekFrom::Start(0))
                .and_then(|_| self.file.write_all(&header(VERSION)))
                .and_then(|()| self.file.sync_data())
                .map_err(io("rewrite the header of", &self.path))?;
            self.version = VERSION;
        }
        self.append(bytes)
    }

    /// Appends `bytes` (whole records) and fsyncs. On failure the file is cut back to its
    /// previous length, so a later append never follows a partial record.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), SeriesError> {
        let result = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| self.file.write_all(bytes))
            .and_then(|()| self.file.sync_data());
        match result {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Best effort: if this fails too, the next open cuts the partial tail.
                let _ = self.file.set_len(self.len);
                Err(io("append to", &self.path)(e))
            }
        }
    }
}

/// Appends one record (frame and body) for series `id` to `out`. The caller has checked
/// the limits (tag count and lengths ≤ `u16::MAX`, body ≤ [`MAX_BODY_LEN`]).
pub(crate) fn encode_record<'a>(
    out: &mut Vec<u8>,
    id: SeriesId,
    table: TableId,
    tags: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
) {
    let frame_at = out.len();
    out.extend_from_slice(&[0u8; FRAME_LEN]);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&table.to_le_bytes());
    out.extend_from_slice(&(tags.len() as u16).to_le_bytes());
    for (k, v) in tags {
        out.extend_from_slice(&(k.len() as u16).to_le_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&(v.len() as u16).to_le_bytes());
        out.extend_from_slice(v.as_bytes());
    }
    seal_frame(out, frame_at, 0);
}

/// Appends retire records for `ids` (ascending) to `out`, [`RETIRE_IDS_MAX`] ids a record.
pub(crate) fn encode_retire(out: &mut Vec<u8>, ids: &[SeriesId]) {
    for chunk in ids.chunks(RETIRE_IDS_MAX) {
        let frame_at = out.len();
        out.extend_from_slice(&[0u8; FRAME_LEN]);
        out.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        for id in chunk {
            out.extend_from_slice(&id.to_le_bytes());
        }
        seal_frame(out, frame_at, RETIRE_FLAG);
    }
}

/// Fills in the frame reserved at `frame_at` for the body that follows it to the end of
/// `out`: the body length with `kind` (0, or [`RETIRE_FLAG`]) in its top bit, and its CRC.
fn seal_frame(out: &mut [u8], frame_at: usize, kind: u32) {
    let body = &out[frame_at + FRAME_LEN..];
    let (len, crc) = (body.len() as u32 | kind, crc32fast::hash(body));
    out[frame_at..frame_at + 4].copy_from_slice(&len.to_le_bytes());
    out[frame_at + 4..frame_at + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Bytes of a record body holding tags of these lengths.
pub(crate) fn body_len(tags: impl Iterator<Item = (usize, usize)>) -> usize {
    BODY_FIXED_LEN + tags.map(|(k, v)| 4 + k + v).sum::<usize>()
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// Decodes a record body into (id, table) and `tags` (cleared first).
fn decode_body<'a>(
    body: &'a [u8],
    tags: &mut Vec<(&'a str, &'a str)>,
) -> Result<(SeriesId, TableId), String> {
    tags.clear();
    let short = || format!("record body of {} bytes ends inside a tag", body.len());
    let (Some(id), Some(table), Some(count)) = (u32_at(body, 0), u32_at(body, 4), u16_at(body, 8))
    else {
        return Err(format!(
            "record body of {} bytes is shorter than {BODY_FIXED_LEN}",
            body.len()
        ));
    };
    let mut at = BODY_FIXED_LEN;
    let part = |at: &mut usize| -> Result<&'a str, String> {
        let len = usize::from(u16_at(body, *at).ok_or_else(short)?);
        let bytes = body.get(*at + 2..*at + 2 + len).ok_or_else(short)?;
        *at += 2 + len;
        std::str::from_utf8(bytes).map_err(|e| format!("tag at body offset {at} is not UTF-8: {e}"))
    };
    for _ in 0..count {
        let k = part(&mut at)?;
        let v = part(&mut at)?;
        tags.push((k, v));
    }
    if at != body.len() {
        return Err(format!(
            "record body has {} bytes after its {count} tags",
            body.len() - at
        ));
    }
    Ok((id, table))
}

/// Decodes a retire body into its ids (ascending, as written), `ids` cleared first.
fn decode_retire(body: &[u8], ids: &mut Vec<SeriesId>) -> Result<(), String> {
    ids.clear();
    let count = u32_at(body, 0).ok_or("retire record body shorter than 4 bytes")? as usize;
    if body.len() != RETIRE_FIXED_LEN + 4 * count {
        return Err(format!(
            "retire record of {count} ids has a body of {} bytes",
            body.len()
        ));
    }
    ids.extend(
        body[RETIRE_FIXED_LEN..]
            .chunks_exact(4)
            .filter_map(|b| b.try_into().ok().map(u32::from_le_bytes)),
    );
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err("retire record ids are not ascending".to_owned());
    }
    Ok(())
}

/// Series records and their tags in `data` (a whole log) as far as its frames lead,
/// without checking CRCs: a sequential pass so that loading can size its tables once.
/// Only frames that fit in `data` count, and a record counts at most the tags its length
/// can hold, so garbage cannot make the caller reserve more than `data.len()` allows.
pub(crate) fn count(data: &[u8]) -> (usize, usize) {
    let (mut records, mut tags, mut at) = (0, 0, HEADER_LEN);
    while let Some(word) = u32_at(data, at) {
        let len = (word & !RETIRE_FLAG) as usize;
        if at + FRAME_LEN + len > data.len() {
            break;
        }
        if word & RETIRE_FLAG == 0 {
            let Some(count) = u16_at(data, at + FRAME_LEN + 8).filter(|_| len >= BODY_FIXED_LEN)
            else {
                break;
            };
            records += 1;
            tags += usize::from(count).min((len - BODY_FIXED_LEN) / 4);
        }
        at += FRAME_LEN + len;
    }
    (records, tags)
}

/// Whether the record framed at `at` retires series, and its body, if the frame is whole,
/// of a kind `version` has, and its CRC matches.
fn frame_at(data: &[u8], at: usize, version: u32) -> Option<(bool, &[u8])> {
    let word = u32_at(data, at)?;
    let crc = u32_at(data, at + 4)?;
    let retire = word & RETIRE_FLAG != 0;
    let len = (word & !RETIRE_FLAG) as usize;
    let min = if retire {
        RETIRE_FIXED_LEN
    } else {
        BODY_FIXED_LEN
    };
    if (retire && version < 2) || !(min..=MAX_BODY_LEN).contains(&len) {
        return None;
    }
    let body = data.get(at + FRAME_LEN..at + FRAME_LEN + len)?;
    (crc32fast::hash(body) == crc).then_some((retire, body))
}

/// Calls `apply` on every record of `data` (a whole log, header checked, of `version`) in
/// order.
///
/// A record that is incomplete or fails its CRC ends the log if no valid record follows it
/// (a torn append): the valid length and the [`TornTail`] are returned. If a valid record
/// (CRC and body; a series record with a later id) does follow it, or a record with a good
/// CRC does not decode, or `apply` refuses it, the log is [`SeriesError::Corrupt`].
pub(crate) fn replay(
    path: &Path,
    data: &[u8],
    version: u32,
    mut apply: impl FnMut(Record<'_>) -> Result<(), String>,
) -> Result<(u64, Option<TornTail>), SeriesError> {
    let corrupt = |offset: usize, reason: String| SeriesError::Corrupt {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    };
    let mut tags = Vec::new();
    let mut ids = Vec::new();
    let mut at = HEADER_LEN;
    let mut last_id: Option<SeriesId> = None;
    while at < data.len() {
        let Some((retire, body)) = frame_at(data, at, version) else {
            if let Some(later) = valid_record_after(data, at + 1, version, last_id) {
                return Err(corrupt(
                    at,
                    format!(
                        "bad record (length or CRC) followed by a valid record at offset {later}"
                    ),
                ));
            }
            let cut = (data.len() - at) as u64;
            return Ok((
                at as u64,
                Some(TornTail {
                    offset: at as u64,
                    bytes_cut: cut,
                }),
            ));
        };
        if retire {
            decode_retire(body, &mut ids).map_err(|r| corrupt(at, r))?;
            apply(Record::Retire(&ids)).map_err(|r| corrupt(at, r))?;
        } else {
            let (id, table) = decode_body(body, &mut tags).map_err(|r| corrupt(at, r))?;
            apply(Record::Series(id, table, &tags)).map_err(|r| corrupt(at, r))?;
            last_id = Some(id);
        }
        at += FRAME_LEN + body.len();
    }
    Ok((at as u64, None))
}

/// Offset of the first valid record at or after `from`: good CRC and decodable body, and
/// for a series record an id after `last_id`, for a retire record ids up to `last_id`. Only
/// runs on a bad record, to tell a torn tail from damage in the middle.
fn valid_record_after(
    data: &[u8],
    from: usize,
    version: u32,
    last_id: Option<SeriesId>,
) -> Option<usize> {
    let mut tags = Vec::new();
    let mut ids = Vec::new();
    (from..data.len().saturating_sub(FRAME_LEN + RETIRE_FIXED_LEN - 1)).find(|&at| {
        frame_at(data, at, version).is_some_and(|(retire, body)| {
            if retire {
                decode_retire(body, &mut ids).is_ok()
                    && !ids.is_empty()
                    && last_id.is_some_and(|l| ids.iter().all(|&id| id <= l))
            } else {
                matches!(decode_body(body, &mut tags), Ok((id, _)) if last_id.is_none_or(|l| id > l))
            }
        })
    })
}

/// What [`salvage`] could read of a damaged log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Salvaged {
    /// Series records that check (CRC and body), tags as stored.
    pub series: Vec<crate::part::SeriesKey>,
    /// Ids named by retire records that check.
    pub retired: Vec<SeriesId>,
    /// Bytes stepped over (records that failed their checks, and what lay between).
    pub skipped_bytes: u64,
}

/// Every record of the log at `path` that checks, stepping over damage to the next valid
/// record instead of stopping there: the raw material `strata repair` rebuilds a log from.
/// A log whose header is damaged yields nothing (the error).
pub fn salvage(path: &Path) -> Result<Salvaged, SeriesError> {
    let (data, version) = SeriesLog::read(path)?;
    let mut out = Salvaged::default();
    let (mut tags, mut ids) = (Vec::new(), Vec::new());
    let mut last_id: Option<SeriesId> = None;
    let mut at = HEADER_LEN;
    while at < data.len() {
        let decoded = frame_at(&data, at, version).and_then(|(retire, body)| {
            let ok = if retire {
                decode_retire(body, &mut ids).is_ok()
            } else {
                decode_body(body, &mut tags).is_ok()
            };
            ok.then_some((retire, body.len()))
        });
        let Some((retire, len)) = decoded else {
            let next = valid_record_after(&data, at + 1, version, last_id).unwrap_or(data.len());
            out.skipped_bytes += (next - at) as u64;
            at = next;
            continue;
        };
        if retire {
            out.retired.extend_from_slice(&ids);
        } else if let Ok((id, table)) =
            decode_body(&data[at + FRAME_LEN..at + FRAME_LEN + len], &mut tags)
        {
            let owned = tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            out.series.push(crate::part::SeriesKey {
                id,
                table,
                tags: owned,
            });
            last_id = Some(id);
        }
        at += FRAME_LEN + len;
    }
    Ok(out)
}
