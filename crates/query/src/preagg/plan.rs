//! Which aggregates the pre-aggregate path can answer, decided from DataFusion's physical
//! plan: an `AggregateExec` reading a [`StrataScanExec`] directly (every filter pushed down
//! exactly, no limit), grouping by tags and time buckets, computing count, sum, min, max,
//! avg, first and last of fields. Anything else keeps DataFusion's own plan.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::ScalarFunctionExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::{CastExpr, Column, Literal};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use strata_storage::catalog::TableSchema;
use strata_storage::model::{FieldId, FieldType};

use super::bucket::{Grid, TimeKey};
use crate::functions::first_last::End;
use crate::scan::StrataScanExec;

/// One GROUP BY key.
#[derive(Debug, Clone)]
pub(crate) enum GroupKey {
    /// A tag column, by name.
    Tag(String),
    /// A function of the time column that never decreases as time grows (`time` itself,
    /// `date_bin`, `date_trunc`).
    Time(TimeKey),
}

/// What an aggregate computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AggKind {
    /// `count(*)`, `count(1)`, `count(time)`: rows.
    CountRows,
    /// `count(field)`: rows with a value.
    Count,
    /// `sum(field)`.
    Sum,
    /// `min(field)`.
    Min,
    /// `max(field)`.
    Max,
    /// `avg(field)`, state (count, sum as float).
    Avg,
    /// `first(field)`, state (value, time).
    First,
    /// `last(field)`, state (value, time).
    Last,
    /// `first_value(x ORDER BY time ..)` / `last_value(..)`: the value of the earliest /
    /// latest row, null if that row lacks it (what `DISTINCT ON (..) .. ORDER BY time DESC`
    /// becomes); state (value, orderings.., is set).
    RowValue(End),
}

/// Where a [`AggKind::RowValue`] takes its value from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ValueSource {
    /// The aggregate's field.
    Field,
    /// The row's time.
    Time,
    /// The series' tag of this name.
    Tag(String),
}

/// One ORDER BY key of a [`AggKind::RowValue`], as its state carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OrderKey {
    /// The row's time.
    Time,
    /// The group's tag value, by its index among the GROUP BY tags (constant in a group).
    GroupTag(usize),
}

/// One aggregate of the statement.
#[derive(Debug, Clone)]
pub(crate) struct AggSpec {
    pub kind: AggKind,
    /// The field read; `None` for [`AggKind::CountRows`].
    pub field: Option<(FieldId, FieldType)>,
    /// Arrow types of the aggregate's partial state, in order.
    pub state_types: Vec<DataType>,
    /// For [`AggKind::RowValue`]: the value's source and the state's ordering keys.
    pub source: ValueSource,
    pub orderings: Vec<OrderKey>,
}

/// Two specs are the same aggregate when they compute the same thing from the same
/// source; the state layout follows from that.
impl PartialEq for AggSpec {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.field == other.field && self.source == other.source
    }
}

/// A statement the pre-aggregate path answers.
#[derive(Debug, Clone)]
pub(crate) struct PreAggPlan {
    pub groups: Vec<GroupKey>,
    pub aggs: Vec<AggSpec>,
}

/// The pre-aggregate plan for `aggregate` over `scan`, when every part of it is supported.
pub(crate) fn analyze(aggregate: &AggregateExec, scan: &StrataScanExec) -> Option<PreAggPlan> {
    let group_by = aggregate.group_expr();
    if !group_by.is_single() || scan.limit().is_some() {
        return None;
    }
    if aggregate.filter_expr().iter().any(Option::is_some) {
        return None;
    }
    let input = scan.schema();
    let table = scan.table();
    let mut groups = Vec::new();
    for (expr, _name) in group_by.expr() {
        groups.push(group_key(expr, &input, table)?);
    }
    let mut aggs = Vec::new();
    for function in aggregate.aggr_expr() {
        if function.is_distinct() {
            return None;
        }
        let args = function.expressions();
        let name = function.fun().name();
        let spec = if function.order_bys().is_empty() {
            agg_spec(name, &args, &input, table)?
        } else {
            row_value_spec(function, &args, &groups, &input, table)?
        };
        let state: Vec<DataType> = function
            .state_fields()
            .ok()?
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        if state != spec.state_types {
            return None;
        }
        aggs.push(spec);
    }
    Some(PreAggPlan { groups, aggs })
}

