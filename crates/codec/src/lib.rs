//! Column encodings for Strata: pure functions from a slice of values of one column of one
//! series to one self-describing block of bytes, and back.
//!
//! ```text
//! write path: &[T] --encode--> block bytes --(storage: checksum, part file)
//! read path:  part file --(storage: verify checksum)--> block bytes --decode--> Vec<T>
//! ```
//!
//! # Module map
//! - [`timestamp`] i64 ns: regular interval (power-of-ten divisor) or delta-of-delta frames.
//! - [`integer`] i64 and [`unsigned`] u64: constant, constant step, zig-zag deltas bit-packed,
//!   or zig-zag deltas rANS-coded with a static table (shared core: `ints`).
//! - [`float`] f64: decimals as scaled integers (the integer core), otherwise pco.
//! - [`boolean`]: constant or one bit per value.
//! - [`string`]: raw or dictionary, then zstd where it pays.
//! - [`Encoding`]: every tag number, in one place. [`CodecError`]: every failure.
//! - internals: `header` (tag, varints, zig-zag), `bitpack` (frames), `rans` +
//!   `rans_tables` (entropy coder and its fixed tables).
//!
//! # Block layout
//! ```text
//! +--------+-------------------+-----------------------------+
//! | tag u8 | count LEB128 u64  | payload (depends on the tag) |
//! +--------+-------------------+-----------------------------+
//! ```
//! - `tag` is an [`Encoding`]; tags are distinct across column types, so decoding a block
//!   with the wrong column's function fails with [`CodecError::WrongColumnType`].
//! - `count` is the number of values, at most [`MAX_BLOCK_VALUES`]; when it is 0 there is no
//!   payload. LEB128: 7 bits a byte, low group first, high bit set on all but the last byte.
//! - Each module's docs give its payloads byte by byte. Multi-byte integers are little-endian;
//!   bit strings are LSB-first; zig-zag maps 0, -1, 1, -2 to 0, 1, 2, 3.
//!
//! Blocks are self-delimiting: `decode` returns the bytes it used, so blocks can be
//! concatenated. A block carries no checksum: storage checksums blocks. Decoding arbitrary
//! bytes never panics and allocates at most what [`MAX_BLOCK_VALUES`] values need (and,
//! for strings, [`string::MAX_STRING_PAYLOAD_BYTES`]); a corrupted block either fails with
//! an error or decodes to wrong values.
//!
//! # Encoding choice
//! Each `encode` picks the smallest of its candidates for the block; none is configured.
//! Changing a choice never changes how existing blocks decode: a tag's layout is fixed.

mod bitpack;
pub mod boolean;
mod encoding;
mod error;
pub mod float;
mod header;
pub mod integer;
mod ints;
mod rans;
mod rans_tables;
pub mod string;
pub mod timestamp;
pub mod unsigned;

pub use encoding::{ColumnType, Encoding};
pub use error::CodecError;

/// Most values one block may hold. Storage cuts blocks of a few thousand points; 2^20 leaves
/// room for that to grow while bounding what a hostile header can make a decoder allocate
/// (8 MiB of i64/f64).
pub const MAX_BLOCK_VALUES: usize = 1 << 20;

/// The encoding and value count of a block of any column type, from its header alone.
pub fn peek_header(block: &[u8]) -> Result<(Encoding, usize), CodecError> {
    let tag = *block.first().ok_or(CodecError::Truncated {
        offset: 0,
        needed: 1,
    })?;
    let encoding = Encoding::from_tag(tag).ok_or(CodecError::UnknownTag { tag })?;
    let (_, n) = header::read_header(block, encoding.column_type())?;
    Ok((encoding, n))
}
