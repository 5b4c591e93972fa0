//! `SELECT`: one SQL statement per measurement through the query engine, shaped into
//! InfluxDB's series.
//!
//! `SelectStatement → sources (measurements, regexes) → per measurement: WHERE split into
//! time range + SQL condition (condition.rs), select list expanded (fields.rs) →
//! aggregates SQL can answer exactly (count, sum, mean, min, max, first, last, spread) as
//! one grouped SQL statement, answered by the direct path and pre-aggregates like any
//! `/sql` statement (pushed.rs); everything else from the points, fetched ordered by series
//! and time (aggregate.rs, transform.rs; selector.rs for a selector's point with other
//! fields, `top`, `bottom`, `distinct`; raw_sort.rs for `SELECT *`; latest.rs for the
//! latest row of each series) → buckets (buckets.rs) filled → rows → series`.

mod aggregate;
mod arrow_rows;
mod buckets;
mod condition;
mod eval;
mod fields;
mod grid;
mod grouped;
mod latest;
mod pushed;
mod raw_sort;
mod regex;
mod selector;
mod sql;
mod subquery;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_grid;
mod ties;
mod transform;
mod tree;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use strata_influxql::{Dimension, Expr, MeasurementName, SelectStatement, Source};
use strata_query::QueryEngine;
use strata_storage::Engine;
use strata_storage::catalog::TableSchema;

use super::result::{Row, Series, TagValues, Tags, Value};
pub(crate) use arrow_rows::{ArrowRows, Resolved};
use condition::TimeRange;
pub(crate) use condition::split_time;
use datafusion::sql::sqlparser::ast::BinaryOperator;
pub(super) use fields::{Projection, Projections};
pub(crate) use regex::Regex;
use sql::quote_ident;
use tree::Where;

/// Most buckets one series may have: `GROUP BY time(1s)` over years would otherwise build
/// billions of empty rows (InfluxDB's `max-select-buckets`, which it leaves unlimited).
pub(super) const MAX_BUCKETS: i64 = 1_000_000;

/// Most buckets one query's answer may hold over all its series (and statements and
/// subqueries), empty ones filled included. Each series may have [`MAX_BUCKETS`], and the
/// default `fill(null)` gives every series every bucket of the range: 2,000 series of a
/// million buckets took all the memory there was and aborted the server. Ten million is
/// some hundred times what a Grafana dashboard or a TSBS query asks for.
pub(crate) const MAX_ANSWER_BUCKETS: usize = 10_000_000;

/// The buckets a query's series have taken so far, against [`MAX_ANSWER_BUCKETS`]: taken
/// for each series before its rows are built.
#[derive(Debug)]
pub(crate) struct BucketBudget {
    used: AtomicUsize,
    limit: usize,
}

impl Default for BucketBudget {
    fn default() -> Self {
        Self::with_limit(MAX_ANSWER_BUCKETS)
    }
}

