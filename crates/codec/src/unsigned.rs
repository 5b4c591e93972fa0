//! u64 columns. Tags 20-23; the payloads are the integer ones (crate docs, "Integer payloads") applied to
//! the values with wrapping arithmetic, so u64::MAX next to 0 is a delta of 1.

use crate::header::{put_header, read_header};
use crate::ints::{IntKind, decode_payload, encode_payload};
use crate::{CodecError, ColumnType, Encoding};

fn tag_of(kind: IntKind) -> Encoding {
    match kind {
        IntKind::Constant => Encoding::UnsignedConstant,
        IntKind::Step => Encoding::UnsignedStep,
        IntKind::DeltaPacked => Encoding::UnsignedDeltaPacked,
        IntKind::DeltaRans => Encoding::UnsignedDeltaRans,
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
    let kind = match r.encoding {
        Encoding::UnsignedConstant => IntKind::Constant,
        Encoding::UnsignedStep => IntKind::Step,
        Encoding::UnsignedDeltaPacked => IntKind::DeltaPacked,
        _ => IntKind::DeltaRans,
    };
    let len = out.len();
    match decode_payload(kind, &mut r, n, out, |v| v) {
        Ok(()) => Ok(r.pos),
        Err(e) => {
            out.truncate(len);
            Err(e)
        }
    }
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::Unsigned).map(|(_, n)| n)
}
