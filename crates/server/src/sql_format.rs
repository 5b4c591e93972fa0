//! The output formats of `/sql`, each an [`Encoder`] that turns a result's schema, its
//! batches one at a time, and its end (or a failure part-way) into body bytes.
//!
//! - json: `{"columns":[{"name":…,"type":…},…],"rows":[[…],…],"row_count":N}`, one row per
//!   line; a failure after the first bytes adds `"error":{"message":…,"kind":…}` after the
//!   rows (and `row_count` counts the rows sent).
//! - csv: a header line, then one line per row (`\n` line ends, RFC 4180 quoting).
//! - arrow: the Arrow IPC stream format.
//!
//! csv and arrow have no place for an error after rows were sent: the body is cut off
//! without its end (the chunked encoding's last chunk, or the IPC end-of-stream marker), so
//! a client sees a failed transfer, never a silently short result.

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::ipc::writer::StreamWriter;

use crate::sql_cells::{Cells, csv_field, json_string, type_name, write_int};

/// An output format of `/sql`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// JSON (the default).
    Json,
    /// CSV with a header line.
    Csv,
    /// Arrow IPC stream.
    Arrow,
}

/// Media type of the Arrow IPC stream format.
pub(crate) const ARROW_STREAM_TYPE: &str = "application/vnd.apache.arrow.stream";

impl Format {
    /// The format named by `format=` (`json`, `csv`, `arrow`).
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "csv" => Some(Format::Csv),
            "arrow" => Some(Format::Arrow),
            _ => None,
        }
    }

    /// The format an `Accept` header asks for: the first of csv and Arrow it names, else
    /// JSON.
    pub(crate) fn from_accept(accept: &str) -> Self {
        for media in accept.split(',') {
            let media = media.split(';').next().unwrap_or_default().trim();
            if media.eq_ignore_ascii_case("text/csv") {
                return Format::Csv;
            }
            if media.eq_ignore_ascii_case(ARROW_STREAM_TYPE) {
                return Format::Arrow;
            }
        }
        Format::Json
    }

    /// The response's `Content-Type`.
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Csv => "text/csv; charset=utf-8; header=present",
            Format::Arrow => ARROW_STREAM_TYPE,
        }
    }

    /// An encoder of this format for a result with `schema`.
    pub(crate) fn encoder(self, schema: SchemaRef) -> Result<Encoder, ArrowError> {
        Ok(match self {
            Format::Json => Encoder::Json(JsonEncoder { schema, rows: 0 }),
            Format::Csv => Encoder::Csv(CsvEncoder { schema }),
            Format::Arrow => Encoder::Arrow(Box::new(StreamWriter::try_new(Vec::new(), &schema)?)),
        })
    }
}

/// Writes one result in one format; see the module documentation.
pub(crate) enum Encoder {
    /// JSON.
    Json(JsonEncoder),
    /// CSV.
    Csv(CsvEncoder),
    /// Arrow IPC stream (the writer buffers into a Vec that is drained after each call).
    Arrow(Box<StreamWriter<Vec<u8>>>),
}

impl Encoder {
    /// The bytes before the first row.
    pub(crate) fn begin(&mut self) -> Vec<u8> {
        match self {
            Encoder::Json(json) => json.begin(),
            Encoder::Csv(csv) => csv.begin(),
            Encoder::Arrow(writer) => std::mem::take(writer.get_mut()),
        }
    }

    /// The bytes of one batch.
    pub(crate) fn batch(&mut self, batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
        match self {
            Encoder::Json(json) => json.batch(batch),
            Encoder::Csv(csv) => csv.batch(batch),
            Encoder::Arrow(writer) => {
                writer.write(batch)?;
                Ok(std::mem::take(writer.get_mut()))
            }
        }
    }

    /// The bytes after the last row.
    pub(crate) fn finish(&mut self) -> Result<Vec<u8>, ArrowError> {
        match self {
            Encoder::Json(json) => Ok(json.finish(None)),
            Encoder::Csv(_) => Ok(Vec::new()),
            Encoder::Arrow(writer) => {
                writer.finish()?;
                Ok(std::mem::take(writer.get_mut()))
            }
        }
    }

    /// The bytes that end the body after a failure part-way, or `None` when the format
    /// cannot say so and the body must be cut off instead.
    pub(crate) fn fail(&mut self, message: &str, kind: &str) -> Option<Vec<u8>> {
        match self {
            Encoder::Json(json) => Some(json.finish(Some((message, kind)))),
            Encoder::Csv(_) | Encoder::Arrow(_) => None,
        }
    }
}

/// The JSON format; counts rows for `row_count`.
pub(crate) struct JsonEncoder {
    schema: SchemaRef,
    rows: u64,
}

