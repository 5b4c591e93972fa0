//! `COPY table [(columns)] FROM STDIN`: rows in Postgres's text or CSV copy format, as
//! psql's `\copy … FROM 'file'` and psycopg's `cursor.copy()` send them, written through
//! the same engine entry as `INSERT`.
//!
//! The data comes in `CopyData` messages cut anywhere; records are read as they complete
//! (a CSV value in quotes may hold line breaks). Each value is checked against its column's
//! type as a bound parameter is (`params::literal`), and every 5,000 rows go as one
//! `INSERT … VALUES`. The first bad record stops the copy: its error names the line, and
//! the rest of the data is read and dropped until the client ends the copy, as Postgres
//! does. Strata has no transactions, so the batches written before the error stay written.
//!
//! - Text: fields split at the delimiter (tab), `\N` (the NULL string) for NULL, and
//!   backslash escapes: `\b \f \n \r \t \v`, octal `\123`, hex `\x7f`, and `\` before any
//!   other character for that character.
//! - CSV: fields split at the delimiter (`,`) outside quotes; an unquoted field equal to the
//!   NULL string (empty by default) is NULL, a quoted one never is (`""` is an empty
//!   string); inside quotes the escape character (the quote by default) escapes the quote
//!   and itself.
//! - `HEADER` skips the first line. A line `\.` ends the data.

use bytes::Bytes;
use pgwire::api::Type;
use pgwire::error::PgWireError;

use super::copy_statement::{Copy, Format};
use super::errors::error;
use super::params::literal;

/// Rows per `INSERT`.
const BATCH_ROWS: usize = 5_000;

/// The most bytes one record may take: an unclosed quote must not make the server buffer
/// the whole input.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// `BAD_COPY_FILE_FORMAT`: a record that is not one of the copy format.
const BAD_COPY_FORMAT: &str = "22P04";

/// A `COPY … FROM STDIN` in progress on a connection.
#[derive(Debug)]
pub(crate) struct CopyIn {
    copy: Copy,
    table: String,
    /// The columns the data gives, quoted for SQL, and their Postgres types.
    columns: Vec<String>,
    types: Vec<Type>,
    buffer: Vec<u8>,
    header_left: bool,
    /// Records read, the header included: the line number of errors.
    records: u64,
    /// Rows read and not yet written, as `(literal, …)` tuples.
    rows: Vec<String>,
    /// Rows written.
    pub(crate) copied: u64,
    /// The error that stopped the copy; later data is dropped.
    pub(crate) failed: Option<PgWireError>,
    /// The data's end marker (`\.`) was read.
    ended: bool,
}

/// One record's fields; `None` for NULL.
type Record = Vec<Option<Vec<u8>>>;

impl CopyIn {
    /// A copy into `table` of `columns` (quoted for SQL) of `types`, read as `copy` says.
    pub(crate) fn new(copy: Copy, table: String, columns: Vec<String>, types: Vec<Type>) -> Self {
        let header_left = copy.header;
        CopyIn {
            copy,
            table,
            columns,
            types,
            buffer: Vec::new(),
            header_left,
            records: 0,
            rows: Vec::new(),
            copied: 0,
            failed: None,
            ended: false,
        }
    }

    /// Takes one `CopyData` message's bytes; `Some(sql)` when a batch of rows is ready to
    /// be written (run it, then call [`CopyIn::written`]).
    pub(crate) fn take(&mut self, data: &Bytes) -> Option<String> {
        if self.failed.is_some() || self.ended {
            return None;
        }
        self.buffer.extend_from_slice(data);
        // A record ends at a line break: without one, nothing more is complete, and a long
        // record that comes in many pieces is not read again for each of them.
        if data.iter().any(|&b| b == b'\n' || b == b'\r') {
            self.read_records(false);
        }
        if self.failed.is_none() && self.buffer.len() > MAX_RECORD_BYTES {
            self.fail(error(
                "54000",
                format!("a COPY record is over {} MiB", MAX_RECORD_BYTES >> 20),
            ));
        }
        (self.rows.len() >= BATCH_ROWS).then(|| self.insert())
    }

    /// The data has ended: `Some(sql)` for the rows left to write.
    pub(crate) fn finish(&mut self) -> Option<String> {
        if self.failed.is_none() && !self.ended {
            self.read_records(true);
        }
        (self.failed.is_none() && !self.rows.is_empty()).then(|| self.insert())
    }

    /// Records that a batch of `rows` was written.
    pub(crate) fn written(&mut self, rows: u64) {
        self.copied += rows;
    }

