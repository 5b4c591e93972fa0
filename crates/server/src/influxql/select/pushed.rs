//! Aggregates SQL answers exactly (count, sum, mean, min, max, first, last, spread): one
//! grouped SQL statement per select list, answered by the direct path and pre-aggregates
//! like any `/sql` statement, its rows gathered into each series' buckets.

use std::collections::BTreeMap;

use strata_influxql::{Fill, SelectStatement};
use strata_storage::catalog::TableSchema;

use super::super::result::Value;
use super::buckets::SeriesBuckets;
use super::condition::TimeRange;
use super::fields::Projections;
use super::grouped::Call;
use super::sql;
use super::tree::{self, SelectTree, Where};
use super::{Context, Grouping, key_matches, series_key_from};
use datafusion::sql::sqlparser::ast::{Expr, Query, SelectItem};

/// Each series' buckets, by series key.
pub(super) type Buckets = BTreeMap<Vec<String>, SeriesBuckets>;

/// The SQL aggregates that answer one InfluxQL call: `functions` (one, or `max` and `min`
/// for a spread) of the column `field`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pushed<'a> {
    pub field: &'a str,
    pub functions: &'static [&'static str],
}

/// The buckets of every series: `calls`, each answered by the SQL aggregates `parts` says
/// ([`super::grouped`]'s `sql_aggregate`), over `filter`.
#[allow(clippy::too_many_arguments)]
pub(super) async fn buckets(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    calls: &[Call<'_>],
    parts: &[Pushed<'_>],
    range: TimeRange,
    filter: &Where,
) -> Result<Buckets, String> {
    let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
    let answer = Answer {
        calls,
        parts,
        grouping,
        schema,
        group_tags: group_tags.len(),
        range,
    };
    if let Some(shown) = first_buckets_shown(statement, grouping, &group_tags, projections, range) {
        // Its first `shown` buckets with rows, oldest first: the direct path narrows a top-n
        // over time buckets to them, from the oldest time stored.
        let mut sql = aggregate_select(schema, &group_tags, grouping.time, parts, filter);
        sql.order_by = vec![(tree::column(BUCKET), false)];
        sql.limit = Some(shown as u64);
        let columns = sql::run(ctx.query, database, sql.query()).await?;
        let rows = columns.first().map_or(0, Vec::len);
        let buckets = answer.collect(&columns);
        let with_data: usize = buckets.values().map(SeriesBuckets::len).sum();
        // Fewer rows than asked for: there are no more. All with data: they are the first
        // `shown`. Otherwise some bucket has rows but none of the selected fields (an empty
        // bucket to InfluxQL), and the buckets after the last row read may be shown.
        if rows < shown || with_data >= shown {
            return Ok(buckets);
        }
    }
    let narrowed;
    let filter =
        match first_buckets_window(ctx, statement, database, schema, grouping, range, filter)
            .await?
        {
            Window::All => filter,
            Window::Empty => return Ok(Buckets::new()),
            Window::Range(start, end) => {
                narrowed = filter
                    .and(tree::time_from(start))
                    .and(tree::time_before(end));
                &narrowed
            }
        };
    let sql = aggregate_sql(schema, &group_tags, grouping.time, parts, filter);
    let columns = sql::run(ctx.query, database, sql).await?;
    Ok(answer.collect(&columns))
}

/// The buckets of every series in `columns`, the answer of [`aggregate_sql`] for `calls`.
pub(super) fn collect(
    calls: &[Call<'_>],
    parts: &[Pushed<'_>],
    grouping: &Grouping,
    schema: &TableSchema,
    range: TimeRange,
    columns: &[Vec<Value>],
) -> Buckets {
    let answer = Answer {
        calls,
        parts,
        grouping,
        schema,
        group_tags: grouping.tags_in(schema).count(),
        range,
    };
    answer.collect(columns)
}

/// `GROUP BY time(…) LIMIT n [OFFSET m]`, ascending, with one series, no lower time bound
/// and no transformation (TSBS's `groupby-orderby-limit`): how many buckets it shows from
/// its first one with data. Those are among the first that many buckets with rows, in any
/// fill: the grid starts at the first bucket with data, `fill(previous)` reads only earlier
/// buckets, and `fill(linear)`'s next known bucket after a gap among them is among them too.
fn first_buckets_shown(
    statement: &SelectStatement,
    grouping: &Grouping,
    group_tags: &[&String],
    projections: &Projections,
    range: TimeRange,
) -> Option<usize> {
    let (Some(_), None, Some(limit), false) = (
        grouping.time,
        range.start,
        statement.limit,
        statement.order_desc,
    ) else {
        return None;
    };
    if !group_tags.is_empty() || projections.columns.iter().any(|c| c.transform.is_some()) {
        return None;
    }
    usize::try_from(limit.saturating_add(statement.offset.unwrap_or(0)))
        .ok()
        .filter(|n| *n > 0)
}

/// How the rows of [`aggregate_sql`]'s answer become buckets.
struct Answer<'a> {
    calls: &'a [Call<'a>],
    parts: &'a [Pushed<'a>],
    grouping: &'a Grouping,
    schema: &'a TableSchema,
    /// Grouped tags of the table: the first columns.
    group_tags: usize,
    range: TimeRange,
}

impl Answer<'_> {
    /// Each call with the column of its first SQL aggregate, from `first_agg` on.
    fn value_columns(&self, first_agg: usize) -> impl Iterator<Item = (&Call<'_>, usize)> {
        let mut at = first_agg;
        self.calls.iter().zip(self.parts).map(move |(call, parts)| {
            let column = at;
            at += parts.functions.len();
            (call, column)
        })
    }

    fn collect(&self, columns: &[Vec<Value>]) -> Buckets {
        let (calls, grouping, schema) = (self.calls, self.grouping, self.schema);
        let mut buckets = Buckets::new();
        let rows = columns.first().map_or(0, Vec::len);
        let first_agg = self.group_tags + usize::from(grouping.time.is_some());
        // Columns are read across (column, row): an index is the plain way here.
        // The series being filled, moved into `buckets` when another starts.
        let mut current: Option<(Vec<String>, SeriesBuckets)> = None;
        #[allow(clippy::needless_range_loop)]
        for row in 0..rows {
            if !current
                .as_ref()
                .is_some_and(|(k, _)| key_matches(columns, 0, grouping, schema, row, k))
            {
                if let Some((key, per_bucket)) = current.take() {
                    buckets.insert(key, per_bucket);
                }
                let key = series_key_from(columns, 0, grouping, schema, row);
                let per_bucket = buckets
                    .remove(&key)
                    .unwrap_or_else(|| SeriesBuckets::new(calls.len()));
                current = Some((key, per_bucket));
            }
            let bucket = match grouping.time {
                Some(_) => match columns[self.group_tags][row] {
                    Value::Time(t) => t,
                    _ => continue,
                },
                None => self.range.start.unwrap_or(0),
            };
            // A group whose selected fields have no value in this bucket (its rows hold
            // other fields) is an empty bucket, as in InfluxDB. (A spread's max and min
            // are null together.)
            let has_data = self.value_columns(first_agg).any(|(call, at)| {
                let value = &columns[at][row];
                let empty_count = call.function == "count" && *value == Value::Integer(0);
                !value.is_null() && !empty_count
            });
            if has_data && let Some((_, per_bucket)) = current.as_mut() {
                per_bucket.insert(
                    bucket,
                    self.value_columns(first_agg)
                        .map(|(call, at)| (call_value(call, columns, at, row), None)),
                );
            }
        }
        if let Some((key, per_bucket)) = current {
            buckets.insert(key, per_bucket);
        }
        buckets
    }
}

