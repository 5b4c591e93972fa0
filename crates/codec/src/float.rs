//! f64 columns; every block round-trips bit-exactly (NaN payloads, -0.0, ±inf, subnormals).
//! - `FloatDecimal` (30), when every value `v` equals `(m as f64) / 10^e` bit for bit for an
//!   integer `|m| <= 2^53` and one block exponent `e` (0..=18): payload `e` (1 byte), the
//!   integer tag (10-13) of the mantissa payload (1 byte), then that integer payload of the
//!   mantissas (see the crate docs, "Integer payloads"). Decoding computes `(m as f64) / 10^e` (IEEE division,
//!   correctly rounded, so the same on every platform). -0.0, NaN and ±inf never qualify.
//! - `FloatPco` (31): `varint(len)` then `len` bytes of a pco (pcodec 1.x) standalone file of
//!   the values, which pco restores bit-exactly.
//!
//! (No payload at all when the count is 0; such a block is tagged `FloatDecimal`.)

use crate::header::{check_range, put_header, put_varint, read_header};
use crate::ints::{self, IntKind, RansBlock, decode_payload, decode_payload_range, encode_payload};
use crate::{CodecError, ColumnType, DecodedTwo, Encoding, integer};

/// Largest decimal exponent tried; 10^18 is exact in f64 (powers of ten are exact to 10^22).
const MAX_DECIMAL_EXPONENT: usize = 18;
/// Mantissas must be exact in f64, or `m as f64` would not be the mantissa.
const MAX_MANTISSA: f64 = 9_007_199_254_740_992.0; // 2^53

const POW10: [f64; MAX_DECIMAL_EXPONENT + 1] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18,
];

#[inline]
fn mantissa(v: f64, e: usize) -> Option<i64> {
    let m = (v * POW10[e]).round();
    if m.is_nan() || m.abs() > MAX_MANTISSA {
        return None; // also rejects NaN and ±inf
    }
    // Check through the integer, exactly as decode computes: this is what rejects -0.0.
    let m = m as i64;
    ((m as f64 / POW10[e]).to_bits() == v.to_bits()).then_some(m)
}

/// Mantissas of `values` at the smallest exponent that suits all of them, if any.
fn as_decimals(values: &[f64]) -> Option<(usize, Vec<i64>)> {
    let mut e = 0;
    for &v in values {
        // Any exponent above a value's own also represents it (the mantissa only gains
        // trailing zeros) as long as it stays under 2^53; the final pass checks that.
        while mantissa(v, e).is_none() {
            e += 1;
            if e > MAX_DECIMAL_EXPONENT {
                return None;
            }
        }
    }
    let ms: Option<Vec<i64>> = values.iter().map(|&v| mantissa(v, e)).collect();
    ms.map(|ms| (e, ms))
}

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode(values: &[f64], out: &mut Vec<u8>) {
    if values.is_empty() {
        put_header(out, Encoding::FloatDecimal, 0);
        return;
    }
    if let Some((e, ms)) = as_decimals(values) {
        put_header(out, Encoding::FloatDecimal, values.len());
        out.push(e as u8);
        let tag_at = out.len();
        out.push(0);
        let bits: Vec<u64> = ms.iter().map(|&m| m as u64).collect();
        let kind = encode_payload(&bits, out);
        out[tag_at] = integer::tag_of(kind).tag();
        return;
    }
    put_header(out, Encoding::FloatPco, values.len());
    // pco only fails on invalid configurations; the default one is valid.
    let compressed = pco::standalone::simple_compress(values, &pco::ChunkConfig::default())
        .expect("pco compresses f64 with the default configuration");
    put_varint(out, compressed.len() as u64);
    out.extend_from_slice(&compressed);
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<f64>) -> Result<usize, CodecError> {
    let len = out.len();
    decode_inner(block, out).inspect_err(|_| out.truncate(len))
}

fn decode_inner(block: &[u8], out: &mut Vec<f64>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Float)?;
    if n == 0 {
        return Ok(r.pos);
    }
    if r.encoding == Encoding::FloatDecimal {
        let e = r.byte()? as usize;
        if e > MAX_DECIMAL_EXPONENT {
            return Err(r.invalid("decimal exponent over 18"));
        }
        let tag = r.byte()?;
        let kind = Encoding::from_tag(tag)
            .and_then(integer::kind_of)
            .ok_or(r.invalid("mantissa payload tag is not an integer encoding"))?;
        let p = POW10[e];
        decode_payload(kind, &mut r, n, out, |m| (m as i64 as f64) / p)?;
        return Ok(r.pos);
    }
    let len = r.len_varint()?;
    let bytes = r.bytes(len)?;
    let start = out.len();
    out.resize(start + n, 0.0);
    let progress = pco::standalone::simple_decompress_into(bytes, &mut out[start..])
        .map_err(|_| r.invalid("pco could not decode the payload"))?;
    if progress.n_processed != n || !progress.finished {
        return Err(r.invalid("pco payload holds a different number of values"));
    }
    Ok(r.pos)
}

/// Appends the values of block `first`, then those of block `second`, as
/// [`crate::integer::decode_two`] does for i64 blocks (decimal blocks whose mantissas are
/// rANS-coded are decoded in one loop).
pub fn decode_two(first: &[u8], second: &[u8], out: &mut Vec<f64>) -> DecodedTwo {
    let open = |block| {
        let (mut reader, n) = read_header(block, ColumnType::Float).ok()?;
        if n == 0 || reader.encoding != Encoding::FloatDecimal {
            return None;
        }
        let p = *POW10.get(reader.byte().ok()? as usize)?;
        let kind = Encoding::from_tag(reader.byte().ok()?).and_then(integer::kind_of)?;
        (kind == IntKind::DeltaRans).then_some(RansBlock {
            reader,
            n,
            conv: move |m: u64| (m as i64 as f64) / p,
        })
    };
    ints::decode_two([first, second], out, open, decode)
}

/// Appends values `from..to` of the block at the start of `block` (what [`decode`] gives,
/// sliced, without converting or copying the values outside the range) and returns the
/// block's value count. Delta streams are decoded only up to `to` (a pco payload is decoded whole), so the block's length is
/// not checked; storage checksums blocks. On error `out` is left as it was; a range past
/// the count is [`CodecError::RangeOutOfBounds`].
pub fn decode_range(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<f64>,
) -> Result<usize, CodecError> {
    let len = out.len();
    decode_range_inner(block, from, to, out).inspect_err(|_| out.truncate(len))
}

fn decode_range_inner(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<f64>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Float)?;
    check_range(from, to, n)?;
    if from == to {
        return Ok(n);
    }
    if r.encoding == Encoding::FloatDecimal {
        let e = r.byte()? as usize;
        if e > MAX_DECIMAL_EXPONENT {
            return Err(r.invalid("decimal exponent over 18"));
        }
        let tag = r.byte()?;
        let kind = Encoding::from_tag(tag)
            .and_then(integer::kind_of)
            .ok_or(r.invalid("mantissa payload tag is not an integer encoding"))?;
        let p = POW10[e];
        decode_payload_range(kind, &mut r, n, (from, to), out, |m| (m as i64 as f64) / p)?;
        return Ok(n);
    }
    let mut all = Vec::with_capacity(n);
    decode_inner(block, &mut all)?;
    out.extend_from_slice(&all[from..to]);
    Ok(n)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Float).map(|(_, n)| n)
}
