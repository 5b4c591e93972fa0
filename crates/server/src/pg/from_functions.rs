//! Two Postgres forms that metadata queries use (Grafana's table and column lists split
//! `search_path` with them), made plannable by DataFusion:
//! - a function called in `FROM` with an alias names one column: `generate_series(1, n)
//!   AS i` then `s[i]`, `string_to_array(x, ',') s` then `s[i]`. Each becomes a derived
//!   table with that column: `(SELECT value AS i FROM generate_series(1, n)) AS i`,
//!   `(SELECT string_to_array(x, ',') AS s) AS s`;
//! - `user` is `current_user`, the one role `strata`;
//! - `ORDER BY` with a subquery (DataFusion plans subqueries in filters and projections
//!   only): the ordering values become hidden columns of a derived table, ordered outside;
//! - `x IN (SELECT y …)` outside a `WHERE` (DataFusion plans `IN` subqueries in filters
//!   only) becomes `array_has((SELECT array_agg(y) …), x)`.
//!
//! Only statements that read `information_schema` or `pg_catalog` are touched: in others
//! `user` may well be a column.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident,
    ObjectName, OrderByKind, Query, Select, SelectItem, SetExpr, Statement, TableFactor, Value,
    VisitMut, VisitorMut, visit_expressions, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::sql_text::contains_ignore_ascii_case;

/// Table functions DataFusion has, whose columns are already named.
const TABLE_FUNCTIONS: &[&str] = &["range", "unnest"];

/// `sql` with those forms rewritten, if it is a metadata query that has any.
pub(crate) fn rewrite(sql: &str) -> Option<String> {
    if !contains_ignore_ascii_case(sql, "information_schema")
        && !contains_ignore_ascii_case(sql, "pg_catalog")
    {
        return None;
    }
    rewritten(sql, |statements| {
        let mut visitor = Rewriter { changed: false };
        let _ = statements.visit(&mut visitor);
        visitor.changed
    })
}