impl BucketBudget {
    /// A budget of `limit` buckets ([`MAX_ANSWER_BUCKETS`] by default).
    pub(super) fn with_limit(limit: usize) -> Self {
        Self {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    /// Takes `buckets` for one more series; an error once the answer would pass the limit.
    pub(super) fn take(&self, buckets: usize) -> Result<(), String> {
        let used = self
            .used
            .fetch_add(buckets, Ordering::Relaxed)
            .saturating_add(buckets);
        if used > self.limit {
            return Err(format!(
                "too many buckets: the answer's series would hold more than {} (GROUP BY time fills every series' empty buckets); use a wider GROUP BY time interval, a shorter time range, fewer series (a tag condition, SLIMIT) or fill(none)",
                self.limit
            ));
        }
        Ok(())
    }
}

/// What a statement runs against.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    pub query: &'a QueryEngine,
    pub engine: &'a Engine,
    /// The `db` parameter: the database of unqualified measurements.
    pub database: Option<&'a str>,
    /// `now()`, fixed for the whole query.
    pub now_ns: i64,
    /// Set while an outer statement reads an inner one's answer instead of stored rows.
    pub subquery: Option<&'a subquery::Subquery>,
    /// Set while a subquery's inner statement runs: its transformations of buckets read
    /// no bucket before its range, which [`subquery::inner_statement`] already widened as
    /// influxd does for inner statements.
    pub inner: bool,
    /// Whether raw rows may stay in Arrow batches ([`Series::arrow`]): only for the
    /// statement answered to the client, not for a subquery's answer read as cells.
    pub arrow_rows: bool,
    /// The buckets the query's answer holds so far.
    pub buckets: &'a BucketBudget,
}

/// Runs `statement`; its series, sorted by measurement and tags.
pub(crate) async fn select(
    ctx: &Context<'_>,
    statement: &SelectStatement,
) -> Result<Vec<Series>, String> {
    // Times are UTC; another zone would shift buckets and answers, so it is refused
    // rather than ignored.
    if let Some(zone) = statement.timezone.as_deref()
        && !matches!(zone, "UTC" | "Etc/UTC")
    {
        return Err(format!(
            "tz('{zone}') is not supported yet: Strata answers in UTC (tz('UTC') is accepted)"
        ));
    }
    let (stored, inner): (Vec<Source>, Vec<Source>) = statement
        .sources
        .iter()
        .cloned()
        .partition(|s| matches!(s, Source::Measurement(_)));
    let sources = resolve_sources(ctx, &stored)?;
    let (range, condition) = split_time(statement.condition.as_ref(), ctx.now_ns)?;
    // `SELECT *` over several measurements gives every series the columns of all of them.
    // (Built only then: it copies every name.)
    let columns_of =
        (sources.len() > 1).then(|| union_schema(sources.iter().map(|(_, s)| s.as_ref())));
    let mut all = Vec::new();
    for (database, schema) in &sources {
        let expand = columns_of.as_ref().unwrap_or(schema.as_ref());
        let mut one = select_measurement(
            ctx,
            statement,
            database,
            schema,
            expand,
            range,
            condition.as_ref(),
        )
        .await?;
        all.append(&mut one);
    }
    for source in &inner {
        let Source::Subquery(inner) = source else {
            continue;
        };
        let inner = subquery::inner_statement(inner, statement, range, ctx.now_ns)?;
        let base = Context {
            subquery: None,
            inner: true,
            arrow_rows: false,
            ..*ctx
        };
        let answer = Box::pin(select(&base, &inner)).await?;
        let mut names: Vec<&str> = answer.iter().map(|s| &*s.name).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let series: Vec<Series> = answer
                .iter()
                .filter(|s| &*s.name == name)
                .cloned()
                .collect();
            let schema = subquery::schema_of(name, &series);
            let sub = subquery::Subquery {
                series,
                condition: condition.clone(),
                range,
            };
            let sub_ctx = Context {
                subquery: Some(&sub),
                ..*ctx
            };
            let mut one = select_measurement(
                &sub_ctx,
                statement,
                "",
                &schema,
                &schema,
                range,
                condition.as_ref(),
            )
            .await?;
            all.append(&mut one);
        }
    }
    // Series in key order; ORDER BY time DESC reverses the series too, as InfluxDB does.
    all.sort_by(|a, b| (&a.name, &a.tags).cmp(&(&b.name, &b.tags)));
    if statement.order_desc {
        all.reverse();
    }
    if statement.slimit.is_none() && statement.soffset.is_none() {
        return Ok(all);
    }
    Ok(limit_series(all, statement))
}

/// `SLIMIT`/`SOFFSET`: influxd 1.x counts series in series key order (`cpu,dc=a,host=b`,
/// where a tag the series lacks is not written, so `cpu,dc=a,…` comes before `cpu,host=…`),
/// not in the answer's order (where a missing tag is `""` and comes first). The series
/// kept stay in the answer's order.
fn limit_series(all: Vec<Series>, statement: &SelectStatement) -> Vec<Series> {
    let key = |s: &Series| {
        let mut key = s.name.to_string();
        for (k, v) in s.tags.iter().filter(|(_, v)| !v.is_empty()) {
            key.push(',');
            key.push_str(k);
            key.push('=');
            key.push_str(v);
        }
        key
    };
    let mut order: Vec<(String, usize)> = all.iter().map(key).zip(0..).collect();
    order.sort();
    if statement.order_desc {
        order.reverse();
    }
    let soffset = statement.soffset.unwrap_or(0) as usize;
    let slimit = statement.slimit.map_or(usize::MAX, |n| n as usize);
    let mut kept = vec![false; all.len()];
    for (_, index) in order.into_iter().skip(soffset).take(slimit) {
        kept[index] = true;
    }
    all.into_iter()
        .zip(kept)
        .filter_map(|(series, kept)| kept.then_some(series))
        .collect()
}

