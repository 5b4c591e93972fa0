//! A raw `SELECT`'s rows, or a pushed-down `GROUP BY time` answer's buckets, kept as the
//! engine's Arrow batches and written to JSON straight from them. Turning every cell into a
//! [`Value`] first, then a row, then JSON, cost about as much as running the query (TSBS
//! high-cpu-all: 33,700 rows × 21 columns). What needs cells (CSV, chunks) asks for them
//! with [`ArrowRows::to_values`].

use std::ops::Range;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, RecordBatch,
    StringArray, TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::datatypes::{DataType, Int32Type, TimeUnit};

use super::super::encode::{Epoch, go_float, json_time};
use super::super::result::{Row, Value};
use super::sql::read_column;
use crate::sql_cells::{json_string, write_int};

/// One series' rows in the batches of a statement's answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArrowRows {
    /// The statement's answer, shared by all its series.
    batches: Arc<[RecordBatch]>,
    /// For each column of the series, `time` first unless `grid` gives the times: the batch
    /// column holding it.
    columns: Arc<[usize]>,
    /// The series' rows in the order they are answered: (batch, row), or [`EMPTY_BUCKET`].
    rows: Span<(u32, u32)>,
    /// Set when the rows are the buckets of a `GROUP BY time` grid.
    grid: Option<Grid>,
}

/// The buckets of a filled `GROUP BY time` grid: every bucket of the range is a row, those
/// without data ([`EMPTY_BUCKET`]) too.
#[derive(Debug, Clone, PartialEq)]
struct Grid {
    /// Each row's bucket start time (the answer's `time`).
    times: Span<i64>,
    /// Per column, whether an empty bucket shows 0 there (a count) rather than null.
    zero_when_empty: Arc<[bool]>,
}

/// A span of a list shared by the series of one statement: their rows are one allocation,
/// not one per series (`lastpoint` answers a series of one row per host).
#[derive(Debug, Clone)]
struct Span<T> {
    all: Arc<[T]>,
    start: usize,
    end: usize,
}

impl<T> Span<T> {
    fn new(all: &Arc<[T]>, range: Range<usize>) -> Self {
        debug_assert!(range.start <= range.end && range.end <= all.len());
        Span {
            all: Arc::clone(all),
            start: range.start,
            end: range.end,
        }
    }

    fn as_slice(&self) -> &[T] {
        &self.all[self.start..self.end]
    }

    fn len(&self) -> usize {
        self.end - self.start
    }

    /// Drops the first `n` items.
    fn skip(&mut self, n: usize) {
        self.start = self.start.saturating_add(n).min(self.end);
    }

    /// Keeps the first `n` items.
    fn truncate(&mut self, n: usize) {
        self.end = self.end.min(self.start.saturating_add(n));
    }
}

/// Spans are equal when their items are, wherever they are kept.
impl<T: PartialEq> PartialEq for Span<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// A row of a [`Grid`] whose bucket has no data.
pub(crate) const EMPTY_BUCKET: (u32, u32) = (u32::MAX, u32::MAX);

