//! The engine's error type: every variant says what failed, on which file, and why.

use std::path::{Path, PathBuf};

use crate::catalog::SchemaError;

/// An engine error.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// An I/O operation failed.
    #[error("{what} \"{}\": {source}", path.display())]
    Io {
        /// What was being done (`cannot write part`).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file's bytes are not what Strata wrote: checksum mismatch, bad magic, truncation.
    #[error("corrupt file \"{}\" at offset {offset}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset where the problem was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A write conflicts with the schema.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A WAL error.
    #[error(transparent)]
    Wal(#[from] crate::wal::WalError),
    /// A series index error.
    #[error(transparent)]
    Series(#[from] crate::series::SeriesError),
    /// Building an Arrow batch failed.
    #[error("cannot build Arrow batch: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// Bad options or arguments.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A data directory is locked by another open engine (another process, or another
    /// engine in this one).
    #[error(
        "data directory \"{}\" is in use by another Strata process{}: stop it, or give another data directory",
        path.display(),
        owner.as_ref().map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    InUse {
        /// The data directory.
        path: PathBuf,
        /// The process id the lock file names, when it could be read.
        owner: Option<String>,
    },
    /// The engine is closed or a background task failed.
    #[error("engine unavailable: {0}")]
    Unavailable(String),
    /// The engine refuses changes: it serves reads only (a query server on the lake).
    #[error("{0}")]
    ReadOnly(String),
}

impl StorageError {
    /// The kind of the operating-system error behind this one, if an I/O call failed.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        match self {
            StorageError::Io { source, .. }
            | StorageError::Wal(crate::wal::WalError::Io { source, .. })
            | StorageError::Series(crate::series::SeriesError::Io { source, .. }) => {
                Some(source.kind())
            }
            _ => None,
        }
    }

    /// Whether this failed for want of space: a full disk (`ENOSPC`), a quota (`EDQUOT`)
    /// or a file-size limit (`EFBIG`). Writes fail this way until space returns; reads
    /// go on. Servers answer it with "insufficient storage" (HTTP 507).
    pub fn is_out_of_space(&self) -> bool {
        matches!(
            self.io_kind(),
            Some(
                std::io::ErrorKind::StorageFull
                    | std::io::ErrorKind::QuotaExceeded
                    | std::io::ErrorKind::FileTooLarge
            )
        )
    }

    /// An [`StorageError::Io`] for `path`.
    pub fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}
