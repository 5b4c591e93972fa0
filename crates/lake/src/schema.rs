//! A Strata table as a Delta table: its columns, and its rows as Arrow batches of them.
//!
//! `time` is a Delta `timestamp` (microseconds, UTC), the finest time every reader of Delta
//! tables knows (Spark has no nanosecond type); `time_nanos` (`short`, 0–999) keeps the
//! nanoseconds within the microsecond, so Strata reads back every row's time exactly:
//! `time × 1000 + time_nanos`. Tags are strings (dictionary-encoded in Parquet), fields keep
//! their type (`double`, `long`, `boolean`, `string`; unsigned integers as
//! `decimal(20,0)`, the only Delta type that holds all of them). `day`, the partition
//! column, is the UTC date of the rows' time.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int16Array, Int64Array, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef, TimeUnit};
use deltalake_core::kernel::{DataType, StructField};
use strata_storage::SeriesRows;
use strata_storage::catalog::TableSchema;
use strata_storage::column::{Column, Values};
use strata_storage::model::{FieldId, FieldType};

use crate::error::LakeError;

/// The time column: microseconds since the epoch, UTC.
pub const TIME_COLUMN: &str = "time";
/// The nanoseconds within the microsecond of `time` (0–999).
pub const NANOS_COLUMN: &str = "time_nanos";
/// The partition column: the UTC date of `time`.
pub const DAY_COLUMN: &str = "day";
/// Characters Delta does not allow in column names without column mapping.
const INVALID_NAME_CHARS: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '='];

/// One column of a table's lake files, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum LakeColumn {
    /// `time` (microseconds).
    Time,
    /// `time_nanos`.
    Nanos,
    /// A tag.
    Tag(String),
    /// A field.
    Field {
        /// Its id in the catalog.
        id: FieldId,
        /// Its name.
        name: String,
        /// Its type.
        field_type: FieldType,
    },
}

impl LakeColumn {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            LakeColumn::Time => TIME_COLUMN,
            LakeColumn::Nanos => NANOS_COLUMN,
            LakeColumn::Tag(name) | LakeColumn::Field { name, .. } => name,
        }
    }

    fn arrow_type(&self) -> ArrowType {
        match self {
            LakeColumn::Time => ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            LakeColumn::Nanos => ArrowType::Int16,
            LakeColumn::Tag(_) => ArrowType::Utf8,
            LakeColumn::Field { field_type, .. } => match field_type {
                FieldType::Float => ArrowType::Float64,
                FieldType::Integer => ArrowType::Int64,
                FieldType::Unsigned => ArrowType::Decimal128(20, 0),
                FieldType::Boolean => ArrowType::Boolean,
                FieldType::String => ArrowType::Utf8,
            },
        }
    }

    fn delta_type(&self) -> Result<DataType, LakeError> {
        Ok(match self {
            LakeColumn::Time => DataType::TIMESTAMP,
            LakeColumn::Nanos => DataType::SHORT,
            LakeColumn::Tag(_) => DataType::STRING,
            LakeColumn::Field { field_type, .. } => match field_type {
                FieldType::Float => DataType::DOUBLE,
                FieldType::Integer => DataType::LONG,
                FieldType::Unsigned => DataType::decimal(20, 0)
                    .map_err(|e| LakeError::Invalid(format!("decimal(20,0): {e}")))?,
                FieldType::Boolean => DataType::BOOLEAN,
                FieldType::String => DataType::STRING,
            },
        })
    }

    fn nullable(&self) -> bool {
        matches!(self, LakeColumn::Tag(_) | LakeColumn::Field { .. })
    }
}

/// A table's lake columns.
#[derive(Debug, Clone)]
pub struct LakeSchema {
    /// `time`, `time_nanos`, the tags, the fields (catalog order).
    pub columns: Vec<LakeColumn>,
    /// The Parquet files' schema (every column but `day`).
    pub file_schema: SchemaRef,
}

