//! Reading segments back at open: listing, validation, torn-tail repair.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::WalError;
use super::format::{
    FRAME_HEADER_LEN, RECORD_BYTES_MAX, SEGMENT_HEADER_LEN, check_segment_header, frame_crc,
    read_u32,
};

/// What [`super::Wal::open`] found and did while replaying.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// Ids of the segments that were read, oldest first (empty for a new WAL).
    pub segments: Vec<u64>,
    /// Number of records handed to the callback. Replayed records are numbered
    /// `1..=records` in the order they were handed over; the first append after open gets
    /// sequence number `records + 1`.
    pub records: u64,
    /// Sum of the payload lengths handed to the callback.
    pub payload_bytes: u64,
    /// The torn tail cut from the last segment, if there was one.
    pub torn_tail: Option<TornTail>,
    /// Damage stepped over ([`ReplayMode::SkipDamaged`] only).
    pub skipped: Vec<SkippedDamage>,
    /// Id of the new, empty segment that appends go to.
    pub active_segment: u64,
}

/// A torn tail found at the end of the last segment and cut off.
///
/// It is the trace of a write that a crash interrupted; its records were never
/// acknowledged as durable (in `Always` mode), or were acknowledged only to the page cache
/// (`Interval`, `None`). Worth a warning in the log, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The segment file that was truncated.
    pub path: PathBuf,
    /// Offset of the first bad frame: the file's length after the cut.
    pub offset: u64,
    /// Number of bytes removed from the end of the file.
    pub bytes_cut: u64,
    /// What was wrong with the first bad frame.
    pub damage: TailDamage,
}

/// Why the frame at a torn tail's offset is not a valid record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailDamage {
    /// Fewer than 8 bytes were left for the frame header.
    ShortHeader,
    /// The length field is over [`super::RECORD_BYTES_MAX`].
    LengthOverLimit,
    /// The payload runs past the end of the file.
    ShortPayload,
    /// The frame is complete but its CRC does not match.
    ChecksumMismatch,
}

impl TailDamage {
    fn describe(self, len: u64) -> String {
        match self {
            TailDamage::ShortHeader => "incomplete record header".to_string(),
            TailDamage::LengthOverLimit => {
                format!("record length {len} over the limit of {RECORD_BYTES_MAX}")
            }
            TailDamage::ShortPayload => format!("record of {len} bytes runs past end of file"),
            TailDamage::ChecksumMismatch => format!("checksum mismatch on a record of {len} bytes"),
        }
    }
}

/// Result of replaying one segment.
pub(crate) struct SegmentReplay {
    pub records: u64,
    pub payload_bytes: u64,
    pub torn_tail: Option<TornTail>,
    pub skipped: Vec<SkippedDamage>,
}

/// What a replay may change on disk, and what it does with damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayMode {
    /// Opening the WAL: a torn tail is cut and the last segment fsynced; other damage stops
    /// the replay ([`WalError::Corrupt`], [`WalError::Replay`]).
    Repair,
    /// As `Repair`, but damage in the middle is skipped (`--wal-recovery skip-damaged`): a
    /// bad frame up to the next valid one (or the end of its segment), a record the caller
    /// rejects whole; each skip is reported in [`Replay::skipped`].
    SkipDamaged,
    /// `strata check`: the files are only read; a torn tail is reported, not cut.
    Inspect,
}

impl ReplayMode {
    fn repairs(self) -> bool {
        self != ReplayMode::Inspect
    }
}

/// Damage that [`ReplayMode::SkipDamaged`] stepped over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedDamage {
    /// The segment file.
    pub path: PathBuf,
    /// Where the skipped bytes start.
    pub offset: u64,
    /// How many bytes were skipped.
    pub bytes: u64,
    /// What was wrong there.
    pub what: String,
}

impl std::fmt::Display for SkippedDamage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes skipped at offset {} of {}: {}",
            self.bytes,
            self.offset,
            self.path.display(),
            self.what
        )
    }
}

