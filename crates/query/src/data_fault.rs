//! Errors that a statement's data or arguments cause while it runs — a division by zero, a
//! string cast to a type it is not, an invalid regular expression, an argument a function
//! refuses — told apart from the server's own failures, so that clients get a client
//! error (HTTP 400, a Postgres class 22 SQLSTATE) and not an internal one.
//!
//! DataFusion reports these as Arrow's typed errors, as `Execution` ("returned when an
//! error happens during execution due to a malformed input. For example, the user passed
//! invalid arguments to a function"), or as the `regex` (or `regex-syntax`) crate's error;
//! its own bugs are `Internal`, and a failed task is `ExecutionJoin`.

use std::error::Error;
use std::fmt;

use datafusion::arrow::error::ArrowError;
use datafusion::common::DataFusionError;
use strata_storage::StorageError;

/// What about the data or the arguments made a statement fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataFault {
    /// An integer or decimal division (or remainder) by zero.
    DivisionByZero,
    /// A string that is not of the type it is read as: `CAST('abc' AS INT)`.
    InvalidText,
    /// A string that is not a date or time: `CAST('x' AS TIMESTAMP)`, `to_timestamp('x')`.
    InvalidDatetime,
    /// A value out of its type's range: `CAST(300 AS TINYINT)`, `abs(i64::MIN)`.
    OutOfRange,
    /// A regular expression that does not compile.
    InvalidRegex,
    /// An argument a function refuses: `generate_series(1, 10, 0)`, `make_date(2020, 13, 1)`.
    InvalidArgument,
    /// A scalar subquery that returned more than one row.
    MoreThanOneRow,
    /// A result (or `levenshtein`'s work) past a bound: [`TooLarge`], or a string column
    /// past Arrow's 2 GiB offsets.
    TooLarge,
}

/// A function's result or work past a bound Strata sets (`repeat` asked for more than
/// 256 MiB; see `functions/bounded.rs`).
#[derive(Debug)]
pub(crate) struct TooLarge(pub(crate) String);

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for TooLarge {}

impl From<TooLarge> for DataFusionError {
    fn from(err: TooLarge) -> Self {
        DataFusionError::External(Box::new(err))
    }
}

/// The data fault `err` reports, with the message of its cause alone (without DataFusion's
/// wrapping: "Optimizer rule 'simplify_expressions' failed", "Arrow error: "); `None` when
/// it is not one. The deepest cause that is one decides: an optimizer's failure wrapping a
/// cast's is the cast's. A storage error is the server's, whatever its own cause.
pub(crate) fn data_fault(err: &DataFusionError) -> Option<(DataFault, String)> {
    let mut found = None;
    let mut cause: Option<&(dyn Error + 'static)> = Some(err);
    while let Some(e) = cause {
        if e.is::<StorageError>() {
            return None;
        }
        if let Some(fault) = fault_of(e) {
            found = Some(fault);
        }
        cause = e.source();
    }
    found
}

/// The fault `e` itself is, not looking at its causes.
fn fault_of(e: &(dyn Error + 'static)) -> Option<(DataFault, String)> {
    // DataFusion's `ArrowError` variant is not matched here: the walk reaches the Arrow
    // error itself as its cause.
    if let Some(e) = e.downcast_ref::<DataFusionError>() {
        return match e {
            DataFusionError::Execution(message) => {
                Some((execution_fault(message), message.clone()))
            }
            _ => None,
        };
    }
    if let Some(arrow) = e.downcast_ref::<ArrowError>() {
        return arrow_fault(arrow);
    }
    if e.is::<regex::Error>() || e.is::<regex_syntax::Error>() {
        return Some((
            DataFault::InvalidRegex,
            format!("invalid regular expression: {e}"),
        ));
    }
    if let Some(e) = e.downcast_ref::<TooLarge>() {
        return Some((DataFault::TooLarge, e.0.clone()));
    }
    None
}

fn arrow_fault(e: &ArrowError) -> Option<(DataFault, String)> {
    let fault = match e {
        ArrowError::DivideByZero => DataFault::DivisionByZero,
        ArrowError::CastError(m) if m.starts_with("Cannot cast string") => DataFault::InvalidText,
        ArrowError::CastError(_) | ArrowError::ArithmeticOverflow(_) => DataFault::OutOfRange,
        ArrowError::ParseError(m) if mentions_datetime(m) => DataFault::InvalidDatetime,
        ArrowError::ParseError(_) => DataFault::InvalidText,
        ArrowError::ComputeError(m) if m.contains("overflow") => DataFault::OutOfRange,
        ArrowError::ComputeError(_) | ArrowError::InvalidArgumentError(_) => {
            DataFault::InvalidArgument
        }
        ArrowError::OffsetOverflowError(_) => DataFault::TooLarge,
        // An external error is looked into by the walk over causes; the rest (memory, I/O,
        // formats, schemas) are not the data's fault.
        _ => return None,
    };
    Some((fault, e.to_string()))
}

fn execution_fault(message: &str) -> DataFault {
    if message.starts_with("Scalar subquery returned more than one row") {
        DataFault::MoreThanOneRow
    } else {
        DataFault::InvalidArgument
    }
}

/// Arrow's parse errors of timestamps, dates, times and intervals name what they parse.
fn mentions_datetime(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    ["timestamp", "date", "time", "interval"]
        .iter()
        .any(|word| lower.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(err: DataFusionError) -> Option<DataFault> {
        data_fault(&err).map(|(fault, _)| fault)
    }

    #[test]
    fn the_deepest_fault_decides_and_internal_failures_are_none() {
        let cast = DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Cannot cast string 'abc' to value of Int32 type".into(),
            )),
            None,
        );
        let wrapped = cast.context("Optimizer rule 'simplify_expressions' failed");
        assert_eq!(
            data_fault(&wrapped),
            Some((
                DataFault::InvalidText,
                "Cast error: Cannot cast string 'abc' to value of Int32 type".into()
            ))
        );
        assert_eq!(
            fault(DataFusionError::ArrowError(
                Box::new(ArrowError::DivideByZero),
                None
            )),
            Some(DataFault::DivisionByZero)
        );
        assert_eq!(
            fault(DataFusionError::ArrowError(
                Box::new(ArrowError::ParseError(
                    "Error parsing timestamp from 'x'".into()
                )),
                None
            )),
            Some(DataFault::InvalidDatetime)
        );
        // A pattern from the statement, not a literal here (which clippy would refuse).
        let pattern = String::from("(");
        let regex = regex::Regex::new(&pattern).unwrap_err();
        assert_eq!(
            fault(DataFusionError::External(Box::new(regex))),
            Some(DataFault::InvalidRegex)
        );
        // What the optimizer reports when it folds a pattern it cannot parse.
        let syntax = regex_syntax::Parser::new().parse("[").unwrap_err();
        assert_eq!(
            fault(DataFusionError::External(Box::new(syntax)).context("Invalid regex")),
            Some(DataFault::InvalidRegex)
        );
        assert_eq!(
            fault(TooLarge("repeat would make more".into()).into()),
            Some(DataFault::TooLarge)
        );
        assert_eq!(
            fault(DataFusionError::Execution(
                "Scalar subquery returned more than one row".into()
            )),
            Some(DataFault::MoreThanOneRow)
        );
        for internal in [
            DataFusionError::Internal("a bug".into()),
            DataFusionError::ArrowError(Box::new(ArrowError::MemoryError("no".into())), None),
            DataFusionError::External(Box::new(std::io::Error::other("disk"))),
            DataFusionError::ResourcesExhausted("pool".into()),
        ] {
            assert_eq!(fault(internal), None);
        }
    }
}
