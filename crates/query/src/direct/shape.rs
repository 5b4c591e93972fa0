//! The shapes the direct path answers, read off a plain `SELECT`:
//!
//! - **aggregates**: `SELECT <group keys and aggregates> FROM t [WHERE …] [GROUP BY <keys>]
//!   [ORDER BY <keys>] [LIMIT n]`, where a key is a tag or a fixed-width time bucket
//!   (`time_bucket`/`date_bin(INTERVAL '…', time)`, `date_trunc('hour', time)` up to a
//!   week) and an aggregate is `count(*)`, or `count`, `sum`, `min`, `max`, `avg`, `first`,
//!   `last` of a field;
//! - **latest / earliest row per tag group**: `SELECT DISTINCT ON (<tags>) * FROM t
//!   [WHERE …] ORDER BY <tags>, time DESC|ASC [LIMIT n]` (TSBS `lastpoint`).
//!
//! Output names and types are DataFusion's for the same statement (the differential test
//! checks it), so a client cannot tell which path answered.

use std::cmp::Ordering;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::sql::sqlparser::ast::{
    Distinct, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, OrderByKind,
    Query, Select, SelectItem,
};
use strata_storage::catalog::TIME_COLUMN;
use strata_storage::model::FieldType;

use super::parse::{From, column, ident, interval, string, unsigned};
use crate::functions::first_last::End;
use crate::preagg::bucket::{Grid, TimeKey, bucket_type};
use crate::preagg::plan::{AggKind, AggSpec, GroupKey, OrderKey, ValueSource, value_type};

/// One output column: a group key or an aggregate, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Group(usize),
    Agg(usize),
}

/// One ORDER BY key: a group key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SortKey {
    pub group: usize,
    pub descending: bool,
    pub nulls_first: bool,
}

/// What a statement computes, before the WHERE clause.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub groups: Vec<GroupKey>,
    pub aggs: Vec<AggSpec>,
    /// Output columns in order, with their Arrow fields.
    pub outputs: Vec<(Output, Field)>,
    pub order: Vec<SortKey>,
    pub limit: Option<usize>,
    /// Every aggregate is the value of the group's latest row.
    pub latest: bool,
}

/// A projection item or GROUP BY entry, resolved.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Tag(String),
    /// A time bucket: the function (`date_bin` or `date_trunc`, which DataFusion tells
    /// apart even on the same grid), its grid, whether its result is nullable.
    Bucket(String, Grid, bool),
    Agg(AggSpec, DataType, bool),
}

/// The shape of `select` (with `query`'s ORDER BY and LIMIT).
pub(super) fn shape(query: &Query, select: &Select, from: &From) -> Option<Shape> {
    let limit = limit(query)?;
    match &select.distinct {
        None | Some(Distinct::All) => aggregate_shape(query, select, from, limit),
        Some(Distinct::On(on)) => distinct_on_shape(query, select, on, from, limit),
        Some(Distinct::Distinct) => None,
    }
}

