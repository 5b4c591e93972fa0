//! SHOW statements, each form with its optional clauses, compared as whole syntax trees.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use strata_influxql::{
    BinaryOp::*, CardinalityKind, Expr, MeasurementName, MeasurementRef, ShowCardinality, ShowFrom,
    ShowMeasurements, ShowTagValues, Statement, TagKeyFilter,
};

/// `host = 'a'`.
fn host_is_a() -> Expr {
    bin(Eq, var("host"), string("a"))
}

#[test]
fn simple_shows() {
    assert_eq!(statement("SHOW DATABASES"), Statement::ShowDatabases);
    assert_eq!(statement("show diagnostics"), Statement::ShowDiagnostics);
    assert_eq!(statement("SHOW USERS"), Statement::ShowUsers);
    assert_eq!(
        statement("SHOW STATS"),
        Statement::ShowStats { module: None }
    );
    assert_eq!(
        statement("SHOW STATS FOR 'httpd'"),
        Statement::ShowStats {
            module: Some("httpd".into())
        }
    );
    assert_eq!(
        statement("SHOW RETENTION POLICIES"),
        Statement::ShowRetentionPolicies { database: None }
    );
    assert_eq!(
        statement(r#"SHOW RETENTION POLICIES ON "telegraf""#),
        Statement::ShowRetentionPolicies {
            database: Some("telegraf".into())
        }
    );
}

#[test]
fn show_measurements() {
    assert_eq!(
        statement("SHOW MEASUREMENTS"),
        Statement::ShowMeasurements(ShowMeasurements::default())
    );
    assert_eq!(
        statement(
            "SHOW MEASUREMENTS ON db WITH MEASUREMENT =~ /cpu.*/ WHERE host = 'a' LIMIT 10 OFFSET 5"
        ),
        Statement::ShowMeasurements(ShowMeasurements {
            database: Some("db".into()),
            with: Some(MeasurementName::Regex("cpu.*".into())),
            condition: Some(host_is_a()),
            limit: Some(10),
            offset: Some(5),
        })
    );
    assert_eq!(
        statement(r#"SHOW MEASUREMENTS WITH MEASUREMENT = "cpu""#),
        Statement::ShowMeasurements(ShowMeasurements {
            with: Some(MeasurementName::Name("cpu".into())),
            ..ShowMeasurements::default()
        })
    );
}

#[test]
fn show_tag_keys() {
    assert_eq!(
        statement("SHOW TAG KEYS"),
        Statement::ShowTagKeys(ShowFrom::default())
    );
    assert_eq!(
        statement(
            r#"SHOW TAG KEYS ON db FROM cpu, "mem", /^disk/ WHERE host = 'a' LIMIT 1 OFFSET 2"#
        ),
        Statement::ShowTagKeys(ShowFrom {
            database: Some("db".into()),
            sources: vec![
                measurement("cpu"),
                measurement("mem"),
                MeasurementRef {
                    database: None,
                    retention_policy: None,
                    name: MeasurementName::Regex("^disk".into()),
                },
            ],
            condition: Some(host_is_a()),
            limit: Some(1),
            offset: Some(2),
        })
    );
}

#[test]
fn show_tag_values_key_filters() {
    let cases = [
        (r#"= "host""#, TagKeyFilter::Eq("host".into())),
        ("!= host", TagKeyFilter::NotEq("host".into())),
        ("<> host", TagKeyFilter::NotEq("host".into())),
        ("=~ /^h/", TagKeyFilter::Regex("^h".into())),
        ("!~ /^h/", TagKeyFilter::NotRegex("^h".into())),
        (
            r#"IN (host, "region")"#,
            TagKeyFilter::In(vec!["host".into(), "region".into()]),
        ),
    ];
    for (filter, key) in cases {
        let q = format!("SHOW TAG VALUES WITH KEY {filter}");
        assert_eq!(
            statement(&q),
            Statement::ShowTagValues(ShowTagValues {
                from: ShowFrom::default(),
                key,
            }),
            "{q}"
        );
    }
}

#[test]
fn show_tag_values_all_clauses() {
    // What Grafana sends for a template variable.
    let q = r#"SHOW TAG VALUES ON "db" FROM "cpu" WITH KEY = "host" WHERE "region" =~ /^us/ LIMIT 100 OFFSET 10"#;
    assert_eq!(
        statement(q),
        Statement::ShowTagValues(ShowTagValues {
            from: ShowFrom {
                database: Some("db".into()),
                sources: vec![measurement("cpu")],
                condition: Some(bin(RegexMatch, var("region"), regex("^us"))),
                limit: Some(100),
                offset: Some(10),
            },
            key: TagKeyFilter::Eq("host".into()),
        })
    );
}

#[test]
fn show_field_keys() {
    assert_eq!(
        statement("SHOW FIELD KEYS"),
        Statement::ShowFieldKeys(ShowFrom::default())
    );
    assert_eq!(
        statement("SHOW FIELD KEYS ON db FROM db.rp.cpu LIMIT 3 OFFSET 1"),
        Statement::ShowFieldKeys(ShowFrom {
            database: Some("db".into()),
            sources: vec![MeasurementRef {
                database: Some("db".into()),
                retention_policy: Some("rp".into()),
                name: MeasurementName::Name("cpu".into()),
            }],
            condition: None,
            limit: Some(3),
            offset: Some(1),
        })
    );
}

#[test]
fn show_series() {
    assert_eq!(
        statement("SHOW SERIES"),
        Statement::ShowSeries(ShowFrom::default())
    );
    assert_eq!(
        statement("SHOW SERIES ON db FROM cpu WHERE host = 'a' LIMIT 5 OFFSET 6"),
        Statement::ShowSeries(ShowFrom {
            database: Some("db".into()),
            sources: vec![measurement("cpu")],
            condition: Some(host_is_a()),
            limit: Some(5),
            offset: Some(6),
        })
    );
}

#[test]
fn show_cardinality_every_kind() {
    let cases = [
        ("MEASUREMENT", CardinalityKind::Measurement),
        ("SERIES", CardinalityKind::Series),
        ("TAG KEY", CardinalityKind::TagKey),
        ("FIELD KEY", CardinalityKind::FieldKey),
    ];
    for (what, kind) in cases {
        for exact in [false, true] {
            let q = format!(
                "SHOW {what} {}CARDINALITY",
                if exact { "EXACT " } else { "" }
            );
            assert_eq!(
                statement(&q),
                Statement::ShowCardinality(ShowCardinality {
                    kind,
                    exact,
                    from: ShowFrom::default(),
                    key: None,
                }),
                "{q}"
            );
        }
    }
}

#[test]
fn show_cardinality_with_clauses() {
    assert_eq!(
        statement("SHOW SERIES EXACT CARDINALITY ON db FROM cpu WHERE host = 'a' LIMIT 1 OFFSET 2"),
        Statement::ShowCardinality(ShowCardinality {
            kind: CardinalityKind::Series,
            exact: true,
            from: ShowFrom {
                database: Some("db".into()),
                sources: vec![measurement("cpu")],
                condition: Some(host_is_a()),
                limit: Some(1),
                offset: Some(2),
            },
            key: None,
        })
    );
    assert_eq!(
        statement("SHOW TAG VALUES CARDINALITY ON db FROM cpu WITH KEY = host WHERE host = 'a'"),
        Statement::ShowCardinality(ShowCardinality {
            kind: CardinalityKind::TagValues,
            exact: false,
            from: ShowFrom {
                database: Some("db".into()),
                sources: vec![measurement("cpu")],
                condition: Some(host_is_a()),
                limit: None,
                offset: None,
            },
            key: Some(TagKeyFilter::Eq("host".into())),
        })
    );
    assert_eq!(
        statement("SHOW TAG VALUES EXACT CARDINALITY WITH KEY IN (a, b)"),
        Statement::ShowCardinality(ShowCardinality {
            kind: CardinalityKind::TagValues,
            exact: true,
            from: ShowFrom::default(),
            key: Some(TagKeyFilter::In(vec!["a".into(), "b".into()])),
        })
    );
}
