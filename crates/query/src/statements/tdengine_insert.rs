//! TDengine's `INSERT` into subtables (reference: `docs/sql.md`, "TDengine super tables"):
//!
//! ```sql
//! INSERT INTO d1001 [USING meters [(groupid, …)] TAGS (2, …)] [(ts, current, …)]
//!     VALUES (…) (…) …  [d1002 … VALUES (…) …] …
//! ```
//!
//! Each subtable is one series of its super table: its rows get the subtable's tags and
//! `tbname` = its name. `USING … TAGS` registers a new subtable (as `CREATE TABLE … USING`
//! does); without it the subtable must exist. Rows follow the super table's columns in
//! declared order (timestamp first) unless a column list names them; the timestamp
//! column may be named as declared (`ts`) or `time`. Times are `NOW` (`NOW()`, `NOW ± 1s`),
//! integers in the super table's precision, or strings (`'2018-10-03 14:38:05.000'`, UTC).
//! Rows between parentheses follow each other with or without commas.
//!
//! sqlparser cannot read this, so it is read token by token. Every row is checked before
//! anything is stored; then new subtables are registered (durably), and the rows are
//! written as line protocol through `insert::write`, the path of every other `INSERT`.

use std::sync::Arc;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_lineproto::FieldValue;
use strata_lineproto::writer::write_line;
use strata_storage::Engine;
use strata_storage::catalog::{Subtable, SuperTable, TIME_COLUMN, TableSchema};
use strata_storage::model::FieldType;

use super::Output;
use super::insert;
use super::supertable::{NewSubtable, TBNAME, check_new, parse_using, register};
use super::tokens::{Cursor, TableRef, plan};
use super::values::{self, Literal, token_literal};
use crate::error::{Position, QueryError};

/// Whether the `INSERT` at the cursor is TDengine's: its first table has `USING`, is a
/// subtable, or is unknown in a database with super tables (a table of that name takes
/// precedence). The cursor is left where it was.
pub(super) fn is_subtable_insert(engine: &Engine, database: &str, cursor: &mut Cursor) -> bool {
    let mark = cursor.mark();
    let found = looks_subtable(engine, database, cursor);
    cursor.rewind(mark);
    found
}

fn looks_subtable(engine: &Engine, database: &str, cursor: &mut Cursor) -> bool {
    if !cursor.eat_keyword("INSERT") || !cursor.eat_keyword("INTO") {
        return false;
    }
    let Ok(table) = cursor.table_name(database) else {
        return false;
    };
    if cursor.at_keyword("USING") {
        return true;
    }
    if engine.table(&table.database, &table.table).is_some() {
        return false;
    }
    // An unknown name in a database of super tables is most likely a subtable not created
    // yet: its error should say how to create one.
    let catalog = engine.catalog();
    catalog.subtable(&table.database, &table.table).is_some()
        || catalog
            .tables(&table.database)
            .iter()
            .any(|t| catalog.super_table(t.id).is_some())
}

/// What a value of a row goes to.
#[derive(Debug, Clone)]
enum Slot {
    Time,
    Field(String, FieldType),
}

/// One table's part of the statement, resolved.
struct Target {
    subtable: Subtable,
    schema: Arc<TableSchema>,
    super_table: Arc<SuperTable>,
}

/// What the statement writes: the line protocol body and where each row starts.
struct Rows {
    body: Vec<u8>,
    positions: Vec<Position>,
    /// `NOW` for every row of the statement: the engine's clock, read once.
    now: i64,
}

