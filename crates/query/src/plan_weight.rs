//! Which physical plans go to the query threads (`query_runtime`) and which run where
//! their reader polls them.
//!
//! The hop to the query threads cost a point lookup over `/sql` 5% more CPU and, with four
//! clients keeping two cores busy, 12% of its rate (1,517 against 1,341 statements/s, the
//! thread wake-ups on either side of the hop). It is worth it for plans that can hold the
//! thread polling them, or flood its runtime with tasks, for long: a sort of every row (a
//! task per batch), a join's build side, a window over its whole input, an aggregate that
//! keeps every value. A plan stays on the caller when each of its operators does work
//! proportional to the batch in hand: scans (their reads are on the blocking pool),
//! filters, projections, limits, merges, repartitions, a top-k sort, aggregates whose
//! state per group has a fixed size (not a `DISTINCT`). Anything else, and any operator
//! this list does not know, goes to the query threads.
//!
//! Not covered: an expression that is slow on one batch (a long regular expression, a
//! `levenshtein` at its bound) still runs on the caller; the functions' own bounds
//! (`functions`) keep that to a batch's work.

use std::sync::Arc;

use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::union::UnionExec;

use crate::preagg::PreAggExec;
use crate::scan::StrataScanExec;

/// The largest `LIMIT` a sort may keep and stay on the caller: a top-k sort keeps that
/// many rows in a heap and sorts them once at its end.
const TOP_K_ON_CALLER: usize = 10_000;

/// Aggregates whose state per group has a fixed size: the work of one is the work of
/// reading its input.
const FIXED_STATE_AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "mean",
    "first_value",
    "last_value",
    "first",
    "last",
    "bool_and",
    "bool_or",
    "bit_and",
    "bit_or",
    "bit_xor",
    "stddev",
    "stddev_pop",
    "var",
    "var_samp",
    "var_pop",
];

/// Whether a poll of `plan` may hold its thread, or fill its runtime with tasks, for
/// longer than the batch in hand takes.
pub(crate) fn may_hold_a_thread(plan: &Arc<dyn ExecutionPlan>) -> bool {
    !streams_batch_by_batch(plan.as_ref()) || plan.children().into_iter().any(may_hold_a_thread)
}

/// Whether `plan`'s own work (its children aside) is proportional to the batch in hand.
fn streams_batch_by_batch(plan: &dyn ExecutionPlan) -> bool {
    if let Some(sort) = plan.downcast_ref::<SortExec>() {
        return sort.fetch().is_some_and(|k| k <= TOP_K_ON_CALLER);
    }
    if let Some(aggregate) = plan.downcast_ref::<AggregateExec>() {
        // With no aggregate it is a DISTINCT (`count(DISTINCT x)` plans one too): a group
        // per distinct input row, all emitted in one poll at the end.
        let aggregates = aggregate.aggr_expr();
        return !aggregates.is_empty()
            && aggregates.iter().all(|expr| {
                !expr.is_distinct() && FIXED_STATE_AGGREGATES.contains(&expr.fun().name())
            });
    }
    is::<StrataScanExec>(plan)
        || is::<PreAggExec>(plan)
        || is::<CooperativeExec>(plan)
        || is::<FilterExec>(plan)
        || is::<ProjectionExec>(plan)
        || is::<CoalescePartitionsExec>(plan)
        || is::<GlobalLimitExec>(plan)
        || is::<LocalLimitExec>(plan)
        || is::<RepartitionExec>(plan)
        || is::<SortPreservingMergeExec>(plan)
        || is::<UnionExec>(plan)
        || is::<EmptyExec>(plan)
        || is::<PlaceholderRowExec>(plan)
}

fn is<T: ExecutionPlan + 'static>(plan: &dyn ExecutionPlan) -> bool {
    plan.downcast_ref::<T>().is_some()
}

#[cfg(test)]
mod tests;
