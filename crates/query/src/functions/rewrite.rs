//! Gives one-argument `first(x)` / `last(x)` their time argument: the input's `time`
//! column, so `first(x)` means "x at the earliest time" without the user naming the column.
//! DataFusion keeps the expression's original name (`first(m.x)`) across the rewrite.

use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result as DfResult, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::prelude::Column;

/// Name of the time column of every Strata table.
const TIME: &str = "time";

/// The rewrite.
#[derive(Debug)]
pub(crate) struct AddTimeArgument;

impl FunctionRewrite for AddTimeArgument {
    fn name(&self) -> &str {
        "strata_first_last_time"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> DfResult<Transformed<Expr>> {
        let Expr::AggregateFunction(mut aggregate) = expr else {
            return Ok(Transformed::no(expr));
        };
        let name = aggregate.func.name();
        if !matches!(name, "first" | "last") || aggregate.params.args.len() != 1 {
            return Ok(Transformed::no(Expr::AggregateFunction(aggregate)));
        }
        let times: Vec<Column> = schema
            .columns()
            .into_iter()
            .filter(|c| c.name == TIME)
            .collect();
        let time = match times.as_slice() {
            [one] => Expr::Column(one.clone()),
            [] => {
                return plan_err!(
                    "{name}(x) orders by the table's time column, and there is none here; \
                     write {name}(x, <timestamp column>)"
                );
            }
            _ => {
                return plan_err!(
                    "{name}(x): more than one time column in scope; write {name}(x, t.time)"
                );
            }
        };
        aggregate.params.args.push(time);
        Ok(Transformed::yes(Expr::AggregateFunction(aggregate)))
    }
}
