//! The direct path: statements of the common time-series shapes answered without
//! DataFusion's planner. Parsing, planning and optimizing a statement costs DataFusion about
//! 1.5 ms, far more than the read of a small aggregate takes; so the shapes of
//! [`shape`] over a WHERE clause of [`filter`] are recognized on sqlparser's tree, folded
//! per shard with the pre-aggregate path's `Folder`, then merged, finished, sorted and
//! limited here. Anything else, and every error, stays with DataFusion, so error messages
//! and positions are its own.

mod exec;
mod filter;
mod latest;
mod latest_group;
mod order;
mod parse;
mod shape;
mod top;

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::Result as DfResult;
use datafusion::sql::sqlparser::ast::Query;
use strata_storage::{Engine, ReadRequest};

use crate::preagg::plan::PreAggPlan;
use shape::{Output, SortKey};

/// Most groups a direct statement may build; past it DataFusion answers, whose memory pool
/// accounts for them.
pub(crate) const MAX_GROUPS: usize = 1 << 18;

/// A statement the direct path answers.
#[derive(Debug)]
pub(crate) struct DirectPlan {
    request: ReadRequest,
    preagg: PreAggPlan,
    outputs: Vec<(Output, datafusion::arrow::datatypes::Field)>,
    order: Vec<SortKey>,
    limit: Option<usize>,
    /// The latest row per group (DISTINCT ON … ORDER BY …, time DESC): built from the
    /// engine's latest row of each series (`latest.rs`) instead of folding every chunk.
    latest: bool,
    schema: SchemaRef,
}

/// The direct plan of `sql` with unqualified tables in `database`, when it has one.
pub(crate) fn plan(engine: &Engine, database: &str, sql: &str) -> Option<DirectPlan> {
    plan_query(engine, database, &*parse::query(sql)?)
}

/// The direct plan of `query`, sqlparser's tree of a statement, with unqualified tables in
/// `database`, when it has one.
pub(crate) fn plan_query(engine: &Engine, database: &str, query: &Query) -> Option<DirectPlan> {
    let select = parse::plain_select(query)?;
    let from = parse::from(select, engine, database)?;
    let shape = shape::shape(query, select, &from)?;
    let filter = filter::filter(select.selection.as_ref(), &from)?;
    let mut fields: Vec<_> = shape
        .aggs
        .iter()
        .filter_map(|a| a.field)
        .map(|(id, _)| id)
        .collect();
    fields.sort_unstable();
    fields.dedup();
    let request = ReadRequest {
        table: from.table.id,
        predicate: filter.predicate,
        start: filter.start,
        end: filter.end,
        // Only the aggregates' fields are decoded.
        fields: Some(fields),
    };
    let schema = Arc::new(Schema::new(
        shape
            .outputs
            .iter()
            .map(|(_, f)| f.clone())
            .collect::<Vec<_>>(),
    ));
    Some(DirectPlan {
        request,
        preagg: PreAggPlan {
            groups: shape.groups,
            aggs: shape.aggs,
        },
        outputs: shape.outputs,
        order: shape.order,
        limit: shape.limit,
        latest: shape.latest,
        schema,
    })
}

impl DirectPlan {
    /// The columns of the answer.
    pub(crate) fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The answer; `Ok(None)` when it has too many groups for the direct path.
    pub(crate) async fn execute(
        self: Arc<Self>,
        engine: Arc<Engine>,
    ) -> DfResult<Option<RecordBatch>> {
        exec::execute(engine, self).await
    }
}
