//! The [`Wal`]: opening with replay, group-committed appends, rotation, removal.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use super::commit::{IoState, Lead, State};
use super::files::{open_dir, sync_dir};
use super::format::{RECORD_BYTES_MAX, SEGMENT_HEADER_LEN, encode_frame_header, segment_path};
use super::replay::{Replay, ReplayMode};
use super::{WalError, WalOptions, WalSync};

/// A shard's write-ahead log. See the [module documentation](super) for the file layout
/// and the recovery rules.
///
/// All methods take `&self`; a `Wal` is `Send + Sync` and meant to be shared by the
/// shard's writer threads (e.g. in an `Arc`).
///
/// Group commit: `state` holds the pending bytes and is locked only to copy a record in,
/// to check a ticket, or to hand the pending bytes to the one thread doing I/O (the
/// leader, `state.busy`). The leader writes them all with one `write` (and one fsync for
/// `Always`) under the `io` lock, then wakes every waiting appender at once. `sync` and
/// `sync_if_due` write as leader but fsync after giving leadership back, so in `Interval`
/// mode appenders never wait for the timer's fsync.
pub struct Wal {
    pub(super) dir: PathBuf,
    pub(super) sync: WalSync,
    pub(super) state: Mutex<State>,
    /// Signalled whenever a leader finishes, so waiting appenders re-check their ticket.
    pub(super) leader_done: Condvar,
    /// The active segment; locked only by the leader, never while holding `state`.
    pub(super) io: Mutex<IoState>,
    /// Ids of the segment files that exist, oldest first; the last one is the active one.
    /// Separate so that metrics never wait behind an fsync.
    pub(super) segments: Mutex<Vec<u64>>,
    pub(super) bytes_written: AtomicU64,
    pub(super) syncs: AtomicU64,
    /// Serializes fsyncs made outside leadership ([`Wal::sync`], [`Wal::sync_if_due`]).
    pub(super) aside_sync: Mutex<()>,
    /// Closed segments and the highest sequence number each holds, oldest first; lets
    /// [`Wal::remove_segments_covered`] drop exactly the segments a flush made redundant.
    pub(super) closed: Mutex<Vec<(u64, u64)>>,
    /// Whether `state.stalled` is set, readable without the lock.
    pub(super) stalled_flag: AtomicBool,
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
        let mode = if options.skip_damaged {
            ReplayMode::SkipDamaged
        } else {
            ReplayMode::Repair
        };
        let (replay, file, ids) = open_dir(dir, mode, &mut on_record)?;
        let active = replay.active_segment;
        // Every replayed segment holds records numbered at most `replay.records`.
        let closed = ids
            .iter()
            .filter(|id| **id != active)
            .map(|id| (*id, replay.records))
            .collect();
        let wal = Wal {
            dir: dir.to_path_buf(),
            sync: options.sync,
            state: Mutex::new(State {
                buf: Vec::new(),
                spare: Vec::new(),
                next_seq: replay.records + 1,
                written_seq: replay.records,
                synced_seq: replay.records,
                busy: false,
                last_timed_sync: None,
                failed: None,
                stalled: None,
                cuts: Vec::new(),
            }),
            leader_done: Condvar::new(),
            io: Mutex::new(IoState {
                file,
                path: segment_path(dir, active),
                segment_id: active,
                len: SEGMENT_HEADER_LEN as u64,
            }),
            segments: Mutex::new(ids),
            bytes_written: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            aside_sync: Mutex::new(()),
            closed: Mutex::new(closed),
            stalled_flag: AtomicBool::new(false),
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
    /// Group commit: the record is framed into a shared buffer under a short lock; if no
    /// other thread is doing I/O, this one writes every pending record in one `write`
    /// (and, for `Always`, one fsync covers them all); otherwise it waits, and returns
    /// without any I/O if the thread that was doing it covered this record.
    pub fn append(&self, payload: &[u8]) -> Result<u64, WalError> {
        let seq = self.enqueue(payload)?;
        self.commit(seq)?;
        Ok(seq)
    }

    /// The first half of [`Wal::append`]: frames the record into the pending buffer and
    /// returns its sequence number, without any I/O. A shard calls it inside its critical
    /// section, so records lie in the files in the order the shard applied them, and calls
    /// [`Wal::commit`] after releasing its lock.
    pub fn enqueue(&self, payload: &[u8]) -> Result<u64, WalError> {
        if payload.len() > RECORD_BYTES_MAX {
            return Err(WalError::RecordTooLarge {
                len: payload.len(),
                limit: RECORD_BYTES_MAX,
                dir: self.dir.clone(),
            });
        }
        let frame_header = encode_frame_header(payload);
        let mut state = self.state.lock();
        if let Some(failed) = &state.failed {
            return Err(failed.error());
        }
        state.buf.extend_from_slice(&frame_header);
        state.buf.extend_from_slice(payload);
        let seq = state.next_seq;
        state.next_seq += 1;
        Ok(seq)
    }

    /// Ends the active segment after the records enqueued so far, without I/O: the next
    /// write (or [`Wal::write_pending`]) writes them, fsyncs and closes the segment, and
    /// puts later records in a new one. A shard calls it inside its critical section when
    /// it freezes a memtable, so that a closed segment holds only records of memtables
    /// frozen by then, and [`Wal::remove_segments_covered`] drops it once they are flushed.
    /// (A segment that also held later records would be kept, and a crash would replay
    /// rows already in parts, even rows deleted since.)
    pub fn end_segment(&self) {
        let mut state = self.state.lock();
        let at = (state.buf.len(), state.next_seq - 1);
        if state.cuts.last() != Some(&at) {
            state.cuts.push(at);
        }
    }

    /// Writes every pending record, ending segments where [`Wal::end_segment`] asked;
    /// fsyncs only what those ends need.
    pub fn write_pending(&self) -> Result<(), WalError> {
        let state = self.wait_for_leadership()?;
        if state.buf.is_empty() && state.cuts.is_empty() {
            return Ok(());
        }
        self.lead(state, Lead::Write).map(|_| ())
    }

    /// The second half of [`Wal::append`]: returns once record `seq` is written (and
    /// fsynced for [`WalSync::Always`]), doing the I/O for every pending record if no other
    /// thread is (group commit).
    pub fn commit(&self, seq: u64) -> Result<(), WalError> {
        let always = self.sync == WalSync::Always;
        let mut state = self.state.lock();
        loop {
            let done = if always {
                state.synced_seq
            } else {
                state.written_seq
            };
            if done >= seq {
                return Ok(());
            }
            if let Some(failed) = &state.failed {
                return Err(failed.error());
            }
            if state.busy {
                self.leader_done.wait(&mut state);
                continue;
            }
            // The record is pending behind a failed write: it is written when the WAL is
            // written again (see `Wal::stalled`), but this caller is not kept waiting.
            if let Some(stalled) = &state.stalled {
                return Err(stalled.stall_error());
            }
            let lead = if always { Lead::Sync } else { Lead::Write };
            state = self.lead(state, lead)?.0;
        }
    }

    /// Writes everything pending and fsyncs the active segment if anything is unsynced,
    /// whatever the [`WalSync`] mode.
    pub fn sync(&self) -> Result<(), WalError> {
        let state = self.wait_for_leadership()?;
        self.sync_aside(state).map(|_| ())
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
        let state = self.wait_for_leadership()?;
        let due = state
            .last_timed_sync
            .is_none_or(|last| now.saturating_duration_since(last) >= interval);
        if !due {
            return Ok(false);
        }
        let (mut state, synced) = self.sync_aside(state)?;
        if synced {
            state.last_timed_sync = Some(now);
        }
        Ok(synced)
    }

    /// The error of the last failed write, while records wait to be written again: a write
    /// failed (a full disk, say) and the file was cut back to its last whole record. Until
    /// a write succeeds ([`Wal::write_pending`] and [`Wal::sync`] try the pending records
    /// again; [`Wal::commit`] only reports this error), an owner should refuse new records
    /// rather than pile them up.
    pub fn stalled(&self) -> Option<WalError> {
        // Every shard write asks: an atomic load, not a lock, while all is well.
        if !self.stalled_flag.load(Ordering::Acquire) {
            return None;
        }
        let state = self.state.lock();
        state.stalled.as_ref().map(|s| s.stall_error())
    }

    /// Why this WAL refuses records now, if it does: failed for good (reopen it), or
    /// stalled (see [`Wal::stalled`]).
    pub fn write_error(&self) -> Option<WalError> {
        let state = self.state.lock();
        match (&state.failed, &state.stalled) {
            (Some(failed), _) => Some(failed.error()),
            (None, Some(stalled)) => Some(stalled.stall_error()),
            (None, None) => None,
        }
    }

    /// Writes and fsyncs everything pending, closes the active segment and starts segment
    /// id + 1 ([`Wal::end_segment`] then [`Wal::write_pending`]); returns the new id. Every
    /// record whose `append` returned before this call lies in a segment with a smaller id.
    pub fn rotate(&self) -> Result<u64, WalError> {
        self.end_segment();
        self.write_pending()?;
        Ok(self.active_segment())
    }

    /// Deletes the closed segments, oldest first, all of whose records have sequence
    /// numbers at most `seq` (their rows are durable elsewhere); stops at the first
    /// segment holding a later record. Returns how many were removed.
    pub fn remove_segments_covered(&self, seq: u64) -> Result<usize, WalError> {
        let first_kept = {
            let closed = self.closed.lock();
            closed
                .iter()
                .find(|(_, last)| *last > seq)
                .map(|(id, _)| *id)
                .unwrap_or_else(|| self.active_segment())
        };
        let before = self.segment_ids().len();
        self.remove_segments_before(first_kept)?;
        self.closed.lock().retain(|(id, _)| *id >= first_kept);
        Ok(before - self.segment_ids().len())
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
}

impl Drop for Wal {
    fn drop(&mut self) {
        // Errors cannot be returned from drop; `close` reports them.
        let _ = self.sync();
    }
}
