//! Running a [`DirectPlan`]: each shard folded with the pre-aggregate path's [`Folder`],
//! the shards' groups merged, finished into values, sorted and limited, and built into one
//! record batch.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, RecordBatch, RecordBatchOptions, StringDictionaryBuilder, TimestampNanosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use strata_storage::Engine;

use super::shape::{Output, SortKey, sort_and_limit};
use super::{DirectPlan, MAX_GROUPS};
use crate::preagg::fold::{Folder, GroupStates};
use crate::preagg::plan::GroupKey;
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
    let shards = engine.shard_count();
    let small = plan.request.predicate.is_some()
        && plan.request.end.saturating_sub(plan.request.start) <= INLINE_SPAN;
    let mut per_shard = Vec::with_capacity(shards);
    if small {
        for shard in 0..shards {
            per_shard.push(fold(&engine, &plan, shard)?);
        }
    } else {
        let tasks: Vec<_> = (0..shards)
            .map(|shard| {
                let engine = Arc::clone(&engine);
                let plan = Arc::clone(&plan);
                tokio::task::spawn_blocking(move || fold(&engine, &plan, shard))
            })
            .collect();
        for task in tasks {
            per_shard.push(
                task.await
                    .map_err(|e| DataFusionError::External(Box::new(e)))??,
            );
        }
    }
    let Some(groups) = merge(per_shard, &plan) else {
        return Ok(None);
    };
    finish(groups, &plan).map(Some)
}

/// One shard's groups; `None` past [`MAX_GROUPS`].
fn fold(engine: &Engine, plan: &DirectPlan, shard: usize) -> DfResult<Option<Vec<GroupStates>>> {
    let mut folder = Folder::new(&plan.preagg);
    folder.fold_shard(engine, shard, &plan.request)?;
    if folder.group_count() > MAX_GROUPS {
        return Ok(None);
    }
    // Sorted here, in the shard's own task, so that the merge after the shards is linear.
    let keys = order_keys(plan);
    let mut groups = folder.into_groups();
    groups.sort_unstable_by(|a, b| full_order(a, b, &keys));
    Ok(Some(groups))
}

/// The statement's order, then the whole group key: a total order in which equal keys are
/// adjacent and the statement's order holds.
fn full_order(a: &GroupStates, b: &GroupStates, keys: &[(SortKey, bool, usize)]) -> Ordering {
    compare(a, b, keys)
        .then_with(|| a.tags.cmp(&b.tags))
        .then_with(|| a.buckets.cmp(&b.buckets))
}

/// The shards' groups merged by key; `None` past [`MAX_GROUPS`].
fn merge(per_shard: Vec<Option<Vec<GroupStates>>>, plan: &DirectPlan) -> Option<Vec<GroupStates>> {
    let mut shards = per_shard
        .into_iter()
        .collect::<Option<Vec<_>>>()?
        .into_iter();
    let mut merged = shards.next().unwrap_or_default();
    if plan.preagg.groups.is_empty() {
        // One group per shard, always: fold them into the first.
        let mut first = merged.pop()?;
        for group in shards.flatten() {
            merge_states(&mut first.states, group.states, plan);
        }
        return Some(vec![first]);
    }
    // Each shard's groups are sorted by `full_order`: a k-way merge keeps that order, and
    // equal keys meet as neighbours and are folded together, with no key hashed or copied;
    // `finish` then finds its rows already in order.
    let keys = order_keys(plan);
    let mut sources: Vec<std::vec::IntoIter<GroupStates>> = std::iter::once(merged)
        .chain(shards)
        .map(Vec::into_iter)
        .collect();
    let mut heads: Vec<Option<GroupStates>> = sources.iter_mut().map(Iterator::next).collect();
    let mut merged: Vec<GroupStates> = Vec::new();
    loop {
        let mut best: Option<usize> = None;
        for (i, head) in heads.iter().enumerate() {
            let Some(head) = head else { continue };
            let smaller = match best.and_then(|b| heads[b].as_ref()) {
                Some(current) => full_order(head, current, &keys) == Ordering::Less,
                None => true,
            };
            if smaller {
                best = Some(i);
            }
        }
        let Some(best) = best else { break };
        let Some(group) = std::mem::replace(&mut heads[best], sources[best].next()) else {
            break;
        };
        match merged.last_mut() {
            Some(last) if last.tags == group.tags && last.buckets == group.buckets => {
                merge_states(&mut last.states, group.states, plan);
            }
            _ => merged.push(group),
        }
    }
    if merged.len() > MAX_GROUPS {
        return None;
    }
    Some(merged)
}

