//! LEB128 varints and zig-zag, for the engine's own records (WAL batches). Decoding never
//! panics: it returns `None` on truncated or overlong input.

/// Appends `value` as an unsigned LEB128 varint.
pub fn put_u64(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends `value` zig-zag encoded as a varint.
pub fn put_i64(out: &mut Vec<u8>, value: i64) {
    put_u64(out, ((value << 1) ^ (value >> 63)) as u64);
}

/// A cursor over bytes with checked reads.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Current offset.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Whether every byte was read.
    pub fn is_done(&self) -> bool {
        self.pos == self.bytes.len()
    }

    /// An unsigned varint.
    pub fn u64(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.bytes.get(self.pos)?;
            self.pos += 1;
            value |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                // The tenth byte may only carry the top bit.
                if shift == 63 && byte > 1 {
                    return None;
                }
                return Some(value);
            }
        }
        None
    }

    /// A varint that must fit in u32.
    pub fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u64()?).ok()
    }

    /// A zig-zag varint.
    pub fn i64(&mut self) -> Option<i64> {
        let raw = self.u64()?;
        Some(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }

    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        let byte = *self.bytes.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    /// `n` raw bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let slice = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(slice)
    }

    /// A varint length followed by that many bytes of UTF-8.
    pub fn str(&mut self) -> Option<&'a str> {
        let len = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.bytes(len)?).ok()
    }

    /// Eight little-endian bytes as f64.
    pub fn f64(&mut self) -> Option<f64> {
        let raw: [u8; 8] = self.bytes(8)?.try_into().ok()?;
        Some(f64::from_le_bytes(raw))
    }
}

/// Appends a varint length and the bytes of `s`.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges_and_rejects_bad_input() {
        let mut out = Vec::new();
        let unsigned = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let signed = [0, -1, 1, i64::MIN, i64::MAX, -64, 64];
        for v in unsigned {
            put_u64(&mut out, v);
        }
        for v in signed {
            put_i64(&mut out, v);
        }
        put_str(&mut out, "héllo");
        let mut reader = Reader::new(&out);
        for v in unsigned {
            assert_eq!(reader.u64(), Some(v));
        }
        for v in signed {
            assert_eq!(reader.i64(), Some(v));
        }
        assert_eq!(reader.str(), Some("héllo"));
        assert!(reader.is_done());
        assert_eq!(reader.u8(), None);

        // Truncated, overlong, and invalid UTF-8.
        assert_eq!(Reader::new(&[0x80]).u64(), None);
        assert_eq!(Reader::new(&[0xFF; 11]).u64(), None);
        assert_eq!(
            Reader::new(&[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02]).u64(),
            None
        );
        assert_eq!(Reader::new(&[2, 0xC3, 0x28]).str(), None);
        assert_eq!(Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x10]).u32(), None);
    }
}
