//! Bound parameters as SQL literals. A prepared statement's `$n` are replaced by literals
//! of the values bound to them and the statement then runs as text through the same entry
//! as `/sql`, so Strata's own statements, the direct path and pre-aggregates answer
//! prepared statements exactly as they answer the same statement typed out.
//!
//! Every value is checked against its type (numbers must parse, text is quoted with `'`
//! doubled): a value can only ever be one literal, never more SQL. An array is
//! `make_array(…)` of its elements' literals (`params_array`).

use chrono::{DateTime, NaiveDate};
use pgwire::api::Type;
use pgwire::error::PgWireError;
use postgres_types::{FromSql, Kind};

use super::encode::POSTGRES_EPOCH_MICROS;
use super::errors::{INVALID_TEXT, NOT_SUPPORTED, error};
use super::interval::Interval;
use super::params_array::array_literal;

/// The literal for one bound value: `value` as sent (`None` is SQL NULL), `ty` its type
/// (the client's, else the one the statement implies, else `unknown`), `binary` its format.
pub(crate) fn literal(
    value: Option<&[u8]>,
    ty: &Type,
    binary: bool,
) -> Result<String, PgWireError> {
    let Some(bytes) = value else {
        return Ok("NULL".to_owned());
    };
    if let Kind::Array(element) = ty.kind() {
        return array_literal(bytes, element, binary);
    }
    if binary {
        return binary_literal(bytes, ty);
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| error("22021", "a parameter is not valid UTF-8"))?;
    text_literal(text, ty)
}

fn text_literal(text: &str, ty: &Type) -> Result<String, PgWireError> {
    let invalid = |kind: &str| {
        error(
            INVALID_TEXT,
            format!("invalid input syntax for type {kind}: {text:?}"),
        )
    };
    match *ty {
        Type::BOOL => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => Ok("TRUE".into()),
            "f" | "false" | "n" | "no" | "off" | "0" => Ok("FALSE".into()),
            _ => Err(invalid("boolean")),
        },
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => text
            .trim()
            .parse::<i64>()
            .map(integer)
            .map_err(|_| invalid("integer")),
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => {
            let number = text
                .trim()
                .parse::<f64>()
                .map_err(|_| invalid("double precision"))?;
            Ok(float(number, text.trim()))
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => Ok(format!("TIMESTAMP {}", quoted(text))),
        Type::DATE => Ok(format!("DATE {}", quoted(text))),
        // Postgres's text forms (`1 day 02:00:00`, as Strata writes intervals too) are
        // read here; another is left to the engine's own reading.
        Type::INTERVAL => Ok(Interval::parse(text)
            .map(Interval::literal)
            .unwrap_or_else(|| format!("INTERVAL {}", quoted(text)))),
        _ => Ok(quoted(text)),
    }
}

