//! Statements whose rows are points a selector picks rather than one folded value per
//! bucket, answered from the points:
//!
//! - a lone selector (`first`, `last`, `min`, `max`, `percentile`) with other fields or
//!   tags: the selected point's row, its time without `GROUP BY time`, the bucket start
//!   with it (empty buckets filled);
//! - `top(field, [tag, …,] N)` / `bottom(…)`: the N best points per bucket (per distinct
//!   tag values first, by `max`/`min`), each at its own time, ordered by time;
//! - `distinct(field)`: each value once per bucket, at the bucket start, ordered by the
//!   time each value was first met (then by value).
//!
//! Ties as InfluxDB 1.6 breaks them: `max`/`min` and `top`/`bottom` prefer the earlier
//! point of equal values, `first`/`last` the larger value of equal times, and otherwise
//! the point met first (series order within one instant).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use strata_influxql::{Expr, Fill, SelectStatement};
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;

use super::super::result::{Row, Series, Value};
use super::condition::TimeRange;
use super::fields::{self, Projections};
use super::tree::Where;
use super::{
    BucketBudget, Context, Grouping, cast_value, eval, finish_rows, grouped, new_series, points,
    series_key,
};

/// Selectors that may bring the other fields and tags of their point along.
const SELECTORS: &[&str] = &["first", "last", "min", "max", "percentile"];

/// How a statement of this module picks its rows.
#[derive(Debug)]
pub(super) enum Plan {
    /// One selector call and other fields/tags.
    Point(Expr),
    /// `top(…)`/`bottom(…)`: the call, its tag arguments and N.
    Top(Expr, Vec<String>, usize),
    /// `distinct(field)`.
    Distinct(Expr),
}

fn call_parts(expr: &Expr) -> (&str, &[Expr]) {
    match expr {
        Expr::Call { name, args } => (name, args),
        _ => ("", &[]),
    }
}

/// The aggregate calls of the select list, each use counted.
fn aggregate_calls(projections: &Projections) -> Vec<&Expr> {
    fn walk<'e>(expr: &'e Expr, out: &mut Vec<&'e Expr>) {
        match expr {
            Expr::Call { name, .. } if fields::AGGREGATES.contains(&name.as_str()) => {
                out.push(expr);
            }
            Expr::Call { args, .. } => args.iter().for_each(|a| walk(a, out)),
            Expr::Binary { lhs, rhs, .. } => {
                walk(lhs, out);
                walk(rhs, out);
            }
            Expr::Paren(inner) => walk(inner, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for p in &projections.columns {
        walk(&p.expr, &mut out);
    }
    out
}

/// Checks how aggregates mix with each other and with plain fields (InfluxDB's errors);
/// `bare` tells whether a column reads a field or tag outside any aggregate.
pub(super) fn check(projections: &Projections, bare: bool) -> Result<(), String> {
    let calls = aggregate_calls(projections);
    for call in &calls {
        let (name, _) = call_parts(call);
        match name {
            "top" | "bottom" if calls.len() > 1 => {
                return Err(format!(
                    "selector function {name}() cannot be combined with other functions"
                ));
            }
            "distinct" if calls.len() > 1 || bare => {
                return Err(
                    "aggregate function distinct() cannot be combined with other functions or fields"
                        .into(),
                );
            }
            _ => {}
        }
    }
    if bare && !calls.is_empty() {
        let (name, _) = call_parts(calls[0]);
        if calls.iter().all(|c| {
            SELECTORS.contains(&call_parts(c).0) || matches!(call_parts(c).0, "top" | "bottom")
        }) {
            if calls.len() > 1 {
                return Err(
                    "mixing multiple selector functions with tags or fields is not supported"
                        .into(),
                );
            }
        } else if !matches!(name, "top" | "bottom") {
            return Err("mixing aggregate and non-aggregate queries is not supported".into());
        }
    }
    Ok(())
}

/// The plan for `projections`, when its rows come from this module.
pub(super) fn plan(projections: &Projections, bare: bool) -> Result<Option<Plan>, String> {
    let calls = aggregate_calls(projections);
    let [call] = calls.as_slice() else {
        return Ok(None);
    };
    let (name, args) = call_parts(call);
    Ok(match name {
        "top" | "bottom" => {
            match args.first() {
                Some(Expr::VarRef { .. }) => {}
                Some(other) => {
                    return Err(format!(
                        "expected first argument to be a field in {name}(), found {}",
                        literal(other)
                    ));
                }
                None => return Err(format!("expected field argument in {name}()")),
            }
            let n = match args.last() {
                Some(Expr::Integer(n)) if args.len() > 1 => *n,
                Some(other) => {
                    return Err(format!(
                        "expected integer as last argument in {name}(), found {}",
                        literal(other)
                    ));
                }
                None => return Err(format!("expected field argument in {name}()")),
            };
            if n < 1 {
                return Err(format!("limit ({n}) in {name} function must be at least 1"));
            }
            let mut tags = Vec::new();
            for arg in &args[1..args.len() - 1] {
                match arg {
                    Expr::VarRef { name, .. } => tags.push(name.clone()),
                    other => {
                        return Err(format!(
                            "only fields or tags are allowed in {name}(), found {}",
                            literal(other)
                        ));
                    }
                }
            }
            Some(Plan::Top((*call).clone(), tags, n as usize))
        }
        "distinct" => match args.first() {
            Some(Expr::VarRef { .. }) => Some(Plan::Distinct((*call).clone())),
            _ => return Err("expected field argument in distinct()".into()),
        },
        n if bare && SELECTORS.contains(&n) => Some(Plan::Point((*call).clone())),
        _ => None,
    })
}

/// An argument as InfluxQL prints it in errors.
fn literal(expr: &Expr) -> String {
    match expr {
        Expr::VarRef { name, .. } => name.clone(),
        Expr::Float(f) => format!("{f:.3}"),
        Expr::Integer(i) => i.to_string(),
        Expr::String(s) => format!("'{s}'"),
        Expr::Wildcard(_) => "*".into(),
        _ => "?".into(),
    }
}

fn field_of(call: &Expr) -> String {
    match call_parts(call).1.first() {
        Some(Expr::VarRef { name, .. }) => name.clone(),
        _ => String::new(),
    }
}

/// Variables read by the projections (and `top`'s tag arguments).
fn variables(projections: &Projections, plan: &Plan) -> Vec<String> {
    let mut out = super::variables(projections);
    if let Plan::Top(_, tags, _) = plan {
        for t in tags {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
    }
    out
}

/// An order over values of one field: numbers numerically, strings and booleans as such.
fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Boolean(x), Value::Boolean(y)) => x.cmp(y),
        (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => Ordering::Equal,
        },
    }
}

