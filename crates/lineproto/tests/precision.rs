//! Precision names and timestamp scaling to nanoseconds, overflow included.

mod common;

use common::{error, line};
use strata_lineproto::FieldValue::Float;
use strata_lineproto::{
    Line, ParseError, ParseErrorKind, ParseOptions, Precision, PrecisionError, parse_lines,
};

fn parse_at(input: &[u8], precision: Precision) -> Vec<Result<Line<'_>, ParseError>> {
    let options = ParseOptions {
        precision,
        ..ParseOptions::default()
    };
    parse_lines(input, &options).collect()
}

#[test]
fn precision_names() {
    let cases = [
        ("ns", Precision::Nanoseconds),
        ("n", Precision::Nanoseconds),
        ("us", Precision::Microseconds),
        ("u", Precision::Microseconds),
        ("ms", Precision::Milliseconds),
        ("s", Precision::Seconds),
    ];
    for (name, want) in cases {
        assert_eq!(name.parse::<Precision>(), Ok(want), "{name}");
    }
    for bad in ["", "h", "m", "NS", "sec", " s"] {
        assert_eq!(
            bad.parse::<Precision>(),
            Err(PrecisionError {
                got: bad.to_owned()
            }),
            "{bad:?}"
        );
    }
    assert_eq!(
        "h".parse::<Precision>().unwrap_err().to_string(),
        "unknown precision \"h\": expected one of ns, us, ms, s"
    );
    let names: Vec<String> = [
        Precision::Nanoseconds,
        Precision::Microseconds,
        Precision::Milliseconds,
        Precision::Seconds,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(names, ["ns", "us", "ms", "s"]);
    assert_eq!(Precision::default(), Precision::Nanoseconds);
    assert_eq!(ParseOptions::default().precision, Precision::Nanoseconds);
}

#[test]
fn timestamps_are_scaled_to_nanoseconds() {
    let cases = [
        (Precision::Nanoseconds, 5),
        (Precision::Microseconds, 5_000),
        (Precision::Milliseconds, 5_000_000),
        (Precision::Seconds, 5_000_000_000),
    ];
    for (precision, want) in cases {
        assert_eq!(
            parse_at(b"m f=1 5\nm f=1 -5", precision),
            vec![
                Ok(line(1, "m", "m", &[], vec![("f", Float(1.0))], Some(want))),
                Ok(line(2, "m", "m", &[], vec![("f", Float(1.0))], Some(-want))),
            ],
            "{precision}"
        );
    }
}

#[test]
fn scaling_overflow_is_an_error_at_the_boundary() {
    // i64::MAX = 9_223_372_036_854_775_807 ns.
    let cases: [(Precision, &str, i64, &str, &str); 3] = [
        (
            Precision::Seconds,
            "9223372036",
            9_223_372_036_000_000_000,
            "9223372037",
            "-9223372037",
        ),
        (
            Precision::Milliseconds,
            "9223372036854",
            9_223_372_036_854_000_000,
            "9223372036855",
            "-9223372036855",
        ),
        (
            Precision::Microseconds,
            "9223372036854775",
            9_223_372_036_854_775_000,
            "9223372036854776",
            "-9223372036854776",
        ),
    ];
    for (precision, fits, fits_ns, over, under) in cases {
        let input = format!("m f=1 {fits}\nm f=1 -{fits}\nm f=1 {over}\nm f=1 {under}\n");
        let overflow = ParseErrorKind::TimestampOverflow { precision };
        assert_eq!(
            parse_at(input.as_bytes(), precision),
            vec![
                Ok(line(
                    1,
                    "m",
                    "m",
                    &[],
                    vec![("f", Float(1.0))],
                    Some(fits_ns)
                )),
                Ok(line(
                    2,
                    "m",
                    "m",
                    &[],
                    vec![("f", Float(1.0))],
                    Some(-fits_ns)
                )),
                Err(error(3, 7, overflow.clone())),
                Err(error(4, 7, overflow)),
            ],
            "{precision}"
        );
    }
    let err = parse_at(b"m f=1 9223372037", Precision::Seconds)
        .remove(0)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "line 1, column 7: timestamp overflows a signed 64-bit nanosecond count at precision s"
    );
}

#[test]
fn nanosecond_extremes_fit() {
    assert_eq!(
        parse_at(
            b"m f=1 9223372036854775807\nm f=1 -9223372036854775808",
            Precision::Nanoseconds
        ),
        vec![
            Ok(line(
                1,
                "m",
                "m",
                &[],
                vec![("f", Float(1.0))],
                Some(i64::MAX)
            )),
            Ok(line(
                2,
                "m",
                "m",
                &[],
                vec![("f", Float(1.0))],
                Some(i64::MIN)
            )),
        ]
    );
}
