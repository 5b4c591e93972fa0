//! Recognizing a statement the direct path may answer, on sqlparser's tree: one plain
//! `SELECT` from one Strata table, with none of the clauses the direct path does not know.
//! Names follow DataFusion's rules: unquoted identifiers are lower-cased, quoted ones kept.

use std::sync::Arc;

use datafusion::arrow::array::{Array, StringArray, TimestampNanosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::compute::kernels::cast_utils::parse_interval_month_day_nano;
use datafusion::arrow::datatypes::{DataType, IntervalMonthDayNanoType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    DataType as SqlType, Distinct, Expr, GroupByExpr, Ident, ObjectName, ObjectNamePart, Query,
    Select, SelectFlavor, SetExpr, Statement, TableFactor, TableWithJoins, TimezoneInfo, Value,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use strata_storage::Engine;
use strata_storage::catalog::TableSchema;

use crate::catalog::{CATALOG_NAME, database_of};

/// The one statement of `sql`, when it parses as exactly one query.
pub(super) fn query(sql: &str) -> Option<Box<Query>> {
    let mut statements = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    match statements.pop()? {
        Statement::Query(query) => Some(query),
        _ => None,
    }
}

/// The `SELECT` of `query` when the query is nothing but a select with optional ORDER BY
/// and LIMIT (no CTE, set operation, OFFSET, FETCH, locks or dialect clauses).
pub(super) fn plain_select(query: &Query) -> Option<&Select> {
    if query.with.is_some()
        || query.fetch.is_some()
        || !query.locks.is_empty()
        || query.for_clause.is_some()
        || query.settings.is_some()
        || query.format_clause.is_some()
        || !query.pipe_operators.is_empty()
    {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let plain = select.optimizer_hints.is_empty()
        && select.select_modifiers.is_none()
        && select.top.is_none()
        && select.exclude.is_none()
        && select.into.is_none()
        && select.lateral_views.is_empty()
        && select.prewhere.is_none()
        && select.connect_by.is_empty()
        && select.cluster_by.is_empty()
        && select.distribute_by.is_empty()
        && select.sort_by.is_empty()
        && select.having.is_none()
        && select.named_window.is_empty()
        && select.qualify.is_none()
        && select.value_table_mode.is_none()
        && matches!(select.flavor, SelectFlavor::Standard)
        && !matches!(select.distinct, Some(Distinct::Distinct))
        && match &select.group_by {
            GroupByExpr::Expressions(_, modifiers) => modifiers.is_empty(),
            GroupByExpr::All(_) => false,
        };
    plain.then_some(select.as_ref())
}

/// The table a select reads and the qualifier its columns may carry, as written.
pub(super) struct From {
    pub table: Arc<TableSchema>,
    /// The table reference as written (`cpu`, `db.cpu`, `strata.db.cpu`), normalized.
    pub qualifier: Vec<String>,
}

/// The one table of the select's FROM clause, resolved like DataFusion resolves it
/// (`table`, `database.table`, `strata.database.table`); no alias, join or sample.
pub(super) fn from(select: &Select, engine: &Engine, database: &str) -> Option<From> {
    let [
        TableWithJoins {
            relation:
                TableFactor::Table {
                    name,
                    alias: None,
                    args: None,
                    with_hints,
                    version: None,
                    with_ordinality: false,
                    partitions,
                    json_path: None,
                    sample: None,
                    index_hints,
                },
            joins,
        },
    ] = select.from.as_slice()
    else {
        return None;
    };
    if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
        return None;
    }
    if !joins.is_empty() {
        return None;
    }
    let parts = object_name(name)?;
    let (db, table) = match parts.as_slice() {
        [table] => (database, table),
        [db, table] => (database_of(engine, database, db), table),
        [catalog, db, table] if catalog == CATALOG_NAME => {
            (database_of(engine, database, db), table)
        }
        _ => return None,
    };
    let table = engine.table(db, table)?;
    Some(From {
        table,
        qualifier: parts,
    })
}

/// An identifier as DataFusion normalizes it.
pub(super) fn ident(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

fn object_name(name: &ObjectName) -> Option<Vec<String>> {
    name.0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(i) => Some(ident(i)),
            _ => None,
        })
        .collect()
}

/// The column an expression names (`col`, or `qualifier.col` with the FROM's qualifier).
pub(super) fn column(expr: &Expr, from: &From) -> Option<String> {
    match expr {
        Expr::Identifier(i) => Some(ident(i)),
        Expr::CompoundIdentifier(parts) => {
            let (last, qualifier) = parts.split_last()?;
            let qualifier: Vec<String> = qualifier.iter().map(ident).collect();
            // A suffix of the FROM reference, as DataFusion accepts (`cpu.x` for `db.cpu`).
            from.qualifier.ends_with(&qualifier).then(|| ident(last))
        }
        Expr::Nested(inner) => column(inner, from),
        _ => None,
    }
}

/// A string literal.
pub(super) fn string(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s),
            _ => None,
        },
        Expr::Nested(inner) => string(inner),
        _ => None,
    }
}

/// A non-negative integer literal.
pub(super) fn unsigned(expr: &Expr) -> Option<u64> {
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, false) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// A timestamp literal: `'2016-01-01T00:00:00Z'` (compared with `time`, which DataFusion
/// casts to a timestamp) or `TIMESTAMP '…'`, converted by the same Arrow cast DataFusion
/// uses, so both read a string alike (a time to the minute given its seconds first, as
/// DataFusion's plans give it: `minute_times`).
pub(super) fn timestamp(expr: &Expr) -> Option<i64> {
    let text = match expr {
        Expr::TypedString(typed) => match (&typed.data_type, &typed.value.value) {
            (
                SqlType::Timestamp(None, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone),
                Value::SingleQuotedString(s),
            ) => s.as_str(),
            _ => return None,
        },
        Expr::Nested(inner) => return timestamp(inner),
        other => string(other)?,
    };
    let array = StringArray::from(vec![&*crate::minute_times::with_seconds(text)]);
    let cast = cast(&array, &DataType::Timestamp(TimeUnit::Nanosecond, None)).ok()?;
    let cast = cast.as_any().downcast_ref::<TimestampNanosecondArray>()?;
    (!cast.is_null(0)).then(|| cast.value(0))
}

/// An `INTERVAL '…'` literal without leading or last fields, as DataFusion reads it.
pub(super) fn interval(expr: &Expr) -> Option<ScalarValue> {
    let Expr::Interval(interval) = expr else {
        return None;
    };
    if interval.leading_field.is_some()
        || interval.leading_precision.is_some()
        || interval.last_field.is_some()
        || interval.fractional_seconds_precision.is_some()
    {
        return None;
    }
    let text = string(&interval.value)?;
    let value = parse_interval_month_day_nano(text).ok()?;
    let (months, days, nanos) = IntervalMonthDayNanoType::to_parts(value);
    Some(ScalarValue::IntervalMonthDayNano(Some(
        IntervalMonthDayNanoType::make_value(months, days, nanos),
    )))
}