/// Why replay stopped reading records in a row.
enum Bad {
    /// A frame that is not a valid record.
    Frame(TailDamage, u64),
    /// A valid record the caller rejected: its frame length and the reason.
    Record(u64, String),
}

/// Replays segment `id` at `path`, handing each valid record to `on_record`.
///
/// In the last segment (`is_last`), a bad frame followed by nothing that parses as a valid
/// frame is a torn tail: with [`ReplayMode::Repair`] the file is truncated to the end of the
/// last good record and fsynced. Anywhere else a bad frame is [`WalError::Corrupt`]. The last
/// segment is fsynced even when it is whole, because a crash of the process (not the
/// machine) leaves its tail in the page cache only, and a new segment is about to be started
/// after it.
pub(crate) fn replay_segment<F, E>(
    path: &Path,
    id: u64,
    is_last: bool,
    mode: ReplayMode,
    on_record: &mut F,
) -> Result<SegmentReplay, WalError>
where
    F: FnMut(u64, &[u8]) -> Result<(), E>,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let read_err = |e| WalError::io("read WAL segment", path, e);
    let corrupt = |offset: u64, reason: String| WalError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(is_last && mode.repairs())
        .open(path)
        .map_err(|e| WalError::io("open WAL segment", path, e))?;
    let file_len = file.metadata().map_err(read_err)?.len();
    if file_len < SEGMENT_HEADER_LEN as u64 {
        return Err(corrupt(
            0,
            format!(
                "file is {file_len} bytes, shorter than the {SEGMENT_HEADER_LEN}-byte segment header"
            ),
        ));
    }
    let mut header = [0u8; SEGMENT_HEADER_LEN];
    file.read_exact(&mut header).map_err(read_err)?;
    check_segment_header(&header, id).map_err(|reason| corrupt(0, reason))?;

    let mut out = SegmentReplay {
        records: 0,
        payload_bytes: 0,
        torn_tail: None,
        skipped: Vec::new(),
    };
    let mut offset = SEGMENT_HEADER_LEN as u64;
    let mut payload = Vec::new();
    loop {
        let bad = {
            let mut reader = BufReader::with_capacity(1 << 20, &mut file);
            reader.seek(SeekFrom::Start(offset)).map_err(read_err)?;
            read_records(
                &mut reader,
                file_len,
                &mut offset,
                &mut payload,
                &mut out,
                |p| on_record(id, p).map_err(|e| e.into().to_string()),
            )
            .map_err(read_err)?
        };
        let skip = |out: &mut SegmentReplay, bytes: u64, what: String| {
            out.skipped.push(SkippedDamage {
                path: path.to_path_buf(),
                offset,
                bytes,
                what,
            });
        };
        let (damage, len) = match bad {
            None => break,
            Some(Bad::Record(len, reason)) => {
                if mode != ReplayMode::SkipDamaged {
                    return Err(WalError::Replay {
                        path: path.to_path_buf(),
                        offset,
                        source: reason.into(),
                    });
                }
                let frame = FRAME_HEADER_LEN as u64 + len;
                skip(
                    &mut out,
                    frame,
                    format!("a record that cannot be replayed: {reason}"),
                );
                offset += frame;
                continue;
            }
            Some(Bad::Frame(damage, len)) => (damage, len),
        };
        let what = damage.describe(len);
        let next = find_valid_frame(&mut file, offset + 1, file_len).map_err(read_err)?;
        if mode == ReplayMode::SkipDamaged && (next.is_some() || !is_last) {
            let resume = next.unwrap_or(file_len);
            skip(&mut out, resume - offset, what);
            offset = resume;
            continue;
        }
        if !is_last {
            return Err(corrupt(
                offset,
                format!("{what} in a segment that is not the last"),
            ));
        }
        if let Some(next) = next {
            return Err(corrupt(
                offset,
                format!("{what}, followed by a valid record at offset {next}, so not a torn tail"),
            ));
        }
        if mode.repairs() {
            file.set_len(offset)
                .map_err(|e| WalError::io("truncate torn tail of WAL segment", path, e))?;
        }
        out.torn_tail = Some(TornTail {
            path: path.to_path_buf(),
            offset,
            bytes_cut: file_len - offset,
            damage,
        });
        break;
    }
    if is_last && mode.repairs() {
        file.sync_data()
            .map_err(|e| WalError::io("sync WAL segment", path, e))?;
    }
    Ok(out)
}

