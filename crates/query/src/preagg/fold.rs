//! Folding one shard's series summaries into partial aggregate states, group by group:
//! whole chunks through their pre-aggregates, the rest of the rows as value slices. The
//! states are DataFusion's partial states for the same aggregates, so DataFusion's final
//! aggregation combines shards exactly as it would combine its own partial results.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, RecordBatch, RecordBatchOptions, StringDictionaryBuilder, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type, SchemaRef};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use strata_storage::column::{Column, Values};
use strata_storage::part::{ChunkMeta, PreAgg};
use strata_storage::{Engine, ReadRequest, SeriesSummary};

use super::bucket::{TimeKey, for_each_run};
use super::groups::{Groups, tag_keys, time_keys};
use super::plan::{AggKind, AggSpec, GroupKey, PreAggPlan, ValueSource};
use super::row_value;
use super::state::State;
use super::values::{
    combine_max, combine_min, combine_sum, preagg_edge, preagg_min_max, scalar, slice_extreme,
    slice_sum,
};
use crate::functions::first_last::End;

/// Largest integer sum (in magnitude) that converts to the same float whether summed
/// exactly or as floats row by row: below 2^53 every partial sum is exact in f64.
const EXACT_FLOAT_SUM: i128 = 1 << 53;

/// Whether `chunk`'s pre-aggregates answer every aggregate of `plan` exactly, and the chunk
/// lies inside one time bucket.
pub(crate) fn chunk_usable(plan: &PreAggPlan, chunk: &ChunkMeta) -> bool {
    let buckets_ok = plan.groups.iter().all(|key| match key {
        GroupKey::Tag(_) => true,
        GroupKey::Time(key) => match (key.bucket(chunk.min_time), key.bucket(chunk.max_time)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        },
    });
    buckets_ok
        && plan.aggs.iter().all(|spec| {
            if let AggKind::RowValue(_) = spec.kind {
                return row_value::chunk_usable(spec, chunk);
            }
            let Some((field, _)) = spec.field else {
                return true;
            };
            let Some(column) = chunk.column(field) else {
                return true; // no values here: contributes nothing
            };
            match (spec.kind, &column.preagg) {
                (AggKind::Count | AggKind::CountRows, _) => true,
                (AggKind::Min | AggKind::Max, PreAgg::Float { has_nan, .. }) => !has_nan,
                (AggKind::Avg, PreAgg::Integer { sum, .. }) => sum.abs() < EXACT_FLOAT_SUM,
                (AggKind::Avg, PreAgg::Unsigned { sum, .. }) => (*sum as i128) < EXACT_FLOAT_SUM,
                (AggKind::First | AggKind::Last, PreAgg::String { .. }) => false,
                // first/last times are the chunk's only when every row has the field.
                (AggKind::First | AggKind::Last, _) => column.presence.is_none(),
                _ => true,
            }
        })
}

/// Partial states by group for one shard.
pub(crate) struct Folder<'p> {
    plan: &'p PreAggPlan,
    /// The tags the fold reads: GROUP BY tags and tags that row values show.
    tag_keys: Vec<String>,
    groups: Groups,
    /// Whole chunks answered from their pre-aggregates, and rows decoded.
    pub chunks_preaggregated: usize,
    pub rows_decoded: usize,
}

impl<'p> Folder<'p> {
    /// A folder for `plan` over times `start..end` (the request's range).
    pub(crate) fn new(plan: &'p PreAggPlan, start: i64, end: i64) -> Self {
        let mut groups = Groups::new(plan, start, end);
        if plan.groups.is_empty() {
            // Without GROUP BY there is always exactly one row, rows or not.
            let tags = groups.tag_set(Vec::new());
            groups.group(tags, &[]);
        }
        let mut tag_keys: Vec<String> = tag_keys(plan)
            .cloned()
            .chain(plan.aggs.iter().filter_map(|spec| match &spec.source {
                ValueSource::Tag(name) => Some(name.clone()),
                _ => None,
            }))
            .collect();
        tag_keys.sort_unstable();
        tag_keys.dedup();
        Self {
            plan,
            tag_keys,
            groups,
            chunks_preaggregated: 0,
            rows_decoded: 0,
        }
    }

    /// Folds the series of shard `shard` that `request` reads.
    pub(crate) fn fold_shard(
        &mut self,
        engine: &Engine,
        shard: usize,
        request: &ReadRequest,
    ) -> DfResult<()> {
        if request.start >= request.end || shard >= engine.shard_count() {
            return Ok(());
        }
        let plan = self.plan;
        let usable = |chunk: &ChunkMeta| chunk_usable(plan, chunk);
        // Each series is folded as soon as it is read, while its rows are still in cache.
        let mut failed = None;
        // Taken out for the call, which borrows `self` for the visitor.
        let tag_keys = std::mem::take(&mut self.tag_keys);
        let result =
            engine.summarize_shard_each(shard, request, &usable, Some(&tag_keys), &mut |summary| {
                match self.add(&summary) {
                    Ok(()) => Ok(true),
                    Err(e) => {
                        failed = Some(e);
                        Ok(false)
                    }
                }
            });
        self.tag_keys = tag_keys;
        result.map_err(|e| DataFusionError::External(Box::new(e)))?;
        failed.map_or(Ok(()), Err)
    }

