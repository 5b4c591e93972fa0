//! bool columns.
//! - `BooleanConstant` (40): payload one byte, 0 or 1 (none if the count is 0).
//! - `BooleanPacked` (41): `ceil(n/8)` bytes, value `i` in bit `i % 8` of byte `i / 8`
//!   (LSB first); padding bits must be zero.

use crate::header::{check_range, put_header, read_header};
use crate::{CodecError, ColumnType, Encoding};

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode(values: &[bool], out: &mut Vec<u8>) {
    match values.first() {
        None => put_header(out, Encoding::BooleanConstant, 0),
        Some(&v) if values.iter().all(|&x| x == v) => {
            put_header(out, Encoding::BooleanConstant, values.len());
            out.push(u8::from(v));
        }
        Some(_) => {
            put_header(out, Encoding::BooleanPacked, values.len());
            for chunk in values.chunks(8) {
                out.push(
                    chunk
                        .iter()
                        .enumerate()
                        .fold(0u8, |b, (i, &v)| b | (u8::from(v) << i)),
                );
            }
        }
    }
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<bool>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Boolean)?;
    if n == 0 {
        return Ok(r.pos);
    }
    if r.encoding == Encoding::BooleanConstant {
        let v = match r.byte()? {
            0 => false,
            1 => true,
            _ => return Err(r.invalid("constant boolean byte is not 0 or 1")),
        };
        out.extend(std::iter::repeat_n(v, n));
        return Ok(r.pos);
    }
    let bytes = r.bytes(n.div_ceil(8))?;
    if n % 8 != 0 && bytes[bytes.len() - 1] >> (n % 8) != 0 {
        return Err(r.invalid("padding bits are not zero"));
    }
    out.reserve(n);
    out.extend((0..n).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1));
    Ok(r.pos)
}

/// Appends values `from..to` of the block at the start of `block` (what [`decode`] gives,
/// sliced) and returns the block's value count. On error `out` is left as it was; a range
/// past the count is [`CodecError::RangeOutOfBounds`].
pub fn decode_range(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<bool>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Boolean)?;
    check_range(from, to, n)?;
    if n == 0 {
        return Ok(n);
    }
    if r.encoding == Encoding::BooleanConstant {
        let v = match r.byte()? {
            0 => false,
            1 => true,
            _ => return Err(r.invalid("constant boolean byte is not 0 or 1")),
        };
        out.extend(std::iter::repeat_n(v, to - from));
        return Ok(n);
    }
    let bytes = r.bytes(n.div_ceil(8))?;
    if n % 8 != 0 && bytes[bytes.len() - 1] >> (n % 8) != 0 {
        return Err(r.invalid("padding bits are not zero"));
    }
    out.reserve(to - from);
    out.extend((from..to).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1));
    Ok(n)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Boolean).map(|(_, n)| n)
}
