//! A pushed-down `GROUP BY time(…)` under `fill(null)` over a range with a start, whose
//! columns are each one aggregate call (TSBS's and Grafana's queries): its series are
//! written from the engine's Arrow answer straight into the range's grid of buckets.
//!
//! The general path ([`super::pushed`], then [`super::grouped`]'s assembly) turns every
//! cell of the answer into a [`super::super::result::Value`], files it in its series'
//! buckets, builds a row per bucket and writes the rows: some 500 instructions a row, a
//! fifth of TSBS's `single-groupby-1-1-12`. Here each series is only the grid's list of
//! (batch, row) per bucket ([`ArrowRows::grid`]); the cells are read when written.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, Int64Array, RecordBatch, TimestampNanosecondArray,
};
use strata_influxql::{Fill, SelectStatement};
use strata_storage::catalog::TableSchema;

use super::super::result::Series;
use super::arrow_rows::{ArrowRows, EMPTY_BUCKET};
use super::condition::TimeRange;
use super::fields::Projections;
use super::grouped::{Call, bucket_grid};
use super::pushed::Pushed;
use super::{
    BucketBudget, Context, Grouping, batch_tags, grouped_tag_columns, new_series, row_key,
    row_key_is,
};

/// How a statement's answer becomes its grid: what [`plan`] found.
pub(super) struct GridPlan<'a> {
    /// Every bucket shown, ascending.
    times: Vec<i64>,
    width: i64,
    /// Per aggregate call, whether it is a count (an empty bucket counts 0; a bucket
    /// whose count is 0 has no data).
    counts: Vec<bool>,
    /// Per column after `time`, the aggregate call it shows.
    shown: Vec<usize>,
    /// The query's budget, which each series' grid takes from.
    budget: &'a BucketBudget,
}

/// The plan when `statement` is answered through the grid: a top-level statement (not a
/// subquery's, whose answer is read as cells) grouped by time with `fill(null)` over a
/// range with a start, whose aggregates `parts` are one SQL aggregate each (not a
/// `spread`), and whose columns `direct` names one call each, untransformed
/// ([`super::grouped`]'s plain columns).
#[allow(clippy::too_many_arguments)]
pub(super) fn plan<'a>(
    ctx: &Context<'a>,
    statement: &SelectStatement,
    grouping: &Grouping,
    calls: &[Call<'_>],
    parts: &[Pushed<'_>],
    direct: Option<&[usize]>,
    range: TimeRange,
) -> Result<Option<GridPlan<'a>>, String> {
    let (true, Some(bucket), Fill::Null, Some(_), Some(direct)) = (
        ctx.arrow_rows && ctx.subquery.is_none(),
        grouping.time,
        &statement.fill,
        range.start,
        direct,
    ) else {
        return Ok(None);
    };
    if parts.iter().any(|p| p.functions.len() != 1) {
        return Ok(None);
    }
    let Some(times) = bucket_grid(statement, range, ctx.now_ns, bucket, None, 0)? else {
        return Ok(None);
    };
    Ok(Some(GridPlan {
        times,
        width: bucket.0,
        counts: calls.iter().map(|c| c.function == "count").collect(),
        shown: direct.to_vec(),
        budget: ctx.buckets,
    }))
}

/// Where the parts of [`super::pushed::aggregate_sql`]'s answer are: its grouped tags
/// first, then the bucket, then one column per aggregate call.
struct Layout {
    group_tags: usize,
}

impl Layout {
    fn bucket(&self) -> usize {
        self.group_tags
    }

    fn call(&self, i: usize) -> usize {
        self.group_tags + 1 + i
    }
}

/// Whether `batches` have the types the grid reads and writes: a nanosecond bucket, counts
/// as 64-bit integers, and values [`ArrowRows`] writes. (What the engine answers for the
/// SQL; anything else goes the general way.)
pub(super) fn readable(plan: &GridPlan<'_>, group_tags: usize, batches: &[RecordBatch]) -> bool {
    let layout = Layout { group_tags };
    let values: Vec<usize> = (0..plan.counts.len()).map(|i| layout.call(i)).collect();
    ArrowRows::writable(batches, &values)
        && batches.iter().all(|batch| {
            let is = |column: usize| batch.column(column).as_any();
            is(layout.bucket()).is::<TimestampNanosecondArray>()
                && plan
                    .counts
                    .iter()
                    .enumerate()
                    .all(|(i, count)| !count || is(layout.call(i)).is::<Int64Array>())
        })
}

/// One series' buckets in the grid as they are found.
struct Slots {
    rows: Vec<(u32, u32)>,
    /// Whether any bucket of the answer has data, in the grid or not (a `LIMIT` can cut
    /// the grid short): a series with none is not shown.
    has_data: bool,
}

