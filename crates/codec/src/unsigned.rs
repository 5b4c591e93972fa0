//! u64 columns. Tags 20-23; the payloads are the integer ones (crate docs, "Integer payloads") applied to
//! the values with wrapping arithmetic, so u64::MAX next to 0 is a delta of 1.

use crate::header::{Reader, check_range, put_header, read_header};
use crate::ints::{self, IntKind, RansBlock, decode_payload, decode_payload_range, encode_payload};
use crate::{CodecError, ColumnType, DecodedTwo, Encoding};

fn tag_of(kind: IntKind) -> Encoding {
    match kind {
        IntKind::Constant => Encoding::UnsignedConstant,
        IntKind::Step => Encoding::UnsignedStep,
        IntKind::DeltaPacked => Encoding::UnsignedDeltaPacked,
        IntKind::DeltaRans => Encoding::UnsignedDeltaRans,
    }
}

fn kind_of(r: &Reader<'_>) -> IntKind {
    match r.encoding {
        Encoding::UnsignedConstant => IntKind::Constant,
        Encoding::UnsignedStep => IntKind::Step,
        Encoding::UnsignedDeltaPacked => IntKind::DeltaPacked,
        _ => IntKind::DeltaRans,
    }
}

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode(values: &[u64], out: &mut Vec<u8>) {
    let start = out.len();
    put_header(out, Encoding::UnsignedConstant, values.len());
    let kind = encode_payload(values, out);
    out[start] = tag_of(kind).tag();
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<u64>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Unsigned)?;
    let kind = kind_of(&r);
    let len = out.len();
    match decode_payload(kind, &mut r, n, out, |v| v) {
        Ok(()) => Ok(r.pos),
        Err(e) => {
            out.truncate(len);
            Err(e)
        }
    }
}

/// Appends the values of block `first`, then those of block `second`, as
/// [`crate::integer::decode_two`] does for i64 blocks.
pub fn decode_two(first: &[u8], second: &[u8], out: &mut Vec<u64>) -> DecodedTwo {
    let open = |block| {
        let (reader, n) = read_header(block, ColumnType::Unsigned).ok()?;
        (n > 0 && kind_of(&reader) == IntKind::DeltaRans).then_some(RansBlock {
            reader,
            n,
            conv: |v| v,
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
    out: &mut Vec<u64>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::Unsigned)?;
    check_range(from, to, n)?;
    let kind = kind_of(&r);
    let len = out.len();
    decode_payload_range(kind, &mut r, n, (from, to), out, |v| v)
        .inspect_err(|_| out.truncate(len))?;
    Ok(n)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Unsigned).map(|(_, n)| n)
}
