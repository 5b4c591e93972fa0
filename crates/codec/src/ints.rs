//! Integer core shared by the integer, unsigned and float-decimal columns.
//!
//! Why hand-written rather than pco: on 1,080-value blocks of the TSBS-like integer walk,
//! pco 1.1 (default level) took 0.352 bytes/point, encoded ~20M and decoded ~150-200M
//! points/s here; its per-chunk metadata (bins, ANS table) is large next to a 300-byte
//! block. Static-table rANS takes 0.279 bytes/point, encodes >80M and decodes ~230-290M
//! points/s on the same (shared, loaded) machine. `examples/ratio.rs` prints both sizes.
//! Values are handled as `u64` with wrapping arithmetic, so i64 (cast bit-for-bit) and u64
//! share one implementation and every delta is exact, including across i64::MIN/MAX.
//!
//! Payloads (after the block header; `n` = count from the header, none at all if `n == 0`):
//! - `Constant`: `zigzag_varint(v as i64)`.
//! - `Step` (`n >= 2`): `zigzag_varint(first)`, `zigzag_varint(step)`; `v[i] = first + i*step`.
//! - `DeltaPacked`: `zigzag_varint(first)`, then the `n-1` values `zigzag(v[i] - v[i-1])` in
//!   bit-packed frames ([`crate::bitpack`]).
//! - `DeltaRans`: the `n-1` zig-zag deltas (all `< 32`) as a static-table rANS stream
//!   ([`crate::rans`]), which also carries the first value (no separate first varint).

use crate::header::{Reader, put_varint, unzigzag, zigzag};
use crate::{CodecError, DecodedTwo, bitpack, rans};

/// Which integer payload a block holds; each column maps it to its own tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntKind {
    Constant,
    Step,
    DeltaPacked,
    DeltaRans,
}

/// Appends the smallest payload for `values` and says which kind it is.
pub(crate) fn encode_payload(values: &[u64], out: &mut Vec<u8>) -> IntKind {
    let Some(&first) = values.first() else {
        return IntKind::Constant;
    };
    let deltas: Vec<u64> = values
        .windows(2)
        .map(|w| zigzag(w[1].wrapping_sub(w[0]) as i64))
        .collect();
    let constant_step = deltas
        .first()
        .is_none_or(|&d0| deltas.iter().all(|&d| d == d0));
    if constant_step {
        put_varint(out, zigzag(first as i64));
        return match deltas.first() {
            None | Some(0) => IntKind::Constant,
            Some(&d) => {
                put_varint(out, d);
                IntKind::Step
            }
        };
    }
    let packed = bitpack::packed_len(&deltas);
    if deltas.iter().all(|&d| d < rans::ALPHABET as u64) {
        let mut hist = [0u32; rans::ALPHABET];
        for &d in &deltas {
            hist[d as usize] += 1;
        }
        let (table, est) = rans::choose_table(&hist);
        // Ties go to bit packing: it decodes faster. Packing also stores the first value.
        let first_len = (bitpack::bit_width(zigzag(first as i64)).max(1) as usize).div_ceil(7);
        if est < packed + first_len {
            let symbols: Vec<u8> = deltas.iter().map(|&d| d as u8).collect();
            rans::encode(&symbols, zigzag(first as i64), table, out);
            return IntKind::DeltaRans;
        }
    }
    put_varint(out, zigzag(first as i64));
    bitpack::pack(&deltas, out);
    IntKind::DeltaPacked
}

/// Appends `conv(first)`, then the value after each zig-zag delta of `syms`: a delta
/// stream's values from its decoded symbols.
#[inline]
fn push_walk<T>(out: &mut Vec<T>, first: u64, syms: &[u8], conv: &impl Fn(u64) -> T) {
    out.reserve(syms.len() + 1);
    out.push(conv(first));
    let mut acc = first;
    out.extend(syms.iter().map(|&s| {
        acc = acc.wrapping_add(unzigzag(u64::from(s)) as u64);
        conv(acc)
    }));
}

/// Decodes `n` values of payload `kind`, appending `conv(v)` for each.
#[inline]
pub(crate) fn decode_payload<T: Copy>(
    kind: IntKind,
    r: &mut Reader<'_>,
    n: usize,
    out: &mut Vec<T>,
    conv: impl Fn(u64) -> T,
) -> Result<(), CodecError> {
    if n == 0 {
        return Ok(());
    }
    if kind == IntKind::DeltaRans {
        // A rANS symbol can cost far less than a bit, so the input does not bound `n`;
        // `n` is already capped by MAX_BLOCK_VALUES.
        let mut syms = vec![0u8; n - 1];
        let first = unzigzag(rans::decode(r, &mut syms)?) as u64;
        push_walk(out, first, &syms, &conv);
        return Ok(());
    }
    let first = r.varint()?;
    let mut acc = unzigzag(first) as u64;
    match kind {
        IntKind::Constant => {
            out.extend(std::iter::repeat_n(conv(acc), n));
        }
        IntKind::Step => {
            if n < 2 {
                return Err(r.invalid("step block with fewer than 2 values"));
            }
            let step = unzigzag(r.varint()?) as u64;
            out.reserve(n);
            for _ in 0..n {
                out.push(conv(acc));
                acc = acc.wrapping_add(step);
            }
        }
        IntKind::DeltaPacked => {
            // Each frame costs at least its width byte: bound the count by the input first.
            if (n - 1).div_ceil(bitpack::FRAME_LEN) > r.remaining() {
                return Err(CodecError::Truncated {
                    offset: r.pos,
                    needed: (n - 1).div_ceil(bitpack::FRAME_LEN) - r.remaining(),
                });
            }
            out.reserve(n);
            out.push(conv(acc));
            bitpack::unpack(r, n - 1, |z| {
                acc = acc.wrapping_add(unzigzag(z) as u64);
                out.push(conv(acc));
            })?;
        }
        // Returned above: its first value comes out of the rANS stream.
        IntKind::DeltaRans => {}
    }
    Ok(())
}

