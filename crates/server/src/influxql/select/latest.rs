//! `SELECT * … GROUP BY <tags> ORDER BY time DESC LIMIT 1`: the latest row of each series,
//! which the engine keeps at hand, read with the direct path's latest-row shape
//! `SELECT DISTINCT ON (<tags>) * … ORDER BY <tags>, time DESC` instead of every point.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::sql::sqlparser::ast::{Expr as Sql, Query};
use strata_influxql::{Expr, SelectStatement};
use strata_storage::catalog::TableSchema;

use super::super::result::{Series, Value};
use super::fields::Projections;
use super::sql;
use super::tree::{self, SelectTree, Where};
use super::{ArrowRows, Context, Grouping, RawAnswer, arrow_series, field_reads};

/// `SELECT * … GROUP BY <tags> ORDER BY time DESC LIMIT 1` (TSBS's and Grafana's "last
/// point"): the latest row of each series, which the engine keeps at hand, instead of every
/// point. Only when every field is selected, so a row cannot be skipped for being all null.
pub(super) fn is_latest_per_series(
    statement: &SelectStatement,
    schema: &TableSchema,
    projections: &Projections,
) -> bool {
    statement.order_desc
        && statement.limit == Some(1)
        && statement.offset.unwrap_or(0) == 0
        && projections.columns.iter().all(|c| c.transform.is_none())
        && schema.fields.iter().all(|f| {
            projections
                .columns
                .iter()
                .any(|c| matches!(&c.expr, Expr::VarRef { name, cast: None } if *name == f.name))
        })
}

/// The latest point of each group as cells, columns arranged as [`super::points`] gives
/// them.
pub(super) async fn cells(
    ctx: &Context<'_>,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    vars: &[String],
    filter: &Where,
) -> Result<(Vec<Vec<Value>>, usize), String> {
    let (statement, tag_count) = latest_statement(schema, grouping, filter);
    let (names, columns) = sql::run_named(ctx.query, database, statement).await?;
    let rows = columns.first().map_or(0, Vec::len);
    let take = |name: &str| -> Vec<Value> {
        names
            .iter()
            .position(|n| n == name)
            .map_or_else(|| vec![Value::Null; rows], |i| columns[i].clone())
    };
    let mut out = vec![take("time")];
    for tag in grouping.tags_in(schema) {
        out.push(take(tag));
    }
    for var in vars {
        out.push(take(var));
    }
    Ok((out, tag_count))
}

/// The latest point of each group kept in the engine's Arrow batches (see
/// [`ArrowRows`]), as a top-level raw `SELECT` answers: `columns` gives the variable each
/// projection reads. `None` when the answer cannot be written from there (a variable the
/// table lacks, a type [`ArrowRows`] does not write): the caller reads [`cells`] instead.
#[allow(clippy::too_many_arguments)]
pub(super) async fn arrow(
    ctx: &Context<'_>,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    projections: &Projections,
    vars: &[String],
    columns: &[usize],
    filter: &Where,
    desc: bool,
) -> Result<Option<Vec<Series>>, String> {
    let (statement, _) = latest_statement(schema, grouping, filter);
    let batches: Arc<[RecordBatch]> = sql::run_batches(ctx.query, database, statement)
        .await?
        .into();
    let Some(first) = batches.first() else {
        return Ok(Some(Vec::new()));
    };
    let answer_schema = first.schema();
    let find = |name: &str| answer_schema.index_of(name).ok();
    let (Some(time), Some(var_columns)) = (
        find("time"),
        vars.iter().map(|v| find(v)).collect::<Option<Vec<usize>>>(),
    ) else {
        return Ok(None);
    };
    let tags: Option<Vec<Option<usize>>> = grouping
        .tags
        .iter()
        .map(|t| match schema.tags.contains(t) {
            true => find(t).map(Some),
            false => Some(None),
        })
        .collect();
    let Some(tags) = tags else {
        return Ok(None);
    };
    let columns: Arc<[usize]> = std::iter::once(time)
        .chain(columns.iter().map(|&i| var_columns[i]))
        .collect();
    if !ArrowRows::writable(&batches, &columns) {
        return Ok(None);
    }
    let fields = field_reads(projections, schema, vars)
        .into_iter()
        .map(|(i, _)| var_columns[i])
        .collect();
    let answer = RawAnswer {
        batches,
        time,
        tags,
        columns,
        fields,
        ties: Vec::new(),
    };
    Ok(Some(arrow_series(grouping, projections, desc, answer)))
}

/// The latest-row statement, and how many grouped tags it orders by.
fn latest_statement(
    schema: &TableSchema,
    grouping: &Grouping,
    filter: &Where,
) -> (Box<Query>, usize) {
    let group_tags: Vec<Sql> = grouping.tags_in(schema).map(|t| tree::column(t)).collect();
    let tag_count = group_tags.len();
    let latest_first = (tree::column("time"), true);
    let mut select = SelectTree {
        projection: vec![tree::wildcard()],
        table: schema.name.clone(),
        filter: filter.clone(),
        ..SelectTree::default()
    };
    if group_tags.is_empty() {
        // `SELECT * FROM m … ORDER BY "time" DESC LIMIT 1`
        select.order_by = vec![latest_first];
        select.limit = Some(1);
    } else {
        // `SELECT DISTINCT ON (<tags>) * FROM m … ORDER BY <tags>, "time" DESC`
        select.order_by = group_tags.iter().map(|t| (t.clone(), false)).collect();
        select.order_by.push(latest_first);
        select.distinct_on = group_tags;
    }
    (select.query(), tag_count)
}
