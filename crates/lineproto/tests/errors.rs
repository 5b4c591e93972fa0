//! Every error kind, with its exact line and column, and recovery after bad lines.

mod common;

use common::{error, line, only_error, parse_all};
use strata_lineproto::FieldValue::{Float, Integer};
use strata_lineproto::ParseErrorKind::*;
use strata_lineproto::{Line, ParseError, ParseErrorKind, ParseOptions, parse_lines};

fn key(k: &str) -> String {
    k.to_owned()
}

/// Asserts each `(input, column, kind)` is one error on line 1.
fn check(cases: &[(&str, usize, ParseErrorKind)]) {
    for (input, column, kind) in cases {
        assert_eq!(
            only_error(input),
            error(1, *column, kind.clone()),
            "input {input:?}"
        );
    }
}

#[test]
fn display_names_line_column_and_what_was_expected() {
    let got = parse_all(b"m v=1\n# comment\nm,a=b usage_user 1\n");
    assert_eq!(got.len(), 2);
    let err = got[1].clone().unwrap_err();
    assert_eq!(
        err,
        error(
            3,
            17,
            ExpectedFieldEquals {
                key: key("usage_user")
            }
        )
    );
    assert_eq!(
        err.to_string(),
        "line 3, column 17: expected '=' after field key \"usage_user\""
    );
}

#[test]
fn measurement_errors() {
    check(&[
        (",t=1 f=1", 1, EmptyMeasurement),
        ("  ,t=1 f=1", 3, EmptyMeasurement),
    ]);
}

#[test]
fn tag_errors() {
    check(&[
        ("cpu, f=1", 5, EmptyTagKey),
        ("cpu,=v f=1", 5, EmptyTagKey),
        ("cpu,a=1, f=1", 9, EmptyTagKey),
        ("cpu,host f=1", 9, ExpectedTagEquals { key: key("host") }),
        ("cpu,host", 9, ExpectedTagEquals { key: key("host") }),
        (
            "cpu,ho\\ st,x=1 f=1",
            11,
            ExpectedTagEquals {
                key: key("ho\\ st"),
            },
        ),
        ("cpu,host= f=1", 10, EmptyTagValue { key: key("host") }),
        ("cpu,host=", 10, EmptyTagValue { key: key("host") }),
        (
            "cpu,a=b=c f=1",
            8,
            UnescapedEqualsInTagValue { key: key("a") },
        ),
    ]);
}

#[test]
fn missing_field_set() {
    check(&[
        ("cpu", 4, MissingFields),
        ("cpu,t=1", 8, MissingFields),
        ("cpu   ", 7, MissingFields),
    ]);
}

#[test]
fn field_key_errors() {
    check(&[
        ("cpu =1", 5, EmptyFieldKey),
        ("cpu a=1,,b=2", 9, EmptyFieldKey),
        ("cpu a=1,", 9, EmptyFieldKey),
        ("cpu a=1, b=2", 9, EmptyFieldKey),
        (
            "cpu usage_user 1",
            15,
            ExpectedFieldEquals {
                key: key("usage_user"),
            },
        ),
        ("cpu a", 6, ExpectedFieldEquals { key: key("a") }),
        ("cpu a=1,b", 10, ExpectedFieldEquals { key: key("b") }),
        ("cpu a,b=1", 6, ExpectedFieldEquals { key: key("a") }),
    ]);
}

#[test]
fn missing_field_value() {
    check(&[
        ("cpu a=", 7, MissingFieldValue { key: key("a") }),
        ("cpu a= 1", 7, MissingFieldValue { key: key("a") }),
        ("cpu a=,b=1", 7, MissingFieldValue { key: key("a") }),
        ("cpu x=1,a=", 11, MissingFieldValue { key: key("a") }),
    ]);
}

