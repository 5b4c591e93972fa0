//! The literals `INSERT … VALUES` takes, checked against the column they go to and turned
//! into line protocol values.
//!
//! - `time`: an integer (nanoseconds since the epoch), an RFC 3339 string or
//!   `TIMESTAMP '…'` (no offset = UTC), or `now()` (the engine's clock at the write).
//! - tags: strings; `NULL` leaves the tag out (the series has no such tag).
//! - fields: numbers for float, integer (no fraction or exponent) and unsigned (not
//!   negative) columns, `TRUE`/`FALSE`, strings; `NULL` leaves the field out of the row.
//!
//! sqlparser reads the literals of standard `INSERT`s; TDengine's `INSERT … USING … TAGS`
//! is read token by token, and [`token_literal`] reads its literals into the same
//! [`Literal`]s, so both are checked by the same rules.

use std::borrow::Cow;

use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use datafusion::sql::sqlparser::ast::{
    DataType as SqlType, Expr, FunctionArguments, Spanned, UnaryOperator, Value,
};
use strata_lineproto::{FieldValue, Precision};
use strata_storage::model::FieldType;

use datafusion::sql::sqlparser::tokenizer::Token;

use super::row_writer;
use super::tokens::{Cursor, plan, position};
use crate::error::{Position, QueryError};
use crate::minute_times::with_seconds;

/// A literal of a `VALUES` row.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    /// A number as written (sign included).
    Number(String),
    /// A `'string'`.
    Text(String),
    /// `TRUE` or `FALSE`.
    Boolean(bool),
    /// `NULL`.
    Null,
    /// `TIMESTAMP '…'`.
    Timestamp(String),
    /// `now()`.
    Now,
}

impl Literal {
    /// How the literal reads in messages.
    pub(super) fn describe(&self) -> String {
        match self {
            Literal::Number(n) => n.clone(),
            Literal::Text(s) => format!("'{s}'"),
            Literal::Boolean(b) => b.to_string().to_uppercase(),
            Literal::Null => "NULL".to_string(),
            Literal::Timestamp(s) => format!("TIMESTAMP '{s}'"),
            Literal::Now => "now()".to_string(),
        }
    }
}

/// Where `expr` starts.
pub(super) fn start_of(expr: &Expr) -> Position {
    position(expr.span().start)
}

/// `value` cast to `data_type` as a literal: a string to a timestamp is a timestamp, a
/// number to text is its digits, a string to a number is the number it holds; any other
/// cast leaves the literal as it is, for the column's rules to check.
fn cast_literal(value: Literal, data_type: &SqlType, at: Position) -> Result<Literal, QueryError> {
    // The type's first word (`DOUBLE PRECISION`, `VARCHAR(60)`, `NUMERIC(10, 2)`): a
    // prefix would take `INTERVAL` for `INT`.
    let name = data_type.to_string().to_ascii_uppercase();
    let word = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or_default();
    let numeric = [
        "INT", "INT2", "INT4", "INT8", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "FLOAT",
        "FLOAT4", "FLOAT8", "DOUBLE", "REAL", "NUMERIC", "DECIMAL",
    ]
    .contains(&word);
    let text = ["TEXT", "VARCHAR", "CHAR", "CHARACTER", "STRING"].contains(&word);
    match value {
        Literal::Text(s) | Literal::Timestamp(s) if matches!(data_type, SqlType::Timestamp(..)) => {
            Ok(Literal::Timestamp(s))
        }
        Literal::Text(s) if numeric => {
            let number = s.trim();
            if number.parse::<f64>().is_ok() {
                Ok(Literal::Number(number.to_owned()))
            } else {
                Err(plan(format!("'{s}' is not a number ({data_type})"), at))
            }
        }
        Literal::Number(n) if text => Ok(Literal::Text(n)),
        other => Ok(other),
    }
}

