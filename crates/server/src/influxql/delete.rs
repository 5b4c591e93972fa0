//! InfluxQL's `DELETE [FROM …] [WHERE …]` and `DROP SERIES [FROM …] [WHERE …]`, with
//! InfluxDB 1.x's meaning: the rows of the named measurements (every measurement of the
//! request's database without `FROM`; `/regex/` names several) in the condition's time
//! range, of the series its tag condition selects. `DROP SERIES` takes every time and
//! refuses a time condition. Both become [`Engine::delete`] calls, one per measurement,
//! which remove the rows written before the statement from every query at once.
//!
//! The condition: time comparisons joined by `AND` (as in a `SELECT`), and tag comparisons
//! (`=`, `!=`, `=~ /re/`, `!~ /re/`) joined by `AND`, `OR` and parentheses, where a series
//! without the tag has the value `''`. A field anywhere in it is an error, as in InfluxDB.
//! A series whose rows are all gone leaves Strata's series index (and `SHOW SERIES`) at
//! the maintenance round that purges its rows from disk; InfluxDB drops it at once.

use std::sync::Arc;

use strata_influxql::{BinaryOp, DeleteSpec, Expr, VarType};
use strata_storage::catalog::TableSchema;
use strata_storage::model::Timestamp;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine};

use super::meta::{database_exists, measurements};
use super::result::Series;
use super::select::{Regex, split_time};
use super::text;

/// InfluxDB's words for a field in the condition.
const FIELDS_NOT_SUPPORTED: &str = "fields not supported in WHERE clause during deletion";

/// Which statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `DELETE`: a time range and series.
    Delete,
    /// `DROP SERIES`: series, all time.
    DropSeries,
}

/// Runs `DELETE` or `DROP SERIES` in `database` (the request's `db`). Every measurement's
/// condition is checked before anything is deleted.
pub(crate) async fn execute(
    engine: &Arc<Engine>,
    database: Option<&str>,
    kind: Kind,
    spec: &DeleteSpec,
    now_ns: i64,
) -> Result<Vec<Series>, String> {
    // InfluxDB looks the database up by name even when none is given.
    let database = database.unwrap_or_default();
    if !database_exists(engine, database) {
        return Err(format!("database not found: {database}"));
    }
    let condition = spec.condition.as_ref();
    if kind == Kind::DropSeries && condition.is_some_and(mentions_time) {
        return Err("DROP SERIES doesn't support time in WHERE clause".into());
    }
    let (range, tags) = split_time(condition, now_ns)?;
    let mut requests = Vec::new();
    for table in measurements(engine, database, &spec.sources)? {
        let predicate = match &tags {
            Some(expr) => Some(predicate(expr, &table, engine)?),
            None => None,
        };
        requests.push(DeleteRequest {
            table: table.id,
            start: range.start.unwrap_or(Timestamp::MIN),
            end: range.end.unwrap_or(Timestamp::MAX),
            predicate,
        });
    }
    let engine = Arc::clone(engine);
    // Each delete flushes the memtables and fsyncs the catalog: off the async threads.
    tokio::task::spawn_blocking(move || requests.iter().try_for_each(|r| engine.delete(r)))
        .await
        .map_err(|e| format!("delete task failed: {e}"))?
        .map_err(|e| e.to_string())?;
    Ok(Vec::new())
}

/// Whether `expr` compares `time` anywhere (InfluxDB's `HasTimeExpr`).
fn mentions_time(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(inner) => mentions_time(inner),
        Expr::Binary { lhs, rhs, .. } => mentions_time(lhs) || mentions_time(rhs),
        Expr::VarRef { name, .. } => name.eq_ignore_ascii_case("time"),
        _ => false,
    }
}

/// The series of `table` a time-free condition selects.
fn predicate(expr: &Expr, table: &TableSchema, engine: &Engine) -> Result<TagPredicate, String> {
    match expr {
        Expr::Paren(inner) => predicate(inner, table, engine),
        Expr::Binary {
            op: op @ (BinaryOp::And | BinaryOp::Or),
            lhs,
            rhs,
        } => {
            let both = vec![
                predicate(lhs, table, engine)?,
                predicate(rhs, table, engine)?,
            ];
            Ok(if *op == BinaryOp::And {
                TagPredicate::And(both)
            } else {
                TagPredicate::Or(both)
            })
        }
        // `And([])` is every series, `Or([])` none.
        Expr::Boolean(true) => Ok(TagPredicate::And(Vec::new())),
        Expr::Boolean(false) => Ok(TagPredicate::Or(Vec::new())),
        Expr::Binary { op, lhs, rhs } => comparison(*op, lhs, rhs, table, engine),
        other => Err(format!(
            "invalid condition expression: {}",
            text::expr(other)
        )),
    }
}

/// A tag compared with a string or a regex, either way round.
fn comparison(
    op: BinaryOp,
    lhs: &Expr,
    rhs: &Expr,
    table: &TableSchema,
    engine: &Engine,
) -> Result<TagPredicate, String> {
    let (name, cast, value) = match (lhs, rhs) {
        (Expr::VarRef { name, cast }, value) | (value, Expr::VarRef { name, cast }) => {
            (name, *cast, value)
        }
        _ => {
            return Err(format!(
                "invalid expression: {} {} {}",
                text::expr(lhs),
                text::op_text(op),
                text::expr(rhs)
            ));
        }
    };
    let is_field = match cast {
        None => table.field(name).is_some(),
        Some(cast) => cast != VarType::Tag,
    };
    if is_field || !matches!(value, Expr::String(_) | Expr::Regex(_)) {
        return Err(FIELDS_NOT_SUPPORTED.into());
    }
    let key = name.clone();
    let all_values = || engine.tag_values(table.id, name);
    Ok(match (op, value) {
        (BinaryOp::Eq, Expr::String(v)) if v.is_empty() => without(&key, all_values()),
        (BinaryOp::Eq, Expr::String(v)) => TagPredicate::Eq {
            key,
            value: v.clone(),
        },
        (BinaryOp::NotEq, Expr::String(v)) if v.is_empty() => TagPredicate::In {
            key,
            values: all_values(),
        },
        (BinaryOp::NotEq, Expr::String(v)) => TagPredicate::NotEq {
            key,
            value: v.clone(),
        },
        (BinaryOp::RegexMatch | BinaryOp::RegexNotMatch, Expr::Regex(re)) => {
            let re = Regex::new(re)?;
            let want = op == BinaryOp::RegexMatch;
            let (selected, others): (Vec<String>, Vec<String>) = all_values()
                .into_iter()
                .partition(|v| re.is_match(v) == want);
            // A series without the tag has the value '': selected when '' is.
            if re.is_match("") == want {
                without(&key, others)
            } else {
                TagPredicate::In {
                    key,
                    values: selected,
                }
            }
        }
        _ => {
            return Err(format!(
                "invalid tag comparison: {} {} {}: use =, !=, =~ or !~",
                text::expr(lhs),
                text::op_text(op),
                text::expr(rhs)
            ));
        }
    })
}

/// Series whose tag `key` is none of `values`, series without the tag included.
fn without(key: &str, values: Vec<String>) -> TagPredicate {
    TagPredicate::And(
        values
            .into_iter()
            .map(|value| TagPredicate::NotEq {
                key: key.to_owned(),
                value,
            })
            .collect(),
    )
}
