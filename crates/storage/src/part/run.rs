//! A series' chunks decoded straight into one [`SeriesData`].
//!
//! Why: a read over hours of a series decodes one chunk per hour. Decoding each into its
//! own buffers, slicing the edge ones and joining them cost allocations and a copy of
//! every row, and each value block's rANS stream was decoded alone, its two state chains
//! leaving the core waiting on each step. In the common case — every chunk with the same
//! numeric columns and every row holding every field — times and values are instead
//! appended to one buffer per column, value blocks two at a time (the codec's
//! `decode_two`, four state chains in one loop). Anything else takes the general path
//! (decode each chunk, then [`super::chunk::concat`]); both give the same rows.

use strata_codec::{self as codec, CodecError};

use crate::column::{Column, SeriesData, Values};
use crate::model::{FieldId, FieldType, Timestamp};

use super::chunk::{BlockRef, ChunkMeta, ColumnMeta, whole};

/// The columns of `fields` (`None` = all) of a chunk, in field order.
fn wanted<'c>(
    chunk: &'c ChunkMeta,
    fields: Option<&'c [FieldId]>,
) -> impl Iterator<Item = &'c ColumnMeta> {
    chunk
        .columns
        .iter()
        .filter(move |c| fields.is_none_or(|f| f.contains(&c.field)))
}

/// Whether [`decode_run`] reads `chunks` (one series' chunks with rows in
/// `start..end`, in time order): at least two; the same numeric columns of `fields` in
/// each, none with a presence block; every chunk but the first and last wholly inside
/// the range.
pub(crate) fn is_run(
    chunks: &[ChunkMeta],
    fields: Option<&[FieldId]>,
    start: Timestamp,
    end: Timestamp,
) -> bool {
    let [first, middle @ .., _] = chunks else {
        return false;
    };
    let numeric = |c: &ColumnMeta| {
        c.presence.is_none()
            && matches!(
                c.field_type,
                FieldType::Float | FieldType::Integer | FieldType::Unsigned
            )
    };
    let same = |chunk: &ChunkMeta| {
        let (mut these, mut firsts) = (wanted(chunk, fields), wanted(first, fields));
        loop {
            match (these.next(), firsts.next()) {
                (None, None) => return true,
                (Some(a), Some(b))
                    if a.field == b.field && a.field_type == b.field_type && numeric(a) => {}
                _ => return false,
            }
        }
    };
    wanted(first, fields).next().is_some()
        && chunks.iter().all(same)
        && middle
            .iter()
            .all(|c| c.min_time >= start && c.max_time < end)
}

/// The rows of `chunks` with `start <= time < end`, `fields` only, where [`is_run`] holds;
/// `bytes(i, block)` gives the bytes of a block of chunk `i`. `None` when the edge chunks
/// are not as a run's are (the general path then reads them). The caller checks the
/// result ([`SeriesData::check`]): times increasing across chunks, one value per row.
pub(crate) fn decode_run<'b>(
    chunks: &[ChunkMeta],
    fields: Option<&[FieldId]>,
    bytes: impl Fn(usize, &BlockRef) -> &'b [u8],
    start: Timestamp,
    end: Timestamp,
) -> Result<Option<SeriesData>, (u64, String)> {
    let last = chunks.len() - 1;
    let rows: usize = chunks.iter().map(|c| c.rows as usize).sum();
    let mut times = Vec::with_capacity(rows);
    // Rows of the first chunk before `start` are left out (their values dropped once
    // decoded); rows of the last one from `end` on are cut off the end of every buffer.
    let mut skip_first = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        if i == 0 && chunk.min_time < start {
            let block = chunk.time_block.as_ref().map_or(&[][..], |b| bytes(0, b));
            let (from, to, first_times) = chunk.window_rows(block, start, end)?;
            if to != chunk.rows as usize {
                return Ok(None); // the range ends in the first chunk: not a run
            }
            skip_first = from;
            times.extend(first_times);
        } else {
            chunk.append_times(|b| bytes(i, b), &mut times)?;
        }
    }
    let last_rows = chunks[last].rows as usize;
    let last_from = times.len() - last_rows;
    let cut_last = last_rows - times[last_from..].partition_point(|t| *t < end);
    times.truncate(times.len() - cut_last);
    let mut columns = Vec::new();
    for meta in wanted(&chunks[0], fields) {
        let field = meta.field;
        let block = |i: usize| {
            // `is_run` saw this column in every chunk.
            let m = chunks[i]
                .column(field)
                .expect("a run's chunks share columns");
            (m.values, bytes(i, &m.values), chunks[i].rows as usize)
        };
        let blocks = (0..chunks.len()).map(block);
        let run = (skip_first, cut_last);
        let values = match meta.field_type {
            FieldType::Float => Values::Float(decode_values(blocks, run, FLOAT)?),
            FieldType::Integer => Values::Integer(decode_values(blocks, run, INTEGER)?),
            FieldType::Unsigned => Values::Unsigned(decode_values(blocks, run, UNSIGNED)?),
            FieldType::Boolean | FieldType::String => return Ok(None),
        };
        columns.push(Column {
            field,
            values,
            present: None,
        });
    }
    Ok(Some(SeriesData { times, columns }))
}