/// What `name` is in the scan's output: the time column, a tag, or a field.
enum Role {
    Time,
    Tag,
    Field(FieldId, FieldType),
}

fn role(column: &Column, input: &Schema, table: &TableSchema) -> Option<Role> {
    let name = input.fields().get(column.index())?.name();
    if name == strata_storage::catalog::TIME_COLUMN {
        Some(Role::Time)
    } else if table.tags.iter().any(|t| t == name) {
        Some(Role::Tag)
    } else {
        table.field(name).map(|f| Role::Field(f.id, f.field_type))
    }
}

fn group_key(
    expr: &Arc<dyn PhysicalExpr>,
    input: &Schema,
    table: &TableSchema,
) -> Option<GroupKey> {
    if let Some(column) = expr.downcast_ref::<Column>() {
        let name = input.fields().get(column.index())?.name();
        return match role(column, input, table)? {
            Role::Tag => Some(GroupKey::Tag(name.clone())),
            Role::Time => Some(GroupKey::Time(TimeKey::Grid(Grid::IDENTITY))),
            Role::Field(..) => None,
        };
    }
    let function = expr.downcast_ref::<ScalarFunctionExpr>()?;
    if !matches!(function.fun().name(), "date_bin" | "date_trunc") {
        return None;
    }
    // Every argument a literal except one bare `time` column.
    let mut rebound = Vec::new();
    let mut times = 0;
    for arg in function.args() {
        if arg.downcast_ref::<Literal>().is_some() {
            rebound.push(Arc::clone(arg));
        } else if let Some(column) = arg.downcast_ref::<Column>()
            && matches!(role(column, input, table)?, Role::Time)
        {
            times += 1;
            rebound.push(Arc::new(Column::new(column.name(), 0)) as Arc<dyn PhysicalExpr>);
        } else {
            return None;
        }
    }
    if times != 1 {
        return None;
    }
    let literal = |index: usize| -> Option<&ScalarValue> {
        Some(
            function
                .args()
                .get(index)?
                .downcast_ref::<Literal>()?
                .value(),
        )
    };
    let grid = match (function.fun().name(), function.args().len()) {
        ("date_bin", 2 | 3) if function.args()[1].downcast_ref::<Column>().is_some() => {
            Grid::date_bin(literal(0)?, literal(2))
        }
        ("date_trunc", 2) => match literal(0)? {
            ScalarValue::Utf8(Some(unit)) | ScalarValue::Utf8View(Some(unit)) => {
                Grid::date_trunc(unit)
            }
            _ => None,
        },
        _ => None,
    };
    if let Some(grid) = grid {
        return Some(GroupKey::Time(TimeKey::Grid(grid)));
    }
    // Evaluated by DataFusion over a one-column batch of times.
    let rebound = Arc::clone(expr).with_new_children(rebound).ok()?;
    Some(GroupKey::Time(TimeKey::Expr(rebound)))
}

