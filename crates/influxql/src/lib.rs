//! InfluxQL, InfluxDB 1.x's query language: lexer, parser and syntax tree.
//!
//! Module map:
//! - [`ast`]: the syntax tree ([`Query`], [`Statement`], [`SelectStatement`], [`Expr`], …).
//! - `lexer`: text → tokens with their byte offsets.
//! - `parser`: tokens → [`Query`]; [`parse_query`] is the entry point.
//! - [`error`]: [`ParseError`], with the line and column of the offending token.
//!
//! Path: `text → lexer (tokens) → parser (recursive descent for statements, an iterative
//! operator-precedence parser for expressions, $params substituted) → Query`. No I/O and no knowledge of what is stored:
//! the server's `/query` turns the tree into engine requests.

pub mod ast;
pub mod error;
mod lexer;
mod parser;

pub use ast::*;
pub use error::ParseError;
pub use lexer::is_keyword;
pub use parser::{parse_duration, parse_query};
