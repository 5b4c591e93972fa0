//! Timestamp columns (i64 nanoseconds; any order, any i64).
//! - `TimestampRegular` (1), for `v[i] = first + i * step` (step may be 0 or negative):
//!   payload `e` (1 byte, 0..=18), `zigzag_varint(first / 10^e)`, `zigzag_varint(step / 10^e)`,
//!   with `e` the largest exponent dividing both. A 1,080-point block of 10 s steps costs
//!   10 bytes: the divisor turns 10^10 ns into 1 and the start into a 5-byte varint.
//! - `TimestampDeltaOfDelta` (2): `e` (1 byte, 0..=18, the largest exponent with every value
//!   divisible by 10^e), then over `u[i] = v[i] / 10^e`: `zigzag_varint(u[0])`; if `n >= 2`
//!   `zigzag_varint(u[1] - u[0])`; then the `n-2` values
//!   `zigzag((u[i] - u[i-1]) - (u[i-1] - u[i-2]))` in bit-packed frames (crate docs, "Bit-packed frames").
//!   The divisor matters: ns timestamps with ms jitter shrink from ~28 to ~8 bits a point.
//!   All arithmetic wraps, so out-of-order input and i64::MIN/MAX are exact.
//!
//! (No payload at all when the count is 0.)

use crate::bitpack;
use crate::header::{Reader, check_range, put_header, put_varint, read_header, unzigzag, zigzag};
use crate::{CodecError, ColumnType, Encoding};

/// Largest power-of-ten exponent tried for a regular block (10^18 fits in an i64).
const MAX_DIVISOR_EXPONENT: u32 = 18;

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode(values: &[i64], out: &mut Vec<u8>) {
    let Some(&first) = values.first() else {
        put_header(out, Encoding::TimestampRegular, 0);
        return;
    };
    let step = values.get(1).map_or(0, |&v1| v1.wrapping_sub(first));
    if values.windows(2).all(|w| w[1].wrapping_sub(w[0]) == step) {
        put_header(out, Encoding::TimestampRegular, values.len());
        let e = (0..=MAX_DIVISOR_EXPONENT)
            .rev()
            .find(|&e| {
                let d = 10i64.pow(e);
                first % d == 0 && step % d == 0
            })
            .unwrap_or(0);
        let d = 10i64.pow(e);
        out.push(e as u8);
        put_varint(out, zigzag(first / d));
        put_varint(out, zigzag(step / d));
        return;
    }
    put_header(out, Encoding::TimestampDeltaOfDelta, values.len());
    let mut e = MAX_DIVISOR_EXPONENT;
    for &v in values {
        while e > 0 && v % 10i64.pow(e) != 0 {
            e -= 1;
        }
    }
    let d = 10i64.pow(e);
    let scaled: Vec<i64> = values.iter().map(|&v| v / d).collect();
    out.push(e as u8);
    put_varint(out, zigzag(scaled[0]));
    put_varint(out, zigzag(scaled[1].wrapping_sub(scaled[0])));
    let dods: Vec<u64> = scaled
        .windows(3)
        .map(|w| {
            zigzag(
                w[2].wrapping_sub(w[1])
                    .wrapping_sub(w[1].wrapping_sub(w[0])),
            )
        })
        .collect();
    bitpack::pack(&dods, out);
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<i64>) -> Result<usize, CodecError> {
    let len = out.len();
    decode_inner(block, out).inspect_err(|_| out.truncate(len))
}

fn decode_inner(block: &[u8], out: &mut Vec<i64>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Timestamp)?;
    if n == 0 {
        return Ok(r.pos);
    }
    if r.encoding == Encoding::TimestampRegular {
        let e = u32::from(r.byte()?);
        if e > MAX_DIVISOR_EXPONENT {
            return Err(r.invalid("divisor exponent over 18"));
        }
        let d = 10i64.pow(e);
        let mut acc = r.zigzag_varint()?.wrapping_mul(d);
        let step = r.zigzag_varint()?.wrapping_mul(d);
        out.reserve(n);
        for _ in 0..n {
            out.push(acc);
            acc = acc.wrapping_add(step);
        }
        return Ok(r.pos);
    }
    let e = u32::from(r.byte()?);
    if e > MAX_DIVISOR_EXPONENT {
        return Err(r.invalid("divisor exponent over 18"));
    }
    let d = 10i64.pow(e);
    let mut acc = r.zigzag_varint()?;
    out.push(acc.wrapping_mul(d));
    if n == 1 {
        return Ok(r.pos);
    }
    let mut delta = r.zigzag_varint()?;
    acc = acc.wrapping_add(delta);
    let frames = (n - 2).div_ceil(bitpack::FRAME_LEN);
    if frames > r.remaining() {
        return Err(CodecError::Truncated {
            offset: r.pos,
            needed: frames - r.remaining(),
        });
    }
    out.reserve(n);
    out.push(acc.wrapping_mul(d));
    bitpack::unpack(&mut r, n - 2, |z| {
        delta = delta.wrapping_add(unzigzag(z));
        acc = acc.wrapping_add(delta);
        out.push(acc.wrapping_mul(d));
    })?;
    Ok(r.pos)
}

