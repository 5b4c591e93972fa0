//! Lexical details seen through the public API: comments, quoting and escapes, regex
//! literals, numbers, durations ([`parse_duration`] too), keywords and statement
//! separators.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use strata_influxql::{BinaryOp::*, Expr, MeasurementName, Source, Statement, parse_duration};

const MS: i64 = 1_000_000;
const MIN: i64 = 60 * SEC;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;

/// The WHERE clause of `SELECT v FROM m WHERE {cond}`.
fn condition(cond: &str) -> Expr {
    select(&format!("SELECT v FROM m WHERE {cond}"))
        .condition
        .unwrap()
}

#[test]
fn parse_duration_units() {
    let cases = [
        ("1ns", Some(1)),
        ("7u", Some(7_000)),
        ("7µ", Some(7_000)),
        ("7μ", Some(7_000)),
        ("15ms", Some(15 * MS)),
        ("10s", Some(10 * SEC)),
        ("5m", Some(5 * MIN)),
        ("2h", Some(2 * HOUR)),
        ("3d", Some(3 * DAY)),
        ("2w", Some(14 * DAY)),
        ("1h30m", Some(HOUR + 30 * MIN)),
        (
            "1d2h3m4s5ms6u7ns",
            Some(DAY + 2 * HOUR + 3 * MIN + 4 * SEC + 5 * MS + 6_000 + 7),
        ),
        ("0s", Some(0)),
        ("-5m", Some(-5 * MIN)),
        ("1700000000000ms", Some(1_700_000_000_000 * MS)),
        ("9223372036854775807ns", Some(i64::MAX)),
    ];
    for (text, want) in cases {
        assert_eq!(parse_duration(text), want, "{text}");
    }
}

#[test]
fn parse_duration_rejects() {
    for text in [
        "",
        "-",
        "1",
        "s",
        "1x",
        "1.5h",
        "1h30",
        "h1",
        " 1s",
        "1s ",
        "1 s",
        "+1s",
        "1S",
        "1H",
        "1us",
        "1n",
        "--1s",
        "1h-1m",
        // Overflow, in the number, the multiplication and the sum.
        "9223372036854775808ns",
        "99999999999999999999ns",
        "9223372036854775807w",
        "9223372036854775807ns1ns",
    ] {
        assert_eq!(parse_duration(text), None, "{text:?}");
    }
}

#[test]
fn duration_literals_in_queries() {
    assert_eq!(
        condition("time > now() - 1h30m AND time < 1700000000000ms"),
        bin(
            And,
            bin(
                Gt,
                var("time"),
                bin(Sub, call("now", vec![]), Expr::Duration(HOUR + 30 * MIN))
            ),
            bin(Lt, var("time"), Expr::Duration(1_700_000_000_000 * MS)),
        )
    );
    // `1h-1m` is two durations and a minus, not one literal.
    assert_eq!(
        condition("a = 1h-1m"),
        bin(
            Eq,
            var("a"),
            bin(Sub, Expr::Duration(HOUR), Expr::Duration(MIN))
        )
    );
}

#[test]
fn numbers() {
    assert_eq!(
        condition("a = 0 OR a = 42 OR a = 3.25 OR a = .5 OR a = 9223372036854775807"),
        bin(
            Or,
            bin(
                Or,
                bin(
                    Or,
                    bin(
                        Or,
                        bin(Eq, var("a"), Expr::Integer(0)),
                        bin(Eq, var("a"), Expr::Integer(42)),
                    ),
                    bin(Eq, var("a"), Expr::Float(3.25)),
                ),
                bin(Eq, var("a"), Expr::Float(0.5)),
            ),
            bin(Eq, var("a"), Expr::Integer(i64::MAX)),
        )
    );
}

#[test]
fn strings_with_escapes() {
    assert_eq!(
        condition(
            r#"a = 'it\'s' AND b = 'back\\slash' AND c = 'new\nline' AND d = 'q\"' AND e = ''"#
        ),
        bin(
            And,
            bin(
                And,
                bin(
                    And,
                    bin(
                        And,
                        bin(Eq, var("a"), string("it's")),
                        bin(Eq, var("b"), string("back\\slash")),
                    ),
                    bin(Eq, var("c"), string("new\nline")),
                ),
                bin(Eq, var("d"), string("q\"")),
            ),
            bin(Eq, var("e"), string("")),
        )
    );
    // Non-ASCII text passes through.
    assert_eq!(
        condition("a = 'Zürich — 東京'"),
        bin(Eq, var("a"), string("Zürich — 東京"))
    );
}

