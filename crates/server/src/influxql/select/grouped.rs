//! Aggregate queries: calls SQL answers exactly run as one grouped SQL statement (the
//! direct path and pre-aggregates, pushed.rs); the others fold the points per series and
//! bucket. Then every bucket of the range is built (fill), the select list evaluated per
//! bucket, and transformations applied.

use strata_influxql::{Expr, Fill, SelectStatement};
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;

use super::super::result::{Row, Series, Value};
use super::buckets::{Cell, SeriesBuckets, Walk};
use super::condition::TimeRange;
use super::fields::{self, Projections};
use super::pushed::{self, Buckets, Pushed};
use super::tree::Where;
use super::{
    BucketBudget, Context, Grouping, MAX_BUCKETS, aggregate, eval, finish_rows, key_matches,
    new_series, points, series_key,
};
use super::{grid, sql};

/// One aggregate call of the select list, borrowed from it. (Compared field by field in
/// this order: two calls mostly differ in their function or field, which compare first.)
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call<'e> {
    pub function: &'e str,
    pub field: &'e str,
    pub args: &'e [Expr],
    pub expr: &'e Expr,
}

/// The call that `expr` is, if it is one: calls point into the select list, so the
/// column's own call is found by address before any deep comparison.
fn call_of(calls: &[Call<'_>], expr: &Expr) -> Option<usize> {
    calls
        .iter()
        .position(|c| std::ptr::eq(c.expr, expr))
        .or_else(|| calls.iter().position(|c| c.expr == expr))
}

/// For each column, the aggregate call it is, if it is one.
fn direct_calls(projections: &Projections, calls: &[Call<'_>]) -> Vec<Option<usize>> {
    projections
        .columns
        .iter()
        .map(|p| call_of(calls, &p.expr))
        .collect()
}

fn calls(projections: &Projections) -> Result<Vec<Call<'_>>, String> {
    fn walk<'e>(expr: &'e Expr, out: &mut Vec<Call<'e>>) -> Result<(), String> {
        match expr {
            Expr::Call { name, args } if fields::AGGREGATES.contains(&name.as_str()) => {
                // `count(distinct(x))`: counts x's distinct values.
                let (name, args) = match (name.as_str(), args.first()) {
                    ("count", Some(Expr::Call { name: inner, args })) if inner == "distinct" => {
                        if !matches!(args.first(), Some(Expr::VarRef { .. })) {
                            return Err("expected field argument in distinct()".into());
                        }
                        ("count_distinct", &args[..1])
                    }
                    _ => (name.as_str(), &args[..]),
                };
                let field = match args.first() {
                    Some(Expr::VarRef { name, .. }) => name.as_str(),
                    _ => return Err(format!("expected field argument in {name}()")),
                };
                if matches!(name, "top" | "bottom" | "distinct" | "sample") {
                    return Err(format!("{name}() is not supported yet"));
                }
                let call = Call {
                    expr,
                    function: name,
                    field,
                    args: &args[1..],
                };
                if !out.contains(&call) {
                    out.push(call);
                }
                Ok(())
            }
            Expr::Call { args, .. } => args.iter().try_for_each(|a| walk(a, out)),
            Expr::Binary { lhs, rhs, .. } => {
                walk(lhs, out)?;
                walk(rhs, out)
            }
            Expr::Paren(inner) => walk(inner, out),
            _ => Ok(()),
        }
    }
    let mut out = Vec::new();
    for p in &projections.columns {
        walk(&p.expr, &mut out)?;
    }
    Ok(out)
}