/// Parses, checks and writes a TDengine `INSERT` (the cursor at `INSERT`).
pub(super) async fn execute(
    engine: &Arc<Engine>,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    cursor.expect_keyword("INSERT")?;
    cursor.expect_keyword("INTO")?;
    let mut new: Vec<NewSubtable> = Vec::new();
    let mut rows = Rows {
        body: Vec::new(),
        positions: Vec::new(),
        now: engine.now_ns(),
    };
    let first = cursor.here();
    let mut first_table: Option<TableRef> = None;
    // Each pass consumes a table name and its rows, or fails: it ends with the tokens.
    loop {
        let table = cursor.table_name(database)?;
        let statement_db = first_table.get_or_insert_with(|| table.clone());
        if table.database != statement_db.database {
            return Err(plan(
                format!(
                    "one INSERT writes one database (\"{}\"); write \"{}\" in another",
                    statement_db.database, table.database
                ),
                table.position,
            ));
        }
        let target = target(engine, cursor, table, &mut new)?;
        let slots = slots(cursor, &target)?;
        cursor.expect_keyword("VALUES")?;
        add_rows(cursor, &target, &slots, &mut rows)?;
        cursor.eat(&Token::SemiColon);
        if cursor.peek().is_none() {
            break;
        }
    }
    let table = first_table.ok_or_else(|| plan("INSERT INTO needs a table", first))?;
    register(engine, &new).await?;
    insert::write(engine, table.database, rows.body, rows.positions, first).await
}

/// The subtable `table` names and its super table: registered by `USING … TAGS` (noted in
/// `new`), earlier in the statement, or in the catalog.
fn target(
    engine: &Engine,
    cursor: &mut Cursor,
    table: TableRef,
    new: &mut Vec<NewSubtable>,
) -> Result<Target, QueryError> {
    let subtable = if cursor.at_keyword("USING") {
        let subtable = parse_using(engine, cursor, &table)?;
        let candidate = NewSubtable {
            subtable: subtable.clone(),
            table,
            if_not_exists: true,
        };
        check_new(engine, &candidate, new)?;
        let known = new.iter().any(|n| n.subtable.name == subtable.name)
            || engine
                .catalog()
                .subtable(&candidate.table.database, &subtable.name)
                .is_some();
        if !known {
            new.push(candidate);
        }
        subtable
    } else {
        existing(engine, &table, new)?
    };
    let catalog = engine.catalog();
    let (Some(schema), Some(super_table)) = (
        catalog.table(subtable.super_table),
        catalog.super_table(subtable.super_table),
    ) else {
        return Err(plan(
            format!(
                "the super table of subtable \"{}\" was dropped",
                subtable.name
            ),
            cursor.here(),
        ));
    };
    Ok(Target {
        subtable,
        schema,
        super_table,
    })
}

/// Subtable `table`, registered earlier in the statement or in the catalog; an error that
/// says how to create it if there is none.
fn existing(
    engine: &Engine,
    table: &TableRef,
    new: &[NewSubtable],
) -> Result<Subtable, QueryError> {
    if let Some(found) = new.iter().find(|n| n.subtable.name == table.table) {
        return Ok(found.subtable.clone());
    }
    if let Some(found) = engine.catalog().subtable(&table.database, &table.table) {
        return Ok(found);
    }
    let message = match engine.table(&table.database, &table.table) {
        Some(schema) if engine.catalog().super_table(schema.id).is_some() => format!(
            "\"{}\" is a super table: rows go into its subtables (INSERT INTO d1 USING {} \
             TAGS (…) VALUES (…))",
            table.table, table.table
        ),
        Some(_) => format!(
            "\"{}\" is a table, not a subtable: write its rows in an INSERT of their own",
            table.table
        ),
        None => format!(
            "subtable \"{t}\" not found in database \"{d}\" (nor a table of that name): \
             create it with CREATE TABLE {t} USING <super table> TAGS (…), or write INSERT INTO \
             {t} USING <super table> TAGS (…) VALUES (…)",
            t = table.table,
            d = table.database
        ),
    };
    Err(plan(message, table.position))
}

