//! Select lists whose columns share a name. SQL allows them (`SELECT 1, 1`,
//! `SELECT host, host FROM cpu`, `SELECT *, host FROM cpu`), and so does Postgres; DataFusion
//! refuses a projection whose items it would name alike. It also counts the columns an
//! `ORDER BY` adds to a projection before they are dropped, so `SELECT time::date FROM cpu
//! ORDER BY time` was refused too: the cast is named after its operand.
//!
//! Only a statement DataFusion refused for this is planned again: every unnamed item of its
//! select lists gets an alias of its place, unique by construction, and the result's
//! columns are then named as DataFusion names the items without the aliases. Arrow's
//! schemas allow equal names; DataFusion's plans do not, so the names change only on the
//! way out ([`Renames`]). A statement that plans the first time pays nothing.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::sqlparser::ast::{Ident, Query, SelectItem, SetExpr};
use futures::StreamExt;

/// The start of the aliases given here; the item's place in its select list follows.
const ALIAS_PREFIX: &str = "__strata_item_";

/// Whether `error` is DataFusion's refusal of a projection whose items share a name.
pub(crate) fn is_duplicate_names(error: &DataFusionError) -> bool {
    match error {
        DataFusionError::Plan(message) => {
            message.starts_with("Projections require unique expression names")
        }
        DataFusionError::Context(_, inner) => is_duplicate_names(inner),
        DataFusionError::Diagnostic(_, inner) => is_duplicate_names(inner),
        // The branches of a set operation are planned apart, and their errors gathered.
        DataFusionError::Collection(errors) => errors.iter().any(is_duplicate_names),
        _ => false,
    }
}

/// Gives every unnamed item but a wildcard, in each select list of `query`'s body (the
/// branches of a `UNION` and the like, whose first names the result), the alias of its
/// place. Returns whether any was given.
pub(crate) fn alias_items(query: &mut Query) -> bool {
    alias_in(&mut query.body)
}

fn alias_in(body: &mut SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => {
            let mut given = false;
            let items = std::mem::take(&mut select.projection);
            select.projection = items
                .into_iter()
                .enumerate()
                .map(|(at, item)| match item {
                    SelectItem::UnnamedExpr(expr) => {
                        given = true;
                        SelectItem::ExprWithAlias {
                            expr,
                            alias: Ident::new(format!("{ALIAS_PREFIX}{at}")),
                        }
                    }
                    other => other,
                })
                .collect();
            given
        }
        SetExpr::SetOperation { left, right, .. } => {
            // Both sides: a branch refuses its own repeated names.
            let left = alias_in(left);
            alias_in(right) || left
        }
        SetExpr::Query(inner) => alias_items(inner),
        _ => false,
    }
}

/// The names the aliased columns of a plan take on the way out: DataFusion's own names of
/// the items without their aliases.
#[derive(Debug, Clone)]
pub(crate) struct Renames {
    /// (alias, name), in no order.
    names: Vec<(String, String)>,
}

impl Renames {
    /// The renames for `plan`, planned from a statement [`alias_items`] aliased: each alias
    /// names the expression it stands for where it is first given, which is in the first
    /// branch's select list (a plan is walked from its root, first input first).
    pub(crate) fn of(plan: &LogicalPlan) -> Self {
        let mut names: Vec<(String, String)> = Vec::new();
        let _ = plan.apply(|node| {
            if let LogicalPlan::Projection(projection) = node {
                for expr in &projection.expr {
                    if let Expr::Alias(alias) = expr
                        && alias.name.starts_with(ALIAS_PREFIX)
                        && !names.iter().any(|(known, _)| *known == alias.name)
                    {
                        names.push((alias.name.clone(), alias.expr.qualified_name().1));
                    }
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
        Self { names }
    }

    /// `schema` with its aliased columns renamed.
    pub(crate) fn schema(&self, schema: &Schema) -> SchemaRef {
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .map(|field| match self.name_of(field.name()) {
                Some(name) => field.as_ref().clone().with_name(name),
                None => field.as_ref().clone(),
            })
            .collect();
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
    }

    /// `stream` with its batches' columns renamed.
    pub(crate) fn stream(&self, stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
        let schema = self.schema(&stream.schema());
        let renamed = Arc::clone(&schema);
        let batches = stream.map(move |batch| {
            let batch = batch?;
            Ok(RecordBatch::try_new(
                Arc::clone(&renamed),
                batch.columns().to_vec(),
            )?)
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
    }

    fn name_of(&self, alias: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(known, _)| known == alias)
            .map(|(_, name)| name.as_str())
    }
}