/// Reads records from `offset` (where `reader` stands) to the end of the file or the first
/// bad frame or rejected record, handing each to `replay`; `offset` ends at the bad one.
fn read_records(
    reader: &mut impl Read,
    file_len: u64,
    offset: &mut u64,
    payload: &mut Vec<u8>,
    out: &mut SegmentReplay,
    mut replay: impl FnMut(&[u8]) -> Result<(), String>,
) -> io::Result<Option<Bad>> {
    loop {
        let left = file_len - *offset;
        if left == 0 {
            return Ok(None);
        }
        if left < FRAME_HEADER_LEN as u64 {
            return Ok(Some(Bad::Frame(TailDamage::ShortHeader, 0)));
        }
        let mut frame = [0u8; FRAME_HEADER_LEN];
        reader.read_exact(&mut frame)?;
        let len = u64::from(read_u32(&frame, 0));
        if len > RECORD_BYTES_MAX as u64 {
            return Ok(Some(Bad::Frame(TailDamage::LengthOverLimit, len)));
        }
        if len > left - FRAME_HEADER_LEN as u64 {
            return Ok(Some(Bad::Frame(TailDamage::ShortPayload, len)));
        }
        payload.resize(len as usize, 0);
        reader.read_exact(payload)?;
        let len_bytes = [frame[0], frame[1], frame[2], frame[3]];
        if frame_crc(len_bytes, payload) != read_u32(&frame, 4) {
            return Ok(Some(Bad::Frame(TailDamage::ChecksumMismatch, len)));
        }
        if let Err(reason) = replay(payload) {
            return Ok(Some(Bad::Record(len, reason)));
        }
        out.records += 1;
        out.payload_bytes += len;
        *offset += FRAME_HEADER_LEN as u64 + len;
    }
}

/// Looks for the first offset in `from..end` where a complete frame with a matching CRC
/// starts. Used to tell a torn tail (nothing valid after the damage) from damage in the
/// middle of acknowledged data.
///
/// Cost: one CRC per offset whose length field fits in the rest of the file. A torn tail
/// is at most the last unfinished write; in the middle of real data the next record
/// boundary is found within one record.
fn find_valid_frame(file: &mut File, from: u64, end: u64) -> io::Result<Option<u64>> {
    const WINDOW_BYTES: u64 = 1 << 20;
    let mut window: Vec<u8> = Vec::new();
    let mut window_start = from;
    let mut scratch: Vec<u8> = Vec::new();
    let mut pos = from;
    while pos + FRAME_HEADER_LEN as u64 <= end {
        if pos + FRAME_HEADER_LEN as u64 > window_start + window.len() as u64 {
            window_start = pos;
            window.resize(WINDOW_BYTES.min(end - pos) as usize, 0);
            file.seek(SeekFrom::Start(pos))?;
            file.read_exact(&mut window)?;
        }
        let at = (pos - window_start) as usize;
        let len = u64::from(read_u32(&window, at));
        let payload_start = pos + FRAME_HEADER_LEN as u64;
        if len <= RECORD_BYTES_MAX as u64 && len <= end - payload_start {
            let len_bytes = [window[at], window[at + 1], window[at + 2], window[at + 3]];
            let want = read_u32(&window, at + 4);
            let in_window = at + FRAME_HEADER_LEN + len as usize <= window.len();
            let payload: &[u8] = if in_window {
                &window[at + FRAME_HEADER_LEN..at + FRAME_HEADER_LEN + len as usize]
            } else {
                scratch.resize(len as usize, 0);
                file.seek(SeekFrom::Start(payload_start))?;
                file.read_exact(&mut scratch)?;
                &scratch
            };
            if frame_crc(len_bytes, payload) == want {
                return Ok(Some(pos));
            }
        }
        pos += 1;
    }
    Ok(None)
}
