//! UTF-8 string columns. Encode from any `&[S]` with `S: AsRef<str>`; decode into `Vec<String>`.
//! - `StringRaw` (50): `n` times `varint(len)` + `len` bytes.
//! - `StringDictionary` (51): `varint(d)` distinct values (`1 <= d <= n`) in first-seen order,
//!   each `varint(len)` + bytes; then `n` indexes of `w = bit_width(d - 1)` bits each (0 bits
//!   if `d == 1`) as one LSB-first bit string of `ceil(n * w / 8)` bytes.
//! - `StringZstd` (52): inner tag (1 byte, 50 or 51), `varint(raw_len)` (the inner payload's
//!   size, at most [`MAX_STRING_PAYLOAD_BYTES`]), `varint(zlen)`, `zlen` bytes of one zstd
//!   frame that decompresses to exactly the inner payload.
//!
//! (No payload at all when the count is 0; such a block is tagged `StringRaw`.)
//! The encoder builds raw and (when under half the values are distinct) dictionary payloads,
//! keeps the smaller, and wraps it in zstd (level [`ZSTD_LEVEL`]) when that saves bytes.

use std::collections::HashMap;

use crate::bitpack::{BitReader, BitWriter, bit_width};
use crate::header::{Reader, check_range, put_header, put_varint, read_header};
use crate::{CodecError, ColumnType, Encoding};

/// Largest inner payload a `StringZstd` block may claim: bounds the memory a hostile block
/// can make the decoder allocate. 64 MiB is far above a block of a few thousand strings.
pub const MAX_STRING_PAYLOAD_BYTES: usize = 64 << 20;

/// zstd level for string payloads. Measured on 1,080-string blocks of log-like text
/// (`cargo run --release -p strata-codec --example ratio`): level 1 ratio 0.354 at 178 MB/s,
/// 3: 0.344 at 134 MB/s, 6: 0.337 at 48 MB/s, 19: 0.321 at 2 MB/s. Level 3 is the knee.
pub const ZSTD_LEVEL: i32 = 3;

/// Payloads shorter than this are not worth a zstd frame header (about 10 bytes).
const ZSTD_MIN_PAYLOAD: usize = 64;

fn raw_payload<S: AsRef<str>>(values: &[S]) -> Vec<u8> {
    let mut p = Vec::new();
    for v in values {
        let s = v.as_ref().as_bytes();
        put_varint(&mut p, s.len() as u64);
        p.extend_from_slice(s);
    }
    p
}

fn dict_payload<S: AsRef<str>>(values: &[S]) -> Option<Vec<u8>> {
    let mut ids: HashMap<&str, u64> = HashMap::new();
    let mut distinct: Vec<&str> = Vec::new();
    let mut idx = Vec::with_capacity(values.len());
    for v in values {
        let s = v.as_ref();
        let id = *ids.entry(s).or_insert_with(|| {
            distinct.push(s);
            distinct.len() as u64 - 1
        });
        idx.push(id);
        if distinct.len() > values.len() / 2 {
            return None;
        }
    }
    let mut p = Vec::new();
    put_varint(&mut p, distinct.len() as u64);
    for s in &distinct {
        put_varint(&mut p, s.len() as u64);
        p.extend_from_slice(s.as_bytes());
    }
    let w = bit_width(distinct.len() as u64 - 1);
    let mut bw = BitWriter::new(&mut p);
    for i in idx {
        bw.put(i, w);
    }
    bw.finish();
    Some(p)
}

