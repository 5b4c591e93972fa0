//! `CREATE TABLE [IF NOT EXISTS] t (host VARCHAR TAG, time TIMESTAMP, usage DOUBLE, …)`,
//! Lindorm's and TDengine's way of declaring a table: string columns followed by `TAG` are
//! tags, the others typed fields, and exactly one time column, named `time`: `TIMESTAMP`,
//! or Lindorm's `time BIGINT [UNIT ns|us|ms|s]` (integer times in `INSERT` count that
//! unit, milliseconds when none is given; queries see a timestamp either way). Lindorm's
//! `VARCHAR PRIMARY TAG` is a tag (a series is identified by all of its tags).
//! sqlparser cannot read `VARCHAR TAG`, so this is parsed here, token by token.
//! TDengine's super tables (`CREATE STABLE`, `CREATE TABLE … TAGS (…)`) and subtables
//! (`CREATE TABLE d USING st TAGS (…)`) are in `supertable.rs`.

use std::sync::Arc;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_lineproto::Precision;
use strata_storage::catalog::{SchemaError, TIME_COLUMN, TableDefinition};
use strata_storage::model::FieldType;
use strata_storage::{Engine, StorageError};

use super::tokens::{Cursor, TableRef, plan};
use super::{Output, blocking};
use crate::error::{Position, QueryError};

/// A parsed `CREATE TABLE`.
#[derive(Debug)]
pub(super) struct CreateTable {
    table: TableRef,
    if_not_exists: bool,
    definition: TableDefinition,
    /// Each declared column and where its name is, for errors found by the catalog.
    columns: Vec<(String, Position)>,
}

/// What a column's declared type makes it.
pub(super) enum ColumnType {
    Timestamp,
    Field(FieldType),
}

/// The accepted type names, for messages.
const TYPES: &str = "DOUBLE, FLOAT, REAL, BIGINT, INT, INTEGER, SMALLINT, TINYINT, \
                     BIGINT UNSIGNED, UBIGINT, BOOLEAN, BOOL, VARCHAR, STRING, TEXT, NCHAR, \
                     BINARY or TIMESTAMP";