    /// Groups folded so far.
    pub(crate) fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Folds one series in.
    pub(crate) fn add(&mut self, series: &SeriesSummary) -> DfResult<()> {
        self.chunks_preaggregated += series.chunks.len();
        self.rows_decoded += series.rest.rows();
        let tag_values: Vec<Option<String>> = tag_keys(self.plan)
            .map(|name| {
                series
                    .tags
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            })
            .collect();
        let tags = self.groups.tag_set(tag_values);
        let plan = self.plan;
        let time_keys: Vec<&TimeKey> = time_keys(plan).collect();
        let mut buckets = Vec::with_capacity(time_keys.len());
        for chunk in &series.chunks {
            buckets.clear();
            for key in &time_keys {
                buckets.push(key.bucket(chunk.min_time)?);
            }
            let group = self.groups.group(tags, &buckets);
            for (spec, state) in plan.aggs.iter().zip(self.groups.states_mut(group)) {
                match state {
                    State::Row(best) => row_value::fold_chunk(spec, best, series, chunk),
                    _ => fold_chunk(spec, state, chunk),
                }
            }
        }
        let rest = &series.rest;
        if rest.rows() == 0 {
            return Ok(());
        }
        // Prefix counts of present rows per aggregate's column: value ranges of row ranges.
        let columns: Vec<Option<ColumnRows<'_>>> = plan
            .aggs
            .iter()
            .map(|spec| {
                let (field, _) = spec.field?;
                let column = rest.column(field)?;
                let prefix = column.present.as_ref().map(|present| {
                    let mut prefix = Vec::with_capacity(present.len() + 1);
                    let mut n = 0u32;
                    prefix.push(0);
                    for p in present {
                        n += u32::from(*p);
                        prefix.push(n);
                    }
                    prefix
                });
                Some((column, prefix))
            })
            .collect();
        for_each_run(&time_keys, &rest.times, |start, end, buckets| {
            let group = self.groups.group(tags, buckets);
            let run = RowRun {
                times: &rest.times,
                start,
                end,
            };
            for ((spec, state), column) in plan
                .aggs
                .iter()
                .zip(self.groups.states_mut(group))
                .zip(&columns)
            {
                match state {
                    State::Row(best) => {
                        let row = match spec.kind {
                            AggKind::RowValue(End::First) => start,
                            _ => end - 1,
                        };
                        let value = column.as_ref().and_then(|(column, prefix)| {
                            column.is_present(row).then(|| {
                                let index = prefix.as_ref().map_or(row, |p| p[row] as usize);
                                scalar(&column.values, index)
                            })
                        });
                        row_value::fold_row(spec, best, series, rest.times[row], value);
                    }
                    _ => fold_rows(spec, state, column.as_ref(), &run),
                }
            }
            Ok(())
        })
    }

    /// The groups with their states.
    pub(crate) fn into_groups(self) -> Groups {
        self.groups
    }

    /// The partial-aggregate batch: group columns then state columns, as `schema`.
    pub(crate) fn finish(self, schema: &SchemaRef) -> DfResult<RecordBatch> {
        let groups = &self.groups;
        let rows = groups.len();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        let mut tag_index = 0;
        let mut time_index = 0;
        for (key, field) in self.plan.groups.iter().zip(schema.fields()) {
            match key {
                GroupKey::Tag(_) => {
                    let mut builder = StringDictionaryBuilder::<Int32Type>::new();
                    for group in 0..rows {
                        let tags = &groups.tag_sets()[groups.tags_of(group) as usize];
                        builder.append_option(tags[tag_index].as_deref());
                    }
                    let array: ArrayRef = Arc::new(builder.finish());
                    columns.push(cast(&array, field.data_type())?);
                    tag_index += 1;
                }
                GroupKey::Time(_) => {
                    let values: Vec<i64> = (0..rows)
                        .map(|group| groups.buckets_of(group)[time_index])
                        .collect();
                    let array: ArrayRef = Arc::new(TimestampNanosecondArray::from(values));
                    columns.push(cast(&array, field.data_type())?);
                    time_index += 1;
                }
            }
        }
        let mut state_fields = schema.fields().iter().skip(self.plan.groups.len());
        for (index, spec) in self.plan.aggs.iter().enumerate() {
            for part in 0..spec.state_types.len() {
                let field = state_fields
                    .next()
                    .ok_or_else(|| DataFusionError::Internal("pre-aggregate schema".into()))?;
                // Values are built plain (tags as Utf8) and cast to the state's type.
                let plain = match field.data_type() {
                    DataType::Dictionary(_, values) => values.as_ref().clone(),
                    other => other.clone(),
                };
                let target = ScalarValue::try_from(&plain)?;
                let values = (0..rows).map(|group| match &groups.states_of(group)[index] {
                    State::Row(best) => row_value::state_part(
                        spec,
                        best,
                        part,
                        &groups.tag_sets()[groups.tags_of(group) as usize],
                        &target,
                    ),
                    state => state.partial_value(part, &target),
                });
                let array = if rows == 0 {
                    datafusion::arrow::array::new_empty_array(field.data_type())
                } else {
                    ScalarValue::iter_to_array(values)?
                };
                columns.push(cast(&array, field.data_type())?);
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &options,
        )?)
    }
}