#[test]
fn quoted_identifiers() {
    let s = select(
        r#"SELECT "say \"hi\"", "back\\slash", "select", "with space", "Ünïcode" FROM "my \"m\"""#,
    );
    assert_eq!(
        s.fields,
        vec![
            field(var("say \"hi\"")),
            field(var("back\\slash")),
            // A quoted identifier is never a keyword.
            field(var("select")),
            field(var("with space")),
            field(var("Ünïcode")),
        ]
    );
    assert_eq!(s.sources, vec![from("my \"m\"")]);
}

#[test]
fn regex_literals_with_escapes() {
    assert_eq!(
        condition(r"a =~ /^\/api\/v[0-9]+$/ AND b !~ /\d+\.\d+/ AND c =~ /a\\/"),
        bin(
            And,
            bin(
                And,
                bin(RegexMatch, var("a"), regex("^/api/v[0-9]+$")),
                bin(RegexNotMatch, var("b"), regex(r"\d+\.\d+")),
            ),
            // `\\` stays as written (an escaped backslash for the regex engine) and
            // does not escape the closing slash.
            bin(RegexMatch, var("c"), regex(r"a\\")),
        )
    );
    let s = select(r"SELECT v FROM /^cpu\/[a-z]+$/");
    assert_eq!(
        s.sources,
        vec![Source::Measurement(strata_influxql::MeasurementRef {
            database: None,
            retention_policy: None,
            name: MeasurementName::Regex("^cpu/[a-z]+$".into()),
        })]
    );
}

#[test]
fn comments_are_whitespace() {
    let plain = select("SELECT v FROM m WHERE a = 1 GROUP BY host");
    let commented = select(
        "-- leading comment\nSELECT /* inline */ v -- trailing\nFROM/**/m\n/* multi\nline */WHERE a = 1 GROUP BY host -- end",
    );
    assert_eq!(commented, plain);
    // `--` starts a comment even right after an operand.
    assert_eq!(condition("a = 1--2\n"), bin(Eq, var("a"), Expr::Integer(1)));
}

#[test]
fn whitespace_and_line_breaks() {
    let a = select("SELECT\tv\r\nFROM\n\n  m  WHERE a=1");
    let b = select("SELECT v FROM m WHERE a = 1");
    assert_eq!(a, b);
}

#[test]
fn keywords_are_case_insensitive_identifiers_are_not() {
    let s = select("sElEcT Value, VALUE FROM Cpu WhErE Host = 'a' AnD x = TRUE oR y = fAlSe");
    assert_eq!(s.fields, vec![field(var("Value")), field(var("VALUE"))]);
    assert_eq!(s.sources, vec![from("Cpu")]);
    assert_eq!(
        s.condition,
        Some(bin(
            Or,
            bin(
                And,
                bin(Eq, var("Host"), string("a")),
                bin(Eq, var("x"), Expr::Boolean(true)),
            ),
            bin(Eq, var("y"), Expr::Boolean(false)),
        ))
    );
}

#[test]
fn multiple_statements() {
    let q = parse("SELECT a FROM x; SELECT b FROM y;");
    assert_eq!(
        q.statements,
        vec![
            Statement::Select(Box::new(base_select(
                vec![field(var("a"))],
                vec![from("x")]
            ))),
            Statement::Select(Box::new(base_select(
                vec![field(var("b"))],
                vec![from("y")]
            ))),
        ]
    );
    // Empty statements between and around are skipped.
    let q = parse(";; SHOW DATABASES ;;; SHOW USERS ;");
    assert_eq!(
        q.statements,
        vec![Statement::ShowDatabases, Statement::ShowUsers]
    );
    // A `;` inside a string or comment does not separate.
    let q = parse("SELECT a FROM x WHERE s = ';' /* ; */ -- ;\n; SHOW USERS");
    assert_eq!(q.statements.len(), 2);
}