/// The literal `expr` is; anything else (a column, an expression) is an error at it.
pub(super) fn literal(expr: &Expr) -> Result<Literal, QueryError> {
    let at = start_of(expr);
    match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Ok(Literal::Number(n.clone())),
            Value::SingleQuotedString(s) => Ok(Literal::Text(s.clone())),
            Value::Boolean(b) => Ok(Literal::Boolean(*b)),
            Value::Null => Ok(Literal::Null),
            other => Err(plan(format!("unsupported literal {other}"), at)),
        },
        Expr::UnaryOp { op, expr: inner } => match (op, literal(inner)?) {
            (UnaryOperator::Minus, Literal::Number(n)) => match n.strip_prefix('-') {
                Some(positive) => Ok(Literal::Number(positive.to_string())),
                None => Ok(Literal::Number(format!("-{n}"))),
            },
            (UnaryOperator::Plus, Literal::Number(n)) => Ok(Literal::Number(n)),
            _ => Err(plan(format!("VALUES take literals, not {expr}"), at)),
        },
        Expr::Nested(inner) => literal(inner),
        // `'…'::TIMESTAMP`, `1.5::FLOAT`: a cast of a literal, as ORMs write their
        // parameters (SQLAlchemy's `%(t)s::TIMESTAMP WITHOUT TIME ZONE`).
        Expr::Cast {
            expr: inner,
            data_type,
            ..
        } => cast_literal(literal(inner)?, data_type, at),
        Expr::TypedString(typed) if matches!(typed.data_type, SqlType::Timestamp(..)) => {
            match &typed.value.value {
                Value::SingleQuotedString(s) => Ok(Literal::Timestamp(s.clone())),
                other => Err(plan(format!("TIMESTAMP takes a string, not {other}"), at)),
            }
        }
        Expr::Function(f)
            if f.name.to_string().eq_ignore_ascii_case("now")
                && match &f.args {
                    FunctionArguments::List(list) => list.args.is_empty(),
                    FunctionArguments::None => true,
                    FunctionArguments::Subquery(_) => false,
                } =>
        {
            Ok(Literal::Now)
        }
        Expr::Identifier(ident) if ident.quote_style == Some('"') => Err(plan(
            format!(
                "\"{}\" is a quoted name; strings take single quotes: '{}'",
                ident.value, ident.value
            ),
            at,
        )),
        _ => Err(plan(
            format!(
                "VALUES take literals (numbers, 'strings', TRUE, FALSE, NULL, TIMESTAMP '…', now()), not {expr}"
            ),
            at,
        )),
    }
}

/// The literal at the cursor, read token by token, and where it starts: a number (signed),
/// a `'string'` (or TDengine's `"string"`), `TRUE`, `FALSE`, `NULL`, `NOW` or `NOW()`, or
/// `TIMESTAMP '…'`.
pub(super) fn token_literal(cursor: &mut Cursor) -> Result<(Literal, Position), QueryError> {
    let at = cursor.here();
    let sign = match cursor.peek() {
        Some(Token::Minus) => Some("-"),
        Some(Token::Plus) => Some(""),
        _ => None,
    };
    if let Some(sign) = sign {
        cursor.advance();
        let Some(Token::Number(n, _)) = cursor.peek() else {
            return Err(cursor.expected("a number after the sign"));
        };
        let literal = Literal::Number(format!("{sign}{n}"));
        cursor.advance();
        return Ok((literal, at));
    }
    let literal = match cursor.peek() {
        Some(Token::Number(n, _)) => Literal::Number(n.clone()),
        Some(Token::SingleQuotedString(s)) => Literal::Text(s.clone()),
        // TDengine takes double quotes for strings too.
        Some(Token::Word(w)) if w.quote_style == Some('"') => Literal::Text(w.value.clone()),
        Some(Token::Word(w)) if w.quote_style.is_none() => {
            match w.value.to_ascii_uppercase().as_str() {
                "TRUE" => Literal::Boolean(true),
                "FALSE" => Literal::Boolean(false),
                "NULL" => Literal::Null,
                "NOW" => {
                    cursor.advance();
                    if cursor.eat(&Token::LParen) {
                        cursor.expect(&Token::RParen, "\")\" after NOW(")?;
                    }
                    return Ok((Literal::Now, at));
                }
                "TIMESTAMP" => {
                    cursor.advance();
                    let Some(text) = cursor.eat_string() else {
                        return Err(cursor.expected("a 'string' after TIMESTAMP"));
                    };
                    return Ok((Literal::Timestamp(text), at));
                }
                _ => return Err(value_expected(cursor)),
            }
        }
        _ => return Err(value_expected(cursor)),
    };
    cursor.advance();
    Ok((literal, at))
}

fn value_expected(cursor: &Cursor) -> QueryError {
    cursor.expected("a value (a number, 'string', TRUE, FALSE, NULL, NOW or TIMESTAMP '…')")
}

