//! [`QueryError`]: what a statement can fail with, carrying DataFusion's message and, where
//! DataFusion knows it, the position in the statement.

use datafusion::common::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;
use strata_storage::StorageError;

pub use crate::data_fault::DataFault;
use crate::data_fault::data_fault;

/// A place in a statement: line and column, both from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Line, from 1.
    pub line: u64,
    /// Column (in characters), from 1.
    pub column: u64,
}

/// Why a statement failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The statement is not valid SQL.
    #[error("syntax error: {message}")]
    Syntax {
        /// DataFusion's (sqlparser's) message.
        message: String,
        /// Where the parser stopped.
        position: Option<Position>,
    },
    /// Valid SQL that cannot be planned: unknown table, column or function, wrong types.
    #[error("{message}")]
    Plan {
        /// DataFusion's message.
        message: String,
        /// The offending part of the statement, where DataFusion gives it.
        position: Option<Position>,
    },
    /// A statement or feature not (yet) supported: DDL, DML, `SET`, …
    #[error("not supported: {message}")]
    NotSupported {
        /// DataFusion's message.
        message: String,
    },
    /// The storage engine failed while the query read it.
    #[error("storage: {0}")]
    Storage(#[source] StorageError),
    /// The statement's data or arguments cannot be computed: a division by zero, a string
    /// cast to a type it is not, an argument a function refuses (the client's fault).
    #[error("{message}")]
    Data {
        /// The cause's message, without DataFusion's wrapping.
        message: String,
        /// What kind of fault it is.
        fault: DataFault,
    },
    /// The query failed while running, not for its data (the server's fault).
    #[error("{message}")]
    Execution {
        /// DataFusion's message.
        message: String,
    },
    /// The statement ran past [`crate::QueryOptions::timeout`] and was cancelled.
    #[error("query timed out after {}", humantime_ms(*limit))]
    Timeout {
        /// The limit it ran past.
        limit: std::time::Duration,
    },
    /// Too many statements were running and waiting for a slot; try again later.
    #[error("too many queries: {limit} running and {queued} waiting; retry later")]
    Busy {
        /// Statements that may run at once ([`crate::QueryOptions::max_concurrent`]).
        limit: usize,
        /// Statements that may wait for a slot ([`crate::QueryOptions::max_queued`]).
        queued: usize,
    },
    /// The statement is too complex to plan safely: an expression nested deeper than
    /// [`crate::nesting::MAX_EXPRESSION_DEPTH`] levels.
    #[error("{message}")]
    TooComplex {
        /// What bound it passed.
        message: String,
        /// Where it passed it.
        position: Option<Position>,
    },
    /// The statement needed more memory than [`crate::QueryOptions::memory_limit`] leaves.
    #[error("query memory limit reached: {message}")]
    ResourcesExhausted {
        /// DataFusion's message (which operator asked for how much).
        message: String,
    },
}

/// A duration as "250ms" or "60s" for messages.
fn humantime_ms(limit: std::time::Duration) -> String {
    if limit.subsec_millis() == 0 && limit.as_secs() > 0 {
        format!("{}s", limit.as_secs())
    } else {
        format!("{}ms", limit.as_millis())
    }
}

impl QueryError {
    /// Where in the statement the error is, when known.
    pub fn position(&self) -> Option<Position> {
        match self {
            QueryError::Syntax { position, .. }
            | QueryError::Plan { position, .. }
            | QueryError::TooComplex { position, .. } => *position,
            _ => None,
        }
    }

    /// A short stable name of the error's kind, for machine-readable output: `syntax`,
    /// `plan`, `not_supported`, `storage`, `data`, `execution`, `timeout`, `busy`,
    /// `too_complex` or `resources_exhausted`.
    pub fn kind(&self) -> &'static str {
        match self {
            QueryError::Syntax { .. } => "syntax",
            QueryError::Plan { .. } => "plan",
            QueryError::NotSupported { .. } => "not_supported",
            QueryError::Storage(_) => "storage",
            QueryError::Data { .. } => "data",
            QueryError::Execution { .. } => "execution",
            QueryError::Timeout { .. } => "timeout",
            QueryError::Busy { .. } => "busy",
            QueryError::TooComplex { .. } => "too_complex",
            QueryError::ResourcesExhausted { .. } => "resources_exhausted",
        }
    }
}

impl QueryError {
    /// Drops a position at line 0: sqlparser gives some nodes (a `SHOW`, a string where a
    /// name belongs) an empty span, and positions count from 1.
    pub(crate) fn without_empty_position(mut self) -> Self {
        if let QueryError::Syntax { position, .. } | QueryError::Plan { position, .. } = &mut self
            && position.is_some_and(|p| p.line == 0)
        {
            *position = None;
        }
        self
    }