fn resolve_sources(
    ctx: &Context<'_>,
    sources: &[Source],
) -> Result<Vec<(String, Arc<TableSchema>)>, String> {
    let mut out = Vec::new();
    for source in sources {
        let Source::Measurement(m) = source else {
            continue;
        };
        if let Some(rp) = m.retention_policy.as_deref()
            && !rp.is_empty()
            && rp != super::meta::DEFAULT_POLICY
        {
            return Err(format!("retention policy not found: {rp}"));
        }
        let database = m
            .database
            .as_deref()
            .or(ctx.database)
            .filter(|d| !d.is_empty())
            .ok_or("database name required")?;
        if !super::meta::database_exists(ctx.engine, database) {
            return Err(format!("database not found: {database}"));
        }
        match &m.name {
            MeasurementName::Name(name) => {
                if let Some(schema) = ctx.engine.table(database, name) {
                    out.push((database.to_owned(), schema));
                }
            }
            MeasurementName::Regex(re) => {
                let re = Regex::new(re)?;
                for schema in ctx.engine.catalog().tables(database) {
                    if re.is_match(&schema.name) {
                        out.push((database.to_owned(), schema));
                    }
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.name.cmp(&b.1.name));
    out.dedup_by(|a, b| a.1.id == b.1.id);
    Ok(out)
}

/// How one measurement's points fall into series: `GROUP BY`'s tags (sorted) and time
/// bucket (width, offset), and the name the series carry.
pub(super) struct Grouping {
    /// The measurement's name, shared by its series.
    pub name: Arc<str>,
    /// The grouped tags, shared by the series as their tag keys.
    pub tags: Arc<[String]>,
    pub time: Option<(i64, i64)>,
}

impl Grouping {
    /// The grouped tags `schema` has, in order: the ones SQL groups and sorts by (a
    /// grouped name the measurement lacks keys every series `""`).
    pub(super) fn tags_in<'g>(
        &'g self,
        schema: &'g TableSchema,
    ) -> impl Iterator<Item = &'g String> + 'g {
        self.tags.iter().filter(|t| schema.tags.contains(t))
    }
}

fn grouping(dimensions: &[Dimension], schema: &TableSchema) -> Result<Grouping, String> {
    let mut tags: Vec<String> = Vec::new();
    let mut time = None;
    for dimension in dimensions {
        match dimension {
            Dimension::Time {
                interval_ns,
                offset_ns,
            } => {
                if *interval_ns <= 0 {
                    return Err("GROUP BY time interval must be positive".into());
                }
                if time.is_some() {
                    return Err("multiple time dimensions not allowed".into());
                }
                time = Some((*interval_ns, offset_ns.rem_euclid(*interval_ns)));
            }
            Dimension::Tag(tag) => tags.push(tag.clone()),
            Dimension::Wildcard => tags.extend(schema.tags.iter().cloned()),
            Dimension::Regex(re) => {
                let re = Regex::new(re)?;
                tags.extend(schema.tags.iter().filter(|t| re.is_match(t)).cloned());
            }
        }
    }
    tags.sort();
    tags.dedup();
    Ok(Grouping {
        name: schema.name.as_str().into(),
        tags: tags.into(),
        time,
    })
}

/// The fields and tags of all `schemas` (a field's type from the first that has it).
fn union_schema<'s>(schemas: impl Iterator<Item = &'s TableSchema>) -> TableSchema {
    let mut union = TableSchema {
        id: 0,
        database: String::new(),
        name: String::new(),
        tags: Vec::new(),
        fields: Vec::new(),
        time_unit: None,
    };
    for schema in schemas {
        for tag in &schema.tags {
            if !union.tags.contains(tag) {
                union.tags.push(tag.clone());
            }
        }
        for field in &schema.fields {
            if union.field(&field.name).is_none() {
                union.fields.push(field.clone());
            }
        }
    }
    union
}

/// One measurement's series; `expand` is the schema wildcards expand against (this
/// measurement's, or the union of all measurements in `FROM`).
async fn select_measurement(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    expand: &TableSchema,
    range: TimeRange,
    condition: Option<&Expr>,
) -> Result<Vec<Series>, String> {
    let grouping = grouping(&statement.dimensions, schema)?;
    let projections = fields::analyse(&statement.fields, expand, &grouping.tags)?;
    if grouping.time.is_none() {
        // A transformation of an aggregate needs buckets to run over.
        for column in &projections.columns {
            if let Some((function, _)) = &column.transform
                && fields::contains_aggregate(&column.expr)
            {
                return Err(format!("{function} aggregate requires a GROUP BY interval"));
            }
        }
    }
    let mut range = range;
    if grouping.time.is_some() && range.end.is_none() {
        // InfluxDB's default upper bound for GROUP BY time: now (inclusive).
        range.end = Some(ctx.now_ns.saturating_add(1));
    }
    // A transformation of buckets (`derivative(mean(x))`) reads buckets before the range,
    // so that the range's first bucket has its value, as InfluxDB does: the range starts
    // that many intervals earlier, and the buckets before its own first are not answered.
    // Under ORDER BY time DESC the transformation runs from the latest bucket back, so
    // the range grows at its end instead, and the buckets after its own last are dropped.
    let mut shown_buckets: Option<(i64, i64)> = None;
    let extra = if ctx.inner {
        0
    } else {
        extra_intervals(&projections)
    };
    if let (Some((width, offset)), true) = (grouping.time, extra > 0) {
        let bucket_of = |t: i64| t - (t - offset).rem_euclid(width);
        let grow = extra.saturating_mul(width);
        if !statement.order_desc
            && let Some(start) = range.start
        {
            shown_buckets = Some((bucket_of(start), i64::MAX));
            range.start = Some(start.saturating_sub(grow));
        } else if statement.order_desc
            && let Some(end) = range.end
        {
            shown_buckets = Some((i64::MIN, bucket_of(end.saturating_sub(1))));
            range.end = Some(end.saturating_add(grow));
        }
    }
    let mut terms = Vec::new();
    terms.extend(range.start.map(tree::time_from));
    terms.extend(range.end.map(tree::time_before));
    // An inner answer is filtered in memory (subquery.rs), not by SQL.
    if let Some(condition) = condition.filter(|_| ctx.subquery.is_none()) {
        terms.push(condition::to_sql(condition, schema, ctx.engine)?);
    }
    let filter = Where::new(tree::chain(terms, BinaryOperator::And));
    let plan = if projections.aggregate {
        selector::plan(&projections, projections.bare)?
    } else {
        None
    };
    let mut series = if let Some(plan) = plan {
        selector::run(
            ctx,
            statement,
            database,
            schema,
            &grouping,
            &projections,
            plan,
            range,
            &filter,
        )
        .await?
    } else if projections.aggregate {
        grouped::grouped(
            ctx,
            statement,
            database,
            schema,
            &grouping,
            &projections,
            range,
            &filter,
        )
        .await?
    } else {
        if grouping.time.is_some() {
            return Err("GROUP BY requires at least one aggregate function".into());
        }
        raw(
            ctx,
            statement,
            database,
            schema,
            &grouping,
            &projections,
            &filter,
        )
        .await?
    };
    if let Some((first, last)) = shown_buckets {
        for s in &mut series {
            s.values.retain(
                |row| !matches!(row.first(), Some(Value::Time(t)) if *t < first || *t > last),
            );
        }
    }
    for s in &mut series {
        let offset = statement.offset.unwrap_or(0) as usize;
        if offset > 0 {
            s.skip_rows(offset);
        }
        if let Some(limit) = statement.limit {
            s.truncate_rows(limit as usize);
        }
    }
    series.retain(|s| s.row_count() > 0);
    Ok(series)
}

/// How many buckets beyond those a `LIMIT` shows the bucket grid must hold: all of them
/// under a transformation, since the limit counts its output, which starts buckets later
/// (`derivative`, `moving_average(x, n)`) and may leave some out (`non_negative_*`).
pub(super) fn grid_beyond_limit(projections: &Projections) -> i64 {
    if projections.columns.iter().any(|c| c.transform.is_some()) {
        i64::MAX
    } else {
        0
    }
}

/// How many buckets before the range the transformations of aggregates read, so that the
/// range's first bucket has a value: one for a derivative, a difference, elapsed time and
/// `moving_average` too (what influxd 1.6 answers: `moving_average(min(x), 3)` starts at
/// the range's second bucket, from one bucket before the range).
fn extra_intervals(projections: &Projections) -> i64 {
    if !projections.aggregate {
        return 0;
    }
    projections
        .columns
        .iter()
        .filter_map(|c| c.transform.as_ref())
        .map(|(function, _)| i64::from(fields::READ_PREVIOUS.contains(&function.as_str())))
        .max()
        .unwrap_or(0)
}

/// Variables the projections read, in order of first use.
pub(super) fn variables(projections: &Projections) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in &projections.columns {
        fields::for_each_var(&p.expr, &mut |name| {
            if !out.iter().any(|v| v == name) {
                out.push(name.to_owned());
            }
        });
    }
    out
}

