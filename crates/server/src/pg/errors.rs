//! Strata's errors as Postgres error responses, with the SQLSTATE codes that mean what
//! Postgres means by them (clients branch on the code, not the text) and, for errors at a
//! place in the statement, its position (characters from 1, counted in the whole query
//! string the client sent).

use pgwire::error::{ErrorInfo, PgWireError};
use strata_query::{DataFault, QueryError};

/// `syntax_error`.
pub(crate) const SYNTAX_ERROR: &str = "42601";
/// `undefined_table`.
pub(crate) const UNDEFINED_TABLE: &str = "42P01";
/// `undefined_column`.
pub(crate) const UNDEFINED_COLUMN: &str = "42703";
/// `undefined_function`.
pub(crate) const UNDEFINED_FUNCTION: &str = "42883";
/// `undefined_parameter`.
pub(crate) const UNDEFINED_PARAMETER: &str = "42P02";
/// `datatype_mismatch`.
pub(crate) const DATATYPE_MISMATCH: &str = "42804";
/// `syntax_error_or_access_rule_violation`: other planning errors.
pub(crate) const PLAN_ERROR: &str = "42000";
/// `insufficient_privilege`.
pub(crate) const INSUFFICIENT_PRIVILEGE: &str = "42501";
/// `feature_not_supported`.
pub(crate) const NOT_SUPPORTED: &str = "0A000";
/// `invalid_text_representation`: a parameter that is not of its type.
pub(crate) const INVALID_TEXT: &str = "22P02";
/// `protocol_violation`.
pub(crate) const PROTOCOL_VIOLATION: &str = "08P01";
/// `query_canceled`: a cancel request, or the statement timeout.
pub(crate) const QUERY_CANCELED: &str = "57014";
/// `invalid_password`.
pub(crate) const INVALID_PASSWORD: &str = "28P01";
/// `internal_error`.
pub(crate) const INTERNAL_ERROR: &str = "XX000";

/// An `ERROR` with `code` and `message`.
pub(crate) fn error(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(info(code, message.into())))
}

fn info(code: &str, message: String) -> ErrorInfo {
    ErrorInfo::new("ERROR".to_owned(), code.to_owned(), message)
}

/// `error` as Postgres reports it. `origin` is the text the client sent and the failed
/// statement's byte offset in it, for the error's position; `None` when the statement ran
/// is not the client's text (parameters bound, syntax rewritten): no position then.
pub(crate) fn query_error(error: &QueryError, origin: Option<(&str, usize)>) -> PgWireError {
    let message = error.to_string();
    let code = match error {
        QueryError::Syntax { .. } => SYNTAX_ERROR,
        // A string that is not of the type it is cast to, found while planning.
        QueryError::Plan { message, .. } if message.contains("Cannot cast string") => INVALID_TEXT,
        QueryError::Plan { message, .. } => plan_code(message),
        QueryError::Data { fault, .. } => data_code(*fault),
        QueryError::NotSupported { .. } => NOT_SUPPORTED,
        QueryError::Timeout { .. } => QUERY_CANCELED,
        // `insufficient_resources`, `out_of_memory`.
        QueryError::Busy { .. } => "53000",
        // `statement_too_complex`.
        QueryError::TooComplex { .. } => "54001",
        QueryError::ResourcesExhausted { .. } => "53200",
        // `read_only_sql_transaction`: a read-only query server on the lake.
        QueryError::Storage(strata_storage::StorageError::ReadOnly(_)) => "25006",
        QueryError::Storage(_) => "58000",
        QueryError::Execution { .. } => INTERNAL_ERROR,
    };
    let mut info = info(code, message);
    info.position = error
        .position()
        .zip(origin)
        .and_then(|(p, (query, offset))| {
            let statement = &query[offset..];
            let at = byte_of(statement, p.line, p.column)?;
            Some((query[..offset + at].chars().count() + 1).to_string())
        });
    PgWireError::UserError(Box::new(info))
}

/// The code Postgres gives the same fault.
fn data_code(fault: DataFault) -> &'static str {
    match fault {
        DataFault::DivisionByZero => "22012",
        DataFault::InvalidText => INVALID_TEXT,
        // `invalid_datetime_format`.
        DataFault::InvalidDatetime => "22007",
        // `numeric_value_out_of_range`.
        DataFault::OutOfRange => "22003",
        // `invalid_regular_expression`.
        DataFault::InvalidRegex => "2201B",
        // `invalid_parameter_value`.
        DataFault::InvalidArgument => "22023",
        // `cardinality_violation`.
        DataFault::MoreThanOneRow => "21000",
        // `program_limit_exceeded`, as Postgres's own `repeat` past its bound.
        DataFault::TooLarge => "54000",
    }
}

/// The code of a planning error, from DataFusion's wording.
fn plan_code(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    if lower.contains("table") && lower.contains("not found") {
        UNDEFINED_TABLE
    } else if lower.contains("no field named")
        || lower.contains("column") && lower.contains("not found")
    {
        UNDEFINED_COLUMN
    } else if lower.contains("invalid function")
        || lower.contains("function") && lower.contains("not found")
    {
        UNDEFINED_FUNCTION
    } else if lower.contains("cannot be cast")
        || lower.contains("type") && lower.contains("coercion")
    {
        DATATYPE_MISMATCH
    } else {
        PLAN_ERROR
    }
}

/// The byte offset of `line`:`column` (both from 1, column in characters) in `text`.
fn byte_of(text: &str, line: u64, column: u64) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let rest = &text[start..];
    let column = usize::try_from(column.checked_sub(1)?).ok()?;
    let within = rest
        .char_indices()
        .nth(column)
        .map_or(rest.len(), |(i, _)| i);
    Some(start + within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_query::Position;

    fn fields(error: PgWireError) -> (String, Option<String>) {
        match error {
            PgWireError::UserError(info) => (info.code, info.position),
            other => panic!("not a user error: {other}"),
        }
    }

    #[test]
    fn positions_count_characters_in_the_whole_query() {
        let query = "SELECT 'é'; SELECT\n  x FROM";
        let offset = query.find(" SELECT\n").expect("second statement");
        let error = QueryError::Syntax {
            message: "expected an expression".into(),
            position: Some(Position { line: 2, column: 3 }),
        };
        let (code, position) = fields(query_error(&error, Some((query, offset))));
        assert_eq!(code, SYNTAX_ERROR);
        // 'x' is the 22nd character of the whole text.
        assert_eq!(position.as_deref(), Some("22"));
        assert_eq!(query.chars().nth(21), Some('x'));
    }

    #[test]
    fn planning_errors_get_postgres_codes() {
        let plan = |message: &str| QueryError::Plan {
            message: message.into(),
            position: None,
        };
        let code = |e: QueryError| fields(query_error(&e, None)).0;
        assert_eq!(code(plan("table 'strata.nope' not found")), UNDEFINED_TABLE);
        assert_eq!(
            code(plan(
                "Schema error: No field named nope. Valid fields are cpu.host."
            )),
            UNDEFINED_COLUMN
        );
        assert_eq!(code(plan("Invalid function 'nope'.")), UNDEFINED_FUNCTION);
        assert_eq!(
            code(QueryError::Timeout {
                limit: std::time::Duration::from_secs(1)
            }),
            QUERY_CANCELED
        );
    }
}
