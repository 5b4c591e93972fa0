//! One chunk's index entry ([`ChunkMeta`]): parsing and checking it, and decoding the blocks
//! it points to into [`SeriesData`].

use strata_codec as codec;

use crate::column::{Column, SeriesData, Values};
use crate::model::{FieldId, FieldType, Timestamp};

use super::format::{CursorError, IndexCursor, MAX_ROWS_PER_CHUNK};
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

/// The start of a chunk's index entry: enough to decide whether the chunk is wanted and,
/// in format 2, to skip the rest of the entry without parsing it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkHead {
    pub rows: u32,
    pub min_time: Timestamp,
    pub max_time: Timestamp,
    /// Format 2 only.
    pub lens: Option<ChunkLens>,
}

/// What a format 2 chunk entry says of its own size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkLens {
    /// Bytes of the chunk's blocks in the file.
    pub data: u64,
    /// Bytes of the entry in the index after these lengths.
    pub entry: u64,
}

impl ChunkHead {
    /// Parses rows, time range and (format 2) the lengths, checking them.
    pub(crate) fn parse(c: &mut IndexCursor<'_>, version: u32) -> Result<Self, String> {
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
        let lens = if version >= 2 {
            let data = c.u64()?;
            let entry = c.u64()?;
            Some(ChunkLens { data, entry })
        } else {
            None
        };
        Ok(Self {
            rows,
            min_time,
            max_time,
            lens,
        })
    }
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
    /// The timestamp block; `None` when the rows are evenly spaced from `min_time` to
    /// `max_time`, which the index then says alone (format 2).
    pub time_block: Option<BlockRef>,
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

    /// Parses a chunk entry of a format `version` part whose first block starts at file
    /// offset `*data_offset`, advancing it past the chunk's blocks, and checks everything
    /// that can be checked without the blocks themselves.
    /// Only the columns of `fields` (`None` = all) are kept; the pre-aggregates of the
    /// others are skipped unchecked, so [`PartReader::open`](super::PartReader::open), which
    /// checks the whole index, parses with `None`.
    pub(crate) fn parse(
        c: &mut IndexCursor<'_>,
        data_offset: &mut u64,
        version: u32,
        fields: Option<&[FieldId]>,
    ) -> Result<Self, String> {
        let head = ChunkHead::parse(c, version)?;
        Self::parse_after_head(c, data_offset, (version, fields), &head)
    }

    /// [`ChunkMeta::parse`] of an entry whose head the caller has parsed (the cursor just
    /// past it), so that a reader deciding on the head does not parse it twice.
    pub(crate) fn parse_after_head(
        c: &mut IndexCursor<'_>,
        data_offset: &mut u64,
        (version, fields): (u32, Option<&[FieldId]>),
        head: &ChunkHead,
    ) -> Result<Self, String> {
        let (entry_start, data_start) = (c.pos, *data_offset);
        let chunk = Self::parse_rest(c, data_offset, (version, fields), head)?;
        if let Some(lens) = head.lens
            && ((c.pos - entry_start) as u64 != lens.entry
                || *data_offset - data_start != lens.data)
        {
            return Err("chunk entry or data length disagrees with its contents".into());
        }
        Ok(chunk)
    }

