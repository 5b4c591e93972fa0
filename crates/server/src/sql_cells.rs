//! One result column, typed once per batch, written cell by cell as JSON or CSV text.
//!
//! Conventions shared by both formats: timestamps are RFC 3339 in UTC with nine fractional
//! digits (`2023-11-14T22:13:20.000000000Z`), whatever the column's unit or time zone;
//! floats use the shortest text that reads back to the same value; NaN and infinities are
//! `NaN`, `inf` and `-inf` (JSON strings, since JSON numbers cannot hold them); SQL NULL is
//! JSON `null` and an empty CSV field. Types without a dedicated writer (dates, intervals,
//! decimals, lists, …) are written as Arrow's display text.

use std::io::Write as _;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, StringArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};

/// The simple type name a client sees for an Arrow type.
pub(crate) fn type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string".into(),
        DataType::Dictionary(_, value) => type_name(value),
        DataType::Float16 | DataType::Float32 | DataType::Float64 => "float".into(),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => "integer".into(),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            "unsigned".into()
        }
        DataType::Boolean => "boolean".into(),
        DataType::Timestamp(..) => "timestamp".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Time32(_) | DataType::Time64(_) => "time".into(),
        DataType::Duration(_) => "duration".into(),
        DataType::Interval(_) => "interval".into(),
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "decimal".into(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "binary".into(),
        DataType::Null => "null".into(),
        other => other.to_string().to_ascii_lowercase(),
    }
}

/// A column of one batch, cast once to the representation it is written from.
pub(crate) enum Cells {
    /// Text.
    Text(StringArray),
    /// Signed integers, widened to 64 bits.
    Integer(Int64Array),
    /// Unsigned integers, widened to 64 bits.
    Unsigned(UInt64Array),
    /// Floats, widened to 64 bits.
    Float(Float64Array),
    /// Booleans.
    Boolean(BooleanArray),
    /// Timestamps as nanoseconds since the epoch (UTC).
    Timestamp(Int64Array),
    /// Anything else: Arrow's display text.
    Other(ArrayRef),
}

impl Cells {
    /// Prepares `column` for writing: dictionaries are resolved, narrow numbers widened,
    /// timestamps brought to nanoseconds.
    pub(crate) fn new(column: &ArrayRef) -> Result<Self, ArrowError> {
        let data_type = match column.data_type() {
            DataType::Dictionary(_, value) => value.as_ref().clone(),
            other => other.clone(),
        };
        Ok(match data_type {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Cells::Text(cast(column, &DataType::Utf8)?.as_string::<i32>().clone())
            }
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
                Cells::Integer(as_i64(&cast(column, &DataType::Int64)?)?)
            }
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
                let array = cast(column, &DataType::UInt64)?;
                Cells::Unsigned(
                    array
                        .as_any()
                        .downcast_ref::<UInt64Array>()
                        .ok_or_else(|| unexpected(&array))?
                        .clone(),
                )
            }
            DataType::Float16 | DataType::Float32 | DataType::Float64 => {
                let array = cast(column, &DataType::Float64)?;
                Cells::Float(
                    array
                        .as_any()
                        .downcast_ref::<Float64Array>()
                        .ok_or_else(|| unexpected(&array))?
                        .clone(),
                )
            }
            DataType::Boolean => {
                Cells::Boolean(cast(column, &DataType::Boolean)?.as_boolean().clone())
            }
            DataType::Timestamp(..) => {
                // Dropping the zone keeps the instant: Arrow timestamps are UTC-based.
                let utc = cast(column, &DataType::Timestamp(TimeUnit::Nanosecond, None))?;
                Cells::Timestamp(as_i64(&cast(&utc, &DataType::Int64)?)?)
            }
            _ => Cells::Other(column.clone()),
        })
    }

    fn is_null(&self, row: usize) -> bool {
        match self {
            Cells::Text(a) => a.is_null(row),
            Cells::Integer(a) | Cells::Timestamp(a) => a.is_null(row),
            Cells::Unsigned(a) => a.is_null(row),
            Cells::Float(a) => a.is_null(row),
            Cells::Boolean(a) => a.is_null(row),
            Cells::Other(a) => a.is_null(row),
        }
    }

    /// Appends the cell at `row` as a JSON value.
    pub(crate) fn write_json(&self, row: usize, out: &mut Vec<u8>) -> Result<(), ArrowError> {
        if self.is_null(row) {
            out.extend_from_slice(b"null");
            return Ok(());
        }
        match self {
            Cells::Text(a) => json_string(a.value(row), out),
            Cells::Integer(a) => write_int(a.value(row), out),
            Cells::Unsigned(a) => write_int(a.value(row), out),
            Cells::Float(a) => {
                let value = a.value(row);
                if value.is_finite() {
                    write_float(value, out);
                } else {
                    out.push(b'"');
                    write_float(value, out);
                    out.push(b'"');
                }
            }
            Cells::Boolean(a) => {
                out.extend_from_slice(if a.value(row) { b"true" } else { b"false" })
            }
            Cells::Timestamp(a) => {
                out.push(b'"');
                write_rfc3339(a.value(row), out);
                out.push(b'"');
            }
            Cells::Other(a) => json_string(&display(a, row)?, out),
        }
        Ok(())
    }

    /// Appends the cell at `row` as a CSV field (quoted when RFC 4180 requires it).
    pub(crate) fn write_csv(&self, row: usize, out: &mut Vec<u8>) -> Result<(), ArrowError> {
        if self.is_null(row) {
            return Ok(());
        }
        match self {
            Cells::Text(a) => csv_field(a.value(row), out),
            Cells::Integer(a) => write_int(a.value(row), out),
            Cells::Unsigned(a) => write_int(a.value(row), out),
            Cells::Float(a) => write_float(a.value(row), out),
            Cells::Boolean(a) => {
                out.extend_from_slice(if a.value(row) { b"true" } else { b"false" })
            }
            Cells::Timestamp(a) => write_rfc3339(a.value(row), out),
            Cells::Other(a) => csv_field(&display(a, row)?, out),
        }
        Ok(())
    }
}