#[test]
fn float_errors() {
    check(&[
        ("cpu a=1.2.3", 7, InvalidFloat { key: key("a") }),
        ("cpu a=1e", 7, InvalidFloat { key: key("a") }),
        ("cpu a=1e+", 7, InvalidFloat { key: key("a") }),
        ("cpu a=+1", 7, InvalidFloat { key: key("a") }),
        ("cpu a=-", 7, InvalidFloat { key: key("a") }),
        ("cpu a=.", 7, InvalidFloat { key: key("a") }),
        ("cpu a=1x", 7, InvalidFloat { key: key("a") }),
        ("cpu a=0x10", 7, InvalidFloat { key: key("a") }),
        ("cpu a=1_000", 7, InvalidFloat { key: key("a") }),
        ("cpu a=1e400", 7, FloatOutOfRange { key: key("a") }),
        ("cpu a=-1e400", 7, FloatOutOfRange { key: key("a") }),
        ("cpu a=NaN", 7, NonFiniteFloat { key: key("a") }),
        ("cpu a=nan", 7, NonFiniteFloat { key: key("a") }),
        ("cpu a=inf", 7, NonFiniteFloat { key: key("a") }),
        ("cpu a=-inf", 7, NonFiniteFloat { key: key("a") }),
        ("cpu a=+Infinity", 7, NonFiniteFloat { key: key("a") }),
        ("cpu a=1,b=INF", 11, NonFiniteFloat { key: key("b") }),
    ]);
}

#[test]
fn integer_errors() {
    check(&[
        ("cpu a=1.5i", 7, InvalidInteger { key: key("a") }),
        ("cpu a=-i", 7, InvalidInteger { key: key("a") }),
        ("cpu a=+1i", 7, InvalidInteger { key: key("a") }),
        ("cpu a=1e3i", 7, InvalidInteger { key: key("a") }),
        (
            "cpu a=9223372036854775808i",
            7,
            IntegerOverflow { key: key("a") },
        ),
        (
            "cpu a=-9223372036854775809i",
            7,
            IntegerOverflow { key: key("a") },
        ),
        (
            "cpu a=99999999999999999999999i",
            7,
            IntegerOverflow { key: key("a") },
        ),
        ("cpu a=-1u", 7, InvalidUnsigned { key: key("a") }),
        ("cpu a=1.0u", 7, InvalidUnsigned { key: key("a") }),
        (
            "cpu a=18446744073709551616u",
            7,
            UnsignedOverflow { key: key("a") },
        ),
    ]);
}

#[test]
fn boolean_and_other_value_errors() {
    check(&[
        ("cpu a=tru", 7, InvalidBoolean { key: key("a") }),
        ("cpu a=FALSe", 7, InvalidBoolean { key: key("a") }),
        ("cpu a=tRUE", 7, InvalidBoolean { key: key("a") }),
        ("cpu a=yes", 7, InvalidFieldValue { key: key("a") }),
        ("cpu a=b=c", 7, InvalidFieldValue { key: key("a") }),
        ("cpu a=i", 7, InvalidFieldValue { key: key("a") }),
    ]);
}

#[test]
fn string_errors() {
    check(&[
        ("cpu a=\"abc", 7, UnterminatedString { key: key("a") }),
        ("cpu a=\"abc\\\"", 7, UnterminatedString { key: key("a") }),
        ("cpu a=\"x\"y", 10, ExpectedAfterString { key: key("a") }),
        ("cpu a=\"x\"\"", 10, ExpectedAfterString { key: key("a") }),
    ]);
    // A newline ends the line even inside quotes.
    let got = parse_all(b"cpu a=\"x\ny\" 1\n");
    assert_eq!(
        got,
        vec![
            Err(error(1, 7, UnterminatedString { key: key("a") })),
            Err(error(2, 5, ExpectedFieldEquals { key: key("1") })),
        ]
    );
}

#[test]
fn timestamp_errors() {
    check(&[
        ("cpu a=1 12x", 9, InvalidTimestamp),
        ("cpu a=1 1.5", 9, InvalidTimestamp),
        ("cpu a=1 -", 9, InvalidTimestamp),
        ("cpu a=1 +5", 9, InvalidTimestamp),
        ("cpu a=1 9223372036854775808", 9, TimestampOutOfRange),
        ("cpu a=1 -9223372036854775809", 9, TimestampOutOfRange),
        ("cpu a=1 123 456", 13, TrailingGarbage),
        ("cpu a=1 123 x", 13, TrailingGarbage),
    ]);
}

