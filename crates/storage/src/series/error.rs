//! Errors of the series index.

use std::path::PathBuf;

use crate::model::SeriesId;

/// What can go wrong in the series index.
#[derive(Debug, thiserror::Error)]
pub enum SeriesError {
    /// Reading or writing the series log failed.
    #[error("cannot {op} series log \"{}\": {source}", path.display())]
    Io {
        /// What was being done (`open`, `read`, `append to`, ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The series log holds bytes that are not a valid log and are not a torn tail: a bad
    /// header, a bad record followed by good ones, a record out of id order.
    #[error("corrupt series log \"{}\" at offset {offset}: {reason}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Byte offset of the bad header or record.
        offset: u64,
        /// What is wrong there.
        reason: String,
    },
    /// A tag key or value is longer than the log can store (`u16::MAX` bytes).
    #[error("tag {what} is {len} bytes long; the series index stores at most {max}")]
    TagTooLong {
        /// `key` or `value`.
        what: &'static str,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A series has more tags than the log can store (`u16::MAX`).
    #[error("series has {count} tags; the series index stores at most {max}")]
    TooManyTags {
        /// Number of distinct tag keys.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A new series was refused by its admission check (the per-database series limit);
    /// the reason says which limit.
    #[error("{0}")]
    Refused(String),
    /// The index is full: no series id, interned string offset or record size is left.
    #[error("series index full: {0}")]
    Full(&'static str),
    /// A series replayed from the WAL does not fit the index.
    #[error("cannot replay series {id}: {reason}")]
    Replay {
        /// The replayed id.
        id: SeriesId,
        /// Why it does not fit.
        reason: String,
    },
    /// [`super::SeriesIndex::persist`] on an index made by [`super::SeriesIndex::new`].
    #[error("series index has no log to persist to (made in memory)")]
    NoLog,
}