/// Parses the rest of `CREATE TABLE …` after `CREATE`.
pub(super) fn parse(database: &str, cursor: &mut Cursor) -> Result<CreateTable, QueryError> {
    cursor.expect_keyword("TABLE")?;
    let if_not_exists = cursor.eat_if_not_exists()?;
    let table = cursor.table_name(database)?;
    if table.table.starts_with(['#', '\t']) || table.table.contains('\n') || table.table.is_empty()
    {
        return Err(plan(
            "a table name must not be empty, start with '#' or a tab, or hold a newline \
             (line protocol could not write it)",
            table.position,
        ));
    }
    cursor.expect(&Token::LParen, "\"(\" and the columns")?;
    let mut definition = TableDefinition::default();
    let mut columns: Vec<(String, Position)> = Vec::new();
    let mut time: Option<Position> = None;
    loop {
        let (name, at) = cursor.identifier("a column name")?;
        if name.is_empty() || name.contains('\n') {
            return Err(plan(
                "a column name must not be empty or hold a newline (line protocol could not \
                 write it)",
                at,
            ));
        }
        if columns.iter().any(|(n, _)| *n == name) {
            return Err(plan(format!("column \"{name}\" is declared twice"), at));
        }
        let type_at = cursor.here();
        let mut column_type = column_type(cursor)?;
        if name == TIME_COLUMN && matches!(column_type, ColumnType::Field(FieldType::Integer)) {
            definition.time_unit = Some(time_unit(cursor)?);
            column_type = ColumnType::Timestamp;
        }
        let primary_at = cursor.here();
        let primary = cursor.eat_keyword("PRIMARY");
        let tag = cursor.eat_keyword("TAG");
        if primary && !tag {
            return Err(plan("PRIMARY is only allowed before TAG", primary_at));
        }
        match column_type {
            ColumnType::Timestamp => {
                if tag {
                    return Err(plan("the TIMESTAMP column cannot be a tag", type_at));
                }
                if time.is_some() {
                    return Err(plan(
                        "a table has exactly one TIMESTAMP column (time)",
                        type_at,
                    ));
                }
                if name != TIME_COLUMN {
                    return Err(plan(
                        format!(
                            "the TIMESTAMP column must be named \"{TIME_COLUMN}\", not \"{name}\""
                        ),
                        at,
                    ));
                }
                time = Some(at);
            }
            ColumnType::Field(_) if name == TIME_COLUMN => {
                return Err(plan(
                    format!(
                        "column \"{TIME_COLUMN}\" is the timestamp: declare it TIMESTAMP, or \
                         BIGINT [UNIT ns|us|ms|s]"
                    ),
                    type_at,
                ));
            }
            ColumnType::Field(FieldType::String) if tag => definition.tags.push(name.clone()),
            ColumnType::Field(_) if tag => {
                return Err(plan(
                    "only string columns (VARCHAR, STRING, TEXT, NCHAR) can be tags",
                    type_at,
                ));
            }
            ColumnType::Field(field_type) => definition.fields.push((name.clone(), field_type)),
        }
        columns.push((name, at));
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    cursor.expect_end()?;
    if time.is_none() {
        return Err(plan(
            format!(
                "table \"{}\" needs a \"time TIMESTAMP\" column",
                table.table
            ),
            table.position,
        ));
    }
    if definition.fields.is_empty() {
        return Err(plan(
            format!(
                "table \"{}\" needs at least one field (a column that is not a TAG): \
                 a row stores field values",
                table.table
            ),
            table.position,
        ));
    }
    Ok(CreateTable {
        table,
        if_not_exists,
        definition,
        columns,
    })
}

/// The unit after `time BIGINT`: `UNIT ns|us|ms|s`, milliseconds when absent (Lindorm's
/// integer times).
fn time_unit(cursor: &mut Cursor) -> Result<Precision, QueryError> {
    if !cursor.eat_keyword("UNIT") {
        return Ok(Precision::Milliseconds);
    }
    let at = cursor.here();
    let unit = match cursor.peek() {
        Some(Token::Word(word)) => match word.value.to_ascii_lowercase().as_str() {
            "ns" => Precision::Nanoseconds,
            "us" => Precision::Microseconds,
            "ms" => Precision::Milliseconds,
            "s" => Precision::Seconds,
            other => {
                return Err(plan(
                    format!("unknown time unit \"{other}\"; use ns, us, ms or s"),
                    at,
                ));
            }
        },
        _ => return Err(cursor.expected("a time unit (ns, us, ms or s)")),
    };
    cursor.advance();
    Ok(unit)
}

/// A column type, with its optional length (`VARCHAR(64)`, TDengine's `BINARY(24)`;
/// ignored: strings are unbounded) or `UNSIGNED`.
pub(super) fn column_type(cursor: &mut Cursor) -> Result<ColumnType, QueryError> {
    let at = cursor.here();
    let written = match cursor.peek() {
        Some(Token::Word(word)) if word.quote_style.is_none() => word.value.clone(),
        _ => return Err(cursor.expected("a column type")),
    };
    cursor.advance();
    let name = written.to_ascii_uppercase();
    let column_type = match name.as_str() {
        "TIMESTAMP" => ColumnType::Timestamp,
        "DOUBLE" => {
            cursor.eat_keyword("PRECISION");
            ColumnType::Field(FieldType::Float)
        }
        "FLOAT" | "REAL" => ColumnType::Field(FieldType::Float),
        "BIGINT" | "INT" | "INTEGER" | "SMALLINT" | "TINYINT" => {
            if cursor.eat_keyword("UNSIGNED") {
                ColumnType::Field(FieldType::Unsigned)
            } else {
                ColumnType::Field(FieldType::Integer)
            }
        }
        "UBIGINT" => ColumnType::Field(FieldType::Unsigned),
        "BOOLEAN" | "BOOL" => ColumnType::Field(FieldType::Boolean),
        "VARCHAR" | "STRING" | "TEXT" | "NCHAR" | "BINARY" => {
            if cursor.eat(&Token::LParen) {
                match cursor.peek() {
                    Some(Token::Number(n, _)) if n.parse::<u32>().is_ok_and(|n| n > 0) => {
                        cursor.advance();
                    }
                    _ => return Err(cursor.expected("a positive length")),
                }
                cursor.expect(&Token::RParen, "\")\"")?;
            }
            ColumnType::Field(FieldType::String)
        }
        _ => {
            return Err(plan(
                format!("unknown column type \"{written}\"; use {TYPES}"),
                at,
            ));
        }
    };
    Ok(column_type)
}

/// Registers the table in the catalog (durably).
pub(super) async fn execute(
    engine: &Arc<Engine>,
    create: CreateTable,
) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    let CreateTable {
        table,
        if_not_exists,
        definition,
        columns,
    } = create;
    blocking(move || {
        engine
            .create_table(&table.database, &table.table, &definition, if_not_exists)
            .map_err(|e| placed(e, &table, &columns))
    })
    .await?;
    Ok(Output::empty())
}

/// A catalog refusal as a planning error at the column (or table) it is about.
pub(super) fn placed(
    error: StorageError,
    table: &TableRef,
    columns: &[(String, Position)],
) -> QueryError {
    let StorageError::Schema(schema) = error else {
        return QueryError::Storage(error);
    };
    let column = match &schema {
        SchemaError::ColumnName { name, .. } => Some(name),
        SchemaError::FieldTypeConflict { field, .. } => Some(field),
        SchemaError::TableExists { .. } => None,
    };
    let at = column
        .and_then(|c| columns.iter().find(|(n, _)| n == c))
        .map_or(table.position, |(_, at)| *at);
    plan(schema.to_string(), at)
}
