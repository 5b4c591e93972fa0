//! `DELETE FROM t [WHERE <condition>]`: removes the rows of one table in a time range, of
//! the series a tag condition selects (see `Engine::delete`). The condition is comparisons
//! of `time` (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`, with an RFC 3339 string or integer
//! nanoseconds) and of tags (`=`, `!=`, `<>`, `[NOT] IN`), joined by `AND` and `OR` and
//! grouped by parentheses; time comparisons may only be joined by `AND`, since a delete is
//! one time range.

use std::sync::Arc;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_storage::catalog::TableSchema;
use strata_storage::model::Timestamp;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine};

use super::tokens::{Cursor, plan, syntax};
use super::{Output, blocking};
use crate::error::{Position, QueryError};
use crate::minute_times::with_seconds;

/// A parsed `DELETE`, its table resolved.
#[derive(Debug)]
pub(super) struct Delete {
    table: Arc<TableSchema>,
    filter: Filter,
}

/// What a condition (or part of one) selects: a time range and the series of a tag
/// predicate.
#[derive(Debug)]
struct Filter {
    /// Inclusive start.
    start: Timestamp,
    /// Exclusive end.
    end: Timestamp,
    /// `None`: every series.
    tags: Option<TagPredicate>,
    /// Where the first time comparison is, if there is one.
    time_at: Option<Position>,
}

impl Filter {
    /// Every row of the table.
    fn all() -> Self {
        Self {
            start: Timestamp::MIN,
            end: Timestamp::MAX,
            tags: None,
            time_at: None,
        }
    }

    /// Rows both select.
    fn and(mut self, other: Filter) -> Self {
        self.start = self.start.max(other.start);
        self.end = self.end.min(other.end);
        self.tags = match (self.tags, other.tags) {
            (Some(TagPredicate::And(mut a)), Some(b)) => {
                a.push(b);
                Some(TagPredicate::And(a))
            }
            (Some(a), Some(b)) => Some(TagPredicate::And(vec![a, b])),
            (a, b) => a.or(b),
        };
        self.time_at = self.time_at.or(other.time_at);
        self
    }
}

