//! Group commit: the state shared by appenders and the leader that does the I/O.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::mem;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Instant;

use parking_lot::MutexGuard;

use super::error::Failure;
use super::files::create_segment;
use super::format::{SEGMENT_HEADER_LEN, segment_path};
use super::{Wal, WalError};

/// Above this capacity the spare write buffer is shrunk after use, so that one burst of
/// large records does not pin memory for the life of the shard.
const SPARE_BUFFER_BYTES_MAX: usize = 8 << 20;

pub(super) struct State {
    /// Framed records not yet handed to the file.
    pub(super) buf: Vec<u8>,
    /// The buffer the leader takes `buf`'s bytes into, so no allocation per batch.
    pub(super) spare: Vec<u8>,
    /// Sequence number the next appended record gets.
    pub(super) next_seq: u64,
    /// Highest sequence number whose bytes have been written to the file.
    pub(super) written_seq: u64,
    /// Highest sequence number that has been fsynced.
    pub(super) synced_seq: u64,
    /// A leader is doing I/O; others wait on `leader_done`.
    pub(super) busy: bool,
    /// When `sync_if_due` last synced (by the caller's clock); `None` until it first does.
    pub(super) last_timed_sync: Option<Instant>,
    /// Set by an error that leaves the files in doubt (a failed fsync, a file that cannot
    /// be cut back after a failed write); every later write fails with it.
    pub(super) failed: Option<Failure>,
    /// Set when writing records failed but the file could be cut back to its last whole
    /// record (a full disk): the records are back at the front of `buf`, later leaders try
    /// them again, and a success clears this. Appenders waiting for a record of the failed
    /// batch get this error instead of waiting.
    pub(super) stalled: Option<Failure>,
    /// Where [`Wal::end_segment`] asked the active segment to end: byte offsets into `buf`
    /// with the sequence number of the record before each, in order.
    pub(super) cuts: Vec<(usize, u64)>,
}

pub(super) struct IoState {
    pub(super) file: File,
    pub(super) path: PathBuf,
    pub(super) segment_id: u64,
    /// Bytes of the active segment that hold whole records (and its header): where a
    /// failed write is cut back to.
    pub(super) len: u64,
}

/// How a leader's I/O failed.
enum BatchError {
    /// The files hold whole records up to byte `from` of the batch and the segment ends at
    /// `cuts_done` of its cuts; the rest can be written again later.
    Stalled {
        error: WalError,
        from: usize,
        cuts_done: usize,
    },
    /// The files are in doubt (a failed fsync): the WAL must be reopened.
    Fatal(WalError),
}

/// What a leader should do besides writing the pending bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Lead {
    /// Write only.
    Write,
    /// Write, then fsync if anything is unsynced.
    Sync,
}

