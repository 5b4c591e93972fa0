//! The fixed parts of the file (header, footer) and the byte-level helpers the index is made
//! of (LEB128 varints, zig-zag, raw f64, CRC32). Kept apart from [`super::writer`] and
//! [`super::reader`] so that both sides of every field are in one file.

use std::path::Path;

use crate::error::StorageError;
use crate::model::Timestamp;

/// First bytes of every part file.
pub const HEADER_MAGIC: [u8; 8] = *b"STRAPART";
/// Last bytes of every part file: a file that does not end with them was not finished.
pub const FOOTER_MAGIC: [u8; 8] = *b"STRAPEND";
/// The format version written in the header and the footer. Bump it (and keep a reader for
/// the old one) on any change to the bytes. Version 2 added, per chunk entry, the lengths
/// that let a reader skip it, and dropped the bytes the rest of the entry implies (the time
/// block of evenly spaced rows, a column's count when every row has the field) or that are
/// shorter as an offset (integer sums, over `count * min`).
/// Version 3 added the recovery section (`recovery.rs`) between the index and the footer.
pub const FORMAT_VERSION: u32 = 3;
/// The oldest version this build reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;
/// Header: magic (8), version (4), CRC32 of the 12 preceding bytes (4).
pub const HEADER_LEN: u64 = 16;
/// Footer: see the table in the module docs.
pub const FOOTER_LEN: u64 = 72;

/// Most rows in one chunk (one block per column). Blocks of a few thousand rows let the
/// timestamp and integer codecs reach their steady-state ratio (frames of bit-packed deltas
/// amortise their headers), while a query that needs one row decodes at most 4,096 values
/// per column; the per-chunk index entry (~20 bytes per column) stays under 0.01 byte per
/// point. (Chunks are also cut at hour boundaries, see `cut.rs`, so 10 s data makes
/// chunks of 360 rows; this is the limit for denser data.) Measured with
/// `examples/part_size.rs 500 8640` (TSBS-like integer walks), file bytes per point for a
/// limit of 1,024 / 2,048 / 4,096 / 8,640 rows: 0.214 / 0.202 / 0.197 / 0.191; going past
/// 4,096 saves 3% of the bytes but doubles what a one-row read decodes.
pub const MAX_ROWS_PER_CHUNK: usize = 4096;

/// Largest decompressed index a reader accepts, so a corrupt length cannot make it allocate
/// without bound. 1 GiB is ~10x the index of a part holding 1M series of one day of data.
pub const MAX_INDEX_RAW_BYTES: u64 = 1 << 30;

/// zstd level for the index. With one chunk an hour the index is about a tenth of a part;
/// on TSBS 4,000 hosts x 3 hours (a 2.0 MB raw index) level 6 stores 1.43 MB against 1.49 at
/// level 3 (zstd's default), and higher levels gain under 1% more while compressing slower.
pub const INDEX_ZSTD_LEVEL: i32 = 6;

/// The 16-byte file header of a format `version` part.
pub fn encode_header(version: u32) -> [u8; HEADER_LEN as usize] {
    let mut out = [0u8; HEADER_LEN as usize];
    out[..8].copy_from_slice(&HEADER_MAGIC);
    out[8..12].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&out[..12]);
    out[12..16].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the 16-byte header; returns the file's format version.
pub fn check_header(path: &Path, bytes: &[u8; HEADER_LEN as usize]) -> Result<u32, StorageError> {
    if bytes[..8] != HEADER_MAGIC {
        return Err(corrupt(path, 0, "bad header magic: not a Strata part"));
    }
    if crc32fast::hash(&bytes[..12]) != le_u32(&bytes[12..16]) {
        return Err(corrupt(path, 12, "header checksum mismatch"));
    }
    let version = le_u32(&bytes[8..12]);
    if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(corrupt(
            path,
            8,
            format!(
                "unsupported format version {version} (this build reads \
                 {OLDEST_READABLE_VERSION} to {FORMAT_VERSION})"
            ),
        ));
    }
    Ok(version)
}