/// A column of one batch, by the type that decides how its cells are written.
enum Typed<'a> {
    Float(&'a Float64Array),
    Integer(&'a Int64Array),
    Unsigned(&'a UInt64Array),
    Boolean(&'a BooleanArray),
    Text(&'a StringArray),
    /// A tag: keys into its values.
    Tag(&'a DictionaryArray<Int32Type>, &'a StringArray),
    Time(&'a TimestampNanosecondArray),
    /// A column no row has (`NULL AS …`).
    Null,
}

fn typed(array: &ArrayRef) -> Option<Typed<'_>> {
    let any = array.as_any();
    Some(match array.data_type() {
        DataType::Float64 => Typed::Float(any.downcast_ref()?),
        DataType::Int64 => Typed::Integer(any.downcast_ref()?),
        DataType::UInt64 => Typed::Unsigned(any.downcast_ref()?),
        DataType::Boolean => Typed::Boolean(any.downcast_ref()?),
        DataType::Utf8 => Typed::Text(any.downcast_ref()?),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => Typed::Time(any.downcast_ref()?),
        DataType::Dictionary(key, value)
            if key.as_ref() == &DataType::Int32 && value.as_ref() == &DataType::Utf8 =>
        {
            let dictionary: &DictionaryArray<Int32Type> = any.downcast_ref()?;
            Typed::Tag(dictionary, dictionary.values().as_any().downcast_ref()?)
        }
        DataType::Null => Typed::Null,
        _ => return None,
    })
}

impl ArrowRows {
    /// Rows `rows[range]` of `batches` (`rows` is shared by the statement's series),
    /// reading the series' columns from `columns` (`time` first).
    pub(crate) fn new(
        batches: Arc<[RecordBatch]>,
        columns: Arc<[usize]>,
        rows: &Arc<[(u32, u32)]>,
        range: Range<usize>,
    ) -> Self {
        ArrowRows {
            batches,
            columns,
            rows: Span::new(rows, range),
            grid: None,
        }
    }

    /// The buckets of a `GROUP BY time` grid: row i is bucket `times[i]`, read from
    /// `rows[range][i]` or, when that is [`EMPTY_BUCKET`], null in every column but those
    /// `zero_when_empty` marks (counts), which show 0. `columns` are the value columns,
    /// without `time`. `rows` and `times` are shared by the statement's series.
    pub(crate) fn grid(
        batches: Arc<[RecordBatch]>,
        columns: Arc<[usize]>,
        rows: &Arc<[(u32, u32)]>,
        range: Range<usize>,
        times: &Arc<[i64]>,
        zero_when_empty: Arc<[bool]>,
    ) -> Self {
        debug_assert_eq!(range.len(), times.len());
        debug_assert_eq!(columns.len(), zero_when_empty.len());
        ArrowRows {
            batches,
            columns,
            rows: Span::new(rows, range),
            grid: Some(Grid {
                times: Span::new(times, 0..times.len()),
                zero_when_empty,
            }),
        }
    }

    /// Whether [`ArrowRows::write_json`] can write every column of `batches` named in
    /// `columns`: the types the engine answers raw points with.
    pub(crate) fn writable(batches: &[RecordBatch], columns: &[usize]) -> bool {
        batches.iter().all(|batch| {
            columns
                .iter()
                .all(|&c| c < batch.num_columns() && typed(batch.column(c)).is_some())
        })
    }

    /// How many rows.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// Drops the first `n` rows (`OFFSET`).
    pub(crate) fn skip(&mut self, n: usize) {
        self.rows.skip(n);
        if let Some(grid) = &mut self.grid {
            grid.times.skip(n);
        }
    }

    /// Keeps the first `n` rows (`LIMIT`).
    pub(crate) fn truncate(&mut self, n: usize) {
        self.rows.truncate(n);
        if let Some(grid) = &mut self.grid {
            grid.times.truncate(n);
        }
    }

    /// The rows as cells, `time` first, as every other answer holds them.
    pub(crate) fn to_values(&self) -> Result<Vec<Row>, String> {
        // Each batch's columns as cells, read once, for the batches the rows are in.
        let mut cells: Vec<Option<Vec<Vec<Value>>>> = vec![None; self.batches.len()];
        let mut out = Vec::with_capacity(self.rows.len());
        let times = self.grid.as_ref().map(|grid| grid.times.as_slice());
        for (i, &(b, r)) in self.rows.as_slice().iter().enumerate() {
            let mut row = Row::with_capacity(self.columns.len() + 1);
            if let (Some(grid), Some(times)) = (&self.grid, times) {
                row.push(Value::Time(times[i]));
                if (b, r) == EMPTY_BUCKET {
                    row.extend(grid.zero_when_empty.iter().map(|&zero| match zero {
                        true => Value::Integer(0),
                        false => Value::Null,
                    }));
                    out.push(row);
                    continue;
                }
            }
            let batch_cells = match &mut cells[b as usize] {
                Some(read) => read,
                empty => {
                    let batch = &self.batches[b as usize];
                    let mut read = Vec::with_capacity(self.columns.len());
                    for &c in self.columns.iter() {
                        let mut column = Vec::with_capacity(batch.num_rows());
                        read_column(batch.column(c), &mut column)?;
                        read.push(column);
                    }
                    empty.insert(read)
                }
            };
            row.extend(batch_cells.iter().map(|column| column[r as usize].clone()));
            out.push(row);
        }
        Ok(out)
    }

    /// The rows as InfluxDB's JSON `values` members, `[…],[…]`: the same text the cells
    /// [`ArrowRows::to_values`] gives would be written as. `resolved` keeps the columns'
    /// typed views for the next series of the same statement.
    pub(crate) fn write_json<'a>(
        &'a self,
        epoch: Epoch,
        resolved: &mut Resolved<'a>,
        out: &mut Vec<u8>,
    ) {
        let resolved = resolved.for_rows(self);
        let times = self.grid.as_ref().map(|grid| grid.times.as_slice());
        for (i, &(b, r)) in self.rows.as_slice().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            if let (Some(grid), Some(times)) = (&self.grid, times) {
                json_time(times[i], epoch, out);
                if (b, r) == EMPTY_BUCKET {
                    for zero in grid.zero_when_empty.iter() {
                        out.extend_from_slice(if *zero { b",0" } else { b",null" });
                    }
                    out.push(b']');
                    continue;
                }
            }
            let columns = resolved[b as usize].get_or_insert_with(|| {
                let batch = &self.batches[b as usize];
                self.columns
                    .iter()
                    .map(|&c| typed(batch.column(c)).unwrap_or(Typed::Null))
                    .collect()
            });
            for (j, column) in columns.iter().enumerate() {
                if j > 0 || self.grid.is_some() {
                    out.push(b',');
                }
                write_cell(column, r as usize, epoch, out);
            }
            out.push(b']');
        }
    }
}

/// The typed views of a statement's batch columns, resolved once for all its series: a
/// statement's series share its batches and (for one measurement) its columns, and
/// `lastpoint` has a series of one row per host, where resolving 20 columns per series was
/// a tenth of its answer's time.
#[derive(Default)]
pub(crate) struct Resolved<'a> {
    /// The batches and columns the views are of (compared by address only).
    of: Option<(*const RecordBatch, *const usize)>,
    /// Per batch, its columns' views once a row of it was written.
    per_batch: Vec<Option<Vec<Typed<'a>>>>,
    /// The statement's `"columns":[…]` as JSON, with the names it encodes (compared by
    /// address): `lastpoint`'s 100 series share 20 names, encoded once instead of 100 times.
    columns: Option<(&'a [String], Vec<u8>)>,
}

impl<'a> Resolved<'a> {
    /// The views for `rows`' batches and columns: those kept when they are the same.
    fn for_rows(&mut self, rows: &'a ArrowRows) -> &mut [Option<Vec<Typed<'a>>>] {
        let of = (rows.batches.as_ptr(), rows.columns.as_ptr());
        if self.of != Some(of) {
            self.of = Some(of);
            self.per_batch.clear();
            self.per_batch.resize_with(rows.batches.len(), || None);
        }
        &mut self.per_batch
    }

    /// `"columns":[…]` for `columns`, encoded when they are not the last series' columns.
    pub(crate) fn columns_json(&mut self, columns: &'a [String]) -> &[u8] {
        let cached = match &self.columns {
            Some((names, _)) => std::ptr::eq(*names, columns),
            None => false,
        };
        if !cached {
            let mut json = b"\"columns\":[".to_vec();
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    json.push(b',');
                }
                json_string(column, &mut json);
            }
            json.push(b']');
            self.columns = Some((columns, json));
        }
        self.columns.as_ref().map_or(&[], |(_, json)| json)
    }
}

