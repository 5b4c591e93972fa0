//! Static-table rANS (range asymmetric numeral systems) over a 32-symbol alphabet.
//!
//! Why: the key data (integer random walks, decimals of sensor readings) has deltas of a
//! few units whose entropy is about 2.1 bits; bit packing needs 3 and pco's per-chunk
//! metadata costs tens of bytes on a 1,080-value block. A table *chosen* from a fixed
//! family ([`crate::rans_tables`]) costs one byte instead of a stored histogram.
//!
//! Coder: precision 12 bits (`M = 4096`), two interleaved states A and B, each in
//! `[2^23, 2^31)`, byte-wise renormalisation. Two states because one state's decode step is
//! a chain of dependent operations (~14 cycles); two chains overlap, which measured about
//! twice as fast. The second state's 4 flush bytes are won back by "bits-back": each encoder
//! starts at `2^23 + p` instead of `2^23`, and `p` (data the decoder only needs at the end)
//! travels for free in bits the flush writes anyway.
//!
//! Stream layout (`m` symbols `s[0..m]`; A codes even indexes, B odd ones):
//! - byte: `table_id | 0x80 if the first value rides in state A` (table id < 24);
//! - if that flag is clear: `zigzag_varint(first value)`;
//! - final state A, final state B: u32 little-endian each, in `[2^23, 2^31)`;
//! - renormalisation bytes, in the order the decoder reads them: after each symbol the
//!   decoder shifts in bytes (`x = x << 8 | byte`) while its state is under `2^23`.
//!
//! The last `t = min(4, m / 2)` odd-index symbols are not coded: they are packed 5 bits each
//! (the earliest in the low bits) into `pB`. The decoder takes the coded symbols in index
//! order (`s[0]` by A, `s[1]` by B, `s[2]` by A, ..., skipping the raw tail), each as:
//! `slot = x mod 4096`, `s` = the symbol with `cum[s] <= slot < cum[s] + freq[s]`,
//! `x = freq[s] * (x >> 12) + slot - cum[s]`, then refill. At the end A must hold
//! `2^23 + pA` and B `2^23 + pB`, where `pA` is `zigzag(first)` if the flag is set (it must
//! then be `< 2^23`) and 0 otherwise; any other end state is an error. The encoder walks
//! the same symbols in reverse from those start states: before coding `s` into state `x`
//! it emits `x mod 256` and shifts `x >>= 8` while `x >= 2^19 * freq[s]`, then sets
//! `x = (x / freq[s]) * 4096 + x mod freq[s] + cum[s]`; the emitted bytes, reversed, are the
//! renormalisation bytes. `freq`/`cum` come from row `table_id` of [`crate::rans_tables`].

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
    /// Per slot of `[0, M)`: `freq << 19 | sym << 13 | (slot - cum[sym])`, so a decode step
    /// is one load (the step's latency is the decoder's speed limit).
    slots: Box<[u32; PROB_SCALE as usize]>,
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
                let mut slots = Box::new([0u32; PROB_SCALE as usize]);
                let mut c = 0u32;
                for (s, &f) in row.iter().enumerate() {
                    let f = u32::from(f);
                    freq[s] = f;
                    cum[s] = c;
                    for (i, slot) in slots[c as usize..(c + f) as usize].iter_mut().enumerate() {
                        *slot = f << 19 | (s as u32) << 13 | i as u32;
                    }
                    c += f;
                    cost_bits[s] = f64::from(PROB_BITS) - f64::from(f).log2();
                }
                assert_eq!(c, PROB_SCALE, "rANS table rows must sum to 4096");
                Model {
                    freq,
                    cum,
                    slots,
                    cost_bits,
                }
            })
            .collect()
    })
}

/// Best table for the histogram and the estimated stream size in bytes (the first value
/// usually rides free in state A, so it is not counted).
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
    (best.0, 1 + 8 + (best.1 / 8.0).ceil() as usize)
}

/// Symbols of state B's tail that ride raw in its initial state (5 bits each, 20 < 23 bits).
const RAW_TAIL: usize = 4;
const FIRST_IN_STATE: u8 = 0x80;