fn merge_states(into: &mut [State], from: Vec<State>, plan: &DirectPlan) {
    for ((state, other), spec) in into.iter_mut().zip(from).zip(&plan.preagg.aggs) {
        state.merge(other, spec);
    }
}

/// Where group key `group` sits in a group: the index among its tags or its buckets.
fn key_slot(plan: &DirectPlan, group: usize) -> (bool, usize) {
    let groups = &plan.preagg.groups;
    let is_tag = matches!(groups[group], GroupKey::Tag(_));
    let slot = groups[..group]
        .iter()
        .filter(|g| matches!(g, GroupKey::Tag(_)) == is_tag)
        .count();
    (is_tag, slot)
}

fn compare(a: &GroupStates, b: &GroupStates, keys: &[(SortKey, bool, usize)]) -> Ordering {
    for (key, is_tag, slot) in keys {
        let ordering = if *is_tag {
            key.compare(a.tags[*slot].as_deref(), b.tags[*slot].as_deref())
        } else {
            key.compare(Some(a.buckets[*slot]), Some(b.buckets[*slot]))
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
    Ordering::Equal
}

/// The statement's ORDER BY keys with where each sits in a group.
fn order_keys(plan: &DirectPlan) -> Vec<(SortKey, bool, usize)> {
    plan.order
        .iter()
        .map(|key| {
            let (is_tag, slot) = key_slot(plan, key.group);
            (*key, is_tag, slot)
        })
        .collect()
}

/// Sorts, limits and builds the output batch.
fn finish(mut groups: Vec<GroupStates>, plan: &DirectPlan) -> DfResult<RecordBatch> {
    if !plan.order.is_empty() {
        let keys = order_keys(plan);
        sort_and_limit(&mut groups, plan.limit, |a, b| compare(a, b, &keys));
    }
    if let Some(limit) = plan.limit {
        groups.truncate(limit);
    }
    let rows = groups.len();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.outputs.len());
    let mut finals: Vec<Option<Vec<ScalarValue>>> = vec![None; plan.preagg.aggs.len()];
    // Final values per aggregate, taken out of the states once.
    for (agg, slot) in finals.iter_mut().enumerate() {
        let data_type = plan
            .outputs
            .iter()
            .find(|(o, _)| *o == Output::Agg(agg))
            .map(|(_, f)| f.data_type().clone())
            .ok_or_else(|| DataFusionError::Internal("direct plan output".into()))?;
        let plain = match &data_type {
            DataType::Dictionary(_, values) => values.as_ref().clone(),
            other => other.clone(),
        };
        let null = ScalarValue::try_from(&plain)?;
        *slot = Some(
            groups
                .iter_mut()
                .map(|g| std::mem::replace(&mut g.states[agg], State::Count(0)).final_value(&null))
                .collect(),
        );
    }
    for (output, field) in &plan.outputs {
        let array: ArrayRef = match output {
            Output::Group(group) => match key_slot(plan, *group) {
                (true, slot) => {
                    let mut builder = StringDictionaryBuilder::<Int32Type>::new();
                    for g in &groups {
                        builder.append_option(g.tags[slot].as_deref());
                    }
                    Arc::new(builder.finish())
                }
                (false, slot) => Arc::new(TimestampNanosecondArray::from_iter_values(
                    groups.iter().map(|g| g.buckets[slot]),
                )),
            },
            Output::Agg(agg) => {
                let values = finals[*agg].take().unwrap_or_default();
                if values.is_empty() {
                    datafusion::arrow::array::new_empty_array(field.data_type())
                } else {
                    ScalarValue::iter_to_array(values)?
                }
            }
        };
        let array = if array.data_type() == field.data_type() {
            array
        } else {
            cast(&array, field.data_type())?
        };
        columns.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(&plan.schema),
        columns,
        &options,
    )?)
}
