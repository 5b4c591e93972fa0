//! Arrow lists as Postgres one-dimensional arrays (`array_agg`, `make_array`,
//! `string_to_array`): `text[]`, `bigint[]`, … (`strata_query::pg_catalog::types` names
//! which), in the format the client asked for each column.
//!
//! - Text, as Postgres's `array_out` prints it: `{a,"b c",NULL}`. An element is quoted when
//!   it is empty, is `NULL` in any case, or holds `{`, `}`, `,`, `"`, `\` or white space;
//!   in quotes `"` and `\` are escaped with `\`.
//! - Binary, as `array_send`: dimensions (0 for an empty array, else 1), whether any
//!   element is NULL, the element type's oid, the length and lower bound (1), then each
//!   element as a field is sent: its length (-1 for NULL) and its binary value.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use pgwire::api::Type;
use pgwire::error::PgWireResult;

use super::encode::{Column, EncodeError, Encoding, finish_length};

/// A list column and its elements, ready to encode.
pub(super) struct ArrayColumn {
    lists: ListArray,
    elements: Column,
    element: Type,
}

impl ArrayColumn {
    /// `array` (a list, large list or fixed-size list) as an array of `element`.
    pub(super) fn new(array: &ArrayRef, element: &Type) -> PgWireResult<Self> {
        let item = match array.data_type() {
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                item.data_type().clone()
            }
            other => other.clone(),
        };
        let as_list = DataType::List(Arc::new(Field::new_list_field(item, true)));
        let lists = cast(array, &as_list)
            .map_err(|e| super::encode::internal(format!("cannot encode a list column: {e}")))?
            .as_list::<i32>()
            .clone();
        let elements = Column::new(lists.values(), element)?;
        Ok(ArrayColumn {
            lists,
            elements,
            element: element.clone(),
        })
    }

    /// Writes `row`'s array, its length first, as `how` says.
    pub(super) fn put(
        &self,
        row: usize,
        how: Encoding<'_>,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        if self.lists.is_null(row) {
            out.put_i32(-1);
            return Ok(());
        }
        let offsets = self.lists.value_offsets();
        let items = offsets[row] as usize..offsets[row + 1] as usize;
        let element = Encoding {
            ty: &self.element,
            ..how
        };
        let at = out.len();
        out.put_i32(0);
        if how.binary {
            self.put_binary(items, element, out)?;
        } else {
            self.put_text(items, element, out)?;
        }
        finish_length(out, at)
    }

    fn put_binary(
        &self,
        items: std::ops::Range<usize>,
        element: Encoding<'_>,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        let values = self.lists.values();
        let has_null = items.clone().any(|i| values.is_null(i));
        out.put_i32(i32::from(!items.is_empty()));
        out.put_i32(i32::from(has_null));
        out.put_u32(self.element.oid());
        if !items.is_empty() {
            out.put_i32(i32::try_from(items.len()).map_err(|_| "an array is too long")?);
            out.put_i32(1);
        }
        for i in items {
            self.elements.put(i, element, out)?;
        }
        Ok(())
    }

    fn put_text(
        &self,
        items: std::ops::Range<usize>,
        element: Encoding<'_>,
        out: &mut BytesMut,
    ) -> Result<(), EncodeError> {
        let mut scratch = BytesMut::new();
        out.put_u8(b'{');
        for (n, i) in items.enumerate() {
            if n > 0 {
                out.put_u8(b',');
            }
            scratch.clear();
            self.elements.put(i, element, &mut scratch)?;
            if scratch[..4] == (-1i32).to_be_bytes() {
                out.put_slice(b"NULL");
            } else {
                put_element_text(&scratch[4..], out);
            }
        }
        out.put_u8(b'}');
        Ok(())
    }
}

