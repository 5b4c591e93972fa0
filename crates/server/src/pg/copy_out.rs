//! `COPY (query) TO STDOUT` and `COPY table [(columns)] TO STDOUT`: a query's rows streamed
//! to the client in Postgres's text or CSV copy format, as psql's `\copy … TO 'file'` and
//! psycopg's `cursor.copy()` read them. The query runs through the same engine entry as any
//! `SELECT`; each row is one `CopyData` message.
//!
//! - Text: columns separated by the delimiter (tab), NULL as `\N`, and a backslash before
//!   `\`, the delimiter and the control characters Postgres escapes (`\b \f \n \r \t \v`).
//! - CSV: columns separated by the delimiter (`,`), NULL as nothing, a value quoted (`"`)
//!   when it holds the delimiter, the quote, a line break, or equals the NULL string (so an
//!   empty string is `""`), or when `FORCE_QUOTE` names its column; inside quotes the quote
//!   and escape characters are escaped with the escape character (the quote by default).
//! - `HEADER` writes the column names first, in either format.
//! - Binary: the signature `PGCOPY\n\377\r\n\0`, flags and header extension length (both
//!   0), then each row as its field count and each field's length (-1 for NULL) and value
//!   in its type's binary form, as in binary results; the wire library adds the trailer.
//!
//! Values are written in their Postgres text (or binary) form (`encode`), arrays included.
//! The statement and its options are read by `copy_statement`.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use parking_lot::Mutex;
use pgwire::api::results::CopyResponse;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::types::format::FormatOptions;
use strata_query::QueryStream;

use super::copy_in_binary::BINARY_SIGNATURE;
use super::copy_statement::{Copy, Format};
use super::encode::{Column, EncodeError, Encoding, pg_type};
use super::errors::error;
use super::query::cancellable;
use super::session::CancelSignal;

impl Copy {
    /// The copy-out response for `stream`, the rows of its query: one `CopyData` per
    /// row (the header rides with the first row, so the `COPY n` tag counts rows), ended
    /// early by a cancel request.
    pub(super) fn response(self, stream: QueryStream, cancel: Arc<CancelSignal>) -> CopyResponse {
        let schema = stream.schema();
        let columns = schema.fields().len();
        let copy = Arc::new(self);
        let header = match copy.format {
            Format::Binary => {
                let mut start = BytesMut::from(&BINARY_SIGNATURE[..]);
                start.put_u32(0); // flags: no OIDs
                start.put_u32(0); // no header extension
                Some(start)
            }
            _ if copy.header => {
                let mut line = BytesMut::new();
                for (i, field) in schema.fields().iter().enumerate() {
                    if i > 0 {
                        line.put_u8(copy.delimiter);
                    }
                    // Postgres never force-quotes a header's names.
                    copy.put_value(field.name().as_bytes(), false, columns, &mut line);
                }
                line.put_u8(b'\n');
                Some(line)
            }
            _ => None,
        };
        // The header rides with the first row; with no rows it goes alone at the end.
        let header = Arc::new(Mutex::new(header));
        let unsent = Arc::clone(&header);
        let format = i8::from(copy.format == Format::Binary);
        let rows = cancellable(stream, cancel)
            .map(move |batch| {
                let mut rows = copy.rows(&batch?)?;
                if let Some(first) = rows.first_mut()
                    && let Some(mut joined) = header.lock().take()
                {
                    joined.extend_from_slice(first);
                    *first = joined;
                }
                Ok::<_, PgWireError>(futures::stream::iter(
                    rows.into_iter().map(|row| Ok(CopyData::new(row.freeze()))),
                ))
            })
            .try_flatten()
            .chain(
                futures::stream::once(async move { unsent.lock().take() })
                    .filter_map(|header| async { header.map(|h| Ok(CopyData::new(h.freeze()))) }),
            );
        CopyResponse::new(format, columns, rows)
    }

    /// Each row of `batch` as one line of the copy format.
    fn rows(&self, batch: &RecordBatch) -> PgWireResult<Vec<BytesMut>> {
        let schema = batch.schema();
        let types: Vec<_> = schema
            .fields()
            .iter()
            .map(|f| pg_type(f.data_type()))
            .collect();
        let columns = batch
            .columns()
            .iter()
            .zip(&types)
            .map(|(array, ty)| Column::new(array, ty))
            .collect::<PgWireResult<Vec<_>>>()?;
        let forced: Vec<bool> = schema
            .fields()
            .iter()
            .map(|f| self.forces_quotes(f.name()))
            .collect();
        let options = FormatOptions::default();
        let mut scratch = BytesMut::new();
        let mut out = Vec::with_capacity(batch.num_rows());
        if self.format == Format::Binary {
            for row in 0..batch.num_rows() {
                let mut line = BytesMut::new();
                line.put_i16(columns.len() as i16);
                for (i, column) in columns.iter().enumerate() {
                    let how = Encoding {
                        binary: true,
                        ty: &types[i],
                        options: &options,
                    };
                    column
                        .put(row, how, &mut line)
                        .map_err(|e| cannot_encode(schema.field(i).name(), &e))?;
                }
                out.push(line);
            }
            return Ok(out);
        }
        for row in 0..batch.num_rows() {
            let mut line = BytesMut::new();
            for (i, column) in columns.iter().enumerate() {
                if i > 0 {
                    line.put_u8(self.delimiter);
                }
                scratch.clear();
                let how = Encoding {
                    binary: false,
                    ty: &types[i],
                    options: &options,
                };
                column
                    .put(row, how, &mut scratch)
                    .map_err(|e| cannot_encode(schema.field(i).name(), &e))?;
                if scratch[..4] == (-1i32).to_be_bytes() {
                    line.put_slice(self.null.as_bytes());
                } else {
                    self.put_value(&scratch[4..], forced[i], columns.len(), &mut line);
                }
            }
            line.put_u8(b'\n');
            out.push(line);
        }
        Ok(out)
    }