    /// Stops the copy with `error`, naming the line it was read from.
    pub(crate) fn fail(&mut self, error: PgWireError) {
        if self.failed.is_some() {
            return;
        }
        let context = format!("COPY {}, line {}", self.table, self.records.max(1));
        self.failed = Some(match error {
            PgWireError::UserError(mut info) => {
                info.message = format!("{}: {context}", info.message);
                PgWireError::UserError(info)
            }
            other => other,
        });
        self.buffer = Vec::new();
        self.rows = Vec::new();
    }

    /// The `INSERT` of the rows read so far, which it takes.
    fn insert(&mut self) -> String {
        let rows = std::mem::take(&mut self.rows);
        format!(
            "INSERT INTO {} ({}) VALUES {}",
            self.table,
            self.columns.join(", "),
            rows.join(", ")
        )
    }

    /// Reads every complete record in the buffer (and, `at_end`, the last one, which has
    /// no line break after it).
    fn read_records(&mut self, at_end: bool) {
        let mut start = 0;
        while start < self.buffer.len() && !self.ended {
            let rest = &self.buffer[start..];
            let read = match self.copy.format {
                Format::Text => text_record(rest, &self.copy, at_end),
                Format::Csv => csv_record(rest, &self.copy, at_end),
            };
            let (record, used) = match read {
                Ok(Some(read)) => read,
                Ok(None) => break,
                Err(message) => {
                    self.records += 1;
                    self.fail(error(BAD_COPY_FORMAT, message));
                    return;
                }
            };
            start += used;
            self.records += 1;
            match record {
                Read::End => self.ended = true,
                Read::Record(_) if std::mem::take(&mut self.header_left) => {}
                Read::Record(fields) => {
                    if let Err(e) = self.add(fields) {
                        self.fail(e);
                        return;
                    }
                }
            }
        }
        self.buffer.drain(..start);
    }

    /// Adds one record's row, each value checked against its column's type.
    fn add(&mut self, fields: Record) -> Result<(), PgWireError> {
        if fields.len() < self.columns.len() {
            return Err(error(
                BAD_COPY_FORMAT,
                format!("missing data for column {}", self.columns[fields.len()]),
            ));
        }
        if fields.len() > self.columns.len() {
            return Err(error(
                BAD_COPY_FORMAT,
                "extra data after last expected column",
            ));
        }
        let literals = fields
            .iter()
            .zip(&self.types)
            .map(|(value, ty)| literal(value.as_deref(), ty, false))
            .collect::<Result<Vec<_>, _>>()?;
        self.rows.push(format!("({})", literals.join(", ")));
        Ok(())
    }
}

/// What reading the start of the data gave.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Record(Record),
    /// The end marker, `\.` alone on a line.
    End,
}

/// The line at the start of `data` without its line break (`\n`, `\r\n` or `\r`), and the
/// bytes it takes with it; `None` when no line break has come yet (unless `at_end`).
fn line_of(data: &[u8], at_end: bool) -> Option<(&[u8], usize)> {
    match data.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(at) => {
            let used = if data[at] == b'\r' && data.get(at + 1) == Some(&b'\n') {
                at + 2
            } else if data[at] == b'\r' && at + 1 == data.len() && !at_end {
                // A `\r` at the end of what came so far may be the first half of `\r\n`.
                return None;
            } else {
                at + 1
            };
            Some((&data[..at], used))
        }
        None if at_end && !data.is_empty() => Some((data, data.len())),
        None => None,
    }
}

/// One text-format record from the start of `data`, and the bytes it takes.
fn text_record(data: &[u8], copy: &Copy, at_end: bool) -> Result<Option<(Read, usize)>, String> {
    let Some((line, used)) = line_of(data, at_end) else {
        return Ok(None);
    };
    if line == b"\\." {
        return Ok(Some((Read::End, used)));
    }
    let mut fields = Vec::new();
    for raw in split_unescaped(line, copy.delimiter) {
        if raw == copy.null.as_bytes() {
            fields.push(None);
        } else {
            fields.push(Some(unescape(raw)));
        }
    }
    Ok(Some((Read::Record(fields), used)))
}

/// `line` split at each `delimiter` not escaped by a backslash.
fn split_unescaped(line: &[u8], delimiter: u8) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < line.len() {
        if line[i] == b'\\' {
            i += 2;
            continue;
        }
        if line[i] == delimiter {
            out.push(&line[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&line[start.min(line.len())..]);
    out
}

/// A text-format field with its backslash escapes read.
fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        i += 1;
        if b != b'\\' || i == raw.len() {
            out.push(b);
            continue;
        }
        let c = raw[i];
        i += 1;
        match c {
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(value as u8);
            }
            b'x' if raw.get(i).is_some_and(u8::is_ascii_hexdigit) => {
                let mut value = 0u32;
                for _ in 0..2 {
                    match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                        Some(d) => {
                            value = value * 16 + d;
                            i += 1;
                        }
                        None => break,
                    }
                }
                out.push(value as u8);
            }
            other => out.push(other),
        }
    }
    out
}