/// Appends the stream for `symbols` (each `< ALPHABET`) with table `table`; `first_zz` is the
/// block's first value, zig-zagged, which rides in state A when it fits.
pub(crate) fn encode(symbols: &[u8], first_zz: u64, table: usize, out: &mut Vec<u8>) {
    let m = &models()[table];
    let n = symbols.len();
    let tail = RAW_TAIL.min(n / 2);
    let coded_b = n / 2 - tail;
    let mut p_b = 0u32;
    for k in 0..tail {
        p_b |= u32::from(symbols[2 * (coded_b + k) + 1]) << (5 * k);
    }
    let first_in_state = first_zz < u64::from(RANS_L);
    let p_a = if first_in_state { first_zz as u32 } else { 0 };
    let mut x = [RANS_L + p_a, RANS_L + p_b];
    let mut rev = Vec::with_capacity(n / 2 + 8);
    for i in (0..n).rev() {
        if i % 2 == 1 && i > 2 * coded_b {
            continue; // raw tail of B
        }
        let s = symbols[i] as usize;
        let st = &mut x[i % 2];
        let f = m.freq[s];
        let x_max = ((RANS_L >> PROB_BITS) << 8) * f;
        while *st >= x_max {
            rev.push(*st as u8);
            *st >>= 8;
        }
        *st = ((*st / f) << PROB_BITS) + (*st % f) + m.cum[s];
    }
    out.push(table as u8 | if first_in_state { FIRST_IN_STATE } else { 0 });
    if !first_in_state {
        crate::header::put_varint(out, first_zz);
    }
    out.extend_from_slice(&x[0].to_le_bytes());
    out.extend_from_slice(&x[1].to_le_bytes());
    out.extend(rev.iter().rev());
}

/// One decode step of one state: returns the symbol, advances the state and the input.
#[inline(always)]
fn step(
    x: &mut u32,
    slots: &[u32; PROB_SCALE as usize],
    buf: &[u8],
    pos: &mut usize,
) -> Result<u8, CodecError> {
    let e = slots[(*x & (PROB_SCALE - 1)) as usize];
    let mut y = (e >> 19) * (*x >> PROB_BITS) + (e & 0x1fff);
    // y >= 2^11 here, so at most two bytes are needed. While four bytes remain, refill
    // without a data-dependent branch.
    if let Some(w) = buf.get(*pos..).and_then(<[u8]>::first_chunk::<4>) {
        let w = u64::from(u32::from_be_bytes(*w));
        let k = u32::from(y < RANS_L) + u32::from(y < RANS_L >> 8);
        y = ((u64::from(y) << (8 * k)) | (w >> (32 - 8 * k))) as u32;
        *pos += k as usize;
    } else {
        while y < RANS_L {
            let b = *buf.get(*pos).ok_or(CodecError::Truncated {
                offset: *pos,
                needed: 1,
            })?;
            *pos += 1;
            y = (y << 8) | u32::from(b);
        }
    }
    *x = y;
    Ok(((e >> 13) & 31) as u8)
}

/// One rANS stream being decoded: its two states and its input position.
struct Stream<'a> {
    slots: &'static [u32; PROB_SCALE as usize],
    buf: &'a [u8],
    pos: usize,
    // The hot loop keeps the states in u64 with no narrowing: with u32 states LLVM split
    // them into bytes (the refill shifts are multiples of 8) and spilled them each round.
    ya: u64,
    yb: u64,
    first_in_state: bool,
    first_varint: u64,
}

impl<'a> Stream<'a> {
    /// Reads the stream's head (table, first value, final states) from `r`.
    fn open(r: &mut Reader<'a>) -> Result<Self, CodecError> {
        let flags = r.byte()?;
        let table = (flags & !FIRST_IN_STATE) as usize;
        if table >= TABLE_COUNT {
            return Err(r.invalid("rANS table id out of range"));
        }
        let first_in_state = flags & FIRST_IN_STATE != 0;
        let first_varint = if first_in_state { 0 } else { r.varint()? };
        let st = r.bytes(8)?;
        let xa = u32::from_le_bytes([st[0], st[1], st[2], st[3]]);
        let xb = u32::from_le_bytes([st[4], st[5], st[6], st[7]]);
        let range = RANS_L..RANS_L << 8;
        if !range.contains(&xa) || !range.contains(&xb) {
            return Err(r.invalid("rANS state out of range"));
        }
        Ok(Stream {
            slots: &models()[table].slots,
            buf: r.buf,
            pos: r.pos,
            ya: u64::from(xa),
            yb: u64::from(xb),
            first_in_state,
            first_varint,
        })
    }