/// SQL's aggregates for an InfluxQL call, when they answer exactly the same.
fn sql_aggregate<'e>(call: &Call<'e>, schema: &TableSchema) -> Option<Pushed<'e>> {
    if !call.args.is_empty() {
        return None;
    }
    let field = schema.field(call.field)?;
    let numeric = matches!(
        field.field_type,
        FieldType::Float | FieldType::Integer | FieldType::Unsigned
    );
    let functions: &'static [&'static str] = match call.function {
        "count" => &["count"],
        "sum" if numeric => &["sum"],
        "mean" if numeric => &["avg"],
        "min" if numeric => &["min"],
        "max" if numeric => &["max"],
        "first" => &["first"],
        "last" => &["last"],
        "spread" if numeric => &["max", "min"],
        _ => return None,
    };
    Some(Pushed {
        field: call.field,
        functions,
    })
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn grouped(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    range: TimeRange,
    filter: &Where,
) -> Result<Vec<Series>, String> {
    let calls = calls(projections)?;
    let selectors = calls
        .iter()
        .filter(|c| matches!(c.function, "first" | "last" | "min" | "max" | "percentile"))
        .count();
    // A lone selector without GROUP BY time shows its point's time: only the points know it.
    let point_time = grouping.time.is_none() && calls.len() == 1 && selectors == 1;
    // An inner query's answer is in memory: only the points path reads it.
    let pushed: Option<Vec<Pushed<'_>>> = if point_time || ctx.subquery.is_some() {
        None
    } else {
        calls.iter().map(|c| sql_aggregate(c, schema)).collect()
    };
    let bucket_of = |t: i64| match grouping.time {
        Some((width, offset)) => t - (t - offset).rem_euclid(width),
        None => range.start.unwrap_or(0),
    };
    let mut buckets = Buckets::new();
    let grid = match &pushed {
        Some(parts) => {
            let direct = direct_calls(projections, &calls);
            let plain = plain_columns(statement, grouping, projections, &calls, &direct);
            grid::plan(
                ctx,
                statement,
                grouping,
                &calls,
                parts,
                plain.as_deref(),
                range,
            )?
        }
        None => None,
    };
    if let (Some(parts), Some(grid)) = (&pushed, grid) {
        let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
        let sql = pushed::aggregate_sql(schema, &group_tags, grouping.time, parts, filter);
        let batches = sql::run_batches(ctx.query, database, sql).await?;
        if grid::readable(&grid, group_tags.len(), &batches) {
            return grid::series(
                &grid,
                statement,
                schema,
                grouping,
                projections,
                group_tags.len(),
                batches,
            );
        }
        // A type the grid does not write (none the engine answers these aggregates with
        // today): the same answer, read as cells, goes the general way.
        buckets = pushed::collect(
            &calls,
            parts,
            grouping,
            schema,
            range,
            &sql::cells(&batches)?,
        );
    } else if let Some(parts) = pushed {
        buckets = pushed::buckets(
            ctx,
            statement,
            database,
            schema,
            grouping,
            projections,
            &calls,
            &parts,
            range,
            filter,
        )
        .await?;
    } else {
        // Aggregates read fields only: a tag or unknown name has no points (null).
        let vars: Vec<String> = {
            let mut v: Vec<String> = calls
                .iter()
                .filter(|c| schema.field(c.field).is_some())
                .map(|c| c.field.to_owned())
                .collect();
            v.sort();
            v.dedup();
            v
        };
        // Which point of an instant comes first changes `first`, `last`, `mode`'s ties
        // and a float sum's rounding; not these, whose answer (a value, and for the
        // selectors its time) is the same whichever of two such points is read first.
        let ties_change_nothing = calls.iter().all(|c| {
            matches!(
                c.function,
                "max" | "min" | "percentile" | "median" | "count" | "count_distinct" | "spread"
            )
        });
        let (columns, tag_count) = points(
            ctx,
            database,
            schema,
            grouping,
            &vars,
            filter,
            !ties_change_nothing,
        )
        .await?;
        let rows = columns.first().map_or(0, Vec::len);
        let mut start = 0;
        while start < rows {
            let key = series_key(&columns, grouping, schema, start);
            let mut end = start + 1;
            while end < rows && key_matches(&columns, 1, grouping, schema, end, &key) {
                end += 1;
            }
            let per_bucket = buckets
                .entry(key)
                .or_insert_with(|| SeriesBuckets::new(calls.len()));
            let mut at = start;
            while at < end {
                let Value::Time(t0) = columns[0][at] else {
                    at += 1;
                    continue;
                };
                let bucket = bucket_of(t0);
                let mut stop = at + 1;
                while stop < end
                    && matches!(columns[0][stop], Value::Time(t) if bucket_of(t) == bucket)
                {
                    stop += 1;
                }
                let mut values = Vec::with_capacity(calls.len());
                let mut any_points = false;
                for call in &calls {
                    let Some(i) = vars.iter().position(|v| *v == call.field) else {
                        values.push((Value::Null, None));
                        continue;
                    };
                    let i = 1 + tag_count + i;
                    let pts: Vec<(i64, &Value)> = (at..stop)
                        .filter_map(|r| match (&columns[0][r], &columns[i][r]) {
                            (Value::Time(t), v) if !v.is_null() => Some((*t, v)),
                            _ => None,
                        })
                        .collect();
                    any_points |= !pts.is_empty();
                    if pts.is_empty() && !call.function.starts_with("count") {
                        values.push((Value::Null, None));
                        continue;
                    }
                    let folded = aggregate::fold(call.function, call.args, &pts)?;
                    values.push((folded.value, folded.time));
                }
                if any_points {
                    per_bucket.insert(bucket, values);
                }
                at = stop;
            }
            start = end;
        }
    }
    assemble(
        statement,
        grouping,
        projections,
        &calls,
        range,
        buckets,
        (ctx.now_ns, ctx.buckets),
        point_time,
    )
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    statement: &SelectStatement,
    grouping: &Grouping,
    projections: &Projections,
    calls: &[Call<'_>],
    range: TimeRange,
    buckets: Buckets,
    (now_ns, budget): (i64, &BucketBudget),
    point_time: bool,
) -> Result<Vec<Series>, String> {
    // Every bucket of the range (fill): from the range's start, the same for every series;
    // with no lower bound, from each series' own first bucket with data, as influxd does.
    let filled = match grouping.time {
        Some(bucket) if statement.fill != Fill::None => Some(bucket),
        _ => None,
    };
    let read_before = super::grid_beyond_limit(projections);
    let grid_from = |first_data: Option<i64>| match filled {
        Some(bucket) => bucket_grid(statement, range, now_ns, bucket, first_data, read_before),
        None => Ok(None),
    };
    let shared_grid = match range.start {
        Some(_) => grid_from(None)?,
        None => None,
    };
    // Columns that are one aggregate call (the common case) take its value directly.
    let direct = direct_calls(projections, calls);
    let plain = plain_columns(statement, grouping, projections, calls, &direct);
    let mut out = Vec::new();
    for (key, per_bucket) in buckets {
        if per_bucket.is_empty() {
            continue;
        }
        let mut series = new_series(grouping, key, projections);
        let own_grid;
        let times: &[i64] = match (&shared_grid, filled) {
            (Some(grid), _) => grid,
            (None, Some(_)) => {
                own_grid = grid_from(per_bucket.times().first().copied())?;
                own_grid.as_deref().unwrap_or_default()
            }
            (None, None) => per_bucket.times(),
        };
        if filled.is_some() {
            budget.take(times.len())?;
        }
        let mut walk = per_bucket.walk();
        series.values = if let Some(plain) = &plain {
            plain_rows(statement, grouping, calls, plain, times, walk, point_time)
        } else {
            // Each aggregate call's value per bucket, filled call by call (influxd fills each
            // call's own buckets, then evaluates the expressions over them: `last(x) +
            // first(y)` with fill(0) is last(x) where y has no point), then the columns.
            let mut call_rows: Vec<Vec<Value>> = Vec::with_capacity(times.len());
            let mut row_times: Vec<i64> = Vec::with_capacity(times.len());
            let mut unfilled: Vec<(usize, usize)> = Vec::new();
            for t in times {
                let values = walk.at(*t);
                let call_values: Vec<Value> = (0..calls.len())
                    .map(|i| call_value(statement, grouping, calls, values, i))
                    .collect();
                if values.is_some() {
                    // `stddev` of a single point is null, a value influxd does not fill.
                    // (Null because the field has no point in the bucket cannot be told apart
                    // from it here: such a bucket keeps its null too.)
                    for (i, value) in call_values.iter().enumerate() {
                        if value.is_null() && calls[i].function == "stddev" {
                            unfilled.push((call_rows.len(), i));
                        }
                    }
                }
                call_rows.push(call_values);
                let shown = if point_time {
                    values.and_then(|v| v[0].1).unwrap_or(*t)
                } else {
                    *t
                };
                row_times.push(shown);
            }
            let every_cell = vec![true; call_rows.len()];
            // Without GROUP BY time there is one bucket and nothing to fill.
            let fills = match grouping.time {
                Some(_) => &statement.fill,
                None => &Fill::Null,
            };
            fill(
                fills,
                &row_times,
                &mut call_rows,
                &every_cell,
                statement.order_desc,
            );
            for (row, call) in unfilled {
                call_rows[row][call] = Value::Null;
            }
            let rows: Vec<Vec<Value>> = call_rows
                .iter()
                .map(|call_values| {
                    let lookup = |e: &Expr| -> Option<Value> {
                        call_of(calls, e).map(|i| call_values[i].clone())
                    };
                    let mut row: Vec<Value> = Vec::with_capacity(projections.columns.len());
                    row.extend(projections.columns.iter().zip(&direct).map(|(p, direct)| {
                        match direct {
                            Some(i) => call_values[*i].clone(),
                            None => eval::eval(&p.expr, &lookup),
                        }
                    }));
                    row
                })
                .collect();
            // fill(none) shows no bucket where none of the fields has a point.
            finish_rows(
                &projections.columns,
                &row_times,
                rows,
                grouping.time.map(|(w, _)| w),
                statement.fill == Fill::None && grouping.time.is_some(),
                statement.order_desc,
            )?
        };
        if grouping.time.is_none()
            && series
                .values
                .iter()
                .all(|r| r[1..].iter().all(Value::is_null))
        {
            continue;
        }
        out.push(series);
    }
    Ok(out)
}

