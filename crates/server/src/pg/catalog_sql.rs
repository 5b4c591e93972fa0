//! Statements on `pg_catalog` as clients write them, made plannable. Postgres plans any
//! correlated scalar subquery; DataFusion only one that is aggregated and whose correlated
//! predicates are equalities. psql's `\d` asks
//! `(SELECT pg_get_expr(d.adbin, …) FROM pg_attrdef d WHERE d.adrelid = a.attrelid AND …
//! AND a.atthasdef)` and `(SELECT c.collname FROM pg_collation c, pg_type t WHERE c.oid =
//! a.attcollation AND … AND a.attcollation <> t.typcollation)`. So, in statements that name
//! `pg_catalog` only, each plain scalar subquery is rewritten to the same answer wherever
//! Postgres gives one:
//! - its one value is wrapped in `max(…)` (Postgres fails when there are more rows);
//! - conditions on the outer row alone move out: `CASE WHEN a.atthasdef THEN (…) END`;
//! - an outer column an equality ties to an inner one (`c.oid = a.attcollation`) is
//!   replaced by that inner column in the subquery's other conditions.
//!
//! In the same pass, an `ARRAY(SELECT …)` known to be empty becomes an empty array
//! (`catalog_arrays`), and a scalar subquery that cannot return a row (it reads a catalog
//! table that is always empty here) becomes NULL.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, JoinOperator, Query, Select, SelectItem, SetExpr,
    SetOperator, Statement, TableFactor, TableWithJoins, Value, Visit, Visitor,
    visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};

use super::catalog_arrays::known_empty;
use super::column_names::select_list_names;

/// Aggregate functions a scalar subquery may already return.
const AGGREGATES: &[&str] = &[
    "max",
    "min",
    "count",
    "sum",
    "avg",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
];

