//! Zero-copy parser (and writer) for the InfluxDB line protocol, Strata's write format.
//!
//! ```text
//! measurement[,tag_key=tag_value...] field_key=field_value[,field_key=field_value...] [timestamp]
//! ```
//!
//! Data path: HTTP body bytes → [`parse_lines`] → [`Lines`] (split at `\n` with
//! `memchr`) → one [`Line`] per point, borrowing keys and values from the body →
//! storage, which can key series by [`Line::series_key`] without allocating.
//!
//! Module map:
//! - `parser`: [`parse_lines`], [`Lines`], the grammar of one line.
//! - `line`: [`Line`] and [`FieldValue`], the parsed form.
//! - `options`: [`ParseOptions`] (limits, with why each default) and [`Precision`].
//! - `error`: [`ParseError`] (line, column, kind) and [`ParseErrorKind`].
//! - `writer`: escaping writers, the reverse direction, for tests and generators.
//! - `scan`, `number` (private): the byte-class table, unescaping, number parsing.
//!
//! Rules, as InfluxDB documents them:
//! - The measurement escapes `,` and space; tag keys, tag values and field keys escape
//!   `,`, `=` and space; in all of them `\\` is one backslash and a backslash before
//!   any other character is kept literally. An unescaped `=` in a tag value is an error.
//! - Field values: bare numbers are floats (finite only; `NaN`/`inf` are rejected),
//!   `i` suffix integer (`i64`), `u` suffix unsigned (`u64`), `"…"` strings escaping `"`
//!   and `\`, booleans `t T true True TRUE f F false False FALSE`.
//! - Optional timestamp (`i64`, may be negative), scaled from [`Precision`] to
//!   nanoseconds with overflow reported as an error.
//! - Blank lines and lines starting with `#` (after optional spaces/tabs) are
//!   skipped (a comment's bytes are never checked, not even for UTF-8); `\r\n`
//!   endings are accepted; every other line must be valid UTF-8.
//! - Every `\n` ends a line, even inside a quoted string: as InfluxDB documents,
//!   line protocol cannot carry a newline in a key or value.
//! - Duplicate field (or tag) keys are all kept in order; the last one wins, as in
//!   InfluxDB, and consumers must apply that rule (see [`Line`]).
//!
//! When you change the grammar, also update the writer (so round trips keep
//! holding), the error kinds and `tests/`.
//!
//! ```
//! use strata_lineproto::{parse_lines, FieldValue, ParseOptions};
//!
//! let body = b"cpu,host=a usage=0.5,count=3i 1700000000000000000\n";
//! let line = parse_lines(body, &ParseOptions::default()).next().unwrap().unwrap();
//! assert_eq!(line.series_key, b"cpu,host=a");
//! assert_eq!(line.fields[1].1, FieldValue::Integer(3));
//! ```

mod error;
mod line;
mod number;
mod options;
mod parser;
mod scan;
pub mod writer;

pub use error::{ParseError, ParseErrorKind, PrecisionError};
pub use line::{FieldValue, Line};
pub use options::{
    DEFAULT_MAX_FIELDS_PER_LINE, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TAGS_PER_LINE, ParseOptions,
    Precision,
};
pub use parser::{Lines, parse_lines, parse_series_key};