/// `LIMIT n` (no OFFSET): `Some(None)` without a limit.
fn limit(query: &Query) -> Option<Option<usize>> {
    use datafusion::sql::sqlparser::ast::LimitClause;
    match &query.limit_clause {
        None => Some(None),
        Some(LimitClause::LimitOffset {
            limit: Some(limit),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => Some(Some(usize::try_from(unsigned(limit)?).ok()?)),
        Some(_) => None,
    }
}

fn aggregate_shape(
    query: &Query,
    select: &Select,
    from: &From,
    limit: Option<usize>,
) -> Option<Shape> {
    let GroupByExpr::Expressions(group_by, _) = &select.group_by else {
        return None;
    };
    // Projection items with their output names.
    let mut items: Vec<(Item, String, Option<String>)> = Vec::new();
    for item in &select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(expr) => (expr, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident(alias))),
            _ => return None,
        };
        // An alias that is also a column name resolves differently in GROUP BY and ORDER
        // BY; DataFusion decides those.
        if let Some(alias) = &alias
            && is_column(alias, from)
        {
            return None;
        }
        let resolved = item_of(expr, from)?;
        let name = match (&alias, &resolved) {
            (Some(alias), _) => alias.clone(),
            (None, Item::Tag(tag)) => tag.clone(),
            (None, Item::Agg(spec, ..)) => default_agg_name(expr, spec, from)?,
            (None, Item::Bucket(..)) => return None,
        };
        items.push((resolved, name, alias));
    }
    if items.is_empty() {
        return None;
    }
    // GROUP BY entries, as projection items (by alias or by meaning).
    let mut groups: Vec<Item> = Vec::new();
    for expr in group_by {
        let by_alias = match expr {
            Expr::Identifier(i) => items
                .iter()
                .find(|(_, _, alias)| alias.as_deref() == Some(ident(i).as_str()))
                .map(|(item, ..)| item.clone()),
            _ => None,
        };
        let item = match by_alias {
            Some(item) => item,
            None => item_of(expr, from)?,
        };
        if matches!(item, Item::Agg(..)) || groups.contains(&item) {
            return None;
        }
        groups.push(item);
    }
    let mut shape = Shape {
        groups: Vec::new(),
        aggs: Vec::new(),
        outputs: Vec::new(),
        order: Vec::new(),
        limit,
        latest: false,
    };
    for group in &groups {
        shape.groups.push(match group {
            Item::Tag(tag) => GroupKey::Tag(tag.clone()),
            Item::Bucket(_, grid, _) => GroupKey::Time(TimeKey::Grid(*grid)),
            Item::Agg(..) => return None,
        });
    }
    for (item, name, _) in &items {
        match item {
            Item::Agg(spec, data_type, nullable) => {
                shape.outputs.push((
                    Output::Agg(shape.aggs.len()),
                    Field::new(name, data_type.clone(), *nullable),
                ));
                shape.aggs.push(spec.clone());
            }
            key => {
                // Every key shown must be grouped by, and every group shown (DataFusion
                // also allows hidden group keys; those stay with it).
                let index = groups.iter().position(|g| g == key)?;
                let (data_type, nullable) = match key {
                    Item::Tag(_) => (strata_storage::arrow::tag_data_type(), true),
                    Item::Bucket(_, _, nullable) => (bucket_type(), *nullable),
                    Item::Agg(..) => return None,
                };
                shape
                    .outputs
                    .push((Output::Group(index), Field::new(name, data_type, nullable)));
            }
        }
    }
    let shown = shape
        .outputs
        .iter()
        .filter(|(o, _)| matches!(o, Output::Group(_)))
        .count();
    if shown != groups.len() {
        return None;
    }
    // ORDER BY group keys, by alias or by meaning.
    if let Some(order_by) = &query.order_by {
        let OrderByKind::Expressions(exprs) = &order_by.kind else {
            return None;
        };
        if order_by.interpolate.is_some() {
            return None;
        }
        for key in exprs {
            if key.with_fill.is_some() {
                return None;
            }
            let by_alias = match &key.expr {
                Expr::Identifier(i) => items
                    .iter()
                    .find(|(_, name, _)| *name == ident(i))
                    .map(|(item, ..)| item.clone()),
                _ => None,
            };
            let item = match by_alias {
                Some(item) => item,
                None => item_of(&key.expr, from)?,
            };
            let group = groups.iter().position(|g| *g == item)?;
            shape
                .order
                .push(sort_key(group, key.options.asc, key.options.nulls_first));
        }
    }
    Some(shape)
}

impl SortKey {
    /// The order of two key values under this key (`None`: null).
    pub(crate) fn compare<T: Ord>(&self, a: Option<T>, b: Option<T>) -> Ordering {
        match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) if self.nulls_first => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) if self.nulls_first => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) if self.descending => y.cmp(&x),
            (Some(x), Some(y)) => x.cmp(&y),
        }
    }
}

