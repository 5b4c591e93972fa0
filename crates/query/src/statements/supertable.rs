//! TDengine's super tables in Strata's SQL (reference: `docs/sql.md`, "TDengine super
//! tables"):
//!
//! - `CREATE STABLE [IF NOT EXISTS] st (ts TIMESTAMP, c1 FLOAT, …) TAGS (t1 INT, …)`, also
//!   spelt `CREATE TABLE … TAGS (…)`: a table whose tags are the TAGS plus `tbname`, the
//!   subtable's name (in TDengine a subtable is one series, and `tbname` its name as a
//!   pseudo-column), and whose fields are the other columns. The first column is the
//!   timestamp, under any name; its name is recorded, and integer times count the
//!   database's `PRECISION` (milliseconds by default, as in TDengine).
//! - `CREATE TABLE [IF NOT EXISTS] d USING st [(t1, …)] TAGS (v1, …) [d2 USING …]`:
//!   registers subtables, durably, in the catalog: later `INSERT INTO d VALUES …` finds
//!   their tags there.
//!
//! The catalog keeps what TDengine's model needs beyond a table (`strata_storage::catalog`
//! `supertable.rs`); `INSERT` into subtables is in `tdengine_insert.rs`.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat};
use datafusion::sql::sqlparser::tokenizer::Token;
use strata_lineproto::Precision;
use strata_storage::catalog::{
    Subtable, SuperTable, TIME_COLUMN, TableDefinition, TableSchema, TagType,
};
use strata_storage::model::FieldType;
use strata_storage::{Engine, StorageError};

use super::create::{ColumnType, column_type, placed};
use super::tokens::{Cursor, TableRef, plan};
use super::values::{self, Literal, token_literal};
use super::{Output, blocking};
use crate::error::{Position, QueryError};

/// The tag naming a super table's subtable: TDengine's `tbname` pseudo-column.
pub(super) const TBNAME: &str = "tbname";

/// Whether the statement after `CREATE` is TDengine's: `STABLE …`, `TABLE name USING …` or
/// `TABLE name (…) TAGS (…)`. The cursor is left where it was.
pub(super) fn is_tdengine_create(cursor: &mut Cursor) -> bool {
    let mark = cursor.mark();
    let found = looks_tdengine(cursor);
    cursor.rewind(mark);
    found
}

fn looks_tdengine(cursor: &mut Cursor) -> bool {
    if cursor.at_keyword("STABLE") {
        return true;
    }
    if !cursor.eat_keyword("TABLE") || cursor.eat_if_not_exists().is_err() {
        return false;
    }
    if cursor.table_name("").is_err() {
        return false;
    }
    cursor.at_keyword("USING") || (cursor.skip_parenthesized() && cursor.at_keyword("TAGS"))
}

/// Runs `CREATE STABLE …`, `CREATE TABLE … TAGS (…)` or `CREATE TABLE … USING …` (the
/// cursor just past `CREATE`).
pub(super) async fn create(
    engine: &Arc<Engine>,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    let stable_at = cursor.here();
    let stable = cursor.eat_keyword("STABLE");
    if !stable {
        cursor.expect_keyword("TABLE")?;
    }
    let if_not_exists = cursor.eat_if_not_exists()?;
    let table = cursor.table_name(database)?;
    if cursor.at_keyword("USING") {
        if stable {
            return Err(plan(
                "CREATE STABLE declares a super table; a subtable is CREATE TABLE d USING st \
                 TAGS (…)",
                stable_at,
            ));
        }
        let subtables = parse_subtables(engine, cursor, (if_not_exists, table))?;
        return create_subtables(engine, subtables).await;
    }
    let declared = parse_super_table(engine, table, cursor)?;
    create_super_table(engine, declared, if_not_exists).await
}

/// A parsed `CREATE STABLE`.
struct DeclaredSuperTable {
    table: TableRef,
    definition: TableDefinition,
    super_table: SuperTable,
    /// Each declared column and tag and where its name is, for the catalog's errors.
    columns: Vec<(String, Position)>,
}