/// `sql` parsed, changed in place by `change`, and printed again if `change` says it
/// changed anything; `None` when it did not, or when `sql` does not parse.
pub(crate) fn rewritten(
    sql: &str,
    change: impl FnOnce(&mut Vec<Statement>) -> bool,
) -> Option<String> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    change(&mut statements).then(|| {
        statements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

struct Rewriter {
    changed: bool,
}

impl VisitorMut for Rewriter {
    type Break = ();

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(ordered) = order_outside(query) {
            *query = ordered;
            self.changed = true;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            args: Some(args),
            alias: Some(alias),
            ..
        } = factor
            && alias.columns.is_empty()
        {
            let function = name.to_string();
            let lower = function.to_ascii_lowercase();
            if TABLE_FUNCTIONS.contains(&lower.as_str()) {
                return ControlFlow::Continue(());
            }
            let arguments = args
                .args
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            let column = &alias.name;
            let derived = if lower == "generate_series" {
                format!("(SELECT value AS {column} FROM {function}({arguments})) AS {column}")
            } else {
                format!("(SELECT {function}({arguments}) AS {column}) AS {column}")
            };
            if let Ok(replacement) = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(&derived)
                .and_then(|mut p| p.parse_table_factor())
            {
                *factor = replacement;
                self.changed = true;
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        for item in &mut select.projection {
            if let SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } = item {
                self.changed |= in_subqueries_as_arrays(e);
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        // An unquoted `user`, parsed as a name or as a call without parentheses.
        let is_user = matches!(expr, Expr::Identifier(_) | Expr::Function(_))
            && expr.to_string().eq_ignore_ascii_case("user");
        if is_user {
            // The one role (sqlparser prints any `current_user` call without parentheses).
            *expr = Expr::value(Value::SingleQuotedString(
                strata_query::pg_catalog::OWNER_NAME.to_owned(),
            ));
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// `query` as a derived table with its subquery-bearing `ORDER BY` values as hidden
/// columns, ordered outside; `None` when it orders by no subquery, or by something the
/// outside cannot name (a column not in its output).
fn order_outside(query: &Query) -> Option<Query> {
    let OrderByKind::Expressions(items) = &query.order_by.as_ref()?.kind else {
        return None;
    };
    if !items.iter().any(|item| has_subquery(&item.expr)) {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let names = select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.to_string()),
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.to_string()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    let mut inner = select.clone();
    let mut order = Vec::with_capacity(items.len());
    for (k, item) in items.iter().enumerate() {
        if has_subquery(&item.expr) {
            let alias = Ident::new(format!("strata_order_{k}"));
            // Now in a projection: an `IN` subquery there needs the array form.
            let mut moved = item.expr.clone();
            in_subqueries_as_arrays(&mut moved);
            inner.projection.push(SelectItem::ExprWithAlias {
                expr: moved,
                alias: alias.clone(),
            });
            let mut outside = item.clone();
            outside.expr = Expr::Identifier(alias);
            order.push(outside.to_string());
        } else if matches!(item.expr, Expr::Value(_)) || names.contains(&item.expr.to_string()) {
            order.push(item.to_string());
        } else {
            return None;
        }
    }
    let limit = query
        .limit_clause
        .as_ref()
        .map_or_else(String::new, |l| l.to_string());
    let text = format!(
        "SELECT {} FROM ({inner}) AS strata_ordered ORDER BY {}{limit}",
        names.join(", "),
        order.join(", ")
    );
    match Parser::parse_sql(&PostgreSqlDialect {}, &text)
        .ok()?
        .pop()?
    {
        Statement::Query(ordered) => Some(*ordered),
        _ => None,
    }
}

/// Rewrites each `x [NOT] IN (SELECT y FROM …)` within `expr` as
/// `[NOT] array_has((SELECT array_agg(y) FROM …), x)`; whether it rewrote any.
fn in_subqueries_as_arrays(expr: &mut Expr) -> bool {
    let mut changed = false;
    let _ = visit_expressions_mut(expr, |e| {
        if let Expr::InSubquery {
            expr: needle,
            subquery,
            negated,
        } = e
            && let SetExpr::Select(select) = subquery.body.as_ref()
            && let [SelectItem::UnnamedExpr(value) | SelectItem::ExprWithAlias { expr: value, .. }] =
                select.projection.as_slice()
        {
            let mut aggregated = select.clone();
            aggregated.projection = vec![SelectItem::UnnamedExpr(Expr::Function(Function {
                name: ObjectName::from(vec![Ident::new("array_agg")]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::List(FunctionArgumentList {
                    duplicate_treatment: None,
                    args: vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(value.clone()))],
                    clauses: Vec::new(),
                }),
                filter: None,
                null_treatment: None,
                over: None,
                within_group: Vec::new(),
            }))];
            let text = format!(
                "{}array_has(({aggregated}), {needle})",
                if *negated { "NOT " } else { "" }
            );
            if let Ok(replacement) = Parser::new(&PostgreSqlDialect {})
                .try_with_sql(&text)
                .and_then(|mut p| p.parse_expr())
            {
                *e = replacement;
                changed = true;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    changed
}

fn has_subquery(expr: &Expr) -> bool {
    let mut found = false;
    let _ = visit_expressions(expr, |e| {
        found |= matches!(
            e,
            Expr::Subquery(_) | Expr::InSubquery { .. } | Expr::Exists { .. }
        );
        ControlFlow::<()>::Continue(())
    });
    found
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn functions_in_from_become_named_columns_and_user_a_call() {
        let grafana = "SELECT CASE WHEN trim(s[i]) = '\"$user\"' THEN user ELSE trim(s[i]) END \
                       FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), \
                       array_upper(string_to_array(current_setting('search_path'),','),1)) as i, \
                       string_to_array(current_setting('search_path'),',') s \
                       WHERE EXISTS (SELECT 1 FROM information_schema.tables)";
        let out = rewrite(grafana).expect("rewritten");
        assert!(out.contains("THEN 'strata' ELSE"), "{out}");
        assert!(
            out.contains("FROM (SELECT value AS i FROM generate_series(array_lower("),
            "{out}"
        );
        assert!(
            out.contains("(SELECT string_to_array(current_setting('search_path'), ',') AS s) AS s"),
            "{out}"
        );
        let ordered = "SELECT table_name AS \"table\" FROM information_schema.tables \
                       ORDER BY CASE WHEN table_schema IN (SELECT 'x') THEN 0 ELSE 1 END, 1 LIMIT 5";
        let out = rewrite(ordered).expect("rewritten");
        assert_eq!(
            out,
            "SELECT \"table\" FROM (SELECT table_name AS \"table\", CASE WHEN \
             array_has((SELECT array_agg('x')), table_schema) THEN 0 ELSE 1 END AS strata_order_0 \
             FROM information_schema.tables) AS strata_ordered ORDER BY strata_order_0, 1 LIMIT 5"
        );
        // Not a metadata query: `user` may be a column; nothing is touched.
        assert_eq!(rewrite("SELECT user FROM logins"), None);
        assert_eq!(rewrite("SELECT 1 FROM information_schema.tables"), None);
    }
}