fn write_cell(column: &Typed<'_>, row: usize, epoch: Epoch, out: &mut Vec<u8>) {
    let null = match column {
        Typed::Float(a) => a.is_null(row),
        Typed::Integer(a) => a.is_null(row),
        Typed::Unsigned(a) => a.is_null(row),
        Typed::Boolean(a) => a.is_null(row),
        Typed::Text(a) => a.is_null(row),
        Typed::Tag(keys, values) => {
            keys.is_null(row) || values.is_null(keys.keys().value(row) as usize)
        }
        Typed::Time(a) => a.is_null(row),
        Typed::Null => true,
    };
    if null {
        out.extend_from_slice(b"null");
        return;
    }
    match column {
        Typed::Float(a) => go_float(a.value(row), out),
        Typed::Integer(a) => write_int(a.value(row), out),
        Typed::Unsigned(a) => write_int(a.value(row), out),
        Typed::Boolean(a) => out.extend_from_slice(if a.value(row) { b"true" } else { b"false" }),
        Typed::Text(a) => json_string(a.value(row), out),
        Typed::Tag(keys, values) => json_string(values.value(keys.keys().value(row) as usize), out),
        Typed::Time(a) => json_time(a.value(row), epoch, out),
        Typed::Null => out.extend_from_slice(b"null"),
    }
}