impl LakeSchema {
    /// The lake columns of `table`; an error names a column Delta cannot hold.
    pub fn of(table: &TableSchema) -> Result<Self, LakeError> {
        let mut columns = vec![LakeColumn::Time, LakeColumn::Nanos];
        columns.extend(table.tags.iter().cloned().map(LakeColumn::Tag));
        columns.extend(table.fields.iter().map(|f| LakeColumn::Field {
            id: f.id,
            name: f.name.clone(),
            field_type: f.field_type,
        }));
        let refuse = |reason: String| LakeError::Table {
            table: format!("{}.{}", table.database, table.name),
            reason,
        };
        for (index, column) in columns.iter().enumerate().skip(2) {
            let name = column.name();
            if [TIME_COLUMN, NANOS_COLUMN, DAY_COLUMN].contains(&name) {
                return Err(refuse(format!(
                    "column {name:?} has a name the lake keeps for itself"
                )));
            }
            if name.contains(INVALID_NAME_CHARS) || name.is_empty() {
                return Err(refuse(format!(
                    "column {name:?} has a character Delta Lake does not allow in names (one of {INVALID_NAME_CHARS:?})"
                )));
            }
            if columns[..index].iter().any(|c| c.name() == name) {
                return Err(refuse(format!("column {name:?} is both a tag and a field")));
            }
        }
        let file_schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|c| Field::new(c.name(), c.arrow_type(), c.nullable()))
                .collect::<Vec<_>>(),
        ));
        Ok(Self {
            columns,
            file_schema,
        })
    }

    /// The tags, in column order.
    pub fn tags(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter_map(|c| match c {
                LakeColumn::Tag(name) => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The Delta table's columns: the file columns, then `day`.
    pub fn delta_fields(&self) -> Result<Vec<StructField>, LakeError> {
        let mut fields = Vec::with_capacity(self.columns.len() + 1);
        for column in &self.columns {
            fields.push(StructField::new(
                column.name(),
                column.delta_type()?,
                column.nullable(),
            ));
        }
        fields.push(StructField::new(DAY_COLUMN, DataType::DATE, false));
        Ok(fields)
    }

    /// The rows of `series` from `from` (inclusive) to `to` (exclusive) of each, in the
    /// file schema: the series one after the other, each in time order.
    pub fn batch(&self, series: &[(&SeriesRows, usize, usize)]) -> Result<RecordBatch, LakeError> {
        let rows: usize = series.iter().map(|(_, from, to)| to - from).sum();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            arrays.push(match column {
                LakeColumn::Time => {
                    let mut out = Vec::with_capacity(rows);
                    for (s, from, to) in series {
                        out.extend(s.data.times[*from..*to].iter().map(|t| t.div_euclid(1000)));
                    }
                    Arc::new(TimestampMicrosecondArray::from(out).with_timezone("UTC"))
                }
                LakeColumn::Nanos => {
                    let mut out = Vec::with_capacity(rows);
                    for (s, from, to) in series {
                        out.extend(
                            s.data.times[*from..*to]
                                .iter()
                                .map(|t| t.rem_euclid(1000) as i16),
                        );
                    }
                    Arc::new(Int16Array::from(out))
                }
                LakeColumn::Tag(key) => {
                    let mut out: Vec<Option<&str>> = Vec::with_capacity(rows);
                    for (s, from, to) in series {
                        let value = s
                            .tags
                            .iter()
                            .find(|(k, _)| k == key)
                            .map(|(_, v)| v.as_str());
                        out.extend(std::iter::repeat_n(value, to - from));
                    }
                    Arc::new(StringArray::from(out))
                }
                LakeColumn::Field { id, field_type, .. } => field_array(*id, *field_type, series)?,
            });
        }
        Ok(RecordBatch::try_new(Arc::clone(&self.file_schema), arrays)?)
    }
}

/// One field's values over `series`' row ranges, null where a row lacks the field.
fn field_array(
    field: FieldId,
    field_type: FieldType,
    series: &[(&SeriesRows, usize, usize)],
) -> Result<ArrayRef, LakeError> {
    macro_rules! collect {
        ($variant:ident, $convert:expr) => {{
            let mut out = Vec::new();
            for (s, from, to) in series {
                match s.data.column(field) {
                    Some(
                        column @ Column {
                            values: Values::$variant(values),
                            ..
                        },
                    ) => {
                        let indexes = column.value_indexes(s.data.rows());
                        out.extend(
                            indexes[*from..*to]
                                .iter()
                                .map(|i| i.map(|i| $convert(&values[i]))),
                        );
                    }
                    _ => out.extend(std::iter::repeat_n(None, to - from)),
                }
            }
            out
        }};
    }
    Ok(match field_type {
        FieldType::Float => Arc::new(Float64Array::from(collect!(Float, |v: &f64| *v))),
        FieldType::Integer => Arc::new(Int64Array::from(collect!(Integer, |v: &i64| *v))),
        FieldType::Unsigned => Arc::new(
            Decimal128Array::from(collect!(Unsigned, |v: &u64| i128::from(*v)))
                .with_precision_and_scale(20, 0)?,
        ),
        FieldType::Boolean => Arc::new(BooleanArray::from(collect!(Boolean, |v: &bool| *v))),
        FieldType::String => Arc::new(StringArray::from(collect!(String, |v: &String| v.clone()))),
    })
}