/// Appends one element's text to an array's, quoted where `array_in` needs it.
fn put_element_text(text: &[u8], out: &mut BytesMut) {
    let quote = text.is_empty()
        || text.eq_ignore_ascii_case(b"NULL")
        || text.iter().any(|&b| {
            matches!(b, b'{' | b'}' | b',' | b'"' | b'\\') || b.is_ascii_whitespace() || b == 0x0b
        });
    if !quote {
        out.put_slice(text);
        return;
    }
    out.put_u8(b'"');
    for &b in text {
        if b == b'"' || b == b'\\' {
            out.put_u8(b'\\');
        }
        out.put_u8(b);
    }
    out.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use bytes::BytesMut;
    use datafusion::arrow::array::{
        ArrayRef, Int64Builder, LargeListBuilder, ListBuilder, StringBuilder,
        TimestampNanosecondBuilder,
    };
    use pgwire::api::Type;
    use pgwire::types::format::FormatOptions;

    use super::ArrayColumn;
    use crate::pg::encode::Encoding;

    /// Each row of `array` as an array of `element`, in text or binary, with its length
    /// prefix checked and cut; `None` for NULL.
    fn encode(array: ArrayRef, element: &Type, binary: bool) -> Vec<Option<Vec<u8>>> {
        let column = ArrayColumn::new(&array, element).unwrap();
        let options = FormatOptions::default();
        let array_type = Type::from_oid(match element.oid() {
            25 => 1009,
            20 => 1016,
            _ => 1115,
        })
        .unwrap();
        let how = Encoding {
            binary,
            ty: &array_type,
            options: &options,
        };
        (0..array.len())
            .map(|row| {
                let mut out = BytesMut::new();
                column.put(row, how, &mut out).unwrap();
                let len = i32::from_be_bytes(out[..4].try_into().unwrap());
                if len < 0 {
                    assert_eq!(out.len(), 4);
                    return None;
                }
                assert_eq!(len as usize, out.len() - 4);
                Some(out[4..].to_vec())
            })
            .collect()
    }

    fn texts(rows: &[&[Option<&str>]], null_row: Option<usize>) -> ArrayRef {
        let mut b = ListBuilder::new(StringBuilder::new());
        for (i, row) in rows.iter().enumerate() {
            for v in *row {
                b.values().append_option(*v);
            }
            b.append(null_row != Some(i));
        }
        Arc::new(b.finish())
    }

    fn text_of(rows: Vec<Option<Vec<u8>>>) -> Vec<Option<String>> {
        rows.into_iter()
            .map(|r| r.map(|b| String::from_utf8(b).unwrap()))
            .collect()
    }

    #[test]
    fn text_arrays_quote_what_array_in_would_misread() {
        let array = texts(
            &[
                &[Some("a"), Some("b c"), None, Some("")],
                &[Some("null"), Some("NULL x"), Some("q\"\\"), Some("{,}")],
                &[],
                &[Some("x")],
                &[Some("tab\there"), Some("é")],
            ],
            Some(3),
        );
        assert_eq!(
            text_of(encode(array, &Type::TEXT, false)),
            [
                Some(r#"{a,"b c",NULL,""}"#.to_owned()),
                Some(r#"{"null","NULL x","q\"\\","{,}"}"#.to_owned()),
                Some("{}".to_owned()),
                None,
                Some("{\"tab\there\",é}".to_owned()),
            ]
        );
    }

    #[test]
    fn numbers_and_times_print_as_their_elements_do() {
        let mut b = LargeListBuilder::new(Int64Builder::new());
        b.values().append_value(-3);
        b.values().append_null();
        b.values().append_value(40);
        b.append(true);
        let ints: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            text_of(encode(ints, &Type::INT8, false)),
            [Some("{-3,NULL,40}".to_owned())]
        );
        let mut b = ListBuilder::new(TimestampNanosecondBuilder::new());
        b.values().append_value(1_767_225_600_250_000_000);
        b.append(true);
        let times: ArrayRef = Arc::new(b.finish());
        assert_eq!(
            text_of(encode(times, &Type::TIMESTAMP, false)),
            [Some(r#"{"2026-01-01 00:00:00.25"}"#.to_owned())]
        );
    }

    #[test]
    fn binary_arrays_carry_dimensions_nulls_and_elements() {
        let array = texts(&[&[Some("ab"), None], &[]], None);
        let rows = encode(array, &Type::TEXT, true);
        let mut first = Vec::new();
        for word in [1i32, 1, 25, 2, 1, 2] {
            first.extend_from_slice(&word.to_be_bytes());
        }
        first.extend_from_slice(b"ab");
        first.extend_from_slice(&(-1i32).to_be_bytes());
        let mut empty = Vec::new();
        for word in [0i32, 0, 25] {
            empty.extend_from_slice(&word.to_be_bytes());
        }
        assert_eq!(rows, [Some(first), Some(empty)]);
    }
}
