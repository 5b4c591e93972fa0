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
//!
//! Values are written in their Postgres text form (`encode`), arrays included.
//! `FORMAT binary`, `COPY … FROM` and copying to a file or program on the server are
//! refused with `feature_not_supported`.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::RecordBatch;
use datafusion::sql::sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use futures::{StreamExt, TryStreamExt};
use pgwire::api::results::CopyResponse;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::CopyData;
use pgwire::types::format::FormatOptions;
use strata_query::QueryStream;

use super::encode::{Column, Encoding, pg_type};
use super::errors::{NOT_SUPPORTED, QUERY_CANCELED, SYNTAX_ERROR, error, query_error};
use super::session::CancelSignal;

/// The copy format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Csv,
}

/// A `COPY … TO STDOUT`: the query whose rows it writes, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CopyTo {
    /// The `SELECT` that gives the rows.
    pub query: String,
    format: Format,
    header: bool,
    delimiter: u8,
    null: String,
    quote: u8,
    escape: u8,
    /// Columns whose non-NULL values are always quoted (CSV); `None` when none are,
    /// `Some(empty)` for `*`.
    force_quote: Option<Vec<String>>,
}

/// The `COPY` that `sql` is, if it is one: `Ok` for a `COPY … TO STDOUT` Strata can run,
/// `Err` for one it cannot (a syntax error, `FROM`, a server file, an unknown option).
pub(super) fn copy_to(sql: &str) -> Option<Result<CopyTo, PgWireError>> {
    let text = sql.trim_start();
    let word_end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    if !text[..word_end].eq_ignore_ascii_case("COPY") {
        return None;
    }
    let statements = match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
        Ok(statements) => statements,
        Err(e) => return Some(Err(error(SYNTAX_ERROR, e.to_string()))),
    };
    let [
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        },
    ] = statements.as_slice()
    else {
        return None;
    };
    Some(plan(source, *to, target, options, legacy_options))
}