/// The row (index into `rows`) a selector picks among `(row, time, value)` points.
fn select_point(function: &str, args: &[Expr], pts: &[(usize, i64, &Value)]) -> Option<usize> {
    if function == "percentile" {
        let p = match args.get(1) {
            Some(Expr::Integer(v)) => *v as f64,
            Some(Expr::Float(v)) => *v,
            _ => return None,
        };
        let mut sorted: Vec<&(usize, i64, &Value)> = pts
            .iter()
            .filter(|(_, _, v)| v.as_f64().is_some())
            .collect();
        sorted.sort_by(|a, b| compare(a.2, b.2));
        let rank = (sorted.len() as f64 * p / 100.0 + 0.5).floor() as i64 - 1;
        return usize::try_from(rank)
            .ok()
            .and_then(|i| sorted.get(i))
            .map(|p| p.0);
    }
    let numeric = matches!(function, "min" | "max");
    let mut best: Option<&(usize, i64, &Value)> = None;
    for p in pts {
        if numeric && p.2.as_f64().is_none() {
            continue;
        }
        let Some(b) = best else {
            best = Some(p);
            continue;
        };
        let by_value = compare(p.2, b.2);
        let better = match function {
            "first" => p.1 < b.1 || (p.1 == b.1 && by_value == Ordering::Greater),
            "last" => p.1 > b.1 || (p.1 == b.1 && by_value == Ordering::Greater),
            "max" => by_value == Ordering::Greater || (by_value == Ordering::Equal && p.1 < b.1),
            _ => by_value == Ordering::Less || (by_value == Ordering::Equal && p.1 < b.1),
        };
        if better {
            best = Some(p);
        }
    }
    best.map(|p| p.0)
}