    /// Decodes the next symbol of each state.
    #[inline(always)]
    fn pair(&mut self, pair: &mut [u8; 2]) -> Result<(), CodecError> {
        // Fast path: one 8-byte window serves both states' refills (at most 2 bytes each),
        // so the shared input position costs one load per pair instead of one per symbol.
        let Some(w) = self.buf.get(self.pos..).and_then(<[u8]>::first_chunk::<8>) else {
            let (mut xa, mut xb) = (self.ya as u32, self.yb as u32);
            pair[0] = step(&mut xa, self.slots, self.buf, &mut self.pos)?;
            pair[1] = step(&mut xb, self.slots, self.buf, &mut self.pos)?;
            (self.ya, self.yb) = (u64::from(xa), u64::from(xb));
            return Ok(());
        };
        let w = u64::from_be_bytes(*w);
        let mask = u64::from(PROB_SCALE - 1);
        let ea = u64::from(self.slots[(self.ya & mask) as usize]);
        let eb = u64::from(self.slots[(self.yb & mask) as usize]);
        let ya = (ea >> 19) * (self.ya >> PROB_BITS) + (ea & 0x1fff);
        let yb = (eb >> 19) * (self.yb >> PROB_BITS) + (eb & 0x1fff);
        let l = u64::from(RANS_L);
        let ka = u64::from(ya < l) + u64::from(ya < l >> 8);
        let kb = u64::from(yb < l) + u64::from(yb < l >> 8);
        // `(w >> (63 - 8k)) >> 1` is `w >> (64 - 8k)`, and 0 when k is 0.
        self.ya = (ya << (8 * ka)) | ((w >> (63 - 8 * ka)) >> 1);
        let w = w << (8 * ka);
        self.yb = (yb << (8 * kb)) | ((w >> (63 - 8 * kb)) >> 1);
        self.pos += (ka + kb) as usize;
        pair[0] = ((ea >> 13) & 31) as u8;
        pair[1] = ((eb >> 13) & 31) as u8;
        Ok(())
    }

    /// Decodes the symbols after the coded pairs (state A's last ones; B's raw tail) and
    /// checks the end states; returns the first value, zig-zagged.
    fn finish(self, rest: &mut [u8], r: &mut Reader<'a>) -> Result<u64, CodecError> {
        let (mut xa, xb) = (self.ya as u32, self.yb as u32);
        let mut pos = self.pos;
        for s in rest.iter_mut().step_by(2) {
            *s = step(&mut xa, self.slots, self.buf, &mut pos)?;
        }
        r.pos = pos;
        let tail = rest.len() / 2;
        let p_b = xb - RANS_L;
        if p_b >> (5 * tail) != 0 {
            return Err(r.invalid("rANS state B does not end in its initial state"));
        }
        for (k, s) in rest.iter_mut().skip(1).step_by(2).enumerate() {
            *s = ((p_b >> (5 * k)) & 31) as u8;
        }
        let p_a = xa - RANS_L;
        match (self.first_in_state, p_a) {
            (true, _) if xa < RANS_L << 1 => Ok(u64::from(p_a)),
            (false, 0) => Ok(self.first_varint),
            _ => Err(r.invalid("rANS state A does not end in its initial state")),
        }
    }
}

/// Splits `n` symbols into the coded pairs (A's and B's, alternating) and the rest: the
/// raw tail of B interleaved with A's last symbols.
fn split(syms: &mut [u8]) -> (&mut [u8], &mut [u8]) {
    let n = syms.len();
    let coded_b = n / 2 - RAW_TAIL.min(n / 2);
    syms.split_at_mut(2 * coded_b)
}

/// Decodes `syms.len()` symbols into `syms` and returns the first value (zig-zagged).
/// Symbols go to a plain buffer so the two state chains run alone in the loop.
pub(crate) fn decode(r: &mut Reader<'_>, syms: &mut [u8]) -> Result<u64, CodecError> {
    let mut stream = Stream::open(r)?;
    let (pairs, rest) = split(syms);
    for pair in pairs.as_chunks_mut::<2>().0 {
        stream.pair(pair)?;
    }
    stream.finish(rest, r)
}

/// [`decode`] of two streams at once, in one loop: their four state chains overlap, where
/// one stream's two leave the core waiting on each step's latency. An error says which
/// stream (0 or 1) it is in.
pub(crate) fn decode_two(
    (r1, syms1): (&mut Reader<'_>, &mut [u8]),
    (r2, syms2): (&mut Reader<'_>, &mut [u8]),
) -> Result<(u64, u64), (usize, CodecError)> {
    let mut s1 = Stream::open(r1).map_err(|e| (0, e))?;
    let mut s2 = Stream::open(r2).map_err(|e| (1, e))?;
    let (pairs1, rest1) = split(syms1);
    let (pairs2, rest2) = split(syms2);
    let (p1, p2) = (pairs1.as_chunks_mut::<2>().0, pairs2.as_chunks_mut::<2>().0);
    let both = p1.len().min(p2.len());
    let ((both1, more1), (both2, more2)) = (p1.split_at_mut(both), p2.split_at_mut(both));
    for (a, b) in both1.iter_mut().zip(both2) {
        s1.pair(a).map_err(|e| (0, e))?;
        s2.pair(b).map_err(|e| (1, e))?;
    }
    for a in more1 {
        s1.pair(a).map_err(|e| (0, e))?;
    }
    for b in more2 {
        s2.pair(b).map_err(|e| (1, e))?;
    }
    let first1 = s1.finish(rest1, r1).map_err(|e| (0, e))?;
    let first2 = s2.finish(rest2, r2).map_err(|e| (1, e))?;
    Ok((first1, first2))
}