fn is_column(schema: &TableSchema, name: &str) -> bool {
    schema.field(name).is_some() || schema.tags.iter().any(|t| t == name)
}

/// The tags a grouping leaves out, by name: after time, they order points of one instant.
pub(super) fn other_tags<'s>(schema: &'s TableSchema, grouping: &Grouping) -> Vec<&'s String> {
    let mut others: Vec<&String> = schema
        .tags
        .iter()
        .filter(|t| !grouping.tags.contains(t))
        .collect();
    others.sort();
    others
}

/// `ORDER BY` for points: by series (missing tags first, as InfluxDB's `''`), then time,
/// then the other tags, so points of one instant come in series order.
/// `others_in_sql`: whether the other tags break ties in the sort; when not, the caller
/// orders points of one instant itself ([`ties::order_ties`]) or needs no order among them.
fn point_order(schema: &TableSchema, grouping: &Grouping, others_in_sql: bool) -> String {
    let mut keys: Vec<String> = grouping
        .tags_in(schema)
        .map(|t| format!("{} ASC NULLS FIRST", quote_ident(t)))
        .collect();
    keys.push("\"time\" ASC".to_owned());
    if !others_in_sql {
        return keys.join(", ");
    }
    let others = other_tags(schema, grouping);
    keys.extend(
        others
            .iter()
            .map(|t| format!("{} ASC NULLS FIRST", quote_ident(t))),
    );
    keys.join(", ")
}

/// Fetches `time`, the grouped tags and `vars` of every point, ordered by series and time;
/// points of one instant in series order when `order_ties` (else in any order: for answers
/// that order cannot change, since sorting by every other tag is most of the cost of a
/// short read).
pub(super) async fn points(
    ctx: &Context<'_>,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    vars: &[String],
    filter: &Where,
    order_ties: bool,
) -> Result<(Vec<Vec<Value>>, usize), String> {
    if let Some(sub) = ctx.subquery {
        return subquery::points(sub, schema, grouping, vars, false);
    }
    if order_ties {
        // Sorted here rather than by SQL: planning an `ORDER BY` of every tag cost
        // DataFusion more than fetching the tags and sorting (`SELECT last(x)` over an hour
        // of one TSBS host: 1.13 ms with the `ORDER BY`, 0.70 for the fetch alone).
        let (batches, tag_count) =
            raw_sort::points(ctx, database, schema, grouping, vars, filter, true).await?;
        let mut columns = sql::cells(&batches)?;
        if columns.is_empty() {
            // No points: the layout's columns, empty, as the SQL path answers.
            columns = vec![Vec::new(); 1 + tag_count + vars.len()];
        }
        return Ok((columns, tag_count));
    }
    let (statement, tag_count) = points_statement(schema, grouping, vars, filter, false);
    let columns = sql::run(ctx.query, database, &statement).await?;
    Ok((columns, tag_count))
}