/// `top`/`bottom` over `(row, time, value)` points: the best per distinct `group` key
/// (`max`/`min`), then the N best, ordered by time (then rank).
fn top_points(
    top: bool,
    n: usize,
    pts: &[(usize, i64, &Value)],
    group: impl Fn(usize) -> Vec<String>,
    grouped_by_tags: bool,
) -> Vec<usize> {
    let mut candidates: Vec<&(usize, i64, &Value)> = if grouped_by_tags {
        let mut per: BTreeMap<Vec<String>, Vec<(usize, i64, &Value)>> = BTreeMap::new();
        for p in pts {
            per.entry(group(p.0)).or_default().push(*p);
        }
        let function = if top { "max" } else { "min" };
        per.values()
            .filter_map(|g| select_point(function, &[], g))
            .filter_map(|row| pts.iter().find(|p| p.0 == row))
            .collect()
    } else {
        pts.iter().collect()
    };
    candidates.sort_by(|a, b| {
        let by_value = compare(a.2, b.2);
        let by_value = if top { by_value.reverse() } else { by_value };
        by_value.then(a.1.cmp(&b.1))
    });
    candidates.truncate(n);
    candidates.sort_by_key(|p| p.1);
    candidates.into_iter().map(|p| p.0).collect()
}

/// Runs a statement [`plan`] gave a plan for.
#[allow(clippy::too_many_arguments)]
pub(super) async fn run(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    plan: Plan,
    range: TimeRange,
    filter: &Where,
) -> Result<Vec<Series>, String> {
    let call = match &plan {
        Plan::Point(c) | Plan::Top(c, _, _) | Plan::Distinct(c) => c.clone(),
    };
    let (function, args) = call_parts(&call);
    let field = field_of(&call);
    if let Plan::Top(_, _, n) = &plan {
        if let Some(limit) = statement.limit.filter(|l| *l > 0)
            && *n as u64 > limit
        {
            return Err(format!(
                "limit ({n}) in {function} function can not be larger than the LIMIT ({limit}) in the select statement"
            ));
        }
        match schema.field(&field).map(|f| f.field_type) {
            Some(FieldType::String) => {
                return Err(format!(
                    "unsupported {function} iterator type: *query.stringInterruptIterator"
                ));
            }
            Some(FieldType::Boolean) => {
                return Err(format!(
                    "unsupported {function} iterator type: *query.booleanInterruptIterator"
                ));
            }
            _ => {}
        }
    }
    if schema.field(&field).is_none() {
        return Ok(Vec::new());
    }
    let vars = variables(projections, &plan);
    let (columns, tag_count) = points(ctx, database, schema, grouping, &vars, filter, true).await?;
    let var_at = |name: &str| {
        vars.iter()
            .position(|v| v == name)
            .map(|i| 1 + tag_count + i)
    };
    let field_col = var_at(&field).ok_or("selected field not fetched")?;
    let bucket_of = |t: i64| match grouping.time {
        Some((width, offset)) => t - (t - offset).rem_euclid(width),
        None => range.start.unwrap_or(0),
    };
    let rows = columns.first().map_or(0, Vec::len);
    // Per series key: per bucket: the points' rows.
    let mut per_series: BTreeMap<Vec<String>, BTreeMap<i64, Vec<usize>>> = BTreeMap::new();
    for row in 0..rows {
        let Value::Time(t) = columns[0][row] else {
            continue;
        };
        let key = series_key(&columns, grouping, schema, row);
        per_series
            .entry(key)
            .or_default()
            .entry(bucket_of(t))
            .or_default()
            .push(row);
    }
    let time_of = |row: usize| match columns[0][row] {
        Value::Time(t) => t,
        _ => 0,
    };
    let row_values = |row: usize, value: &Value| -> Vec<Value> {
        let lookup = |e: &Expr| -> Option<Value> {
            if *e == call {
                return Some(value.clone());
            }
            match e {
                Expr::VarRef { name, cast } => {
                    let i = var_at(name)?;
                    Some(cast_value(columns[i][row].clone(), *cast))
                }
                _ => None,
            }
        };
        projections
            .columns
            .iter()
            .map(|p| eval::eval(&p.expr, &lookup))
            .collect()
    };
    let mut out = Vec::new();
    for (key, buckets) in per_series {
        let mut series = new_series(grouping, key, projections);
        // Per bucket: its rows as (time, values), in the order shown.
        let mut selected: BTreeMap<i64, Vec<(i64, Vec<Value>)>> = BTreeMap::new();
        for (bucket, bucket_rows) in &buckets {
            let pts: Vec<(usize, i64, &Value)> = bucket_rows
                .iter()
                .map(|r| (*r, time_of(*r), &columns[field_col][*r]))
                .filter(|p| !p.2.is_null())
                .collect();
            if pts.is_empty() {
                continue;
            }
            let shown: Vec<(i64, Vec<Value>)> = match &plan {
                Plan::Point(_) => select_point(function, args, &pts)
                    .map(|row| {
                        let t = if grouping.time.is_some() {
                            *bucket
                        } else {
                            time_of(row)
                        };
                        vec![(t, row_values(row, &columns[field_col][row]))]
                    })
                    .unwrap_or_default(),
                Plan::Top(_, tags, n) => {
                    let tag_cols: Vec<Option<usize>> = tags
                        .iter()
                        .map(|t| schema.tags.contains(t).then(|| var_at(t)).flatten())
                        .collect();
                    let group = |row: usize| -> Vec<String> {
                        tag_cols
                            .iter()
                            .map(|c| match c.map(|c| &columns[c][row]) {
                                Some(Value::String(s)) => s.to_string(),
                                _ => String::new(),
                            })
                            .collect()
                    };
                    top_points(function == "top", *n, &pts, group, !tags.is_empty())
                        .into_iter()
                        .map(|row| (time_of(row), row_values(row, &columns[field_col][row])))
                        .collect()
                }
                Plan::Distinct(_) => {
                    let mut seen: Vec<(i64, &Value)> = Vec::new();
                    let ordered: Box<dyn Iterator<Item = &(usize, i64, &Value)>> =
                        if statement.order_desc {
                            Box::new(pts.iter().rev())
                        } else {
                            Box::new(pts.iter())
                        };
                    for (_, t, v) in ordered {
                        if !seen.iter().any(|(_, s)| compare(s, v) == Ordering::Equal) {
                            seen.push((*t, v));
                        }
                    }
                    seen.sort_by(|a, b| a.0.cmp(&b.0).then(compare(a.1, b.1)));
                    let row = pts[0].0;
                    seen.into_iter()
                        .map(|(_, v)| (*bucket, row_values(row, v)))
                        .collect()
                }
            };
            if !shown.is_empty() {
                selected.insert(*bucket, shown);
            }
        }
        if selected.is_empty() {
            continue;
        }
        let (times, values) = match (&plan, grouping.time) {
            (Plan::Point(_), Some((width, offset))) if statement.fill != Fill::None => {
                let read_before = super::grid_beyond_limit(projections);
                filled(
                    statement,
                    range,
                    (ctx.now_ns, ctx.buckets),
                    (width, offset),
                    read_before,
                    &selected,
                )?
            }
            _ => {
                let mut times = Vec::new();
                let mut values = Vec::new();
                // `ORDER BY time DESC` reverses the buckets; rows within stay in order.
                let buckets: Vec<_> = if statement.order_desc {
                    selected.into_values().rev().collect()
                } else {
                    selected.into_values().collect()
                };
                for bucket in buckets {
                    for (t, v) in bucket {
                        times.push(t);
                        values.push(v);
                    }
                }
                series.values = times
                    .into_iter()
                    .zip(values)
                    .map(|(t, v)| {
                        let mut row: Row = smallvec::smallvec![Value::Time(t)];
                        row.extend(v);
                        row
                    })
                    .collect();
                out.push(series);
                continue;
            }
        };
        series.values = finish_rows(
            &projections.columns,
            &times,
            values,
            grouping.time.map(|(w, _)| w),
            false,
            statement.order_desc,
        )?;
        out.push(series);
    }
    Ok(out)
}

