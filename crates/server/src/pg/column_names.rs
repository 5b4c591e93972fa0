//! Result column names as Postgres gives them. DataFusion names an unnamed select item by
//! its expression (`count(*)`, `max(cpu.usage)`, `Int64(1)`); Postgres by a rule of its
//! own (`count`, `max`, `?column?`), and clients read rows by these names: a dict row's
//! `row["count"]` in psycopg or node-postgres, a data frame's columns, a Grafana series'
//! name. So on the Postgres wire an unnamed select item's column takes Postgres's name:
//! - a column: its name; a function call: the function's name (`pg_catalog.max` is `max`);
//!   unquoted names in lower case, as Postgres folds them;
//! - a cast: its operand's name when the operand is a column or a call, else the type's
//!   (`1::int` is `int4`, `TIMESTAMP '…'` is `timestamp`);
//! - `CASE` is `case`; `EXISTS (…)` `exists`, `ARRAY[…]` `array`, a scalar subquery its
//!   one column's name; `extract`, `substring`, `position`, `trim` (`btrim`, `ltrim`,
//!   `rtrim`), `ceil`, `floor`, `AT TIME ZONE` (`timezone`) as the functions they are;
//! - anything else (a constant, an operator) `?column?`.
//!
//! The engine keeps its own names (they must be unique in a plan; Postgres's need not be:
//! `SELECT max(a), max(b)` gives two columns named `max`). Items with an alias, and the
//! columns a `*` expands to, keep the engine's names, which are theirs.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    DataType, Expr, Ident, ObjectNamePart, SelectItem, SetExpr, Statement, TrimWhereField,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

/// The name Postgres gives a column it cannot name.
const UNNAMED: &str = "?column?";

/// `schema`, the result of `sql`, with its unnamed select items' columns named as Postgres
/// names them; `None` when none changes or `sql` is not a query whose select list maps onto
/// `schema`.
pub(crate) fn postgres_names(sql: &str, schema: &Schema) -> Option<SchemaRef> {
    // A column or an alias is named alike by both; only an expression gives a name with
    // other characters, and only then is the statement parsed again.
    let plain = |name: &str| name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if schema.fields().iter().all(|f| plain(f.name())) {
        return None;
    }
    let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    let [Statement::Query(query)] = statements.as_slice() else {
        return None;
    };
    let projection = first_select_list(&query.body)?;
    let fields = schema.fields();
    let wildcards = projection
        .iter()
        .filter(|item| {
            matches!(
                item,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        })
        .count();
    // What one `*` expands to; with more than one, which columns are whose is not known.
    let expanded = match wildcards {
        0 if fields.len() == projection.len() => 0,
        1 => (fields.len() + 1).checked_sub(projection.len())?,
        _ => return None,
    };
    let mut names: Vec<String> = fields.iter().map(|f| f.name().clone()).collect();
    let mut at = 0;
    let mut changed = false;
    for item in projection {
        match item {
            SelectItem::UnnamedExpr(expr) => {
                let name = column_name(expr);
                if names[at] != name {
                    names[at] = name;
                    changed = true;
                }
                at += 1;
            }
            SelectItem::ExprWithAlias { .. } => at += 1,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => at += expanded,
            // A select list with other items (Snowflake's `x.*` forms) is left as it is.
            #[allow(unreachable_patterns)]
            _ => return None,
        }
    }
    changed.then(|| {
        Arc::new(Schema::new_with_metadata(
            fields
                .iter()
                .zip(names)
                .map(|(field, name)| Arc::new(Field::clone(field).with_name(name)))
                .collect::<Vec<_>>(),
            schema.metadata().clone(),
        ))
    })
}

/// The result column names of a query body as Postgres names them, aliases as written;
/// `None` for a `*` (the names would need the tables' columns).
pub(crate) fn select_list_names(body: &SetExpr) -> Option<Vec<String>> {
    first_select_list(body)?
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            SelectItem::UnnamedExpr(expr) => Some(column_name(expr)),
            _ => None,
        })
        .collect()
}

/// The select list that names a query's columns: its first `SELECT`'s (a `UNION`'s
/// columns are named by its first branch).
fn first_select_list(body: &SetExpr) -> Option<&[SelectItem]> {
    match body {
        SetExpr::Select(select) => Some(&select.projection),
        SetExpr::SetOperation { left, .. } => first_select_list(left),
        SetExpr::Query(query) => first_select_list(&query.body),
        _ => None,
    }
}

/// The name Postgres gives an unnamed select item `expr` (see the module's doc).
pub(crate) fn column_name(expr: &Expr) -> String {
    figure(expr).0.unwrap_or_else(|| UNNAMED.to_owned())
}

/// How sure a name is, as Postgres ranks them: a cast names its column by its operand
/// only when the operand's name is [`Strength::Strong`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    None,
    Weak,
    Strong,
}