/// `sql` with its plain scalar subqueries aggregated and its `ARRAY(SELECT …)` of nothing
/// made empty arrays (`catalog_arrays`), when it names `pg_catalog` and has any; `None`
/// otherwise (run it as it is).
pub(crate) fn plannable_catalog_subqueries(sql: &str) -> Option<String> {
    if !sql.contains("pg_catalog") {
        return None;
    }
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let mut changed = false;
    let _ = visit_expressions_mut(&mut statements, |expr| {
        if let Some(empty) = known_empty(expr) {
            *expr = empty;
            changed = true;
        } else if let Expr::Subquery(query) = expr
            && empty_body(&query.body).is_some()
        {
            // A scalar subquery that cannot return a row is NULL (SQLAlchemy asks for a
            // column's identity options from `pg_sequence` with `json_build_object`).
            *expr = Expr::value(Value::Null);
            changed = true;
        } else if let Expr::Subquery(query) = expr
            && aggregate_one_value(query)
        {
            changed = true;
            let outer_only = decorrelate(query);
            if !outer_only.is_empty()
                && let Ok(guarded) = parse_expr(&format!(
                    "CASE WHEN {} THEN ({query}) END",
                    outer_only.join(" AND ")
                ))
            {
                *expr = guarded;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    changed.then(|| {
        statements
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Wraps the one value of a plain `SELECT x FROM …` (no grouping, not already an
/// aggregate) in `max(x)`; whether it did.
fn aggregate_one_value(query: &mut Query) -> bool {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return false;
    };
    if is_grouped(select) || select.projection.len() != 1 || select.from.is_empty() {
        return false;
    }
    let value = match &mut select.projection[0] {
        SelectItem::UnnamedExpr(value) | SelectItem::ExprWithAlias { expr: value, .. } => value,
        _ => return false,
    };
    if is_aggregate(value) {
        return false;
    }
    let Ok(wrapped) = parse_expr(&format!("max({value})")) else {
        return false;
    };
    *value = wrapped;
    true
}

/// Whether `expr` is a call of one of the [`AGGREGATES`].
fn is_aggregate(expr: &Expr) -> bool {
    matches!(expr, Expr::Function(function)
        if AGGREGATES.iter().any(|a| function.name.to_string().eq_ignore_ascii_case(a)))
}

/// Whether `select` has a `GROUP BY`.
fn is_grouped(select: &Select) -> bool {
    match &select.group_by {
        GroupByExpr::Expressions(expressions, _) => !expressions.is_empty(),
        GroupByExpr::All(_) => true,
    }
}

pub(super) fn parse_expr(text: &str) -> Result<Expr, ParserError> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
}

/// Rewrites the conditions of an (already aggregated) subquery as the module doc says;
/// returns the conditions on the outer row alone, taken out of it.
fn decorrelate(query: &mut Query) -> Vec<String> {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Vec::new();
    };
    let Some(selection) = select.selection.take() else {
        return Vec::new();
    };
    let inner: HashSet<String> = select
        .from
        .iter()
        .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
        .filter_map(|relation| match relation {
            TableFactor::Table { name, alias, .. } => Some(match alias {
                Some(alias) => alias.name.value.to_ascii_lowercase(),
                None => name.to_string().rsplit('.').next()?.to_ascii_lowercase(),
            }),
            _ => None,
        })
        .collect();
    let mut conditions = Vec::new();
    split_and(selection, &mut conditions);
    // Outer column → the inner column an equality ties it to.
    let mut tied: Vec<(String, Expr)> = Vec::new();
    for condition in &conditions {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = condition
        {
            for (a, b) in [(left, right), (right, left)] {
                if side(a, &inner) == Side::Inner && side(b, &inner) == Side::Outer {
                    tied.push((b.to_string(), (**a).clone()));
                }
            }
        }
    }
    let mut outer_only = Vec::new();
    let mut kept = Vec::new();
    for mut condition in conditions {
        match side(&condition, &inner) {
            Side::Outer => outer_only.push(condition.to_string()),
            Side::Mixed if !is_equality(&condition) => {
                let _ = visit_expressions_mut(&mut condition, |e| {
                    if let Some((_, inner_column)) = tied.iter().find(|(o, _)| *o == e.to_string())
                    {
                        *e = inner_column.clone();
                    }
                    ControlFlow::<()>::Continue(())
                });
                kept.push(condition);
            }
            _ => kept.push(condition),
        }
    }
    select.selection = kept.into_iter().reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: BinaryOperator::And,
        right: Box::new(b),
    });
    outer_only
}

fn split_and(expr: Expr, out: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(*left, out);
            split_and(*right, out);
        }
        Expr::Nested(inner)
            if matches!(
                *inner,
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_and(*inner, out);
        }
        other => out.push(other),
    }
}

fn is_equality(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::BinaryOp {
            op: BinaryOperator::Eq,
            ..
        }
    )
}

/// Which rows an expression's qualified columns come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// No qualified column.
    Neither,
    /// Only the subquery's own tables.
    Inner,
    /// Only the outer query's.
    Outer,
    Mixed,
}

fn side(expr: &Expr, inner: &HashSet<String>) -> Side {
    let (mut has_inner, mut has_outer) = (false, false);
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
        if let Expr::CompoundIdentifier(parts) = e
            && parts.len() == 2
        {
            if inner.contains(&parts[0].value.to_ascii_lowercase()) {
                has_inner = true;
            } else {
                has_outer = true;
            }
        }
        ControlFlow::<()>::Continue(())
    });
    match (has_inner, has_outer) {
        (false, false) => Side::Neither,
        (true, false) => Side::Inner,
        (false, true) => Side::Outer,
        (true, true) => Side::Mixed,
    }
}

/// Catalog tables that never have rows here: Strata has no procedural languages, user
/// operators or conversions, event triggers, foreign servers, role memberships, extensions,
/// user functions, policies, extended statistics, publications, inheritance, triggers,
/// constraints, indexes, rules or defaults.
const EMPTY_TABLES: &[&str] = &[
    "pg_language",
    "pg_operator",
    "pg_conversion",
    "pg_event_trigger",
    "pg_foreign_data_wrapper",
    "pg_foreign_server",
    "pg_auth_members",
    "pg_extension",
    "pg_proc",
    "pg_policy",
    "pg_statistic_ext",
    "pg_publication",
    "pg_publication_rel",
    "pg_publication_namespace",
    "pg_inherits",
    "pg_trigger",
    "pg_constraint",
    "pg_index",
    "pg_rewrite",
    "pg_attrdef",
    "pg_foreign_table",
    "pg_partitioned_table",
    "pg_sequence",
    "pg_enum",
];

