//! The memtable: rows of a shard not yet in parts, per series, in columns.
//!
//! Appending a row is the shard's critical section, so it is kept to pushes onto vectors:
//! no sorting, no deduplication. Rows may arrive out of order and a time may repeat; both are
//! resolved once, when the memtable is read or frozen into [`SeriesData`] (sorted by time,
//! last write wins field by field).

use crate::column::{Column, SeriesData, Values};
use crate::model::{FieldId, SeriesId, TableId, Timestamp, Value};

/// Slot value for a series with no rows in this memtable.
const NO_SLOT: u32 = u32::MAX;

/// One field of one series, as appended.
#[derive(Debug, Clone)]
struct MemColumn {
    field: FieldId,
    values: Values,
    /// `None` while every covered row had a value; else presence of each covered row.
    present: Option<Vec<bool>>,
}

impl MemColumn {
    /// Rows accounted for; later rows (up to the series' row count) lack the field.
    fn covered(&self) -> usize {
        self.present.as_ref().map_or(self.values.len(), Vec::len)
    }

    /// Records `value` for `row`, padding absent rows before it.
    fn push(&mut self, row: usize, value: Value) -> bool {
        let covered = self.covered();
        if covered == row + 1 {
            // The same field twice in one row: the last one wins.
            return self.replace_last(value);
        }
        if covered < row {
            let present = self.present.get_or_insert_with(|| vec![true; covered]);
            present.resize(row, false);
        }
        if !self.values.push(value) {
            return false;
        }
        if let Some(present) = &mut self.present {
            present.push(true);
        }
        true
    }

    fn replace_last(&mut self, value: Value) -> bool {
        let last = self.values.len() - 1;
        match (&mut self.values, value) {
            (Values::Float(v), Value::Float(x)) => v[last] = x,
            (Values::Integer(v), Value::Integer(x)) => v[last] = x,
            (Values::Unsigned(v), Value::Unsigned(x)) => v[last] = x,
            (Values::Boolean(v), Value::Boolean(x)) => v[last] = x,
            (Values::String(v), Value::String(x)) => v[last] = x,
            _ => return false,
        }
        true
    }

    /// Presence of each of `rows` rows.
    fn presence(&self, rows: usize) -> Vec<bool> {
        let mut present = self
            .present
            .clone()
            .unwrap_or_else(|| vec![true; self.values.len()]);
        present.resize(rows, false);
        present
    }
}

/// Rows of one series in arrival order.
#[derive(Debug, Clone)]
struct SeriesBuffer {
    series: SeriesId,
    table: TableId,
    times: Vec<Timestamp>,
    columns: Vec<MemColumn>,
    /// Whether `times` is strictly increasing (no sort or dedupe needed on read).
    in_order: bool,
}

/// Rows of one shard not yet flushed.
#[derive(Debug, Default)]
pub struct Memtable {
    /// Series id → index in `buffers` (or [`NO_SLOT`]).
    slots: Vec<u32>,
    buffers: Vec<SeriesBuffer>,
    rows: u64,
    points: u64,
    bytes: usize,
    min_time: Option<Timestamp>,
    max_time: Option<Timestamp>,
}