fn binary_literal(bytes: &[u8], ty: &Type) -> Result<String, PgWireError> {
    let bad = |e: Box<dyn std::error::Error + Sync + Send>| {
        error(
            INVALID_TEXT,
            format!("a binary parameter of type {ty} is malformed: {e}"),
        )
    };
    match *ty {
        Type::BOOL => Ok(if bool::from_sql(ty, bytes).map_err(bad)? {
            "TRUE"
        } else {
            "FALSE"
        }
        .into()),
        Type::INT2 => Ok(integer(i16::from_sql(ty, bytes).map_err(bad)?.into())),
        Type::INT4 => Ok(integer(i32::from_sql(ty, bytes).map_err(bad)?.into())),
        Type::INT8 => Ok(integer(i64::from_sql(ty, bytes).map_err(bad)?)),
        Type::OID => Ok(integer(u32::from_sql(ty, bytes).map_err(bad)?.into())),
        Type::FLOAT4 => {
            let number = f64::from(f32::from_sql(ty, bytes).map_err(bad)?);
            Ok(float(number, ""))
        }
        Type::FLOAT8 => Ok(float(f64::from_sql(ty, bytes).map_err(bad)?, "")),
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            let micros = i64::from_sql(&Type::INT8, bytes).map_err(bad)?;
            let at = DateTime::from_timestamp_micros(micros.saturating_add(POSTGRES_EPOCH_MICROS))
                .ok_or_else(|| error(INVALID_TEXT, "a timestamp parameter is out of range"))?;
            Ok(format!(
                "TIMESTAMP '{}'",
                at.format("%Y-%m-%dT%H:%M:%S%.6fZ")
            ))
        }
        Type::DATE => {
            let day = NaiveDate::from_sql(ty, bytes).map_err(bad)?;
            Ok(format!("DATE '{day}'"))
        }
        Type::INTERVAL => Interval::from_binary(bytes)
            .map(Interval::literal)
            .ok_or_else(|| bad("not 16 bytes".into())),
        Type::NUMERIC => {
            let digits = numeric_digits(bytes).ok_or_else(|| {
                error(
                    INVALID_TEXT,
                    "a binary numeric parameter is malformed (its lengths or digits)",
                )
            })?;
            Ok(match digits.parse::<f64>() {
                Ok(value) => float(value, &digits),
                Err(_) => float(f64::NAN, ""),
            })
        }
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::JSON => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| error("22021", "a parameter is not valid UTF-8"))?;
            Ok(quoted(text))
        }
        _ => Err(error(
            NOT_SUPPORTED,
            format!("binary parameters of type {ty} are not supported; send it as text"),
        )),
    }
}

/// The decimal digits of a binary `numeric` (`-12.50`, `NaN`, `Infinity`): Postgres sends
/// its digit count, weight (the power of 10,000 of the first digit), sign and display
/// scale, then its digits in base 10,000, each 0 to 9,999. `None` when malformed.
fn numeric_digits(bytes: &[u8]) -> Option<String> {
    let word = |i: usize| -> Option<u16> {
        Some(u16::from_be_bytes(bytes.get(i..i + 2)?.try_into().ok()?))
    };
    let count = usize::from(word(0)?);
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    let scale = usize::from(word(6)?);
    if bytes.len() != 8 + 2 * count || scale > 16_383 {
        return None;
    }
    match sign {
        0xC000 => return Some("NaN".to_owned()),
        0xD000 => return Some("Infinity".to_owned()),
        0xF000 => return Some("-Infinity".to_owned()),
        0x0000 | 0x4000 => {}
        _ => return None,
    }
    let digits: Vec<u16> = (0..count).map(|i| word(8 + 2 * i)).collect::<Option<_>>()?;
    if digits.iter().any(|&d| d > 9_999) || weight.unsigned_abs() > 1 << 14 {
        return None;
    }
    // Base-10,000 digit k (of weight `weight - k`) as four decimal digits.
    let digit = |power: i32| -> u16 {
        usize::try_from(weight - power)
            .ok()
            .and_then(|k| digits.get(k).copied())
            .unwrap_or(0)
    };
    let mut out = String::new();
    if sign == 0x4000 {
        out.push('-');
    }
    let mut whole = String::new();
    for power in (0..=weight.max(0)).rev() {
        whole.push_str(&format!("{:04}", digit(power)));
    }
    let whole = whole.trim_start_matches('0');
    out.push_str(if whole.is_empty() { "0" } else { whole });
    if scale > 0 {
        out.push('.');
        let mut fraction = String::new();
        let mut power = -1;
        while fraction.len() < scale {
            fraction.push_str(&format!("{:04}", digit(power)));
            power -= 1;
        }
        out.push_str(&fraction[..scale]);
    }
    Some(out)
}

/// An integer literal; negative ones in parentheses so no operator before them can join
/// the minus sign.
fn integer(value: i64) -> String {
    if value < 0 {
        format!("({value})")
    } else {
        value.to_string()
    }
}

