//! Latest-row statements (`SELECT DISTINCT ON (tags) * … ORDER BY tags, time DESC`): the
//! engine's latest row of each series, the latest per tag group kept, sorted and built
//! straight into Arrow columns. Going through the general fold would cost a state and a
//! `ScalarValue` per column per series, most of the statement's time on thousands of series.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, RecordBatchOptions,
    StringBuilder, StringDictionaryBuilder, TimestampNanosecondArray, UInt64Builder,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::common::{DataFusionError, Result as DfResult};
use strata_storage::column::Values;
use strata_storage::{Engine, SeriesRows};

use super::shape::{Output, SortKey, sort_and_limit};
use super::{DirectPlan, MAX_GROUPS};
use crate::preagg::plan::{GroupKey, ValueSource};

/// The answer of a latest-row plan; `None` past [`MAX_GROUPS`] groups.
pub(super) fn latest_batch(engine: &Engine, plan: &DirectPlan) -> DfResult<Option<RecordBatch>> {
    let rows = engine
        .latest(&plan.request)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let keys: Vec<&str> = plan
        .preagg
        .groups
        .iter()
        .filter_map(|g| match g {
            GroupKey::Tag(name) => Some(name.as_str()),
            GroupKey::Time(_) => None,
        })
        .collect();
    let tag = |series: &SeriesRows, name: &str| -> Option<usize> {
        series.tags.iter().position(|(k, _)| k == name)
    };
    // The latest series of each group; on equal times the first read stays.
    let mut best: HashMap<Vec<Option<&str>>, usize> = HashMap::new();
    for (index, series) in rows.iter().enumerate() {
        let Some(&time) = series.data.times.last() else {
            continue;
        };
        let key: Vec<Option<&str>> = keys
            .iter()
            .map(|k| tag(series, k).map(|i| series.tags[i].1.as_str()))
            .collect();
        match best.get_mut(&key) {
            Some(current) => {
                if rows[*current].data.times.last().is_some_and(|t| time > *t) {
                    *current = index;
                }
            }
            None => {
                best.insert(key, index);
            }
        }
    }
    if best.len() > MAX_GROUPS {
        return Ok(None);
    }
    let mut winners: Vec<(Vec<Option<&str>>, &SeriesRows)> =
        best.into_iter().map(|(key, i)| (key, &rows[i])).collect();
    sort_and_limit(&mut winners, plan.limit, |a, b| {
        order(&a.0, &b.0, &plan.order)
    });
    if let Some(limit) = plan.limit {
        winners.truncate(limit);
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.outputs.len());
    for (output, _) in &plan.outputs {
        let Output::Agg(agg) = output else {
            return Err(DataFusionError::Internal(
                "a latest-row plan outputs row values only".into(),
            ));
        };
        let spec = &plan.preagg.aggs[*agg];
        let last = |s: &SeriesRows| s.data.rows() - 1;
        let array: ArrayRef = match (&spec.source, spec.field) {
            (ValueSource::Time, _) => Arc::new(TimestampNanosecondArray::from_iter_values(
                winners.iter().map(|(_, s)| s.data.times[last(s)]),
            )),
            (ValueSource::Tag(name), _) => {
                let mut builder = StringDictionaryBuilder::<Int32Type>::new();
                for (_, s) in &winners {
                    builder.append_option(tag(s, name).map(|i| s.tags[i].1.as_str()));
                }
                Arc::new(builder.finish())
            }
            (ValueSource::Field, Some((field, field_type))) => {
                let cells = winners.iter().map(|(_, s)| {
                    let row = last(s);
                    s.data
                        .column(field)
                        .filter(|c| c.is_present(row))
                        .map(|c| (&c.values, value_index(c, row)))
                });
                field_array(field_type, cells)
            }
            (ValueSource::Field, None) => {
                return Err(DataFusionError::Internal(
                    "row value without a field".into(),
                ));
            }
        };
        columns.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(winners.len()));
    Ok(Some(RecordBatch::try_new_with_options(
        Arc::clone(&plan.schema),
        columns,
        &options,
    )?))
}

/// Index of `row`'s value among a column's present values.
fn value_index(column: &strata_storage::column::Column, row: usize) -> usize {
    column
        .present
        .as_ref()
        .map_or(row, |p| p[..row].iter().filter(|x| **x).count())
}

/// One field's column from each winner's cell (`None`: null).
fn field_array<'a>(
    field_type: strata_storage::model::FieldType,
    cells: impl Iterator<Item = Option<(&'a Values, usize)>>,
) -> ArrayRef {
    use strata_storage::model::FieldType;
    match field_type {
        FieldType::Float => {
            let mut b = Float64Builder::new();
            for cell in cells {
                b.append_option(cell.and_then(|(v, i)| match v {
                    Values::Float(v) => Some(v[i]),
                    _ => None,
                }));
            }
            Arc::new(b.finish())
        }
        FieldType::Integer => {
            let mut b = Int64Builder::new();
            for cell in cells {
                b.append_option(cell.and_then(|(v, i)| match v {
                    Values::Integer(v) => Some(v[i]),
                    _ => None,
                }));
            }
            Arc::new(b.finish())
        }
        FieldType::Unsigned => {
            let mut b = UInt64Builder::new();
            for cell in cells {
                b.append_option(cell.and_then(|(v, i)| match v {
                    Values::Unsigned(v) => Some(v[i]),
                    _ => None,
                }));
            }
            Arc::new(b.finish())
        }
        FieldType::Boolean => {
            let mut b = BooleanBuilder::new();
            for cell in cells {
                b.append_option(cell.and_then(|(v, i)| match v {
                    Values::Boolean(v) => Some(v[i]),
                    _ => None,
                }));
            }
            Arc::new(b.finish())
        }
        FieldType::String => {
            let mut b = StringBuilder::new();
            for cell in cells {
                b.append_option(cell.and_then(|(v, i)| match v {
                    Values::String(v) => Some(v[i].as_str()),
                    _ => None,
                }));
            }
            Arc::new(b.finish())
        }
    }
}

/// Group keys (tag values in GROUP BY order) under the ORDER BY keys.
fn order(a: &[Option<&str>], b: &[Option<&str>], keys: &[SortKey]) -> Ordering {
    keys.iter()
        .map(|key| key.compare(a[key.group], b[key.group]))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}