/// One CSV record from the start of `data`, and the bytes it takes; `None` while it is
/// not complete (a line break may be inside quotes).
fn csv_record(data: &[u8], copy: &Copy, at_end: bool) -> Result<Option<(Read, usize)>, String> {
    // Only a record that starts `\.` can be the end marker: others are not scanned for
    // their line twice.
    if data.starts_with(b"\\.")
        && let Some((line, used)) = line_of(data, at_end)
        && line == b"\\."
    {
        return Ok(Some((Read::End, used)));
    }
    let mut fields = Vec::new();
    let mut value = Vec::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut i = 0;
    let finish_field = |value: &mut Vec<u8>, quoted: bool, fields: &mut Record| {
        let value = std::mem::take(value);
        if !quoted && value == copy.null.as_bytes() {
            fields.push(None);
        } else {
            fields.push(Some(value));
        }
    };
    while i < data.len() {
        let b = data[i];
        if in_quotes {
            if b == copy.escape
                && data
                    .get(i + 1)
                    .is_some_and(|&n| n == copy.quote || n == copy.escape)
                && (copy.escape != copy.quote || data[i + 1] == copy.quote)
            {
                value.push(data[i + 1]);
                i += 2;
                continue;
            }
            if b == copy.escape && i + 1 == data.len() && !at_end {
                // The next message may hold what this escapes (the second quote of `""`).
                return Ok(None);
            }
            if b == copy.quote {
                in_quotes = false;
            } else {
                value.push(b);
            }
            i += 1;
            continue;
        }
        match b {
            b'\n' | b'\r' => {
                let used = if b == b'\r' && data.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else if b == b'\r' && i + 1 == data.len() && !at_end {
                    return Ok(None);
                } else {
                    i + 1
                };
                finish_field(&mut value, quoted, &mut fields);
                return Ok(Some((Read::Record(fields), used)));
            }
            _ if b == copy.delimiter => {
                finish_field(&mut value, quoted, &mut fields);
                quoted = false;
            }
            _ if b == copy.quote => {
                in_quotes = true;
                quoted = true;
            }
            _ => value.push(b),
        }
        i += 1;
    }
    if !at_end {
        return Ok(None);
    }
    if in_quotes {
        return Err("unterminated CSV quoted field".to_owned());
    }
    finish_field(&mut value, quoted, &mut fields);
    Ok(Some((Read::Record(fields), data.len())))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use pgwire::api::Type;

    use super::{CopyIn, Read, csv_record, text_record};
    use crate::pg::copy_statement::tests::plan;

    fn fields(read: Read) -> Vec<Option<String>> {
        match read {
            Read::Record(fields) => fields
                .into_iter()
                .map(|f| f.map(|b| String::from_utf8(b).unwrap()))
                .collect(),
            Read::End => panic!("the end marker"),
        }
    }

    fn some(values: &[&str]) -> Vec<Option<String>> {
        values.iter().map(|v| Some(v.to_string())).collect()
    }

    #[test]
    fn text_records_read_as_postgres_writes_them() {
        let copy = plan("COPY t FROM STDIN");
        let data = b"a\\tb\t\\N\tback\\\\slash\t\\101\\x42\\q\nnext";
        let (read, used) = text_record(data, &copy, false).unwrap().unwrap();
        assert_eq!(
            fields(read),
            [
                Some("a\tb".into()),
                None,
                Some("back\\slash".into()),
                Some("ABq".into())
            ]
        );
        assert_eq!(&data[used..], b"next");
        assert_eq!(text_record(b"next", &copy, false).unwrap(), None);
        let (read, _) = text_record(b"next", &copy, true).unwrap().unwrap();
        assert_eq!(fields(read), some(&["next"]));
        assert_eq!(
            text_record(b"\\.\r\n", &copy, false).unwrap(),
            Some((Read::End, 4))
        );
        let (read, used) = text_record(b"x\\ty\r\nz", &copy, false).unwrap().unwrap();
        assert_eq!((fields(read), used), (some(&["x\ty"]), 6));
        assert_eq!(text_record(b"x\r", &copy, false).unwrap(), None);
        let pipes = plan("COPY t FROM STDIN (DELIMITER '|', NULL 'NA')");
        let (read, _) = text_record(b"a\\|b|NA|\n", &pipes, false).unwrap().unwrap();
        assert_eq!(
            fields(read),
            [Some("a|b".into()), None, Some(String::new())]
        );
    }

    #[test]
    fn csv_records_keep_quoted_line_breaks_and_tell_empty_from_null() {
        let copy = plan("COPY t FROM STDIN CSV");
        let data = b"plain,,\"\",\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\r\nrest";
        let (read, used) = csv_record(data, &copy, false).unwrap().unwrap();
        assert_eq!(
            fields(read),
            [
                Some("plain".into()),
                None,
                Some(String::new()),
                Some("a,b".into()),
                Some("say \"hi\"".into()),
                Some("two\nlines".into())
            ]
        );
        assert_eq!(&data[used..], b"rest");
        // Not complete until its quote closes and its line ends.
        assert_eq!(csv_record(b"\"open\nstill", &copy, false).unwrap(), None);
        assert_eq!(csv_record(b"\"a\"\"", &copy, false).unwrap(), None);
        assert_eq!(csv_record(b"\"a\"", &copy, false).unwrap(), None);
        let (read, _) = csv_record(b"\"a\"", &copy, true).unwrap().unwrap();
        assert_eq!(fields(read), some(&["a"]));
        assert!(
            csv_record(b"\"open", &copy, true)
                .unwrap_err()
                .contains("unterminated")
        );
        assert_eq!(
            csv_record(b"\\.\n", &copy, false).unwrap(),
            Some((Read::End, 3))
        );
        let escaped = plan("COPY t FROM STDIN (FORMAT csv, ESCAPE '\\', NULL 'NA')");
        let (read, _) = csv_record(b"\"q\\\"\\\\\",NA,\"NA\"\n", &escaped, false)
            .unwrap()
            .unwrap();
        assert_eq!(
            fields(read),
            [Some("q\"\\".into()), None, Some("NA".into())]
        );
    }

    fn copy_in(sql: &str) -> CopyIn {
        CopyIn::new(
            plan(sql),
            "t".into(),
            vec!["\"a\"".into(), "\"n\"".into()],
            vec![Type::TEXT, Type::INT8],
        )
    }

    #[test]
    fn rows_become_inserts_in_batches_and_the_first_bad_line_stops_the_copy() {
        let mut copy = copy_in("COPY t FROM STDIN (FORMAT csv, HEADER)");
        // Messages cut anywhere, even inside a value.
        for piece in ["a,n\nx,1\ny", "'z,2\n", "w,", "3"] {
            assert_eq!(copy.take(&Bytes::from(piece)), None);
        }
        assert_eq!(
            copy.finish().unwrap(),
            "INSERT INTO t (\"a\", \"n\") VALUES ('x', 1), ('y''z', 2), ('w', 3)"
        );
        // A batch is written once 5,000 rows are in; the rest at the end.
        let mut big = copy_in("COPY t FROM STDIN");
        let rows: String = (0..4_999).map(|i| format!("h{i}\t{i}\n")).collect();
        assert_eq!(big.take(&Bytes::from(rows)), None);
        let sql = big.take(&Bytes::from("h4999\t4999\nh5000\t")).unwrap();
        assert!(sql.ends_with("('h4998', 4998), ('h4999', 4999)"), "{sql}");
        assert_eq!(big.take(&Bytes::from("5000")), None);
        assert_eq!(
            big.finish().unwrap(),
            "INSERT INTO t (\"a\", \"n\") VALUES ('h5000', 5000)"
        );
        for (data, why) in [
            (
                "x\t1\ny\tnot a number\nz\t3\n",
                "invalid input syntax for type integer: \"not a number\": COPY t, line 2",
            ),
            ("x\n", "missing data for column \"n\": COPY t, line 1"),
            (
                "x\t1\t2\n",
                "extra data after last expected column: COPY t, line 1",
            ),
        ] {
            let mut bad = copy_in("COPY t FROM STDIN");
            assert_eq!(bad.take(&Bytes::from(data)), None);
            let message = bad.failed.as_ref().expect("failed").to_string();
            assert!(message.contains(why), "{data:?}: {message}");
            // Later data is dropped; nothing is written.
            assert_eq!(bad.take(&Bytes::from("q\t9\n")), None);
            assert_eq!(bad.finish(), None);
        }
        let mut ended = copy_in("COPY t FROM STDIN");
        assert_eq!(ended.take(&Bytes::from("x\t1\n\\.\ngarbage\n")), None);
        assert_eq!(
            ended.finish().unwrap(),
            "INSERT INTO t (\"a\", \"n\") VALUES ('x', 1)"
        );
    }
}
