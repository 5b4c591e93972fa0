//! Errors: where a line went wrong ([`ParseError`]) and what was wrong ([`ParseErrorKind`]).

use thiserror::Error;

use crate::options::Precision;

/// One rejected line: its 1-based line number, the 1-based byte column where the
/// problem was found, and what the problem is.
///
/// Displays as `line 3, column 17: expected '=' after field key "usage_user"`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct ParseError {
    /// 1-based line number in the input (every `\n` starts a new line, comments and
    /// blank lines included, so the number matches what an editor shows).
    pub line: usize,
    /// 1-based byte offset within the line (not a character count, so it stays exact
    /// for non-ASCII input).
    pub column: usize,
    /// What was wrong.
    pub kind: ParseErrorKind,
}

/// What was wrong with a line. Keys are quoted as written, escapes intact.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseErrorKind {
    /// The line (without its terminator) is longer than [`crate::ParseOptions::max_line_bytes`].
    #[error("line is longer than the limit of {limit} bytes")]
    LineTooLong {
        /// The configured limit.
        limit: usize,
    },
    /// The line is not valid UTF-8; the column is the first invalid byte.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// The measurement is empty: the line starts with `,` (after optional leading
    /// whitespace).
    #[error("expected a measurement name")]
    EmptyMeasurement,
    /// A `,` after the measurement or a tag is not followed by a tag key.
    #[error("expected a tag key after ','")]
    EmptyTagKey,
    /// A tag key is not followed by `=`.
    #[error("expected '=' after tag key \"{key}\"")]
    ExpectedTagEquals {
        /// The tag key, as written.
        key: String,
    },
    /// A tag has an empty value (InfluxDB rejects empty tag values).
    #[error("expected a value for tag \"{key}\"")]
    EmptyTagValue {
        /// The tag key, as written.
        key: String,
    },
    /// An unescaped `=` inside a tag value; escape it as `\=`.
    #[error("unescaped '=' in the value of tag \"{key}\"")]
    UnescapedEqualsInTagValue {
        /// The tag key, as written.
        key: String,
    },
    /// More tags than [`crate::ParseOptions::max_tags_per_line`].
    #[error("too many tags: the limit is {limit} per line")]
    TooManyTags {
        /// The configured limit.
        limit: usize,
    },
    /// The line ends after the measurement and tags: at least one field is required.
    #[error("expected a field set after the measurement and tags")]
    MissingFields,
    /// A field key is empty (e.g. `cpu =1` or `a=1,,b=2`).
    #[error("expected a field key")]
    EmptyFieldKey,
    /// A field key is not followed by `=`.
    #[error("expected '=' after field key \"{key}\"")]
    ExpectedFieldEquals {
        /// The field key, as written.
        key: String,
    },
    /// Nothing follows the `=` of a field.
    #[error("expected a value for field \"{key}\"")]
    MissingFieldValue {
        /// The field key, as written.
        key: String,
    },
    /// Not a float: InfluxDB floats are `-?digits[.digits][e[+-]digits]`.
    #[error("invalid float value for field \"{key}\"")]
    InvalidFloat {
        /// The field key, as written.
        key: String,
    },
    /// A float whose magnitude does not fit in `f64` (e.g. `1e400`).
    #[error("float value for field \"{key}\" is out of range")]
    FloatOutOfRange {
        /// The field key, as written.
        key: String,
    },
    /// `NaN` or `inf`: InfluxDB cannot store non-finite floats.
    #[error("NaN and infinity are not valid values (field \"{key}\")")]
    NonFiniteFloat {
        /// The field key, as written.
        key: String,
    },
    /// Not an integer: expected `-?digits` followed by `i`.
    #[error("invalid integer value for field \"{key}\": expected digits followed by 'i'")]
    InvalidInteger {
        /// The field key, as written.
        key: String,
    },
    /// An integer outside the `i64` range.
    #[error("integer value for field \"{key}\" does not fit in a signed 64-bit integer")]
    IntegerOverflow {
        /// The field key, as written.
        key: String,
    },
    /// Not an unsigned integer: expected `digits` followed by `u`, no sign.
    #[error("invalid unsigned value for field \"{key}\": expected digits followed by 'u'")]
    InvalidUnsigned {
        /// The field key, as written.
        key: String,
    },
    /// An unsigned integer above `u64::MAX`.
    #[error("unsigned value for field \"{key}\" does not fit in an unsigned 64-bit integer")]
    UnsignedOverflow {
        /// The field key, as written.
        key: String,
    },
    /// Starts like a boolean but is not one of `t T true True TRUE f F false False FALSE`.
    #[error(
        "invalid boolean value for field \"{key}\": expected one of t, T, true, True, TRUE, f, F, false, False, FALSE"
    )]
    InvalidBoolean {
        /// The field key, as written.
        key: String,
    },
    /// A value that is no number, boolean or quoted string (e.g. an unquoted word).
    #[error(
        "invalid value for field \"{key}\": expected a number, a boolean or a double-quoted string"
    )]
    InvalidFieldValue {
        /// The field key, as written.
        key: String,
    },
    /// A string value whose closing `"` is missing; the column is the opening quote.
    #[error("unterminated string value for field \"{key}\": expected a closing '\"'")]
    UnterminatedString {
        /// The field key, as written.
        key: String,
    },
    /// Something other than `,`, a space or the end of the line after a closing `"`.
    #[error("expected ',' or ' ' after the string value of field \"{key}\"")]
    ExpectedAfterString {
        /// The field key, as written.
        key: String,
    },
    /// More fields than [`crate::ParseOptions::max_fields_per_line`].
    #[error("too many fields: the limit is {limit} per line")]
    TooManyFields {
        /// The configured limit.
        limit: usize,
    },
    /// The timestamp is not `-?digits`.
    #[error("invalid timestamp: expected an integer")]
    InvalidTimestamp,
    /// The timestamp does not fit in `i64` as written.
    #[error("timestamp does not fit in a signed 64-bit integer")]
    TimestampOutOfRange,
    /// The timestamp fits as written but not once scaled to nanoseconds.
    #[error("timestamp overflows a signed 64-bit nanosecond count at precision {precision}")]
    TimestampOverflow {
        /// The precision the timestamp was scaled from.
        precision: Precision,
    },
    /// Anything but whitespace after the timestamp.
    #[error("unexpected text after the timestamp: expected the end of the line")]
    TrailingGarbage,
}

/// A precision name that [`Precision`]'s `FromStr` does not know.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown precision \"{got}\": expected one of ns, us, ms, s")]
pub struct PrecisionError {
    /// The rejected text.
    pub got: String,
}
