//! The writer: exact escaped bytes, value spellings, and what it refuses.

use std::borrow::Cow;

use strata_lineproto::FieldValue::{self, Boolean, Float, Integer, UInteger};
use strata_lineproto::writer::{
    Part, WriteError, write_field_key, write_field_value, write_line, write_measurement,
    write_string_value, write_tag_key, write_tag_value,
};
use strata_lineproto::{Line, ParseOptions, parse_lines};

fn bytes(f: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    f(&mut out);
    String::from_utf8(out).expect("writer output is UTF-8")
}

#[test]
fn parts_are_escaped_per_influxdb_rules() {
    assert_eq!(bytes(|o| write_measurement(o, r"a, b=c\d")), r"a\,\ b=c\\d");
    assert_eq!(bytes(|o| write_tag_key(o, r"a, b=c\d")), r"a\,\ b\=c\\d");
    assert_eq!(bytes(|o| write_tag_value(o, r"a, b=c\d")), r"a\,\ b\=c\\d");
    assert_eq!(bytes(|o| write_field_key(o, r"a, b=c\d")), r"a\,\ b\=c\\d");
    assert_eq!(
        bytes(|o| write_string_value(o, r#"say "hi", a=b \ ok"#)),
        r#""say \"hi\", a=b \\ ok""#
    );
    assert_eq!(bytes(|o| write_measurement(o, "plain")), "plain");
}

#[test]
fn values_use_round_trip_spellings() {
    let cases: Vec<(FieldValue<'_>, &str)> = vec![
        (Float(1.0), "1.0"),
        (Float(-0.5), "-0.5"),
        (Float(-0.0), "-0.0"),
        (Float(1e300), "1e300"),
        (Float(0.1), "0.1"),
        (Float(5e-324), "5e-324"),
        (Integer(-5), "-5i"),
        (Integer(i64::MIN), "-9223372036854775808i"),
        (UInteger(u64::MAX), "18446744073709551615u"),
        (Boolean(true), "true"),
        (Boolean(false), "false"),
        (FieldValue::String(Cow::Borrowed("a\"b")), r#""a\"b""#),
    ];
    for (value, want) in cases {
        assert_eq!(bytes(|o| write_field_value(o, &value)), want, "{value:?}");
    }
}

#[test]
fn write_line_writes_and_parses_back() {
    let mut out = Vec::new();
    let fields = [
        ("usage user", Float(0.25)),
        ("n", Integer(3)),
        ("s", FieldValue::String(Cow::Borrowed("x y"))),
    ];
    write_line(&mut out, "cpu", &[("host", "a,b")], &fields, Some(-7)).unwrap();
    write_line(&mut out, "mem", &[], &[("ok", Boolean(true))], None).unwrap();
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        "cpu,host=a\\,b usage\\ user=0.25,n=3i,s=\"x y\" -7\nmem ok=true\n"
    );
    let got: Vec<_> = parse_lines(&out, &ParseOptions::default()).collect();
    assert_eq!(
        got,
        vec![
            Ok(Line {
                line_number: 1,
                series_key: b"cpu,host=a\\,b",
                measurement: Cow::Borrowed("cpu"),
                tags: vec![(Cow::Borrowed("host"), Cow::Borrowed("a,b"))],
                fields: fields
                    .iter()
                    .map(|(k, v)| (Cow::Borrowed(*k), v.clone()))
                    .collect(),
                timestamp_ns: Some(-7),
            }),
            Ok(Line {
                line_number: 2,
                series_key: b"mem",
                measurement: Cow::Borrowed("mem"),
                tags: vec![],
                fields: vec![(Cow::Borrowed("ok"), Boolean(true))],
                timestamp_ns: None,
            }),
        ]
    );
}

#[test]
fn write_line_refuses_what_cannot_be_represented_and_leaves_the_buffer_alone() {
    let f = [("f", Float(1.0))];
    let cases: Vec<(Result<(), WriteError>, WriteError)> = vec![
        (try_write("", &[], &f), WriteError::Empty(Part::Measurement)),
        (try_write("#m", &[], &f), WriteError::MeasurementStart),
        (try_write("\tm", &[], &f), WriteError::MeasurementStart),
        (
            try_write("m\n", &[], &f),
            WriteError::Newline(Part::Measurement),
        ),
        (
            try_write("m", &[("", "v")], &f),
            WriteError::Empty(Part::TagKey),
        ),
        (
            try_write("m", &[("k", "")], &f),
            WriteError::Empty(Part::TagValue),
        ),
        (
            try_write("m", &[("k", "a\nb")], &f),
            WriteError::Newline(Part::TagValue),
        ),
        (try_write("m", &[], &[]), WriteError::NoFields),
        (
            try_write("m", &[], &[("", Float(1.0))]),
            WriteError::Empty(Part::FieldKey),
        ),
        (
            try_write("m", &[], &[("f", Float(f64::NAN))]),
            WriteError::NonFiniteFloat,
        ),
        (
            try_write("m", &[], &[("f", Float(f64::NEG_INFINITY))]),
            WriteError::NonFiniteFloat,
        ),
        (
            try_write(
                "m",
                &[],
                &[("f", FieldValue::String(Cow::Borrowed("a\nb")))],
            ),
            WriteError::Newline(Part::StringValue),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, Err(want));
    }
    assert_eq!(
        WriteError::Empty(Part::TagValue).to_string(),
        "tag value must not be empty"
    );
}

/// Writes after existing content and checks the content is untouched on error.
fn try_write(
    m: &str,
    tags: &[(&str, &str)],
    fields: &[(&str, FieldValue<'_>)],
) -> Result<(), WriteError> {
    let mut out = b"before\n".to_vec();
    let r = write_line(&mut out, m, tags, fields, Some(1));
    if r.is_err() {
        assert_eq!(out, b"before\n");
    }
    r
}