/// The value of aggregate call `i` in a bucket whose cells are `values` (`None`: the
/// bucket has no data), before any fill but fill(null)'s count of 0.
fn call_value(
    statement: &SelectStatement,
    grouping: &Grouping,
    calls: &[Call<'_>],
    values: Option<&[Cell]>,
    i: usize,
) -> Value {
    let count = calls[i].function.starts_with("count");
    match values {
        // A field without points in a bucket where others have some has no value there,
        // not a count of 0 (InfluxDB zips the fields' own buckets): null without GROUP BY
        // time, and with it under every fill but the default (which counts 0): fill(none)
        // leaves it out, the others fill it.
        Some(v)
            if (statement.fill != Fill::Null || grouping.time.is_none())
                && count
                && v[i].0 == Value::Integer(0) =>
        {
            Value::Null
        }
        Some(v) => v[i].0.clone(),
        // An empty bucket counts 0 under fill(null); other fills fill it.
        None if count && statement.fill == Fill::Null => Value::Integer(0),
        None => Value::Null,
    }
}

/// For each column, the aggregate call it shows, when the rows need nothing between the
/// calls' values and the answer: every column is one call (no arithmetic), none is
/// transformed (`derivative`, …) and no fill replaces values (null or none). TSBS's
/// queries and Grafana's are all of this shape.
fn plain_columns(
    statement: &SelectStatement,
    grouping: &Grouping,
    projections: &Projections,
    calls: &[Call<'_>],
    direct: &[Option<usize>],
) -> Option<Vec<usize>> {
    let fills_nothing =
        grouping.time.is_none() || matches!(statement.fill, Fill::Null | Fill::None);
    let untransformed = projections.columns.iter().all(|c| c.transform.is_none());
    if !fills_nothing || !untransformed || calls.is_empty() {
        return None;
    }
    direct.iter().copied().collect()
}

/// The answer rows of one series for [`plain_columns`]: each built once, time first, with
/// no rows of call values in between (what `assemble` and `finish_rows` do in general: two
/// more allocations a row, a fifth of a small grouped query's time).
fn plain_rows(
    statement: &SelectStatement,
    grouping: &Grouping,
    calls: &[Call<'_>],
    direct: &[usize],
    times: &[i64],
    mut walk: Walk<'_>,
    point_time: bool,
) -> Vec<Row> {
    // fill(none) shows no bucket where none of the fields has a point.
    let drop_empty = statement.fill == Fill::None && grouping.time.is_some();
    let mut rows = Vec::with_capacity(times.len());
    for t in times {
        let values = walk.at(*t);
        let shown = match values {
            Some(v) if point_time => v[0].1.unwrap_or(*t),
            _ => *t,
        };
        let mut row = Row::with_capacity(direct.len() + 1);
        row.push(Value::Time(shown));
        row.extend(
            direct
                .iter()
                .map(|&i| call_value(statement, grouping, calls, values, i)),
        );
        if drop_empty && row[1..].iter().all(Value::is_null) {
            continue;
        }
        rows.push(row);
    }
    if statement.order_desc {
        rows.reverse();
    }
    rows
}

/// The start of every bucket a filled `GROUP BY time(width, offset)` shows: from the range's
/// start (aligned), or else `first_data`'s bucket, up to the range's end or now; under
/// `LIMIT` only the buckets shown are built (InfluxDB fills lazily, so `GROUP BY time(1m)
/// LIMIT 5` with no upper bound is cheap there too), plus `read_before` more for the
/// transformations (see `grid_beyond_limit`). `None` when there is neither a start nor
/// data.
pub(super) fn bucket_grid(
    statement: &SelectStatement,
    range: TimeRange,
    now_ns: i64,
    (width, offset): (i64, i64),
    first_data: Option<i64>,
    read_before: i64,
) -> Result<Option<Vec<i64>>, String> {
    let align = |t: i64| t - (t - offset).rem_euclid(width);
    let Some(mut start) = range.start.map(align).or(first_data) else {
        return Ok(None);
    };
    let end = range.end.unwrap_or(now_ns.saturating_add(1));
    let mut count = (end.saturating_sub(start) + width - 1) / width;
    if let Some(limit) = statement.limit {
        let shown = i64::try_from(limit.saturating_add(statement.offset.unwrap_or(0)))
            .unwrap_or(i64::MAX)
            .saturating_add(read_before);
        if shown < count {
            if statement.order_desc {
                start += (count - shown) * width;
            }
            count = shown;
        }
    }
    if count > MAX_BUCKETS {
        return Err(format!(
            "too many buckets: {count} for one series (at most {MAX_BUCKETS}); use a wider GROUP BY time interval or a shorter time range"
        ));
    }
    Ok(Some(
        (0..count.max(0))
            .map(|i| start + i * width)
            .filter(|t| *t < end)
            .collect(),
    ))
}

/// `fill(previous|linear|<n>)` on the rows of empty buckets (in ascending time).
/// `previous` is the previous row in the answer's order, as InfluxDB fills: under
/// `ORDER BY time DESC` (`desc`) the later bucket.
pub(super) fn fill(
    fill: &Fill,
    times: &[i64],
    rows: &mut [Vec<Value>],
    filled: &[bool],
    desc: bool,
) {
    let width = rows.first().map_or(0, Vec::len);
    for column in 0..width {
        match fill {
            Fill::Null | Fill::None => {}
            Fill::Integer(n) => {
                for (row, empty) in rows.iter_mut().zip(filled) {
                    if *empty && row[column].is_null() {
                        row[column] = Value::Integer(*n);
                    }
                }
            }
            Fill::Float(n) => {
                for (row, empty) in rows.iter_mut().zip(filled) {
                    if *empty && row[column].is_null() {
                        row[column] = Value::Float(*n);
                    }
                }
            }
            Fill::Previous => {
                let mut last = Value::Null;
                let mut fill_from_last = |row: &mut Vec<Value>| {
                    if row[column].is_null() {
                        row[column] = last.clone();
                    } else {
                        last = row[column].clone();
                    }
                };
                if desc {
                    rows.iter_mut().rev().for_each(&mut fill_from_last);
                } else {
                    rows.iter_mut().for_each(&mut fill_from_last);
                }
            }
            Fill::Linear => {
                let known: Vec<usize> = (0..rows.len())
                    .filter(|i| !rows[*i][column].is_null())
                    .collect();
                for pair in known.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    let (Some(va), Some(vb)) = (rows[a][column].as_f64(), rows[b][column].as_f64())
                    else {
                        continue;
                    };
                    let int = matches!(rows[a][column], Value::Integer(_))
                        && matches!(rows[b][column], Value::Integer(_));
                    for i in a + 1..b {
                        let x = va
                            + (vb - va) * (times[i] - times[a]) as f64
                                / (times[b] - times[a]) as f64;
                        rows[i][column] = if int {
                            Value::Integer(x as i64)
                        } else {
                            Value::Float(x)
                        };
                    }
                }
            }
        }
    }
}