/// A float literal: the client's own digits when they are a plain decimal number (so
/// `numeric` text keeps every digit), else the shortest exact form; NaN and infinities as
/// casts.
fn float(value: f64, text: &str) -> String {
    if !value.is_finite() {
        let name = if value.is_nan() {
            "NaN"
        } else if value > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        return format!("CAST('{name}' AS DOUBLE)");
    }
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'-' || b == b'.');
    let digits = if plain {
        text.to_owned()
    } else {
        format!("{value:?}")
    };
    if digits.starts_with('-') {
        format!("({digits})")
    } else {
        digits
    }
}

/// `text` as a SQL string literal.
pub(crate) fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(text: &str, ty: &Type) -> String {
        literal(Some(text.as_bytes()), ty, false).expect("valid")
    }

    #[test]
    fn text_values_become_one_literal_each() {
        assert_eq!(lit("it's", &Type::TEXT), "'it''s'");
        assert_eq!(
            lit("x'); DROP TABLE cpu; --", &Type::UNKNOWN),
            "'x''); DROP TABLE cpu; --'"
        );
        assert_eq!(lit("-5", &Type::INT4), "(-5)");
        assert_eq!(lit("1.25e3", &Type::FLOAT8), "1.25e3");
        assert_eq!(lit("NaN", &Type::FLOAT8), "CAST('NaN' AS DOUBLE)");
        assert_eq!(lit("t", &Type::BOOL), "TRUE");
        assert_eq!(
            lit("2016-01-01 00:00:00+00", &Type::TIMESTAMPTZ),
            "TIMESTAMP '2016-01-01 00:00:00+00'"
        );
        assert_eq!(literal(None, &Type::INT8, false).expect("null"), "NULL");
        for (bad, ty) in [
            ("1; DROP TABLE cpu", Type::INT8),
            ("1e", Type::FLOAT8),
            ("maybe", Type::BOOL),
        ] {
            let err = literal(Some(bad.as_bytes()), &ty, false).expect_err("invalid");
            assert!(err.to_string().contains("invalid input syntax"), "{err}");
        }
    }

    #[test]
    fn binary_values_decode_by_type() {
        let bin = |bytes: &[u8], ty: &Type| literal(Some(bytes), ty, true).expect("valid");
        assert_eq!(bin(&42i32.to_be_bytes(), &Type::INT4), "42");
        assert_eq!(bin(&(-7i64).to_be_bytes(), &Type::INT8), "(-7)");
        assert_eq!(bin(&1.5f64.to_be_bytes(), &Type::FLOAT8), "1.5");
        assert_eq!(bin(&[1], &Type::BOOL), "TRUE");
        assert_eq!(bin(b"a'b", &Type::TEXT), "'a''b'");
        // 2016-01-01T00:00:00Z is 504,921,600 s after 2000-01-01.
        assert_eq!(
            bin(&504_921_600_000_000i64.to_be_bytes(), &Type::TIMESTAMPTZ),
            "TIMESTAMP '2016-01-01T00:00:00.000000Z'"
        );
        assert!(literal(Some(&[0, 1]), &Type::INT4, true).is_err());
        assert!(literal(Some(&[0]), &Type::POINT, true).is_err());
    }

    #[test]
    fn binary_numerics_keep_every_digit() {
        // As Postgres 15.18's numeric_send writes these values.
        let hex = |h: &str| -> Vec<u8> {
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
                .collect()
        };
        for (sent, want) in [
            ("0002000000000002000c1388", "12.50"),
            ("0001ffff40000004002a", "(-0.0042)"),
            (
                "000500040000000007341a5802e103bb064f",
                "18446744073709551615",
            ),
            ("0001000100000000000a", "100000"),
            ("0000000000000000", "0"),
            ("00000000c0000000", "CAST('NaN' AS DOUBLE)"),
        ] {
            let got = literal(Some(&hex(sent)), &Type::NUMERIC, true).expect("valid");
            assert_eq!(got, want, "{sent}");
        }
        // Lengths that disagree, a digit past 9,999, an unknown sign.
        for bad in [
            "0002000000000002000c",
            "0001000000000000ffff",
            "0000000012340000",
        ] {
            assert!(
                literal(Some(&hex(bad)), &Type::NUMERIC, true).is_err(),
                "{bad}"
            );
        }
    }
}
