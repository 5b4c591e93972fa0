//! i64 columns. Tags 10-13; payloads as in the crate docs, "Integer payloads": constant, constant step,
//! zig-zag deltas bit-packed, or zig-zag deltas rANS-coded (the smaller of the last two).

use crate::header::{check_range, put_header, read_header};
use crate::ints::{self, IntKind, RansBlock, decode_payload, decode_payload_range, encode_payload};
use crate::{CodecError, ColumnType, DecodedTwo, Encoding};

pub(crate) fn tag_of(kind: IntKind) -> Encoding {
    match kind {
        IntKind::Constant => Encoding::IntegerConstant,
        IntKind::Step => Encoding::IntegerStep,
        IntKind::DeltaPacked => Encoding::IntegerDeltaPacked,
        IntKind::DeltaRans => Encoding::IntegerDeltaRans,
    }
}

pub(crate) fn kind_of(e: Encoding) -> Option<IntKind> {
    match e {
        Encoding::IntegerConstant => Some(IntKind::Constant),
        Encoding::IntegerStep => Some(IntKind::Step),
        Encoding::IntegerDeltaPacked => Some(IntKind::DeltaPacked),
        Encoding::IntegerDeltaRans => Some(IntKind::DeltaRans),
        _ => None,
    }
}

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode(values: &[i64], out: &mut Vec<u8>) {
    let bits: Vec<u64> = values.iter().map(|&v| v as u64).collect();
    let start = out.len();
    put_header(out, Encoding::IntegerConstant, values.len());
    let kind = encode_payload(&bits, out);
    out[start] = tag_of(kind).tag();
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<i64>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Integer)?;
    let kind = kind_of(r.encoding).ok_or(r.invalid("not an integer encoding"))?;
    let len = out.len();
    match decode_payload(kind, &mut r, n, out, |v| v as i64) {
        Ok(()) => Ok(r.pos),
        Err(e) => {
            out.truncate(len);
            Err(e)
        }
    }
}

/// Appends the values of block `first`, then those of block `second`, as two calls of
/// [`decode`] would, and returns the bytes each used; two rANS-coded blocks are decoded in
/// one loop, faster than one after the other. On error `out` is left as it was, and the
/// error says which block (0 or 1) it is in.
pub fn decode_two(first: &[u8], second: &[u8], out: &mut Vec<i64>) -> DecodedTwo {
    let open = |block| {
        let (reader, n) = read_header(block, ColumnType::Integer).ok()?;
        (n > 0 && kind_of(reader.encoding) == Some(IntKind::DeltaRans)).then_some(RansBlock {
            reader,
            n,
            conv: |v| v as i64,
        })
    };
    ints::decode_two([first, second], out, open, decode)
}

/// Appends values `from..to` of the block at the start of `block` (what [`decode`] gives,
/// sliced, without converting or copying the values outside the range) and returns the
/// block's value count. Delta streams are decoded only up to `to`, so the block's length is
/// not checked; storage checksums blocks. On error `out` is left as it was; a range past
/// the count is [`CodecError::RangeOutOfBounds`].
pub fn decode_range(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<i64>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Integer)?;
    check_range(from, to, n)?;
    let kind = kind_of(r.encoding).ok_or(r.invalid("not an integer encoding"))?;
    let len = out.len();
    decode_payload_range(kind, &mut r, n, (from, to), out, |v| v as i64)
        .inspect_err(|_| out.truncate(len))?;
    Ok(n)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Integer).map(|(_, n)| n)
}
