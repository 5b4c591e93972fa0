//! Errors of the write-ahead log.

use std::io;
use std::path::PathBuf;

/// What went wrong in the WAL. Every variant names the file (or directory) involved.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// An operating-system call failed. `op` says what was being done
    /// (e.g. "write WAL segment"), `path` on which file or directory.
    ///
    /// After a failed fsync (or a failed write whose partial record cannot be cut off) the
    /// [`super::Wal`] refuses every further append and sync with the same error: once an
    /// fsync has failed, the page cache can no longer be trusted to hold the data (the
    /// kernel may have dropped the dirty pages), so the only safe way on is to reopen and
    /// replay. A failed write that could be cut back only stalls the WAL
    /// ([`super::Wal::stalled`]).
    #[error("cannot {op} \"{path}\": {source}")]
    Io {
        /// The operation that failed, as a verb phrase.
        op: &'static str,
        /// The file or directory it failed on.
        path: PathBuf,
        /// The error from the operating system.
        #[source]
        source: io::Error,
    },
    /// The bytes on disk are not what the WAL wrote: a bad segment header, a bad record in
    /// a segment that is not the last one, a bad record in the last segment that is
    /// followed by a valid record (so it is not a torn tail), or a missing segment.
    #[error("corrupt WAL segment \"{path}\" at offset {offset}: {reason}")]
    Corrupt {
        /// The segment file.
        path: PathBuf,
        /// Byte offset in the file where the damage starts.
        offset: u64,
        /// What was found there, with got/want values.
        reason: String,
    },
    /// A record's payload is longer than [`super::RECORD_BYTES_MAX`].
    #[error("WAL record of {len} bytes is over the limit of {limit} bytes (WAL in \"{dir}\")")]
    RecordTooLarge {
        /// The payload length that was asked for.
        len: usize,
        /// The limit, [`super::RECORD_BYTES_MAX`].
        limit: usize,
        /// The WAL directory.
        dir: PathBuf,
    },
    /// The replay callback given to [`super::Wal::open`] rejected a record; replay stopped
    /// there and the WAL was not opened.
    #[error("replay of WAL segment \"{path}\" stopped at the record at offset {offset}: {source}")]
    Replay {
        /// The segment file holding the rejected record.
        path: PathBuf,
        /// Byte offset of the rejected record's frame in that file.
        offset: u64,
        /// The callback's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl WalError {
    /// Builds an [`WalError::Io`].
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WalError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// The first I/O error on a WAL's write path, kept so that every later write fails with
/// it (see [`WalError::Io`]).
pub(crate) struct Failure {
    op: &'static str,
    path: PathBuf,
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    /// Remembers `error`, the one that made the WAL unusable.
    pub(crate) fn from_error(error: &WalError) -> Self {
        match error {
            WalError::Io { op, path, source } => Failure {
                op,
                path: path.clone(),
                kind: source.kind(),
                message: source.to_string(),
            },
            other => Failure {
                op: "rotate WAL",
                path: PathBuf::new(),
                kind: io::ErrorKind::Other,
                message: other.to_string(),
            },
        }
    }

    /// The error for a record left pending behind a failed write (see `Wal::stalled`).
    pub(crate) fn stall_error(&self) -> WalError {
        self.with_message(format!(
            "{}; the record waits and is written when the WAL can be written again",
            self.message
        ))
    }

    /// The error for everything after the WAL failed for good.
    pub(crate) fn error(&self) -> WalError {
        self.with_message(format!(
            "an earlier error made this WAL unusable, reopen it: {}",
            self.message
        ))
    }

    fn with_message(&self, message: String) -> WalError {
        WalError::io(
            self.op,
            self.path.clone(),
            io::Error::new(self.kind, message),
        )
    }
}