/// The SQL [`points`] runs, and how many grouped tags follow `time` in its answer.
fn points_statement(
    schema: &TableSchema,
    grouping: &Grouping,
    vars: &[String],
    filter: &Where,
    others_in_sql: bool,
) -> (String, usize) {
    let mut select = vec!["\"time\"".to_owned()];
    let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
    select.extend(group_tags.iter().map(|t| quote_ident(t)));
    for (i, v) in vars.iter().enumerate() {
        select.push(if group_tags.contains(&v) {
            // A grouped tag asked for again (`SELECT max(x), host … GROUP BY host`).
            format!("{} AS \"__var{i}\"", quote_ident(v))
        } else if is_column(schema, v) {
            quote_ident(v)
        } else {
            // Each missing column needs its own name: DataFusion refuses two `NULL`s.
            format!("NULL AS \"__missing{i}\"")
        });
    }
    let statement = format!(
        "SELECT {} FROM {}{filter} ORDER BY {}",
        select.join(", "),
        quote_ident(&schema.name),
        point_order(schema, grouping, others_in_sql)
    );
    (statement, group_tags.len())
}

/// The series key of row `row`: the grouped tags' values, `""` where missing.
pub(super) fn series_key(
    columns: &[Vec<Value>],
    grouping: &Grouping,
    schema: &TableSchema,
    row: usize,
) -> Vec<String> {
    series_key_from(columns, 1, grouping, schema, row)
}

/// Row `row`'s value of each grouped tag, in `grouping`'s order: the tags of the table
/// are read from the columns starting at `first`, one column each; a grouped name that is
/// not a tag of the table, or a row without the tag, reads as "".
fn row_tags<'a>(
    columns: &'a [Vec<Value>],
    first: usize,
    grouping: &'a Grouping,
    schema: &'a TableSchema,
    row: usize,
) -> impl Iterator<Item = &'a str> {
    let mut at = first;
    grouping.tags.iter().map(move |t| {
        if !schema.tags.contains(t) {
            return "";
        }
        let value = match &columns[at][row] {
            Value::String(s) => &**s,
            _ => "",
        };
        at += 1;
        value
    })
}

/// [`series_key`] with the grouped tags' columns starting at `first`.
pub(super) fn series_key_from(
    columns: &[Vec<Value>],
    first: usize,
    grouping: &Grouping,
    schema: &TableSchema,
    row: usize,
) -> Vec<String> {
    row_tags(columns, first, grouping, schema, row)
        .map(str::to_string)
        .collect()
}

/// Whether row `row`'s grouped tags (read as [`series_key_from`] reads them) are `key`:
/// rows of one series come together, so comparing with the last key spares building a key
/// per row.
pub(super) fn key_matches(
    columns: &[Vec<Value>],
    first: usize,
    grouping: &Grouping,
    schema: &TableSchema,
    row: usize,
    key: &[String],
) -> bool {
    if grouping.tags.is_empty() {
        // One series (no GROUP BY tag): every row's key is the empty one.
        return key.is_empty();
    }
    row_tags(columns, first, grouping, schema, row).eq(key.iter().map(String::as_str))
}

/// An empty series of `grouping`'s measurement whose grouped tags have the values `key`
/// (taken, not copied: a series per host is a string per host).
pub(super) fn new_series(
    grouping: &Grouping,
    key: impl Into<TagValues>,
    projections: &Projections,
) -> Series {
    Series {
        name: Arc::clone(&grouping.name),
        tags: Tags::new(Arc::clone(&grouping.tags), key),
        columns: Arc::clone(&projections.names),
        values: Vec::new(),
        arrow: None,
    }
}