/// The columns the rows fill: those of `(ts, c1, …)` if given, else the timestamp and the
/// super table's columns in declared order.
fn slots(cursor: &mut Cursor, target: &Target) -> Result<Vec<Slot>, QueryError> {
    let (schema, super_table) = (&target.schema, &target.super_table);
    let open = cursor.here();
    if !cursor.eat(&Token::LParen) {
        let mut slots = vec![Slot::Time];
        for name in &super_table.columns {
            slots.push(field_slot(schema, name).ok_or_else(|| {
                plan(
                    format!("column \"{name}\" of \"{}\" is gone", schema.name),
                    open,
                )
            })?);
        }
        return Ok(slots);
    }
    let mut names: Vec<String> = Vec::new();
    let mut slots = Vec::new();
    loop {
        let (name, at) = cursor.identifier("a column name")?;
        if names.contains(&name) {
            return Err(plan(format!("column \"{name}\" is listed twice"), at));
        }
        slots.push(slot(schema, super_table, &name, at)?);
        names.push(name);
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    if !slots.iter().any(|s| matches!(s, Slot::Time)) {
        return Err(plan(
            format!(
                "the column list needs the timestamp (\"{}\"): every row needs one",
                super_table.time_name
            ),
            open,
        ));
    }
    Ok(slots)
}

fn field_slot(schema: &TableSchema, name: &str) -> Option<Slot> {
    schema
        .field(name)
        .map(|f| Slot::Field(f.name.clone(), f.field_type))
}

/// What column `name` of a column list is.
fn slot(
    schema: &TableSchema,
    super_table: &SuperTable,
    name: &str,
    at: Position,
) -> Result<Slot, QueryError> {
    if name == super_table.time_name || name == TIME_COLUMN {
        return Ok(Slot::Time);
    }
    if let Some(slot) = field_slot(schema, name) {
        return Ok(slot);
    }
    if name == TBNAME || super_table.tags.iter().any(|(t, _)| t == name) {
        return Err(plan(
            format!(
                "\"{name}\" is a tag: a subtable's tags are set by USING … TAGS (…), not by \
                 its rows"
            ),
            at,
        ));
    }
    Err(plan(
        format!(
            "column \"{name}\" is not in super table \"{}\"",
            schema.name
        ),
        at,
    ))
}

/// The rows after `VALUES`: `(…)` one after another, commas between them optional.
fn add_rows(
    cursor: &mut Cursor,
    target: &Target,
    slots: &[Slot],
    rows: &mut Rows,
) -> Result<(), QueryError> {
    let mut tags: Vec<(&str, &str)> = target
        .super_table
        .tags
        .iter()
        .zip(&target.subtable.tags)
        .filter_map(|((name, _), value)| value.as_deref().map(|v| (name.as_str(), v)))
        .collect();
    tags.push((TBNAME, &target.subtable.name));
    // Each row consumes at least its "(": the loop ends within the statement's tokens.
    loop {
        let at = cursor.here();
        cursor.expect(&Token::LParen, "\"(\" and a row's values")?;
        let (time, fields) = row(cursor, target, slots, rows.now, at)?;
        write_line(
            &mut rows.body,
            &target.schema.name,
            &tags,
            &fields,
            Some(time),
        )
        .map_err(|e| plan(format!("row cannot be written: {e}"), at))?;
        rows.positions.push(at);
        cursor.eat(&Token::Comma);
        if cursor.peek() != Some(&Token::LParen) {
            return Ok(());
        }
    }
}

/// A row's field values, by field name.
type RowFields<'s> = Vec<(&'s str, FieldValue<'static>)>;

/// A row's values after its `(`, through its `)`: its time and field values.
fn row<'s>(
    cursor: &mut Cursor,
    target: &Target,
    slots: &'s [Slot],
    now: i64,
    at: Position,
) -> Result<(i64, RowFields<'s>), QueryError> {
    let mut values: Vec<(Value, Position)> = Vec::with_capacity(slots.len());
    loop {
        values.push(value(cursor, now)?);
        if !cursor.eat(&Token::Comma) {
            break;
        }
    }
    cursor.expect(&Token::RParen, "\",\" or \")\"")?;
    if values.len() != slots.len() {
        return Err(plan(
            format!(
                "row has {} values for {} columns ({})",
                values.len(),
                slots.len(),
                slot_names(slots, &target.super_table)
            ),
            at,
        ));
    }
    let mut time = None;
    let mut fields = Vec::new();
    for (slot, (value, value_at)) in slots.iter().zip(values) {
        match (slot, value) {
            (Slot::Time, Value::Instant(ns)) => time = Some(ns),
            (Slot::Time, Value::Literal(literal)) => {
                time = values::time(&literal, target.schema.time_unit, value_at)?;
            }
            (Slot::Field(name, _), Value::Instant(_)) => {
                return Err(plan(
                    format!("column \"{name}\" is a field; only the timestamp takes NOW"),
                    value_at,
                ));
            }
            (Slot::Field(name, field_type), Value::Literal(literal)) => {
                if let Some(v) = values::field(&literal, name, *field_type, value_at)? {
                    fields.push((name.as_str(), v));
                }
            }
        }
    }
    let time = time.ok_or_else(|| plan("a row needs a timestamp", at))?;
    if fields.is_empty() {
        return Err(plan(
            "row has no field value (all NULL): a row stores at least one field",
            at,
        ));
    }
    Ok((time, fields))
}