/// `Some((first, step, count))` when the block is `TimestampRegular` with at least one
/// value: value `i` is `first + i * step` (wrapping, as [`decode`] computes it), so the row
/// of a time can be found by arithmetic instead of decoding. `None` for any other block.
pub fn regular(block: &[u8]) -> Result<Option<(i64, i64, usize)>, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Timestamp)?;
    if n == 0 || r.encoding != Encoding::TimestampRegular {
        return Ok(None);
    }
    let (first, step) = regular_payload(&mut r)?;
    Ok(Some((first, step, n)))
}

/// Reads a `TimestampRegular` payload: the first value and the step, scaled back.
fn regular_payload(r: &mut Reader<'_>) -> Result<(i64, i64), CodecError> {
    let e = u32::from(r.byte()?);
    if e > MAX_DIVISOR_EXPONENT {
        return Err(r.invalid("divisor exponent over 18"));
    }
    let d = 10i64.pow(e);
    let first = r.zigzag_varint()?.wrapping_mul(d);
    let step = r.zigzag_varint()?.wrapping_mul(d);
    Ok((first, step))
}

/// Appends values `from..to` of the block at the start of `block` (what [`decode`] gives,
/// sliced) and returns the block's value count. A regular block is computed from `from`
/// on; a delta-of-delta block is decoded only up to `to` (so the block's length is not
/// checked; storage checksums blocks) and nothing before `from` is copied. On error `out`
/// is left as it was; a range past the count is [`CodecError::RangeOutOfBounds`].
pub fn decode_range(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<i64>,
) -> Result<usize, CodecError> {
    let len = out.len();
    decode_range_inner(block, from, to, out).inspect_err(|_| out.truncate(len))
}

fn decode_range_inner(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<i64>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Timestamp)?;
    check_range(from, to, n)?;
    if from == to {
        return Ok(n);
    }
    if r.encoding == Encoding::TimestampRegular {
        let (first, step) = regular_payload(&mut r)?;
        let mut acc = first.wrapping_add(step.wrapping_mul(from as i64));
        out.reserve(to - from);
        for _ in from..to {
            out.push(acc);
            acc = acc.wrapping_add(step);
        }
        return Ok(n);
    }
    let e = u32::from(r.byte()?);
    if e > MAX_DIVISOR_EXPONENT {
        return Err(r.invalid("divisor exponent over 18"));
    }
    let d = 10i64.pow(e);
    let mut acc = r.zigzag_varint()?;
    out.reserve(to - from);
    if from == 0 {
        out.push(acc.wrapping_mul(d));
    }
    if to == 1 {
        return Ok(n);
    }
    let mut delta = r.zigzag_varint()?;
    acc = acc.wrapping_add(delta);
    if from <= 1 {
        out.push(acc.wrapping_mul(d));
    }
    if to == 2 {
        return Ok(n);
    }
    let frames = (n - 2).div_ceil(bitpack::FRAME_LEN);
    if frames > r.remaining() {
        return Err(CodecError::Truncated {
            offset: r.pos,
            needed: frames - r.remaining(),
        });
    }
    // Delta-of-delta j gives value j + 2; frames are cut from the start, so reading the
    // first `to - 2` reads a prefix of the same frames.
    let mut index = 1;
    bitpack::unpack(&mut r, to - 2, |z| {
        delta = delta.wrapping_add(unzigzag(z));
        acc = acc.wrapping_add(delta);
        index += 1;
        if index >= from {
            out.push(acc.wrapping_mul(d));
        }
    })?;
    Ok(n)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Timestamp).map(|(_, n)| n)
}
