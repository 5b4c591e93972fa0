//! `SHOW TABLES`, `SHOW TAGS FROM t`, `SHOW FIELDS FROM t`, `SHOW TAG VALUES FROM t WITH
//! KEY = k | IN (k, …)` and `DESCRIBE t`: answered from the catalog and the series
//! indexes, never by reading rows.

use std::sync::Arc;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_storage::Engine;
use strata_storage::arrow::{field_data_type, tag_data_type, time_data_type};
use strata_storage::catalog::{TIME_COLUMN, TableSchema};

use super::Output;
use super::tokens::{Cursor, TableRef, plan};
use crate::error::{Position, QueryError};

/// `SHOW …`, after the `SHOW` keyword.
pub(super) fn show(
    engine: &Engine,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    if cursor.eat_keyword("TABLES") {
        let database = if cursor.eat_keyword("FROM") || cursor.eat_keyword("IN") {
            cursor.identifier("a database name")?.0
        } else {
            database.to_string()
        };
        cursor.expect_end()?;
        let rows = engine
            .catalog()
            .tables(&database)
            .iter()
            .map(|t| vec![t.name.clone()])
            .collect();
        return Output::strings(&["table_name"], rows);
    }
    if cursor.eat_keyword("TAGS") {
        let table = from_table(engine, database, cursor)?;
        cursor.expect_end()?;
        let mut tags = table.tags.clone();
        tags.sort();
        return Output::strings(&["tag_key"], tags.into_iter().map(|t| vec![t]).collect());
    }
    if cursor.eat_keyword("FIELDS") {
        let table = from_table(engine, database, cursor)?;
        cursor.expect_end()?;
        let mut fields: Vec<Vec<String>> = table
            .fields
            .iter()
            .map(|f| vec![f.name.clone(), f.field_type.name().to_string()])
            .collect();
        fields.sort();
        return Output::strings(&["field_key", "field_type"], fields);
    }
    cursor.expect_keyword("TAG")?;
    cursor.expect_keyword("VALUES")?;
    tag_values(engine, database, cursor)
}

/// `SHOW TAG VALUES FROM t WITH KEY = k` or `… WITH KEY IN (k1, k2)`.
fn tag_values(engine: &Engine, database: &str, cursor: &mut Cursor) -> Result<Output, QueryError> {
    let table = from_table(engine, database, cursor)?;
    cursor.expect_keyword("WITH")?;
    cursor.expect_keyword("KEY")?;
    let mut keys: Vec<(String, Position)> = Vec::new();
    if cursor.eat(&Token::Eq) {
        keys.push(tag_key(cursor)?);
    } else if cursor.eat_keyword("IN") {
        cursor.expect(&Token::LParen, "\"(\"")?;
        loop {
            keys.push(tag_key(cursor)?);
            if !cursor.eat(&Token::Comma) {
                break;
            }
        }
        cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    } else {
        return Err(cursor.expected("\"=\" or IN"));
    }
    cursor.expect_end()?;
    for (key, at) in &keys {
        if !table.tags.contains(key) {
            return Err(plan(
                format!("\"{key}\" is not a tag of table \"{}\"", table.name),
                *at,
            ));
        }
    }
    let mut names: Vec<String> = keys.into_iter().map(|(k, _)| k).collect();
    names.sort();
    names.dedup();
    let mut rows = Vec::new();
    for key in names {
        for value in engine.tag_values(table.id, &key) {
            rows.push(vec![key.clone(), value]);
        }
    }
    Output::strings(&["key", "value"], rows)
}

/// A tag key: an identifier (InfluxQL writes `"host"`) or a `'string'`.
fn tag_key(cursor: &mut Cursor) -> Result<(String, Position), QueryError> {
    let at = cursor.here();
    match cursor.eat_string() {
        Some(key) => Ok((key, at)),
        None => cursor.identifier("a tag key"),
    }
}

/// `DESCRIBE t` (or `DESC t`): every column in table order, with its Arrow type and kind.
pub(super) fn describe(
    engine: &Engine,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    let name = cursor.table_name(database)?;
    cursor.expect_end()?;
    let table = lookup(engine, &name)?;
    let mut rows = vec![vec![
        TIME_COLUMN.to_string(),
        time_data_type().to_string(),
        "time".to_string(),
    ]];
    rows.extend(
        table
            .tags
            .iter()
            .map(|t| vec![t.clone(), tag_data_type().to_string(), "tag".to_string()]),
    );
    rows.extend(table.fields.iter().map(|f| {
        vec![
            f.name.clone(),
            field_data_type(f.field_type).to_string(),
            "field".to_string(),
        ]
    }));
    Output::strings(&["column_name", "data_type", "kind"], rows)
}

/// `FROM table`, looked up.
fn from_table(
    engine: &Engine,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Arc<TableSchema>, QueryError> {
    if !cursor.eat_keyword("FROM") {
        return Err(cursor.expected("FROM"));
    }
    let name = cursor.table_name(database)?;
    lookup(engine, &name)
}

/// The schema of the named table, or "table not found" at the name.
pub(super) fn lookup(engine: &Engine, name: &TableRef) -> Result<Arc<TableSchema>, QueryError> {
    engine.table(&name.database, &name.table).ok_or_else(|| {
        plan(
            format!(
                "table \"{}\" not found in database \"{}\"",
                name.table, name.database
            ),
            name.position,
        )
    })
}