/// A block whose payload is a rANS stream of at least one value: its reader (at the
/// stream), its value count and the conversion of its values.
pub(crate) struct RansBlock<'a, C> {
    pub(crate) reader: Reader<'a>,
    pub(crate) n: usize,
    pub(crate) conv: C,
}

/// What each column's `decode_two` does: appends the values of `blocks[0]`, then those of
/// `blocks[1]`, and returns the bytes each used. When `open` finds a rANS stream in both,
/// the two streams are decoded in one loop ([`rans::decode_two`]: four state chains
/// overlap where one stream's two wait on each step's latency); otherwise `decode` takes
/// them one after the other. On error `out` is left as it was, and the error says which
/// block (0 or 1) it is in.
pub(crate) fn decode_two<'a, T: Copy, C: Fn(u64) -> T>(
    blocks: [&'a [u8]; 2],
    out: &mut Vec<T>,
    open: impl Fn(&'a [u8]) -> Option<RansBlock<'a, C>>,
    decode: impl Fn(&[u8], &mut Vec<T>) -> Result<usize, CodecError>,
) -> DecodedTwo {
    let len = out.len();
    let result = match (open(blocks[0]), open(blocks[1])) {
        (Some(mut b1), Some(mut b2)) => {
            decode_rans_two(&mut b1, &mut b2, out).map(|()| (b1.reader.pos, b2.reader.pos))
        }
        _ => decode(blocks[0], out)
            .map_err(|e| (0, e))
            .and_then(|used1| Ok((used1, decode(blocks[1], out).map_err(|e| (1, e))?))),
    };
    if result.is_err() {
        out.truncate(len);
    }
    result
}

fn decode_rans_two<T: Copy, C: Fn(u64) -> T>(
    b1: &mut RansBlock<'_, C>,
    b2: &mut RansBlock<'_, C>,
    out: &mut Vec<T>,
) -> Result<(), (usize, CodecError)> {
    let mut syms = vec![0u8; b1.n - 1 + b2.n - 1];
    let (syms1, syms2) = syms.split_at_mut(b1.n - 1);
    let (first1, first2) = rans::decode_two((&mut b1.reader, syms1), (&mut b2.reader, syms2))?;
    out.reserve(b1.n + b2.n);
    push_walk(out, unzigzag(first1) as u64, syms1, &b1.conv);
    push_walk(out, unzigzag(first2) as u64, syms2, &b2.conv);
    Ok(())
}

/// Decodes values `from..to` of an `n`-value payload of `kind` (`from <= to <= n`, checked
/// by the caller), appending `conv(v)` for each. Streams that must be decoded from their
/// start (deltas) are decoded up to `to` and no further, and nothing before `from` is
/// converted or copied. A rANS stream is decoded whole: its first value rides in the final
/// state. The reader is left anywhere (the block's length is not known after a range).
#[inline]
pub(crate) fn decode_payload_range<T: Copy>(
    kind: IntKind,
    r: &mut Reader<'_>,
    n: usize,
    (from, to): (usize, usize),
    out: &mut Vec<T>,
    conv: impl Fn(u64) -> T,
) -> Result<(), CodecError> {
    if from == to {
        return Ok(());
    }
    if kind == IntKind::DeltaRans {
        let mut syms = vec![0u8; n - 1];
        let mut acc = unzigzag(rans::decode(r, &mut syms)?) as u64;
        // Value i is the first value plus symbols 0..i.
        for &s in &syms[..from] {
            acc = acc.wrapping_add(unzigzag(u64::from(s)) as u64);
        }
        push_walk(out, acc, &syms[from..to - 1], &conv);
        return Ok(());
    }
    let first = r.varint()?;
    let mut acc = unzigzag(first) as u64;
    match kind {
        IntKind::Constant => {
            out.extend(std::iter::repeat_n(conv(acc), to - from));
        }
        IntKind::Step => {
            if n < 2 {
                return Err(r.invalid("step block with fewer than 2 values"));
            }
            let step = unzigzag(r.varint()?) as u64;
            acc = acc.wrapping_add(step.wrapping_mul(from as u64));
            out.reserve(to - from);
            for _ in from..to {
                out.push(conv(acc));
                acc = acc.wrapping_add(step);
            }
        }
        IntKind::DeltaPacked => {
            if (n - 1).div_ceil(bitpack::FRAME_LEN) > r.remaining() {
                return Err(CodecError::Truncated {
                    offset: r.pos,
                    needed: (n - 1).div_ceil(bitpack::FRAME_LEN) - r.remaining(),
                });
            }
            out.reserve(to - from);
            if from == 0 {
                out.push(conv(acc));
            }
            // Delta j gives value j + 1; frames are cut from the start, so reading the
            // first `to - 1` deltas reads a prefix of the same frames.
            let mut index = 0;
            bitpack::unpack(r, to - 1, |z| {
                acc = acc.wrapping_add(unzigzag(z) as u64);
                index += 1;
                if index >= from {
                    out.push(conv(acc));
                }
            })?;
        }
        IntKind::DeltaRans => {}
    }
    Ok(())
}
