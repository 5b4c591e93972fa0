//! [`ParseError`]: why a query could not be parsed, and where.

use thiserror::Error;

/// A query that could not be parsed: what was wrong and the position of the offending
/// token (or of the end of the text, for `found EOF, …`).
///
/// Displays like InfluxDB's errors, so clients that show them verbatim read the same:
/// `found FROM, expected identifier, string, number, bool at line 1, char 8`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{message} at line {line}, char {column}")]
pub struct ParseError {
    /// What was wrong, in InfluxDB's words where it has some (`found X, expected Y`).
    pub message: String,
    /// 1-based line (every `\n` starts a new one).
    pub line: usize,
    /// 1-based column within the line, in characters (not bytes).
    pub column: usize,
    /// Byte offset into the query text.
    pub offset: usize,
}

impl ParseError {
    /// An error at byte `offset` of `text`; line and column are derived from it.
    pub(crate) fn at(text: &str, offset: usize, message: impl Into<String>) -> Self {
        // Offsets come from the lexer and are char boundaries; clamping keeps a
        // wrong one from panicking anyway.
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = text.get(..offset).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Self {
            message: message.into(),
            line: before.matches('\n').count() + 1,
            column: before.get(line_start..).unwrap_or_default().chars().count() + 1,
            offset,
        }
    }
}