impl Wal {
    /// Waits until no thread is doing I/O; fails if an earlier error poisoned the WAL.
    pub(super) fn wait_for_leadership(&self) -> Result<MutexGuard<'_, State>, WalError> {
        let mut state = self.state.lock();
        loop {
            if let Some(failed) = &state.failed {
                return Err(failed.error());
            }
            if !state.busy {
                return Ok(state);
            }
            self.leader_done.wait(&mut state);
        }
    }

    /// Does the I/O as leader: takes every pending byte (and segment end), releases `state`,
    /// writes the bytes, ending segments where asked, fsyncs if `lead` asks and something is
    /// unsynced, then re-locks `state`, publishes the result and wakes every waiter. Returns the
    /// re-locked state and whether it fsynced. The caller checked that no leader is busy.
    pub(super) fn lead<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        lead: Lead,
    ) -> Result<(MutexGuard<'a, State>, bool), WalError> {
        assert!(!state.busy, "one leader at a time");
        state.busy = true;
        let mut batch = mem::take(&mut state.spare);
        mem::swap(&mut batch, &mut state.buf);
        let cuts = mem::take(&mut state.cuts);
        let last_seq = state.next_seq - 1;
        let unsynced = state.synced_seq < last_seq;
        drop(state);

        let result = self.write_batch(&mut self.io.lock(), &batch, &cuts, lead, unsynced);

        let mut state = self.state.lock();
        state.busy = false;
        let result = match result {
            Ok(synced) => {
                state.written_seq = last_seq;
                if synced || (lead != Lead::Write && !unsynced) {
                    state.synced_seq = last_seq;
                }
                if state.stalled.take().is_some() {
                    self.stalled_flag.store(false, Ordering::Release);
                }
                Ok(synced)
            }
            Err(BatchError::Stalled {
                error,
                from,
                cuts_done,
            }) => {
                if let Some(&(_, seq)) = cuts[..cuts_done].last() {
                    // Each segment ended was fsynced before the next began.
                    state.written_seq = state.written_seq.max(seq);
                    state.synced_seq = state.synced_seq.max(seq);
                }
                // What was not written goes back in front of what was appended meanwhile,
                // in the same order, with the segment ends still to make.
                batch.drain(..from);
                let moved = batch.len();
                batch.extend_from_slice(&state.buf);
                mem::swap(&mut batch, &mut state.buf);
                let later_cuts = mem::take(&mut state.cuts);
                state.cuts = cuts[cuts_done..]
                    .iter()
                    .map(|&(at, seq)| (at - from, seq))
                    .chain(later_cuts.into_iter().map(|(at, seq)| (at + moved, seq)))
                    .collect();
                state.stalled = Some(Failure::from_error(&error));
                self.stalled_flag.store(true, Ordering::Release);
                Err(error)
            }
            // Records whose fate is unknown (written but perhaps not synced) are reported
            // as failed: the caller reopens and replays.
            Err(BatchError::Fatal(error)) => {
                state.failed = Some(Failure::from_error(&error));
                Err(error)
            }
        };
        batch.clear();
        if batch.capacity() > SPARE_BUFFER_BYTES_MAX {
            batch.shrink_to(SPARE_BUFFER_BYTES_MAX / 8);
        }
        state.spare = batch;
        self.leader_done.notify_all();
        result.map(|synced| (state, synced))
    }

    /// The leader's I/O: `batch` written, a new segment (after an fsync) at each of `cuts`,
    /// and an fsync at the end if `lead` asks and `unsynced`. Returns whether it fsynced.
    fn write_batch(
        &self,
        io: &mut IoState,
        batch: &[u8],
        cuts: &[(usize, u64)],
        lead: Lead,
        unsynced: bool,
    ) -> Result<bool, BatchError> {
        let mut from = 0;
        for (cuts_done, &(at, last_seq)) in cuts.iter().enumerate() {
            self.write_bytes(io, &batch[from..at], from, cuts_done)?;
            from = at;
            // The closed segment's records are durable before later ones go elsewhere.
            io.file
                .sync_data()
                .map_err(|e| BatchError::Fatal(WalError::io("sync WAL segment", &io.path, e)))?;
            self.syncs.fetch_add(1, Ordering::Relaxed);
            let closed = io.segment_id;
            // If no new segment can be made (a full disk), the cut is made again later: an
            // fsync of the still-active segment, which is harmless, then the creation.
            self.start_next_segment(io)
                .map_err(|error| BatchError::Stalled {
                    error,
                    from,
                    cuts_done,
                })?;
            self.closed.lock().push((closed, last_seq));
        }
        self.write_bytes(io, &batch[from..], from, cuts.len())?;
        let sync = lead != Lead::Write && unsynced;
        if sync {
            io.file
                .sync_data()
                .map_err(|e| BatchError::Fatal(WalError::io("sync WAL segment", &io.path, e)))?;
            self.syncs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(sync)
    }

    /// Writes whole records (batch bytes from offset `from`, after `cuts_done` segment ends)
    /// at the end of the active segment. If the write fails (a full disk), the file is cut
    /// back to its last whole record, so that a later write never follows a partial one,
    /// and the WAL stalls; if even the cut fails, the file is in doubt and the WAL fails.
    fn write_bytes(
        &self,
        io: &mut IoState,
        bytes: &[u8],
        from: usize,
        cuts_done: usize,
    ) -> Result<(), BatchError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if let Err(e) = io.file.write_all(bytes) {
            io.file
                .set_len(io.len)
                .and_then(|()| io.file.seek(SeekFrom::Start(io.len)))
                .map_err(|e| {
                    BatchError::Fatal(WalError::io(
                        "cut back a partly written WAL segment",
                        &io.path,
                        e,
                    ))
                })?;
            return Err(BatchError::Stalled {
                error: WalError::io("write WAL segment", &io.path, e),
                from,
                cuts_done,
            });
        }
        io.len += bytes.len() as u64;
        self.bytes_written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Creates segment id + 1 and makes it the active one.
    fn start_next_segment(&self, io: &mut IoState) -> Result<(), WalError> {
        let next = io
            .segment_id
            .checked_add(1)
            .ok_or_else(|| WalError::Corrupt {
                path: io.path.clone(),
                offset: 0,
                reason: "segment ids are exhausted".to_string(),
            })?;
        io.file = create_segment(&self.dir, next)?;
        io.path = segment_path(&self.dir, next);
        io.segment_id = next;
        io.len = SEGMENT_HEADER_LEN as u64;
        self.segments.lock().push(next);
        Ok(())
    }

    /// Writes pending records as leader, then fsyncs a duplicate handle of the active
    /// segment *after* giving leadership back, so appenders keep writing while the disk
    /// flushes (the timer's fsync of a second of writes can take long). Records up to the
    /// ones written here are durable afterwards: they are in this segment, or in an older
    /// one that was fsynced when it was closed. Returns the state re-locked and whether it fsynced.
    pub(super) fn sync_aside<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
    ) -> Result<(MutexGuard<'a, State>, bool), WalError> {
        let (state, _) = self.lead(state, Lead::Write)?;
        if state.synced_seq >= state.written_seq {
            return Ok((state, false));
        }
        let target = state.written_seq;
        drop(state);
        let one_at_a_time = self.aside_sync.lock();
        let (path, file) = {
            let io = self.io.lock();
            (io.path.clone(), io.file.try_clone())
        };
        let result = file.and_then(|file| file.sync_data());
        drop(one_at_a_time);
        let mut state = self.state.lock();
        match result {
            Ok(()) => {
                self.syncs.fetch_add(1, Ordering::Relaxed);
                state.synced_seq = state.synced_seq.max(target);
                Ok((state, true))
            }
            Err(e) => {
                let err = WalError::io("sync WAL segment", path, e);
                state.failed = Some(Failure::from_error(&err));
                self.leader_done.notify_all();
                Err(err)
            }
        }
    }
}
