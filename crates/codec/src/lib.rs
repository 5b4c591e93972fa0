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
//! # Shared payload formats
//! Per-column payloads are in each module's docs; these two are shared.
//!
//! ## Bit-packed frames
//! `k` unsigned values in frames of 128 (the last one shorter): per frame one byte `w`
//! (0..=64, the bit width of the frame's largest value) then `ceil(len * w / 8)` bytes
//! holding the values LSB-first (value 0 in the lowest bits of byte 0; padding bits are
//! written as zero but not checked). A width over 64 is an error.
//!
//! ## Integer payloads
//! Used by tags 10-13, 20-23 and inside `FloatDecimal`. Values are taken as u64 bit
//! patterns with wrapping arithmetic (i64 cast bit-for-bit), so every delta is exact.
//! - Constant (10/20): `zigzag_varint(v)`.
//! - Step (11/21), `n >= 2`: `zigzag_varint(first)`, `zigzag_varint(step)`;
//!   `v[i] = first + i * step`.
//! - Delta packed (12/22): `zigzag_varint(first)`, then the `n-1` values
//!   `zigzag(v[i] - v[i-1])` as bit-packed frames.
//! - Delta rANS (13/23): the same `n-1` zig-zag deltas (all `< 32`) as a two-state static
//!   rANS stream that also carries the first value; see below.
//!
//! ## rANS stream (tags 13/23)
//! Symbols `s[0..m]` (`m = n-1`), each a zig-zag delta `< 32`. Model: row `table_id` of a
//! fixed table family (24 rows x 32 frequencies summing to 4096, in `rans_tables.rs`, part
//! of the format), `cum[s]` = sum of `freq` below `s`. Two states, A (even indexes) and
//! B (odd indexes), each in `[2^23, 2^31)`, renormalised a byte at a time.
//! 1. byte `table_id | 0x80` when the first value rides in state A (`table_id < 24`);
//! 2. if bit 0x80 is clear: `zigzag_varint(first)`;
//! 3. final state A, final state B: u32 little-endian each;
//! 4. the renormalisation bytes in the order the decoder reads them.
//!
//! The last `t = min(4, m / 2)` odd-index symbols are not coded but packed 5 bits each
//! (earliest lowest) into `pB`. The decoder takes the coded symbols in index order (`s[0]`
//! with A, `s[1]` with B, ..., skipping that raw tail): `slot = x mod 4096`, `s` = the
//! symbol with `cum[s] <= slot < cum[s] + freq[s]`, `x = freq[s] * (x >> 12) + slot - cum[s]`,
//! then while `x < 2^23`: `x = x << 8 | next byte`. At the end A must be `2^23 + pA` and B
//! `2^23 + pB`, with `pA = zigzag(first)` (flag set, `< 2^23`) or 0 (flag clear); anything
//! else is an error. The encoder runs the same symbols backwards from those start states:
//! before coding `s` it emits `x mod 256`, `x >>= 8` while `x >= 2^19 * freq[s]`, then
//! `x = (x / freq[s]) * 4096 + x mod freq[s] + cum[s]`; its emitted bytes reversed are part 4.
//!
//! Blocks are self-delimiting: `decode` returns the bytes it used, so blocks can be
//! concatenated. Each column also has `decode_range(block, from, to, out)`, which appends
//! only values `from..to` (a stream is decoded up to `to` and no further; nothing before
//! `from` is copied) and returns the block's value count, and [`timestamp::regular`] gives a
//! regular block's `(first, step, count)` so a time's row is found by arithmetic.
//! A block carries no checksum: storage checksums blocks. Decoding arbitrary
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

/// What the `decode_two` functions return: the bytes each of the two blocks used, or the
/// error and which block (0 or 1) it is in.
pub type DecodedTwo = Result<(usize, usize), (usize, CodecError)>;

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