    fn parse_rest(
        c: &mut IndexCursor<'_>,
        data_offset: &mut u64,
        (version, fields): (u32, Option<&[FieldId]>),
        head: &ChunkHead,
    ) -> Result<Self, String> {
        let ChunkHead {
            rows,
            min_time,
            max_time,
            ..
        } = *head;
        let time_block = block(c, data_offset)?;
        if time_block.is_none() {
            let span = max_time.abs_diff(min_time);
            let even = if rows == 1 {
                span == 0
            } else {
                span % u64::from(rows - 1) == 0
            };
            if version < 2 || !even {
                return Err("chunk without a time block".into());
            }
        }
        let count = c.u64()?;
        let wanted = |field: FieldId| fields.is_none_or(|f| f.contains(&field));
        // Bounded by what a valid entry can hold, so a corrupt count cannot over-allocate.
        let mut columns =
            Vec::with_capacity(fields.map_or(count, |f| f.len() as u64).min(64) as usize);
        let mut last_field = None;
        for _ in 0..count {
            let field = c.u32()?;
            if last_field.is_some_and(|last| last >= field) {
                return Err("chunk columns not sorted by field id".into());
            }
            last_field = Some(field);
            let tag = c.byte()?;
            let field_type =
                FieldType::from_tag(tag).ok_or_else(|| format!("unknown field type {tag}"))?;
            let presence = block(c, data_offset)?;
            let values = block(c, data_offset)?.ok_or("column without a value block")?;
            // Format 2 leaves out a column's count when every row has the field.
            let implied = (version >= 2 && presence.is_none()).then_some(rows);
            if !wanted(field) {
                PreAgg::skip(c, field_type, implied.is_some())?;
                continue;
            }
            let preagg = PreAgg::decode(c, field_type, rows, version, implied)?;
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
        self.append_times(&bytes, &mut times)?;
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
    /// The step between rows of a chunk without a time block (0 for one row); meaningless
    /// for a chunk with one.
    pub fn even_step(&self) -> i64 {
        if self.rows <= 1 {
            return 0;
        }
        // Parsing checked that the span divides evenly and fits i64 once divided.
        (self.max_time.abs_diff(self.min_time) / u64::from(self.rows - 1)) as i64
    }

    /// Times of rows `from..to` of a chunk without a time block.
    fn even_times(&self, from: usize, to: usize) -> impl Iterator<Item = Timestamp> {
        let step = self.even_step();
        (from..to).map(move |i| self.min_time.wrapping_add(step.wrapping_mul(i as i64)))
    }

    /// Appends the times of every row, checked against the index entry: by arithmetic
    /// without a time block, else decoded from it (`bytes` gives a block's bytes).
    pub(crate) fn append_times<'b>(
        &self,
        bytes: impl Fn(&BlockRef) -> &'b [u8],
        times: &mut Vec<Timestamp>,
    ) -> Result<(), (u64, String)> {
        let rows = self.rows as usize;
        let Some(tb) = &self.time_block else {
            times.extend(self.even_times(0, rows));
            return Ok(());
        };
        let at = times.len();
        whole(tb, codec::timestamp::decode(bytes(tb), times))?;
        if times.len() - at != rows
            || times.get(at) != Some(&self.min_time)
            || times.last() != Some(&self.max_time)
        {
            return Err((tb.offset, "time block disagrees with the index".into()));
        }
        Ok(())
    }

    /// File offset of the chunk's first block, to name in errors.
    pub(crate) fn first_block_offset(&self) -> u64 {
        self.time_block
            .or_else(|| self.columns.first().map(|c| c.presence.unwrap_or(c.values)))
            .map_or(0, |b| b.offset)
    }

    /// The rows `from..to` (row indexes) of the chunk with `start <= time < end`, and
    /// their times: by arithmetic for evenly spaced rows, else from the whole time block.
    pub(crate) fn window_rows(
        &self,
        block: &[u8],
        start: Timestamp,
        end: Timestamp,
    ) -> Result<(usize, usize, Vec<Timestamp>), (u64, String)> {
        let rows = self.rows as usize;
        let Some(tb) = &self.time_block else {
            let (first, step) = (self.min_time, self.even_step());
            let (from, to) = (
                rows_before(first, step, rows, start),
                rows_before(first, step, rows, end),
            );
            return Ok((from, to, self.even_times(from, to).collect()));
        };
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
            let (from, to) = (
                rows_before(first, step, count, start),
                rows_before(first, step, count, end),
            );
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
        let time_bytes = self.time_block.as_ref().map_or(&[][..], &bytes);
        let (from, to, times) = self.window_rows(time_bytes, start, end)?;
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

/// How many of `count` rows at `first + i * step` (`step > 0` when `count > 1`) are before
/// `t`: `first + i * step < t`, i.e. `i < (t - first) / step`.
fn rows_before(first: Timestamp, step: i64, count: usize, t: Timestamp) -> usize {
    if t <= first {
        0
    } else if count == 1 {
        1
    } else {
        let d = i128::from(t) - i128::from(first);
        let s = i128::from(step);
        ((d + s - 1) / s).min(count as i128) as usize
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
#[inline]
fn block(c: &mut IndexCursor<'_>, data_offset: &mut u64) -> Result<Option<BlockRef>, CursorError> {
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
pub(crate) fn whole(
    block: &BlockRef,
    used: Result<usize, codec::CodecError>,
) -> Result<(), (u64, String)> {
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
    // Values sized once; a presence vector only for a column some part lacks rows of
    // (filled with `true` for the rows before that part).
    let mut columns: Vec<Column> = fields
        .iter()
        .map(|&(field, t)| Column {
            field,
            values: Values::with_capacity(t, rows),
            present: None,
        })
        .collect();
    let mut done = 0;
    for part in parts {
        let n = part.rows();
        times.extend_from_slice(&part.times);
        let mut theirs = part.columns.into_iter().peekable();
        for column in &mut columns {
            match theirs.next_if(|c| c.field == column.field) {
                Some(c) => {
                    match c.present {
                        Some(p) => presence(column, done, rows).extend_from_slice(&p),
                        None => {
                            if let Some(all) = &mut column.present {
                                all.extend(std::iter::repeat_n(true, n));
                            }
                        }
                    }
                    append(&mut column.values, c.values)?;
                }
                None => presence(column, done, rows).extend(std::iter::repeat_n(false, n)),
            }
        }
        done += n;
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

/// `column`'s presence vector, made on first need: `true` for the `done` rows before, room
/// for `rows`.
fn presence(column: &mut Column, done: usize, rows: usize) -> &mut Vec<bool> {
    column.present.get_or_insert_with(|| {
        let mut present = Vec::with_capacity(rows);
        present.resize(done, true);
        present
    })
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

#[cfg(test)]
mod concat_tests {
    use super::*;

    fn part(times: &[i64], columns: Vec<Column>) -> SeriesData {
        SeriesData {
            times: times.to_vec(),
            columns,
        }
    }

    fn floats(field: FieldId, values: &[f64], present: Option<Vec<bool>>) -> Column {
        Column {
            field,
            values: Values::Float(values.to_vec()),
            present,
        }
    }

    #[test]
    fn concat_joins_columns_and_makes_presence_only_where_rows_lack_values() {
        let joined = concat(vec![
            part(&[1, 2], vec![floats(0, &[1.0, 2.0], None)]),
            part(
                &[3, 4],
                vec![
                    floats(0, &[3.0, 4.0], None),
                    floats(1, &[40.0], Some(vec![false, true])),
                ],
            ),
            part(
                &[5],
                vec![floats(0, &[5.0], None), floats(1, &[50.0], None)],
            ),
        ])
        .unwrap();
        assert_eq!(joined.times, [1, 2, 3, 4, 5]);
        // Field 0 has every row: no presence vector.
        assert_eq!(
            joined.columns[0],
            floats(0, &[1.0, 2.0, 3.0, 4.0, 5.0], None)
        );
        assert_eq!(
            joined.columns[1],
            floats(
                1,
                &[40.0, 50.0],
                Some(vec![false, false, false, true, true])
            )
        );
        joined.check().unwrap();
        // A field whose parts all hold every row stays without presence.
        let full = concat(vec![
            part(&[1], vec![floats(2, &[1.0], Some(vec![true]))]),
            part(&[2], vec![floats(2, &[2.0], None)]),
        ])
        .unwrap();
        assert_eq!(full.columns[0], floats(2, &[1.0, 2.0], None));
        // A field whose type changes between parts is refused.
        let clash = concat(vec![
            part(&[1], vec![floats(0, &[1.0], None)]),
            part(
                &[2],
                vec![Column {
                    field: 0,
                    values: Values::Integer(vec![2]),
                    present: None,
                }],
            ),
        ]);
        assert!(clash.is_none());
    }
}
