//! The memtable: rows of a shard not yet in parts.
//!
//! Appending a row is the shard's critical section, so it is kept to sequential writes:
//! the row's field values go, as 8-byte payloads, to one append-only store shared by all
//! series (in arrival order), and the series gets one entry (time, where its payloads start,
//! its layout). A layout — the row's fields with their types, in order — is interned once for
//! the memtable: rows of a table usually share one, so checking a row against its series'
//! previous layout is also how value types are checked, and the row stores no field ids.
//! There is no sorting and no deduplication on append. Rows may arrive out of order and a
//! time may repeat; both are resolved when the memtable is read or flushed, by gathering a
//! series' rows into [`SeriesData`] (sorted by time, last write wins field by field).
//!
//! Limits: fewer than 2^32 field values per memtable (32 GiB of payloads; the flush
//! threshold keeps memtables far smaller).
//!
//! Files: `store.rs` (payload chunks, strings, layouts), `gather.rs` (rows → [`SeriesData`]).

mod gather;
mod store;

use crate::column::SeriesData;
use crate::model::{FieldId, FieldType, SeriesId, TableId, Timestamp, Value};
use store::{Layouts, Payloads, Strings, encode};

/// Slot value for a series with no rows in this memtable.
const NO_SLOT: u32 = u32::MAX;

/// Layout id of a series before its first row.
const NO_LAYOUT: u32 = u32::MAX;

/// One row of a series.
#[derive(Debug, Clone, Copy)]
struct Entry {
    time: Timestamp,
    /// Index of the row's first payload; its layout says how many follow.
    start: u32,
    layout: u32,
}

/// The rows of one series, in arrival order.
#[derive(Debug)]
struct SeriesRows {
    series: SeriesId,
    table: TableId,
    entries: Vec<Entry>,
    /// Layout of the latest row ([`NO_LAYOUT`] before the first).
    layout: u32,
    /// Time of the latest row (here rather than read from `entries`, whose tail is likely
    /// out of cache: this struct is read anyway).
    last_time: Timestamp,
    /// Whether times are strictly increasing (no sort or dedupe needed on read).
    in_order: bool,
    /// Type of every field with a value in some row; a value of another type is skipped.
    types: Vec<(FieldId, FieldType)>,
}

/// Rows of one shard not yet flushed.
#[derive(Debug, Default)]
pub struct Memtable {
    /// Series id → index in `series` (or [`NO_SLOT`]).
    slots: Vec<u32>,
    series: Vec<SeriesRows>,
    payloads: Payloads,
    strings: Strings,
    layouts: Layouts,
    rows: u64,
    points: u64,
    /// Heap bytes of `slots`, `series` and each series' vectors.
    series_bytes: usize,
    min_time: Timestamp,
    max_time: Timestamp,
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
    /// keeps the memtable consistent regardless). The same field twice in a row: the last
    /// value wins.
    pub fn append(
        &mut self,
        series: SeriesId,
        table: TableId,
        time: Timestamp,
        fields: impl IntoIterator<Item = FieldValue>,
    ) -> usize {
        let slot = self.slot(series, table);
        let Self {
            series: all,
            payloads,
            strings,
            layouts,
            ..
        } = self;
        let rows = &mut all[slot];
        let start = payloads.len();
        let Ok(start32) = u32::try_from(start) else {
            panic!("memtable: more than 2^32 field values; lower the flush threshold");
        };

        // Fast path: the row repeats the layout of the series' previous row.
        let previous = layouts.get(rows.layout);
        let mut fields = fields.into_iter();
        let mut matched = 0;
        let mut deviation = None;
        for (field, value) in fields.by_ref() {
            if previous
                .get(matched)
                .is_some_and(|&(f, t)| f == field && t == value.field_type())
            {
                payloads.push(encode(value, strings));
                matched += 1;
            } else {
                deviation = Some((field, value));
                break;
            }
        }
        let (layout, points, skipped) =
            if deviation.is_none() && matched == previous.len() && rows.layout != NO_LAYOUT {
                (rows.layout, matched, 0)
            } else {
                let prefix = previous[..matched].to_vec();
                let rest = deviation.into_iter().chain(fields);
                let types_capacity = rows.types.capacity();
                let row = other_layout(rows, payloads, strings, layouts, start, prefix, rest);
                self.series_bytes +=
                    (rows.types.capacity() - types_capacity) * size_of::<(FieldId, FieldType)>();
                row
            };
        rows.layout = layout;

        if !rows.entries.is_empty() && rows.last_time >= time {
            rows.in_order = false;
        }
        rows.last_time = time;
        let capacity = rows.entries.capacity();
        rows.entries.push(Entry {
            time,
            start: start32,
            layout,
        });
        if rows.entries.capacity() != capacity {
            self.series_bytes += (rows.entries.capacity() - capacity) * size_of::<Entry>();
        }

        if self.rows == 0 {
            self.min_time = time;
            self.max_time = time;
        } else {
            self.min_time = self.min_time.min(time);
            self.max_time = self.max_time.max(time);
        }
        self.rows += 1;
        self.points += points as u64;
        skipped
    }

