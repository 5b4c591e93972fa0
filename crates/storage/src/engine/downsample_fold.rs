//! Folding one series' rows into per-bucket aggregates for a downsample, and writing them
//! out as line protocol for the target table.
//!
//! A series comes as a [`SeriesSummary`]: whole chunks that lie inside one bucket (their
//! pre-aggregates are folded without decoding a value) plus the decoded rest. Clean chunks
//! overlap no other data of the series in time, so a chunk's first and last values can be
//! ordered against other rows by any time inside its span.

use std::collections::BTreeMap;

use strata_lineproto::FieldValue;
use strata_lineproto::writer::write_line;

use crate::catalog::{Aggregate, Downsample, FieldDef};
use crate::column::{Column, Values};
use crate::model::{FieldId, FieldType, Timestamp};
use crate::part::{ChunkMeta, PreAgg};
use crate::shard::SeriesSummary;

/// A numeric type a downsample aggregates, with the type its sum is kept in.
trait Num: Copy + PartialOrd {
    type Sum: Copy + std::ops::Add<Output = Self::Sum>;
    fn widen(self) -> Self::Sum;
    fn sum_as_f64(sum: Self::Sum) -> f64;
    fn value(self) -> FieldValue<'static>;
    /// The sum as the target stores it; `None` when it does not fit.
    fn sum_value(sum: Self::Sum) -> Option<FieldValue<'static>>;
}

impl Num for f64 {
    type Sum = f64;
    fn widen(self) -> f64 {
        self
    }
    fn sum_as_f64(sum: f64) -> f64 {
        sum
    }
    fn value(self) -> FieldValue<'static> {
        FieldValue::Float(self)
    }
    fn sum_value(sum: f64) -> Option<FieldValue<'static>> {
        sum.is_finite().then_some(FieldValue::Float(sum))
    }
}

impl Num for i64 {
    type Sum = i128;
    fn widen(self) -> i128 {
        i128::from(self)
    }
    fn sum_as_f64(sum: i128) -> f64 {
        sum as f64
    }
    fn value(self) -> FieldValue<'static> {
        FieldValue::Integer(self)
    }
    fn sum_value(sum: i128) -> Option<FieldValue<'static>> {
        i64::try_from(sum).ok().map(FieldValue::Integer)
    }
}

impl Num for u64 {
    type Sum = u128;
    fn widen(self) -> u128 {
        u128::from(self)
    }
    fn sum_as_f64(sum: u128) -> f64 {
        sum as f64
    }
    fn value(self) -> FieldValue<'static> {
        FieldValue::UInteger(self)
    }
    fn sum_value(sum: u128) -> Option<FieldValue<'static>> {
        u64::try_from(sum).ok().map(FieldValue::UInteger)
    }
}

/// Running aggregates of one field over one bucket of one series.
#[derive(Debug, Clone, Copy)]
struct Acc<T: Num> {
    count: u64,
    sum: T::Sum,
    min: T,
    max: T,
    first: (Timestamp, T),
    last: (Timestamp, T),
}

impl<T: Num> Acc<T> {
    /// The aggregates of a run of `count` values, its first and last value each with a
    /// time that orders it against other rows of the series.
    fn of_run(
        count: u64,
        sum: T::Sum,
        min: T,
        max: T,
        first: (Timestamp, T),
        last: (Timestamp, T),
    ) -> Self {
        Self {
            count,
            sum,
            min,
            max,
            first,
            last,
        }
    }

    fn merge(this: &mut Option<Self>, other: Self) {
        let Some(acc) = this else {
            *this = Some(other);
            return;
        };
        acc.count += other.count;
        acc.sum = acc.sum + other.sum;
        if other.min < acc.min {
            acc.min = other.min;
        }
        if other.max > acc.max {
            acc.max = other.max;
        }
        if other.first.0 < acc.first.0 {
            acc.first = other.first;
        }
        if other.last.0 > acc.last.0 {
            acc.last = other.last;
        }
    }

    fn single(time: Timestamp, value: T) -> Self {
        Self::of_run(1, value.widen(), value, value, (time, value), (time, value))
    }

    fn value(&self, aggregate: Aggregate) -> Option<FieldValue<'static>> {
        Some(match aggregate {
            Aggregate::Avg => FieldValue::Float(T::sum_as_f64(self.sum) / self.count as f64),
            Aggregate::Min => self.min.value(),
            Aggregate::Max => self.max.value(),
            Aggregate::Sum => return T::sum_value(self.sum),
            Aggregate::Count => FieldValue::Integer(i64::try_from(self.count).unwrap_or(i64::MAX)),
            Aggregate::First => self.first.1.value(),
            Aggregate::Last => self.last.1.value(),
        })
        .filter(|v| !matches!(v, FieldValue::Float(f) if !f.is_finite()))
    }
}

/// One field's running aggregates, of its type.
#[derive(Debug, Clone, Copy)]
enum FieldAcc {
    Float(Option<Acc<f64>>),
    Integer(Option<Acc<i64>>),
    Unsigned(Option<Acc<u64>>),
}

impl FieldAcc {
    fn new(field_type: FieldType) -> Self {
        match field_type {
            FieldType::Integer => FieldAcc::Integer(None),
            FieldType::Unsigned => FieldAcc::Unsigned(None),
            _ => FieldAcc::Float(None),
        }
    }

