//! Arrow results as Postgres rows: each Arrow type's Postgres type ([`pg_type`]), the
//! row description ([`fields`]) and the `DataRow`s of a batch ([`rows`]), in text or
//! binary format per column as the client asked.
//!
//! Timestamps go with microseconds, as Postgres keeps them: the nanoseconds below are
//! cut, not rounded. Lists of scalars go as one-dimensional arrays (`encode_array`),
//! intervals and durations as `interval` (`interval`). Types without a Postgres
//! counterpart (lists of lists, structs, decimals) go as `text` in Arrow's display form.

use std::error::Error;
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Date32Array, Float32Array, Float64Array, Int16Array,
    Int32Array, Int64Array, LargeBinaryArray, RecordBatch, StringArray, TimestampMicrosecondArray,
    UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Schema, TimeUnit};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;
use postgres_types::{IsNull, Kind, ToSql, to_sql_checked};
use strata_query::pg_catalog::types::pg_type_of;

use super::encode_array::ArrayColumn;
use super::float_text;
use super::interval::IntervalColumn;

/// Microseconds from the Unix epoch to Postgres's, 2000-01-01: binary timestamps count
/// from it.
pub(super) const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// The Postgres type a column of `data_type` is sent as: the mapping `pg_catalog` shows
/// (`strata_query::pg_catalog::types::pg_type_of`).
pub(crate) fn pg_type(data_type: &DataType) -> Type {
    Type::from_oid(pg_type_of(data_type).oid).unwrap_or(Type::TEXT)
}

/// The row description of `schema`; `format` says which columns the client wants in
/// binary.
pub(crate) fn fields(schema: &Schema, format: &Format) -> Vec<FieldInfo> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            FieldInfo::new(
                field.name().clone(),
                None,
                None,
                pg_type(field.data_type()),
                format.format_for(i),
            )
        })
        .collect()
}

/// The rows of `batch` as `DataRow`s described by `fields`. Every row is written into one
/// buffer per batch and split off it, each field as its length then its bytes (text or
/// binary, per the field's format).
pub(crate) fn rows(
    batch: &RecordBatch,
    fields: &Arc<Vec<FieldInfo>>,
) -> PgWireResult<Vec<DataRow>> {
    if batch.num_columns() != fields.len() {
        return Err(internal(format!(
            "a result batch has {} columns where {} were described",
            batch.num_columns(),
            fields.len()
        )));
    }
    // How each column is written is settled once per batch, not per value.
    let columns: Vec<(Column, &FieldInfo, Encoding)> = batch
        .columns()
        .iter()
        .zip(fields.iter())
        .map(|(array, field)| {
            Ok((
                Column::new(array, field.datatype())?,
                field,
                Encoding::of(field),
            ))
        })
        .collect::<PgWireResult<_>>()?;
    let field_count = i16::try_from(fields.len()).map_err(|_| {
        internal(format!(
            "{} columns are more than a row can hold",
            fields.len()
        ))
    })?;
    let mut buffer = BytesMut::with_capacity(batch.num_rows() * (16 + 12 * fields.len()));
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        for (column, field, how) in &columns {
            column
                .put(row, *how, &mut buffer)
                .map_err(|e| internal(format!("cannot encode {}: {e}", field.name())))?;
        }
        out.push(DataRow::new(buffer.split(), field_count));
    }
    Ok(out)
}

/// What encoding a value can fail with.
pub(super) type EncodeError = Box<dyn Error + Sync + Send>;

/// How a value is written: in binary or text, as which Postgres type, with the session's
/// text options. A field's comes from its description; an array's elements get their own.
#[derive(Clone, Copy)]
pub(super) struct Encoding<'a> {
    pub binary: bool,
    pub ty: &'a Type,
    pub options: &'a FormatOptions,
}

impl<'a> Encoding<'a> {
    #[inline]
    fn of(field: &'a FieldInfo) -> Self {
        Encoding {
            binary: field.format() == FieldFormat::Binary,
            ty: field.datatype(),
            options: field.format_options(),
        }
    }
}

/// Writes one value as a field (or an array's element) is written: its length (-1 for
/// NULL) then `value` as `how` says.
#[inline(always)]
fn put<T: ToSql + ToSqlText>(
    value: Option<T>,
    how: Encoding<'_>,
    out: &mut BytesMut,
) -> Result<(), EncodeError> {
    let Some(value) = value else {
        out.put_i32(-1);
        return Ok(());
    };
    let at = out.len();
    out.put_i32(0);
    if how.binary {
        value.to_sql(how.ty, out)?;
    } else {
        value.to_sql_text(how.ty, out, how.options)?;
    }
    finish_length(out, at)
}

