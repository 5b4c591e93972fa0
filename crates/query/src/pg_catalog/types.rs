//! Postgres types of Strata's columns: the one mapping both the Postgres wire (row
//! descriptions, encoding) and `pg_catalog` (`pg_attribute.atttypid`, `format_type`) use.

use datafusion::arrow::datatypes::DataType;

/// A Postgres type this server names: its oid, `pg_type.typname`, `format_type` text and
/// `typlen` (-1: variable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgType {
    /// `pg_type.oid`.
    pub oid: u32,
    /// `pg_type.typname`.
    pub name: &'static str,
    /// What `format_type` prints.
    pub display: &'static str,
    /// `pg_type.typlen`.
    pub len: i16,
}

const fn t(oid: u32, name: &'static str, display: &'static str, len: i16) -> PgType {
    PgType {
        oid,
        name,
        display,
        len,
    }
}

/// Every type Strata's columns map to.
pub const PG_TYPES: &[PgType] = &[
    t(16, "bool", "boolean", 1),
    t(17, "bytea", "bytea", -1),
    t(20, "int8", "bigint", 8),
    t(21, "int2", "smallint", 2),
    t(23, "int4", "integer", 4),
    t(25, "text", "text", -1),
    t(700, "float4", "real", 4),
    t(701, "float8", "double precision", 8),
    t(1082, "date", "date", 4),
    t(1114, "timestamp", "timestamp without time zone", 8),
    t(1184, "timestamptz", "timestamp with time zone", 8),
    t(1700, "numeric", "numeric", -1),
];

/// The Postgres type a column of `data_type` is sent as: booleans `bool`; signed integers
/// `int2`/`int4`/`int8`; unsigned ones the next wider signed type, `uint64` `numeric` (no
/// Postgres integer holds 2⁶⁴−1); floats `float4`/`float8`; timestamps `timestamp`, or
/// `timestamptz` with a zone; dates `date`; binary `bytea`; strings, dictionary-encoded
/// tags and anything else `text`.
pub fn pg_type_of(data_type: &DataType) -> PgType {
    let oid = match data_type {
        DataType::Boolean => 16,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => 21,
        DataType::Int32 | DataType::UInt16 => 23,
        DataType::Int64 | DataType::UInt32 => 20,
        DataType::UInt64 => 1700,
        DataType::Float16 | DataType::Float32 => 700,
        DataType::Float64 => 701,
        DataType::Timestamp(_, None) => 1114,
        DataType::Timestamp(_, Some(_)) => 1184,
        DataType::Date32 | DataType::Date64 => 1082,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => 17,
        DataType::Dictionary(_, values) => return pg_type_of(values),
        _ => 25,
    };
    pg_type(oid).unwrap_or(PG_TYPES[5])
}

/// The type with `oid`, if Strata names it.
pub fn pg_type(oid: u32) -> Option<PgType> {
    PG_TYPES.iter().copied().find(|t| t.oid == oid)
}