fn as_i64(array: &ArrayRef) -> Result<Int64Array, ArrowError> {
    array
        .as_any()
        .downcast_ref::<Int64Array>()
        .cloned()
        .ok_or_else(|| unexpected(array))
}

fn unexpected(array: &ArrayRef) -> ArrowError {
    ArrowError::CastError(format!(
        "unexpected array type {} after cast",
        array.data_type()
    ))
}

fn display(array: &ArrayRef, row: usize) -> Result<String, ArrowError> {
    let formatter = ArrayFormatter::try_new(array.as_ref(), &FormatOptions::default())?;
    Ok(formatter.value(row).to_string())
}

/// An integer in decimal (itoa: `write!`'s formatting machinery showed in profiles of
/// answers of many rows).
pub(crate) fn write_int(value: impl itoa::Integer, out: &mut Vec<u8>) {
    out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

/// A JSON string literal (serde_json's escaping). Text with nothing to escape, like most
/// tag values, is copied between quotes as it is.
pub(crate) fn json_string(text: &str, out: &mut Vec<u8>) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// A CSV field: quoted, with quotes doubled, when it holds a comma, quote or line break.
pub(crate) fn csv_field(text: &str, out: &mut Vec<u8>) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        for part in text.split_inclusive('"') {
            out.extend_from_slice(part.as_bytes());
            if part.ends_with('"') {
                out.push(b'"');
            }
        }
        out.push(b'"');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

/// The shortest text that reads back as `value` (`12.5`, `1e21`); `NaN`, `inf`, `-inf`.
fn write_float(value: f64, out: &mut Vec<u8>) {
    if value.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 { b"inf" } else { b"-inf" });
    } else {
        // serde_json prints finite floats with ryu (shortest round-trip); cannot fail.
        let _ = serde_json::to_writer(&mut *out, &value);
    }
}

