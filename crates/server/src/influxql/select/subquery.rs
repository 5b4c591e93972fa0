//! Subqueries in `FROM`: the inner `SELECT` runs first (with the outer time range added to
//! its own), its series become an in-memory measurement — the inner series' tags are its
//! tags, the inner columns its fields — and the outer statement runs over those points
//! with the same fold, fill and transformation code as over stored data.

use std::cmp::Ordering;
use std::sync::Arc;

use strata_influxql::{BinaryOp, Dimension, Expr, Fill, SelectStatement};
use strata_storage::catalog::{FieldDef, TableSchema};
use strata_storage::model::FieldType;

use super::super::result::{Series, Value};
use super::Grouping;
use super::condition::{TimeRange, split_time};
use super::fields::{READ_PREVIOUS, calls_any, contains_aggregate};
use super::regex::Regex;

/// One measurement of an inner query's answer, and the outer condition on its points.
pub(crate) struct Subquery {
    /// The inner series of one name.
    pub series: Vec<Series>,
    /// The outer `WHERE` without its time terms.
    pub condition: Option<Expr>,
    /// The outer time range.
    pub range: TimeRange,
}

/// The inner query as influxd 1.x runs it under `outer`: with the outer's `GROUP BY time()`
/// when it has none of its own ([`inherit_interval`]), and the outer time range added to
/// its `WHERE`.
pub(super) fn inner_statement(
    inner: &SelectStatement,
    outer: &SelectStatement,
    range: TimeRange,
    now_ns: i64,
) -> Result<SelectStatement, String> {
    let inner = inherit_interval(inner, outer, now_ns)?;
    Ok(with_range(&inner, range))
}

/// The inner statement as influxd 1.x runs it under `outer`, checked against influxd 1.6.7:
/// - Without a `GROUP BY time()` of its own it takes the outer's interval and offset: an
///   inner aggregate is folded per outer bucket instead of once over the range, and
///   `derivative`/`non_negative_derivative` of raw values default to that interval as their
///   unit instead of 1s.
/// - An aggregate's default fill(null) becomes fill(none).
/// - A transformation that reads the point or bucket before each one (`difference`,
///   `derivative`, `moving_average`, `elapsed` and their non-negative forms; not
///   `cumulative_sum`), with an interval of its own or taken from the outer, reads from one
///   interval before the inner's own lower time bound, never before the outer's, and
///   nothing earlier: the points it makes there are kept (not trimmed to the inner's
///   bound), and its first point or bucket has no value before it. The caller runs such an
///   inner without the top-level widening ([`super::Context::inner`]).
fn inherit_interval(
    inner: &SelectStatement,
    outer: &SelectStatement,
    now_ns: i64,
) -> Result<SelectStatement, String> {
    let mut inner = inner.clone();
    let own = time_dimension(&inner);
    let inherited = time_dimension(outer).filter(|_| own.is_none());
    if let Some((interval_ns, offset_ns)) = inherited {
        if inner.fields.iter().any(|f| contains_aggregate(&f.expr)) {
            inner.dimensions.push(Dimension::Time {
                interval_ns,
                offset_ns,
            });
        } else {
            for field in &mut inner.fields {
                default_derivative_unit(&mut field.expr, interval_ns);
            }
        }
    }
    // influxd switches an inner aggregate's fill(null) (the default) to fill(none): its
    // empty buckets are left out rather than null, which `count` (0, not null) shows.
    if inner.fill == Fill::Null && inner.fields.iter().any(|f| contains_aggregate(&f.expr)) {
        inner.fill = Fill::None;
    }
    let Some((interval_ns, _)) = own.or(inherited) else {
        return Ok(inner);
    };
    if inner
        .fields
        .iter()
        .any(|f| calls_any(&f.expr, READ_PREVIOUS))
    {
        let (mut own_range, rest) = split_time(inner.condition.as_ref(), now_ns)?;
        if let Some(start) = own_range.start {
            own_range.start = Some(start.saturating_sub(interval_ns));
            inner.condition = rest;
            inner = with_range(&inner, own_range);
        }
    }
    Ok(inner)
}

/// The `GROUP BY time()` interval and offset of `statement`, if it has one.
fn time_dimension(statement: &SelectStatement) -> Option<(i64, i64)> {
    statement.dimensions.iter().find_map(|d| match d {
        Dimension::Time {
            interval_ns,
            offset_ns,
        } => Some((*interval_ns, *offset_ns)),
        _ => None,
    })
}