/// The columns of a row, for messages.
fn slot_names(slots: &[Slot], super_table: &SuperTable) -> String {
    slots
        .iter()
        .map(|s| match s {
            Slot::Time => super_table.time_name.as_str(),
            Slot::Field(name, _) => name.as_str(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A value of a row: a literal, or `NOW [± duration]` resolved to an instant.
#[derive(Debug)]
enum Value {
    Literal(Literal),
    Instant(i64),
}

/// The value at the cursor, and where it starts.
fn value(cursor: &mut Cursor, now: i64) -> Result<(Value, Position), QueryError> {
    let (literal, at) = token_literal(cursor)?;
    if literal != Literal::Now {
        return Ok((Value::Literal(literal), at));
    }
    let offset = now_offset(cursor)?;
    let instant = now
        .checked_add(offset)
        .ok_or_else(|| plan("NOW plus this duration is out of the time range", at))?;
    Ok((Value::Instant(instant), at))
}

/// TDengine's `NOW + 1s` / `NOW - 10m` after `NOW`, in nanoseconds (0 when there is none).
/// Units: `b` (ns), `u` (µs), `a` (ms), `s`, `m`, `h`, `d`, `w`.
fn now_offset(cursor: &mut Cursor) -> Result<i64, QueryError> {
    let sign = match cursor.peek() {
        Some(Token::Plus) => 1,
        Some(Token::Minus) => -1,
        _ => return Ok(0),
    };
    cursor.advance();
    let at = cursor.here();
    let count = match cursor.peek() {
        Some(Token::Number(n, _)) => n.parse::<i64>().map_err(|_| {
            plan(
                format!("a duration after NOW counts whole units, not {n}"),
                at,
            )
        })?,
        _ => return Err(cursor.expected("a duration such as 1s after NOW +/-")),
    };
    cursor.advance();
    let unit_at = cursor.here();
    let per = match cursor.peek() {
        Some(Token::Word(w)) if w.quote_style.is_none() => unit_ns(&w.value).ok_or_else(|| {
            plan(
                format!(
                    "unknown duration unit \"{}\"; use b, u, a, s, m, h, d or w",
                    w.value
                ),
                unit_at,
            )
        })?,
        _ => return Err(cursor.expected("a duration unit (b, u, a, s, m, h, d or w)")),
    };
    cursor.advance();
    count
        .checked_mul(per)
        .map(|ns| sign * ns)
        .ok_or_else(|| plan("the duration after NOW is out of range", at))
}

/// Nanoseconds in one TDengine duration unit.
fn unit_ns(unit: &str) -> Option<i64> {
    let ns = match unit.to_ascii_lowercase().as_str() {
        "b" => 1,
        "u" => 1_000,
        "a" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        "w" => 604_800_000_000_000,
        _ => return None,
    };
    Some(ns)
}