/// The column names of `sql` when it is a query on the catalog that cannot return a row, a
/// [`rowless_body`]. psql's `\d` asks such questions (its policies, statistics, publications
/// and inheritance footers) in Postgres's full syntax (`array(SELECT …)`, `= any(…)`), and
/// SQLAlchemy's reflection of a table's keys and indexes joins `pg_constraint` and
/// `pg_index` in derived tables with `unnest`, `generate_subscripts` and `::regclass`;
/// their answer is known without planning them.
pub(crate) fn empty_answer(sql: &str) -> Option<Vec<String>> {
    if !sql.contains("pg_catalog") {
        return None;
    }
    let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    empty_body(&query.body)
}

/// The column names of a query body that cannot return a row (see [`rowless_body`]).
pub(super) fn empty_body(body: &SetExpr) -> Option<Vec<String>> {
    if !rowless_body(body) {
        return None;
    }
    select_list_names(body)
}

/// Whether a query body cannot return a row: a `SELECT` whose `FROM` cannot (see
/// [`rowless_select`]), or a `UNION` of such.
fn rowless_body(body: &SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => rowless_select(select),
        SetExpr::SetOperation {
            op: SetOperator::Union,
            left,
            right,
            ..
        } => rowless_body(left) && rowless_body(right),
        SetExpr::Query(query) => rowless_body(&query.body),
        _ => false,
    }
}

/// Whether a `SELECT` cannot return a row: one of its `FROM` items (a cross product is
/// empty when one of its items is) cannot, and it does not aggregate without grouping (which
/// gives one row over nothing).
fn rowless_select(select: &Select) -> bool {
    select.from.iter().any(rowless_from_item)
        && (is_grouped(select) || !aggregates(&select.projection, select.having.as_ref()))
}

/// Whether a `FROM` item cannot return a row: joined left to right, it is empty once an
/// empty side is inner-joined in, and stays so through inner and left joins; a right join
/// gives what its right side gives, a full join is empty when both sides are.
fn rowless_from_item(from: &TableWithJoins) -> bool {
    let mut empty = rowless_relation(&from.relation);
    for join in &from.joins {
        let right = rowless_relation(&join.relation);
        empty = match join.join_operator {
            JoinOperator::Join(_)
            | JoinOperator::Inner(_)
            | JoinOperator::CrossJoin(_)
            | JoinOperator::Semi(_)
            | JoinOperator::LeftSemi(_) => empty || right,
            JoinOperator::Left(_)
            | JoinOperator::LeftOuter(_)
            | JoinOperator::Anti(_)
            | JoinOperator::LeftAnti(_) => empty,
            JoinOperator::Right(_) | JoinOperator::RightOuter(_) => right,
            JoinOperator::FullOuter(_) => empty && right,
            _ => false,
        };
    }
    empty
}

/// Whether a relation cannot return a row: one of the [`EMPTY_TABLES`] (named with
/// `pg_catalog.`, since a database's own table may take an unqualified name), a derived
/// table whose query cannot, or a parenthesized join that cannot.
fn rowless_relation(relation: &TableFactor) -> bool {
    match relation {
        TableFactor::Table { name, .. } => name
            .to_string()
            .to_ascii_lowercase()
            .strip_prefix("pg_catalog.")
            .is_some_and(|t| EMPTY_TABLES.contains(&t)),
        TableFactor::Derived { subquery, .. } => rowless_body(&subquery.body),
        TableFactor::NestedJoin {
            table_with_joins, ..
        } => rowless_from_item(table_with_joins),
        _ => false,
    }
}