/// A query without aggregates: one row per point with at least one selected value.
async fn raw(
    ctx: &Context<'_>,
    statement: &SelectStatement,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    filter: &Where,
) -> Result<Vec<Series>, String> {
    let vars = variables(projections);
    let latest_shape =
        ctx.subquery.is_none() && latest::is_latest_per_series(statement, schema, projections);
    let arrow = arrow_columns(ctx, projections, &vars);
    if let (Some(columns), true) = (&arrow, latest_shape)
        && let Some(series) = latest::arrow(
            ctx,
            database,
            schema,
            grouping,
            projections,
            &vars,
            columns,
            filter,
            statement.order_desc,
        )
        .await?
    {
        return Ok(series);
    }
    if let (Some(columns), false) = (arrow, latest_shape) {
        // When every other tag is fetched anyway (`SELECT *`), points of one instant are
        // put in series order here rather than by the sort: sorting by ten dictionary
        // columns after time cost TSBS's high-cpu-1 a third of its time. (high-cpu-all,
        // where every host ties at every instant, spends the same ordering the ties.)
        // Otherwise the other tags are fetched for the sort, which orders the ties.
        let ties: Option<Vec<usize>> = other_tags(schema, grouping)
            .into_iter()
            .map(|t| vars.iter().position(|v| v == t))
            .collect();
        let (batches, tag_count) = raw_sort::points(
            ctx,
            database,
            schema,
            grouping,
            &vars,
            filter,
            ties.is_none(),
        )
        .await?;
        let batches: Arc<[RecordBatch]> = batches.into();
        // The answer's column of variable `i`: after `time` and the grouped tags.
        let column_of = |i: usize| 1 + tag_count + i;
        let ties: Vec<usize> = ties
            .unwrap_or_default()
            .into_iter()
            .map(column_of)
            .collect();
        // `time`, then each projection's variable.
        let columns: Arc<[usize]> = std::iter::once(0)
            .chain(columns.into_iter().map(column_of))
            .collect();
        if ArrowRows::writable(&batches, &columns) {
            // The columns whose values make a point (fields; the casts allowed here keep
            // every value).
            let fields: Vec<usize> = field_reads(projections, schema, &vars)
                .into_iter()
                .map(|(i, _)| column_of(i))
                .collect();
            let answer = RawAnswer {
                batches,
                time: 0,
                tags: grouped_tag_columns(schema, grouping, 1),
                columns,
                fields,
                ties,
            };
            return Ok(arrow_series(
                grouping,
                projections,
                statement.order_desc,
                answer,
            ));
        }
    }
    let (mut columns, tag_count) = if latest_shape {
        latest::cells(ctx, database, schema, grouping, &vars, filter).await?
    } else {
        points(ctx, database, schema, grouping, &vars, filter, true).await?
    };
    let rows = columns.first().map_or(0, Vec::len);
    let mut series: Vec<Series> = Vec::new();
    let mut key: Option<Vec<String>> = None;
    let mut times: Vec<i64> = Vec::new();
    let mut per_series: Vec<(Vec<i64>, Vec<Vec<Value>>)> = Vec::new();
    // Columns that are one variable (the common case) are read directly, not evaluated.
    let plain: Vec<Option<(usize, Option<strata_influxql::VarType>)>> = projections
        .columns
        .iter()
        .map(|p| match &p.expr {
            Expr::VarRef { name, cast } => vars.iter().position(|v| v == name).map(|i| (i, *cast)),
            _ => None,
        })
        .collect();
    // A variable read by exactly one column, and by nothing else, moves out of the scanned
    // column instead of being copied (tags are strings: a copy is an allocation).
    let mut uses = vec![0usize; vars.len()];
    for p in &projections.columns {
        fields::for_each_var(&p.expr, &mut |name| {
            if let Some(i) = vars.iter().position(|v| v == name) {
                uses[i] += 1;
            }
        });
    }
    let movable: Vec<bool> = uses.iter().map(|n| *n == 1).collect();
    let present = field_reads(projections, schema, &vars);
    for row in 0..rows {
        if !key
            .as_ref()
            .is_some_and(|k: &Vec<String>| key_matches(&columns, 1, grouping, schema, row, k))
        {
            let k = series_key(&columns, grouping, schema, row);
            series.push(new_series(grouping, k.clone(), projections));
            per_series.push((Vec::new(), Vec::new()));
            key = Some(k);
        }
        let Value::Time(t) = columns[0][row] else {
            continue;
        };
        // A point is a time at which a field read has a value (of the type it is cast
        // to); tags alone make no row, as in InfluxDB.
        let has_field = present
            .iter()
            .any(|(i, cast)| survives_cast(&columns[1 + tag_count + i][row], *cast));
        if !has_field {
            continue;
        }
        let lookup = |e: &Expr| match e {
            Expr::VarRef { name, cast } => {
                let i = vars.iter().position(|v| v == name)?;
                Some(cast_value(columns[1 + tag_count + i][row].clone(), *cast))
            }
            _ => None,
        };
        let mut values: Vec<Value> = projections
            .columns
            .iter()
            .zip(&plain)
            .map(|(p, plain)| match plain {
                Some((i, _)) if movable[*i] => Value::Null,
                Some((i, cast)) => cast_value(columns[1 + tag_count + i][row].clone(), *cast),
                None => eval::eval(&p.expr, &lookup),
            })
            .collect();
        for (value, plain) in values.iter_mut().zip(&plain) {
            if let Some((i, cast)) = plain
                && movable[*i]
            {
                let cell = std::mem::replace(&mut columns[1 + tag_count + i][row], Value::Null);
                *value = cast_value(cell, *cast);
            }
        }
        let (ts, vs) = per_series.last_mut().ok_or("no series")?;
        ts.push(t);
        vs.push(values);
        times.push(t);
    }
    for (s, (ts, vs)) in series.iter_mut().zip(per_series) {
        s.values = finish_rows(
            &projections.columns,
            &ts,
            vs,
            None,
            false,
            statement.order_desc,
        )?;
    }
    Ok(series)
}