/// `nanos` since the epoch as `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
pub(crate) fn write_rfc3339(nanos: i64, out: &mut Vec<u8>) {
    const NANOS_PER_DAY: i64 = 86_400_000_000_000;
    let days = nanos.div_euclid(NANOS_PER_DAY);
    let in_day = nanos.rem_euclid(NANOS_PER_DAY);
    let seconds = in_day / 1_000_000_000;
    let fraction = in_day % 1_000_000_000;
    let Some(date) = date_text(days) else {
        let (year, month, day) = civil_from_days(days);
        let _ = write!(
            out,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{fraction:09}Z",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        );
        return;
    };
    // Into one stack buffer, then one copy: answers hold a timestamp a row, and
    // formatting them was a tenth of a 720-row InfluxQL answer's time.
    let mut text = *b"0000-00-00T00:00:00.000000000Z";
    text[..10].copy_from_slice(&date);
    two_digits(&mut text[11..13], seconds / 3600);
    two_digits(&mut text[14..16], seconds / 60 % 60);
    two_digits(&mut text[17..19], seconds % 60);
    let mut rest = fraction;
    for digit in text[20..29].iter_mut().rev() {
        if rest == 0 {
            break;
        }
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.extend_from_slice(&text);
}

/// `value` (below 100) as two digits.
fn two_digits(into: &mut [u8], value: i64) {
    into[0] = b'0' + (value / 10) as u8;
    into[1] = b'0' + (value % 10) as u8;
}

thread_local! {
    /// The last day [`date_text`] wrote, and its text: the rows of an answer mostly share
    /// their day.
    static LAST_DATE: std::cell::Cell<(i64, [u8; 10])> =
        const { std::cell::Cell::new((i64::MIN, [0; 10])) };
}

/// Day `days` since the epoch as `YYYY-MM-DD`; `None` outside years 0 to 9999.
fn date_text(days: i64) -> Option<[u8; 10]> {
    LAST_DATE.with(|last| {
        let (day, text) = last.get();
        if day == days {
            return Some(text);
        }
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let mut text = *b"0000-00-00";
        two_digits(&mut text[0..2], year / 100);
        two_digits(&mut text[2..4], year % 100);
        two_digits(&mut text[5..7], i64::from(month));
        two_digits(&mut text[8..10], i64::from(day));
        last.set((days, text));
        Some(text)
    })
}

/// Days since 1970-01-01 as (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::arrow::array::{DictionaryArray, Int32Array, TimestampMillisecondArray};
    use datafusion::arrow::datatypes::Int32Type;

    fn rfc3339(nanos: i64) -> String {
        let mut out = Vec::new();
        write_rfc3339(nanos, &mut out);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn timestamps_are_rfc3339_utc_with_nanoseconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(
            rfc3339(1_700_000_000_123_456_789),
            "2023-11-14T22:13:20.123456789Z"
        );
        assert_eq!(rfc3339(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(
            rfc3339(951_782_400_000_000_000),
            "2000-02-29T00:00:00.000000000Z"
        );
        assert_eq!(rfc3339(i64::MIN), "1677-09-21T00:12:43.145224192Z");
        assert_eq!(rfc3339(i64::MAX), "2262-04-11T23:47:16.854775807Z");
    }

    /// Against chrono, over seeded times: runs within one day (the cached date), jumps
    /// between days and back, and the whole range of years.
    #[test]
    fn timestamps_match_chrono_across_days_and_years() {
        let mut state = 11u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state
        };
        let mut checked = 0;
        for _ in 0..2_000 {
            let base = next() as i64;
            for step in [0, 1, 999_999_999, 3_600_000_000_000, -86_400_000_000_000, 7] {
                let nanos = base.saturating_add(step);
                let expected = chrono::DateTime::from_timestamp_nanos(nanos)
                    .format("%Y-%m-%dT%H:%M:%S%.9fZ")
                    .to_string();
                assert_eq!(rfc3339(nanos), expected, "{nanos}");
                checked += 1;
            }
        }
        assert_eq!(checked, 12_000);
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        let field = |text| {
            let mut out = Vec::new();
            csv_field(text, &mut out);
            String::from_utf8(out).expect("utf8")
        };
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn cells_of_each_type() {
        let json = |array: ArrayRef, row| {
            let mut out = Vec::new();
            Cells::new(&array)
                .expect("cells")
                .write_json(row, &mut out)
                .expect("write");
            String::from_utf8(out).expect("utf8")
        };
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(12.5),
            Some(f64::NAN),
            Some(f64::NEG_INFINITY),
            None,
        ]));
        assert_eq!(json(floats.clone(), 0), "12.5");
        assert_eq!(json(floats.clone(), 1), "\"NaN\"");
        assert_eq!(json(floats.clone(), 2), "\"-inf\"");
        assert_eq!(json(floats, 3), "null");
        let dictionary: ArrayRef = Arc::new(DictionaryArray::<Int32Type>::new(
            Int32Array::from(vec![1, 0]),
            Arc::new(StringArray::from(vec!["a\"b", "c"])),
        ));
        assert_eq!(json(dictionary.clone(), 0), "\"c\"");
        assert_eq!(json(dictionary, 1), "\"a\\\"b\"");
        let millis: ArrayRef = Arc::new(
            TimestampMillisecondArray::from(vec![1_700_000_000_001]).with_timezone("+02:00"),
        );
        assert_eq!(json(millis, 0), "\"2023-11-14T22:13:20.001000000Z\"");
        let small: ArrayRef = Arc::new(Int32Array::from(vec![-7]));
        assert_eq!(json(small, 0), "-7");
        assert_eq!(
            type_name(&DataType::Dictionary(
                Box::new(DataType::Int32),
                Box::new(DataType::Utf8)
            )),
            "string"
        );
        assert_eq!(type_name(&DataType::UInt64), "unsigned");
    }
}