/// A field value of a row being appended.
pub type FieldValue = (FieldId, Value);

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one row. A field whose value type differs from the type already buffered for
    /// that field is skipped and counted in the result (the catalog prevents this; the check
    /// keeps the memtable consistent regardless).
    pub fn append(
        &mut self,
        series: SeriesId,
        table: TableId,
        time: Timestamp,
        fields: impl IntoIterator<Item = FieldValue>,
    ) -> usize {
        let slot = self.slot(series, table);
        let buffer = &mut self.buffers[slot];
        let row = buffer.times.len();
        if buffer.times.last().is_some_and(|last| *last >= time) {
            buffer.in_order = false;
        }
        buffer.times.push(time);
        let mut skipped = 0;
        let mut points = 0;
        let mut bytes = 8;
        for (field, value) in fields {
            bytes += value_bytes(&value);
            let column = match buffer.columns.iter().position(|c| c.field == field) {
                Some(i) => &mut buffer.columns[i],
                None => {
                    buffer.columns.push(MemColumn {
                        field,
                        values: Values::new(value.field_type()),
                        present: None,
                    });
                    bytes += size_of::<MemColumn>();
                    let last = buffer.columns.len() - 1;
                    &mut buffer.columns[last]
                }
            };
            if column.push(row, value) {
                points += 1;
            } else {
                skipped += 1;
            }
        }
        self.rows += 1;
        self.points += points;
        self.bytes += bytes;
        self.min_time = Some(self.min_time.map_or(time, |t| t.min(time)));
        self.max_time = Some(self.max_time.map_or(time, |t| t.max(time)));
        skipped
    }

    fn slot(&mut self, series: SeriesId, table: TableId) -> usize {
        let index = series as usize;
        if index >= self.slots.len() {
            self.slots.resize(index + 1, NO_SLOT);
        }
        if self.slots[index] == NO_SLOT {
            self.slots[index] = self.buffers.len() as u32;
            self.buffers.push(SeriesBuffer {
                series,
                table,
                times: Vec::new(),
                columns: Vec::new(),
                in_order: true,
            });
            self.bytes += size_of::<SeriesBuffer>() + 4;
        }
        self.slots[index] as usize
    }

    /// Rows appended.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Field values appended.
    pub fn points(&self) -> u64 {
        self.points
    }

    /// Approximate bytes held (values, timestamps, per-series overhead).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether no row was appended.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Smallest and largest row time, if any row.
    pub fn time_range(&self) -> Option<(Timestamp, Timestamp)> {
        Some((self.min_time?, self.max_time?))
    }

    /// Series with rows here, in id order, with their table.
    pub fn series(&self) -> Vec<(SeriesId, TableId)> {
        let mut ids: Vec<(SeriesId, TableId)> =
            self.buffers.iter().map(|b| (b.series, b.table)).collect();
        ids.sort_unstable();
        ids
    }

    /// The rows of `series`, sorted by time with repeated times merged (last write wins per
    /// field); `None` when the series has no rows here.
    pub fn series_data(&self, series: SeriesId) -> Option<SeriesData> {
        let slot = *self.slots.get(series as usize)?;
        if slot == NO_SLOT {
            return None;
        }
        Some(self.buffers[slot as usize].to_series_data())
    }
}

impl SeriesBuffer {
    fn to_series_data(&self) -> SeriesData {
        let rows = self.times.len();
        let mut columns: Vec<&MemColumn> = self.columns.iter().collect();
        columns.sort_by_key(|c| c.field);
        if self.in_order {
            let columns = columns
                .into_iter()
                .map(|c| {
                    let present = (c.covered() < rows || c.present.is_some())
                        .then(|| c.presence(rows))
                        .filter(|p| p.iter().any(|x| !*x));
                    Column {
                        field: c.field,
                        values: c.values.clone(),
                        present,
                    }
                })
                .collect();
            return SeriesData {
                times: self.times.clone(),
                columns,
            };
        }
        // Stable sort by time keeps arrival order among equal times, so the last arrival of
        // a time is the last of its group.
        let mut order: Vec<usize> = (0..rows).collect();
        order.sort_by_key(|row| self.times[*row]);
        let mut times = Vec::with_capacity(rows);
        let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
        let mut start = 0;
        while start < order.len() {
            let time = self.times[order[start]];
            let mut end = start + 1;
            while end < order.len() && self.times[order[end]] == time {
                end += 1;
            }
            times.push(time);
            groups.push(start..end);
            start = end;
        }
        let out_columns = columns
            .into_iter()
            .map(|c| {
                let present_in = c.presence(rows);
                let value_index = value_indexes(&present_in);
                let mut values = Values::new(c.values.field_type());
                let mut present = Vec::with_capacity(groups.len());
                for group in &groups {
                    let last = order[group.clone()]
                        .iter()
                        .rev()
                        .find(|row| present_in[**row]);
                    match last {
                        Some(row) => {
                            values.push_from(&c.values, value_index[*row]);
                            present.push(true);
                        }
                        None => present.push(false),
                    }
                }
                let present = present.iter().any(|x| !*x).then_some(present);
                Column {
                    field: c.field,
                    values,
                    present,
                }
            })
            .collect();
        SeriesData {
            times,
            columns: out_columns,
        }
    }
}

/// For each row, the index of its value among present rows (meaningless where absent).
fn value_indexes(present: &[bool]) -> Vec<usize> {
    let mut next = 0;
    present
        .iter()
        .map(|p| {
            let index = next;
            next += usize::from(*p);
            index
        })
        .collect()
}

fn value_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => 24 + s.len(),
        Value::Boolean(_) => 1,
        _ => 8,
    }
}
