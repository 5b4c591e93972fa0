//! Per-shard write-ahead log: segments of length- and CRC-framed records, group commit,
//! torn-tail recovery.
//!
//! A shard appends one opaque payload per write ([`Wal::append`]) before acknowledging it;
//! at start-up [`Wal::open`] hands every record back, in order, before new appends. When a
//! memtable has been flushed to a durable part, the shard calls [`Wal::rotate`] before the
//! flush starts and [`Wal::remove_segments_before`] with the id it returned afterwards.
//!
//! # Files
//!
//! One directory per shard, holding segment files named `{id:020}.wal` (the id in decimal,
//! zero-padded to 20 digits, e.g. `00000000000000000001.wal`). Ids are `u64`, start at 1
//! and increase by one per segment; the ids present always form one run without gaps. A
//! file named `{id:020}.wal.tmp` is a segment whose creation was interrupted; it is
//! deleted at open. Other files in the directory are ignored.
//!
//! All integers are little-endian. A segment file is a header followed by zero or more
//! record frames, back to back, up to the end of the file:
//!
//! Segment header (24 bytes):
//!
//! | offset | size | field      | value                                              |
//! |-------:|-----:|------------|----------------------------------------------------|
//! | 0      | 8    | magic      | `53 54 52 41 57 41 4C 00` (`b"STRAWAL\0"`)         |
//! | 8      | 4    | version    | u32, format version, `1`                           |
//! | 12     | 8    | segment id | u64, equal to the id in the file name              |
//! | 20     | 4    | header CRC | u32, CRC-32 of bytes 0..20                         |
//!
//! Record frame (8 + `len` bytes), repeated:
//!
//! | offset | size  | field   | value                                                  |
//! |-------:|------:|---------|--------------------------------------------------------|
//! | 0      | 4     | len     | u32, payload length, at most [`RECORD_BYTES_MAX`] (64 MiB) |
//! | 4      | 4     | CRC     | u32, CRC-32 of the 4 `len` bytes followed by the payload |
//! | 8      | `len` | payload | opaque bytes (the shard's encoding of rows)            |
//!
//! CRC-32 is the IEEE polynomial (reflected `0xEDB88320`, init and final xor
//! `0xFFFFFFFF`; zlib's `crc32`, crate `crc32fast`). The record CRC covers the length field
//! too, so that a zero-filled region (what some file systems leave after a crash) is never
//! read as a run of valid empty records: CRC-32 of an empty input is 0, of `00 00 00 00`
//! it is `0x2144DF1C`. Examples: the header of segment 1 ends with CRC `51 54 99 F3`;
//! the record `abc` is `03 00 00 00 33 5D E1 66 61 62 63`; the empty record is
//! `00 00 00 00 1C DF 44 21`.
//!
//! Version history: 1 — this layout.
//!
//! # Durability ([`WalSync`])
//!
//! - `Always`: `append` returns after the record is fsynced (`fdatasync`). Concurrent
//!   appenders share one write and one fsync (group commit).
//! - `Interval(d)` (default, 1 s): `append` returns once the record is written to the file
//!   (page cache); the engine's timer calls [`Wal::sync_if_due`], which fsyncs when
//!   something is unsynced and `d` has passed since its last sync. A machine crash may
//!   lose up to `d` of acknowledged writes; a process crash loses nothing.
//! - `None`: like `Interval` but never fsynced on a timer; only `rotate`, `sync`, `close`
//!   and drop fsync.
//!
//! A new segment is written as `{id}.wal.tmp`, header fsynced, renamed into place and the
//! directory fsynced, so a segment file never has a partial header.
//!
//! # Recovery
//!
//! [`Wal::open`] reads the segments oldest first and hands each valid record to the
//! caller exactly once, then fsyncs the last segment and starts a **new** segment (id =
//! last + 1): a recovered segment is never appended to.
//!
//! - In the **last** segment, a bad frame (fewer than 8 bytes left, a length over the
//!   limit, a payload past the end of the file, or a CRC mismatch) after which no valid
//!   frame starts at any later offset is a torn tail: the file is truncated to the end of
//!   the last good record and fsynced, and [`Replay::torn_tail`] says where and how much
//!   was cut.
//! - A bad frame in the last segment that *is* followed by a valid frame, a bad frame in
//!   any other segment, a bad or short segment header, and a missing segment id in the
//!   middle are [`WalError::Corrupt`] with the file and offset. Nothing is skipped
//!   silently and nothing panics.
//!
//! A failed `write` (a full disk) cuts the segment back to its last whole record and keeps
//! the unwritten records pending, in order: their appenders get the error, later writes try
//! them again, and [`Wal::stalled`] tells the owner to refuse new records meanwhile. After
//! a failed fsync, or a file that cannot be cut back, the `Wal` refuses further appends
//! (fail-stop, see [`WalError::Io`]); reopen it to recover.

mod commit;
mod error;
mod files;
mod format;
mod replay;
mod writer;

use std::time::Duration;

pub use error::WalError;
pub use files::{inspect, inspect_records};
pub use format::{
    FORMAT_VERSION, RECORD_BYTES_MAX, SEGMENT_HEADER_LEN, SEGMENT_MAGIC, segment_path,
};
pub use replay::{Replay, SkippedDamage, TailDamage, TornTail};
pub use writer::Wal;

/// When appended records are fsynced. Durability is a choice of three, never a bool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalSync {
    /// Fsync before `append` returns (group commit shares one fsync among concurrent
    /// appenders).
    Always,
    /// `append` returns once the record is in the page cache; the owner calls
    /// [`Wal::sync_if_due`] periodically and it fsyncs at most once per interval.
    Interval(Duration),
    /// Never fsync except on rotate, explicit sync, close and drop.
    None,
}

impl Default for WalSync {
    /// `Interval(1 s)`: at most one second of acknowledged writes lost on a machine crash.
    fn default() -> Self {
        WalSync::Interval(Duration::from_secs(1))
    }
}

/// Options for [`Wal::open`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalOptions {
    /// When records are fsynced; default `Interval(1 s)`.
    pub sync: WalSync,
    /// At open, step over damage in the middle of the WAL (a bad frame up to the next valid
    /// one, a record the replay callback rejects) instead of failing, reporting each skip in
    /// [`Replay::skipped`]. Default false: damage stops the open.
    pub skip_damaged: bool,
}

impl WalOptions {
    /// Options with the given durability.
    pub fn with_sync(sync: WalSync) -> Self {
        WalOptions {
            sync,
            skip_damaged: false,
        }
    }
}