/// Whether a select list or `HAVING` calls one of the [`AGGREGATES`] outside any subquery
/// (a subquery's aggregate is over its own rows).
fn aggregates(projection: &[SelectItem], having: Option<&Expr>) -> bool {
    let mut finder = AggregateFinder { subqueries: 0 };
    let exprs = projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => Some(expr),
            _ => None,
        })
        .chain(having);
    for expr in exprs {
        if expr.visit(&mut finder).is_break() {
            return true;
        }
    }
    false
}

/// Finds an aggregate call outside subqueries ([`aggregates`]).
struct AggregateFinder {
    /// How many subqueries the visit is inside.
    subqueries: usize,
}

impl Visitor for AggregateFinder {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.subqueries += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &Query) -> ControlFlow<()> {
        self.subqueries -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
        if self.subqueries == 0 && is_aggregate(expr) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_scalar_subqueries_on_the_catalog_are_aggregated() {
        let psql = "SELECT a.attname, (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) \
                    FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid), \
                    (SELECT c.relname FROM pg_catalog.pg_class c WHERE c.oid = a.attrelid), \
                    (SELECT count(*) FROM pg_catalog.pg_class) FROM pg_catalog.pg_attribute a";
        let out = plannable_catalog_subqueries(psql).expect("rewritten");
        // pg_attrdef never has rows here: its subquery is NULL.
        assert!(out.starts_with("SELECT a.attname, NULL, "), "{out}");
        assert!(
            out.contains(
                "(SELECT max(c.relname) FROM pg_catalog.pg_class c WHERE c.oid = a.attrelid)"
            ),
            "{out}"
        );
        assert!(
            out.contains("(SELECT count(*) FROM pg_catalog.pg_class)"),
            "{out}"
        );
        // psql's \\d: outer-only conditions move out, tied outer columns move in.
        let psql = "SELECT (SELECT c.relname FROM pg_catalog.pg_class c \
                    WHERE c.oid = a.attrelid AND a.atthasdef), \
                    (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t \
                    WHERE c.oid = a.attcollation AND a.attcollation <> t.typcollation) \
                    FROM pg_catalog.pg_attribute a";
        let out = plannable_catalog_subqueries(psql).expect("rewritten");
        assert!(
            out.contains("CASE WHEN a.atthasdef THEN (SELECT max(c.relname) FROM pg_catalog.pg_class c WHERE c.oid = a.attrelid) END"),
            "{out}"
        );
        assert!(
            out.contains("WHERE c.oid = a.attcollation AND c.oid <> t.typcollation)"),
            "{out}"
        );
        // Statements that do not name the catalog, or have nothing to change, run as sent.
        assert_eq!(
            plannable_catalog_subqueries("SELECT (SELECT x FROM t) FROM u"),
            None
        );
        assert_eq!(
            plannable_catalog_subqueries("SELECT relname FROM pg_catalog.pg_class"),
            None
        );
    }

    #[test]
    fn queries_on_tables_without_rows_are_answered_empty() {
        let psql = "SELECT pol.polname, pol.polpermissive, CASE WHEN pol.polroles = '{0}' THEN NULL \
                    ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles \
                    where oid = any (pol.polroles) order by 1),',') END AS roles \
                    FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '16385' ORDER BY 1";
        assert_eq!(
            empty_answer(psql),
            Some(vec![
                "polname".into(),
                "polpermissive".into(),
                "roles".into()
            ])
        );
        // A table with rows, an aggregate (one row even over nothing), a right join: planned.
        assert_eq!(
            empty_answer("SELECT relname FROM pg_catalog.pg_class"),
            None
        );
        let union = "SELECT pubname, NULL FROM pg_catalog.pg_publication p WHERE p.puballtables \
                     UNION SELECT pubname, pg_get_expr(pr.prqual, c.oid) FROM pg_catalog.pg_publication p \
                     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid ORDER BY 1";
        assert_eq!(
            empty_answer(union),
            Some(vec!["pubname".into(), "?column?".into()])
        );
        let with_rows = "SELECT relname FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class c ON true \
                         UNION SELECT relname FROM pg_catalog.pg_class";
        assert_eq!(empty_answer(with_rows), None);
        let product = "SELECT c.oid::pg_catalog.regclass FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i \
                       WHERE c.oid = i.inhparent ORDER BY inhseqno";
        assert_eq!(empty_answer(product), Some(vec!["oid".into()]));
        assert_eq!(
            empty_answer("SELECT count(*) FROM pg_catalog.pg_policy"),
            None
        );
        assert_eq!(
            empty_answer(
                "SELECT c.relname FROM pg_catalog.pg_inherits i RIGHT JOIN pg_catalog.pg_class c ON true"
            ),
            None
        );
    }

