//! Postgres types of Strata's columns: the one mapping both the Postgres wire (row
//! descriptions, encoding) and `pg_catalog` (`pg_attribute.atttypid`, `format_type`) use.

use datafusion::arrow::datatypes::DataType;

/// A Postgres type this server names: its oid, `pg_type.typname`, `format_type` text,
/// `typlen` (-1: variable), and how it pairs with its array type.
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
    /// `pg_type.typelem`: an array type's element type; 0 for the others.
    pub element: u32,
    /// `pg_type.typarray`: the array type of this element type; 0 for arrays.
    pub array: u32,
}

const fn t(oid: u32, name: &'static str, display: &'static str, len: i16, array: u32) -> PgType {
    PgType {
        oid,
        name,
        display,
        len,
        element: 0,
        array,
    }
}

/// An array type, as Postgres names it: `_int8`, shown as `bigint[]`.
const fn a(oid: u32, name: &'static str, display: &'static str, element: u32) -> PgType {
    PgType {
        oid,
        name,
        display,
        len: -1,
        element,
        array: 0,
    }
}

/// Every type Strata's columns map to: the scalars, then their arrays (Arrow lists).
pub const PG_TYPES: &[PgType] = &[
    t(16, "bool", "boolean", 1, 1000),
    t(17, "bytea", "bytea", -1, 1001),
    t(20, "int8", "bigint", 8, 1016),
    t(21, "int2", "smallint", 2, 1005),
    t(23, "int4", "integer", 4, 1007),
    t(25, "text", "text", -1, 1009),
    t(700, "float4", "real", 4, 1021),
    t(701, "float8", "double precision", 8, 1022),
    t(1082, "date", "date", 4, 1182),
    t(1114, "timestamp", "timestamp without time zone", 8, 1115),
    t(1184, "timestamptz", "timestamp with time zone", 8, 1185),
    t(1700, "numeric", "numeric", -1, 1231),
    t(1186, "interval", "interval", 16, 1187),
    // No column is sent as `name`; clients look it up (pgjdbc reads its length).
    t(19, "name", "name", 64, 1003),
    a(1000, "_bool", "boolean[]", 16),
    a(1001, "_bytea", "bytea[]", 17),
    a(1016, "_int8", "bigint[]", 20),
    a(1005, "_int2", "smallint[]", 21),
    a(1007, "_int4", "integer[]", 23),
    a(1009, "_text", "text[]", 25),
    a(1021, "_float4", "real[]", 700),
    a(1022, "_float8", "double precision[]", 701),
    a(1182, "_date", "date[]", 1082),
    a(1115, "_timestamp", "timestamp without time zone[]", 1114),
    a(1185, "_timestamptz", "timestamp with time zone[]", 1184),
    a(1231, "_numeric", "numeric[]", 1700),
    a(1187, "_interval", "interval[]", 1186),
    a(1003, "_name", "name[]", 19),
];

/// The Postgres type a column of `data_type` is sent as: booleans `bool`; signed integers
/// `int2`/`int4`/`int8`; unsigned ones the next wider signed type, `uint64` `numeric` (no
/// Postgres integer holds 2⁶⁴−1); floats `float4`/`float8`; timestamps `timestamp`, or
/// `timestamptz` with a zone; dates `date`; intervals and durations `interval`; binary
/// `bytea`; a list of any of these or of strings the one-dimensional array of its element's
/// type (`bigint[]`, `text[]`); strings, dictionary-encoded tags and anything else (a list
/// of lists, a struct) `text`.
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
        DataType::Interval(_) | DataType::Duration(_) => 1186,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => 17,
        DataType::Dictionary(_, values) => return pg_type_of(values),
        DataType::List(element)
        | DataType::LargeList(element)
        | DataType::FixedSizeList(element, _)
            if is_array_element(element.data_type()) =>
        {
            pg_type_of(element.data_type()).array
        }
        _ => 25,
    };
    pg_type(oid).unwrap_or(PG_TYPES[5])
}

/// Whether a list of `data_type` is sent as a Postgres array: its elements are a scalar
/// type of [`pg_type_of`], strings included, not text for want of a better type.
fn is_array_element(data_type: &DataType) -> bool {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => is_array_element(values),
        other => pg_type_of(other).oid != 25,
    }
}

/// The type with `oid`, if Strata names it.
pub fn pg_type(oid: u32) -> Option<PgType> {
    PG_TYPES.iter().copied().find(|t| t.oid == oid)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};

    use super::{PG_TYPES, pg_type, pg_type_of};

    fn list(element: DataType) -> DataType {
        DataType::List(Arc::new(Field::new_list_field(element, true)))
    }

    #[test]
    fn lists_of_scalars_are_arrays_and_other_lists_text() {
        assert_eq!(pg_type_of(&list(DataType::Int64)).oid, 1016);
        assert_eq!(pg_type_of(&list(DataType::Utf8)).name, "_text");
        let tags = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        assert_eq!(pg_type_of(&list(tags)).display, "text[]");
        let times = DataType::Timestamp(TimeUnit::Nanosecond, None);
        assert_eq!(pg_type_of(&list(times)).oid, 1115);
        let fixed =
            DataType::FixedSizeList(Arc::new(Field::new_list_field(DataType::Float64, true)), 2);
        assert_eq!(pg_type_of(&fixed).oid, 1022);
        assert_eq!(pg_type_of(&list(list(DataType::Int64))).oid, 25);
        assert_eq!(pg_type_of(&list(DataType::Null)).oid, 25);
        let durations = DataType::Duration(TimeUnit::Nanosecond);
        assert_eq!(pg_type_of(&durations).name, "interval");
        assert_eq!(pg_type_of(&list(durations)).display, "interval[]");
    }

    #[test]
    fn every_scalar_names_an_array_of_it_and_back() {
        for scalar in PG_TYPES.iter().filter(|t| t.element == 0) {
            let array = pg_type(scalar.array).unwrap();
            assert_eq!(array.element, scalar.oid, "{}", scalar.name);
            assert_eq!(array.name, format!("_{}", scalar.name));
            assert_eq!(array.display, format!("{}[]", scalar.display));
        }
        assert_eq!(PG_TYPES.iter().filter(|t| t.element != 0).count(), 14);
    }
}