/// `(ts TIMESTAMP, c TYPE, …) TAGS (t TYPE, …)` after the super table's name.
fn parse_super_table(
    engine: &Engine,
    table: TableRef,
    cursor: &mut Cursor,
) -> Result<DeclaredSuperTable, QueryError> {
    check_name(&table.table, "a table", table.position)?;
    let mut columns: Vec<(String, Position)> = Vec::new();
    cursor.expect(&Token::LParen, "\"(\" and the columns")?;
    let (time_name, time_at) = cursor.identifier("the timestamp column's name")?;
    let type_at = cursor.here();
    if !matches!(column_type(cursor)?, ColumnType::Timestamp) {
        return Err(plan(
            format!(
                "the first column of a super table is its timestamp: declare \"{time_name}\" \
                 TIMESTAMP"
            ),
            type_at,
        ));
    }
    columns.push((time_name.clone(), time_at));
    let mut fields: Vec<(String, FieldType)> = Vec::new();
    while cursor.eat(&Token::Comma) {
        let (name, at) = declared_name(cursor, &columns, "a column name")?;
        let type_at = cursor.here();
        match column_type(cursor)? {
            ColumnType::Field(field_type) => fields.push((name.clone(), field_type)),
            ColumnType::Timestamp => {
                return Err(plan(
                    format!(
                        "only the first column can be TIMESTAMP (Strata has one time column); \
                         declare \"{name}\" BIGINT"
                    ),
                    type_at,
                ));
            }
        }
        columns.push((name, at));
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    if fields.is_empty() {
        return Err(plan(
            format!(
                "super table \"{}\" needs a column after the timestamp: a row stores field \
                 values",
                table.table
            ),
            table.position,
        ));
    }
    let tags = parse_tag_declarations(cursor, &mut columns)?;
    cursor.expect_end()?;
    let precision = engine
        .catalog()
        .database_precision(&table.database)
        .unwrap_or(Precision::Milliseconds);
    let mut tag_names: Vec<String> = tags.iter().map(|(n, _)| n.clone()).collect();
    tag_names.push(TBNAME.to_string());
    Ok(DeclaredSuperTable {
        definition: TableDefinition {
            tags: tag_names,
            fields: fields.clone(),
            time_unit: Some(precision),
        },
        super_table: SuperTable {
            time_name,
            columns: fields.into_iter().map(|(n, _)| n).collect(),
            tags,
        },
        table,
        columns,
    })
}

/// `TAGS (t TYPE, …)`: the tags and their types.
fn parse_tag_declarations(
    cursor: &mut Cursor,
    columns: &mut Vec<(String, Position)>,
) -> Result<Vec<(String, TagType)>, QueryError> {
    cursor.expect_keyword("TAGS")?;
    cursor.expect(&Token::LParen, "\"(\" and the tags")?;
    let mut tags = Vec::new();
    loop {
        let (name, at) = declared_name(cursor, columns, "a tag name")?;
        let tag_type = match column_type(cursor)? {
            ColumnType::Timestamp => TagType::Timestamp,
            ColumnType::Field(FieldType::Float) => TagType::Float,
            ColumnType::Field(FieldType::Integer) => TagType::Integer,
            ColumnType::Field(FieldType::Unsigned) => TagType::Unsigned,
            ColumnType::Field(FieldType::Boolean) => TagType::Boolean,
            ColumnType::Field(FieldType::String) => TagType::String,
        };
        tags.push((name.clone(), tag_type));
        columns.push((name, at));
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    Ok(tags)
}

/// A column or tag name: new, not `tbname` nor `time`, writable as line protocol.
fn declared_name(
    cursor: &mut Cursor,
    declared: &[(String, Position)],
    what: &str,
) -> Result<(String, Position), QueryError> {
    let (name, at) = cursor.identifier(what)?;
    check_name(&name, "a column", at)?;
    if declared.iter().any(|(n, _)| *n == name) {
        return Err(plan(format!("column \"{name}\" is declared twice"), at));
    }
    if name == TBNAME {
        return Err(plan(
            "\"tbname\" is the subtable's name (TDengine's pseudo-column); it cannot be \
             declared",
            at,
        ));
    }
    if name == TIME_COLUMN {
        return Err(plan(
            "\"time\" is the name of Strata's time column; only the first (TIMESTAMP) column \
             may take it",
            at,
        ));
    }
    Ok((name, at))
}

/// A name line protocol can write: not empty, no newline, not starting with `#` or a tab.
fn check_name(name: &str, what: &str, at: Position) -> Result<(), QueryError> {
    if name.is_empty() || name.contains('\n') || name.starts_with(['#', '\t']) {
        return Err(plan(
            format!(
                "{what} name must not be empty, start with '#' or a tab, or hold a newline \
                 (line protocol could not write it)"
            ),
            at,
        ));
    }
    Ok(())
}

/// Records the super table in the catalog (durably).
async fn create_super_table(
    engine: &Arc<Engine>,
    declared: DeclaredSuperTable,
    if_not_exists: bool,
) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    blocking(move || {
        let DeclaredSuperTable {
            table,
            definition,
            super_table,
            columns,
        } = declared;
        engine
            .catalog()
            .create_super_table(
                &table.database,
                &table.table,
                &definition,
                super_table,
                if_not_exists,
            )
            .map_err(|e| refusal(e, &table, &columns))
    })
    .await?;
    Ok(Output::empty())
}

/// A catalog refusal as a planning error at what it is about (the table by default).
fn refusal(error: StorageError, table: &TableRef, columns: &[(String, Position)]) -> QueryError {
    match error {
        StorageError::Invalid(message) => plan(message, table.position),
        other => placed(other, table, columns),
    }
}

/// One subtable of a `CREATE TABLE … USING` or `INSERT … USING`, checked, and where its
/// name is.
pub(super) struct NewSubtable {
    pub subtable: Subtable,
    pub table: TableRef,
    /// Whether `IF NOT EXISTS` was given (an `INSERT … USING` counts as given).
    pub if_not_exists: bool,
}

/// The subtables of `CREATE TABLE d USING st TAGS (…) [[IF NOT EXISTS] d2 USING …]`, the
/// first one's `IF NOT EXISTS` and name already read.
fn parse_subtables(
    engine: &Engine,
    cursor: &mut Cursor,
    first: (bool, TableRef),
) -> Result<Vec<NewSubtable>, QueryError> {
    let (mut if_not_exists, mut table) = first;
    let mut subtables: Vec<NewSubtable> = Vec::new();
    // Each pass consumes a subtable's name and its USING clause, or fails.
    loop {
        let subtable = parse_using(engine, cursor, &table)?;
        let new = NewSubtable {
            subtable,
            table,
            if_not_exists,
        };
        check_new(engine, &new, &subtables)?;
        subtables.push(new);
        cursor.eat(&Token::SemiColon);
        if cursor.peek().is_none() {
            return Ok(subtables);
        }
        if_not_exists = cursor.eat_if_not_exists()?;
        let database = subtables[0].table.database.clone();
        table = cursor.table_name(&database)?;
    }
}

/// `USING st [(t1, …)] TAGS (v1, …)` for subtable `table`: the subtable it declares.
pub(super) fn parse_using(
    engine: &Engine,
    cursor: &mut Cursor,
    table: &TableRef,
) -> Result<Subtable, QueryError> {
    check_name(&table.table, "a subtable", table.position)?;
    cursor.expect_keyword("USING")?;
    let super_ref = cursor.table_name(&table.database)?;
    let (schema, super_table) = super_table(engine, &super_ref)?;
    if super_ref.database != table.database {
        return Err(plan(
            format!(
                "subtable \"{}\" is in database \"{}\" but super table \"{}\" is in \"{}\": a \
                 subtable lives in its super table's database",
                table.table, table.database, super_ref.table, super_ref.database
            ),
            super_ref.position,
        ));
    }
    let targets = tag_targets(cursor, &super_table)?;
    cursor.expect_keyword("TAGS")?;
    let open = cursor.here();
    cursor.expect(&Token::LParen, "\"(\" and the tag values")?;
    let mut values: Vec<(Literal, Position)> = Vec::new();
    loop {
        values.push(token_literal(cursor)?);
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    let tags = tag_values(&super_table, &schema, &targets, values, open)?;
    Ok(Subtable {
        name: table.table.clone(),
        super_table: schema.id,
        tags,
    })
}

/// The tags a `TAGS (…)` list sets, by index into the super table's TAGS: those of the
/// optional `(t1, t2)` list, else all in declared order.
fn tag_targets(cursor: &mut Cursor, super_table: &SuperTable) -> Result<Vec<usize>, QueryError> {
    if !cursor.eat(&Token::LParen) {
        return Ok((0..super_table.tags.len()).collect());
    }
    let mut targets: Vec<usize> = Vec::new();
    loop {
        let (name, at) = cursor.identifier("a tag name")?;
        let Some(index) = super_table.tags.iter().position(|(n, _)| *n == name) else {
            return Err(plan(
                format!(
                    "\"{name}\" is not a tag of the super table (its tags: {})",
                    tag_list(super_table)
                ),
                at,
            ));
        };
        if targets.contains(&index) {
            return Err(plan(format!("tag \"{name}\" is listed twice"), at));
        }
        targets.push(index);
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    Ok(targets)
}

/// The super table's tags, for messages: `groupid INT, location BINARY`-like.
fn tag_list(super_table: &SuperTable) -> String {
    super_table
        .tags
        .iter()
        .map(|(n, t)| format!("{n} {}", t.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The stored text of every tag of the super table, from the values given for `targets`
/// (the others are NULL).
fn tag_values(
    super_table: &SuperTable,
    schema: &TableSchema,
    targets: &[usize],
    values: Vec<(Literal, Position)>,
    open: Position,
) -> Result<Vec<Option<String>>, QueryError> {
    if values.len() != targets.len() {
        return Err(plan(
            format!(
                "TAGS needs {} values ({}), got {}",
                targets.len(),
                targets
                    .iter()
                    .map(|i| super_table.tags[*i].0.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                values.len()
            ),
            open,
        ));
    }
    let mut tags = vec![None; super_table.tags.len()];
    for (index, (literal, at)) in targets.iter().zip(values) {
        let (name, tag_type) = &super_table.tags[*index];
        tags[*index] = tag_text(&literal, name, *tag_type, schema.time_unit, at)?;
    }
    Ok(tags)
}

/// The text a tag of `tag_type` stores for `literal` (`None` for NULL): integers, floats and
/// booleans in their canonical form (`02` and `2` are one series), strings as written,
/// timestamps as RFC 3339 in UTC.
fn tag_text(
    literal: &Literal,
    name: &str,
    tag_type: TagType,
    unit: Option<Precision>,
    at: Position,
) -> Result<Option<String>, QueryError> {
    let mismatch = || {
        plan(
            format!(
                "tag \"{name}\" is {}; {} is not",
                tag_type.name(),
                literal.describe()
            ),
            at,
        )
    };
    let text = match (tag_type, literal) {
        (_, Literal::Null) => return Ok(None),
        (TagType::Integer, Literal::Number(n)) => {
            n.parse::<i64>().map_err(|_| mismatch())?.to_string()
        }
        (TagType::Unsigned, Literal::Number(n)) => {
            n.parse::<u64>().map_err(|_| mismatch())?.to_string()
        }
        (TagType::Float, Literal::Number(n)) => match n.parse::<f64>() {
            Ok(v) if v.is_finite() => v.to_string(),
            _ => return Err(mismatch()),
        },
        (TagType::Boolean, Literal::Boolean(b)) => b.to_string(),
        (TagType::String, Literal::Text(s)) => {
            return values::tag(literal, name, at).map(|_| Some(s.clone()));
        }
        (TagType::Timestamp, Literal::Number(_) | Literal::Text(_) | Literal::Timestamp(_)) => {
            let ns = values::time(literal, unit, at)?.ok_or_else(mismatch)?;
            DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(SecondsFormat::AutoSi, true)
        }
        _ => return Err(mismatch()),
    };
    Ok(Some(text))
}

/// Super table `name`: its schema and what the catalog records of it.
pub(super) fn super_table(
    engine: &Engine,
    name: &TableRef,
) -> Result<(Arc<TableSchema>, Arc<SuperTable>), QueryError> {
    let schema = engine.table(&name.database, &name.table).ok_or_else(|| {
        plan(
            format!(
                "super table \"{}\" not found in database \"{}\"",
                name.table, name.database
            ),
            name.position,
        )
    })?;
    let super_table = engine.catalog().super_table(schema.id).ok_or_else(|| {
        plan(
            format!(
                "\"{}\" is not a super table (one is declared with CREATE STABLE … TAGS (…))",
                name.table
            ),
            name.position,
        )
    })?;
    Ok((schema, super_table))
}

/// Whether `new` may be created: its name is no table's, and a subtable of that name (in
/// the catalog or earlier in the statement) is the same one, when `IF NOT EXISTS` allows.
pub(super) fn check_new(
    engine: &Engine,
    new: &NewSubtable,
    earlier: &[NewSubtable],
) -> Result<(), QueryError> {
    let table = &new.table;
    if engine.table(&table.database, &table.table).is_some() {
        return Err(plan(
            format!(
                "table \"{}\" already exists in database \"{}\" (a table, not a subtable)",
                table.table, table.database
            ),
            table.position,
        ));
    }
    let existing = earlier
        .iter()
        .find(|e| e.subtable.name == new.subtable.name)
        .map(|e| e.subtable.clone())
        .or_else(|| engine.catalog().subtable(&table.database, &table.table));
    let Some(existing) = existing else {
        return Ok(());
    };
    if !new.if_not_exists {
        return Err(plan(
            format!(
                "subtable \"{}\" already exists in database \"{}\"",
                table.table, table.database
            ),
            table.position,
        ));
    }
    if existing != new.subtable {
        return Err(plan(
            format!(
                "subtable \"{}\" already exists with other tags ({}); Strata does not change \
                 a subtable's tags",
                table.table,
                describe_tags(engine, &existing)
            ),
            table.position,
        ));
    }
    Ok(())
}

/// A subtable's super table and tags, for messages: `meters: groupid=2, location=NULL`.
fn describe_tags(engine: &Engine, subtable: &Subtable) -> String {
    let catalog = engine.catalog();
    let (Some(schema), Some(super_table)) = (
        catalog.table(subtable.super_table),
        catalog.super_table(subtable.super_table),
    ) else {
        return "of a dropped super table".to_string();
    };
    let tags = super_table
        .tags
        .iter()
        .zip(&subtable.tags)
        .map(|((name, _), value)| format!("{name}={}", value.as_deref().unwrap_or("NULL")))
        .collect::<Vec<_>>()
        .join(", ");
    format!("{}: {tags}", schema.name)
}

/// Registers `subtables` in the catalog, durably, in one write. They are all in one
/// database: the first one's.
pub(super) async fn register(
    engine: &Arc<Engine>,
    subtables: &[NewSubtable],
) -> Result<(), QueryError> {
    let Some(first) = subtables.first() else {
        return Ok(());
    };
    if let Some(other) = subtables
        .iter()
        .find(|s| s.table.database != first.table.database)
    {
        return Err(plan(
            format!(
                "one statement creates subtables of one database (\"{}\"), not also of \"{}\"",
                first.table.database, other.table.database
            ),
            other.table.position,
        ));
    }
    let engine = Arc::clone(engine);
    let table = first.table.clone();
    let list: Vec<Subtable> = subtables.iter().map(|s| s.subtable.clone()).collect();
    blocking(move || {
        engine
            .catalog()
            .create_subtables(&table.database, &list)
            .map(|_| ())
            .map_err(|e| refusal(e, &table, &[]))
    })
    .await
}

async fn create_subtables(
    engine: &Arc<Engine>,
    subtables: Vec<NewSubtable>,
) -> Result<Output, QueryError> {
    register(engine, &subtables).await?;
    Ok(Output::empty())
}
