//! Gathering the rows of one series into [`SeriesData`]: sorted by time, equal times merged
//! (last write wins field by field), one column per field.

use std::borrow::Cow;

use super::store::{Layouts, Payloads, Strings};
use super::{Entry, SeriesRows};
use crate::column::{Column, SeriesData, Values};
use crate::model::{FieldId, FieldType, Timestamp};

/// One output column being built.
struct Builder {
    field: FieldId,
    values: Values,
    /// `None` while every output row so far had a value.
    present: Option<Vec<bool>>,
}

impl Builder {
    fn new(field: FieldId, field_type: FieldType, rows: usize) -> Self {
        let values = match field_type {
            FieldType::Float => Values::Float(Vec::with_capacity(rows)),
            FieldType::Integer => Values::Integer(Vec::with_capacity(rows)),
            FieldType::Unsigned => Values::Unsigned(Vec::with_capacity(rows)),
            FieldType::Boolean => Values::Boolean(Vec::with_capacity(rows)),
            FieldType::String => Values::String(Vec::with_capacity(rows)),
        };
        Self {
            field,
            values,
            present: None,
        }
    }

    /// Adds a value to the current output row.
    #[inline]
    fn push(&mut self, payload: u64, strings: &Strings) {
        match &mut self.values {
            Values::Float(v) => v.push(f64::from_bits(payload)),
            Values::Integer(v) => v.push(payload as i64),
            Values::Unsigned(v) => v.push(payload),
            Values::Boolean(v) => v.push(payload != 0),
            Values::String(v) => v.push(strings.get(payload).to_owned()),
        }
        if let Some(present) = &mut self.present {
            present.push(true);
        }
    }

    /// Marks the current output row absent (`row` rows precede it).
    fn absent(&mut self, row: usize) {
        self.present
            .get_or_insert_with(|| vec![true; row])
            .push(false);
    }

    fn finish(self) -> Column {
        Column {
            field: self.field,
            values: self.values,
            present: self.present,
        }
    }
}

/// The rows of `rows` as [`SeriesData`].
pub(super) fn series_data(
    rows: &SeriesRows,
    payloads: &Payloads,
    strings: &Strings,
    layouts: &Layouts,
    range: (Timestamp, Timestamp),
) -> SeriesData {
    // Every field with a value has its type in `types`: those are the output columns.
    let mut fields = rows.types.clone();
    fields.sort_unstable();
    let entries: Cow<'_, [Entry]> = if rows.in_order {
        Cow::Borrowed(&rows.entries)
    } else {
        // Stable: among equal times, arrival order remains, so the last arrival is last.
        let mut sorted = rows.entries.clone();
        sorted.sort_by_key(|e| e.time);
        Cow::Owned(sorted)
    };
    // Only the rows in `[start, end)` are gathered: a read of the last minutes of a
    // memtable holding hours decodes those minutes, not the hours.
    let (start, end) = range;
    let from = entries.partition_point(|e| e.time < start);
    let to = entries.partition_point(|e| e.time < end).max(from);
    let entries = &entries[from..to];
    if from > 0 || to < rows.entries.len() {
        // A field may have no value in the range: it gets no column.
        let mut used: Vec<FieldId> = entries
            .iter()
            .flat_map(|e| layouts.get(e.layout).iter().map(|(f, _)| *f))
            .collect();
        used.sort_unstable();
        used.dedup();
        fields.retain(|(f, _)| used.binary_search(f).is_ok());
    }
    let mut builders: Vec<Builder> = fields
        .iter()
        .map(|(field, field_type)| Builder::new(*field, *field_type, entries.len()))
        .collect();
    let mut maps: Vec<(u32, Vec<usize>)> = Vec::new();

    let first = entries.first().map_or(0, |e| e.layout);
    let uniform = rows.in_order && entries.iter().all(|e| e.layout == first);
    if uniform && layouts.get(first).len() == fields.len() {
        // Common case: times in order, every row with every field in the same layout.
        let map = column_map(&mut maps, layouts, &fields, first);
        let columns = &maps[map].1;
        for entry in entries.iter() {
            let start = entry.start as usize;
            for (position, column) in columns.iter().enumerate() {
                builders[*column].push(payloads.get(start + position), strings);
            }
        }
        return SeriesData {
            times: entries.iter().map(|e| e.time).collect(),
            columns: builders.into_iter().map(Builder::finish).collect(),
        };
    }

    // General case: per output time, the last value of each field among its rows.
    let mut times = Vec::with_capacity(entries.len());
    let mut pending: Vec<Option<u64>> = vec![None; fields.len()];
    let mut group = 0;
    while group < entries.len() {
        let time = entries[group].time;
        let mut end = group;
        while end < entries.len() && entries[end].time == time {
            let entry = entries[end];
            let map = column_map(&mut maps, layouts, &fields, entry.layout);
            let start = entry.start as usize;
            for (position, column) in maps[map].1.iter().enumerate() {
                pending[*column] = Some(payloads.get(start + position));
            }
            end += 1;
        }
        for (builder, payload) in builders.iter_mut().zip(&mut pending) {
            match payload.take() {
                Some(payload) => builder.push(payload, strings),
                None => builder.absent(times.len()),
            }
        }
        times.push(time);
        group = end;
    }
    SeriesData {
        times,
        columns: builders.into_iter().map(Builder::finish).collect(),
    }
}

/// Index in `maps` (layout id → output column of each of its positions) of `layout`'s map,
/// added if missing.
fn column_map(
    maps: &mut Vec<(u32, Vec<usize>)>,
    layouts: &Layouts,
    fields: &[(FieldId, FieldType)],
    layout: u32,
) -> usize {
    if let Some(i) = maps.iter().position(|(id, _)| *id == layout) {
        return i;
    }
    // Every field of a layout is in `fields` (its type was recorded when it was accepted).
    let columns = layouts
        .get(layout)
        .iter()
        .map(|(field, _)| {
            fields
                .binary_search_by_key(field, |(f, _)| *f)
                .unwrap_or_else(|i| i)
        })
        .collect();
    maps.push((layout, columns));
    maps.len() - 1
}
