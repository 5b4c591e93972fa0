//! Block header (tag + LEB128 count) and the primitive readers/writers every encoding uses.

use crate::{CodecError, ColumnType, Encoding, MAX_BLOCK_VALUES};

/// Appends `v` as unsigned LEB128 (7 bits a byte, low group first, high bit = more).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Zig-zag: maps 0, -1, 1, -2, ... to 0, 1, 2, 3, ... so small magnitudes get small codes.
#[inline]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(crate) fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A cursor over a block that turns every overrun into [`CodecError`].
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) encoding: Encoding,
}

impl<'a> Reader<'a> {
    pub(crate) fn invalid(&self, reason: &'static str) -> CodecError {
        CodecError::InvalidPayload {
            encoding: self.encoding,
            offset: self.pos,
            reason,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn byte(&mut self) -> Result<u8, CodecError> {
        let b = *self.buf.get(self.pos).ok_or(CodecError::Truncated {
            offset: self.pos,
            needed: 1,
        })?;
        self.pos += 1;
        Ok(b)
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if self.remaining() < n {
            return Err(CodecError::Truncated {
                offset: self.pos,
                needed: n - self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Reads an unsigned LEB128 of at most 10 bytes; rejects overlong high bits.
    pub(crate) fn varint(&mut self) -> Result<u64, CodecError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            if i == 9 && b > 1 {
                return Err(self.invalid("varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.invalid("varint longer than 10 bytes"))
    }

    pub(crate) fn zigzag_varint(&mut self) -> Result<i64, CodecError> {
        Ok(unzigzag(self.varint()?))
    }

    /// A varint used as a length; bounded by the bytes left so no allocation follows a lie.
    pub(crate) fn len_varint(&mut self) -> Result<usize, CodecError> {
        let v = self.varint()?;
        if v > self.remaining() as u64 {
            return Err(CodecError::Truncated {
                offset: self.pos,
                needed: (v - self.remaining() as u64)
                    .try_into()
                    .unwrap_or(usize::MAX),
            });
        }
        Ok(v as usize)
    }
}

/// Appends the header: tag byte then the count as LEB128.
///
/// # Panics
/// If `count` is over [`MAX_BLOCK_VALUES`]: the writer must cut blocks smaller (invariant).
pub(crate) fn put_header(out: &mut Vec<u8>, encoding: Encoding, count: usize) {
    assert!(
        count <= MAX_BLOCK_VALUES,
        "block of {count} values is over MAX_BLOCK_VALUES ({MAX_BLOCK_VALUES}); cut smaller blocks"
    );
    out.push(encoding.tag());
    put_varint(out, count as u64);
}

/// Checks that `from..to` is a range of values of a block of `count` values.
pub(crate) fn check_range(from: usize, to: usize, count: usize) -> Result<(), CodecError> {
    if from <= to && to <= count {
        Ok(())
    } else {
        Err(CodecError::RangeOutOfBounds { from, to, count })
    }
}

/// Reads the header and checks the tag belongs to `column`. Returns the reader positioned at
/// the payload and the count.
pub(crate) fn read_header(
    block: &[u8],
    column: ColumnType,
) -> Result<(Reader<'_>, usize), CodecError> {
    let tag = *block.first().ok_or(CodecError::Truncated {
        offset: 0,
        needed: 1,
    })?;
    let encoding = Encoding::from_tag(tag).ok_or(CodecError::UnknownTag { tag })?;
    if encoding.column_type() != column {
        return Err(CodecError::WrongColumnType {
            expected: column.name(),
            found: encoding,
        });
    }
    let mut r = Reader {
        buf: block,
        pos: 1,
        encoding,
    };
    let count = r.varint()?;
    if count > MAX_BLOCK_VALUES as u64 {
        return Err(CodecError::CountOverLimit {
            count,
            max: MAX_BLOCK_VALUES,
        });
    }
    Ok((r, count as usize))
}