/// `expr`'s name and how sure it is.
fn figure(expr: &Expr) -> (Option<String>, Strength) {
    let strong = |name: &str| (Some(name.to_owned()), Strength::Strong);
    match expr {
        Expr::Identifier(ident) => (Some(folded(ident)), Strength::Strong),
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(last) => (Some(folded(last)), Strength::Strong),
            None => (None, Strength::None),
        },
        Expr::Function(function) => match function.name.0.last() {
            Some(ObjectNamePart::Identifier(ident)) => (Some(folded(ident)), Strength::Strong),
            Some(other) => (Some(other.to_string()), Strength::Strong),
            None => (None, Strength::None),
        },
        Expr::Nested(inner) => figure(inner),
        Expr::Cast {
            expr, data_type, ..
        } => match figure(expr) {
            named @ (_, Strength::Strong) => named,
            _ => (Some(type_name(data_type)), Strength::Weak),
        },
        Expr::TypedString(typed) => (Some(type_name(&typed.data_type)), Strength::Weak),
        Expr::Interval(_) => (Some("interval".to_owned()), Strength::Weak),
        Expr::Case { .. } => (Some("case".to_owned()), Strength::Weak),
        Expr::Exists { .. } => strong("exists"),
        Expr::Array(_) => strong("array"),
        Expr::Subquery(query) => match first_select_list(&query.body) {
            Some([SelectItem::ExprWithAlias { alias, .. }, ..]) => {
                (Some(folded(alias)), Strength::Strong)
            }
            Some([SelectItem::UnnamedExpr(inner), ..]) => match figure(inner) {
                (Some(name), _) => (Some(name), Strength::Strong),
                unnamed => unnamed,
            },
            _ => (None, Strength::None),
        },
        Expr::Extract { .. } => strong("extract"),
        Expr::Substring { .. } => strong("substring"),
        Expr::Position { .. } => strong("position"),
        Expr::Overlay { .. } => strong("overlay"),
        Expr::Ceil { .. } => strong("ceil"),
        Expr::Floor { .. } => strong("floor"),
        Expr::AtTimeZone { .. } => strong("timezone"),
        Expr::Trim { trim_where, .. } => strong(match trim_where {
            Some(TrimWhereField::Leading) => "ltrim",
            Some(TrimWhereField::Trailing) => "rtrim",
            _ => "btrim",
        }),
        _ => (None, Strength::None),
    }
}

/// An identifier as Postgres reads it: unquoted ones folded to lower case.
fn folded(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// The name Postgres gives type `data_type` (its `pg_type` name): `int4` for `INT`,
/// `float8` for `double precision`, `varchar` for `VARCHAR(20)`; an array's element's.
fn type_name(data_type: &DataType) -> String {
    let written = data_type.to_string().to_ascii_lowercase();
    let written = written.strip_prefix("pg_catalog.").unwrap_or(&written);
    let base = written.trim_end_matches("[]").trim_end();
    let base = base.split('(').next().unwrap_or(base).trim_end();
    match base {
        "varchar" | "character varying" => return "varchar".to_owned(),
        "char" | "character" => return "bpchar".to_owned(),
        "decimal" => return "numeric".to_owned(),
        "timestamp with time zone" => return "timestamptz".to_owned(),
        "timestamp without time zone" => return "timestamp".to_owned(),
        _ => {}
    }
    strata_query::pg_catalog::type_oid(base)
        .and_then(|oid| u32::try_from(oid).ok())
        .and_then(strata_query::pg_catalog::types::pg_type)
        .map_or_else(|| base.to_owned(), |t| t.name.to_owned())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::DataType as ArrowType;

    use super::*;

    fn names(sql: &str, engine_names: &[&str]) -> Option<Vec<String>> {
        let schema = Schema::new(
            engine_names
                .iter()
                .map(|n| Field::new(*n, ArrowType::Int64, true))
                .collect::<Vec<_>>(),
        );
        postgres_names(sql, &schema).map(|s| s.fields().iter().map(|f| f.name().clone()).collect())
    }

    #[test]
    fn unnamed_items_are_named_as_postgres_names_them() {
        // Each name as Postgres 15.18 gives it for the same select list.
        let sql = "SELECT count(*), MAX(c.usage), pg_catalog.min(usage), 1, 'a', usage + 1, \
                   usage::int, 1::int, '2'::double precision, TIMESTAMP '2026-01-01', \
                   CASE WHEN true THEN 1 END, (SELECT max(x) FROM t), EXISTS (SELECT 1), \
                   ARRAY[1], extract(hour FROM time), trim(leading 'a' FROM host), \
                   time AT TIME ZONE 'UTC', \"Quoted\", (host), usage AS u, 'x'::varchar(3), \
                   interval '1 hour', NULL::timestamptz, coalesce(a, 1) FROM cpu c";
        let engine: Vec<String> = (0..24).map(|i| format!("e({i})")).collect();
        let engine: Vec<&str> = engine.iter().map(String::as_str).collect();
        assert_eq!(
            names(sql, &engine).unwrap(),
            [
                "count",
                "max",
                "min",
                "?column?",
                "?column?",
                "?column?",
                "usage",
                "int4",
                "float8",
                "timestamp",
                "case",
                "max",
                "exists",
                "array",
                "extract",
                "ltrim",
                "timezone",
                "Quoted",
                "host",
                "e(19)",
                "varchar",
                "interval",
                "timestamptz",
                "coalesce"
            ]
        );
    }

    #[test]
    fn wildcards_unions_and_plain_names_keep_the_engines() {
        assert_eq!(
            names("SELECT *, count(*) FROM cpu", &["time", "host", "count(*)"]).unwrap(),
            ["time", "host", "count"]
        );
        assert_eq!(
            names(
                "SELECT max(a) FROM t UNION SELECT min(b) FROM u",
                &["max(t.a)"]
            )
            .unwrap(),
            ["max"]
        );
        // Nothing to rename, a statement that is not a query, columns that do not map.
        assert_eq!(
            names("SELECT host, usage AS u FROM cpu", &["host", "u"]),
            None
        );
        assert_eq!(names("SHOW TABLES", &["table name"]), None);
        assert_eq!(names("SELECT count(*) FROM cpu", &["a(1)", "b"]), None);
        assert_eq!(names("SELECT *, * FROM cpu", &["a(1)", "b"]), None);
        assert_eq!(names("SELECT (", &["a(1)"]), None);
    }
}