/// A numeric column's decoders in the codec crate.
struct Decoders<T> {
    decode: fn(&[u8], &mut Vec<T>) -> Result<usize, CodecError>,
    decode_two: fn(&[u8], &[u8], &mut Vec<T>) -> codec::DecodedTwo,
    decoded_len: fn(&[u8]) -> Result<usize, CodecError>,
}

const FLOAT: Decoders<f64> = Decoders {
    decode: codec::float::decode,
    decode_two: codec::float::decode_two,
    decoded_len: codec::float::decoded_len,
};

const INTEGER: Decoders<i64> = Decoders {
    decode: codec::integer::decode,
    decode_two: codec::integer::decode_two,
    decoded_len: codec::integer::decoded_len,
};

const UNSIGNED: Decoders<u64> = Decoders {
    decode: codec::unsigned::decode,
    decode_two: codec::unsigned::decode_two,
    decoded_len: codec::unsigned::decoded_len,
};

/// One column's values over a run: `blocks` gives each chunk's value block, its bytes and
/// its row count (one value per row); the first `skip_first` values of the first block
/// and the last `cut_last` of the last block are dropped.
fn decode_values<'b, T: Copy>(
    blocks: impl ExactSizeIterator<Item = (BlockRef, &'b [u8], usize)>,
    (skip_first, cut_last): (usize, usize),
    codec: Decoders<T>,
) -> Result<Vec<T>, (u64, String)> {
    let mut blocks = blocks.peekable();
    let mut out = Vec::with_capacity(blocks.len() * blocks.peek().map_or(0, |b| b.2));
    let counted = |block: &BlockRef, bytes: &[u8], rows: usize| match (codec.decoded_len)(bytes) {
        Ok(n) if n == rows => Ok(()),
        Ok(n) => Err((
            block.offset,
            format!("value block holds {n} values, index says {rows}"),
        )),
        Err(e) => Err((block.offset, format!("cannot decode block: {e}"))),
    };
    // The first block's values before the range are decoded too (a rANS stream is decoded
    // whole anyway), with the second's, into a buffer of their own, so that this pair too
    // is decoded in one loop.
    let mut first_pair = (skip_first > 0).then(Vec::new);
    while let Some((b1, bytes1, rows1)) = blocks.next() {
        counted(&b1, bytes1, rows1)?;
        let into = first_pair.as_mut().unwrap_or(&mut out);
        match blocks.next() {
            None => whole(&b1, (codec.decode)(bytes1, into))?,
            Some((b2, bytes2, rows2)) => {
                counted(&b2, bytes2, rows2)?;
                match (codec.decode_two)(bytes1, bytes2, into) {
                    Ok((used1, used2)) => {
                        whole(&b1, Ok(used1))?;
                        whole(&b2, Ok(used2))?;
                    }
                    Err((which, e)) => {
                        let block = if which == 0 { b1 } else { b2 };
                        return Err((block.offset, format!("cannot decode block: {e}")));
                    }
                }
            }
        }
        if let Some(first) = first_pair.take() {
            out.extend_from_slice(first.get(skip_first..).unwrap_or_default());
        }
    }
    out.truncate(out.len().saturating_sub(cut_last));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{PartReader, PartWriter};

    /// splitmix64.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> i64 {
            (self.next() % n) as i64
        }
    }

    /// A numeric series of several hourly chunks: regular or jittered times; a decimal
    /// walk (rANS mantissas), arbitrary floats (pco), a small-step integer walk (rANS),
    /// a wide one (bit-packed) and unsigned values.
    fn series(rng: &mut Rng) -> SeriesData {
        let rows = 200 + rng.below(3000) as usize;
        let regular = rng.below(2) == 0;
        let mut t = 1_451_606_400_000_000_000 + rng.below(3_600) * 1_000_000_000;
        let times = (0..rows)
            .map(|_| {
                t += if regular {
                    10_000_000_000
                } else {
                    1 + rng.below(20_000_000_000)
                };
                t
            })
            .collect();
        let walk = |rng: &mut Rng, spread: u64| -> Vec<i64> {
            let mut v = rng.below(100);
            (0..rows)
                .map(|_| {
                    v += rng.below(2 * spread + 1) - spread as i64;
                    v
                })
                .collect()
        };
        let decimals = walk(rng, 2).into_iter().map(|m| m as f64 / 100.0).collect();
        let columns = vec![
            (0, Values::Float(decimals)),
            (
                1,
                Values::Float((0..rows).map(|_| f64::from_bits(rng.next())).collect()),
            ),
            (2, Values::Integer(walk(rng, 3))),
            (3, Values::Integer(walk(rng, 1 << 40))),
            (
                4,
                Values::Unsigned((0..rows).map(|_| rng.next() >> 20).collect()),
            ),
        ];
        SeriesData {
            times,
            columns: columns
                .into_iter()
                .map(|(field, values)| Column {
                    field,
                    values,
                    present: None,
                })
                .collect(),
        }
    }

    /// Each column's field and values as bits (NaN payloads compared too).
    fn bits(data: &SeriesData) -> Vec<(FieldId, Vec<u64>)> {
        let as_bits = |v: &Values| match v {
            Values::Float(v) => v.iter().map(|x| x.to_bits()).collect(),
            Values::Integer(v) => v.iter().map(|x| *x as u64).collect(),
            Values::Unsigned(v) => v.clone(),
            _ => unreachable!("numeric columns only"),
        };
        data.columns
            .iter()
            .map(|c| {
                assert!(c.present.is_none());
                (c.field, as_bits(&c.values))
            })
            .collect()
    }

    #[test]
    fn a_run_reads_what_its_chunks_hold() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("p");
        let mut rng = Rng(7);
        let all: Vec<SeriesData> = (0..12).map(|_| series(&mut rng)).collect();
        let mut writer = PartWriter::create(&path).unwrap();
        for (id, data) in all.iter().enumerate() {
            writer.write_series(id as u32, 0, data).unwrap();
        }
        writer.finish().unwrap();
        let reader = PartReader::open(&path).unwrap();
        let mut runs = 0;
        for (id, data) in all.iter().enumerate() {
            let id = id as u32;
            for round in 0..20 {
                let pick = |rng: &mut Rng| data.times[rng.below(data.rows() as u64) as usize];
                let (a, b) = (pick(&mut rng) - rng.below(2), pick(&mut rng) + rng.below(2));
                let (start, end) = if round == 0 {
                    (i64::MIN, i64::MAX)
                } else {
                    (a.min(b), a.max(b))
                };
                let fields: Option<Vec<FieldId>> =
                    (round % 3 == 1).then(|| (0..5).filter(|_| rng.below(2) == 0).collect());
                let fields = fields.as_deref();
                let mut want = data.slice_time(start, end);
                if let Some(f) = fields {
                    want.columns.retain(|c| f.contains(&c.field));
                }
                let chunks = reader.chunks_in(id, start, end - 1, fields).unwrap();
                if is_run(&chunks, fields, start, end) {
                    runs += 1;
                }
                let got = reader.read_series(id, start, end, fields).unwrap();
                let what = format!("series {id} {start}..{end} {fields:?}");
                let Some(got) = got else {
                    assert_eq!(want.rows(), 0, "{what}");
                    continue;
                };
                assert_eq!(got.times, want.times, "{what}");
                assert_eq!(bits(&got), bits(&want), "{what}");
            }
        }
        // The reads above must exercise the run path, not only the general one.
        assert!(runs > 150, "only {runs} of 240 reads were runs");
    }
}