/// The fields a raw `SELECT` reads, as (index in `vars`, cast), each pair once: the
/// variables that decide whether a time is a point ([`raw`]).
fn field_reads(
    projections: &Projections,
    schema: &TableSchema,
    vars: &[String],
) -> Vec<(usize, Option<strata_influxql::VarType>)> {
    let mut reads = Vec::new();
    for p in &projections.columns {
        fields::for_each_var_ref(&p.expr, &mut |name, cast| {
            if schema.field(name).is_some()
                && let Some(i) = vars.iter().position(|v| v == name)
                && !reads.contains(&(i, cast))
            {
                reads.push((i, cast));
            }
        });
    }
    reads
}

/// Whether `value` is not null once cast with `cast` ([`cast_value`]): the cast is to its
/// own type, between float and integer, or none.
fn survives_cast(value: &Value, cast: Option<strata_influxql::VarType>) -> bool {
    use strata_influxql::VarType as T;
    match (cast, value) {
        (_, Value::Null) => false,
        (None | Some(T::Field | T::Tag), _) => true,
        (Some(T::Float | T::Integer), Value::Float(_) | Value::Integer(_)) => true,
        (Some(T::Unsigned), Value::Unsigned(_))
        | (Some(T::String), Value::String(_))
        | (Some(T::Boolean), Value::Boolean(_)) => true,
        _ => false,
    }
}

/// For a raw `SELECT` whose every column is one variable, uncast, answered to the client
/// from stored points: which variable each column reads. Its rows can stay in the Arrow
/// batches ([`ArrowRows`]).
fn arrow_columns(
    ctx: &Context<'_>,
    projections: &Projections,
    vars: &[String],
) -> Option<Vec<usize>> {
    use strata_influxql::VarType;
    if !ctx.arrow_rows || ctx.subquery.is_some() {
        return None;
    }
    projections
        .columns
        .iter()
        .map(|p| match (&p.expr, &p.transform) {
            (
                Expr::VarRef {
                    name,
                    cast: None | Some(VarType::Field | VarType::Tag),
                },
                None,
            ) => vars.iter().position(|v| v == name),
            _ => None,
        })
        .collect()
}

/// A raw `SELECT`'s answer as the engine gave it, and where to read it.
struct RawAnswer {
    batches: Arc<[RecordBatch]>,
    /// The column of `time`.
    time: usize,
    /// Per grouped tag, its column; `None` for a tag the measurement lacks (keyed `""`).
    tags: Vec<Option<usize>>,
    /// The series' columns, `time` first.
    columns: Arc<[usize]>,
    /// The columns whose values make a point (the fields read).
    fields: Vec<usize>,
    /// The other tags, by name, that order points of one instant ([`ties::order_ties`]); empty
    /// when the sort ordered them.
    ties: Vec<usize>,
}

/// The column of each grouped tag in an answer that holds, from column `first` on, the
/// grouped tags the measurement has in `grouping`'s order (as [`points_statement`] puts
/// them after `time`, and [`pushed::aggregate_sql`] first); `None` for a tag the
/// measurement lacks.
pub(super) fn grouped_tag_columns(
    schema: &TableSchema,
    grouping: &Grouping,
    first: usize,
) -> Vec<Option<usize>> {
    let mut next = first;
    grouping
        .tags
        .iter()
        .map(|t| {
            schema.tags.contains(t).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

/// The series of a raw answer kept in its batches: rows split into series where the
/// grouped tags (the answer's `tags` columns) change, rows where every column of `fields`
/// is null left out, as [`raw`] does with cells.
fn arrow_series(
    grouping: &Grouping,
    projections: &Projections,
    desc: bool,
    answer: RawAnswer,
) -> Vec<Series> {
    let RawAnswer {
        batches,
        time,
        tags,
        columns,
        fields,
        ties,
    } = answer;
    let mut series: Vec<Series> = Vec::new();
    // All series' rows, each series' together: where each series' rows start.
    let mut rows: Vec<(u32, u32)> = Vec::new();
    let mut starts: Vec<usize> = Vec::new();
    for (b, batch) in batches.iter().enumerate() {
        let tags = batch_tags(batch, &tags);
        let field_columns: Vec<&ArrayRef> = fields.iter().map(|&c| batch.column(c)).collect();
        let time = batch.column(time);
        // A field column without nulls makes every row of the batch a point: no row is
        // checked (lastpoint's 100 rows x 10 fields).
        let rows_may_be_empty = !field_columns
            .iter()
            .any(|v| v.data_type() != &DataType::Null && v.null_count() == 0);
        let times_may_be_null = time.null_count() > 0;
        for row in 0..batch.num_rows() {
            // The last series' tags are `grouping`'s, in its order, as `tags` reads them.
            let same_series = series
                .last()
                .is_some_and(|s| row_key_is(s.tags.values(), &tags, row));
            if !same_series {
                let key: TagValues = row_key(&tags, row);
                series.push(new_series(grouping, key, projections));
                starts.push(rows.len());
            }
            let empty = rows_may_be_empty
                && field_columns
                    .iter()
                    .all(|v| v.data_type() == &DataType::Null || v.is_null(row));
            if (times_may_be_null && time.is_null(row)) || empty {
                continue;
            }
            rows.push((b as u32, row as u32));
        }
    }
    let ranges: Vec<Range<usize>> = starts
        .iter()
        .zip(starts.iter().skip(1).chain([&rows.len()]))
        .map(|(&start, &end)| start..end)
        .collect();
    for range in &ranges {
        let mine = &mut rows[range.clone()];
        ties::order_ties(&batches, &ties, mine);
        if desc {
            mine.reverse();
        }
    }
    let rows: Arc<[(u32, u32)]> = rows.into();
    for (s, range) in series.iter_mut().zip(ranges) {
        let columns = Arc::clone(&columns);
        s.arrow = Some(ArrowRows::new(Arc::clone(&batches), columns, &rows, range));
    }
    series
}

/// `batch`'s column of each grouped tag, from [`grouped_tag_columns`].
pub(super) fn batch_tags<'b>(
    batch: &'b RecordBatch,
    columns: &[Option<usize>],
) -> Vec<Option<&'b ArrayRef>> {
    columns.iter().map(|c| c.map(|c| batch.column(c))).collect()
}

/// Row `row`'s grouped tags, read from `tags` ([`batch_tags`]) as [`tag_text`] reads them.
pub(super) fn row_key<K: FromIterator<String>>(tags: &[Option<&ArrayRef>], row: usize) -> K {
    tags.iter().map(|t| tag_text(*t, row).to_owned()).collect()
}

/// Whether row `row`'s grouped tags ([`row_key`]) are `key`: rows of one series come
/// together, so comparing with the last key spares building a key per row.
pub(super) fn row_key_is<'k>(
    key: impl IntoIterator<Item = &'k String>,
    tags: &[Option<&ArrayRef>],
    row: usize,
) -> bool {
    key.into_iter()
        .zip(tags)
        .all(|(k, tag)| k == tag_text(*tag, row))
}

