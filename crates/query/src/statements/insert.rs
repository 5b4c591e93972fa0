//! `INSERT INTO t [(col, …)] VALUES (…), (…)`: rows become line protocol (strata-lineproto's
//! writer) and go through `Engine::write_lines`, the write path of every other client.
//!
//! Every row is checked against the table before anything is written: unknown column,
//! wrong type, missing `time`, a row without any field value — one bad row and no row is
//! written. The engine may still refuse rows after that (a concurrent write changed a
//! column's type, a series limit): then the other rows are stored and the statement fails
//! naming the first refused row and how many were written.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::DataFusionError;
use datafusion::sql::sqlparser::ast::{
    Expr, Insert, ObjectNamePart, SetExpr, Spanned, Statement, TableObject, Value,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use strata_lineproto::FieldValue;
use strata_lineproto::writer::write_line;
use strata_storage::catalog::{TIME_COLUMN, TableSchema};
use strata_storage::model::FieldType;
use strata_storage::{Engine, arrow};

use super::show::lookup;
use super::tokens::{TableRef, plan, position, table_ref};
use super::values::{self, Literal, start_of};
use super::{Output, write_lines};
use crate::error::{Position, QueryError};

/// What a column of the statement is in the table.
#[derive(Debug, Clone)]
pub(super) enum Kind {
    Time,
    Tag,
    Field(FieldType),
}

#[derive(Debug, Clone)]
pub(super) struct Column {
    pub(super) name: String,
    pub(super) kind: Kind,
}

/// Parses, checks and writes one `INSERT` statement.
pub(super) async fn execute(
    engine: &Arc<Engine>,
    database: &str,
    statement: &str,
) -> Result<Output, QueryError> {
    let insert = parse(statement)?;
    let target = target(&insert, database)?;
    let schema = lookup(engine, &target)?;
    if engine.catalog().super_table(schema.id).is_some() {
        return Err(plan(
            format!(
                "\"{}\" is a TDengine super table: rows go into its subtables, e.g. INSERT \
                 INTO d1 USING {} TAGS (…) VALUES (…)",
                schema.name, schema.name
            ),
            target.position,
        ));
    }
    let columns = columns(&insert, &schema, &target)?;
    let rows = rows(&insert)?;
    let mut body = Vec::new();
    let mut row_positions = Vec::with_capacity(rows.len());
    for (at, row) in rows {
        line(&mut body, &schema, &columns, row, at)?;
        row_positions.push(at);
    }
    write(
        engine,
        target.database,
        body,
        row_positions,
        target.position,
    )
    .await
}

/// Writes `body` (line protocol, one line per row, starting at `row_positions`) into
/// `database` through `Engine::write_lines`, and returns the `count` result. A refused row
/// fails the statement at its position (`fallback` if it has none), saying how many rows
/// were written. TDengine's `INSERT … USING` writes through here too.
pub(super) async fn write(
    engine: &Arc<Engine>,
    database: String,
    body: Vec<u8>,
    row_positions: Vec<Position>,
    fallback: Position,
) -> Result<Output, QueryError> {
    let report = write_lines(engine, database, body).await?;
    if let Some(first) = report.errors.first() {
        let at = row_positions
            .get(first.line.saturating_sub(1))
            .copied()
            .unwrap_or(fallback);
        return Err(plan(
            format!(
                "row {} was not written: {}; {} of {} rows were written",
                first.line,
                first.message,
                report.rows,
                row_positions.len()
            ),
            at,
        ));
    }
    let schema = Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]));
    let count = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(UInt64Array::from(vec![report.rows]))],
    )
    .map_err(|e| QueryError::Execution {
        message: format!("cannot build the result: {e}"),
    })?;
    Ok(Output {
        schema,
        batches: vec![count],
    })
}