/// Appends one block holding `values`.
///
/// # Panics
/// If `values.len()` is over [`crate::MAX_BLOCK_VALUES`].
pub fn encode<S: AsRef<str>>(values: &[S], out: &mut Vec<u8>) {
    if values.is_empty() {
        put_header(out, Encoding::StringRaw, 0);
        return;
    }
    let raw = raw_payload(values);
    let (inner, payload) = match dict_payload(values) {
        Some(d) if d.len() < raw.len() => (Encoding::StringDictionary, d),
        _ => (Encoding::StringRaw, raw),
    };
    if payload.len() >= ZSTD_MIN_PAYLOAD
        && payload.len() <= MAX_STRING_PAYLOAD_BYTES
        && let Ok(z) = zstd::bulk::compress(&payload, ZSTD_LEVEL)
    {
        // 1 tag byte + two varints of at most 4 bytes each for sizes under 64 MiB.
        if z.len() + 9 < payload.len() {
            put_header(out, Encoding::StringZstd, values.len());
            out.push(inner.tag());
            put_varint(out, payload.len() as u64);
            put_varint(out, z.len() as u64);
            out.extend_from_slice(&z);
            return;
        }
    }
    put_header(out, inner, values.len());
    out.extend_from_slice(&payload);
}

fn read_str<'a>(r: &mut Reader<'a>) -> Result<&'a str, CodecError> {
    let len = r.len_varint()?;
    let at = r.pos;
    let bytes = r.bytes(len)?;
    std::str::from_utf8(bytes).map_err(|_| CodecError::InvalidPayload {
        encoding: r.encoding,
        offset: at,
        reason: "string is not valid UTF-8",
    })
}

/// Decodes a raw or dictionary payload of `n` values.
fn decode_payload(r: &mut Reader<'_>, n: usize, out: &mut Vec<String>) -> Result<(), CodecError> {
    if r.encoding == Encoding::StringRaw {
        // Each value costs at least its length byte.
        if n > r.remaining() {
            return Err(CodecError::Truncated {
                offset: r.pos,
                needed: n - r.remaining(),
            });
        }
        out.reserve(n);
        for _ in 0..n {
            out.push(read_str(r)?.to_owned());
        }
        return Ok(());
    }
    let d = r.varint()?;
    if d == 0 || d > n as u64 || d > r.remaining() as u64 {
        return Err(r.invalid("dictionary size is 0, over the count, or over the input"));
    }
    let mut dict = Vec::with_capacity(d as usize);
    for _ in 0..d {
        dict.push(read_str(r)?);
    }
    let w = bit_width(d - 1);
    let bits = r.bytes((n * w as usize).div_ceil(8))?;
    let mut br = BitReader::new(bits);
    out.reserve(n);
    for _ in 0..n {
        let s = dict
            .get(br.get(w) as usize)
            .ok_or(r.invalid("dictionary index out of range"))?;
        out.push((*s).to_owned());
    }
    Ok(())
}

/// Decodes values `from..to` of a raw or dictionary payload of `n` values; strings before
/// `from` are skipped without copying, and reading stops at `to`.
fn decode_payload_range(
    r: &mut Reader<'_>,
    n: usize,
    from: usize,
    to: usize,
    out: &mut Vec<String>,
) -> Result<(), CodecError> {
    if r.encoding == Encoding::StringRaw {
        if n > r.remaining() {
            return Err(CodecError::Truncated {
                offset: r.pos,
                needed: n - r.remaining(),
            });
        }
        for _ in 0..from {
            let len = r.len_varint()?;
            r.bytes(len)?;
        }
        out.reserve(to - from);
        for _ in from..to {
            out.push(read_str(r)?.to_owned());
        }
        return Ok(());
    }
    let d = r.varint()?;
    if d == 0 || d > n as u64 || d > r.remaining() as u64 {
        return Err(r.invalid("dictionary size is 0, over the count, or over the input"));
    }
    let mut dict = Vec::with_capacity(d as usize);
    for _ in 0..d {
        dict.push(read_str(r)?);
    }
    let w = bit_width(d - 1);
    let bits = r.bytes((n * w as usize).div_ceil(8))?;
    let skip = from * w as usize;
    let mut br = BitReader::new(&bits[skip / 8..]);
    br.get((skip % 8) as u32);
    out.reserve(to - from);
    for _ in from..to {
        let s = dict
            .get(br.get(w) as usize)
            .ok_or(r.invalid("dictionary index out of range"))?;
        out.push((*s).to_owned());
    }
    Ok(())
}

