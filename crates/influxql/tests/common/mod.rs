//! Helpers shared by the parser tests: parse-or-panic wrappers and short AST builders.

#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;

use strata_influxql::{
    BinaryOp, Expr, Field, MeasurementName, MeasurementRef, ParseError, Query, SelectStatement,
    Source, Statement, VarType, parse_query,
};

/// Parses `text` with no parameters, panicking with the error if it fails.
pub fn parse(text: &str) -> Query {
    match parse_query(text, &HashMap::new()) {
        Ok(q) => q,
        Err(e) => panic!("{text:?} failed to parse: {e}"),
    }
}

/// The only statement of `text`.
pub fn statement(text: &str) -> Statement {
    let mut q = parse(text);
    assert_eq!(q.statements.len(), 1, "{text:?}: {q:?}");
    q.statements.pop().unwrap()
}

/// The only statement of `text`, which must be a SELECT.
pub fn select(text: &str) -> SelectStatement {
    match statement(text) {
        Statement::Select(s) => *s,
        other => panic!("{text:?} is not a SELECT: {other:?}"),
    }
}

/// The error parsing `text` with no parameters, panicking if it parses.
pub fn error(text: &str) -> ParseError {
    match parse_query(text, &HashMap::new()) {
        Ok(q) => panic!("{text:?} parsed: {q:?}"),
        Err(e) => e,
    }
}

/// The error as displayed.
pub fn error_text(text: &str) -> String {
    error(text).to_string()
}

/// A SELECT with the given fields and sources, every other clause at its default.
pub fn base_select(fields: Vec<Field>, sources: Vec<Source>) -> SelectStatement {
    SelectStatement {
        fields,
        sources,
        condition: None,
        dimensions: Vec::new(),
        fill: strata_influxql::Fill::Null,
        order_desc: false,
        limit: None,
        offset: None,
        slimit: None,
        soffset: None,
        timezone: None,
    }
}

/// A variable reference without a cast.
pub fn var(name: &str) -> Expr {
    Expr::VarRef {
        name: name.to_string(),
        cast: None,
    }
}

/// A variable reference with a cast.
pub fn var_cast(name: &str, cast: VarType) -> Expr {
    Expr::VarRef {
        name: name.to_string(),
        cast: Some(cast),
    }
}

/// A string literal.
pub fn string(s: &str) -> Expr {
    Expr::String(s.to_string())
}

/// A regex literal.
pub fn regex(s: &str) -> Expr {
    Expr::Regex(s.to_string())
}

/// `lhs op rhs`.
pub fn bin(op: BinaryOp, lhs: Expr, rhs: Expr) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(lhs),
        rhs: Box::new(rhs),
    }
}

/// `( e )`.
pub fn paren(e: Expr) -> Expr {
    Expr::Paren(Box::new(e))
}

/// A call.
pub fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Call {
        name: name.to_string(),
        args,
    }
}

/// A field without alias.
pub fn field(expr: Expr) -> Field {
    Field { expr, alias: None }
}

/// A field with an alias.
pub fn aliased(expr: Expr, alias: &str) -> Field {
    Field {
        expr,
        alias: Some(alias.to_string()),
    }
}

/// An unqualified measurement.
pub fn measurement(name: &str) -> MeasurementRef {
    MeasurementRef {
        database: None,
        retention_policy: None,
        name: MeasurementName::Name(name.to_string()),
    }
}

/// An unqualified measurement as a FROM source.
pub fn from(name: &str) -> Source {
    Source::Measurement(measurement(name))
}

/// Nanoseconds in one second.
pub const SEC: i64 = 1_000_000_000;
