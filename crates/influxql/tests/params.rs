//! `$name` placeholders bound through the `params` map.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::*;
use strata_influxql::{BinaryOp::*, Expr, Param, ParseError, Query, Statement, parse_query};

/// The parameter map from `(name, value)` pairs.
fn params(pairs: &[(&str, Param)]) -> HashMap<String, Param> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Parses `text` with `pairs` bound.
fn with_params(text: &str, pairs: &[(&str, Param)]) -> Result<Query, ParseError> {
    parse_query(text, &params(pairs))
}

#[test]
fn every_param_type_becomes_its_literal() {
    let q = with_params(
        r#"SELECT v FROM m WHERE host = $host AND n > $n AND f < $f AND b = $b AND t >= $"start time""#,
        &[
            ("host", Param::String("server01".into())),
            ("n", Param::Integer(-3)),
            ("f", Param::Float(1.5)),
            ("b", Param::Boolean(true)),
            ("start time", Param::String("2024-01-01T00:00:00Z".into())),
        ],
    )
    .unwrap();
    let Statement::Select(s) = &q.statements[0] else {
        panic!("{q:?}")
    };
    assert_eq!(
        s.condition,
        Some(bin(
            And,
            bin(
                And,
                bin(
                    And,
                    bin(
                        And,
                        bin(Eq, var("host"), string("server01")),
                        bin(Gt, var("n"), Expr::Integer(-3)),
                    ),
                    bin(Lt, var("f"), Expr::Float(1.5)),
                ),
                bin(Eq, var("b"), Expr::Boolean(true)),
            ),
            bin(GtEq, var("t"), string("2024-01-01T00:00:00Z")),
        ))
    );
}

#[test]
fn limits_take_integer_params() {
    let q = with_params(
        "SELECT v FROM m LIMIT $l OFFSET $o SLIMIT $sl SOFFSET $so",
        &[
            ("l", Param::Integer(10)),
            ("o", Param::Integer(0)),
            ("sl", Param::Integer(2)),
            ("so", Param::Integer(3)),
        ],
    )
    .unwrap();
    let Statement::Select(s) = &q.statements[0] else {
        panic!("{q:?}")
    };
    assert_eq!(
        (s.limit, s.offset, s.slimit, s.soffset),
        (Some(10), Some(0), Some(2), Some(3))
    );
    let e = with_params(
        "SELECT v FROM m LIMIT $l",
        &[("l", Param::String("10".into()))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "found $l, expected non-negative integer at line 1, char 23"
    );
    let e = with_params("SELECT v FROM m LIMIT $l", &[("l", Param::Integer(-1))]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "found $l, expected non-negative integer at line 1, char 23"
    );
}

#[test]
fn string_param_after_regex_operator_is_a_regex() {
    let q = with_params(
        "SELECT v FROM m WHERE host =~ $re",
        &[("re", Param::String("^web-[0-9]+$".into()))],
    )
    .unwrap();
    let Statement::Select(s) = &q.statements[0] else {
        panic!("{q:?}")
    };
    assert_eq!(
        s.condition,
        Some(bin(RegexMatch, var("host"), regex("^web-[0-9]+$")))
    );
    let e = with_params(
        "SELECT v FROM m WHERE host =~ $re",
        &[("re", Param::Integer(1))],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "found $re, expected regex at line 1, char 31"
    );
}

#[test]
fn params_in_show_and_delete() {
    let q = with_params(
        "SHOW TAG VALUES WITH KEY = host WHERE region = $r LIMIT $n; DELETE FROM cpu WHERE time < $t",
        &[
            ("r", Param::String("us".into())),
            ("n", Param::Integer(5)),
            ("t", Param::Integer(1_000)),
        ],
    )
    .unwrap();
    let Statement::ShowTagValues(show) = &q.statements[0] else {
        panic!("{q:?}")
    };
    assert_eq!(
        show.from.condition,
        Some(bin(Eq, var("region"), string("us")))
    );
    assert_eq!(show.from.limit, Some(5));
    let Statement::Delete(delete) = &q.statements[1] else {
        panic!("{q:?}")
    };
    assert_eq!(
        delete.condition,
        Some(bin(Lt, var("time"), Expr::Integer(1_000)))
    );
}

#[test]
fn missing_params_are_named() {
    let e = with_params(
        "SELECT v FROM m WHERE a = $a AND b = $b",
        &[("a", Param::Integer(1))],
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "missing parameter: b at line 1, char 38");
    let e = with_params(r#"SELECT v FROM m WHERE a = $"my param""#, &[]).unwrap_err();
    assert_eq!(e.message, "missing parameter: my param");
    let e = with_params("SELECT v FROM m LIMIT $n", &[]).unwrap_err();
    assert_eq!(e.message, "missing parameter: n");
    // Names are case-sensitive.
    let e = with_params("SELECT v FROM m WHERE a = $A", &[("a", Param::Integer(1))]).unwrap_err();
    assert_eq!(e.message, "missing parameter: A");
}

#[test]
fn unary_minus_before_a_param() {
    let q = with_params("SELECT v FROM m WHERE a > -$x", &[("x", Param::Integer(4))]).unwrap();
    let Statement::Select(s) = &q.statements[0] else {
        panic!("{q:?}")
    };
    assert_eq!(
        s.condition,
        Some(bin(
            Gt,
            var("a"),
            bin(Mul, Expr::Integer(-1), Expr::Integer(4))
        ))
    );
}