/// Gives `derivative(x)` and `non_negative_derivative(x)` in `expr` the unit `unit_ns`.
fn default_derivative_unit(expr: &mut Expr, unit_ns: i64) {
    match expr {
        Expr::Call { name, args } => {
            if matches!(name.as_str(), "derivative" | "non_negative_derivative") && args.len() == 1
            {
                args.push(Expr::Duration(unit_ns));
            }
            for arg in args {
                default_derivative_unit(arg, unit_ns);
            }
        }
        Expr::Binary { lhs, rhs, .. } => {
            default_derivative_unit(lhs, unit_ns);
            default_derivative_unit(rhs, unit_ns);
        }
        Expr::Paren(inner) => default_derivative_unit(inner, unit_ns),
        _ => {}
    }
}

/// The inner query with the outer time range added to its `WHERE`.
pub(super) fn with_range(inner: &SelectStatement, range: TimeRange) -> SelectStatement {
    let mut inner = inner.clone();
    let time = || {
        Box::new(Expr::VarRef {
            name: "time".into(),
            cast: None,
        })
    };
    let mut terms: Vec<Expr> = Vec::new();
    if let Some(start) = range.start {
        terms.push(Expr::Binary {
            op: BinaryOp::GtEq,
            lhs: time(),
            rhs: Box::new(Expr::Integer(start)),
        });
    }
    if let Some(end) = range.end {
        terms.push(Expr::Binary {
            op: BinaryOp::Lt,
            lhs: time(),
            rhs: Box::new(Expr::Integer(end)),
        });
    }
    for term in terms {
        inner.condition = Some(match inner.condition.take() {
            Some(c) => Expr::Binary {
                op: BinaryOp::And,
                lhs: Box::new(Expr::Paren(Box::new(c))),
                rhs: Box::new(term),
            },
            None => term,
        });
    }
    inner
}

/// The schema of an inner answer's series: their tag keys, and their columns as fields
/// typed by the first value each holds.
pub(super) fn schema_of(name: &str, series: &[Series]) -> TableSchema {
    let mut schema = TableSchema {
        id: u32::MAX,
        database: String::new(),
        name: name.to_owned(),
        tags: Vec::new(),
        fields: Vec::new(),
        time_unit: None,
    };
    for s in series {
        for (key, _) in s.tags.iter() {
            if !schema.tags.iter().any(|t| t == key) {
                schema.tags.push(key.to_owned());
            }
        }
        for (i, column) in s.columns.iter().enumerate().skip(1) {
            if schema.field(column).is_some() {
                continue;
            }
            let field_type = s.values.iter().find_map(|row| match row.get(i) {
                Some(Value::Float(_)) => Some(FieldType::Float),
                Some(Value::Integer(_)) => Some(FieldType::Integer),
                Some(Value::Unsigned(_)) => Some(FieldType::Unsigned),
                Some(Value::Boolean(_)) => Some(FieldType::Boolean),
                Some(Value::String(_)) => Some(FieldType::String),
                _ => None,
            });
            // A tag the inner query selected as a column (`SELECT usage, host`) still
            // groups the outer query, as the points' tags do in InfluxDB.
            if field_type == Some(FieldType::String) && !schema.tags.contains(column) {
                schema.tags.push(column.clone());
            }
            let id = schema.fields.len() as u32;
            schema.fields.push(FieldDef {
                id,
                name: column.clone(),
                field_type: field_type.unwrap_or(FieldType::Float),
            });
        }
    }
    schema
}

/// A point with what it sorts by: (series key, time, the other tags, the row).
type SortedPoint = (Vec<String>, i64, Vec<String>, Vec<Value>);

