//! A Strata table as a Delta table: its columns, and its rows as Arrow batches of them.
//!
//! `time` is a Delta `timestamp` (microseconds, UTC), the finest time every reader of Delta
//! tables knows (Spark has no nanosecond type); `time_nanos` (`short`, 0–999) keeps the
//! nanoseconds within the microsecond, so Strata reads back every row's time exactly:
//! `time × 1000 + time_nanos`. Tags are strings (dictionary-encoded in Parquet), fields keep
//! their type (`double`, `long`, `boolean`, `string`; unsigned integers as
//! `decimal(20,0)`, the only Delta type that holds all of them). `day`, the partition
//! column, is the UTC date of the rows' time.

use std::borrow::Cow;
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
/// Characters Delta does not allow in column names without column mapping, and `%`, which
/// starts an escape of one of them (see [`delta_name`]).
const ESCAPED_CHARS: &[char] = &[' ', ',', ';', '{', '}', '(', ')', '\n', '\t', '=', '%'];

/// A Strata column's name in the lake. Delta refuses some characters in column names
/// (without column mapping, which Spark 3.5 needs extra protocol features to read), and
/// the lake keeps `time`, `time_nanos` and `day` for itself: each refused character and
/// `%` is written as `%` and its UTF-8 bytes in hex, and a kept name has its first
/// character so written (`day` → `%64ay`). Every other name is unchanged, so existing
/// tables keep theirs. [`strata_name`] undoes it.
pub fn delta_name(name: &str) -> Cow<'_, str> {
    let kept = [TIME_COLUMN, NANOS_COLUMN, DAY_COLUMN].contains(&name);
    if !kept && !name.contains(ESCAPED_CHARS) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for (index, c) in name.chars().enumerate() {
        if ESCAPED_CHARS.contains(&c) || (kept && index == 0) {
            let mut bytes = [0u8; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The Strata name of a lake column ([`delta_name`] undone).
pub fn strata_name(delta: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(delta).decode_utf8_lossy()
}

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
    /// The column's name in the lake's files and Delta schema ([`delta_name`]).
    pub fn delta_name(&self) -> Cow<'_, str> {
        match self {
            LakeColumn::Time | LakeColumn::Nanos => Cow::Borrowed(self.name()),
            LakeColumn::Tag(name) | LakeColumn::Field { name, .. } => delta_name(name),
        }
    }

    /// The column's name in Strata.
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
    /// The lake columns of `table`; an error names a column the lake cannot hold.
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
            if name.is_empty() {
                return Err(refuse("a column has no name".into()));
            }
            // (`time` and `time_nanos` are the lake's own: a field may be so named.)
            if columns[2..index].iter().any(|c| c.name() == name) {
                return Err(refuse(format!("column {name:?} is both a tag and a field")));
            }
        }
        let file_schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|c| Field::new(c.delta_name(), c.arrow_type(), c.nullable()))
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
                column.delta_name(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lake_names_are_what_delta_accepts_and_give_strata_names_back() {
        // Plain names keep theirs (the tables tiered before escaping existed).
        for name in ["usage_user", "host", "rack", "time2", "days", "Ünïcode"] {
            assert_eq!(delta_name(name), name);
        }
        assert_eq!(delta_name("day"), "%64ay");
        assert_eq!(delta_name("time"), "%74ime");
        assert_eq!(delta_name("time_nanos"), "%74ime_nanos");
        assert_eq!(delta_name("usage idle"), "usage%20idle");
        assert_eq!(delta_name("50%"), "50%25");
        // Seeded names over an alphabet of the escaped characters, `%`, hex digits,
        // letters and a two-byte character: every one round-trips, and no lake name holds
        // a character Delta refuses or is one the lake keeps.
        let alphabet: Vec<char> = " ,;{}()\n\t=%2Fdaytime_né".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut names: Vec<String> = ["day", "time", "time_nanos", "%64ay"]
            .map(String::from)
            .to_vec();
        for _ in 0..5000 {
            let len = 1 + (next() % 12) as usize;
            names.push(
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        for name in &names {
            let lake = delta_name(name);
            assert_eq!(strata_name(&lake), name.as_str(), "{name:?} -> {lake:?}");
            assert!(
                !lake.contains(&ESCAPED_CHARS[..ESCAPED_CHARS.len() - 1]),
                "{name:?} -> {lake:?}"
            );
            assert!(
                ![TIME_COLUMN, NANOS_COLUMN, DAY_COLUMN].contains(&lake.as_ref()),
                "{name:?} -> {lake:?}"
            );
        }
    }
}