/// Sorts `items` under `compare` and keeps the first `limit`; with a limit below their
/// number only the kept ones are fully sorted (a top-n).
pub(crate) fn sort_and_limit<T>(
    items: &mut Vec<T>,
    limit: Option<usize>,
    compare: impl Fn(&T, &T) -> Ordering,
) {
    match limit {
        Some(limit) if limit < items.len() => {
            items.select_nth_unstable_by(limit, &compare);
            items.truncate(limit);
            items.sort_by(&compare);
        }
        _ => items.sort_by(&compare),
    }
}

/// DataFusion's default null order puts nulls above every value: last ascending, first
/// descending.
fn sort_key(group: usize, asc: Option<bool>, nulls_first: Option<bool>) -> SortKey {
    let descending = asc == Some(false);
    SortKey {
        group,
        descending,
        nulls_first: nulls_first.unwrap_or(descending),
    }
}

fn distinct_on_shape(
    query: &Query,
    select: &Select,
    on: &[Expr],
    from: &From,
    limit: Option<usize>,
) -> Option<Shape> {
    let GroupByExpr::Expressions(group_by, _) = &select.group_by else {
        return None;
    };
    if !group_by.is_empty() || !matches!(select.projection.as_slice(), [SelectItem::Wildcard(_)]) {
        return None;
    }
    if let [SelectItem::Wildcard(options)] = select.projection.as_slice()
        && (options.opt_ilike.is_some()
            || options.opt_exclude.is_some()
            || options.opt_except.is_some()
            || options.opt_replace.is_some()
            || options.opt_rename.is_some())
    {
        return None;
    }
    let tags: Vec<String> = on
        .iter()
        .map(|e| column(e, from).filter(|c| from.table.tags.contains(c)))
        .collect::<Option<_>>()?;
    if tags.is_empty() {
        return None;
    }
    // ORDER BY the DISTINCT ON tags in order, then time.
    let order_by = query.order_by.as_ref()?;
    let OrderByKind::Expressions(exprs) = &order_by.kind else {
        return None;
    };
    if exprs.len() != tags.len() + 1 || order_by.interpolate.is_some() {
        return None;
    }
    let mut order = Vec::new();
    for (index, (key, tag)) in exprs.iter().zip(&tags).enumerate() {
        if column(&key.expr, from).as_ref() != Some(tag) || key.with_fill.is_some() {
            return None;
        }
        order.push(sort_key(index, key.options.asc, key.options.nulls_first));
    }
    let time = exprs.last()?;
    if column(&time.expr, from).as_deref() != Some(TIME_COLUMN) || time.with_fill.is_some() {
        return None;
    }
    let end = if time.options.asc == Some(false) {
        End::Last
    } else {
        End::First
    };
    let table = &from.table;
    let spec = |source, field| AggSpec {
        kind: AggKind::RowValue(end),
        field,
        state_types: Vec::new(),
        source,
        orderings: vec![OrderKey::Time],
    };
    let mut aggs = vec![spec(ValueSource::Time, None)];
    let mut outputs = vec![(
        Output::Agg(0),
        Field::new(TIME_COLUMN, strata_storage::arrow::time_data_type(), true),
    )];
    for tag in &table.tags {
        outputs.push((
            Output::Agg(aggs.len()),
            Field::new(tag, strata_storage::arrow::tag_data_type(), true),
        ));
        aggs.push(spec(ValueSource::Tag(tag.clone()), None));
    }
    for field in &table.fields {
        outputs.push((
            Output::Agg(aggs.len()),
            Field::new(&field.name, value_type(field.field_type), true),
        ));
        aggs.push(spec(ValueSource::Field, Some((field.id, field.field_type))));
    }
    Some(Shape {
        groups: tags.into_iter().map(GroupKey::Tag).collect(),
        aggs,
        outputs,
        order,
        limit,
        latest: end == End::Last,
    })
}

fn is_column(name: &str, from: &From) -> bool {
    name == TIME_COLUMN
        || from.table.tags.iter().any(|t| t == name)
        || from.table.field(name).is_some()
}