    #[test]
    fn grouped_queries_over_derived_tables_without_rows_are_answered_empty() {
        // SQLAlchemy's reflection of a primary key: grouped, over a derived table that
        // inner-joins one that reads pg_constraint and pg_index.
        let sqlalchemy = "SELECT attr.conrelid, array_agg(CAST(attr.attname AS TEXT) ORDER BY attr.ord) AS cols, \
             attr.conname, min(attr.description) AS description \
             FROM (SELECT con.conrelid AS conrelid, con.conname AS conname, con.ord AS ord, \
             con.description AS description, pg_catalog.pg_attribute.attname AS attname \
             FROM pg_catalog.pg_attribute JOIN (SELECT pg_catalog.pg_constraint.conrelid AS conrelid, \
             pg_catalog.pg_constraint.conname AS conname, unnest(pg_catalog.pg_index.indkey) AS attnum, \
             generate_subscripts(pg_catalog.pg_index.indkey, $1::INTEGER) AS ord, \
             pg_catalog.pg_description.description AS description \
             FROM pg_catalog.pg_constraint JOIN pg_catalog.pg_index ON pg_catalog.pg_constraint.conindid = pg_catalog.pg_index.indexrelid \
             LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid \
             AND pg_catalog.pg_description.classoid = CAST($2::REGCLASS AS REGCLASS) \
             WHERE pg_catalog.pg_constraint.contype = $3::CHAR) AS con \
             ON pg_catalog.pg_attribute.attnum = con.attnum AND pg_catalog.pg_attribute.attrelid = con.conrelid) AS attr \
             GROUP BY attr.conrelid, attr.conname ORDER BY attr.conrelid, attr.conname";
        assert_eq!(
            empty_answer(sqlalchemy),
            Some(vec![
                "conrelid".into(),
                "cols".into(),
                "conname".into(),
                "description".into()
            ])
        );
        // Without grouping, an aggregate gives one row over nothing, wherever it stands
        // (not inside a subquery of its own).
        for one_row in [
            "SELECT coalesce(max(x.conname), '') FROM (SELECT conname FROM pg_catalog.pg_constraint) x",
            "SELECT 1 FROM pg_catalog.pg_index HAVING count(*) = 0",
        ] {
            assert_eq!(empty_answer(one_row), None, "{one_row}");
        }
        assert_eq!(
            empty_answer(
                "SELECT (SELECT max(relname) FROM pg_catalog.pg_class) AS m FROM pg_catalog.pg_index"
            ),
            Some(vec!["m".into()])
        );
        // Joins: a left join keeps the rows of a table that has them, a full join of an
        // empty side too; a right join of an empty table is empty, as is a parenthesized
        // join of one.
        for (sql, empty) in [
            (
                "SELECT c.relname FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_index i ON true",
                false,
            ),
            (
                "SELECT c.relname FROM pg_catalog.pg_index i FULL JOIN pg_catalog.pg_class c ON true",
                false,
            ),
            (
                "SELECT c.relname FROM pg_catalog.pg_class c RIGHT JOIN pg_catalog.pg_index i ON true",
                true,
            ),
            (
                "SELECT c.relname FROM pg_catalog.pg_class c JOIN (pg_catalog.pg_index i JOIN pg_catalog.pg_class d ON true) ON true",
                true,
            ),
            (
                "SELECT c.relname FROM pg_catalog.pg_class c, (SELECT 1 FROM pg_catalog.pg_class) x",
                false,
            ),
        ] {
            assert_eq!(empty_answer(sql).is_some(), empty, "{sql}");
        }
    }
}