/// The fixed-size footer: where the index is and what the part holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// File offset of the index (= end of the data blocks).
    pub index_offset: u64,
    /// Index bytes as stored (compressed or not).
    pub index_stored_len: u64,
    /// Index bytes after decompression; equal to the stored length when it is not compressed.
    pub index_raw_len: u64,
    /// CRC32 of the stored index bytes.
    pub index_crc: u32,
    /// Number of series.
    pub series: u32,
    /// Number of rows, all series.
    pub rows: u64,
    /// Smallest timestamp (`i64::MAX` when the part is empty).
    pub min_time: Timestamp,
    /// Largest timestamp (`i64::MIN` when the part is empty).
    pub max_time: Timestamp,
    /// The format version (the writer always writes [`FORMAT_VERSION`]).
    pub version: u32,
}

impl Footer {
    /// The footer's bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN as usize] {
        let mut out = [0u8; FOOTER_LEN as usize];
        out[0..8].copy_from_slice(&self.index_offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.index_stored_len.to_le_bytes());
        out[16..24].copy_from_slice(&self.index_raw_len.to_le_bytes());
        out[24..28].copy_from_slice(&self.index_crc.to_le_bytes());
        out[28..32].copy_from_slice(&self.series.to_le_bytes());
        out[32..40].copy_from_slice(&self.rows.to_le_bytes());
        out[40..48].copy_from_slice(&self.min_time.to_le_bytes());
        out[48..56].copy_from_slice(&self.max_time.to_le_bytes());
        out[56..60].copy_from_slice(&self.version.to_le_bytes());
        let crc = crc32fast::hash(&out[..60]);
        out[60..64].copy_from_slice(&crc.to_le_bytes());
        out[64..72].copy_from_slice(&FOOTER_MAGIC);
        out
    }

    /// Parses and checks the footer found at file offset `at`.
    pub fn decode(
        path: &Path,
        at: u64,
        b: &[u8; FOOTER_LEN as usize],
    ) -> Result<Self, StorageError> {
        if b[64..72] != FOOTER_MAGIC {
            return Err(corrupt(
                path,
                at + 64,
                "bad footer magic: part not finished or truncated",
            ));
        }
        if crc32fast::hash(&b[..60]) != le_u32(&b[60..64]) {
            return Err(corrupt(path, at + 60, "footer checksum mismatch"));
        }
        let version = le_u32(&b[56..60]);
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(corrupt(
                path,
                at + 56,
                format!("unsupported footer version {version}"),
            ));
        }
        Ok(Self {
            index_offset: le_u64(&b[0..8]),
            index_stored_len: le_u64(&b[8..16]),
            index_raw_len: le_u64(&b[16..24]),
            index_crc: le_u32(&b[24..28]),
            series: le_u32(&b[28..32]),
            rows: le_u64(&b[32..40]),
            min_time: le_u64(&b[40..48]) as i64,
            max_time: le_u64(&b[48..56]) as i64,
            version,
        })
    }
}

/// Stored bytes back to their raw form: stored raw when the lengths are equal (writers
/// compress only when that is strictly smaller), else a zstd frame that must decompress to
/// exactly `raw_len` bytes; `None` when it does not.
pub fn unpack(stored: Vec<u8>, raw_len: u64) -> Option<Vec<u8>> {
    if stored.len() as u64 == raw_len {
        return Some(stored);
    }
    zstd::bulk::decompress(&stored, usize::try_from(raw_len).ok()?)
        .ok()
        .filter(|raw| raw.len() as u64 == raw_len)
}

/// A [`StorageError::Corrupt`].
pub fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> StorageError {
    StorageError::Corrupt {
        path: path.to_path_buf(),
        offset,
        reason: reason.into(),
    }
}

fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[..4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// Appends `v` as an LEB128 varint (7 bits a byte, low group first).
pub fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a u64 varint.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    put_varint(out, u128::from(v));
}

