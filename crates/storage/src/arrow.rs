//! Reads as Arrow record batches: the form the query layer consumes.
//!
//! A table's Arrow schema is `time` (timestamp ns, not null), then its tag columns
//! (dictionary-encoded strings, null where a series lacks the tag), then its field columns
//! (typed, null where a row lacks the field), in catalog order. A batch holds whole series'
//! rows, series after series, each sorted by time.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampNanosecondArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef, TimeUnit};

use crate::catalog::{TIME_COLUMN, TableSchema};
use crate::column::{Column, Values};
use crate::model::{FieldId, FieldType};
use crate::shard::SeriesRows;

/// The Arrow type of a field column.
pub fn field_data_type(field_type: FieldType) -> DataType {
    match field_type {
        FieldType::Float => DataType::Float64,
        FieldType::Integer => DataType::Int64,
        FieldType::Unsigned => DataType::UInt64,
        FieldType::Boolean => DataType::Boolean,
        FieldType::String => DataType::Utf8,
    }
}

/// The Arrow type of the time column.
pub fn time_data_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, None)
}

/// The Arrow type of a tag column.
pub fn tag_data_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The schema of `table` with the fields `fields` (all when `None`), in catalog order.
pub fn table_schema(table: &TableSchema, fields: Option<&[FieldId]>) -> SchemaRef {
    let mut columns = vec![Field::new(TIME_COLUMN, time_data_type(), false)];
    columns.extend(
        table
            .tags
            .iter()
            .map(|tag| Field::new(tag, tag_data_type(), true)),
    );
    columns.extend(
        table
            .fields
            .iter()
            .filter(|f| fields.is_none_or(|wanted| wanted.contains(&f.id)))
            .map(|f| Field::new(&f.name, field_data_type(f.field_type), true)),
    );
    Arc::new(Schema::new(columns))
}

/// Builds one record batch of `series` (rows of one table) with `schema` from
/// [`table_schema`] for the same table and fields.
pub fn to_record_batch(
    table: &TableSchema,
    fields: Option<&[FieldId]>,
    series: &[SeriesRows],
) -> Result<RecordBatch, ArrowError> {
    let schema = table_schema(table, fields);
    let rows: usize = series.iter().map(|s| s.data.rows()).sum();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());

    let times: Vec<i64> = series
        .iter()
        .flat_map(|s| s.data.times.iter().copied())
        .collect();
    columns.push(Arc::new(TimestampNanosecondArray::from(times)));

    for tag in &table.tags {
        columns.push(tag_column(tag, series, rows)?);
    }
    for field in table
        .fields
        .iter()
        .filter(|f| fields.is_none_or(|wanted| wanted.contains(&f.id)))
    {
        columns.push(field_column(field.id, field.field_type, series, rows));
    }
    RecordBatch::try_new(schema, columns)
}

/// One tag as a dictionary column: each distinct value once, a key per row.
fn tag_column(tag: &str, series: &[SeriesRows], rows: usize) -> Result<ArrayRef, ArrowError> {
    let mut dictionary: Vec<&str> = Vec::new();
    let mut index_of: HashMap<&str, i32> = HashMap::new();
    let mut keys: Vec<Option<i32>> = Vec::with_capacity(rows);
    for s in series {
        let value = s
            .tags
            .iter()
            .find(|(k, _)| k == tag)
            .map(|(_, v)| v.as_str());
        let key = value.map(|v| {
            *index_of.entry(v).or_insert_with(|| {
                dictionary.push(v);
                (dictionary.len() - 1) as i32
            })
        });
        keys.extend(std::iter::repeat_n(key, s.data.rows()));
    }
    let values: ArrayRef = Arc::new(StringArray::from(dictionary));
    let array = DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values)?;
    Ok(Arc::new(array))
}

/// One field column, null where a row lacks the field.
fn field_column(
    field: FieldId,
    field_type: FieldType,
    series: &[SeriesRows],
    rows: usize,
) -> ArrayRef {
    macro_rules! collect {
        ($variant:ident, $array:ty, $clone:expr) => {{
            let mut out = Vec::with_capacity(rows);
            for s in series {
                match s.data.column(field) {
                    Some(Column {
                        values: Values::$variant(values),
                        present,
                        ..
                    }) => match present {
                        None => out.extend(values.iter().map(|v| Some($clone(v)))),
                        Some(present) => {
                            let mut next = values.iter();
                            out.extend(
                                present
                                    .iter()
                                    .map(|p| if *p { next.next().map($clone) } else { None }),
                            );
                        }
                    },
                    _ => out.extend(std::iter::repeat_n(None, s.data.rows())),
                }
            }
            Arc::new(<$array>::from(out)) as ArrayRef
        }};
    }
    match field_type {
        FieldType::Float => collect!(Float, Float64Array, |v: &f64| *v),
        FieldType::Integer => collect!(Integer, Int64Array, |v: &i64| *v),
        FieldType::Unsigned => collect!(Unsigned, UInt64Array, |v: &u64| *v),
        FieldType::Boolean => collect!(Boolean, BooleanArray, |v: &bool| *v),
        FieldType::String => collect!(String, StringArray, |v: &String| v.clone()),
    }
}