    /// Whether `FORCE_QUOTE` names column `name` (or is `*`).
    fn forces_quotes(&self, name: &str) -> bool {
        self.force_quote
            .as_ref()
            .is_some_and(|names| names.is_empty() || names.iter().any(|n| n == name))
    }

    /// Writes one non-NULL value (or a header's column name), escaped or quoted as the
    /// format needs; `forced` when `FORCE_QUOTE` names its column; `columns` in a row.
    fn put_value(&self, value: &[u8], forced: bool, columns: usize, out: &mut BytesMut) {
        match self.format {
            Format::Text => {
                for &b in value {
                    let escaped = match b {
                        0x08 => Some(b'b'),
                        0x0c => Some(b'f'),
                        b'\n' => Some(b'n'),
                        b'\r' => Some(b'r'),
                        b'\t' => Some(b't'),
                        0x0b => Some(b'v'),
                        b'\\' => Some(b'\\'),
                        _ if b == self.delimiter => Some(b),
                        _ => None,
                    };
                    match escaped {
                        Some(e) => {
                            out.put_u8(b'\\');
                            out.put_u8(e);
                        }
                        None => out.put_u8(b),
                    }
                }
            }
            // Binary values go whole, with their length (`rows`); nothing calls this.
            Format::Binary => out.put_slice(value),
            Format::Csv => {
                let quote = forced
                    || value == self.null.as_bytes()
                    || (columns == 1 && value == b"\\.")
                    || value.iter().any(|&b| {
                        b == self.delimiter || b == self.quote || b == b'\n' || b == b'\r'
                    });
                if !quote {
                    out.put_slice(value);
                    return;
                }
                out.put_u8(self.quote);
                for &b in value {
                    if b == self.quote || b == self.escape {
                        out.put_u8(self.escape);
                    }
                    out.put_u8(b);
                }
                out.put_u8(self.quote);
            }
        }
    }
}

/// The error for a value of column `name` that cannot be encoded.
fn cannot_encode(name: &str, e: &EncodeError) -> PgWireError {
    error("XX000", format!("cannot encode {name}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::super::copy_statement::Copy;
    use super::super::copy_statement::tests::plan;

    /// One line of `values`; `names` of their columns, for `FORCE_QUOTE`.
    fn line(copy: &Copy, values: &[&str], names: &[&str]) -> String {
        let mut out = bytes::BytesMut::new();
        for (i, value) in values.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(&[copy.delimiter]);
            }
            let forced = copy.forces_quotes(names[i]);
            copy.put_value(value.as_bytes(), forced, values.len(), &mut out);
        }
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn values_are_escaped_and_quoted_as_postgres_writes_them() {
        let text = plan("COPY t TO STDOUT");
        assert_eq!(
            line(
                &text,
                &[
                    "a\tb",
                    "back\\slash",
                    "line\nbreak\r",
                    "\u{8}\u{b}\u{c}",
                    "plain"
                ],
                &["a", "b", "c", "d", "e"]
            ),
            "a\\tb\tback\\\\slash\tline\\nbreak\\r\t\\b\\v\\f\tplain"
        );
        let pipes = plan("COPY t TO STDOUT (DELIMITER '|')");
        assert_eq!(line(&pipes, &["a|b", "t\tab"], &["a", "b"]), "a\\|b|t\\tab");
        let csv = plan("COPY t TO STDOUT CSV");
        assert_eq!(
            line(
                &csv,
                &["plain", "", "a,b", "say \"hi\"", "two\nlines", "\\."],
                &["a", "b", "c", "d", "e", "f"]
            ),
            "plain,\"\",\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",\\."
        );
        assert_eq!(line(&csv, &["\\."], &["a"]), "\"\\.\"");
        let forced = plan("COPY t TO STDOUT (FORMAT csv, FORCE_QUOTE (b), ESCAPE '\\')");
        assert_eq!(
            line(&forced, &["x", "y\"z\\"], &["a", "b"]),
            "x,\"y\\\"z\\\\\""
        );
    }

    #[test]
    fn binary_rows_are_field_counts_lengths_and_binary_values() {
        use std::sync::Arc;

        use datafusion::arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
        use datafusion::arrow::record_batch::RecordBatch;

        let batch = RecordBatch::try_from_iter([
            (
                "s",
                Arc::new(StringArray::from(vec![Some("ab"), None])) as ArrayRef,
            ),
            ("n", Arc::new(Int64Array::from(vec![-2, 3])) as ArrayRef),
            (
                "f",
                Arc::new(Float64Array::from(vec![0.5, 1.0])) as ArrayRef,
            ),
        ])
        .unwrap();
        let rows = plan("COPY t TO STDOUT (FORMAT binary)")
            .rows(&batch)
            .unwrap();
        let mut first = vec![0, 3, 0, 0, 0, 2, b'a', b'b', 0, 0, 0, 8];
        first.extend_from_slice(&(-2i64).to_be_bytes());
        first.extend_from_slice(&[0, 0, 0, 8]);
        first.extend_from_slice(&0.5f64.to_be_bytes());
        assert_eq!(rows[0].to_vec(), first);
        assert_eq!(rows[1][..6].to_vec(), [0, 3, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(rows.len(), 2);
    }
}
