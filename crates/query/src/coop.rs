//! Yield points above joins, so that a statement can always be stopped.
//!
//! A DataFusion stream runs inside the poll of the task that reads it (the HTTP handler):
//! until some operator returns `Pending`, nothing else of that task runs — not the
//! statement's timeout check, and not the drop that cancels it when the client goes away.
//! DataFusion's own `EnsureCooperative` rule puts a yield point (a unit of Tokio's task
//! budget per batch) on every leaf, which bounds the work between yields for operators
//! that read about as many rows as they produce. A join does not: a cross join (or a
//! nested-loop or hash join on a skewed key) produces batch after batch from one batch of
//! its inputs, so an aggregate above it could run for minutes in one poll. This rule puts
//! a [`CooperativeExec`] above every operator with more than one input.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result as DfResult;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;

/// Wraps the output of every operator with several inputs in a [`CooperativeExec`].
#[derive(Debug, Default)]
pub(crate) struct CooperativeJoins;

impl PhysicalOptimizerRule for CooperativeJoins {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if node.children().len() < 2 {
                return Ok(Transformed::no(node));
            }
            Ok(Transformed::yes(
                Arc::new(CooperativeExec::new(node)) as Arc<dyn ExecutionPlan>
            ))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "strata_cooperative_joins"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
