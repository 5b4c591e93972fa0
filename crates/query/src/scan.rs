//! [`StrataScanExec`]: the physical scan of one table, one DataFusion partition per shard.
//!
//! `execute(partition = shard)` starts [`Engine::scan_shard_each`] on tokio's blocking pool
//! and returns a stream of its batches, projected to the plan's columns and cut at the
//! pushed-down limit, passed through a channel of two batches: results of any size stream
//! in constant memory, and the read stops as soon as the consumer goes away. DataFusion
//! polls the partitions on its own threads, so shards are read in parallel.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions, new_null_array};
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

/// Rows per record batch asked of the engine: DataFusion's default batch size.
pub const SCAN_BATCH_ROWS: usize = 8192;

/// Scans one Strata table: the engine's read request, one partition per shard.
pub struct StrataScanExec {
    engine: Arc<Engine>,
    table: Arc<TableSchema>,
    request: ReadRequest,
    /// Output columns: a projection of the table's schema.
    schema: SchemaRef,
    limit: Option<usize>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for StrataScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StrataScanExec")
            .field("table", &self.table.name)
            .field("request", &self.request)
            .field("limit", &self.limit)
            .finish()
    }
}

impl StrataScanExec {
    /// A scan of `table` answering `request`, producing `schema`'s columns (a projection of
    /// the table's Arrow schema), at most `limit` rows per shard.
    pub fn new(
        engine: Arc<Engine>,
        table: Arc<TableSchema>,
        request: ReadRequest,
        schema: SchemaRef,
        limit: Option<usize>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&schema)),
            Partitioning::UnknownPartitioning(engine.shard_count().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Self {
            engine,
            table,
            request,
            schema,
            limit,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The engine this scan reads.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The table this scan reads, as its schema was when planned.
    pub fn table(&self) -> &Arc<TableSchema> {
        &self.table
    }

    /// The engine request this scan makes of every shard.
    pub fn request(&self) -> &ReadRequest {
        &self.request
    }

    /// The per-shard row limit, if one was pushed down.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    fn field_names(&self) -> String {
        match &self.request.fields {
            None => "all".to_string(),
            Some(ids) => {
                let names: Vec<&str> = self
                    .table
                    .fields
                    .iter()
                    .filter(|f| ids.contains(&f.id))
                    .map(|f| f.name.as_str())
                    .collect();
                format!("[{}]", names.join(", "))
            }
        }
    }
}

impl DisplayAs for StrataScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.request;
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "StrataScanExec: table={}.{}, shards={}, time={}, fields={}",
                    self.table.database,
                    self.table.name,
                    self.engine.shard_count(),
                    time_range(r),
                    self.field_names(),
                )?;
                if let Some(p) = &r.predicate {
                    write!(f, ", predicate={p:?}")?;
                }
                if let Some(limit) = self.limit {
                    write!(f, ", limit={limit}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "table={}", self.table.name),
        }
    }
}

impl ExecutionPlan for StrataScanExec {
    fn name(&self) -> &str {
        "StrataScanExec"
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
                "StrataScanExec is a leaf and takes no children".into(),
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
        let schema = Arc::clone(&self.schema);
        let limit = self.limit;
        let output_rows = MetricBuilder::new(&self.metrics).output_rows(partition);
        let out_schema = Arc::clone(&schema);
        let empty =
            request.start >= request.end || partition >= engine.shard_count() || limit == Some(0);
        if empty {
            return Ok(Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::empty(),
            )));
        }
        // The shard is read on the blocking pool and handed over batch by batch; the small
        // channel keeps the reader at most a couple of batches ahead of the consumer, and a
        // dropped consumer (a satisfied LIMIT, a cancelled query) stops the read.
        let (sender, receiver) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(2);
        let reader = tokio::task::spawn_blocking(move || {
            let mut remaining = limit.unwrap_or(usize::MAX);
            let result =
                engine.scan_shard_each(partition, &request, SCAN_BATCH_ROWS, &mut |batch| {
                    let batch = match project(batch, &out_schema, remaining) {
                        Ok(batch) => batch,
                        Err(e) => {
                            // Stop reading either way; the consumer sees the error if listening.
                            let _ = sender.blocking_send(Err(e));
                            return false;
                        }
                    };
                    remaining -= batch.num_rows();
                    output_rows.add(batch.num_rows());
                    sender.blocking_send(Ok(batch)).is_ok() && remaining > 0
                });
            if let Err(e) = result {
                let _ = sender.blocking_send(Err(DataFusionError::External(Box::new(e))));
            }
        });
        // The reader's own failure (a panic) surfaces as an error, not a short result.
        let stream = futures::stream::unfold(
            (receiver, Some(reader)),
            |(mut receiver, reader)| async move {
                match receiver.recv().await {
                    Some(item) => Some((item, (receiver, reader))),
                    None => match reader?.await {
                        Ok(()) => None,
                        Err(e) => Some((
                            Err(DataFusionError::External(Box::new(e))),
                            (receiver, None),
                        )),
                    },
                }
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            stream.boxed(),
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// A request's time range as plans show it: `[start, end)`, open ends as `-∞` and `∞`.
pub(crate) fn time_range(request: &ReadRequest) -> String {
    let bound = |v: i64, open: i64, text: &str| {
        if v == open {
            text.to_string()
        } else {
            v.to_string()
        }
    };
    format!(
        "[{}, {})",
        bound(request.start, i64::MIN, "-∞"),
        bound(request.end, i64::MAX, "∞")
    )
}

/// One engine batch (every tag, the asked-for fields, as the catalog was when read)
/// rearranged into `schema`'s columns and cut to at most `limit` rows. Columns are matched
/// by name; a column the batch lacks comes out as nulls.
fn project(batch: RecordBatch, schema: &SchemaRef, limit: usize) -> DfResult<RecordBatch> {
    let batch = if batch.num_rows() > limit {
        batch.slice(0, limit)
    } else {
        batch
    };
    let rows = batch.num_rows();
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|field| {
            batch
                .column_by_name(field.name())
                .cloned()
                .unwrap_or_else(|| new_null_array(field.data_type(), rows))
        })
        .collect();
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &options,
    )?)
}