/// Fills in the length of the value written after the 4 bytes at `at`.
#[inline(always)]
pub(super) fn finish_length(out: &mut BytesMut, at: usize) -> Result<(), EncodeError> {
    let len = i32::try_from(out.len() - at - 4).map_err(|_| "a value is over 2 GiB")?;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

pub(super) fn internal(message: String) -> PgWireError {
    PgWireError::UserError(Box::new(pgwire::error::ErrorInfo::new(
        "ERROR".into(),
        "XX000".into(),
        message,
    )))
}

/// One result column, typed as the Rust value its Postgres type is encoded from.
pub(super) enum Column {
    Bool(BooleanArray),
    Int16(Int16Array),
    Int32(Int32Array),
    Int64(Int64Array),
    Numeric(UInt64Array),
    Float32(Float32Array),
    Float64(Float64Array),
    Text(StringArray),
    Bytes(LargeBinaryArray),
    Timestamp(TimestampMicrosecondArray, bool),
    Date(Date32Array),
    /// Intervals and durations.
    Interval(IntervalColumn),
    /// A list sent as a one-dimensional array.
    Array(Box<ArrayColumn>),
}

impl Column {
    /// `array` ready to encode as `pg`: integers widened, timestamps in microseconds,
    /// lists as arrays of their elements, dictionaries and other types as strings.
    pub(super) fn new(array: &ArrayRef, pg: &Type) -> PgWireResult<Self> {
        if let Kind::Array(element) = pg.kind() {
            return Ok(Column::Array(Box::new(ArrayColumn::new(array, element)?)));
        }
        let to = |data_type: DataType| {
            cast(array, &data_type).map_err(|e| internal(format!("cannot encode a column: {e}")))
        };
        Ok(match *pg {
            Type::BOOL => Column::Bool(to(DataType::Boolean)?.as_boolean().clone()),
            Type::INT2 => Column::Int16(to(DataType::Int16)?.as_primitive().clone()),
            Type::INT4 => Column::Int32(to(DataType::Int32)?.as_primitive().clone()),
            Type::INT8 => Column::Int64(to(DataType::Int64)?.as_primitive().clone()),
            Type::NUMERIC => Column::Numeric(to(DataType::UInt64)?.as_primitive().clone()),
            Type::FLOAT4 => Column::Float32(to(DataType::Float32)?.as_primitive().clone()),
            Type::FLOAT8 => Column::Float64(to(DataType::Float64)?.as_primitive().clone()),
            Type::TIMESTAMP | Type::TIMESTAMPTZ => Column::Timestamp(
                to(DataType::Timestamp(TimeUnit::Microsecond, None))?
                    .as_primitive()
                    .clone(),
                *pg == Type::TIMESTAMPTZ,
            ),
            Type::DATE => Column::Date(to(DataType::Date32)?.as_primitive().clone()),
            Type::INTERVAL => Column::Interval(IntervalColumn::new(array).ok_or_else(|| {
                internal(format!(
                    "cannot encode {} as an interval",
                    array.data_type()
                ))
            })?),
            Type::BYTEA => Column::Bytes(to(DataType::LargeBinary)?.as_binary().clone()),
            _ => Column::Text(to(DataType::Utf8)?.as_string().clone()),
        })
    }

    /// Writes `row`'s value, its length first, as `how` says. Inlined into the loop over a
    /// batch's rows, as it was before arrays needed it elsewhere: out of line it cost 6% more
    /// instructions per row of a binary result (callgrind).
    #[inline(always)]
    pub(super) fn put(
        &self,
        row: usize,
        how: Encoding<'_>,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        fn at<'a, A: Array, T>(
            array: &'a A,
            row: usize,
            value: impl FnOnce(&'a A) -> T,
        ) -> Option<T> {
            array.is_valid(row).then(|| value(array))
        }
        match self {
            Column::Bool(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Int16(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Int32(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Int64(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Numeric(a) => put(at(a, row, |a| Numeric(a.value(row))), how, out),
            Column::Float32(a) => put(at(a, row, |a| Float4(a.value(row))), how, out),
            Column::Float64(a) => put(at(a, row, |a| Float8(a.value(row))), how, out),
            Column::Text(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Bytes(a) => put(at(a, row, |a| a.value(row)), how, out),
            Column::Timestamp(a, zoned) => put(
                at(a, row, |a| Timestamp {
                    micros: a.value(row),
                    zoned: *zoned,
                }),
                how,
                out,
            ),
            Column::Date(a) => put(at(a, row, |a| Date(a.value(row))), how, out),
            Column::Interval(a) => put(a.value(row), how, out),
            Column::Array(a) => a.put(row, how, out),
        }
    }
}

/// A `uint64` sent as `numeric`.
#[derive(Debug, Clone, Copy)]
struct Numeric(u64);

impl ToSql for Numeric {
    /// Postgres's binary numeric: digit count, weight, sign, display scale, then base-10000
    /// digits, most significant first.
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        let mut digits = Vec::new();
        let mut rest = self.0;
        while rest > 0 {
            digits.push((rest % 10_000) as i16);
            rest /= 10_000;
        }
        let weight = digits.len() as i16 - 1;
        // Trailing zero digits are implied by the weight.
        let zeros = digits.iter().take_while(|&&d| d == 0).count();
        let digits: Vec<i16> = digits[zeros..].iter().rev().copied().collect();
        out.put_i16(digits.len() as i16);
        out.put_i16(weight.max(0));
        out.put_u16(0x0000); // positive
        out.put_i16(0); // display scale
        for digit in digits {
            out.put_i16(digit);
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }

    to_sql_checked!();
}

impl ToSqlText for Numeric {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_slice(itoa::Buffer::new().format(self.0).as_bytes());
        Ok(IsNull::No)
    }
}

/// A float newtype: binary as the float's own, text as Postgres writes it
/// ([`float_text`]).
macro_rules! pg_float {
    ($(#[$doc:meta])* $name:ident, $float:ty, $pg:ident, $put_text:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        struct $name($float);

        impl ToSql for $name {
            fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, EncodeError> {
                self.0.to_sql(ty, out)
            }

            fn accepts(ty: &Type) -> bool {
                *ty == Type::$pg
            }

            to_sql_checked!();
        }

        impl ToSqlText for $name {
            fn to_sql_text(
                &self,
                _ty: &Type,
                out: &mut BytesMut,
                _format: &FormatOptions,
            ) -> Result<IsNull, EncodeError> {
                $put_text(self.0, out);
                Ok(IsNull::No)
            }
        }
    };
}

pg_float!(
    /// A `float8`.
    Float8,
    f64,
    FLOAT8,
    float_text::put_f64
);
pg_float!(
    /// A `float4`.
    Float4,
    f32,
    FLOAT4,
    float_text::put_f32
);

/// Writes a second's fraction of `micros` microseconds as Postgres does in a timestamp or
/// an interval: nothing for none, else a point and six digits with trailing zeros cut
/// (`.25`, `.000001`).
pub(super) fn put_micros_fraction(micros: u32, out: &mut BytesMut) {
    if micros > 0 {
        let digits = format!("{micros:06}");
        out.put_u8(b'.');
        out.put_slice(digits.trim_end_matches('0').as_bytes());
    }
}

/// A timestamp in microseconds since the Unix epoch; `zoned` for `timestamptz` (UTC).
#[derive(Debug, Clone, Copy)]
struct Timestamp {
    micros: i64,
    zoned: bool,
}

impl ToSql for Timestamp {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_i64(self.micros.saturating_sub(POSTGRES_EPOCH_MICROS));
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMP || *ty == Type::TIMESTAMPTZ
    }

    to_sql_checked!();
}

impl ToSqlText for Timestamp {
    /// As Postgres prints it (DateStyle ISO): `2016-01-01 00:00:00`, a fraction only when
    /// there is one (trailing zeros cut), `+00` after a `timestamptz`.
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        use std::fmt::Write;
        let Some(at) = chrono::DateTime::from_timestamp_micros(self.micros) else {
            return Err(format!("timestamp {} µs is out of range", self.micros).into());
        };
        write!(out, "{}", at.format("%Y-%m-%d %H:%M:%S"))?;
        put_micros_fraction(at.timestamp_subsec_micros(), out);
        if self.zoned {
            out.put_slice(b"+00");
        }
        Ok(IsNull::No)
    }
}

/// A date in days since the Unix epoch.
#[derive(Debug, Clone, Copy)]
struct Date(i32);

impl ToSql for Date {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        // 2000-01-01 is day 10,957 of the Unix epoch.
        out.put_i32(self.0 - 10_957);
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::DATE
    }

    to_sql_checked!();
}

impl ToSqlText for Date {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _format: &FormatOptions,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        use std::fmt::Write;
        let day = chrono::DateTime::from_timestamp(i64::from(self.0) * 86_400, 0)
            .ok_or_else(|| format!("date {} is out of range", self.0))?;
        write!(out, "{}", day.format("%Y-%m-%d"))?;
        Ok(IsNull::No)
    }
}