/// The points of `sub` in [`super::points`]'s layout: `time`, the grouped tags present in
/// `schema`, then `vars`; ordered by series key, time, then the other tags.
pub(super) fn points(
    sub: &Subquery,
    schema: &TableSchema,
    grouping: &Grouping,
    vars: &[String],
    desc: bool,
) -> Result<(Vec<Vec<Value>>, usize), String> {
    let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
    let others = super::other_tags(schema, grouping);
    let mut rows: Vec<SortedPoint> = Vec::new();
    for s in &sub.series {
        for row in &s.values {
            // A tag of the series, or else a string column of the row by that name.
            let tag = |key: &str| match s.tags.get(key) {
                Some(v) => v.to_owned(),
                None => match s
                    .columns
                    .iter()
                    .position(|c| c == key)
                    .and_then(|i| row.get(i))
                {
                    Some(Value::String(v)) => v.to_string(),
                    _ => String::new(),
                },
            };
            let key: Vec<String> = group_tags.iter().map(|t| tag(t)).collect();
            let other: Vec<String> = others.iter().map(|t| tag(t)).collect();
            let Some(Value::Time(t)) = row.first() else {
                continue;
            };
            // Not filtered by the outer start: an inner bucket that the outer start cuts
            // keeps its bucket's start time, before the outer start, and influxd 1.x keeps
            // its point (it lands in the outer's first bucket).
            if sub.range.end.is_some_and(|end| *t >= end) {
                continue;
            }
            let value = |name: &str| -> Value {
                if let Some(i) = s.columns.iter().position(|c| c == name) {
                    return row.get(i).cloned().unwrap_or(Value::Null);
                }
                match s.tags.get(name) {
                    Some(v) => Value::text(v),
                    None => Value::Null,
                }
            };
            if let Some(condition) = &sub.condition
                && !matches(condition, &value)?
            {
                continue;
            }
            let mut out = Vec::with_capacity(1 + key.len() + vars.len());
            out.push(Value::Time(*t));
            out.extend(key.iter().map(|k| {
                if k.is_empty() {
                    Value::Null
                } else {
                    Value::text(k.as_str())
                }
            }));
            out.extend(vars.iter().map(|v| value(v)));
            rows.push((key, *t, other, out));
        }
    }
    rows.sort_by(|a, b| {
        let time = if desc { b.1.cmp(&a.1) } else { a.1.cmp(&b.1) };
        a.0.cmp(&b.0).then(time).then_with(|| a.2.cmp(&b.2))
    });
    let width = 1 + group_tags.len() + vars.len();
    let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(rows.len()); width];
    for (_, _, _, row) in rows {
        for (column, value) in columns.iter_mut().zip(row) {
            column.push(value);
        }
    }
    Ok((columns, group_tags.len()))
}

/// Whether a point satisfies a (time-free) condition; a missing tag is `''`, a missing
/// field is null and fails every comparison.
fn matches(expr: &Expr, value: &dyn Fn(&str) -> Value) -> Result<bool, String> {
    Ok(match expr {
        Expr::Paren(inner) => matches(inner, value)?,
        Expr::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => matches(lhs, value)? && matches(rhs, value)?,
        Expr::Binary {
            op: BinaryOp::Or,
            lhs,
            rhs,
        } => matches(lhs, value)? || matches(rhs, value)?,
        Expr::Binary {
            op: op @ (BinaryOp::RegexMatch | BinaryOp::RegexNotMatch),
            lhs,
            rhs,
        } => {
            let (Expr::VarRef { name, .. }, Expr::Regex(re)) = (lhs.as_ref(), rhs.as_ref()) else {
                return Err("invalid regex condition".into());
            };
            let text = match value(name) {
                Value::String(s) => s,
                Value::Null => Arc::from(""),
                _ => return Ok(false),
            };
            Regex::new(re)?.is_match(&text) == (*op == BinaryOp::RegexMatch)
        }
        Expr::Binary { op, lhs, rhs } => {
            let (l, r) = (operand(lhs, value), operand(rhs, value));
            let ordering = match (&l, &r) {
                (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
                (Value::Null, Value::String(b)) if is_var(lhs) => Some("".cmp(b.as_ref())),
                (Value::Boolean(a), Value::Boolean(b)) => Some(a.cmp(b)),
                _ => match (l.as_f64(), r.as_f64()) {
                    (Some(a), Some(b)) => a.partial_cmp(&b),
                    _ => None,
                },
            };
            let Some(ordering) = ordering else {
                return Ok(false);
            };
            match op {
                BinaryOp::Eq => ordering == Ordering::Equal,
                BinaryOp::NotEq => ordering != Ordering::Equal,
                BinaryOp::Lt => ordering == Ordering::Less,
                BinaryOp::LtEq => ordering != Ordering::Greater,
                BinaryOp::Gt => ordering == Ordering::Greater,
                BinaryOp::GtEq => ordering != Ordering::Less,
                _ => return Err("invalid condition".into()),
            }
        }
        Expr::Boolean(b) => *b,
        _ => return Err("invalid condition: expected a comparison".into()),
    })
}

fn is_var(expr: &Expr) -> bool {
    matches!(expr, Expr::VarRef { .. })
}

fn operand(expr: &Expr, value: &dyn Fn(&str) -> Value) -> Value {
    match expr {
        Expr::VarRef { name, .. } => value(name),
        Expr::Paren(inner) => operand(inner, value),
        Expr::Integer(v) => Value::Integer(*v),
        Expr::Float(v) => Value::Float(*v),
        Expr::String(s) => Value::text(s.as_str()),
        Expr::Boolean(b) => Value::Boolean(*b),
        _ => Value::Null,
    }
}
