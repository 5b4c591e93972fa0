//! What `array_to_string(a, delimiter [, null])` (and its other names, `array_join`,
//! `list_to_string`, `list_join`) may write for a batch, for [`super::bounded`]: each
//! element's text and a delimiter (or the null string) after it. `array_repeat(1,
//! 30000000)` is within the bound on its own (240 MB), and joined with a 10,000-byte
//! delimiter it asked for 300 GB.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::ColumnarValue;

use super::bounded::str_len_at;

/// What the text of an element that is not a string may take: a float, a timestamp or a
/// decimal is written in fewer bytes.
pub(super) const ELEMENT_TEXT: u64 = 40;

/// An upper bound on the bytes `array_to_string` writes for `rows` rows: every element
/// counts [`ELEMENT_TEXT`] (a string its own bytes too), the longest delimiter and the
/// longest null string. A scalar list is written once per row.
pub(super) fn joined_bytes(args: &[ColumnarValue], rows: usize) -> u64 {
    let (elements, text) = match args.first() {
        Some(ColumnarValue::Array(array)) => leaves(array.as_ref()),
        Some(ColumnarValue::Scalar(scalar)) => match scalar.to_array() {
            Ok(array) => {
                let (elements, text) = leaves(array.as_ref());
                let rows = rows as u64;
                (elements.saturating_mul(rows), text.saturating_mul(rows))
            }
            Err(_) => return 0,
        },
        None => return 0,
    };
    let longest = |arg: Option<&ColumnarValue>| match arg {
        Some(array @ ColumnarValue::Array(_)) => (0..rows)
            .map(|row| str_len_at(array, row))
            .max()
            .unwrap_or(0),
        Some(scalar) => str_len_at(scalar, 0),
        None => 0,
    };
    let per_element = ELEMENT_TEXT
        .saturating_add(longest(args.get(1)))
        .saturating_add(longest(args.get(2)));
    elements.saturating_mul(per_element).saturating_add(text)
}

/// The elements at the bottom of `array`'s lists that its rows reach, and the bytes of
/// those that are strings.
fn leaves(array: &dyn Array) -> (u64, u64) {
    match array.data_type() {
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            let offsets = list.value_offsets();
            let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
            leaves(list.values().slice(start, end - start).as_ref())
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            let offsets = list.value_offsets();
            let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
            leaves(list.values().slice(start, end - start).as_ref())
        }
        // All the values, those of rows sliced away too: an over-count, never an under-.
        DataType::FixedSizeList(..) => leaves(array.as_fixed_size_list().values().as_ref()),
        DataType::Utf8 => {
            let offsets = array.as_string::<i32>().value_offsets();
            let bytes = offsets[offsets.len() - 1] - offsets[0];
            (array.len() as u64, bytes as u64)
        }
        DataType::LargeUtf8 => {
            let offsets = array.as_string::<i64>().value_offsets();
            let bytes = offsets[offsets.len() - 1] - offsets[0];
            (array.len() as u64, bytes as u64)
        }
        DataType::Utf8View => {
            let bytes = array.as_string_view().lengths().map(u64::from).sum();
            (array.len() as u64, bytes)
        }
        _ => (array.len() as u64, 0),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ListArray, StringArray};
    use datafusion::arrow::datatypes::{Field, Int64Type};
    use datafusion::common::ScalarValue;

    use super::*;

    #[test]
    fn elements_of_the_rows_reached_count_and_strings_count_their_bytes() {
        // [[1, 2], [3], []] sliced to its last two rows: one element.
        let ints = ListArray::from_iter_primitive::<Int64Type, _, _>([
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3)]),
            Some(vec![]),
        ]);
        assert_eq!(leaves(&ints), (3, 0));
        assert_eq!(leaves(&ints.slice(1, 2)), (1, 0));
        let strings = ListArray::new(
            Arc::new(Field::new_list_field(DataType::Utf8, true)),
            datafusion::arrow::buffer::OffsetBuffer::from_lengths([2, 1]),
            Arc::new(StringArray::from(vec!["ab", "cde", "f"])),
            None,
        );
        assert_eq!(leaves(&strings), (3, 6));
        assert_eq!(leaves(&strings.slice(1, 1)), (1, 1));

        // Three rows of the two-element scalar list, joined by the longest delimiter.
        let scalar = ScalarValue::List(Arc::new(ints.slice(0, 1)));
        let delimiters = ColumnarValue::Array(Arc::new(StringArray::from(vec!["-", "--", "+"])));
        let bytes = joined_bytes(&[ColumnarValue::Scalar(scalar), delimiters], 3);
        assert_eq!(bytes, 6 * (ELEMENT_TEXT + 2));
        let column = ColumnarValue::Array(Arc::new(strings));
        let null = ColumnarValue::Scalar(ScalarValue::Utf8(Some("NULL".into())));
        let comma = ColumnarValue::Scalar(ScalarValue::Utf8(Some(",".into())));
        assert_eq!(
            joined_bytes(&[column, comma, null], 2),
            3 * (ELEMENT_TEXT + 5) + 6
        );
    }
}