/// The types of the parameters (`$1`, …) an `INSERT` gives a column's value, by number:
/// the column's (`timestamp` for `time`, text for a tag, a field's own); `None` for one it
/// does not place so (inside an expression, or numbered but unused). Postgres describes an
/// `INSERT`'s parameters this way, and clients that encode values by the described types
/// (pgx, asyncpg) need it to send a time or a number. A statement that does not check
/// against its table has no types here: running it reports why.
pub(super) fn parameter_types(
    engine: &Engine,
    database: &str,
    statement: &str,
) -> Vec<Option<DataType>> {
    let typed = || -> Result<Vec<Option<DataType>>, QueryError> {
        let insert = parse(statement)?;
        let target = target(&insert, database)?;
        let schema = lookup(engine, &target)?;
        let columns = columns(&insert, &schema, &target)?;
        let mut types: Vec<Option<DataType>> = Vec::new();
        for (_, row) in rows(&insert)? {
            for (column, expr) in columns.iter().zip(row) {
                let Some(n) = parameter_number(expr) else {
                    continue;
                };
                let Some(i) = n
                    .checked_sub(1)
                    .filter(|&i| i < crate::engine::MAX_DESCRIBED_PARAMETERS)
                else {
                    continue;
                };
                if types.len() <= i {
                    types.resize(i + 1, None);
                }
                types[i].get_or_insert_with(|| column.kind.data_type());
            }
        }
        Ok(types)
    };
    typed().unwrap_or_default()
}

