//! Frame bit packing: values split into frames of [`FRAME_LEN`]; each frame is one width
//! byte `w` (0..=64) then `ceil(len * w / 8)` bytes holding the values LSB-first, value 0 in
//! the lowest bits. Frames keep one outlier from widening the whole block.

use crate::CodecError;
use crate::header::Reader;

/// Values per frame. 128 keeps the width byte under 1 % of a 1-bit frame and lets the
/// width follow local changes in magnitude.
pub(crate) const FRAME_LEN: usize = 128;

/// Bits needed for `v` (0 for 0).
#[inline]
pub(crate) fn bit_width(v: u64) -> u32 {
    64 - v.leading_zeros()
}

/// Appends LSB-first bit strings.
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    fill: u32,
}

impl<'a> BitWriter<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            fill: 0,
        }
    }

    /// Appends the low `w` bits of `v` (`v` must fit in `w` bits, `w <= 64`).
    #[inline]
    pub(crate) fn put(&mut self, v: u64, w: u32) {
        self.acc |= u128::from(v) << self.fill;
        self.fill += w;
        if self.fill >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.fill -= 64;
        }
    }

    /// Flushes the partial last byte (padding bits are zero).
    pub(crate) fn finish(self) {
        let n = self.fill.div_ceil(8) as usize;
        self.out
            .extend_from_slice(&(self.acc as u64).to_le_bytes()[..n]);
    }
}

/// Reads LSB-first bit strings from a slice; reads past the end yield zero bits, so callers
/// must size the slice from the count first.
pub(crate) struct BitReader<'a> {
    buf: &'a [u8],
    pos: usize,
    acc: u128,
    fill: u32,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        BitReader {
            buf,
            pos: 0,
            acc: 0,
            fill: 0,
        }
    }

    #[inline]
    pub(crate) fn get(&mut self, w: u32) -> u64 {
        if self.fill < w {
            let mut word = [0u8; 8];
            let n = (self.buf.len() - self.pos).min(8);
            word[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            self.acc |= u128::from(u64::from_le_bytes(word)) << self.fill;
            self.fill += 64;
        }
        let v = if w == 64 {
            self.acc as u64
        } else {
            (self.acc as u64) & ((1u64 << w) - 1)
        };
        self.acc >>= w;
        self.fill -= w;
        v
    }
}

/// Packed size in bytes of `values` in frames, without writing them.
pub(crate) fn packed_len(values: &[u64]) -> usize {
    values
        .chunks(FRAME_LEN)
        .map(|f| {
            let w = bit_width(f.iter().fold(0, |a, &v| a | v)) as usize;
            1 + (f.len() * w).div_ceil(8)
        })
        .sum()
}

/// Appends `values` in frames.
pub(crate) fn pack(values: &[u64], out: &mut Vec<u8>) {
    for f in values.chunks(FRAME_LEN) {
        let w = bit_width(f.iter().fold(0, |a, &v| a | v));
        out.push(w as u8);
        let mut bw = BitWriter::new(out);
        for &v in f {
            bw.put(v, w);
        }
        bw.finish();
    }
}

/// Reads `n` framed values, calling `sink` on each in order.
#[inline]
pub(crate) fn unpack(
    r: &mut Reader<'_>,
    n: usize,
    mut sink: impl FnMut(u64),
) -> Result<(), CodecError> {
    let mut left = n;
    while left > 0 {
        let len = left.min(FRAME_LEN);
        let w = u32::from(r.byte()?);
        if w > 64 {
            return Err(r.invalid("bit width over 64"));
        }
        let data = r.bytes((len * w as usize).div_ceil(8))?;
        if w == 0 {
            for _ in 0..len {
                sink(0);
            }
        } else {
            let mut br = BitReader::new(data);
            for _ in 0..len {
                sink(br.get(w));
            }
        }
        left -= len;
    }
    Ok(())
}
