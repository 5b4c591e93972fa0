//! The one error type of this crate.

use crate::Encoding;

/// Why a block could not be decoded.
///
/// A codec block carries no checksum (storage checksums whole blocks), so corruption that
/// keeps the block well-formed decodes to wrong values; every other defect is one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// The block ends before its header or payload does.
    #[error("truncated block: needed {needed} more byte(s) at offset {offset}")]
    Truncated {
        /// Offset in the block where more bytes were needed.
        offset: usize,
        /// How many more bytes were needed at least.
        needed: usize,
    },
    /// Byte 0 is not a known [`Encoding`] tag.
    #[error("unknown encoding tag {tag}")]
    UnknownTag {
        /// The tag byte found.
        tag: u8,
    },
    /// The tag is known but belongs to another column type.
    #[error("block has encoding {found:?}, which is not a {expected} encoding")]
    WrongColumnType {
        /// Column type the caller asked for (`"timestamp"`, `"float"`, ...).
        expected: &'static str,
        /// Encoding found in the block.
        found: Encoding,
    },
    /// The value count in the header is over [`crate::MAX_BLOCK_VALUES`].
    #[error("block claims {count} values, over the limit of {max}")]
    CountOverLimit {
        /// The count found.
        count: u64,
        /// The limit.
        max: usize,
    },
    /// The payload is malformed (bad varint, bad width, bad table id, bad UTF-8, ...).
    #[error("invalid {encoding:?} payload at offset {offset}: {reason}")]
    InvalidPayload {
        /// Encoding of the block.
        encoding: Encoding,
        /// Offset in the block where the problem was found.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A range decode asked for values `from..to` of a block that holds `count` values.
    #[error("values {from}..{to} asked of a block of {count} values")]
    RangeOutOfBounds {
        /// First value asked for.
        from: usize,
        /// One past the last value asked for.
        to: usize,
        /// Values in the block.
        count: usize,
    },
}
