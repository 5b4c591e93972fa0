//! SQL that DataFusion parses but refuses to plan, and that Strata plans again in a form
//! it takes: select lists whose columns share a name (`duplicate_names`), and `FETCH
//! FIRST n ROWS ONLY` (`fetch_first`). Only a refused statement is parsed a second time,
//! so a statement that plans the first time pays nothing.

use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;

use crate::duplicate_names::{self, Renames};
use crate::fetch_first;

/// Whether `error` is a refusal [`plan_again`] may get past.
pub(crate) fn is_refusal(error: &DataFusionError) -> bool {
    duplicate_names::is_duplicate_names(error) || fetch_first::is_fetch_refusal(error)
}

/// `text`, which DataFusion refused with `refusal`, planned again rewritten, and the names
/// its result takes where they differ from the plan's. When nothing could be rewritten or
/// the rewrite does not plan either, the error is `refusal`, about the statement as
/// written. It takes the refusal, so that the caller's future holds nothing of this path
/// but the box it awaits it in.
pub(crate) async fn plan_again(
    state: &SessionState,
    text: &str,
    refusal: DataFusionError,
) -> Result<(LogicalPlan, Option<Renames>), DataFusionError> {
    rewritten_plan(state, text, &refusal).await.ok_or(refusal)
}

async fn rewritten_plan(
    state: &SessionState,
    text: &str,
    refusal: &DataFusionError,
) -> Option<(LogicalPlan, Option<Renames>)> {
    let dialect = state.config().options().sql_parser.dialect;
    let mut statement = state.sql_to_statement(text, &dialect).ok()?;
    let DfStatement::Statement(tree) = &mut statement else {
        return None;
    };
    let fetched = fetch_first::fetch_as_limit(tree);
    // A `FETCH` is refused before the select list is looked at: the names may be refused
    // next, once the `FETCH` is a `LIMIT`.
    let mut aliased = duplicate_names::is_duplicate_names(refusal) && alias(tree);
    if !fetched && !aliased {
        return None;
    }
    let plan = match state.statement_to_plan(statement.clone()).await {
        Err(e) if !aliased && duplicate_names::is_duplicate_names(&e) => {
            let DfStatement::Statement(tree) = &mut statement else {
                return None;
            };
            aliased = alias(tree);
            if !aliased {
                return None;
            }
            state.statement_to_plan(statement).await.ok()?
        }
        planned => planned.ok()?,
    };
    let renames = aliased.then(|| Renames::of(&plan));
    Some((plan, renames))
}

/// [`duplicate_names::alias_items`] of a query; `false` for other statements.
fn alias(statement: &mut SqlStatement) -> bool {
    match statement {
        SqlStatement::Query(query) => duplicate_names::alias_items(query),
        _ => false,
    }
}