    fn slot(&mut self, series: SeriesId, table: TableId) -> usize {
        let index = series as usize;
        if let Some(slot) = self.slots.get(index).filter(|s| **s != NO_SLOT) {
            return *slot as usize;
        }
        if index >= self.slots.len() {
            let capacity = self.slots.capacity();
            self.slots.resize(index + 1, NO_SLOT);
            self.series_bytes += (self.slots.capacity() - capacity) * size_of::<u32>();
        }
        let Ok(slot) = u32::try_from(self.series.len()) else {
            panic!("memtable: more than 2^32 series");
        };
        self.slots[index] = slot;
        let capacity = self.series.capacity();
        self.series.push(SeriesRows {
            series,
            table,
            entries: Vec::new(),
            layout: NO_LAYOUT,
            last_time: Timestamp::MIN,
            in_order: true,
            types: Vec::new(),
        });
        self.series_bytes += (self.series.capacity() - capacity) * size_of::<SeriesRows>();
        slot as usize
    }

    /// Rows appended.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Field values appended.
    pub fn points(&self) -> u64 {
        self.points
    }

    /// Heap bytes held (capacities of every vector and chunk), which drives flushes.
    pub fn bytes(&self) -> usize {
        self.series_bytes
            + self.payloads.heap_bytes()
            + self.strings.heap_bytes()
            + self.layouts.heap_bytes()
    }

    /// Whether no row was appended.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Smallest and largest row time, if any row.
    pub fn time_range(&self) -> Option<(Timestamp, Timestamp)> {
        (self.rows > 0).then_some((self.min_time, self.max_time))
    }

    /// Series with rows here, in id order, with their table.
    pub fn series(&self) -> Vec<(SeriesId, TableId)> {
        let mut ids: Vec<(SeriesId, TableId)> =
            self.series.iter().map(|s| (s.series, s.table)).collect();
        ids.sort_unstable();
        ids
    }

    /// The rows of `series`, sorted by time with repeated times merged (last write wins per
    /// field, a field absent in the later row keeps the earlier value); `None` when the
    /// series has no rows here.
    pub fn series_data(&self, series: SeriesId) -> Option<SeriesData> {
        self.series_data_in(series, Timestamp::MIN, Timestamp::MAX)
    }

    /// [`Memtable::series_data`] for the rows with `start <= time < end` only (gathered
    /// from those rows alone); `None` when the series has no rows here, and an empty
    /// [`SeriesData`] when none are in the range.
    pub fn series_data_in(
        &self,
        series: SeriesId,
        start: Timestamp,
        end: Timestamp,
    ) -> Option<SeriesData> {
        let slot = *self.slots.get(series as usize)?;
        let rows = self.series.get(slot as usize)?;
        Some(gather::series_data(
            rows,
            &self.payloads,
            &self.strings,
            &self.layouts,
            (start, end),
        ))
    }
}

/// The rest of a row whose fields differ from its series' previous layout (a first row, an
/// absent or new field, another order, a type mismatch, a field twice): checks types against
/// what the series holds, writes the accepted values after the `prefix` already written at
/// `start`, and returns the row's layout id, the values accepted and the values skipped.
#[cold]
#[inline(never)]
fn other_layout(
    rows: &mut SeriesRows,
    payloads: &mut Payloads,
    strings: &mut Strings,
    layouts: &mut Layouts,
    start: usize,
    mut layout: Vec<(FieldId, FieldType)>,
    rest: impl Iterator<Item = FieldValue>,
) -> (u32, usize, usize) {
    let mut points = layout.len();
    let mut skipped = 0;
    for (position, (field, value)) in (points..).zip(rest) {
        let field_type = value.field_type();
        // Rows of a series usually list fields in the same order: try the position first.
        let known = match rows.types.get(position) {
            Some((f, t)) if *f == field => Some(*t),
            _ => rows
                .types
                .iter()
                .find(|(f, _)| *f == field)
                .map(|(_, t)| *t),
        };
        match known {
            Some(t) if t != field_type => {
                skipped += 1;
                continue;
            }
            Some(_) => {}
            None => rows.types.push((field, field_type)),
        }
        let payload = encode(value, strings);
        points += 1;
        match layout.iter().position(|(f, _)| *f == field) {
            Some(earlier) => payloads.set(start + earlier, payload),
            None => {
                layout.push((field, field_type));
                payloads.push(payload);
            }
        }
    }
    (layouts.intern(&layout), points, skipped)
}
