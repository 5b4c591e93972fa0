//! Every grammar rule on valid input: parts, field types, timestamps, whitespace,
//! comments, line endings, series keys, duplicates.

mod common;

use std::borrow::Cow;

use common::{line, only_line, parse_all, s};
use strata_lineproto::FieldValue::{Boolean, Float, Integer, UInteger};
use strata_lineproto::{Line, ParseOptions, parse_lines};

#[test]
fn measurement_and_one_field() {
    assert_eq!(
        only_line("cpu value=1"),
        line(1, "cpu", "cpu", &[], vec![("value", Float(1.0))], None)
    );
}

#[test]
fn tags_fields_and_timestamp() {
    assert_eq!(
        only_line(
            "cpu,host=a,region=eu usage=0.5,count=3i,total=7u,ok=t,msg=\"hi\" 1700000000000000000"
        ),
        line(
            1,
            "cpu,host=a,region=eu",
            "cpu",
            &[("host", "a"), ("region", "eu")],
            vec![
                ("usage", Float(0.5)),
                ("count", Integer(3)),
                ("total", UInteger(7)),
                ("ok", Boolean(true)),
                ("msg", s("hi")),
            ],
            Some(1_700_000_000_000_000_000),
        )
    );
}

#[test]
fn float_spellings() {
    let cases: &[(&str, f64)] = &[
        ("1", 1.0),
        ("-1", -1.0),
        ("1.5", 1.5),
        ("-1e3", -1000.0),
        ("1E3", 1000.0),
        ("1e+3", 1000.0),
        ("2.5e-3", 0.0025),
        ("1.", 1.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("0", 0.0),
        ("007", 7.0),
        ("0.1", 0.1),
        ("123456789.123456789", 123_456_789.123_456_79),
        ("1.7976931348623157e308", f64::MAX),
        ("5e-324", 5e-324),
    ];
    for &(text, want) in cases {
        let input = format!("m f={text}");
        let got = only_line(&input);
        assert_eq!(
            got,
            line(1, "m", "m", &[], vec![("f", Float(want))], None),
            "{text}"
        );
    }
    // -0 keeps its sign bit.
    let got = only_line("m f=-0");
    assert_eq!(got.fields.len(), 1);
    match got.fields[0].1 {
        Float(v) => assert_eq!(v.to_bits(), (-0.0f64).to_bits()),
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn integer_and_unsigned_bounds() {
    assert_eq!(
        only_line(
            "m a=0i,b=-9223372036854775808i,c=9223372036854775807i,d=0u,e=18446744073709551615u"
        ),
        line(
            1,
            "m",
            "m",
            &[],
            vec![
                ("a", Integer(0)),
                ("b", Integer(i64::MIN)),
                ("c", Integer(i64::MAX)),
                ("d", UInteger(0)),
                ("e", UInteger(u64::MAX)),
            ],
            None,
        )
    );
}

#[test]
fn every_boolean_spelling() {
    let input = "m a=t,b=T,c=true,d=True,e=TRUE,f=f,g=F,h=false,i=False,j=FALSE";
    let fields = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        .into_iter()
        .enumerate()
        .map(|(n, k)| (k, Boolean(n < 5)))
        .collect();
    assert_eq!(only_line(input), line(1, "m", "m", &[], fields, None));
}

#[test]
fn string_values_and_their_escapes() {
    let got =
        only_line(r#"m a="",b="x y,z=w",c="say \"hi\"",d="back\\slash",e="lit\eral\\",f="\\\"""#);
    assert_eq!(
        got,
        line(
            1,
            "m",
            "m",
            &[],
            vec![
                ("a", s("")),
                ("b", s("x y,z=w")),
                ("c", s("say \"hi\"")),
                ("d", s("back\\slash")),
                ("e", s("lit\\eral\\")),
                ("f", s("\\\"")),
            ],
            None,
        )
    );
    // Unescaped strings borrow; escaped ones are owned.
    assert!(matches!(
        &got.fields[1].1,
        strata_lineproto::FieldValue::String(Cow::Borrowed(_))
    ));
    assert!(matches!(
        &got.fields[2].1,
        strata_lineproto::FieldValue::String(Cow::Owned(_))
    ));
}

#[test]
fn measurement_escapes() {
    // `\,` and `\ ` and `\\` are escapes; `\=` and `\x` keep the backslash; `=` is literal.
    let got = only_line(r"my\,meas\ ure\\ment\=x\y=1 f=1");
    assert_eq!(
        got,
        line(
            1,
            r"my\,meas\ ure\\ment\=x\y=1",
            r"my,meas ure\ment\=x\y=1",
            &[],
            vec![("f", Float(1.0))],
            None
        )
    );
    assert!(matches!(got.measurement, Cow::Owned(_)));
}

#[test]
fn tag_and_field_key_escapes() {
    let got = only_line(r"m,t\,k\=e\ y\\=v\,a\=l\ u\\e\x f\,k\=e\ y\\=1i");
    assert_eq!(
        got,
        line(
            1,
            r"m,t\,k\=e\ y\\=v\,a\=l\ u\\e\x",
            "m",
            &[(r"t,k=e y\", r"v,a=l u\e\x")],
            vec![(r"f,k=e y\", Integer(1))],
            None,
        )
    );
}

#[test]
fn backslash_sequences_follow_influxdb_table() {
    // InfluxDB: `\`→`\`, `\\`→`\`, `\\\`→`\\`, `\\\\`→`\\`.
    for (written, want) in [
        (r"a\b", r"a\b"),
        (r"a\\b", r"a\b"),
        (r"a\\\b", r"a\\b"),
        (r"a\\\\b", r"a\\b"),
    ] {
        let input = format!("{written} f=1");
        let got = only_line(&input);
        assert_eq!(
            got,
            line(1, written, want, &[], vec![("f", Float(1.0))], None),
            "{written}"
        );
    }
}

#[test]
fn plain_parts_borrow_from_the_input() {
    let got = only_line("cpu,host=a v=1");
    assert!(matches!(got.measurement, Cow::Borrowed(_)));
    assert!(matches!(got.tags[0], (Cow::Borrowed(_), Cow::Borrowed(_))));
    assert!(matches!(got.fields[0].0, Cow::Borrowed(_)));
}

#[test]
fn non_ascii_utf8_everywhere() {
    assert_eq!(
        only_line("温度,städte=Zürich wert=1i,ñ=\"日本\""),
        line(
            1,
            "温度,städte=Zürich",
            "温度",
            &[("städte", "Zürich")],
            vec![("wert", Integer(1)), ("ñ", s("日本"))],
            None
        )
    );
}

#[test]
fn negative_and_zero_timestamps() {
    let got = parse_all(b"m f=1 -1\nm f=1 0\nm f=1 -9223372036854775808\n");
    let want: Vec<Result<Line<'_>, _>> = vec![
        Ok(line(1, "m", "m", &[], vec![("f", Float(1.0))], Some(-1))),
        Ok(line(2, "m", "m", &[], vec![("f", Float(1.0))], Some(0))),
        Ok(line(
            3,
            "m",
            "m",
            &[],
            vec![("f", Float(1.0))],
            Some(i64::MIN),
        )),
    ];
    assert_eq!(got, want);
}

#[test]
fn comments_blank_lines_crlf_and_whitespace() {
    let input = b"# header\r\n\r\n   \n\t# indented comment\n  cpu v=1i 5\r\ncpu  v=2i   6  \r\n\ncpu v=3i  \nlast v=4i";
    let got = parse_all(input);
    let want: Vec<Result<Line<'_>, _>> = vec![
        Ok(line(5, "cpu", "cpu", &[], vec![("v", Integer(1))], Some(5))),
        Ok(line(6, "cpu", "cpu", &[], vec![("v", Integer(2))], Some(6))),
        Ok(line(8, "cpu", "cpu", &[], vec![("v", Integer(3))], None)),
        Ok(line(9, "last", "last", &[], vec![("v", Integer(4))], None)),
    ];
    assert_eq!(got, want);
}

#[test]
fn empty_and_comment_only_inputs_yield_nothing() {
    for input in [
        &b""[..],
        b"\n",
        b"\r\n\r\n",
        b"# only\n#comment",
        b"   \t  ",
    ] {
        assert_eq!(parse_all(input), vec![], "{input:?}");
    }
}

#[test]
fn hash_inside_a_line_is_not_a_comment() {
    assert_eq!(
        only_line("m#1,t=#x f#=1i"),
        line(
            1,
            "m#1,t=#x",
            "m#1",
            &[("t", "#x")],
            vec![("f#", Integer(1))],
            None
        )
    );
}

#[test]
fn duplicate_keys_are_kept_in_order_last_wins_for_consumers() {
    assert_eq!(
        only_line("m,t=1,t=2 f=1i,f=2i,g=1"),
        line(
            1,
            "m,t=1,t=2",
            "m",
            &[("t", "1"), ("t", "2")],
            vec![("f", Integer(1)), ("f", Integer(2)), ("g", Float(1.0))],
            None
        )
    );
}

#[test]
fn series_key_is_raw_and_tag_order_is_kept() {
    let got = parse_all(b"cpu,b=2,a=1 v=1\ncpu,a=1,b=2 v=1\n");
    let want: Vec<Result<Line<'_>, _>> = vec![
        Ok(line(
            1,
            "cpu,b=2,a=1",
            "cpu",
            &[("b", "2"), ("a", "1")],
            vec![("v", Float(1.0))],
            None,
        )),
        Ok(line(
            2,
            "cpu,a=1,b=2",
            "cpu",
            &[("a", "1"), ("b", "2")],
            vec![("v", Float(1.0))],
            None,
        )),
    ];
    assert_eq!(got, want);
}

#[test]
fn next_into_reuses_the_line_and_matches_the_iterator() {
    let input = b"a,t=1 f=1i 1\n# c\nb g=\"x\"\nbad\nc h=t 3\n";
    let options = ParseOptions::default();
    let expected: Vec<_> = parse_lines(input, &options).collect();
    let mut lines = parse_lines(input, &options);
    let mut reused = Line::default();
    let mut got = Vec::new();
    while let Some(r) = lines.next_into(&mut reused) {
        got.push(r.map(|()| reused.clone()));
    }
    assert_eq!(got, expected);
    assert_eq!(got.len(), 4);
    // Fused: keeps returning None.
    assert_eq!(lines.next(), None);
}
