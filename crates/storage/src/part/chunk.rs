//! One chunk's index entry ([`ChunkMeta`]): parsing and checking it, and decoding the blocks
//! it points to into [`SeriesData`].

use strata_codec as codec;

use crate::column::{Column, SeriesData, Values};
use crate::model::{FieldId, FieldType, Timestamp};

use super::format::{IndexCursor, MAX_ROWS_PER_CHUNK};
use super::preagg::PreAgg;

/// Where one block lies in the file and its checksum. Only the reader makes these, so a
/// block position always comes from a checked index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRef {
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) crc: u32,
}

impl BlockRef {
    /// File offset of the block.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length of the block in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the block has no bytes (never true for a block of a valid part).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// File offset just past the block.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// One column of one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnMeta {
    /// Which field.
    pub field: FieldId,
    /// Its type.
    pub field_type: FieldType,
    /// The presence block (codec boolean, one value per row); `None` when every row of the
    /// chunk has the field.
    pub presence: Option<BlockRef>,
    /// The value block (one value per present row).
    pub values: BlockRef,
    /// Pre-aggregates of the values.
    pub preagg: PreAgg,
}

/// One chunk of one series: up to [`MAX_ROWS_PER_CHUNK`] rows, decoded on demand.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkMeta {
    /// Number of rows.
    pub rows: u32,
    /// Time of the first row.
    pub min_time: Timestamp,
    /// Time of the last row.
    pub max_time: Timestamp,
    /// The timestamp block.
    pub time_block: BlockRef,
    /// Columns with at least one value in the chunk, by increasing field id.
    pub columns: Vec<ColumnMeta>,
}

impl ChunkMeta {
    /// The column of `field`, if the chunk has values of it.
    pub fn column(&self, field: FieldId) -> Option<&ColumnMeta> {
        self.columns
            .binary_search_by_key(&field, |c| c.field)
            .ok()
            .map(|i| &self.columns[i])
    }

    /// The columns of `fields` (`None` = all) that the chunk has, by increasing field id.
    pub(crate) fn columns_of(&self, fields: Option<&[FieldId]>) -> Vec<&ColumnMeta> {
        self.columns
            .iter()
            .filter(|c| fields.is_none_or(|f| f.contains(&c.field)))
            .collect()
    }

    /// Parses a chunk entry whose first block starts at file offset `*data_offset`, advancing
    /// it past the chunk's blocks, and checks everything that can be checked without the
    /// blocks themselves.
    pub(crate) fn parse(c: &mut IndexCursor<'_>, data_offset: &mut u64) -> Result<Self, String> {
        let rows = c.u32()?;
        if rows == 0 || rows as usize > MAX_ROWS_PER_CHUNK {
            return Err(format!(
                "chunk of {rows} rows, not in 1..={MAX_ROWS_PER_CHUNK}"
            ));
        }
        let min_time = c.i64()?;
        let span = c.u64()?;
        let max_time = i64::try_from(i128::from(min_time) + i128::from(span))
            .map_err(|_| "chunk max time over i64".to_string())?;
        // Times strictly increase, so n rows span at least n - 1 ns.
        if span < u64::from(rows - 1) {
            return Err(format!("{rows} rows cannot span {span} ns"));
        }
        let time_block = block(c, data_offset)?.ok_or("chunk without a time block")?;
        let count = c.u64()?;
        let mut columns = Vec::new();
        for _ in 0..count {
            let field = c.u32()?;
            if columns
                .last()
                .is_some_and(|p: &ColumnMeta| p.field >= field)
            {
                return Err("chunk columns not sorted by field id".into());
            }
            let tag = c.byte()?;
            let field_type =
                FieldType::from_tag(tag).ok_or_else(|| format!("unknown field type {tag}"))?;
            let presence = block(c, data_offset)?;
            let values = block(c, data_offset)?.ok_or("column without a value block")?;
            let preagg = PreAgg::decode(c, field_type, rows)?;
            // The writer stores presence exactly when some row lacks the field.
            if presence.is_some() == (preagg.count() == rows) {
                return Err(format!(
                    "field {field}: presence block disagrees with its count"
                ));
            }
            columns.push(ColumnMeta {
                field,
                field_type,
                presence,
                values,
                preagg,
            });
        }
        Ok(Self {
            rows,
            min_time,
            max_time,
            time_block,
            columns,
        })
    }