    /// A syntax error at the end of input ("found: EOF") comes without a position; it is
    /// just past the last character of `statement`.
    pub(crate) fn at_end_if_unplaced(self, statement: &str) -> Self {
        match self {
            QueryError::Syntax {
                message,
                position: None,
            } if message.contains("found: EOF") => {
                let line = statement.lines().count().max(1) as u64;
                let last = statement.lines().last().unwrap_or("");
                let column = last.chars().count() as u64 + 1;
                QueryError::Syntax {
                    message,
                    position: Some(Position { line, column }),
                }
            }
            other => other,
        }
    }
}

impl From<DataFusionError> for QueryError {
    fn from(err: DataFusionError) -> Self {
        let position = err
            .diagnostic()
            .and_then(|d| d.span)
            .map(|span| Position {
                line: span.start.line,
                column: span.start.column,
            })
            .filter(|p| p.line > 0);
        let message = err.strip_backtrace();
        let root = err.find_root();
        match root {
            DataFusionError::SQL(parser, _)
                if matches!(**parser, ParserError::RecursionLimitExceeded) =>
            {
                QueryError::TooComplex {
                    message: "statement too deeply nested: parentheses, subqueries or unary \
                              operators more than 50 levels deep"
                        .to_string(),
                    position,
                }
            }
            DataFusionError::SQL(parser, _) => {
                let text = parser_text(parser);
                let (words, at) = split_position(&text);
                QueryError::Syntax {
                    position: position.or(at),
                    message: words.to_string(),
                }
            }
            DataFusionError::Plan(_) | DataFusionError::SchemaError(..) => {
                QueryError::Plan { message, position }
            }
            DataFusionError::NotImplemented(_) => QueryError::NotSupported { message },
            DataFusionError::ResourcesExhausted(_) => QueryError::ResourcesExhausted { message },
            DataFusionError::External(e) => match e.downcast_ref::<StorageError>() {
                Some(_) => match err_into_storage(err) {
                    Ok(storage) => QueryError::Storage(storage),
                    Err(message) => QueryError::Execution { message },
                },
                None => data_or_execution(&err, message),
            },
            _ => data_or_execution(&err, message),
        }
    }
}

/// `err` as [`QueryError::Data`] when its cause is the data's, else as
/// [`QueryError::Execution`] with `message`.
fn data_or_execution(err: &DataFusionError, message: String) -> QueryError {
    match data_fault(err) {
        Some((fault, message)) => QueryError::Data { message, fault },
        None => QueryError::Execution { message },
    }
}

/// The storage error inside `err`, taken out; its message when it cannot be.
fn err_into_storage(err: DataFusionError) -> Result<StorageError, String> {
    let message = err.strip_backtrace();
    let mut err = err;
    loop {
        err = match err {
            DataFusionError::External(e) => {
                return e
                    .downcast::<StorageError>()
                    .map(|b| *b)
                    .map_err(|_| message);
            }
            DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => *inner,
            _ => return Err(message),
        }
    }
}

/// The parser's own words ("Expected: …, found: …"), without DataFusion's wrapping of
/// them in `SQL error: ParserError("…")`.
fn parser_text(error: &ParserError) -> String {
    match error {
        ParserError::ParserError(text) | ParserError::TokenizerError(text) => text.clone(),
        ParserError::RecursionLimitExceeded => "statement nested too deeply".to_string(),
    }
}

/// sqlparser ends its messages with ` at Line: L, Column: C`: the words before it, and the
/// position, when the message has one (the error carries the position on its own, and
/// every output shows it); the whole message and `None` otherwise.
fn split_position(message: &str) -> (&str, Option<Position>) {
    const AT: &str = " at Line: ";
    let Some(at) = message.rfind(AT) else {
        return (message, None);
    };
    let position = (|| {
        let (line, rest) = message[at + AT.len()..].split_once(", Column: ")?;
        let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some(Position {
            line: line.trim().parse().ok()?,
            column: column.parse().ok()?,
        })
    })();
    match position {
        Some(_) => (&message[..at], position),
        None => (message, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_positions_are_read_from_the_message() {
        assert_eq!(
            split_position(
                "sql parser error: Expected: end of statement, found: x at Line: 2, Column: 17"
            )
            .1,
            Some(Position {
                line: 2,
                column: 17
            })
        );
        assert_eq!(split_position("no position here").1, None);
    }

    #[test]
    fn syntax_errors_read_as_the_parser_wrote_them_without_the_position() {
        let err = QueryError::from(DataFusionError::SQL(
            Box::new(ParserError::ParserError(
                "Expected: ), found: 4 at Line: 3, Column: 6".to_string(),
            )),
            None,
        ));
        assert_eq!(err.to_string(), "syntax error: Expected: ), found: 4");
        assert_eq!(err.position(), Some(Position { line: 3, column: 6 }));
        // A message without a position keeps its words.
        assert_eq!(
            split_position("Expected: x at Line: y"),
            ("Expected: x at Line: y", None)
        );
        assert_eq!(split_position("no position"), ("no position", None));
    }
}
