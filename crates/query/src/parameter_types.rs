//! The types of a statement's parameters (`$1`, `$2`, …), for Describe on the Postgres
//! wire. DataFusion infers a parameter's type where it meets a column or a typed value
//! (`usage > $1`, `$1 + 1.5`); Postgres also takes it from a cast written on the parameter
//! itself (`$1::timestamptz`, `CAST($1 AS int)`), from `LIMIT $1` and `OFFSET $1`
//! (`bigint`), and from the other arguments of a function whose arguments share a type
//! (`generate_series(1, $1)`, `coalesce($1, v)`), which DataFusion leaves untyped. Clients that encode values by the types the
//! server describes (asyncpg, pgx) cannot send a number for a parameter described as
//! `unknown`: asyncpg refused `LIMIT $1` with `5` ("expected str, got int").

use std::collections::HashMap;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{Placeholder, ScalarFunction};
use datafusion::logical_expr::{Cast, Expr, ExprSchemable, LogicalPlan, TryCast};

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
        // The columns a node's expressions read: its input's, or its own for a leaf.
        let schema = node.inputs().first().map_or(node.schema(), |i| i.schema());
        node.apply_expressions(|expr| {
            expr.apply(|expr| {
                match expr {
                    Expr::ScalarFunction(ScalarFunction { func, args }) => {
                        for (placeholder, data_type) in
                            same_type_arguments(func.name(), args, schema)
                        {
                            imply(placeholder, &data_type);
                        }
                    }
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

/// The untyped parameters among the arguments of a function whose arguments share one type
/// (`coalesce($1, v)`, `generate_series(1, $1)`), each with the type of the first of those
/// arguments that has one, as Postgres resolves them. Other functions' arguments are left
/// untyped: `left($1, 3)` does not make `$1` an integer.
fn same_type_arguments<'e>(
    function: &str,
    args: &'e [Expr],
    schema: &DFSchema,
) -> Vec<(&'e Expr, DataType)> {
    // How many leading arguments share the type (the rest are steps or intervals).
    let shared = match function {
        "coalesce" | "nullif" | "greatest" | "least" => args.len(),
        "generate_series" | "range" => args.len().min(2),
        _ => return Vec::new(),
    };
    let args = &args[..shared];
    let untyped = |e: &Expr| matches!(e, Expr::Placeholder(Placeholder { field: None, .. }));
    let Some(data_type) = args
        .iter()
        .filter(|e| !untyped(e))
        .find_map(|e| e.get_type(schema).ok())
        .filter(|t| !t.is_null())
    else {
        return Vec::new();
    };
    args.iter()
        .filter(|e| untyped(e))
        .map(|e| (e, data_type.clone()))
        .collect()
}
