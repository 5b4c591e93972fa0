//! `generate_series(…)` in a select list, as Postgres runs it: one row per value. In
//! DataFusion the function there gives one list per row (it is a table function in `FROM`),
//! so `SELECT generate_series(1, 3)` answered `[1, 2, 3]` in one row where Postgres
//! answers three rows, and `SELECT generate_series(now() - interval '1 day', now(),
//! interval '1 hour') AS t` (the Postgres idiom for a time axis) one list. Each select item
//! that is such a call becomes `unnest(generate_series(…))`, named `generate_series` as in
//! Postgres unless the item has its own name. Several such items in one list are zipped,
//! the shorter padded with NULLs, as in Postgres 10 and later; with a `FROM`, each row
//! repeats once per value, as there.
//!
//! Only a call that is a select item is rewritten (not one inside an expression), and only
//! in statements whose text names `generate_series`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, Select, SelectItem, VisitMut, VisitorMut,
};

use super::from_functions::rewritten;
use super::sql_text::contains_ignore_ascii_case;

const SERIES: &str = "generate_series";

/// `sql` with its select-list `generate_series` calls unnested, if it has any.
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    if !contains_ignore_ascii_case(sql, SERIES) {
        return None;
    }
    rewritten(sql, |statements| {
        let mut visitor = Unnest { changed: false };
        let _ = statements.visit(&mut visitor);
        visitor.changed
    })
}

struct Unnest {
    changed: bool,
}

impl VisitorMut for Unnest {
    type Break = ();

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        for item in &mut select.projection {
            let (expr, alias) = match item {
                SelectItem::UnnamedExpr(expr) => (expr.clone(), Ident::new(SERIES)),
                SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), alias.clone()),
                _ => continue,
            };
            if !is_series_call(&expr) {
                continue;
            }
            *item = SelectItem::ExprWithAlias {
                expr: unnest(expr),
                alias,
            };
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// Whether `expr` is a call of `generate_series` (or `pg_catalog.generate_series`).
fn is_series_call(expr: &Expr) -> bool {
    let Expr::Function(Function { name, .. }) = expr else {
        return false;
    };
    let parts = &name.0;
    let last = parts.last().map(ToString::to_string).unwrap_or_default();
    last.eq_ignore_ascii_case(SERIES)
        && (parts.len() == 1 || parts[0].to_string().eq_ignore_ascii_case("pg_catalog"))
}

/// `unnest(expr)`.
fn unnest(expr: Expr) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("unnest")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))],
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn select_items_that_are_series_are_unnested() {
        assert_eq!(
            rewrite("SELECT generate_series(1, 3)").as_deref(),
            Some("SELECT unnest(generate_series(1, 3)) AS generate_series")
        );
        assert_eq!(
            rewrite(
                "select host, pg_catalog.generate_series(now() - interval '1 hour', now(), \
                 interval '10 minutes') as t from cpu"
            )
            .as_deref(),
            Some(
                "SELECT host, unnest(pg_catalog.generate_series(now() - INTERVAL '1 hour', now(), \
                 INTERVAL '10 minutes')) AS t FROM cpu"
            )
        );
        // In FROM it is a table already; inside an expression or a string it is left alone.
        for kept in [
            "SELECT value FROM generate_series(1, 3)",
            "SELECT cardinality(generate_series(1, 3))",
            "SELECT 'generate_series(1, 3)'",
            "SELECT my.generate_series(1)",
        ] {
            assert_eq!(rewrite(kept), None, "{kept}");
        }
    }
}