/// Parses the rest of `DELETE FROM t [WHERE …]` after `DELETE`; the table must exist and
/// the condition name only `time` and its tags (errors in the order of the text).
pub(super) fn parse(
    engine: &Engine,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Delete, QueryError> {
    cursor.expect_keyword("FROM")?;
    let name = cursor.table_name(database)?;
    let Some(table) = engine.table(&name.database, &name.table) else {
        return Err(plan(
            format!(
                "table \"{}\" not found in database \"{}\"",
                name.table, name.database
            ),
            name.position,
        ));
    };
    let mut filter = if cursor.eat_keyword("WHERE") {
        disjunction(cursor, &table)?
    } else {
        Filter::all()
    };
    cursor.expect_end()?;
    filter.tags = filter
        .tags
        .map(|tags| with_sql_negation(tags, &|key| engine.tag_values(table.id, key)));
    Ok(Delete { table, filter })
}

/// SQL's meaning for `<>` and `NOT IN`: a series without the tag does not match (`NULL <>
/// 'v'` is not true), as in `SELECT … WHERE tag <> 'v'`, so that a `SELECT` previews a
/// `DELETE` exactly. The storage predicate's `NotEq` matches such series (InfluxDB's
/// meaning), so each becomes the list of the tag's other values today (`values_of`): a
/// delete only removes rows already written, so values that appear later do not matter.
fn with_sql_negation(
    predicate: TagPredicate,
    values_of: &dyn Fn(&str) -> Vec<String>,
) -> TagPredicate {
    match predicate {
        TagPredicate::NotEq { key, value } => {
            let values = values_of(&key)
                .into_iter()
                .filter(|v| *v != value)
                .collect();
            TagPredicate::In { key, values }
        }
        TagPredicate::And(all) => TagPredicate::And(
            all.into_iter()
                .map(|p| with_sql_negation(p, values_of))
                .collect(),
        ),
        TagPredicate::Or(any) => TagPredicate::Or(
            any.into_iter()
                .map(|p| with_sql_negation(p, values_of))
                .collect(),
        ),
        other => other,
    }
}

/// `a OR b OR …`, of tag conditions only.
fn disjunction(cursor: &mut Cursor, table: &TableSchema) -> Result<Filter, QueryError> {
    let first = conjunction(cursor, table)?;
    if !cursor.at_keyword("OR") {
        return Ok(first);
    }
    let mut alternatives = vec![first];
    while cursor.eat_keyword("OR") {
        alternatives.push(conjunction(cursor, table)?);
    }
    if let Some(at) = alternatives.iter().find_map(|f| f.time_at) {
        return Err(plan(
            "a DELETE removes one time range: time conditions can only be combined with AND",
            at,
        ));
    }
    // Each alternative compares a tag, so each has a predicate.
    let predicates = alternatives.into_iter().filter_map(|f| f.tags).collect();
    Ok(Filter {
        tags: Some(TagPredicate::Or(predicates)),
        ..Filter::all()
    })
}

/// `a AND b AND …`.
fn conjunction(cursor: &mut Cursor, table: &TableSchema) -> Result<Filter, QueryError> {
    let mut filter = primary(cursor, table)?;
    while cursor.eat_keyword("AND") {
        filter = filter.and(primary(cursor, table)?);
    }
    Ok(filter)
}

/// `( condition )` or one comparison.
fn primary(cursor: &mut Cursor, table: &TableSchema) -> Result<Filter, QueryError> {
    if cursor.eat(&Token::LParen) {
        let filter = disjunction(cursor, table)?;
        cursor.expect(&Token::RParen, "\")\"")?;
        return Ok(filter);
    }
    let (column, at) = cursor.identifier("a time or tag comparison")?;
    if column == "time" {
        return time_comparison(cursor, at);
    }
    check_column(table, &column, at)?;
    tag_comparison(cursor, column)
}

/// The rest of a comparison of `time` (at `at`), as a time range.
fn time_comparison(cursor: &mut Cursor, at: Position) -> Result<Filter, QueryError> {
    let (start, end) = if cursor.eat_keyword("BETWEEN") {
        let low = timestamp(cursor)?;
        cursor.expect_keyword("AND")?;
        let high = timestamp(cursor)?;
        (low, high.saturating_add(1))
    } else {
        let op = cursor.peek().cloned();
        match op {
            Some(Token::Eq | Token::Lt | Token::LtEq | Token::Gt | Token::GtEq) => {
                cursor.advance();
            }
            _ => return Err(unsupported(cursor, "time", "=, <, <=, >, >= or BETWEEN")),
        }
        let value = timestamp(cursor)?;
        match op {
            Some(Token::Eq) => (value, value.saturating_add(1)),
            Some(Token::Lt) => (Timestamp::MIN, value),
            Some(Token::LtEq) => (Timestamp::MIN, value.saturating_add(1)),
            Some(Token::Gt) => (value.saturating_add(1), Timestamp::MAX),
            _ => (value, Timestamp::MAX),
        }
    };
    Ok(Filter {
        start,
        end,
        time_at: Some(at),
        ..Filter::all()
    })
}

/// The rest of a comparison of tag `key` with string literals.
fn tag_comparison(cursor: &mut Cursor, key: String) -> Result<Filter, QueryError> {
    let predicate = match cursor.peek().cloned() {
        Some(Token::Eq) => {
            cursor.advance();
            TagPredicate::Eq {
                key,
                value: string(cursor)?,
            }
        }
        Some(Token::Neq) => {
            cursor.advance();
            TagPredicate::NotEq {
                key,
                value: string(cursor)?,
            }
        }
        _ if cursor.eat_keyword("IN") => TagPredicate::In {
            key,
            values: strings(cursor)?,
        },
        _ if cursor.at_keyword("NOT") => {
            cursor.advance();
            cursor.expect_keyword("IN")?;
            let values = strings(cursor)?;
            // Each `NotEq` becomes the tag's other values (SQL's meaning) after parsing.
            TagPredicate::And(
                values
                    .into_iter()
                    .map(|value| TagPredicate::NotEq {
                        key: key.clone(),
                        value,
                    })
                    .collect(),
            )
        }
        _ => return Err(unsupported(cursor, "a tag", "=, !=, <>, IN or NOT IN")),
    };
    Ok(Filter {
        tags: Some(predicate),
        ..Filter::all()
    })
}

/// The error for an operator a DELETE cannot apply to `what`.
fn unsupported(cursor: &Cursor, what: &str, allowed: &str) -> QueryError {
    let found = match cursor.peek() {
        Some(token) => format!("\"{token}\""),
        None => return cursor.expected(allowed),
    };
    plan(
        format!("DELETE cannot compare {what} with {found}: use {allowed}"),
        cursor.here(),
    )
}

/// A `'string'` literal.
fn string(cursor: &mut Cursor) -> Result<String, QueryError> {
    cursor
        .eat_string()
        .ok_or_else(|| cursor.expected("a string literal"))
}

/// `('a', 'b', …)`.
fn strings(cursor: &mut Cursor) -> Result<Vec<String>, QueryError> {
    cursor.expect(&Token::LParen, "\"(\"")?;
    let mut values = vec![string(cursor)?];
    while cursor.eat(&Token::Comma) {
        values.push(string(cursor)?);
    }
    cursor.expect(&Token::RParen, "\")\"")?;
    Ok(values)
}

/// A time: `'2024-01-01T00:00:00Z'` (RFC 3339; without an offset, UTC), optionally after
/// `TIMESTAMP`, or an integer of nanoseconds since the epoch.
fn timestamp(cursor: &mut Cursor) -> Result<Timestamp, QueryError> {
    cursor.eat_keyword("TIMESTAMP");
    let at = cursor.here();
    let negative = cursor.eat(&Token::Minus);
    match cursor.peek() {
        Some(Token::SingleQuotedString(text)) if !negative => {
            let text = text.clone();
            cursor.advance();
            parse_time(&text).ok_or_else(|| {
                syntax(
                    format!(
                        "invalid time '{text}': expected RFC 3339, such as '2024-01-01T00:00:00Z'"
                    ),
                    at,
                )
            })
        }
        Some(Token::Number(digits, _)) => {
            let text = if negative {
                format!("-{digits}")
            } else {
                digits.clone()
            };
            cursor.advance();
            text.parse::<Timestamp>().map_err(|_| {
                syntax(
                    format!("invalid time {text}: expected an integer of nanoseconds"),
                    at,
                )
            })
        }
        _ => Err(cursor.expected("a time ('2024-01-01T00:00:00Z' or integer nanoseconds)")),
    }
}

/// Nanoseconds of an RFC 3339 time, or of `2024-01-01[ T]00:00:00[.f]` and `2024-01-01`
/// taken as UTC (as SQL's `TIMESTAMP '…'` reads them).
fn parse_time(text: &str) -> Option<Timestamp> {
    let text = &*with_seconds(text);
    let parsed = chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_time(chrono::NaiveTime::MIN).and_utc())
        })
        .ok()?;
    parsed.timestamp_nanos_opt()
}

/// Deletes (durably; see `Engine::delete`, which flushes every memtable first).
pub(super) async fn execute(engine: &Arc<Engine>, delete: Delete) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    let Delete { table, filter } = delete;
    blocking(move || {
        engine
            .delete(&DeleteRequest {
                table: table.id,
                start: filter.start,
                end: filter.end,
                predicate: filter.tags,
            })
            .map_err(QueryError::Storage)?;
        Ok(Output::empty())
    })
    .await
}

/// A DELETE filters on time and tags only: `column` must be a tag of `schema`.
fn check_column(schema: &TableSchema, column: &str, at: Position) -> Result<(), QueryError> {
    if schema.tags.iter().any(|t| t == column) {
        return Ok(());
    }
    if schema.field(column).is_some() {
        return Err(plan(
            format!("DELETE can only filter on time and tags; {column} is a field"),
            at,
        ));
    }
    Err(plan(
        format!(
            "column \"{column}\" not found in table \"{}\": DELETE can only filter on time and tags",
            schema.name
        ),
        at,
    ))
}
