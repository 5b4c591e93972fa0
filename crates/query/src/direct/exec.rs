//! Running a [`DirectPlan`]: each shard folded with the pre-aggregate path's [`Folder`]
//! (over a narrower range first for a top-n over time buckets, see [`super::top`]), the
//! shards' groups merged, finished into values, sorted and limited, and built into one
//! record batch.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    RecordBatchOptions, StringArray, TimestampNanosecondArray, new_empty_array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use strata_storage::{Engine, ReadRequest};

use super::shape::Output;
use super::top::TopBuckets;
use super::{DirectPlan, MAX_GROUPS, order};
use crate::preagg::fold::Folder;
use crate::preagg::groups::Groups;
use crate::preagg::state::State;

/// Nanoseconds in a day: tag-filtered reads over at most this span are small enough to run
/// on the calling task, where a hand-off to the blocking pool would cost more than the read.
const INLINE_SPAN: i64 = 86_400_000_000_000;

/// The plan's answer; `Ok(None)` when it has more than [`MAX_GROUPS`] groups, for DataFusion
/// (whose memory pool accounts for them) to answer instead.
pub(crate) async fn execute(
    engine: Arc<Engine>,
    plan: Arc<DirectPlan>,
) -> DfResult<Option<RecordBatch>> {
    if plan.latest {
        return tokio::task::spawn_blocking(move || super::latest::latest_batch(&engine, &plan))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
    }
    // No row is older than the oldest part or memtable in range: the range may start
    // there, which gives an ascending top-n the bound it narrows from.
    let mut whole = plan.request.clone();
    if TopBuckets::wants_start(&plan)
        && let Some(earliest) = engine.earliest_time(&whole)
    {
        whole.start = earliest;
    }
    let groups = match TopBuckets::of(&plan, &whole) {
        Some(top) => {
            let mut attempt = 0;
            loop {
                let Some(request) = top.narrowed(&whole, attempt) else {
                    break fold_all(&engine, &plan, whole).await?;
                };
                match fold_all(&engine, &plan, request).await? {
                    Some(groups) if groups.len() >= top.rows => break Some(groups),
                    // Too few groups: wider. Too many: let the whole request decide.
                    Some(_) => attempt += 1,
                    None => break fold_all(&engine, &plan, whole).await?,
                }
            }
        }
        None => fold_all(&engine, &plan, whole).await?,
    };
    let Some(groups) = groups else {
        return Ok(None);
    };
    finish(groups, &plan).map(Some)
}

/// The groups of every shard for `request` (the plan's, or a narrower one), merged; `None`
/// past [`MAX_GROUPS`].
async fn fold_all(
    engine: &Arc<Engine>,
    plan: &Arc<DirectPlan>,
    request: ReadRequest,
) -> DfResult<Option<Groups>> {
    let shards = engine.shard_count();
    let small =
        request.predicate.is_some() && request.end.saturating_sub(request.start) <= INLINE_SPAN;
    let mut per_shard = Vec::with_capacity(shards);
    if small {
        for shard in 0..shards {
            per_shard.push(fold(engine, plan, &request, shard)?);
        }
    } else {
        let request = Arc::new(request);
        let tasks: Vec<_> = (0..shards)
            .map(|shard| {
                let engine = Arc::clone(engine);
                let plan = Arc::clone(plan);
                let request = Arc::clone(&request);
                tokio::task::spawn_blocking(move || fold(&engine, &plan, &request, shard))
            })
            .collect();
        for task in tasks {
            per_shard.push(
                task.await
                    .map_err(|e| DataFusionError::External(Box::new(e)))??,
            );
        }
    }
    Ok(merge(per_shard, plan))
}

/// One shard's groups; `None` past [`MAX_GROUPS`].
fn fold(
    engine: &Engine,
    plan: &DirectPlan,
    request: &ReadRequest,
    shard: usize,
) -> DfResult<Option<Groups>> {
    let mut folder = Folder::new(&plan.preagg, request.start, request.end);
    folder.fold_shard(engine, shard, request)?;
    if folder.group_count() > MAX_GROUPS {
        return Ok(None);
    }
    Ok(Some(folder.into_groups()))
}

/// The shards' groups merged into the first's; `None` past [`MAX_GROUPS`].
fn merge(per_shard: Vec<Option<Groups>>, plan: &DirectPlan) -> Option<Groups> {
    let mut shards = per_shard.into_iter();
    let mut merged = shards.next()??;
    for groups in shards {
        merged.absorb(groups?, &plan.preagg.aggs);
        if merged.len() > MAX_GROUPS {
            return None;
        }
    }
    Some(merged)
}

/// Sorts, limits and builds the output batch.
fn finish(groups: Groups, plan: &DirectPlan) -> DfResult<RecordBatch> {
    let (order, ranks) = order::sorted(&groups, plan);
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.outputs.len());
    for (output, field) in &plan.outputs {
        let array: ArrayRef = match output {
            Output::Group(group) => match order::key_slot(plan, *group) {
                (true, slot) => {
                    let ranks = &ranks[slot];
                    let keys: Int32Array = order
                        .iter()
                        .map(|g| {
                            ranks.ranks[groups.tags_of(*g as usize) as usize].map(|r| r as i32)
                        })
                        .collect();
                    let values = StringArray::from(ranks.values.clone());
                    Arc::new(DictionaryArray::<Int32Type>::try_new(
                        keys,
                        Arc::new(values),
                    )?)
                }
                (false, slot) => Arc::new(TimestampNanosecondArray::from_iter_values(
                    order.iter().map(|g| groups.buckets_of(*g as usize)[slot]),
                )),
            },
            Output::Agg(agg) => agg_column(&groups, &order, *agg, field.data_type())?,
        };
        let array = if array.data_type() == field.data_type() {
            array
        } else {
            cast(&array, field.data_type())?
        };
        columns.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(order.len()));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(&plan.schema),
        columns,
        &options,
    )?)
}

/// The final values of aggregate `agg` of the groups `order`, as an array of (about)
/// `data_type`: averages and counts straight into typed arrays, other aggregates through
/// their scalar values.
fn agg_column(
    groups: &Groups,
    order: &[u32],
    agg: usize,
    data_type: &DataType,
) -> DfResult<ArrayRef> {
    if order.is_empty() {
        return Ok(new_empty_array(data_type));
    }
    let state = |g: &u32| &groups.states_of(*g as usize)[agg];
    match state(&order[0]) {
        State::Avg { .. } => {
            let values: Float64Array = order
                .iter()
                .map(|g| match state(g) {
                    State::Avg { count, sum } if *count > 0 => Some(sum / *count as f64),
                    _ => None,
                })
                .collect();
            return Ok(Arc::new(values));
        }
        State::Count(_) => {
            let values: Int64Array = order
                .iter()
                .map(|g| match state(g) {
                    State::Count(n) => Some(*n),
                    _ => None,
                })
                .collect();
            return Ok(Arc::new(values));
        }
        _ => {}
    }
    let plain = match data_type {
        DataType::Dictionary(_, values) => values.as_ref().clone(),
        other => other.clone(),
    };
    let null = ScalarValue::try_from(&plain)?;
    ScalarValue::iter_to_array(order.iter().map(|g| state(g).final_value(&null)))
}