/// The row's time in nanoseconds, `None` for `now()`. An integer counts `unit` since the
/// epoch (a table declared `time BIGINT`), or nanoseconds.
pub(super) fn time(
    literal: &Literal,
    unit: Option<Precision>,
    at: Position,
) -> Result<Option<i64>, QueryError> {
    match literal {
        Literal::Number(n) => {
            let unit = unit.unwrap_or(Precision::Nanoseconds);
            let name = match unit {
                Precision::Nanoseconds => "nanoseconds",
                Precision::Microseconds => "microseconds",
                Precision::Milliseconds => "milliseconds",
                Precision::Seconds => "seconds",
            };
            let per = unit.nanos_per_unit();
            let count = n.parse::<i64>().map_err(|_| {
                plan(
                    format!("time {n} is not an integer number of {name} since the epoch"),
                    at,
                )
            })?;
            count.checked_mul(per).map(Some).ok_or_else(|| {
                plan(
                    format!(
                        "time {n} ({name}) is out of range: times run from 1677-09-21 to \
                         2262-04-11"
                    ),
                    at,
                )
            })
        }
        Literal::Text(s) | Literal::Timestamp(s) => string_to_timestamp_nanos(&with_seconds(s))
            .map(Some)
            .map_err(|e| plan(format!("time '{s}' is not an RFC 3339 timestamp: {e}"), at)),
        Literal::Now => Ok(None),
        Literal::Null => Err(plan("time cannot be NULL: every row needs one", at)),
        Literal::Boolean(_) => Err(plan(format!("time cannot be {}", literal.describe()), at)),
    }
}

/// The value of tag `tag`, `None` for `NULL`.
pub(super) fn tag(
    literal: &Literal,
    tag: &str,
    at: Position,
) -> Result<Option<String>, QueryError> {
    match literal {
        Literal::Null => Ok(None),
        Literal::Text(s) if s.is_empty() => Err(plan(
            format!("tag \"{tag}\" cannot be empty; use NULL to leave it out"),
            at,
        )),
        Literal::Text(s) => Ok(Some(s.clone())),
        other => Err(plan(
            format!("tag \"{tag}\" takes a string, not {}", other.describe()),
            at,
        )),
    }
}

/// The value of field `field` of type `field_type`, `None` for `NULL`.
pub(super) fn field(
    literal: &Literal,
    field: &str,
    field_type: FieldType,
    at: Position,
) -> Result<Option<FieldValue<'static>>, QueryError> {
    if *literal == Literal::Null {
        return Ok(None);
    }
    let mismatch = || {
        plan(
            format!(
                "column \"{field}\" is {field_type}; {} is not",
                literal.describe()
            ),
            at,
        )
    };
    let value = match (field_type, literal) {
        (FieldType::Float, Literal::Number(n)) => {
            let v: f64 = n.parse().map_err(|_| mismatch())?;
            if !v.is_finite() {
                return Err(plan(format!("{n} is out of the float range"), at));
            }
            FieldValue::Float(v)
        }
        (FieldType::Integer, Literal::Number(n)) => FieldValue::Integer(
            n.parse()
                .map_err(|_| integer_error(n, field, field_type, at))?,
        ),
        (FieldType::Unsigned, Literal::Number(n)) => FieldValue::UInteger(
            n.parse()
                .map_err(|_| integer_error(n, field, field_type, at))?,
        ),
        (FieldType::Boolean, Literal::Boolean(b)) => FieldValue::Boolean(*b),
        (FieldType::String, Literal::Text(s)) => FieldValue::String(Cow::Owned(s.clone())),
        // A quoted literal is read as its column's type, as Postgres reads an untyped
        // one (`'3.5'` for a float, `'t'` for a boolean) and as `COPY` reads text. Drivers
        // that send every parameter as untyped text (node-postgres) insert this way.
        (_, Literal::Text(s)) => match row_writer::field(s, field, field_type)
            .map_err(|e| plan(format!("column \"{field}\" is {field_type}: {e}"), at))?
        {
            FieldValue::String(text) => FieldValue::String(Cow::Owned(text.into_owned())),
            FieldValue::Float(v) => FieldValue::Float(v),
            FieldValue::Integer(v) => FieldValue::Integer(v),
            FieldValue::UInteger(v) => FieldValue::UInteger(v),
            FieldValue::Boolean(v) => FieldValue::Boolean(v),
        },
        _ => return Err(mismatch()),
    };
    Ok(Some(value))
}

fn integer_error(n: &str, field: &str, field_type: FieldType, at: Position) -> QueryError {
    let integral = n
        .trim_start_matches('-')
        .bytes()
        .all(|b| b.is_ascii_digit());
    let reason = if !integral {
        "not an integer"
    } else if field_type == FieldType::Unsigned && n.starts_with('-') {
        "negative"
    } else {
        "out of its range"
    };
    plan(
        format!("column \"{field}\" is {field_type}; {n} is {reason}"),
        at,
    )
}
