//! `ARRAY(SELECT …)` in statements on `pg_catalog`, which DataFusion cannot plan (it has
//! no array constructor over a subquery). psql asks for arrays this way in `\du` (the roles
//! a role is a member of), `\d+` (a table's options and its TOAST table's) and `\dp`
//! (column privileges and policies). Every one of them is empty here, and is known to be
//! without running it, when its subquery
//! - reads a catalog table that never has rows (`catalog_sql::empty_answer`'s), by inner or
//!   left joins: `pg_auth_members`, `pg_policy`;
//! - unnests one of the catalog's array columns, which are NULL in every row
//!   (`strata_query::pg_catalog::NULL_ARRAY_COLUMNS`): `unnest(tc.reloptions)`;
//! - or keeps only rows where one of those columns `IS NOT NULL`.
//!
//! Such an `ARRAY(…)` becomes an empty text array. Any other stays as it is, and its
//! statement fails to plan as before.

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Query, SetExpr,
    TableFactor,
};
use strata_query::pg_catalog::NULL_ARRAY_COLUMNS;

use super::catalog_sql::{empty_body, parse_expr};

/// An empty `text[]`.
const EMPTY_TEXT_ARRAY: &str = "arrow_cast(make_array(), 'List(Utf8)')";

/// The empty array `expr` is, when it is an `ARRAY(SELECT …)` known to have no element.
pub(super) fn known_empty(expr: &Expr) -> Option<Expr> {
    let Expr::Function(function) = expr else {
        return None;
    };
    if !function.name.to_string().eq_ignore_ascii_case("array") {
        return None;
    }
    let FunctionArguments::Subquery(query) = &function.args else {
        return None;
    };
    let empty = empty_body(&query.body).is_some()
        || unnests_a_null_array(query)
        || requires_a_null_array(query);
    if !empty {
        return None;
    }
    parse_expr(EMPTY_TEXT_ARRAY).ok()
}

/// Whether `expr` names one of the catalog's NULL array columns (`reloptions`,
/// `tc.reloptions`).
fn is_null_array_column(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Identifier(ident) => &ident.value,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(last) => &last.value,
            None => return false,
        },
        Expr::Nested(inner) => return is_null_array_column(inner),
        _ => return false,
    };
    NULL_ARRAY_COLUMNS
        .iter()
        .any(|column| column.eq_ignore_ascii_case(name))
}

/// `SELECT … FROM [pg_catalog.]unnest(column) …` of a NULL array column, with nothing else
/// in `FROM`.
fn unnests_a_null_array(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let [from] = select.from.as_slice() else {
        return false;
    };
    if !from.joins.is_empty() {
        return false;
    }
    match &from.relation {
        TableFactor::UNNEST { array_exprs, .. } => {
            matches!(array_exprs.as_slice(), [array] if is_null_array_column(array))
        }
        TableFactor::Table {
            name,
            args: Some(args),
            ..
        } => {
            let is_unnest = name
                .0
                .last()
                .is_some_and(|part| part.to_string().eq_ignore_ascii_case("unnest"));
            is_unnest
                && matches!(
                    args.args.as_slice(),
                    [FunctionArg::Unnamed(FunctionArgExpr::Expr(array))]
                        if is_null_array_column(array)
                )
        }
        _ => false,
    }
}

/// A `SELECT` whose `WHERE` requires, among its `AND`ed conditions, that a NULL array column
/// `IS NOT NULL`.
fn requires_a_null_array(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    let mut pending: Vec<&Expr> = select.selection.iter().collect();
    while let Some(condition) = pending.pop() {
        match condition {
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And,
                right,
            } => {
                pending.push(left);
                pending.push(right);
            }
            Expr::Nested(inner) => pending.push(inner),
            Expr::IsNotNull(column) if is_null_array_column(column) => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::known_empty;
    use crate::pg::catalog_sql::parse_expr;

    fn empty(sql: &str) -> bool {
        known_empty(&parse_expr(sql).unwrap()).is_some()
    }

    #[test]
    fn arrays_of_nothing_are_known_empty() {
        // psql 15's \du, \d+ and \dp.
        assert!(empty(
            "ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m \
             JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid)"
        ));
        assert!(empty(
            "array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x)"
        ));
        assert!(empty("ARRAY(SELECT x FROM unnest(reloptions) AS x)"));
        assert!(empty(
            "ARRAY(SELECT attname || E':\\n  ' || pg_catalog.array_to_string(attacl, E'\\n  ') \
             FROM pg_catalog.pg_attribute a \
             WHERE attrelid = c.oid AND NOT attisdropped AND attacl IS NOT NULL)"
        ));
        assert!(empty(
            "ARRAY(SELECT polname FROM pg_catalog.pg_policy pol WHERE polrelid = c.oid)"
        ));
        // Arrays that may hold something are left alone.
        assert!(!empty(
            "ARRAY(SELECT attname FROM pg_catalog.pg_attribute a WHERE attrelid = c.oid)"
        ));
        assert!(!empty("ARRAY(SELECT x FROM unnest(c.tags) x)"));
        assert!(!empty(
            "ARRAY(SELECT x FROM pg_catalog.unnest(tc.reloptions) x, pg_catalog.pg_class c2)"
        ));
        assert!(!empty(
            "ARRAY(SELECT attname FROM pg_catalog.pg_attribute a \
             WHERE attrelid = c.oid OR attacl IS NOT NULL)"
        ));
        assert!(!empty("ARRAY[1, 2]"));
        assert!(!empty("array_agg(x)"));
    }
}
