//! Helpers shared by the integration tests.
// Test helpers: not every test file uses every helper, and a failed parse must abort the test.
#![allow(dead_code, clippy::unwrap_used)]

use std::borrow::Cow;

use strata_lineproto::{FieldValue, Line, ParseError, ParseErrorKind, ParseOptions, parse_lines};

/// Parses everything with default options.
pub fn parse_all(input: &[u8]) -> Vec<Result<Line<'_>, ParseError>> {
    parse_lines(input, &ParseOptions::default()).collect()
}

/// Builds the expected [`Line`].
pub fn line<'a>(
    line_number: usize,
    series_key: &'a str,
    measurement: &'a str,
    tags: &[(&'a str, &'a str)],
    fields: Vec<(&'a str, FieldValue<'a>)>,
    timestamp_ns: Option<i64>,
) -> Line<'a> {
    Line {
        line_number,
        series_key: series_key.as_bytes(),
        measurement: Cow::Borrowed(measurement),
        tags: tags
            .iter()
            .map(|&(k, v)| (Cow::Borrowed(k), Cow::Borrowed(v)))
            .collect(),
        fields: fields
            .into_iter()
            .map(|(k, v)| (Cow::Borrowed(k), v))
            .collect(),
        timestamp_ns,
    }
}

/// Builds the expected error.
pub fn error(line: usize, column: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, column, kind }
}

/// A string field value.
pub fn s(v: &str) -> FieldValue<'_> {
    FieldValue::String(Cow::Borrowed(v))
}

/// Parses input that must hold exactly one line with an error, returning the error.
pub fn only_error(input: &str) -> ParseError {
    let mut all = parse_all(input.as_bytes());
    assert_eq!(all.len(), 1, "{input:?} gave {all:?}");
    match all.remove(0) {
        Err(e) => e,
        Ok(l) => panic!("{input:?} parsed as {l:?}"),
    }
}

/// Parses input that must hold exactly one good line.
pub fn only_line(input: &str) -> Line<'_> {
    let mut all = parse_all(input.as_bytes());
    assert_eq!(all.len(), 1, "{input:?} gave {all:?}");
    all.remove(0).unwrap()
}