impl JsonEncoder {
    fn begin(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 32 * self.schema.fields().len());
        out.extend_from_slice(b"{\"columns\":[");
        for (i, field) in self.schema.fields().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"name\":");
            json_string(field.name(), &mut out);
            out.extend_from_slice(b",\"type\":");
            json_string(&type_name(field.data_type()), &mut out);
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"rows\":[");
        out
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
        let cells = columns(batch)?;
        let mut out = Vec::with_capacity(batch.num_rows() * (2 + 16 * cells.len()));
        for row in 0..batch.num_rows() {
            if self.rows > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"\n[");
            for (i, column) in cells.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                column.write_json(row, &mut out)?;
            }
            out.push(b']');
            self.rows += 1;
        }
        Ok(out)
    }

    fn finish(&self, error: Option<(&str, &str)>) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(b"\n],\"row_count\":");
        write_int(self.rows, &mut out);
        if let Some((message, kind)) = error {
            out.extend_from_slice(b",\"error\":{\"message\":");
            json_string(message, &mut out);
            out.extend_from_slice(b",\"kind\":");
            json_string(kind, &mut out);
            out.push(b'}');
        }
        out.extend_from_slice(b"}\n");
        out
    }
}

/// The CSV format.
pub(crate) struct CsvEncoder {
    schema: SchemaRef,
}

impl CsvEncoder {
    fn begin(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, field) in self.schema.fields().iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            csv_field(field.name(), &mut out);
        }
        out.push(b'\n');
        out
    }

    fn batch(&self, batch: &RecordBatch) -> Result<Vec<u8>, ArrowError> {
        let cells = columns(batch)?;
        let mut out = Vec::with_capacity(batch.num_rows() * (1 + 12 * cells.len()));
        for row in 0..batch.num_rows() {
            for (i, column) in cells.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                column.write_csv(row, &mut out)?;
            }
            out.push(b'\n');
        }
        Ok(out)
    }
}

fn columns(batch: &RecordBatch) -> Result<Vec<Cells>, ArrowError> {
    batch.columns().iter().map(Cells::new).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use datafusion::arrow::array::{Float64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::ipc::reader::StreamReader;

    fn sample() -> (SchemaRef, RecordBatch) {
        let schema = Arc::new(Schema::new(vec![
            Field::new("host", DataType::Utf8, true),
            Field::new("usage", DataType::Float64, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(StringArray::from(vec![Some("a,1"), None])),
                Arc::new(Float64Array::from(vec![Some(1.5), Some(2.0)])),
            ],
        )
        .expect("batch");
        (schema, batch)
    }

    fn body(format: Format, fail: bool) -> Option<Vec<u8>> {
        let (schema, batch) = sample();
        let mut encoder = format.encoder(schema).expect("encoder");
        let mut out = encoder.begin();
        out.extend(encoder.batch(&batch).expect("batch"));
        out.extend(encoder.batch(&batch).expect("batch"));
        if fail {
            out.extend(encoder.fail("boom", "execution")?);
        } else {
            out.extend(encoder.finish().expect("finish"));
        }
        Some(out)
    }

    #[test]
    fn json_has_columns_rows_and_count() {
        let text = String::from_utf8(body(Format::Json, false).expect("json")).expect("utf8");
        let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(
            value,
            serde_json::json!({
                "columns": [{"name": "host", "type": "string"}, {"name": "usage", "type": "float"}],
                "rows": [["a,1", 1.5], [null, 2.0], ["a,1", 1.5], [null, 2.0]],
                "row_count": 4,
            })
        );
        let failed = String::from_utf8(body(Format::Json, true).expect("json")).expect("utf8");
        let value: serde_json::Value = serde_json::from_str(&failed).expect("valid JSON");
        assert_eq!(value["error"]["kind"], "execution");
        assert_eq!(value["row_count"], 4);
    }

    #[test]
    fn csv_has_a_header_and_quotes() {
        let text = String::from_utf8(body(Format::Csv, false).expect("csv")).expect("utf8");
        assert_eq!(text, "host,usage\n\"a,1\",1.5\n,2.0\n\"a,1\",1.5\n,2.0\n");
        assert!(
            body(Format::Csv, true).is_none(),
            "csv cannot carry an error"
        );
    }

    #[test]
    fn arrow_reads_back() {
        let bytes = body(Format::Arrow, false).expect("arrow");
        let reader = StreamReader::try_new(bytes.as_slice(), None).expect("reader");
        let batches: Vec<RecordBatch> = reader.map(|b| b.expect("batch")).collect();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[0], sample().1);
    }

    #[test]
    fn formats_are_negotiated() {
        assert_eq!(Format::from_name("CSV"), Some(Format::Csv));
        assert_eq!(Format::from_name("xml"), None);
        assert_eq!(Format::from_accept("text/csv;q=0.9, */*"), Format::Csv);
        assert_eq!(Format::from_accept(ARROW_STREAM_TYPE), Format::Arrow);
        assert_eq!(Format::from_accept("*/*"), Format::Json);
    }
}
