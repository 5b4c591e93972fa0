//! The line splitter ([`Lines`]) and the single-line grammar.
//!
//! Per line: find `\n` with `memchr`, strip `\r`, skip blank and comment lines,
//! validate UTF-8 once for the whole line, then walk it left to right with
//! [`scan`] — measurement, tags, fields, timestamp — slicing the `&str` at
//! the delimiters it finds. Every delimiter is ASCII, so every slice is on a char
//! boundary and no part needs its own UTF-8 check.

use std::iter::FusedIterator;

use memchr::memchr;

use crate::error::{ParseError, ParseErrorKind};
use crate::line::{FieldValue, Line};
use crate::number::{NumberError, is_non_finite_spelling, parse_digits, parse_f64, parse_i64};
use crate::options::ParseOptions;
use crate::scan::{
    FIELD_KEY, FIELD_VALUE, KEY_ESCAPES, MEASUREMENT, MEASUREMENT_ESCAPES, STRING, STRING_ESCAPES,
    TAG_KEY, TAG_VALUE, scan, unescape,
};

/// Parses `input` as line protocol, one [`Line`] or [`ParseError`] per non-blank,
/// non-comment line. A bad line yields one `Err` and parsing goes on with the next.
///
/// Lines end at every `\n` (a preceding `\r` is dropped), so, as InfluxDB documents,
/// no key or value can contain a newline, not even inside a quoted string.
pub fn parse_lines<'a>(input: &'a [u8], options: &ParseOptions) -> Lines<'a> {
    Lines {
        input,
        pos: 0,
        line_number: 0,
        options: *options,
        tags_hint: 0,
        fields_hint: 0,
    }
}

/// Parses a series key as [`Line::series_key`] holds it (`measurement,tag=value,…`,
/// escapes intact) into its unescaped measurement and tags, in written order. Storage
/// keeps only the raw key of a row and reads its tags back this way when the row creates
/// a series. A key that did not come from the parser may fail; the error's line is 1.
pub fn parse_series_key(key: &str) -> Result<Line<'_>, ParseError> {
    let mut line = Line {
        line_number: 1,
        ..Line::default()
    };
    let end = parse_series(key, 0, usize::MAX, &mut line).map_err(|(column, kind)| ParseError {
        line: 1,
        column,
        kind,
    })?;
    if end != key.len() {
        return Err(ParseError {
            line: 1,
            column: end + 1,
            kind: ParseErrorKind::TrailingGarbage,
        });
    }
    Ok(line)
}

/// Iterator over the lines of a line protocol body; see [`parse_lines`].
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    input: &'a [u8],
    /// Offset of the first byte not yet split into a line.
    pos: usize,
    /// Number of the last line split off (1-based once started).
    line_number: usize,
    options: ParseOptions,
    /// Tag and field counts of the last good line: consecutive lines usually share a
    /// schema, so allocating that much up front avoids regrowing the vectors.
    tags_hint: usize,
    fields_hint: usize,
}