/// Appends values `from..to` of the block at the start of `block` (what [`decode`] gives,
/// sliced, without copying the strings outside the range) and returns the block's value
/// count. Reading stops at `to`, so the block's length is not checked (storage checksums
/// blocks); a zstd payload is decompressed whole. On error `out` is left as it was; a range
/// past the count is [`CodecError::RangeOutOfBounds`].
pub fn decode_range(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<String>,
) -> Result<usize, CodecError> {
    let len = out.len();
    decode_range_inner(block, from, to, out).inspect_err(|_| out.truncate(len))
}

fn decode_range_inner(
    block: &[u8],
    from: usize,
    to: usize,
    out: &mut Vec<String>,
) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::String)?;
    check_range(from, to, n)?;
    if from == to {
        return Ok(n);
    }
    if r.encoding != Encoding::StringZstd {
        decode_payload_range(&mut r, n, from, to, out)?;
        return Ok(n);
    }
    let inner = match Encoding::from_tag(r.byte()?) {
        Some(e @ (Encoding::StringRaw | Encoding::StringDictionary)) => e,
        _ => return Err(r.invalid("zstd inner tag is not a raw or dictionary string encoding")),
    };
    let raw_len = r.varint()?;
    if raw_len > MAX_STRING_PAYLOAD_BYTES as u64 {
        return Err(r.invalid("zstd inner payload over MAX_STRING_PAYLOAD_BYTES"));
    }
    let zlen = r.len_varint()?;
    let z = r.bytes(zlen)?;
    let payload = zstd::bulk::decompress(z, raw_len as usize)
        .map_err(|_| r.invalid("zstd frame does not decompress"))?;
    if payload.len() as u64 != raw_len {
        return Err(r.invalid("zstd frame decompresses to the wrong size"));
    }
    let mut pr = Reader {
        buf: &payload,
        pos: 0,
        encoding: inner,
    };
    decode_payload_range(&mut pr, n, from, to, out)?;
    Ok(n)
}

/// Appends the values of the block at the start of `block`; returns the bytes it used.
/// On error `out` is left as it was.
pub fn decode(block: &[u8], out: &mut Vec<String>) -> Result<usize, CodecError> {
    let len = out.len();
    decode_inner(block, out).inspect_err(|_| out.truncate(len))
}

fn decode_inner(block: &[u8], out: &mut Vec<String>) -> Result<usize, CodecError> {
    let (mut r, n) = read_header(block, ColumnType::String)?;
    if n == 0 {
        return Ok(r.pos);
    }
    if r.encoding != Encoding::StringZstd {
        decode_payload(&mut r, n, out)?;
        return Ok(r.pos);
    }
    let inner = match Encoding::from_tag(r.byte()?) {
        Some(e @ (Encoding::StringRaw | Encoding::StringDictionary)) => e,
        _ => return Err(r.invalid("zstd inner tag is not a raw or dictionary string encoding")),
    };
    let raw_len = r.varint()?;
    if raw_len > MAX_STRING_PAYLOAD_BYTES as u64 {
        return Err(r.invalid("zstd inner payload over MAX_STRING_PAYLOAD_BYTES"));
    }
    let zlen = r.len_varint()?;
    let z = r.bytes(zlen)?;
    let payload = zstd::bulk::decompress(z, raw_len as usize)
        .map_err(|_| r.invalid("zstd frame does not decompress"))?;
    if payload.len() as u64 != raw_len {
        return Err(r.invalid("zstd frame decompresses to the wrong size"));
    }
    let mut pr = Reader {
        buf: &payload,
        pos: 0,
        encoding: inner,
    };
    decode_payload(&mut pr, n, out)?;
    if pr.pos != payload.len() {
        return Err(r.invalid("zstd inner payload has trailing bytes"));
    }
    Ok(r.pos)
}

/// The number of values in the block, from its header alone.
pub fn decoded_len(block: &[u8]) -> Result<usize, CodecError> {
    read_header(block, ColumnType::String).map(|(_, n)| n)
}