/// The series of the answer `batches` ([`readable`] ones), sorted by tags.
pub(super) fn series(
    plan: &GridPlan<'_>,
    statement: &SelectStatement,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    group_tags: usize,
    batches: Vec<RecordBatch>,
) -> Result<Vec<Series>, String> {
    let layout = Layout { group_tags };
    let start = plan.times.first().copied().unwrap_or(0);
    let mut found: BTreeMap<Vec<String>, Slots> = BTreeMap::new();
    // The series being filled, moved into `found` when another starts.
    let mut current: Option<(Vec<String>, Slots)> = None;
    let tag_columns = grouped_tag_columns(schema, grouping, 0);
    for (b, batch) in batches.iter().enumerate() {
        let tags = batch_tags(batch, &tag_columns);
        let Some(buckets) = batch
            .column(layout.bucket())
            .as_any()
            .downcast_ref::<TimestampNanosecondArray>()
        else {
            continue;
        };
        // Each call's column, and a count's as integers, downcast once per batch.
        let values: Vec<(&ArrayRef, Option<&Int64Array>)> = (0..plan.counts.len())
            .map(|i| {
                let column = batch.column(layout.call(i));
                let count = plan.counts[i]
                    .then(|| column.as_any().downcast_ref())
                    .flatten();
                (column, count)
            })
            .collect();
        for row in 0..batch.num_rows() {
            let same_series = current
                .as_ref()
                .is_some_and(|(key, _)| row_key_is(key, &tags, row));
            if !same_series {
                if let Some((key, slots)) = current.take() {
                    found.insert(key, slots);
                }
                let key: Vec<String> = row_key(&tags, row);
                let slots = match found.remove(&key) {
                    Some(slots) => slots,
                    None => {
                        plan.budget.take(plan.times.len())?;
                        Slots {
                            rows: vec![EMPTY_BUCKET; plan.times.len()],
                            has_data: false,
                        }
                    }
                };
                current = Some((key, slots));
            }
            if buckets.is_null(row) || !has_data(&values, row) {
                continue;
            }
            let Some((_, slots)) = current.as_mut() else {
                continue;
            };
            slots.has_data = true;
            let offset = buckets.value(row).wrapping_sub(start);
            if offset >= 0 && offset % plan.width == 0 {
                let at = offset / plan.width;
                if let Some(slot) = usize::try_from(at)
                    .ok()
                    .and_then(|at| slots.rows.get_mut(at))
                {
                    *slot = (b as u32, row as u32);
                }
            }
        }
    }
    if let Some((key, slots)) = current {
        found.insert(key, slots);
    }
    let batches: Arc<[RecordBatch]> = batches.into();
    let columns: Arc<[usize]> = plan.shown.iter().map(|&i| layout.call(i)).collect();
    let zero_when_empty: Arc<[bool]> = plan.shown.iter().map(|&i| plan.counts[i]).collect();
    let mut times = plan.times.clone();
    if statement.order_desc {
        times.reverse();
    }
    let times: Arc<[i64]> = times.into();
    // The shown series' rows, one after another, in one list they share.
    let found: Vec<(Vec<String>, Slots)> = found
        .into_iter()
        .filter(|(_, slots)| slots.has_data)
        .collect();
    let mut rows: Vec<(u32, u32)> = Vec::with_capacity(found.len() * times.len());
    for (_, slots) in &found {
        let start = rows.len();
        rows.extend_from_slice(&slots.rows);
        if statement.order_desc {
            rows[start..].reverse();
        }
    }
    let rows: Arc<[(u32, u32)]> = rows.into();
    Ok(found
        .into_iter()
        .enumerate()
        .map(|(i, (key, _))| {
            let range = i * times.len()..(i + 1) * times.len();
            let mut series = new_series(grouping, key, projections);
            series.arrow = Some(ArrowRows::grid(
                Arc::clone(&batches),
                Arc::clone(&columns),
                &rows,
                range,
                &times,
                Arc::clone(&zero_when_empty),
            ));
            series
        })
        .collect())
}

/// Whether a bucket has data: a value of some call (with its column as integers when it is
/// a count) that is not null, nor a count of 0 (a group whose rows hold other fields only
/// is an empty bucket, as in InfluxDB).
fn has_data(values: &[(&ArrayRef, Option<&Int64Array>)], row: usize) -> bool {
    values.iter().any(|(column, count)| {
        let zero_count = count.is_some_and(|c| c.value(row) == 0);
        !column.is_null(row) && !zero_count
    })
}