/// The name of [`aggregate_sql`]'s time bucket column.
const BUCKET: &str = "__bucket";

/// `SELECT <tags>, date_bin(…) AS "__bucket", <aggregates> FROM m WHERE … GROUP BY <tags>,
/// "__bucket"`: the shape the direct path answers from pre-aggregates.
pub(super) fn aggregate_sql(
    schema: &TableSchema,
    group_tags: &[&String],
    time: Option<(i64, i64)>,
    pushed: &[Pushed<'_>],
    filter: &Where,
) -> Box<Query> {
    aggregate_select(schema, group_tags, time, pushed, filter).query()
}

fn aggregate_select(
    schema: &TableSchema,
    group_tags: &[&String],
    time: Option<(i64, i64)>,
    pushed: &[Pushed<'_>],
    filter: &Where,
) -> SelectTree {
    let mut aggregates = Vec::new();
    for (i, call) in pushed.iter().enumerate() {
        for (j, function) in call.functions.iter().enumerate() {
            let aggregate = tree::call(function, vec![tree::column(call.field)]);
            aggregates.push(tree::aliased(aggregate, &format!("__a{i}_{j}")));
        }
    }
    grouped_select(schema, group_tags, time, aggregates, filter)
}

/// `SELECT <tags>, date_bin(…) AS "__bucket", <aggregates> FROM m WHERE … GROUP BY <tags>,
/// "__bucket"`, without the bucket when `time` is `None`.
fn grouped_select(
    schema: &TableSchema,
    group_tags: &[&String],
    time: Option<(i64, i64)>,
    aggregates: Vec<SelectItem>,
    filter: &Where,
) -> SelectTree {
    let mut projection: Vec<SelectItem> = group_tags
        .iter()
        .map(|tag| SelectItem::UnnamedExpr(tree::column(tag)))
        .collect();
    let mut group_by: Vec<Expr> = group_tags.iter().map(|tag| tree::column(tag)).collect();
    if let Some((width, offset)) = time {
        projection.push(tree::aliased(tree::date_bin(width, offset), BUCKET));
        group_by.push(tree::column(BUCKET));
    }
    projection.extend(aggregates);
    SelectTree {
        projection,
        table: schema.name.clone(),
        filter: filter.clone(),
        group_by,
        ..SelectTree::default()
    }
}

/// Which rows an aggregate must read.
enum Window {
    /// All the statement selects.
    All,
    /// Only `[start, end)`.
    Range(i64, i64),
    /// None: nothing matches.
    Empty,
}

/// Width of the coarse buckets that find where data starts: the storage engine cuts chunks
/// at whole hours, so an hourly count is answered from chunk headers without decoding.
const COARSE_BUCKET_NS: i64 = 3_600_000_000_000;

/// `GROUP BY time(…) LIMIT n` with no lower time bound (TSBS's `groupby-orderby-limit`)
/// shows the first n buckets from the first point on. Rather than aggregating everything
/// before the upper bound, an hourly `count(*)` (pre-aggregates only) finds the first hour
/// with data, and only that hour plus n buckets is aggregated.
async fn first_buckets_window(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    range: TimeRange,
    filter: &Where,
) -> Result<Window, String> {
    let (Some((width, _)), None, Some(limit), false) = (
        grouping.time,
        range.start,
        statement.limit,
        statement.order_desc,
    ) else {
        return Ok(Window::All);
    };
    if statement.fill == Fill::None {
        // Without fill the first n rows may lie anywhere: every bucket is needed.
        return Ok(Window::All);
    }
    let shown =
        i64::try_from(limit.saturating_add(statement.offset.unwrap_or(0))).unwrap_or(i64::MAX);
    // Per series: each one's buckets start at its own first point.
    let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
    let rows = tree::aliased(tree::count_star(), "__rows");
    let coarse = grouped_select(
        schema,
        &group_tags,
        Some((COARSE_BUCKET_NS, 0)),
        vec![rows],
        filter,
    );
    let columns = sql::run(ctx.query, database, coarse.query()).await?;
    let mut firsts: BTreeMap<Vec<String>, i64> = BTreeMap::new();
    let rows = columns.first().map_or(0, Vec::len);
    for row in 0..rows {
        let Value::Time(t) = columns[group_tags.len()][row] else {
            continue;
        };
        let first = firsts
            .entry(series_key_from(&columns, 0, grouping, schema, row))
            .or_insert(t);
        *first = (*first).min(t);
    }
    let (Some(earliest), Some(latest)) = (firsts.values().min(), firsts.values().max()) else {
        return Ok(Window::Empty);
    };
    // A series' first point lies in [first, first + 1h); its bucket starts at most one
    // bucket earlier, and the n buckets shown end before first + 1h + n buckets.
    let start = earliest.saturating_sub(width);
    let end = shown
        .checked_mul(width)
        .and_then(|span| latest.checked_add(COARSE_BUCKET_NS)?.checked_add(span))
        .unwrap_or(i64::MAX);
    let end = range.end.map_or(end, |e| e.min(end));
    Ok(Window::Range(start, end))
}

/// The value of `call` in row `row`, from its SQL aggregates at column `at` on.
fn call_value(call: &Call<'_>, columns: &[Vec<Value>], at: usize, row: usize) -> Value {
    if call.function != "spread" {
        return columns[at][row].clone();
    }
    let (hi, lo) = (&columns[at][row], &columns[at + 1][row]);
    match (hi, lo) {
        (Value::Integer(h), Value::Integer(l)) => Value::Integer(h.wrapping_sub(*l)),
        _ => match (hi.as_f64(), lo.as_f64()) {
            (Some(h), Some(l)) => Value::Float(h - l),
            _ => Value::Null,
        },
    }
}
