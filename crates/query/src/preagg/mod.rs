//! The pre-aggregate path: aggregates answered from the blocks' stored pre-aggregates
//! (count, sum, min, max, first, last per block) wherever a block lies wholly inside the
//! query's range and one time bucket, and from decoded rows elsewhere — TDengine's trick
//! that makes whole-table aggregates cost a read of the block index, not of the data.
//!
//! [`PreAggregateRule`] is a physical optimizer rule. It finds DataFusion's raw-input
//! aggregation (`AggregateExec` in `Partial` or `Single` mode) reading a `StrataScanExec`
//! directly, and when [`plan::analyze`] accepts it, replaces it with a [`PreAggExec`]
//! producing the very same partial states (`Partial`), or with a `Final` aggregation over
//! one (`Single`). DataFusion still merges the states and computes final values, so
//! grouping, `HAVING`, ordering and limits above are untouched. Results equal DataFusion's
//! own; float sums may differ in the last bits, as they do between DataFusion runs with
//! different batch boundaries.

pub(crate) mod bucket;
mod exec;
pub(crate) mod fold;
pub(crate) mod groups;
pub(crate) mod plan;
mod row_value;
pub(crate) mod state;
mod values;

use std::sync::Arc;

use datafusion::common::Result as DfResult;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::config::ConfigOptions;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;

pub use exec::PreAggExec;

use crate::scan::StrataScanExec;

/// Replaces raw-input aggregations of Strata tables with [`PreAggExec`].
#[derive(Debug, Default)]
pub(crate) struct PreAggregateRule;

impl PhysicalOptimizerRule for PreAggregateRule {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            let Some(aggregate) = node.downcast_ref::<AggregateExec>() else {
                return Ok(Transformed::no(node));
            };
            match rewrite(aggregate)? {
                Some(replacement) => Ok(Transformed::yes(replacement)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "strata_pre_aggregate"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn rewrite(aggregate: &AggregateExec) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
    let mode = *aggregate.mode();
    if !matches!(mode, AggregateMode::Partial | AggregateMode::Single) {
        return Ok(None);
    }
    let Some(scan) = aggregate.input().downcast_ref::<StrataScanExec>() else {
        return Ok(None);
    };
    let Some(plan) = plan::analyze(aggregate, scan) else {
        return Ok(None);
    };
    let partial_schema = match mode {
        AggregateMode::Partial => aggregate.schema(),
        // The schema a Partial aggregation of the same input would have.
        _ => AggregateExec::try_new(
            AggregateMode::Partial,
            aggregate.group_expr().clone(),
            aggregate.aggr_expr().to_vec(),
            aggregate.filter_expr().to_vec(),
            Arc::clone(aggregate.input()),
            aggregate.input_schema(),
        )?
        .schema(),
    };
    let pre = Arc::new(PreAggExec::new(
        Arc::clone(scan.engine()),
        Arc::clone(scan.table()),
        scan.request().clone(),
        plan,
        partial_schema,
    ));
    if mode == AggregateMode::Partial {
        return Ok(Some(pre));
    }
    let input: Arc<dyn ExecutionPlan> = if pre.properties().partitioning.partition_count() > 1 {
        Arc::new(CoalescePartitionsExec::new(pre))
    } else {
        pre
    };
    let last = AggregateExec::try_new(
        AggregateMode::Final,
        aggregate.group_expr().as_final(),
        aggregate.aggr_expr().to_vec(),
        aggregate.filter_expr().to_vec(),
        input,
        aggregate.input_schema(),
    )?;
    Ok(Some(Arc::new(last)))
}
