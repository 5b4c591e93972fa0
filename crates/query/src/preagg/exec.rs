//! [`PreAggExec`]: DataFusion's partial aggregation of a Strata table, computed from block
//! pre-aggregates where blocks allow and from decoded rows elsewhere. One partition per
//! shard, each producing one batch of partial states.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;
use strata_storage::catalog::TableSchema;
use strata_storage::{Engine, ReadRequest};

use super::fold::Folder;
use super::plan::{GroupKey, PreAggPlan};
use crate::scan::time_range;

/// Partial aggregation straight from the storage engine.
pub struct PreAggExec {
    engine: Arc<Engine>,
    table: Arc<TableSchema>,
    request: ReadRequest,
    plan: Arc<PreAggPlan>,
    /// The partial aggregate's output: group columns, then each aggregate's state.
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for PreAggExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreAggExec")
            .field("table", &self.table.name)
            .field("request", &self.request)
            .field("plan", &self.plan)
            .finish()
    }
}

impl PreAggExec {
    pub(crate) fn new(
        engine: Arc<Engine>,
        table: Arc<TableSchema>,
        request: ReadRequest,
        plan: PreAggPlan,
        schema: SchemaRef,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(engine.shard_count().max(1)),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            engine,
            table,
            request,
            plan: Arc::new(plan),
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl DisplayAs for PreAggExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let groups: Vec<String> = self
                    .plan
                    .groups
                    .iter()
                    .map(|g| match g {
                        GroupKey::Tag(name) => name.clone(),
                        GroupKey::Time(key) => key.to_string(),
                    })
                    .collect();
                let aggs: Vec<String> = self
                    .plan
                    .aggs
                    .iter()
                    .map(|a| format!("{:?}", a.kind))
                    .collect();
                let r = &self.request;
                write!(
                    f,
                    "StrataPreAggExec: table={}.{}, time={}, groups=[{}], aggregates=[{}]",
                    self.table.database,
                    self.table.name,
                    time_range(r),
                    groups.join(", "),
                    aggs.join(", "),
                )?;
                if let Some(p) = &r.predicate {
                    write!(f, ", predicate={p:?}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "table={}", self.table.name),
        }
    }
}

impl ExecutionPlan for PreAggExec {
    fn name(&self) -> &str {
        "StrataPreAggExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "StrataPreAggExec is a leaf and takes no children".into(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let engine = Arc::clone(&self.engine);
        let request = self.request.clone();
        let plan = Arc::clone(&self.plan);
        let schema = Arc::clone(&self.schema);
        let out_schema = Arc::clone(&schema);
        let output_rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        // How much was answered from pre-aggregates and how much decoded: EXPLAIN ANALYZE.
        let chunks_preaggregated =
            MetricBuilder::new(&self.metrics).counter("chunks_preaggregated", partition);
        let rows_decoded = MetricBuilder::new(&self.metrics).counter("rows_decoded", partition);
        let batch = futures::stream::once(async move {
            let batch = tokio::task::spawn_blocking(move || {
                let mut folder = Folder::new(&plan, request.start, request.end);
                folder.fold_shard(&engine, partition, &request)?;
                chunks_preaggregated.add(folder.chunks_preaggregated);
                rows_decoded.add(folder.rows_decoded);
                folder.finish(&out_schema)
            })
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))??;
            output_rows.add(batch.num_rows());
            Ok(batch)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            batch.boxed(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}