#[test]
fn invalid_utf8_reports_the_first_bad_byte() {
    let got = parse_all(b"cpu v=1\ncpu a=\"a\xffb\"\nc\xc3 v=1\nok v=2\n");
    assert_eq!(
        got,
        vec![
            Ok(line(1, "cpu", "cpu", &[], vec![("v", Float(1.0))], None)),
            Err(error(2, 9, InvalidUtf8)),
            Err(error(3, 2, InvalidUtf8)),
            Ok(line(4, "ok", "ok", &[], vec![("v", Float(2.0))], None)),
        ]
    );
}

#[test]
fn good_lines_after_bad_lines_are_still_parsed() {
    let input = b"cpu v=1i 1\ncpu v=oops 2\n\ncpu,host v=1\ncpu v=3i 3\r\nnofields\ncpu v=4i 4";
    let got = parse_all(input);
    assert_eq!(
        got,
        vec![
            Ok(line(1, "cpu", "cpu", &[], vec![("v", Integer(1))], Some(1))),
            Err(error(2, 7, InvalidFieldValue { key: key("v") })),
            Err(error(4, 9, ExpectedTagEquals { key: key("host") })),
            Ok(line(5, "cpu", "cpu", &[], vec![("v", Integer(3))], Some(3))),
            Err(error(6, 9, MissingFields)),
            Ok(line(7, "cpu", "cpu", &[], vec![("v", Integer(4))], Some(4))),
        ]
    );
}

#[test]
fn line_length_limit() {
    let options = ParseOptions {
        max_line_bytes: 10,
        ..ParseOptions::default()
    };
    // Exactly 10 bytes passes; the \r of \r\n does not count; 11 bytes fails at column 11.
    let input = b"cpu v=1 12\r\ncpu v=1 123\n# comment longer than 10\ncpu v=2\n";
    let got: Vec<Result<Line<'_>, ParseError>> = parse_lines(input, &options).collect();
    assert_eq!(
        got,
        vec![
            Ok(line(
                1,
                "cpu",
                "cpu",
                &[],
                vec![("v", Float(1.0))],
                Some(12)
            )),
            Err(error(2, 11, LineTooLong { limit: 10 })),
            Err(error(3, 11, LineTooLong { limit: 10 })),
            Ok(line(4, "cpu", "cpu", &[], vec![("v", Float(2.0))], None)),
        ]
    );
    assert_eq!(
        got[1].clone().unwrap_err().to_string(),
        "line 2, column 11: line is longer than the limit of 10 bytes"
    );
}

#[test]
fn tag_and_field_count_limits() {
    let options = ParseOptions {
        max_tags_per_line: 2,
        max_fields_per_line: 2,
        ..ParseOptions::default()
    };
    let input = b"m,a=1,b=2 f=1,g=2\nm,a=1,b=2,c=3 f=1\nm f=1,g=2,h=3\n";
    let got: Vec<_> = parse_lines(input, &options).collect();
    assert_eq!(
        got,
        vec![
            Ok(line(
                1,
                "m,a=1,b=2",
                "m",
                &[("a", "1"), ("b", "2")],
                vec![("f", Float(1.0)), ("g", Float(2.0))],
                None
            )),
            Err(error(2, 11, TooManyTags { limit: 2 })),
            Err(error(3, 11, TooManyFields { limit: 2 })),
        ]
    );
    assert_eq!(
        got[2].clone().unwrap_err().to_string(),
        "line 3, column 11: too many fields: the limit is 2 per line"
    );
}

#[test]
fn a_series_key_with_more_than_the_series_is_refused_with_its_column() {
    let err = strata_lineproto::parse_series_key("cpu,host=a value=1").unwrap_err();
    assert_eq!((err.line, err.column), (1, 11), "{err}");
    let err = strata_lineproto::parse_series_key("cpu,host").unwrap_err();
    assert_eq!(err.column, 9, "{err}");
    let line = strata_lineproto::parse_series_key(r"c\ pu,a\=b=x\,y,c=d").unwrap();
    assert_eq!(line.measurement, "c pu");
    assert_eq!(line.tags.len(), 2);
    assert_eq!(
        (line.tags[0].0.as_ref(), line.tags[0].1.as_ref()),
        ("a=b", "x,y")
    );
}
