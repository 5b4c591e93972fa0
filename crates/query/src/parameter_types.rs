//! The types of a statement's parameters (`$1`, `$2`, …), for Describe on the Postgres
//! wire. DataFusion infers a parameter's type where it meets a column or a typed value
//! (`usage > $1`, `$1 + 1.5`); Postgres also takes it from a cast written on the parameter
//! itself (`$1::timestamptz`, `CAST($1 AS int)`) and from `LIMIT $1` and `OFFSET $1`
//! (`bigint`), which DataFusion leaves untyped. Clients that encode values by the types the
//! server describes (asyncpg, pgx) cannot send a number for a parameter described as
//! `unknown`: asyncpg refused `LIMIT $1` with `5` ("expected str, got int").

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::{Cast, Expr, LogicalPlan, TryCast};

/// Each parameter of `plan` by its name (`$1`) with its type: the one DataFusion inferred
/// at any of its uses, else the one its first own cast or its place in `LIMIT`/`OFFSET`
/// gives it, else `None`.
pub(crate) fn parameter_types(
    plan: &LogicalPlan,
) -> Result<HashMap<String, Option<DataType>>, DataFusionError> {
    // DataFusion's list checks that inferred types agree, but a use it could not type
    // (inside a cast) overwrites the type another use gave: only its names are kept.
    let mut types = plan.get_parameter_types()?;
    let mut inferred: HashMap<String, DataType> = HashMap::new();
    let mut implied: HashMap<String, DataType> = HashMap::new();
    let mut imply = |expr: &Expr, data_type: &DataType| {
        if let Expr::Placeholder(Placeholder { id, field: None }) = expr {
            // The first use that implies a type wins, as in Postgres.
            implied
                .entry(id.clone())
                .or_insert_with(|| data_type.clone());
        }
    };
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Limit(limit) = node {
            for bound in [&limit.skip, &limit.fetch].into_iter().flatten() {
                imply(bound, &DataType::Int64);
            }
        }
        node.apply_expressions(|expr| {
            expr.apply(|expr| {
                match expr {
                    Expr::Placeholder(Placeholder {
                        id,
                        field: Some(field),
                    }) => {
                        inferred
                            .entry(id.clone())
                            .or_insert_with(|| field.data_type().clone());
                    }
                    Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                        imply(expr, field.data_type())
                    }
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    for (id, data_type) in types.iter_mut() {
        if data_type.is_none() {
            *data_type = inferred.get(id).or_else(|| implied.get(id)).cloned();
        }
    }
    Ok(types)
}