    /// Decodes the chunk's blocks, `bytes(block)` giving each block's checked bytes. Any
    /// disagreement between blocks and index is an error (the caller makes it Corrupt).
    pub(crate) fn decode<'b>(
        &self,
        columns: &[&ColumnMeta],
        bytes: impl Fn(&BlockRef) -> &'b [u8],
    ) -> Result<SeriesData, (u64, String)> {
        let rows = self.rows as usize;
        let mut times = Vec::with_capacity(rows);
        let tb = &self.time_block;
        whole(tb, codec::timestamp::decode(bytes(tb), &mut times))?;
        if times.len() != rows
            || times.first() != Some(&self.min_time)
            || times.last() != Some(&self.max_time)
        {
            return Err((tb.offset, "time block disagrees with the index".into()));
        }
        let mut out = Vec::with_capacity(columns.len());
        for meta in columns {
            let count = meta.preagg.count() as usize;
            let present = match &meta.presence {
                None => None,
                Some(pb) => {
                    let mut p = Vec::with_capacity(rows);
                    whole(pb, codec::boolean::decode(bytes(pb), &mut p))?;
                    if p.len() != rows || p.iter().filter(|x| **x).count() != count {
                        return Err((pb.offset, "presence block disagrees with the index".into()));
                    }
                    Some(p)
                }
            };
            let vb = &meta.values;
            let b = bytes(vb);
            let values = match meta.field_type {
                FieldType::Float => Values::Float(decode_vec(vb, b, codec::float::decode)?),
                FieldType::Integer => Values::Integer(decode_vec(vb, b, codec::integer::decode)?),
                FieldType::Unsigned => {
                    Values::Unsigned(decode_vec(vb, b, codec::unsigned::decode)?)
                }
                FieldType::Boolean => Values::Boolean(decode_vec(vb, b, codec::boolean::decode)?),
                FieldType::String => Values::String(decode_vec(vb, b, codec::string::decode)?),
            };
            if values.len() != count {
                return Err((
                    vb.offset,
                    format!(
                        "value block holds {} values, index says {count}",
                        values.len()
                    ),
                ));
            }
            out.push(Column {
                field: meta.field,
                values,
                present,
            });
        }
        Ok(SeriesData {
            times,
            columns: out,
        })
    }
}