/// The number of the parameter `expr` is (`$3`), if it is one, in parentheses or not.
fn parameter_number(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Nested(inner) => parameter_number(inner),
        Expr::Value(value) => match &value.value {
            Value::Placeholder(name) => name.strip_prefix('$')?.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

impl Kind {
    /// The type of a value of this column: the table's Arrow schema's, a tag's as the
    /// string it is (the schema's dictionary is how a query reads many).
    fn data_type(&self) -> DataType {
        match self {
            Kind::Time => arrow::time_data_type(),
            Kind::Tag => DataType::Utf8,
            Kind::Field(field_type) => arrow::field_data_type(*field_type),
        }
    }
}

/// The statement as sqlparser reads it; only `INSERT INTO … VALUES` is taken.
pub(super) fn parse(statement: &str) -> Result<Insert, QueryError> {
    let syntax = |e| QueryError::from(DataFusionError::from(e)).at_end_if_unplaced(statement);
    let mut statements = Parser::new(&GenericDialect {})
        .try_with_sql(statement)
        .and_then(|mut parser| parser.parse_statements())
        .map_err(syntax)?;
    if statements.len() != 1 {
        return Err(QueryError::Syntax {
            message: format!("expected one statement, found {}", statements.len()),
            position: statements.get(1).map(|s| position(s.span().start)),
        });
    }
    match statements.remove(0) {
        Statement::Insert(insert) => Ok(insert),
        other => Err(QueryError::NotSupported {
            message: format!("only INSERT INTO … VALUES is supported here, not {other}"),
        }),
    }
}

/// The table written to.
pub(super) fn target(insert: &Insert, database: &str) -> Result<TableRef, QueryError> {
    let TableObject::TableName(name) = &insert.table else {
        return Err(QueryError::NotSupported {
            message: "INSERT INTO a table function".to_string(),
        });
    };
    let at = position(name.span().start);
    let mut parts = Vec::with_capacity(name.0.len());
    for part in &name.0 {
        match part {
            ObjectNamePart::Identifier(ident) => {
                parts.push(normalize(&ident.value, ident.quote_style))
            }
            ObjectNamePart::Function(_) => {
                return Err(plan("a table name cannot be a function", at));
            }
        }
    }
    table_ref(&parts, database, at)
}

fn normalize(value: &str, quote_style: Option<char>) -> String {
    match quote_style {
        Some(_) => value.to_string(),
        None => value.to_ascii_lowercase(),
    }
}

/// The columns the `VALUES` rows fill: the listed ones, or every column in `DESCRIBE`
/// order (time, tags, fields).
pub(super) fn columns(
    insert: &Insert,
    schema: &TableSchema,
    target: &TableRef,
) -> Result<Vec<Column>, QueryError> {
    if insert.columns.is_empty() {
        let mut columns = vec![Column {
            name: TIME_COLUMN.to_string(),
            kind: Kind::Time,
        }];
        columns.extend(schema.tags.iter().map(|t| Column {
            name: t.clone(),
            kind: Kind::Tag,
        }));
        columns.extend(schema.fields.iter().map(|f| Column {
            name: f.name.clone(),
            kind: Kind::Field(f.field_type),
        }));
        return Ok(columns);
    }
    let mut columns: Vec<Column> = Vec::with_capacity(insert.columns.len());
    for name in &insert.columns {
        let at = position(name.span().start);
        let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else {
            return Err(plan(format!("column \"{name}\" must be a plain name"), at));
        };
        let name = normalize(&ident.value, ident.quote_style);
        if columns.iter().any(|c| c.name == name) {
            return Err(plan(format!("column \"{name}\" is listed twice"), at));
        }
        let kind = if name == TIME_COLUMN {
            Kind::Time
        } else if schema.tags.contains(&name) {
            Kind::Tag
        } else if let Some(field) = schema.field(&name) {
            Kind::Field(field.field_type)
        } else {
            return Err(plan(
                format!("column \"{name}\" is not in table \"{}\"", schema.name),
                at,
            ));
        };
        columns.push(Column { name, kind });
    }
    if !columns.iter().any(|c| matches!(c.kind, Kind::Time)) {
        return Err(plan(
            "the column list needs \"time\": every row needs a timestamp",
            target.position,
        ));
    }
    Ok(columns)
}

/// The `VALUES` rows, each with where it starts (its `(`).
fn rows(insert: &Insert) -> Result<Vec<(Position, &[Expr])>, QueryError> {
    let Some(source) = &insert.source else {
        return Err(QueryError::NotSupported {
            message: "INSERT without VALUES".to_string(),
        });
    };
    let plain = source.with.is_none()
        && source.order_by.is_none()
        && source.limit_clause.is_none()
        && source.fetch.is_none();
    let SetExpr::Values(values) = source.body.as_ref() else {
        return Err(QueryError::NotSupported {
            message: "INSERT … SELECT: only INSERT … VALUES is supported".to_string(),
        });
    };
    if !plain || insert.returning.is_some() || insert.on.is_some() {
        return Err(QueryError::NotSupported {
            message: "INSERT takes plain VALUES rows (no WITH, ORDER BY, LIMIT, ON or RETURNING)"
                .to_string(),
        });
    }
    Ok(values
        .rows
        .iter()
        .map(|row| {
            (
                position(row.opening_token.0.span.start),
                row.content.as_slice(),
            )
        })
        .collect())
}

/// Checks one row and appends it to `body` as a line of line protocol.
fn line(
    body: &mut Vec<u8>,
    schema: &TableSchema,
    columns: &[Column],
    row: &[Expr],
    at: Position,
) -> Result<(), QueryError> {
    if row.len() != columns.len() {
        return Err(plan(
            format!(
                "row has {} values for {} columns ({})",
                row.len(),
                columns.len(),
                columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            at,
        ));
    }
    let mut time = None;
    let mut tags: Vec<(&str, String)> = Vec::new();
    let mut fields: Vec<(&str, FieldValue<'static>)> = Vec::new();
    for (column, expr) in columns.iter().zip(row) {
        let value_at = start_of(expr);
        let literal: Literal = values::literal(expr)?;
        match column.kind {
            Kind::Time => time = values::time(&literal, schema.time_unit, value_at)?,
            Kind::Tag => {
                if let Some(value) = values::tag(&literal, &column.name, value_at)? {
                    tags.push((&column.name, value));
                }
            }
            Kind::Field(field_type) => {
                if let Some(value) = values::field(&literal, &column.name, field_type, value_at)? {
                    fields.push((&column.name, value));
                }
            }
        }
    }
    if fields.is_empty() {
        return Err(plan(
            "row has no field value (all NULL): a row stores at least one field",
            at,
        ));
    }
    let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
    write_line(body, &schema.name, &tags, &fields, time)
        .map_err(|e| plan(format!("row cannot be written: {e}"), at))
}
