//! CREATE, DROP, ALTER and DELETE statements, compared as whole syntax trees.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use strata_influxql::{
    BinaryOp::*, DeleteSpec, Expr, MeasurementName, MeasurementRef, RetentionPolicySpec, Statement,
};

const HOUR: i64 = 3600 * SEC;
const DAY: i64 = 24 * HOUR;

#[test]
fn create_database() {
    assert_eq!(
        statement("CREATE DATABASE telegraf"),
        Statement::CreateDatabase {
            name: "telegraf".into(),
            policy: None,
        }
    );
    assert_eq!(
        statement(
            r#"CREATE DATABASE "my db" WITH DURATION 30d REPLICATION 1 SHARD DURATION 1d NAME "month""#
        ),
        Statement::CreateDatabase {
            name: "my db".into(),
            policy: Some(RetentionPolicySpec {
                name: Some("month".into()),
                duration_ns: Some(30 * DAY),
                replication: Some(1),
                shard_duration_ns: Some(DAY),
                default: false,
            }),
        }
    );
    assert_eq!(
        statement("create database db with duration inf"),
        Statement::CreateDatabase {
            name: "db".into(),
            policy: Some(RetentionPolicySpec {
                duration_ns: Some(0),
                ..RetentionPolicySpec::default()
            }),
        }
    );
    assert_eq!(
        statement("CREATE DATABASE db WITH NAME rp"),
        Statement::CreateDatabase {
            name: "db".into(),
            policy: Some(RetentionPolicySpec {
                name: Some("rp".into()),
                ..RetentionPolicySpec::default()
            }),
        }
    );
}

#[test]
fn drop_database_and_measurement() {
    assert_eq!(
        statement("DROP DATABASE db"),
        Statement::DropDatabase { name: "db".into() }
    );
    assert_eq!(
        statement(r#"DROP MEASUREMENT "cpu load""#),
        Statement::DropMeasurement {
            name: "cpu load".into()
        }
    );
}

#[test]
fn drop_series_and_delete() {
    let both = DeleteSpec {
        sources: vec![
            measurement("cpu"),
            MeasurementRef {
                database: None,
                retention_policy: None,
                name: MeasurementName::Regex("^mem".into()),
            },
        ],
        condition: Some(bin(Eq, var("host"), string("a"))),
    };
    assert_eq!(
        statement("DROP SERIES FROM cpu, /^mem/ WHERE host = 'a'"),
        Statement::DropSeries(both.clone())
    );
    assert_eq!(
        statement("DELETE FROM cpu, /^mem/ WHERE host = 'a'"),
        Statement::Delete(both)
    );
    assert_eq!(
        statement("DROP SERIES FROM cpu"),
        Statement::DropSeries(DeleteSpec {
            sources: vec![measurement("cpu")],
            condition: None,
        })
    );
    assert_eq!(
        statement("DELETE WHERE time < '2020-01-01T00:00:00Z'"),
        Statement::Delete(DeleteSpec {
            sources: vec![],
            condition: Some(bin(Lt, var("time"), string("2020-01-01T00:00:00Z"))),
        })
    );
    assert_eq!(
        statement("DELETE FROM cpu WHERE time < 100"),
        Statement::Delete(DeleteSpec {
            sources: vec![measurement("cpu")],
            condition: Some(bin(Lt, var("time"), Expr::Integer(100))),
        })
    );
}

#[test]
fn create_retention_policy() {
    assert_eq!(
        statement("CREATE RETENTION POLICY one_day ON db DURATION 1d REPLICATION 1"),
        Statement::CreateRetentionPolicy {
            name: "one_day".into(),
            database: "db".into(),
            spec: RetentionPolicySpec {
                duration_ns: Some(DAY),
                replication: Some(1),
                ..RetentionPolicySpec::default()
            },
        }
    );
    assert_eq!(
        statement(
            r#"CREATE RETENTION POLICY "forever" ON "db" DURATION INF REPLICATION 3 SHARD DURATION 1w DEFAULT"#
        ),
        Statement::CreateRetentionPolicy {
            name: "forever".into(),
            database: "db".into(),
            spec: RetentionPolicySpec {
                name: None,
                duration_ns: Some(0),
                replication: Some(3),
                shard_duration_ns: Some(7 * DAY),
                default: true,
            },
        }
    );
}

#[test]
fn alter_retention_policy_any_order() {
    assert_eq!(
        statement(
            "ALTER RETENTION POLICY rp ON db DEFAULT SHARD DURATION 2h REPLICATION 2 DURATION 1h30m"
        ),
        Statement::AlterRetentionPolicy {
            name: "rp".into(),
            database: "db".into(),
            spec: RetentionPolicySpec {
                name: None,
                duration_ns: Some(HOUR + 30 * 60 * SEC),
                replication: Some(2),
                shard_duration_ns: Some(2 * HOUR),
                default: true,
            },
        }
    );
    assert_eq!(
        statement("ALTER RETENTION POLICY rp ON db DURATION INF"),
        Statement::AlterRetentionPolicy {
            name: "rp".into(),
            database: "db".into(),
            spec: RetentionPolicySpec {
                duration_ns: Some(0),
                ..RetentionPolicySpec::default()
            },
        }
    );
}

#[test]
fn drop_retention_policy() {
    assert_eq!(
        statement(r#"DROP RETENTION POLICY "rp" ON db"#),
        Statement::DropRetentionPolicy {
            name: "rp".into(),
            database: "db".into(),
        }
    );
}

#[test]
fn multiple_statements_of_different_kinds() {
    let q = parse("CREATE DATABASE db;\nSHOW DATABASES;;\n DROP DATABASE db ;");
    assert_eq!(
        q.statements,
        vec![
            Statement::CreateDatabase {
                name: "db".into(),
                policy: None,
            },
            Statement::ShowDatabases,
            Statement::DropDatabase { name: "db".into() },
        ]
    );
}