/// Appends a zig-zag varint of a signed value (0, -1, 1, -2 → 0, 1, 2, 3).
pub fn put_i128(out: &mut Vec<u8>, v: i128) {
    put_varint(out, ((v << 1) ^ (v >> 127)) as u128);
}

/// Appends a zig-zag varint of an i64.
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_i128(out, i128::from(v));
}

/// What an [`IndexCursor`] read found wrong: a fixed message, so that a read's `Result` is
/// two words passed in registers (index parsing is on every query's path); parsers that
/// need details make a `String` of it with `?`.
pub type CursorError = &'static str;

/// A cursor over the decompressed index. Every read checks bounds and reports the offset
/// (within the index) of what was wrong, so that a corrupt index is an error, never a panic.
pub struct IndexCursor<'a> {
    bytes: &'a [u8],
    /// Position in `bytes`.
    pub pos: usize,
}

impl<'a> IndexCursor<'a> {
    /// A cursor at `pos`.
    pub fn new(bytes: &'a [u8], pos: usize) -> Self {
        Self { bytes, pos }
    }

    /// Whether every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// Bytes `from..to` of what the cursor reads (both already checked in bounds).
    pub fn slice(&self, from: usize, to: usize) -> &'a [u8] {
        &self.bytes[from..to]
    }

    /// Moves past `n` bytes, which must all be there.
    pub fn skip(&mut self, n: u64) -> Result<(), CursorError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|end| *end <= self.bytes.len())
            .ok_or("index ends inside an entry")?;
        self.pos = end;
        Ok(())
    }

    /// Moves past `n` varints.
    pub fn skip_varints(&mut self, n: usize) -> Result<(), CursorError> {
        for _ in 0..n {
            let len = self.bytes[self.pos.min(self.bytes.len())..]
                .iter()
                .position(|b| b & 0x80 == 0)
                .ok_or("index ends inside an entry")?;
            self.pos += len + 1;
        }
        Ok(())
    }

    /// One byte.
    pub fn byte(&mut self) -> Result<u8, CursorError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or("index ends inside an entry")?;
        self.pos += 1;
        Ok(b)
    }

    /// Four raw little-endian bytes.
    pub fn u32_le(&mut self) -> Result<u32, CursorError> {
        let b = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or("index ends inside an entry")?;
        self.pos += 4;
        Ok(le_u32(b))
    }

    /// Eight raw little-endian bytes as an f64.
    pub fn f64_le(&mut self) -> Result<f64, CursorError> {
        let b = self
            .bytes
            .get(self.pos..self.pos + 8)
            .ok_or("index ends inside an entry")?;
        self.pos += 8;
        Ok(f64::from_bits(le_u64(b)))
    }

    /// An LEB128 varint of at most 128 bits.
    #[inline]
    pub fn varint(&mut self) -> Result<u128, CursorError> {
        // Most index varints are one byte: read those without the loop.
        if let Some(&b) = self.bytes.get(self.pos).filter(|b| **b < 0x80) {
            self.pos += 1;
            return Ok(u128::from(b));
        }
        let mut v = 0u128;
        for shift in (0..128).step_by(7) {
            let b = self.byte()?;
            let part = u128::from(b & 0x7f);
            if shift == 126 && part > 3 {
                return Err("varint overflows 128 bits");
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 19 bytes")
    }

    /// A varint that must fit in a u64.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, CursorError> {
        match self.short_varint() {
            Some(v) => Ok(v),
            None => u64::try_from(self.varint()?).map_err(|_| "varint over u64"),
        }
    }

    /// A varint of at most 9 bytes (63 bits), without the general loop's 128-bit
    /// arithmetic: every varint of a valid index but the largest. `None` (nothing read) for
    /// longer ones and at the end of the index, which [`IndexCursor::varint`] then reads or
    /// reports.
    #[inline]
    fn short_varint(&mut self) -> Option<u64> {
        let rest = self.bytes.get(self.pos..)?;
        let mut v = 0u64;
        for (i, &b) in rest.iter().take(9).enumerate() {
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos += i + 1;
                return Some(v);
            }
        }
        None
    }

    /// A varint that must fit in a u32.
    #[inline]
    pub fn u32(&mut self) -> Result<u32, CursorError> {
        u32::try_from(self.u64()?).map_err(|_| "varint over u32")
    }

    /// A zig-zag varint.
    pub fn i128(&mut self) -> Result<i128, CursorError> {
        let z = self.varint()?;
        Ok((z >> 1) as i128 ^ -((z & 1) as i128))
    }

    /// A zig-zag varint that must fit in an i64.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, CursorError> {
        if let Some(z) = self.short_varint() {
            return Ok((z >> 1) as i64 ^ -((z & 1) as i64));
        }
        i64::try_from(self.i128()?).map_err(|_| "signed varint over i64")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_the_limits() {
        let mut out = Vec::new();
        let unsigned = [0u128, 1, 127, 128, u128::from(u64::MAX), u128::MAX];
        let signed = [0i128, -1, 1, i128::from(i64::MIN), i128::MIN, i128::MAX];
        for v in unsigned {
            put_varint(&mut out, v);
        }
        for v in signed {
            put_i128(&mut out, v);
        }
        let mut c = IndexCursor::new(&out, 0);
        for v in unsigned {
            assert_eq!(c.varint().unwrap(), v);
        }
        for v in signed {
            assert_eq!(c.i128().unwrap(), v);
        }
        assert!(c.at_end());
        // The 64-bit readers agree with the general one on every length, and reject what
        // does not fit.
        let mut out = Vec::new();
        let wide = [0u64, 1, 127, 128, 1 << 62, (1 << 63) - 1, 1 << 63, u64::MAX];
        let narrow = [0i64, -1, 1, i64::MIN, i64::MAX, 1_554_076_800_000_000_000];
        for v in wide {
            put_u64(&mut out, v);
        }
        for v in narrow {
            put_i64(&mut out, v);
        }
        put_varint(&mut out, u128::from(u64::MAX) + 1);
        put_i128(&mut out, i128::from(i64::MIN) - 1);
        let mut c = IndexCursor::new(&out, 0);
        for v in wide {
            assert_eq!(c.u64().unwrap(), v);
        }
        for v in narrow {
            assert_eq!(c.i64().unwrap(), v);
        }
        assert!(c.u64().is_err());
        assert!(c.i64().is_err());
        // A non-canonical encoding (a zero high group) reads as its value, as before.
        assert_eq!(IndexCursor::new(&[0x81, 0x00], 0).u64().unwrap(), 1);
        assert!(IndexCursor::new(&[0x81], 0).u64().is_err());
        assert!(IndexCursor::new(&[0x80; 12], 0).u32().is_err());
        // One bit past u128 is rejected.
        let mut over = vec![0xffu8; 18];
        over.push(0x04);
        assert!(IndexCursor::new(&over, 0).varint().is_err());
    }

    #[test]
    fn header_and_footer_round_trip() {
        let path = Path::new("x");
        for version in [OLDEST_READABLE_VERSION, FORMAT_VERSION] {
            assert_eq!(
                check_header(path, &encode_header(version)).unwrap(),
                version
            );
        }
        assert!(check_header(path, &encode_header(FORMAT_VERSION + 1)).is_err());
        assert!(check_header(path, &encode_header(0)).is_err());
        let footer = Footer {
            index_offset: 16,
            index_stored_len: 3,
            index_raw_len: 9,
            index_crc: 7,
            series: 2,
            rows: 5,
            min_time: -4,
            max_time: i64::MAX,
            version: FORMAT_VERSION,
        };
        assert_eq!(Footer::decode(path, 0, &footer.encode()).unwrap(), footer);
    }
}