impl<'a> Lines<'a> {
    /// Parses the next line into `line`, reusing its vectors' capacity, so a loop
    /// that consumes each line before the next allocates nothing for escape-free
    /// input. Returns `None` at the end of the input. On `Some(Err(_))`, `line`
    /// holds an unspecified partial result and must not be used.
    pub fn next_into(&mut self, line: &mut Line<'a>) -> Option<Result<(), ParseError>> {
        loop {
            let rest = self.input.get(self.pos..).filter(|r| !r.is_empty())?;
            let (raw, advance) = match memchr(b'\n', rest) {
                Some(n) => (&rest[..n], n + 1),
                None => (rest, rest.len()),
            };
            self.pos += advance;
            self.line_number += 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let err = |column, kind| ParseError {
                line: self.line_number,
                column,
                kind,
            };
            if raw.len() > self.options.max_line_bytes {
                let limit = self.options.max_line_bytes;
                return Some(Err(err(limit + 1, ParseErrorKind::LineTooLong { limit })));
            }
            let start = raw
                .iter()
                .position(|&c| c != b' ' && c != b'\t')
                .unwrap_or(raw.len());
            if start == raw.len() || raw[start] == b'#' {
                continue;
            }
            let text = match std::str::from_utf8(raw) {
                Ok(text) => text,
                Err(e) => return Some(Err(err(e.valid_up_to() + 1, ParseErrorKind::InvalidUtf8))),
            };
            line.clear();
            line.line_number = self.line_number;
            let result = parse_line(text, start, &self.options, line)
                .map_err(|(column, kind)| err(column, kind));
            return Some(result);
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Result<Line<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut line = Line {
            tags: Vec::with_capacity(self.tags_hint),
            fields: Vec::with_capacity(self.fields_hint),
            ..Line::default()
        };
        match self.next_into(&mut line)? {
            Ok(()) => {
                self.tags_hint = line.tags.len();
                self.fields_hint = line.fields.len();
                Some(Ok(line))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

impl FusedIterator for Lines<'_> {}

/// An error inside a line: 1-based column and kind; [`Lines`] adds the line number.
type LineError = (usize, ParseErrorKind);

/// Parses one line (no terminator, not blank, not a comment) whose measurement
/// starts at byte `start`, into `out`.
fn parse_line<'a>(
    line: &'a str,
    start: usize,
    options: &ParseOptions,
    out: &mut Line<'a>,
) -> Result<(), LineError> {
    let b = line.as_bytes();
    let len = b.len();
    let mut i = parse_series(line, start, options.max_tags_per_line, out)?;

    // Here b[i] is a space or the line ended: at least one field must follow.
    i = skip_spaces(b, i);
    if i == len {
        return Err((i + 1, ParseErrorKind::MissingFields));
    }

    // Field set: key '=' value (',' key '=' value)*.
    loop {
        if out.fields.len() == options.max_fields_per_line {
            let limit = options.max_fields_per_line;
            return Err((i + 1, ParseErrorKind::TooManyFields { limit }));
        }
        let (key_end, key_escaped) = scan(b, i, FIELD_KEY);
        if key_end == i {
            return Err((i + 1, ParseErrorKind::EmptyFieldKey));
        }
        let raw_key = &line[i..key_end];
        if key_end == len || b[key_end] != b'=' {
            let key = raw_key.to_owned();
            return Err((key_end + 1, ParseErrorKind::ExpectedFieldEquals { key }));
        }
        let (value, value_end) = parse_field_value(line, key_end + 1, raw_key)?;
        out.fields
            .push((unescape(raw_key, key_escaped, KEY_ESCAPES), value));
        i = value_end;
        if i < len && b[i] == b',' {
            i += 1;
            continue;
        }
        break;
    }

    // Optional timestamp, then only trailing spaces.
    i = skip_spaces(b, i);
    if i == len {
        return Ok(());
    }
    let ts_start = i;
    while i < len && b[i] != b' ' {
        i += 1;
    }
    out.timestamp_ns =
        Some(parse_timestamp(&b[ts_start..i], options).map_err(|k| (ts_start + 1, k))?);
    i = skip_spaces(b, i);
    if i != len {
        return Err((i + 1, ParseErrorKind::TrailingGarbage));
    }
    Ok(())
}

/// Parses the measurement and tag set starting at byte `start` into `out` (measurement,
/// tags, series key); returns the index of the byte after them (a space, or the end).
fn parse_series<'a>(
    line: &'a str,
    start: usize,
    max_tags: usize,
    out: &mut Line<'a>,
) -> Result<usize, LineError> {
    let b = line.as_bytes();
    let len = b.len();

    // Measurement: up to the first unescaped ',' or ' '.
    let (end, escaped) = scan(b, start, MEASUREMENT);
    if end == start {
        return Err((start + 1, ParseErrorKind::EmptyMeasurement));
    }
    out.measurement = unescape(&line[start..end], escaped, MEASUREMENT_ESCAPES);
    let mut i = end;

    // Tag set: (',' key '=' value)*.
    while i < len && b[i] == b',' {
        i += 1;
        if out.tags.len() == max_tags {
            let limit = max_tags;
            return Err((i + 1, ParseErrorKind::TooManyTags { limit }));
        }
        let (key_end, key_escaped) = scan(b, i, TAG_KEY);
        if key_end == i {
            return Err((i + 1, ParseErrorKind::EmptyTagKey));
        }
        let raw_key = &line[i..key_end];
        if key_end == len || b[key_end] != b'=' {
            let key = raw_key.to_owned();
            return Err((key_end + 1, ParseErrorKind::ExpectedTagEquals { key }));
        }
        let value_start = key_end + 1;
        let (value_end, value_escaped) = scan(b, value_start, TAG_VALUE);
        if value_end == value_start {
            let key = raw_key.to_owned();
            return Err((value_start + 1, ParseErrorKind::EmptyTagValue { key }));
        }
        if value_end < len && b[value_end] == b'=' {
            let key = raw_key.to_owned();
            return Err((
                value_end + 1,
                ParseErrorKind::UnescapedEqualsInTagValue { key },
            ));
        }
        out.tags.push((
            unescape(raw_key, key_escaped, KEY_ESCAPES),
            unescape(&line[value_start..value_end], value_escaped, KEY_ESCAPES),
        ));
        i = value_end;
    }
    out.series_key = &b[start..i];
    Ok(i)
}

#[inline]
fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    i
}

/// Parses the field value starting at byte `start`; returns it and the index of the
/// byte after it (a `,`, a space or the end of the line).
#[inline]
fn parse_field_value<'a>(
    line: &'a str,
    start: usize,
    raw_key: &str,
) -> Result<(FieldValue<'a>, usize), LineError> {
    let b = line.as_bytes();
    let key = || raw_key.to_owned();
    if start < b.len() && b[start] == b'"' {
        let (end, escaped) = scan(b, start + 1, STRING);
        if end == b.len() {
            return Err((start + 1, ParseErrorKind::UnterminatedString { key: key() }));
        }
        let after = end + 1;
        if after < b.len() && b[after] != b',' && b[after] != b' ' {
            return Err((
                after + 1,
                ParseErrorKind::ExpectedAfterString { key: key() },
            ));
        }
        let value = unescape(&line[start + 1..end], escaped, STRING_ESCAPES);
        return Ok((FieldValue::String(value), after));
    }
    let (end, _) = scan(b, start, FIELD_VALUE);
    let token = &b[start..end];
    let column = start + 1;
    let Some((&first, _)) = token.split_first() else {
        return Err((column, ParseErrorKind::MissingFieldValue { key: key() }));
    };
    let value = match first {
        b'0'..=b'9' | b'-' | b'+' | b'.' => parse_number(token, &key).map_err(|k| (column, k))?,
        b't' | b'T' | b'f' | b'F' => match token {
            b"t" | b"T" | b"true" | b"True" | b"TRUE" => FieldValue::Boolean(true),
            b"f" | b"F" | b"false" | b"False" | b"FALSE" => FieldValue::Boolean(false),
            _ => return Err((column, ParseErrorKind::InvalidBoolean { key: key() })),
        },
        _ if is_non_finite_spelling(token) => {
            return Err((column, ParseErrorKind::NonFiniteFloat { key: key() }));
        }
        _ => return Err((column, ParseErrorKind::InvalidFieldValue { key: key() })),
    };
    Ok((value, end))
}

/// Parses a token that starts like a number: `…i`, `…u` or a float.
#[inline]
fn parse_number<'a>(
    token: &[u8],
    key: &dyn Fn() -> String,
) -> Result<FieldValue<'a>, ParseErrorKind> {
    match token.split_last() {
        Some((b'i', digits)) => parse_i64(digits)
            .map(FieldValue::Integer)
            .map_err(|e| match e {
                NumberError::Invalid => ParseErrorKind::InvalidInteger { key: key() },
                NumberError::Overflow => ParseErrorKind::IntegerOverflow { key: key() },
            }),
        Some((b'u', digits)) => {
            parse_digits(digits)
                .map(FieldValue::UInteger)
                .map_err(|e| match e {
                    NumberError::Invalid => ParseErrorKind::InvalidUnsigned { key: key() },
                    NumberError::Overflow => ParseErrorKind::UnsignedOverflow { key: key() },
                })
        }
        _ => parse_f64(token)
            .map(FieldValue::Float)
            .map_err(|e| match e {
                NumberError::Invalid if is_non_finite_spelling(token) => {
                    ParseErrorKind::NonFiniteFloat { key: key() }
                }
                NumberError::Invalid => ParseErrorKind::InvalidFloat { key: key() },
                NumberError::Overflow => ParseErrorKind::FloatOutOfRange { key: key() },
            }),
    }
}

/// Parses `-?digits` and scales it to nanoseconds.
#[inline]
fn parse_timestamp(t: &[u8], options: &ParseOptions) -> Result<i64, ParseErrorKind> {
    let value = parse_i64(t).map_err(|e| match e {
        NumberError::Invalid => ParseErrorKind::InvalidTimestamp,
        NumberError::Overflow => ParseErrorKind::TimestampOutOfRange,
    })?;
    let precision = options.precision;
    value
        .checked_mul(precision.nanos_per_unit())
        .ok_or(ParseErrorKind::TimestampOverflow { precision })
}
