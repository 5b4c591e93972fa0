//! Static-table rANS (range asymmetric numeral systems) over a 32-symbol alphabet.
//!
//! Why: the key data (integer random walks, decimals of sensor readings) has deltas of a
//! few units whose entropy is about 2.1 bits; bit packing needs 3 and pco's per-chunk
//! metadata costs tens of bytes on a 1,080-value block. A table *chosen* from a fixed
//! family ([`crate::rans_tables`]) costs one byte instead of a stored histogram.
//!
//! Stream layout: table id (1 byte), final encoder state (u32 little-endian, in
//! `[RANS_L, 2^31)`), then the renormalisation bytes in the order the decoder reads them.
//! Decoding ends with the state back at `RANS_L`, which checks the stream.
//! Coder: precision 12 bits (`M = 4096`), state in `[2^23, 2^31)`, byte-wise renormalisation.

use std::sync::OnceLock;

use crate::CodecError;
use crate::header::Reader;
use crate::rans_tables::{FREQS, TABLE_COUNT};

/// Alphabet size: zig-zag deltas 0..=31, i.e. deltas -16..=15.
pub(crate) const ALPHABET: usize = 32;
const PROB_BITS: u32 = 12;
const PROB_SCALE: u32 = 1 << PROB_BITS;
const RANS_L: u32 = 1 << 23;

struct Model {
    freq: [u32; ALPHABET],
    cum: [u32; ALPHABET],
    /// Symbol owning each slot of `[0, M)`.
    slot_sym: Vec<u8>,
    /// Cost in bits of each symbol, for choosing a table.
    cost_bits: [f64; ALPHABET],
}

fn models() -> &'static [Model] {
    static MODELS: OnceLock<Vec<Model>> = OnceLock::new();
    MODELS.get_or_init(|| {
        FREQS
            .iter()
            .map(|row| {
                let mut freq = [0u32; ALPHABET];
                let mut cum = [0u32; ALPHABET];
                let mut cost_bits = [0f64; ALPHABET];
                let mut slot_sym = Vec::with_capacity(PROB_SCALE as usize);
                let mut c = 0u32;
                for (s, &f) in row.iter().enumerate() {
                    freq[s] = u32::from(f);
                    cum[s] = c;
                    c += u32::from(f);
                    cost_bits[s] = f64::from(PROB_BITS) - f64::from(f).log2();
                    slot_sym.extend(std::iter::repeat_n(s as u8, f as usize));
                }
                assert_eq!(c, PROB_SCALE, "rANS table rows must sum to 4096");
                Model {
                    freq,
                    cum,
                    slot_sym,
                    cost_bits,
                }
            })
            .collect()
    })
}

/// Best table for the histogram and the estimated stream size in bytes.
pub(crate) fn choose_table(hist: &[u32; ALPHABET]) -> (usize, usize) {
    let mut best = (0, f64::INFINITY);
    for (t, m) in models().iter().enumerate() {
        let bits: f64 = hist
            .iter()
            .zip(&m.cost_bits)
            .map(|(&h, &c)| f64::from(h) * c)
            .sum();
        if bits < best.1 {
            best = (t, bits);
        }
    }
    (best.0, 1 + 4 + (best.1 / 8.0).ceil() as usize)
}

/// Appends the stream for `symbols` (each `< ALPHABET`) with table `table`.
pub(crate) fn encode(symbols: &[u8], table: usize, out: &mut Vec<u8>) {
    let m = &models()[table];
    let mut rev = Vec::with_capacity(symbols.len() / 2 + 8);
    let mut x = RANS_L;
    for &s in symbols.iter().rev() {
        let f = m.freq[s as usize];
        let x_max = ((RANS_L >> PROB_BITS) << 8) * f;
        while x >= x_max {
            rev.push(x as u8);
            x >>= 8;
        }
        x = ((x / f) << PROB_BITS) + (x % f) + m.cum[s as usize];
    }
    out.push(table as u8);
    out.extend_from_slice(&x.to_le_bytes());
    out.extend(rev.iter().rev());
}

/// Decodes `n` symbols, calling `sink` on each in order.
#[inline]
pub(crate) fn decode(
    r: &mut Reader<'_>,
    n: usize,
    mut sink: impl FnMut(u8),
) -> Result<(), CodecError> {
    let table = r.byte()? as usize;
    if table >= TABLE_COUNT {
        return Err(r.invalid("rANS table id out of range"));
    }
    let m = &models()[table];
    let state = r.bytes(4)?;
    let mut x = u32::from_le_bytes([state[0], state[1], state[2], state[3]]);
    if !(RANS_L..RANS_L << 8).contains(&x) {
        return Err(r.invalid("rANS state out of range"));
    }
    let buf = r.buf;
    let mut pos = r.pos;
    for _ in 0..n {
        let slot = x & (PROB_SCALE - 1);
        let s = m.slot_sym[slot as usize];
        x = m.freq[s as usize] * (x >> PROB_BITS) + slot - m.cum[s as usize];
        while x < RANS_L {
            let b = *buf.get(pos).ok_or(CodecError::Truncated {
                offset: pos,
                needed: 1,
            })?;
            pos += 1;
            x = (x << 8) | u32::from(b);
        }
        sink(s);
    }
    r.pos = pos;
    if x != RANS_L {
        return Err(r.invalid("rANS stream does not end in the initial state"));
    }
    Ok(())
}
