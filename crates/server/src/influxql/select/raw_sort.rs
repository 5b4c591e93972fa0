//! The points of a raw `SELECT *` (every tag fetched: TSBS's `high-cpu`), read without an
//! `ORDER BY` and put in series and time order here. Planning the `ORDER BY` and an explicit
//! list of every column cost DataFusion more than the sort itself on high-cpu-1 (1.87 ms
//! against 1.38 ms for `SELECT *` alone, `POST /sql`, TSBS cpu-only 100 hosts).

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::{
    SortColumn, SortOptions, concat_batches, lexsort_to_indices, take_record_batch,
};
use datafusion::sql::sqlparser::ast::SelectItem;
use strata_storage::catalog::TableSchema;

use super::sql;
use super::tree::{self, SelectTree, Where};
use super::{Context, Grouping, is_column, other_tags, points_statement};

/// The rows of `SELECT "time", <grouped tags>, <vars> … ORDER BY <grouped tags>, "time"` as
/// [`points_statement`] lays them out, and how many grouped tags follow `time`. Points of
/// one instant are left for the caller to order, or with `order_ties` put in the order of
/// the other tags (missing first), as `points_statement` with `others_in_sql` orders them.
/// Reads `SELECT *` when that is every column read, else the columns, and sorts the answer.
pub(super) async fn points(
    ctx: &Context<'_>,
    database: &str,
    schema: &TableSchema,
    grouping: &Grouping,
    vars: &[String],
    filter: &Where,
    order_ties: bool,
) -> Result<(Vec<RecordBatch>, usize), String> {
    let group_tags: Vec<&String> = grouping.tags_in(schema).collect();
    // The answer's columns by name: `time`, the grouped tags, the variables.
    let layout: Vec<&str> = std::iter::once("time")
        .chain(group_tags.iter().map(|t| t.as_str()))
        .chain(vars.iter().map(String::as_str))
        .collect();
    if vars.iter().any(|v| !is_column(schema, v)) {
        // A missing column is a null of its own name there.
        let (statement, tag_count) = points_statement(schema, grouping, vars, filter, order_ties);
        return Ok((
            sql::run_batches(ctx.query, database, &statement).await?,
            tag_count,
        ));
    }
    let ties: Vec<&String> = if order_ties {
        other_tags(schema, grouping)
    } else {
        Vec::new()
    };
    let every_column = 1 + schema.tags.len() + schema.fields.len();
    let mut read: Vec<&str> = layout.clone();
    read.extend(ties.iter().map(|t| t.as_str()));
    read.sort_unstable();
    read.dedup();
    let projection = if read.len() == every_column {
        vec![tree::wildcard()]
    } else {
        read.iter()
            .map(|c| SelectItem::UnnamedExpr(tree::column(c)))
            .collect()
    };
    let statement = SelectTree {
        projection,
        table: schema.name.clone(),
        filter: filter.clone(),
        ..SelectTree::default()
    };
    let batches = sql::run_batches(ctx.query, database, statement.query()).await?;
    let Some(first) = batches.first() else {
        return Ok((Vec::new(), group_tags.len()));
    };
    let error = |e: datafusion::arrow::error::ArrowError| e.to_string();
    let all = concat_batches(&first.schema(), &batches).map_err(error)?;
    let index = |name: &str| {
        all.schema()
            .index_of(name)
            .map_err(|_| format!("column {name} missing from the answer"))
    };
    // A tag sorts with its missing values first, as InfluxDB's ''.
    let tag_key = |tag: &String| -> Result<SortColumn, String> {
        Ok(SortColumn {
            values: all.column(index(tag)?).clone(),
            options: Some(SortOptions {
                descending: false,
                nulls_first: true,
            }),
        })
    };
    // Series, then time, then (`order_ties`) the other tags.
    let mut keys = group_tags
        .iter()
        .map(|t| tag_key(t))
        .collect::<Result<Vec<SortColumn>, String>>()?;
    keys.push(SortColumn {
        values: all.column(index("time")?).clone(),
        options: Some(SortOptions::default()),
    });
    for tag in &ties {
        keys.push(tag_key(tag)?);
    }
    let order = lexsort_to_indices(&keys, None).map_err(error)?;
    let sorted = take_record_batch(&all, &order).map_err(error)?;
    let projection = layout
        .iter()
        .map(|name| index(name))
        .collect::<Result<Vec<usize>, String>>()?;
    let sorted = sorted.project(&projection).map_err(error)?;
    Ok((vec![sorted], group_tags.len()))
}