impl ChunkMeta {
    /// The rows `from..to` (row indexes) of the chunk with `start <= time < end`, and
    /// their times: by arithmetic for a regular time block, else from the whole block.
    fn window_rows(
        &self,
        block: &[u8],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<(usize, usize, Vec<Timestamp>), (u64, String)> {
        let rows = self.rows as usize;
        let tb = &self.time_block;
        let disagrees = || (tb.offset, "time block disagrees with the index".to_string());
        let regular = codec::timestamp::regular(block)
            .map_err(|e| (tb.offset, format!("cannot decode block: {e}")))?;
        if let Some((first, step, count)) = regular {
            let last = i128::from(first) + (count as i128 - 1) * i128::from(step);
            if count != rows
                || first != self.min_time
                || last != i128::from(self.max_time)
                || (count > 1 && step <= 0)
            {
                return Err(disagrees());
            }
            // Rows with time < t: first + i * step < t, i.e. i < (t - first) / step.
            let before = |t: Timestamp| -> usize {
                if t <= first {
                    0
                } else if count == 1 {
                    1
                } else {
                    let d = i128::from(t) - i128::from(first);
                    let s = i128::from(step);
                    ((d + s - 1) / s).min(count as i128) as usize
                }
            };
            let (from, to) = (before(start), before(end));
            let mut times = Vec::with_capacity(to - from);
            codec::timestamp::decode_range(block, from, to, &mut times)
                .map_err(|e| (tb.offset, format!("cannot decode block: {e}")))?;
            return Ok((from, to, times));
        }
        let mut times = Vec::with_capacity(rows);
        whole(tb, codec::timestamp::decode(block, &mut times))?;
        if times.len() != rows
            || times.first() != Some(&self.min_time)
            || times.last() != Some(&self.max_time)
            || times.windows(2).any(|w| w[0] >= w[1])
        {
            return Err(disagrees());
        }
        let from = times.partition_point(|t| *t < start);
        let to = times.partition_point(|t| *t < end);
        times.truncate(to);
        times.drain(..from);
        Ok((from, to, times))
    }

    /// What [`ChunkMeta::decode`] then [`SeriesData::slice_time`] give, decoding only the
    /// rows with `start <= time < end`: each value block over the range of values those
    /// rows hold (all rows before `from` that have the field come first in the block).
    pub(crate) fn decode_window<'b>(
        &self,
        columns: &[&ColumnMeta],
        bytes: impl Fn(&BlockRef) -> &'b [u8],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<SeriesData, (u64, String)> {
        let rows = self.rows as usize;
        let (from, to, times) = self.window_rows(bytes(&self.time_block), start, end)?;
        if from == to {
            return Ok(SeriesData::default());
        }
        let mut out = Vec::with_capacity(columns.len());
        for meta in columns {
            let count = meta.preagg.count() as usize;
            let (first, last, present) = match &meta.presence {
                None => (from, to, None),
                Some(pb) => {
                    let mut p = Vec::with_capacity(rows);
                    whole(pb, codec::boolean::decode(bytes(pb), &mut p))?;
                    if p.len() != rows || p.iter().filter(|x| **x).count() != count {
                        return Err((pb.offset, "presence block disagrees with the index".into()));
                    }
                    let before = p[..from].iter().filter(|x| **x).count();
                    let within = p[from..to].iter().filter(|x| **x).count();
                    let present = p[from..to].to_vec();
                    let present = present.iter().any(|x| !*x).then_some(present);
                    (before, before + within, present)
                }
            };
            if first == last {
                continue; // no row of the window has the field
            }
            let vb = &meta.values;
            let b = bytes(vb);
            let range = (first, last, count);
            let values = match meta.field_type {
                FieldType::Float => {
                    Values::Float(decode_range(vb, b, range, codec::float::decode_range)?)
                }
                FieldType::Integer => {
                    Values::Integer(decode_range(vb, b, range, codec::integer::decode_range)?)
                }
                FieldType::Unsigned => {
                    Values::Unsigned(decode_range(vb, b, range, codec::unsigned::decode_range)?)
                }
                FieldType::Boolean => {
                    Values::Boolean(decode_range(vb, b, range, codec::boolean::decode_range)?)
                }
                FieldType::String => {
                    Values::String(decode_range(vb, b, range, codec::string::decode_range)?)
                }
            };
            out.push(Column {
                field: meta.field,
                values,
                present,
            });
        }
        Ok(SeriesData {
            times,
            columns: out,
        })
    }
}

/// A column's `decode_range` in the codec crate.
type DecodeRange<T> = fn(&[u8], usize, usize, &mut Vec<T>) -> Result<usize, codec::CodecError>;

/// Values `from..to` of a value block that the index says holds `count` values.
fn decode_range<T>(
    block: &BlockRef,
    bytes: &[u8],
    (from, to, count): (usize, usize, usize),
    decode: DecodeRange<T>,
) -> Result<Vec<T>, (u64, String)> {
    let mut out = Vec::with_capacity(to - from);
    match decode(bytes, from, to, &mut out) {
        Ok(n) if n == count => Ok(out),
        Ok(n) => Err((
            block.offset,
            format!("value block holds {n} values, index says {count}"),
        )),
        Err(e) => Err((block.offset, format!("cannot decode block: {e}"))),
    }
}