    fn add_chunk(&mut self, chunk: &ChunkMeta, preagg: &PreAgg) {
        let (from, to) = (chunk.min_time, chunk.max_time);
        match (self, *preagg) {
            (
                FieldAcc::Float(acc),
                PreAgg::Float {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                    ..
                },
            ) => Acc::merge(
                acc,
                Acc::of_run(u64::from(count), sum, min, max, (from, first), (to, last)),
            ),
            (
                FieldAcc::Integer(acc),
                PreAgg::Integer {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                },
            ) => Acc::merge(
                acc,
                Acc::of_run(u64::from(count), sum, min, max, (from, first), (to, last)),
            ),
            (
                FieldAcc::Unsigned(acc),
                PreAgg::Unsigned {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                },
            ) => Acc::merge(
                acc,
                Acc::of_run(u64::from(count), sum, min, max, (from, first), (to, last)),
            ),
            _ => {}
        }
    }

    fn add_value(&mut self, time: Timestamp, values: &Values, index: usize) {
        match (self, values) {
            (FieldAcc::Float(acc), Values::Float(v)) if !v[index].is_nan() => {
                Acc::merge(acc, Acc::single(time, v[index]));
            }
            (FieldAcc::Integer(acc), Values::Integer(v)) => {
                Acc::merge(acc, Acc::single(time, v[index]));
            }
            (FieldAcc::Unsigned(acc), Values::Unsigned(v)) => {
                Acc::merge(acc, Acc::single(time, v[index]));
            }
            _ => {}
        }
    }

    fn value(&self, aggregate: Aggregate) -> Option<FieldValue<'static>> {
        match self {
            FieldAcc::Float(acc) => acc.as_ref()?.value(aggregate),
            FieldAcc::Integer(acc) => acc.as_ref()?.value(aggregate),
            FieldAcc::Unsigned(acc) => acc.as_ref()?.value(aggregate),
        }
    }
}

/// What a downsample folds: the source's numeric fields and the target's column names.
pub(super) struct FoldPlan<'d> {
    downsample: &'d Downsample,
    /// The numeric fields, by increasing id.
    fields: Vec<FieldDef>,
    /// `names[field][aggregate]`: the target column.
    names: Vec<Vec<String>>,
}

impl<'d> FoldPlan<'d> {
    pub(super) fn new(downsample: &'d Downsample, source_fields: &[FieldDef]) -> Self {
        let fields: Vec<FieldDef> = source_fields
            .iter()
            .filter(|f| {
                matches!(
                    f.field_type,
                    FieldType::Float | FieldType::Integer | FieldType::Unsigned
                )
            })
            .cloned()
            .collect();
        let names = fields
            .iter()
            .map(|f| {
                downsample
                    .aggregates
                    .iter()
                    .map(|a| format!("{}_{}", f.name, a.name()))
                    .collect()
            })
            .collect();
        Self {
            downsample,
            fields,
            names,
        }
    }

    /// The source fields to read.
    pub(super) fn field_ids(&self) -> Vec<FieldId> {
        self.fields.iter().map(|f| f.id).collect()
    }

    /// Whether a chunk's pre-aggregates can stand for its rows: it lies inside one bucket
    /// and no float column holds NaN (which pre-aggregated min and max leave out but a
    /// sum does not).
    pub(super) fn chunk_usable(&self, chunk: &ChunkMeta) -> bool {
        self.downsample.bucket_start(chunk.min_time) == self.downsample.bucket_start(chunk.max_time)
            && chunk
                .columns
                .iter()
                .all(|c| !matches!(c.preagg, PreAgg::Float { has_nan: true, .. }))
    }

    /// Appends one line per bucket of `summary` holding a value of some field to `out`;
    /// returns the number of lines.
    pub(super) fn fold_series(&self, summary: &SeriesSummary, out: &mut Vec<u8>) -> u64 {
        let blank: Vec<FieldAcc> = self
            .fields
            .iter()
            .map(|f| FieldAcc::new(f.field_type))
            .collect();
        let mut buckets: BTreeMap<Timestamp, Vec<FieldAcc>> = BTreeMap::new();
        for chunk in &summary.chunks {
            let accs = buckets
                .entry(self.downsample.bucket_start(chunk.min_time))
                .or_insert_with(|| blank.clone());
            for column in &chunk.columns {
                if let Some(slot) = self.slot(column.field) {
                    accs[slot].add_chunk(chunk, &column.preagg);
                }
            }
        }
        let rest = &summary.rest;
        for column in &rest.columns {
            let Some(slot) = self.slot(column.field) else {
                continue;
            };
            for (row, index) in present_rows(column, rest.rows()) {
                let time = rest.times[row];
                buckets
                    .entry(self.downsample.bucket_start(time))
                    .or_insert_with(|| blank.clone())[slot]
                    .add_value(time, &column.values, index);
            }
        }
        let tags: Vec<(&str, &str)> = summary
            .tags
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut lines = 0;
        let mut fields: Vec<(&str, FieldValue<'static>)> = Vec::new();
        for (bucket, accs) in &buckets {
            fields.clear();
            for (slot, acc) in accs.iter().enumerate() {
                for (a, aggregate) in self.downsample.aggregates.iter().enumerate() {
                    if let Some(value) = acc.value(*aggregate) {
                        fields.push((self.names[slot][a].as_str(), value));
                    }
                }
            }
            // A line that cannot be written (no value, or a name line protocol cannot
            // carry) is left out; the source accepted those names, so the second cannot
            // happen with rows that came in as line protocol.
            if !fields.is_empty()
                && write_line(out, &self.downsample.name, &tags, &fields, Some(*bucket)).is_ok()
            {
                lines += 1;
            }
        }
        lines
    }

    fn slot(&self, field: FieldId) -> Option<usize> {
        self.fields.binary_search_by_key(&field, |f| f.id).ok()
    }
}

/// `(row, value index)` of each row where `column` has a value.
fn present_rows(column: &Column, rows: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
    (0..rows)
        .filter(|row| column.is_present(*row))
        .enumerate()
        .map(|(index, row)| (row, index))
}