fn agg_spec(
    name: &str,
    args: &[Arc<dyn PhysicalExpr>],
    input: &Schema,
    table: &TableSchema,
) -> Option<AggSpec> {
    let column_role = |expr: &Arc<dyn PhysicalExpr>| -> Option<Role> {
        role(expr.downcast_ref::<Column>()?, input, table)
    };
    let numeric = |t: FieldType| {
        matches!(
            t,
            FieldType::Float | FieldType::Integer | FieldType::Unsigned
        )
    };
    let spec = |kind, field: Option<(FieldId, FieldType)>, state_types| {
        Some(AggSpec {
            kind,
            field,
            state_types,
            source: ValueSource::Field,
            orderings: Vec::new(),
        })
    };
    match (name, args) {
        ("count", [arg]) => {
            if let Some(literal) = arg.downcast_ref::<Literal>() {
                return (!literal.value().is_null())
                    .then(|| spec(AggKind::CountRows, None, vec![DataType::Int64]))?;
            }
            match column_role(arg)? {
                Role::Time => spec(AggKind::CountRows, None, vec![DataType::Int64]),
                Role::Field(id, t) => spec(AggKind::Count, Some((id, t)), vec![DataType::Int64]),
                Role::Tag => None,
            }
        }
        ("sum" | "min" | "max", [arg]) => {
            let Role::Field(id, t) = column_role(arg)? else {
                return None;
            };
            if !numeric(t) {
                return None;
            }
            let kind = match name {
                "sum" => AggKind::Sum,
                "min" => AggKind::Min,
                _ => AggKind::Max,
            };
            spec(kind, Some((id, t)), vec![value_type(t)])
        }
        ("avg", [arg]) => {
            // avg casts integers to float before summing.
            let inner = match arg.downcast_ref::<CastExpr>() {
                Some(cast) if cast.cast_type() == &DataType::Float64 => cast.expr(),
                Some(_) => return None,
                None => arg,
            };
            let Role::Field(id, t) = column_role(inner)? else {
                return None;
            };
            if !numeric(t) || (t == FieldType::Float) != (arg.downcast_ref::<CastExpr>().is_none())
            {
                return None;
            }
            spec(
                AggKind::Avg,
                Some((id, t)),
                vec![DataType::UInt64, DataType::Float64],
            )
        }
        ("first" | "last", [value, time]) => {
            let Role::Field(id, t) = column_role(value)? else {
                return None;
            };
            if !matches!(column_role(time)?, Role::Time) {
                return None;
            }
            let kind = if name == "first" {
                AggKind::First
            } else {
                AggKind::Last
            };
            spec(
                kind,
                Some((id, t)),
                vec![
                    value_type(t),
                    DataType::Timestamp(TimeUnit::Nanosecond, None),
                ],
            )
        }
        _ => None,
    }
}

/// `first_value(x ORDER BY ..)` / `last_value(..)` ordered by time (and by GROUP BY tags,
/// constant within a group), respecting nulls.
fn row_value_spec(
    function: &AggregateFunctionExpr,
    args: &[Arc<dyn PhysicalExpr>],
    groups: &[GroupKey],
    input: &Schema,
    table: &TableSchema,
) -> Option<AggSpec> {
    let name = function.fun().name();
    if !matches!(name, "first_value" | "last_value") || function.ignore_nulls() {
        return None;
    }
    let [value] = args else {
        return None;
    };
    let column = value.downcast_ref::<Column>()?;
    let (source, field, value_type) = match role(column, input, table)? {
        Role::Field(id, t) => (ValueSource::Field, Some((id, t)), value_type(t)),
        Role::Time => (
            ValueSource::Time,
            None,
            strata_storage::arrow::time_data_type(),
        ),
        Role::Tag => {
            let tag = input.fields().get(column.index())?.name().clone();
            (
                ValueSource::Tag(tag),
                None,
                strata_storage::arrow::tag_data_type(),
            )
        }
    };
    let group_tags: Vec<&str> = groups
        .iter()
        .filter_map(|g| match g {
            GroupKey::Tag(t) => Some(t.as_str()),
            GroupKey::Time(_) => None,
        })
        .collect();
    let mut orderings = Vec::new();
    let mut state_types = vec![value_type];
    let mut time_descending = None;
    for sort in function.order_bys() {
        let column = sort.expr.downcast_ref::<Column>()?;
        match role(column, input, table)? {
            Role::Time => {
                time_descending = Some(sort.options.descending);
                orderings.push(OrderKey::Time);
                state_types.push(strata_storage::arrow::time_data_type());
            }
            Role::Tag => {
                let tag = input.fields().get(column.index())?.name();
                let index = group_tags.iter().position(|t| t == tag)?;
                orderings.push(OrderKey::GroupTag(index));
                state_types.push(strata_storage::arrow::tag_data_type());
            }
            Role::Field(..) => return None,
        }
    }
    // Exactly one time key; the tag keys are constant within a group.
    if orderings.iter().filter(|k| **k == OrderKey::Time).count() != 1 {
        return None;
    }
    state_types.push(DataType::Boolean);
    let latest = time_descending? == (name == "first_value");
    Some(AggSpec {
        kind: AggKind::RowValue(if latest { End::Last } else { End::First }),
        field,
        state_types,
        source,
        orderings,
    })
}

/// The Arrow type of a field's values.
pub(crate) fn value_type(t: FieldType) -> DataType {
    strata_storage::arrow::field_data_type(t)
}

/// The one-column schema time keys are evaluated against.
pub(crate) fn time_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![Field::new(
        strata_storage::catalog::TIME_COLUMN,
        DataType::Timestamp(TimeUnit::Nanosecond, None),
        false,
    )]))
}