fn plan(
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy_options: &[CopyLegacyOption],
) -> Result<CopyTo, PgWireError> {
    if !to {
        return Err(error(
            NOT_SUPPORTED,
            "COPY FROM is not supported: write rows with INSERT, or as line protocol over HTTP (/write)",
        ));
    }
    if *target != CopyTarget::Stdout {
        return Err(error(
            NOT_SUPPORTED,
            "COPY TO a file or program on the server is not supported: copy TO STDOUT (psql's \\copy writes the file on the client)",
        ));
    }
    let query = match source {
        CopySource::Query(query) => query.to_string(),
        CopySource::Table {
            table_name,
            columns,
        } => {
            let columns = if columns.is_empty() {
                "*".to_owned()
            } else {
                columns
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("SELECT {columns} FROM {table_name}")
        }
    };
    let mut copy = CopyTo {
        query,
        format: Format::Text,
        header: false,
        delimiter: b'\t',
        null: "\\N".to_owned(),
        quote: b'"',
        escape: b'"',
        force_quote: None,
    };
    let (mut delimiter, mut null, mut quote, mut escape) = (None, None, None, None);
    let unsupported = |what: &str| {
        Err(error(
            NOT_SUPPORTED,
            format!("COPY option {what} is not supported"),
        ))
    };
    for option in options {
        match option {
            CopyOption::Format(name) => match name.value.to_ascii_lowercase().as_str() {
                "text" => copy.format = Format::Text,
                "csv" => copy.format = Format::Csv,
                "binary" => return unsupported("FORMAT binary (use text or csv)"),
                other => {
                    return Err(error(
                        SYNTAX_ERROR,
                        format!("COPY format \"{other}\" not recognized"),
                    ));
                }
            },
            CopyOption::Delimiter(c) => delimiter = Some(*c),
            CopyOption::Null(text) => null = Some(text.clone()),
            CopyOption::Header(on) => copy.header = *on,
            CopyOption::Quote(c) => quote = Some(*c),
            CopyOption::Escape(c) => escape = Some(*c),
            CopyOption::ForceQuote(columns) => copy.force_quote = Some(names(columns)),
            CopyOption::Encoding(name) => {
                let name = name.to_ascii_uppercase().replace(['-', '_'], "");
                if name != "UTF8" {
                    return unsupported(&format!("ENCODING {name} (only UTF8)"));
                }
            }
            CopyOption::Freeze(_) | CopyOption::ForceNotNull(_) | CopyOption::ForceNull(_) => {
                return Err(error(
                    SYNTAX_ERROR,
                    format!("COPY {option} is available only in COPY FROM"),
                ));
            }
        }
    }
    for option in legacy_options {
        match option {
            CopyLegacyOption::Binary => return unsupported("BINARY (use text or csv)"),
            CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
            CopyLegacyOption::Null(text) => null = Some(text.clone()),
            CopyLegacyOption::Header => copy.header = true,
            CopyLegacyOption::Csv(csv) => {
                copy.format = Format::Csv;
                for option in csv {
                    match option {
                        CopyLegacyCsvOption::Header => copy.header = true,
                        CopyLegacyCsvOption::Quote(c) => quote = Some(*c),
                        CopyLegacyCsvOption::Escape(c) => escape = Some(*c),
                        CopyLegacyCsvOption::ForceQuote(columns) => {
                            copy.force_quote = Some(names(columns));
                        }
                        CopyLegacyCsvOption::ForceNotNull(_) => {
                            return Err(error(
                                SYNTAX_ERROR,
                                "COPY FORCE NOT NULL is available only in COPY FROM",
                            ));
                        }
                    }
                }
            }
            other => return unsupported(&other.to_string()),
        }
    }
    if copy.format == Format::Csv {
        copy.delimiter = b',';
        copy.null = String::new();
    }
    let single_byte = |c: char, what: &str| -> Result<u8, PgWireError> {
        u8::try_from(c).ok().filter(u8::is_ascii).ok_or_else(|| {
            error(
                SYNTAX_ERROR,
                format!("COPY {what} must be a single one-byte character"),
            )
        })
    };
    if let Some(c) = delimiter {
        copy.delimiter = single_byte(c, "delimiter")?;
    }
    if let Some(text) = null {
        copy.null = text;
    }
    if copy.format == Format::Text && (quote.is_some() || escape.is_some()) {
        return Err(error(
            SYNTAX_ERROR,
            "COPY QUOTE and ESCAPE are available only in CSV mode",
        ));
    }
    if copy.format == Format::Text && copy.force_quote.is_some() {
        return Err(error(
            SYNTAX_ERROR,
            "COPY FORCE_QUOTE is available only in CSV mode",
        ));
    }
    if let Some(c) = quote {
        copy.quote = single_byte(c, "quote")?;
        copy.escape = copy.quote;
    }
    if let Some(c) = escape {
        copy.escape = single_byte(c, "escape")?;
    }
    if matches!(copy.delimiter, b'\r' | b'\n' | b'\\') || copy.null.contains(['\r', '\n']) {
        return Err(error(
            SYNTAX_ERROR,
            "COPY delimiter and NULL cannot be a line break (nor the delimiter a backslash)",
        ));
    }
    if copy.format == Format::Csv
        && (copy.delimiter == copy.quote || copy.null.contains(copy.quote as char))
    {
        return Err(error(
            SYNTAX_ERROR,
            "CSV quote character must not appear in the DELIMITER or NULL specification",
        ));
    }
    Ok(copy)
}

/// Column names of `FORCE_QUOTE`; empty for `*`.
fn names(columns: &[datafusion::sql::sqlparser::ast::Ident]) -> Vec<String> {
    columns
        .iter()
        .map(|c| c.value.clone())
        .filter(|c| c != "*")
        .collect()
}

impl CopyTo {
    /// The copy-out response for `stream`, the rows of [`CopyTo::query`]: one `CopyData` per
    /// row (the header rides with the first row, so the `COPY n` tag counts rows), ended
    /// early by a cancel request.
    pub(super) fn response(self, stream: QueryStream, cancel: Arc<CancelSignal>) -> CopyResponse {
        let schema = stream.schema();
        let columns = schema.fields().len();
        let copy = Arc::new(self);
        let mut header = copy.header.then(|| {
            let mut line = BytesMut::new();
            for (i, field) in schema.fields().iter().enumerate() {
                if i > 0 {
                    line.put_u8(copy.delimiter);
                }
                // Postgres never force-quotes a header's names.
                copy.put_value(field.name().as_bytes(), false, columns, &mut line);
            }
            line.put_u8(b'\n');
            line
        });
        let batches = futures::stream::unfold(Some((stream, cancel)), |state| async move {
            let (mut stream, cancel) = state?;
            tokio::select! {
                biased;
                () = cancel.requested() => Some((
                    Err(error(QUERY_CANCELED, "canceling statement due to user request")),
                    None,
                )),
                next = stream.next() => match next? {
                    Ok(batch) => Some((Ok(batch), Some((stream, cancel)))),
                    Err(e) => Some((Err(query_error(&e, None)), None)),
                },
            }
        });
        let rows = batches
            .map(move |batch| {
                let mut rows = copy.rows(&batch?)?;
                if let (Some(first), Some(header)) = (rows.first_mut(), header.take()) {
                    let mut joined = header;
                    joined.extend_from_slice(first);
                    *first = joined;
                }
                Ok::<_, PgWireError>(futures::stream::iter(
                    rows.into_iter().map(|row| Ok(CopyData::new(row.freeze()))),
                ))
            })
            .try_flatten();
        CopyResponse::new(0, columns, rows)
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
                column.put(row, how, &mut scratch).map_err(|e| {
                    error(
                        "XX000",
                        format!("cannot encode {}: {e}", schema.field(i).name()),
                    )
                })?;
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

#[cfg(test)]
mod tests {
    use super::{CopyTo, Format, copy_to};

    fn plan(sql: &str) -> CopyTo {
        copy_to(sql).expect("a COPY").expect("supported")
    }

    fn refused(sql: &str) -> String {
        copy_to(sql)
            .expect("a COPY")
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn copy_statements_are_read_as_postgres_reads_them() {
        let copy = plan("COPY (SELECT a, b FROM t WHERE a > 1) TO STDOUT");
        assert_eq!(copy.query, "SELECT a, b FROM t WHERE a > 1");
        assert_eq!(
            (copy.format, copy.delimiter, copy.null.as_str()),
            (Format::Text, b'\t', "\\N")
        );
        // psql's \copy ... CSV HEADER, in the old syntax.
        let copy = plan("copy  weather (city, temp) TO STDOUT CSV HEADER");
        assert_eq!(copy.query, "SELECT city, temp FROM weather");
        assert_eq!(
            (copy.format, copy.header, copy.delimiter),
            (Format::Csv, true, b',')
        );
        let copy = plan(
            "COPY t TO STDOUT WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'NA', QUOTE '''', FORCE_QUOTE (a, b))",
        );
        assert_eq!(copy.query, "SELECT * FROM t");
        assert_eq!(
            (copy.delimiter, copy.null.as_str(), copy.quote, copy.escape),
            (b';', "NA", b'\'', b'\'')
        );
        assert_eq!(copy.force_quote, Some(vec!["a".to_owned(), "b".to_owned()]));
        assert!(copy_to("SELECT 1").is_none());
        assert!(copy_to("COPYRIGHT").is_none());
        for (sql, why) in [
            ("COPY t FROM STDIN", "COPY FROM is not supported"),
            ("COPY t TO '/tmp/x'", "file or program on the server"),
            ("COPY t TO STDOUT (FORMAT binary)", "FORMAT binary"),
            ("COPY t TO STDOUT BINARY", "BINARY"),
            ("COPY t TO STDOUT (FORMAT xml)", "not recognized"),
            ("COPY t TO STDOUT (QUOTE '\"')", "only in CSV mode"),
            (
                "COPY t TO STDOUT (FORMAT csv, DELIMITER '\"')",
                "must not appear",
            ),
            ("COPY t TO STDOUT (DELIMITER 'é')", "Expect a char"),
            ("COPY t TO STDOUT (FORCE_NULL (a))", "only in COPY FROM"),
            ("COPY t TO", "Expected"),
        ] {
            let message = refused(sql);
            assert!(message.contains(why), "{sql}: {message}");
        }
    }

    /// One line of `values`; `names` of their columns, for `FORCE_QUOTE`.
    fn line(copy: &CopyTo, values: &[&str], names: &[&str]) -> String {
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
}