/// Every bucket of the range for a selector's point rows, empty ones filled.
fn filled(
    statement: &SelectStatement,
    range: TimeRange,
    (now_ns, budget): (i64, &BucketBudget),
    bucket: (i64, i64),
    read_before: i64,
    selected: &BTreeMap<i64, Vec<(i64, Vec<Value>)>>,
) -> Result<(Vec<i64>, Vec<Vec<Value>>), String> {
    let first_data = selected.keys().next().copied();
    let Some(grid) =
        grouped::bucket_grid(statement, range, now_ns, bucket, first_data, read_before)?
    else {
        return Ok((Vec::new(), Vec::new()));
    };
    budget.take(grid.len())?;
    let width_of_row = selected
        .values()
        .next()
        .and_then(|b| b.first())
        .map_or(0, |(_, v)| v.len());
    let mut times = Vec::new();
    let mut rows = Vec::new();
    let mut empty = Vec::new();
    for t in grid {
        times.push(t);
        match selected.get(&t).and_then(|b| b.first()) {
            Some((_, v)) => {
                rows.push(v.clone());
                empty.push(false);
            }
            None => {
                rows.push(vec![Value::Null; width_of_row]);
                empty.push(true);
            }
        }
    }
    grouped::fill(
        &statement.fill,
        &times,
        &mut rows,
        &empty,
        statement.order_desc,
    );
    Ok((times, rows))
}
