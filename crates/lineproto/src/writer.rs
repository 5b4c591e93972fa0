//! The reverse direction: append correctly escaped line protocol to a `Vec<u8>`.
//!
//! Used by tests (round trips) and by workload generators. The `write_*` part
//! functions escape; [`write_line`] assembles a whole line and checks the things
//! escaping cannot fix (empty names, newlines, non-finite floats), leaving the
//! buffer unchanged on error so a caller never emits half a line.

use std::io::Write as _;

use thiserror::Error;

use crate::line::FieldValue;

/// Which part of a line a [`WriteError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The measurement name.
    Measurement,
    /// A tag key.
    TagKey,
    /// A tag value.
    TagValue,
    /// A field key.
    FieldKey,
    /// A string field value.
    StringValue,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Part::Measurement => "measurement",
            Part::TagKey => "tag key",
            Part::TagValue => "tag value",
            Part::FieldKey => "field key",
            Part::StringValue => "string field value",
        })
    }
}

/// Why [`write_line`] could not represent a point in line protocol.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteError {
    /// Measurement, tag keys, tag values and field keys must not be empty.
    #[error("{0} must not be empty")]
    Empty(Part),
    /// Line protocol has no escape for a newline: every `\n` ends a line.
    #[error("{0} must not contain a newline")]
    Newline(Part),
    /// A measurement starting with `#` would be read back as a comment, and one
    /// starting with a tab would lose it (leading whitespace is skipped; spaces are
    /// escaped, tabs have no escape).
    #[error("measurement must not start with '#' or a tab")]
    MeasurementStart,
    /// Line protocol cannot carry NaN or infinity.
    #[error("float field values must be finite")]
    NonFiniteFloat,
    /// A line needs at least one field.
    #[error("a line needs at least one field")]
    NoFields,
}

fn push_escaped(out: &mut Vec<u8>, s: &str, escapes: &[u8]) {
    let b = s.as_bytes();
    let mut last = 0;
    for (i, c) in b.iter().enumerate() {
        if escapes.contains(c) {
            out.extend_from_slice(&b[last..i]);
            out.push(b'\\');
            last = i;
        }
    }
    out.extend_from_slice(&b[last..]);
}

/// Appends a measurement name, escaping `,`, space and `\`.
pub fn write_measurement(out: &mut Vec<u8>, measurement: &str) {
    push_escaped(out, measurement, b", \\");
}

/// Appends a tag key, escaping `,`, `=`, space and `\`.
pub fn write_tag_key(out: &mut Vec<u8>, key: &str) {
    push_escaped(out, key, b",= \\");
}

/// Appends a tag value, escaping `,`, `=`, space and `\`.
pub fn write_tag_value(out: &mut Vec<u8>, value: &str) {
    push_escaped(out, value, b",= \\");
}

/// Appends a field key, escaping `,`, `=`, space and `\`.
pub fn write_field_key(out: &mut Vec<u8>, key: &str) {
    push_escaped(out, key, b",= \\");
}

/// Appends a string field value with its quotes, escaping `"` and `\`.
pub fn write_string_value(out: &mut Vec<u8>, value: &str) {
    out.push(b'"');
    push_escaped(out, value, b"\"\\");
    out.push(b'"');
}

/// Appends a field value in the spelling that parses back to the same type and
/// value: floats in Rust's shortest round-trip form (`{:?}`, which also switches to
/// exponent form for very large/small magnitudes, keeping lines short), `i`/`u`
/// suffixes for integers, `true`/`false`, quoted strings.
///
/// A non-finite float is written as Rust prints it (`NaN`, `inf`), which the parser
/// rejects; [`write_line`] refuses it instead.
pub fn write_field_value(out: &mut Vec<u8>, value: &FieldValue<'_>) {
    // Writing into a Vec cannot fail.
    let _ = match value {
        FieldValue::Float(v) => write!(out, "{v:?}"),
        FieldValue::Integer(v) => write!(out, "{v}i"),
        FieldValue::UInteger(v) => write!(out, "{v}u"),
        FieldValue::Boolean(v) => write!(out, "{v}"),
        FieldValue::String(s) => {
            write_string_value(out, s);
            Ok(())
        }
    };
}

/// Appends one complete line and its `\n`. Timestamps are written as given, so they
/// must be in the precision the reader will parse with (usually nanoseconds).
/// On error `out` is left as it was.
pub fn write_line(
    out: &mut Vec<u8>,
    measurement: &str,
    tags: &[(&str, &str)],
    fields: &[(&str, FieldValue<'_>)],
    timestamp: Option<i64>,
) -> Result<(), WriteError> {
    check_name(measurement, Part::Measurement)?;
    if measurement.starts_with(['#', '\t']) {
        return Err(WriteError::MeasurementStart);
    }
    for (k, v) in tags {
        check_name(k, Part::TagKey)?;
        check_name(v, Part::TagValue)?;
    }
    if fields.is_empty() {
        return Err(WriteError::NoFields);
    }
    for (k, v) in fields {
        check_name(k, Part::FieldKey)?;
        match v {
            FieldValue::Float(f) if !f.is_finite() => return Err(WriteError::NonFiniteFloat),
            FieldValue::String(s) if s.contains('\n') => {
                return Err(WriteError::Newline(Part::StringValue));
            }
            _ => {}
        }
    }
    write_measurement(out, measurement);
    for (k, v) in tags {
        out.push(b',');
        write_tag_key(out, k);
        out.push(b'=');
        write_tag_value(out, v);
    }
    for (n, (k, v)) in fields.iter().enumerate() {
        out.push(if n == 0 { b' ' } else { b',' });
        write_field_key(out, k);
        out.push(b'=');
        write_field_value(out, v);
    }
    if let Some(ts) = timestamp {
        let _ = write!(out, " {ts}");
    }
    out.push(b'\n');
    Ok(())
}

fn check_name(s: &str, part: Part) -> Result<(), WriteError> {
    if s.is_empty() {
        Err(WriteError::Empty(part))
    } else if s.contains('\n') {
        Err(WriteError::Newline(part))
    } else {
        Ok(())
    }
}