/// A projection or GROUP BY expression: a tag, a time bucket or an aggregate.
fn item_of(expr: &Expr, from: &From) -> Option<Item> {
    if let Some(name) = column(expr, from) {
        return from.table.tags.contains(&name).then_some(Item::Tag(name));
    }
    let Expr::Function(function) = expr else {
        return None;
    };
    if function.filter.is_some()
        || function.null_treatment.is_some()
        || function.over.is_some()
        || !function.within_group.is_empty()
        || function.uses_odbc_syntax
        || !matches!(function.parameters, FunctionArguments::None)
    {
        return None;
    }
    let [name] = function.name.0.as_slice() else {
        return None;
    };
    let name = ident(name.as_ident()?);
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    if list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    let args: Vec<&FunctionArgExpr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(arg) => Some(arg),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let expr_arg = |i: usize| match args.get(i) {
        Some(FunctionArgExpr::Expr(e)) => Some(e),
        _ => None,
    };
    let is_time = |e: &Expr| column(e, from).as_deref() == Some(TIME_COLUMN);
    match (name.as_str(), args.len()) {
        ("time_bucket" | "date_bin", 2) if is_time(expr_arg(1)?) => {
            let grid = Grid::date_bin(&interval(expr_arg(0)?)?, None)?;
            Some(Item::Bucket("date_bin".into(), grid, true))
        }
        ("date_trunc", 2) if is_time(expr_arg(1)?) => {
            let grid = Grid::date_trunc(string(expr_arg(0)?)?)?;
            Some(Item::Bucket("date_trunc".into(), grid, false))
        }
        ("count", 1) if matches!(args[0], FunctionArgExpr::Wildcard) => Some(Item::Agg(
            spec(AggKind::CountRows, None),
            DataType::Int64,
            false,
        )),
        ("count" | "sum" | "min" | "max" | "avg" | "first" | "last", 1) => {
            let column = column(expr_arg(0)?, from)?;
            if name == "count" && column == TIME_COLUMN {
                return Some(Item::Agg(
                    spec(AggKind::CountRows, None),
                    DataType::Int64,
                    false,
                ));
            }
            let field = from.table.field(&column)?;
            let t = field.field_type;
            let numeric = matches!(
                t,
                FieldType::Float | FieldType::Integer | FieldType::Unsigned
            );
            let (kind, data_type, nullable) = match name.as_str() {
                "count" => (AggKind::Count, DataType::Int64, false),
                "sum" if numeric => (AggKind::Sum, value_type(t), true),
                "min" if numeric => (AggKind::Min, value_type(t), true),
                "max" if numeric => (AggKind::Max, value_type(t), true),
                "avg" if numeric => (AggKind::Avg, DataType::Float64, true),
                "first" => (AggKind::First, value_type(t), true),
                "last" => (AggKind::Last, value_type(t), true),
                _ => return None,
            };
            Some(Item::Agg(
                spec(kind, Some((field.id, t))),
                data_type,
                nullable,
            ))
        }
        _ => None,
    }
}

fn spec(kind: AggKind, field: Option<(strata_storage::model::FieldId, FieldType)>) -> AggSpec {
    AggSpec {
        kind,
        field,
        state_types: Vec::new(),
        source: ValueSource::Field,
        orderings: Vec::new(),
    }
}

/// DataFusion's name for an unaliased aggregate: `count(*)`, or `max(cpu.usage)` with the
/// table reference as written. Only plain lower-case names, whose display needs no quotes.
fn default_agg_name(expr: &Expr, spec: &AggSpec, from: &From) -> Option<String> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let name = ident(function.name.0.first()?.as_ident()?);
    if spec.kind == AggKind::CountRows {
        // `count(time)` is named after its column, `count(*)` after the star.
        let FunctionArguments::List(list) = &function.args else {
            return None;
        };
        return match list.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] => Some("count(*)".into()),
            _ => None,
        };
    }
    let (field, _) = spec.field?;
    let column = &from.table.fields.get(field as usize)?.name;
    let plain = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !s.starts_with(|c: char| c.is_ascii_digit())
    };
    if !plain(column) || !from.qualifier.iter().all(|q| plain(q)) {
        return None;
    }
    Some(format!("{name}({}.{column})", from.qualifier.join(".")))
}