/// Reads a block length (0 = no block) and, for a block, its CRC32; the block starts at
/// `*data_offset`, which moves past it.
fn block(c: &mut IndexCursor<'_>, data_offset: &mut u64) -> Result<Option<BlockRef>, String> {
    let len = c.u64()?;
    if len == 0 {
        return Ok(None);
    }
    let crc = c.u32_le()?;
    let offset = *data_offset;
    *data_offset = offset.checked_add(len).ok_or("block lengths overflow")?;
    Ok(Some(BlockRef { offset, len, crc }))
}

fn decode_vec<T>(
    block: &BlockRef,
    bytes: &[u8],
    decode: fn(&[u8], &mut Vec<T>) -> Result<usize, codec::CodecError>,
) -> Result<Vec<T>, (u64, String)> {
    let mut out = Vec::new();
    whole(block, decode(bytes, &mut out))?;
    Ok(out)
}

/// Checks that a decode succeeded and used the whole block.
fn whole(block: &BlockRef, used: Result<usize, codec::CodecError>) -> Result<(), (u64, String)> {
    match used {
        Ok(n) if n as u64 == block.len => Ok(()),
        Ok(n) => Err((
            block.offset,
            format!("block of {} bytes decodes from {n}", block.len),
        )),
        Err(e) => Err((block.offset, format!("cannot decode block: {e}"))),
    }
}

/// Joins chunks of one series in time order into one [`SeriesData`]; a field missing from
/// some chunk becomes absent rows there. `None` when a field changes type between chunks.
pub(crate) fn concat(mut parts: Vec<SeriesData>) -> Option<SeriesData> {
    if parts.len() <= 1 {
        return Some(parts.pop().unwrap_or_default());
    }
    let mut fields: Vec<(FieldId, FieldType)> = parts
        .iter()
        .flat_map(|p| p.columns.iter().map(|c| (c.field, c.values.field_type())))
        .collect();
    fields.sort_unstable();
    fields.dedup();
    if fields.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let rows: usize = parts.iter().map(SeriesData::rows).sum();
    let mut times = Vec::with_capacity(rows);
    let mut columns: Vec<Column> = fields
        .iter()
        .map(|&(field, t)| Column {
            field,
            values: Values::new(t),
            present: Some(Vec::with_capacity(rows)),
        })
        .collect();
    for part in parts {
        let n = part.rows();
        times.extend_from_slice(&part.times);
        let mut theirs = part.columns.into_iter().peekable();
        for column in &mut columns {
            let present = column.present.get_or_insert_with(Vec::new);
            match theirs.next_if(|c| c.field == column.field) {
                Some(c) => {
                    match c.present {
                        Some(p) => present.extend_from_slice(&p),
                        None => present.extend(std::iter::repeat_n(true, n)),
                    }
                    append(&mut column.values, c.values)?;
                }
                None => present.extend(std::iter::repeat_n(false, n)),
            }
        }
    }
    for column in &mut columns {
        if column
            .present
            .as_ref()
            .is_some_and(|p| p.iter().all(|x| *x))
        {
            column.present = None;
        }
    }
    Some(SeriesData { times, columns })
}

fn append(to: &mut Values, from: Values) -> Option<()> {
    match (to, from) {
        (Values::Float(a), Values::Float(b)) => a.extend(b),
        (Values::Integer(a), Values::Integer(b)) => a.extend(b),
        (Values::Unsigned(a), Values::Unsigned(b)) => a.extend(b),
        (Values::Boolean(a), Values::Boolean(b)) => a.extend(b),
        (Values::String(a), Values::String(b)) => a.extend(b),
        _ => return None,
    }
    Some(())
}
