//! Latest-row statements (`SELECT DISTINCT ON (tags) * … ORDER BY tags, time DESC`): the
//! engine's latest row of each series, visited in place ([`Engine::latest_each`]), the
//! latest per tag group kept (`latest_group.rs`, tag values as ids, nothing allocated per
//! series), sorted and built straight into Arrow columns. Going through the general fold
//! would cost a state and a `ScalarValue` per column per series, and owned rows
//! ([`Engine::latest`]) 20 strings and 10 one-value columns per series: most of the
//! statement's time on thousands of series.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, DictionaryArray, Float64Builder, Int32Builder, Int64Builder,
    RecordBatch, RecordBatchOptions, StringBuilder, TimestampNanosecondArray, UInt64Builder,
};
use datafusion::arrow::datatypes::Int32Type;
use datafusion::common::{DataFusionError, Result as DfResult};
use strata_storage::Engine;
use strata_storage::model::{FieldId, Value};

use super::latest_group::{Groups, NONE};
use super::shape::{Output, SortKey, sort_and_limit};
use super::{DirectPlan, MAX_GROUPS};
use crate::preagg::groups::tag_keys;
use crate::preagg::plan::ValueSource;

/// The answer of a latest-row plan; `None` past [`MAX_GROUPS`] groups.
pub(super) fn latest_batch(engine: &Engine, plan: &DirectPlan) -> DfResult<Option<RecordBatch>> {
    let keys: Vec<&str> = tag_keys(&plan.preagg).map(String::as_str).collect();
    let mut tags: Vec<&str> = Vec::new();
    let mut fields: Vec<FieldId> = Vec::new();
    for (output, _) in &plan.outputs {
        if let Output::Agg(agg) = output {
            let spec = &plan.preagg.aggs[*agg];
            match (&spec.source, spec.field) {
                (ValueSource::Tag(name), _) => tags.push(name),
                (ValueSource::Field, Some((field, _))) if !fields.contains(&field) => {
                    fields.push(field)
                }
                _ => {}
            }
        }
    }
    let mut groups = Groups::new(&keys, &tags, fields, MAX_GROUPS);
    engine
        .latest_each(&plan.request, |view| groups.add(view))
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    if groups.over() {
        return Ok(None);
    }
    let mut winners: Vec<usize> = (0..groups.len()).collect();
    sort_and_limit(&mut winners, plan.limit, |a, b| {
        order(&groups, *a, *b, &plan.order)
    });
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(plan.outputs.len());
    for (output, _) in &plan.outputs {
        let Output::Agg(agg) = output else {
            return Err(DataFusionError::Internal(
                "a latest-row plan outputs row values only".into(),
            ));
        };
        let spec = &plan.preagg.aggs[*agg];
        let array: ArrayRef = match (&spec.source, spec.field) {
            (ValueSource::Time, _) => Arc::new(TimestampNanosecondArray::from_iter_values(
                winners.iter().map(|g| groups.time(*g)),
            )),
            (ValueSource::Tag(name), _) => tag_array(&groups, &winners, name)?,
            (ValueSource::Field, Some((field, field_type))) => {
                let slot = groups.field_slot(field);
                field_array(
                    field_type,
                    winners
                        .iter()
                        .map(|g| slot.and_then(|slot| groups.value(*g, slot))),
                )
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

/// The dictionary column of tag `name` of the winners: the same array a
/// `StringDictionaryBuilder` makes (values in order of first use), from the value ids
/// without hashing a string again.
fn tag_array(groups: &Groups<'_>, winners: &[usize], name: &str) -> DfResult<ArrayRef> {
    let mut key_of = vec![NONE; groups.strings()];
    let mut distinct = 0;
    let mut values = StringBuilder::new();
    let mut keys = Int32Builder::with_capacity(winners.len());
    let slot = groups.tag_slot(name);
    for group in winners {
        let id = slot.map_or(NONE, |slot| groups.tag_id(*group, slot));
        let (Some(text), Some(key)) = (groups.string(id), key_of.get_mut(id)) else {
            keys.append_null();
            continue;
        };
        if *key == NONE {
            *key = distinct;
            distinct += 1;
            values.append_value(text);
        }
        let key = i32::try_from(*key).map_err(|_| {
            DataFusionError::Internal(format!("more than {} distinct values of {name}", i32::MAX))
        })?;
        keys.append_value(key);
    }
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys.finish(),
        Arc::new(values.finish()),
    )?))
}

/// One field's column from each winner's value (`None`, or a value of another type: null).
fn field_array<'a>(
    field_type: strata_storage::model::FieldType,
    cells: impl Iterator<Item = Option<&'a Value>>,
) -> ArrayRef {
    use strata_storage::model::FieldType;
    match field_type {
        FieldType::Float => {
            let mut b = Float64Builder::new();
            for cell in cells {
                b.append_option(match cell {
                    Some(Value::Float(v)) => Some(*v),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        FieldType::Integer => {
            let mut b = Int64Builder::new();
            for cell in cells {
                b.append_option(match cell {
                    Some(Value::Integer(v)) => Some(*v),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        FieldType::Unsigned => {
            let mut b = UInt64Builder::new();
            for cell in cells {
                b.append_option(match cell {
                    Some(Value::Unsigned(v)) => Some(*v),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        FieldType::Boolean => {
            let mut b = BooleanBuilder::new();
            for cell in cells {
                b.append_option(match cell {
                    Some(Value::Boolean(v)) => Some(*v),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
        FieldType::String => {
            let mut b = StringBuilder::new();
            for cell in cells {
                b.append_option(match cell {
                    Some(Value::String(v)) => Some(v.as_str()),
                    _ => None,
                });
            }
            Arc::new(b.finish())
        }
    }
}

/// Two groups under the ORDER BY keys (each names a GROUP BY tag by index).
fn order(groups: &Groups<'_>, a: usize, b: usize, keys: &[SortKey]) -> Ordering {
    keys.iter()
        .map(|key| key.compare(groups.key(a, key.group), groups.key(b, key.group)))
        .find(|o| *o != Ordering::Equal)
        .unwrap_or(Ordering::Equal)
}
