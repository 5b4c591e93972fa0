//! The [`Wal`]: opening with replay, group-committed appends, rotation, removal.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::mem;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::format::{
    RECORD_BYTES_MAX, encode_frame_header, encode_segment_header, segment_path, segment_tmp_path,
};
use super::replay::{Replay, list_segments, replay_segment};
use super::{WalError, WalOptions, WalSync};

/// Above this capacity the spare write buffer is shrunk after use, so that one burst of
/// large records does not pin memory for the life of the shard.
const SPARE_BUFFER_BYTES_MAX: usize = 8 << 20;

/// A shard's write-ahead log. See the [module documentation](super) for the file layout
/// and the recovery rules.
///
/// All methods take `&self`; a `Wal` is `Send + Sync` and meant to be shared by the
/// shard's writer threads (e.g. in an `Arc`).
pub struct Wal {
    dir: PathBuf,
    sync: WalSync,
    /// Framed records not yet handed to the file. Held only to copy bytes in or to swap
    /// the buffer out, never during I/O.
    pending: Mutex<Pending>,
    /// The active segment. Whoever holds this lock writes everything pending at once.
    io: Mutex<IoState>,
    /// Ids of the segment files that exist, oldest first; the last one is the active one.
    /// Separate from `io` so that metrics never wait behind an fsync.
    segments: Mutex<Vec<u64>>,
    bytes_written: AtomicU64,
    syncs: AtomicU64,
}

struct Pending {
    buf: Vec<u8>,
    /// Sequence number the next appended record gets.
    next_seq: u64,
}

struct IoState {
    file: File,
    path: PathBuf,
    segment_id: u64,
    /// Highest sequence number whose bytes have been written to the file.
    written_seq: u64,
    /// Highest sequence number that has been fsynced.
    synced_seq: u64,
    /// The buffer swapped with `Pending::buf`, so no allocation per batch.
    spare: Vec<u8>,
    /// When `sync_if_due` last synced (by the caller's clock); `None` until it first does.
    last_timed_sync: Option<Instant>,
    /// Set by the first I/O error on the write path; every later write fails with it.
    failed: Option<Failure>,
}

struct Failure {
    op: &'static str,
    path: PathBuf,
    kind: io::ErrorKind,
    message: String,
}

impl IoState {
    /// Records an I/O error as fatal for this `Wal` and returns it.
    fn fail(&mut self, op: &'static str, source: io::Error) -> WalError {
        self.failed = Some(Failure {
            op,
            path: self.path.clone(),
            kind: source.kind(),
            message: source.to_string(),
        });
        WalError::io(op, self.path.clone(), source)
    }

    fn check_failed(&self) -> Result<(), WalError> {
        match &self.failed {
            None => Ok(()),
            Some(f) => Err(WalError::io(
                f.op,
                f.path.clone(),
                io::Error::new(
                    f.kind,
                    format!(
                        "an earlier error made this WAL unusable, reopen it: {}",
                        f.message
                    ),
                ),
            )),
        }
    }
}

impl Wal {
    /// Opens the WAL in `dir` (creating the directory if needed), replays it, and starts a
    /// new segment for appends.
    ///
    /// `on_record(segment_id, payload)` is called once for every valid record, oldest
    /// first, before this function returns; it cannot race with appends since the `Wal`
    /// does not exist yet. If it returns an error, replay stops with
    /// [`WalError::Replay`]. If `open` fails for any reason, records already handed over
    /// must be discarded by the caller (the shard fails to open as a whole).
    ///
    /// A torn tail of the last segment is cut (see [`Replay::torn_tail`]). New records go
    /// into a new segment (id = last + 1, or 1 for an empty directory): a recovered
    /// segment is never appended to, so its end stays exactly where replay validated it.
    pub fn open<F, E>(
        dir: &Path,
        options: WalOptions,
        mut on_record: F,
    ) -> Result<(Wal, Replay), WalError>
    where
        F: FnMut(u64, &[u8]) -> Result<(), E>,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        fs::create_dir_all(dir).map_err(|e| WalError::io("create WAL directory", dir, e))?;
        let mut ids = list_segments(dir)?;
        if let Some(pair) = ids.windows(2).find(|w| w[1] != w[0] + 1) {
            return Err(WalError::Corrupt {
                path: segment_path(dir, pair[0] + 1),
                offset: 0,
                reason: format!(
                    "segment is missing: segments {} and {} exist, nothing in between",
                    pair[0], pair[1]
                ),
            });
        }
        let mut replay = Replay {
            segments: ids.clone(),
            records: 0,
            payload_bytes: 0,
            torn_tail: None,
            active_segment: 0,
        };
        for (i, &id) in ids.iter().enumerate() {
            let is_last = i + 1 == ids.len();
            let seg = replay_segment(&segment_path(dir, id), id, is_last, &mut on_record)?;
            replay.records += seg.records;
            replay.payload_bytes += seg.payload_bytes;
            replay.torn_tail = seg.torn_tail;
        }
        let last = ids.last().copied().unwrap_or(0);
        let active = last.checked_add(1).ok_or_else(|| WalError::Corrupt {
            path: segment_path(dir, last),
            offset: 0,
            reason: "segment ids are exhausted".to_string(),
        })?;
        let file = create_segment(dir, active)?;
        ids.push(active);
        replay.active_segment = active;