/// Folds a whole clean chunk through its pre-aggregates.
fn fold_chunk(spec: &AggSpec, state: &mut State, chunk: &ChunkMeta) {
    if spec.kind == AggKind::CountRows {
        if let State::Count(n) = state {
            *n += i64::from(chunk.rows);
        }
        return;
    }
    let Some((field, _)) = spec.field else {
        return;
    };
    let Some(column) = chunk.column(field) else {
        return;
    };
    let preagg = &column.preagg;
    if preagg.count() == 0 {
        return;
    }
    match (state, preagg) {
        (State::Count(n), p) => *n += i64::from(p.count()),
        (State::Sum(s), PreAgg::Float { sum, .. }) => {
            combine_sum(s, ScalarValue::Float64(Some(*sum)))
        }
        (State::Sum(s), PreAgg::Integer { sum, .. }) => {
            combine_sum(s, ScalarValue::Int64(Some(*sum as i64)))
        }
        (State::Sum(s), PreAgg::Unsigned { sum, .. }) => {
            combine_sum(s, ScalarValue::UInt64(Some(*sum as u64)))
        }
        (State::Min(m), p) => {
            if let Some(v) = preagg_min_max(p, true) {
                combine_min(m, v);
            }
        }
        (State::Max(m), p) => {
            if let Some(v) = preagg_min_max(p, false) {
                combine_max(m, v);
            }
        }
        (State::Avg { count, sum: total }, p) => {
            let part_sum = match p {
                PreAgg::Float { sum, .. } => *sum,
                PreAgg::Integer { sum, .. } => *sum as f64,
                PreAgg::Unsigned { sum, .. } => *sum as f64,
                _ => return,
            };
            *count += u64::from(p.count());
            *total += part_sum;
        }
        (state @ State::Edge(..), p) => {
            let (time, first) = match spec.kind {
                AggKind::First => (chunk.min_time, true),
                _ => (chunk.max_time, false),
            };
            if let Some(v) = preagg_edge(p, first) {
                state.edge(time, v);
            }
        }
        _ => {}
    }
}

/// A decoded column with the prefix counts of its present rows (`None`: all present), so a
/// run of rows maps to a slice of values.
type ColumnRows<'a> = (&'a Column, Option<Vec<u32>>);

/// Rows `start..end` of a series' decoded rest.
struct RowRun<'a> {
    times: &'a [i64],
    start: usize,
    end: usize,
}

/// Folds rows of a run into a state; `column` is the aggregate's column with its prefix
/// counts of present rows (`None` prefix: every row present).
fn fold_rows(spec: &AggSpec, state: &mut State, column: Option<&ColumnRows<'_>>, run: &RowRun<'_>) {
    if spec.kind == AggKind::CountRows {
        if let State::Count(n) = state {
            *n += (run.end - run.start) as i64;
        }
        return;
    }
    let Some((column, prefix)) = column else {
        return;
    };
    let (from, to) = match prefix {
        Some(p) => (p[run.start] as usize, p[run.end] as usize),
        None => (run.start, run.end),
    };
    if from == to {
        return;
    }
    match state {
        State::Count(n) => *n += (to - from) as i64,
        State::Sum(s) => {
            if let Some(v) = slice_sum(&column.values, from, to) {
                combine_sum(s, v);
            }
        }
        State::Min(m) => {
            if let Some(v) = slice_extreme(&column.values, from, to, true) {
                combine_min(m, v);
            }
        }
        State::Max(m) => {
            if let Some(v) = slice_extreme(&column.values, from, to, false) {
                combine_max(m, v);
            }
        }
        State::Avg { count, sum } => {
            let part = match &column.values {
                Values::Float(v) => v[from..to].iter().sum::<f64>(),
                Values::Integer(v) => v[from..to].iter().map(|x| *x as f64).sum(),
                Values::Unsigned(v) => v[from..to].iter().map(|x| *x as f64).sum(),
                _ => return,
            };
            *count += (to - from) as u64;
            *sum += part;
        }
        State::Edge(end, _) => {
            let end = *end;
            // The run's first / last present row and its value index.
            let (row, value_index) = match (end, prefix) {
                (End::First, None) => (run.start, from),
                (End::Last, None) => (run.end - 1, to - 1),
                (End::First, Some(_)) => match (run.start..run.end).find(|r| column.is_present(*r))
                {
                    Some(r) => (r, from),
                    None => return,
                },
                (End::Last, Some(_)) => {
                    match (run.start..run.end).rev().find(|r| column.is_present(*r)) {
                        Some(r) => (r, to - 1),
                        None => return,
                    }
                }
            };
            state.edge(run.times[row], scalar(&column.values, value_index));
        }
        // Row values are folded by the caller, which knows the series.
        State::Row(_) => {}
    }
}