/// A grouped tag's value at `row` of its column; `""` where the series has none, as
/// InfluxDB keys it.
pub(super) fn tag_text(column: Option<&ArrayRef>, row: usize) -> &str {
    let Some(column) = column.filter(|c| !c.is_null(row)) else {
        return "";
    };
    if let Some(tags) = column.as_any().downcast_ref::<DictionaryArray<Int32Type>>()
        && let Some(values) = tags.values().as_any().downcast_ref::<StringArray>()
    {
        return values.value(tags.keys().value(row) as usize);
    }
    column
        .as_any()
        .downcast_ref::<StringArray>()
        .map_or("", |s| s.value(row))
}

/// `::type` casts on a point's value: a value of another type reads as null.
pub(super) fn cast_value(value: Value, cast: Option<strata_influxql::VarType>) -> Value {
    use strata_influxql::VarType as T;
    if !survives_cast(&value, cast) {
        return Value::Null;
    }
    match (cast, value) {
        (Some(T::Float), Value::Integer(i)) => Value::Float(i as f64),
        (Some(T::Integer), Value::Float(f)) => Value::Integer(f as i64),
        (_, value) => value,
    }
}

/// A row: `time`, then `values` (inline up to [`Row`]'s size, else in one allocation).
fn with_time(time: i64, values: Vec<Value>) -> Row {
    let mut row = Row::with_capacity(values.len() + 1);
    row.push(Value::Time(time));
    row.extend(values);
    row
}

/// Rows from per-row projection values (in ascending time): transformations applied
/// column by column over the rows in the statement's order (`ORDER BY time DESC` runs them
/// over descending points, as InfluxDB does) and the rows joined on time; rows whose values
/// are all null are left out when `drop_empty`. The rows come out in the statement's order.
pub(super) fn finish_rows(
    columns: &[Projection],
    times: &[i64],
    values: Vec<Vec<Value>>,
    interval_ns: Option<i64>,
    drop_empty: bool,
    desc: bool,
) -> Result<Vec<Row>, String> {
    let mut rows: Vec<(i64, Vec<Value>)> = times.iter().copied().zip(values).collect();
    if desc {
        rows.reverse();
    }
    if columns.iter().all(|c| c.transform.is_none()) {
        return Ok(rows
            .into_iter()
            .filter(|(_, v)| !drop_empty || v.iter().any(|x| !x.is_null()))
            .map(|(t, v)| with_time(t, v))
            .collect());
    }
    let mut joined: BTreeMap<i64, Vec<Value>> = BTreeMap::new();
    for (i, column) in columns.iter().enumerate() {
        let series: Vec<(i64, Value)> = rows.iter().map(|(t, v)| (*t, v[i].clone())).collect();
        let out = match &column.transform {
            Some((function, args)) => transform::apply(function, args, &series, interval_ns)?,
            None => series.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        };
        for (t, v) in out {
            joined
                .entry(t)
                .or_insert_with(|| vec![Value::Null; columns.len()])[i] = v;
        }
    }
    let joined = joined.into_iter().map(|(t, v)| with_time(t, v));
    Ok(if desc {
        joined.rev().collect()
    } else {
        joined.collect()
    })
}