        let wal = Wal {
            dir: dir.to_path_buf(),
            sync: options.sync,
            pending: Mutex::new(Pending {
                buf: Vec::new(),
                next_seq: replay.records + 1,
            }),
            io: Mutex::new(IoState {
                file,
                path: segment_path(dir, active),
                segment_id: active,
                written_seq: replay.records,
                synced_seq: replay.records,
                spare: Vec::new(),
                last_timed_sync: None,
                failed: None,
            }),
            segments: Mutex::new(ids),
            bytes_written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
        };
        Ok((wal, replay))
    }

    /// Appends one record and returns its sequence number.
    ///
    /// Sequence numbers count records in append order within one opening of the WAL,
    /// continuing after the replayed ones ([`Replay::records`] + 1 for the first append),
    /// and order records exactly as they lie in the files. They are not stored on disk and
    /// restart from the replayed count at the next open; segment ids are the durable
    /// position.
    ///
    /// When this returns, the record is in the file (page cache) for
    /// [`WalSync::Interval`] and [`WalSync::None`], and fsynced for [`WalSync::Always`].
    /// Group commit: the record is framed into a shared buffer under a short lock; then
    /// whichever appender gets the file lock first writes every pending record in one
    /// `write` and, for `Always`, one fsync covers them all. An appender whose record was
    /// already written (and synced) by another returns without any I/O.
    pub fn append(&self, payload: &[u8]) -> Result<u64, WalError> {
        if payload.len() > RECORD_BYTES_MAX {
            return Err(WalError::RecordTooLarge {
                len: payload.len(),
                limit: RECORD_BYTES_MAX,
                dir: self.dir.clone(),
            });
        }
        let frame_header = encode_frame_header(payload);
        let seq = {
            let mut pending = self.pending.lock();
            pending.buf.extend_from_slice(&frame_header);
            pending.buf.extend_from_slice(payload);
            let seq = pending.next_seq;
            pending.next_seq += 1;
            seq
        };
        let always = self.sync == WalSync::Always;
        let mut io = self.io.lock();
        let done = if always {
            io.synced_seq
        } else {
            io.written_seq
        };
        if done >= seq {
            return Ok(seq);
        }
        io.check_failed()?;
        self.write_pending(&mut io)?;
        if always {
            self.sync_written(&mut io)?;
        }
        Ok(seq)
    }

    /// Writes everything pending and fsyncs the active segment if anything is unsynced,
    /// whatever the [`WalSync`] mode.
    pub fn sync(&self) -> Result<(), WalError> {
        let mut io = self.io.lock();
        io.check_failed()?;
        self.write_pending(&mut io)?;
        self.sync_written(&mut io)
    }

    /// For [`WalSync::Interval`]: syncs like [`Wal::sync`] if there is unsynced data and
    /// the interval has passed since the last sync this method made (the first one syncs
    /// whenever there is unsynced data). `now` is the caller's clock, so one timer thread
    /// can serve every shard and tests can inject time. Returns whether it synced; always
    /// `false` for `Always` (nothing is ever unsynced) and `None` (never synced on a timer).
    pub fn sync_if_due(&self, now: Instant) -> Result<bool, WalError> {
        let WalSync::Interval(interval) = self.sync else {
            return Ok(false);
        };
        let mut io = self.io.lock();
        io.check_failed()?;
        let due = io
            .last_timed_sync
            .is_none_or(|last| now.saturating_duration_since(last) >= interval);
        if !due {
            return Ok(false);
        }
        self.write_pending(&mut io)?;
        if io.synced_seq >= io.written_seq {
            return Ok(false);
        }
        self.sync_written(&mut io)?;
        io.last_timed_sync = Some(now);
        Ok(true)
    }

    /// Writes and fsyncs everything pending, closes the active segment and starts segment
    /// id + 1; returns the new id. Every record whose `append` returned before this call
    /// lies in a segment with a smaller id.
    pub fn rotate(&self) -> Result<u64, WalError> {
        let mut io = self.io.lock();
        io.check_failed()?;
        self.write_pending(&mut io)?;
        self.sync_written(&mut io)?;
        let Some(next) = io.segment_id.checked_add(1) else {
            return Err(WalError::Corrupt {
                path: io.path.clone(),
                offset: 0,
                reason: "segment ids are exhausted".to_string(),
            });
        };
        let file = match create_segment(&self.dir, next) {
            Ok(file) => file,
            Err(err) => {
                io.failed = Some(Failure {
                    op: "rotate WAL",
                    path: segment_path(&self.dir, next),
                    kind: io::ErrorKind::Other,
                    message: err.to_string(),
                });
                return Err(err);
            }
        };
        io.file = file;
        io.path = segment_path(&self.dir, next);
        io.segment_id = next;
        self.segments.lock().push(next);
        Ok(next)
    }

    /// Deletes the segment files with an id smaller than `id`, oldest first, then fsyncs
    /// the directory. Call it once the records of those segments are durable elsewhere
    /// (in parts). The active segment is never deleted, whatever `id` says. Deleting
    /// oldest first means a crash part way leaves no gap in the ids.
    pub fn remove_segments_before(&self, id: u64) -> Result<(), WalError> {
        let mut segments = self.segments.lock();
        let active = segments.last().copied().unwrap_or(0);
        let mut removed = false;
        while let Some(&oldest) = segments.first() {
            if oldest >= id || oldest == active {
                break;
            }
            let path = segment_path(&self.dir, oldest);
            fs::remove_file(&path).map_err(|e| WalError::io("remove WAL segment", &path, e))?;
            segments.remove(0);
            removed = true;
        }
        if removed {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Writes and fsyncs everything pending, then closes the files. Dropping a `Wal` does
    /// the same but can only ignore an error; call this to see it.
    pub fn close(self) -> Result<(), WalError> {
        self.sync()
    }

    /// Ids of the segment files that exist, oldest first; the last is the active one.
    pub fn segment_ids(&self) -> Vec<u64> {
        self.segments.lock().clone()
    }

    /// Id of the segment that appends go to.
    pub fn active_segment(&self) -> u64 {
        self.segments.lock().last().copied().unwrap_or(0)
    }

    /// The WAL directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Bytes of record frames (8-byte frame headers and payloads) written to segment files
    /// since open. Segment headers are not counted.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written.load(Ordering::Relaxed)
    }

    /// Number of fsyncs of record data since open (by appends in `Always` mode, `sync`,
    /// `sync_if_due`, `rotate`, `close`). The fsyncs that create a segment or repair a torn
    /// tail are not counted. With group commit, `syncs() < appends` under concurrency.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Writes every pending record to the active segment in one call. Takes the pending
    /// lock only to swap buffers.
    fn write_pending(&self, io: &mut IoState) -> Result<(), WalError> {
        let last_seq = {
            let mut pending = self.pending.lock();
            if pending.buf.is_empty() {
                return Ok(());
            }
            mem::swap(&mut pending.buf, &mut io.spare);
            pending.next_seq - 1
        };
        if let Err(e) = io.file.write_all(&io.spare) {
            return Err(io.fail("write WAL segment", e));
        }
        self.bytes_written
            .fetch_add(io.spare.len() as u64, Ordering::Relaxed);
        io.written_seq = last_seq;
        io.spare.clear();
        if io.spare.capacity() > SPARE_BUFFER_BYTES_MAX {
            io.spare.shrink_to(SPARE_BUFFER_BYTES_MAX / 8);
        }
        Ok(())
    }

    /// Fsyncs the active segment if something written is not yet synced.
    fn sync_written(&self, io: &mut IoState) -> Result<(), WalError> {
        if io.synced_seq >= io.written_seq {
            return Ok(());
        }
        if let Err(e) = io.file.sync_data() {
            return Err(io.fail("sync WAL segment", e));
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        io.synced_seq = io.written_seq;
        Ok(())
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        // Errors cannot be returned from drop; `close` reports them.
        let _ = self.sync();
    }
}

/// Creates segment `id` in `dir`: writes the header to `{id}.wal.tmp`, fsyncs it, renames
/// it into place and fsyncs the directory, so a segment file never exists with a partial
/// header. Returns the file, positioned after the header.
fn create_segment(dir: &Path, id: u64) -> Result<File, WalError> {
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
fn sync_dir(dir: &Path) -> Result<(), WalError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| WalError::io("sync WAL directory", dir, e))
}
