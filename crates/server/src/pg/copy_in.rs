//! `COPY table [(columns)] FROM STDIN`: rows in Postgres's text or CSV copy format, as
//! psql's `\copy … FROM 'file'` and psycopg's `cursor.copy()` send them, written through
//! the same engine entry as `INSERT`.
//!
//! The data comes in `CopyData` messages cut anywhere; records are read as they complete
//! (a CSV value in quotes may hold line breaks). Each value is checked against its column
//! as `INSERT` checks a literal and the rows become line protocol (`strata_query::RowWriter`),
//! 10,000 rows at a time (or 8 MiB of it), written by `Engine::write_lines`. The first bad
//! record stops the copy: its error names the line, and the rest of the data is read and
//! dropped until the client ends the copy, as Postgres does. Strata has no transactions,
//! so the batches written before the error stay written.
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
use pgwire::error::PgWireError;
use strata_query::{ColumnType, RowBatch, RowValue, RowWriter};
use strata_storage::model::FieldType;

use super::copy_in_binary;
use super::copy_statement::{Copy, Format};
use super::errors::{error, query_error};

/// Rows per write: TSBS's batch size, where line protocol requests reach their rate.
const BATCH_ROWS: usize = 10_000;

/// Bytes of line protocol per write at most, for rows of long strings.
const BATCH_BYTES: usize = 8 << 20;

/// The most bytes one record may take: an unclosed quote must not make the server buffer
/// the whole input.
const MAX_RECORD_BYTES: usize = 64 << 20;

/// `BAD_COPY_FILE_FORMAT`: a record that is not one of the copy format.
const BAD_COPY_FORMAT: &str = "22P04";

/// `CHARACTER_NOT_IN_REPERTOIRE`: bytes that are not UTF-8.
const NOT_UTF8: &str = "22021";

/// `INVALID_BINARY_REPRESENTATION`: a binary value that is not of its column's type.
const BAD_BINARY: &str = "22P03";

/// A `COPY … FROM STDIN` in progress on a connection.
#[derive(Debug)]
pub(crate) struct CopyIn {
    copy: Copy,
    /// The table as the statement names it, for errors.
    table: String,
    /// The columns the data gives, which check and write its rows.
    rows: RowWriter,
    /// What each column is: how binary data reads it.
    types: Vec<ColumnType>,
    buffer: Vec<u8>,
    /// The bytes of `buffer` already read.
    read: usize,
    /// A header (text and CSV: `HEADER`'s line; binary: always) is still to be read.
    header_left: bool,
    /// Records read, the header included: the line number of errors.
    records: u64,
    /// Rows read and not yet written.
    batch: RowBatch,
    /// Rows written.
    pub(crate) copied: u64,
    /// The error that stopped the copy; later data is dropped.
    pub(crate) failed: Option<PgWireError>,
    /// The data's end marker (`\.`) was read.
    ended: bool,
    /// The client ended the data (`CopyDone`).
    data_ended: bool,
}

/// One record's fields; `None` for NULL.
pub(super) type Record = Vec<Option<Vec<u8>>>;

impl CopyIn {
    /// A copy into `table` (as the statement names it) of the columns `rows` takes, read as
    /// `copy` says.
    pub(crate) fn new(copy: Copy, table: String, rows: RowWriter) -> Self {
        let header_left = copy.header || copy.format == Format::Binary;
        let types = rows.column_types().collect();
        CopyIn {
            copy,
            table,
            rows,
            types,
            buffer: Vec::new(),
            read: 0,
            header_left,
            records: 0,
            batch: RowBatch::default(),
            copied: 0,
            failed: None,
            ended: false,
            data_ended: false,
        }
    }

    /// The columns the data gives.
    pub(crate) fn columns(&self) -> usize {
        self.types.len()
    }

    /// Takes one `CopyData` message's bytes; `Some(batch)` when a batch of rows is ready
    /// to be written: write it, then take the next with [`CopyIn::next`] until there is
    /// none ([`CopyIn::write_all`]), so that a large message makes batches of the usual
    /// size.
    pub(crate) fn take(&mut self, data: &Bytes) -> Option<RowBatch> {
        if self.failed.is_some() || self.ended {
            return None;
        }
        self.buffer.extend_from_slice(data);
        // A text record ends at a line break: without one, nothing more is complete, and a
        // long record that comes in many pieces is not read again for each of them.
        if self.copy.format == Format::Binary || data.iter().any(|&b| b == b'\n' || b == b'\r') {
            return self.next();
        }
        self.check_record_size();
        None
    }

    /// The data has ended: `Some(batch)` for rows left to write; then [`CopyIn::next`]
    /// until there is none.
    pub(crate) fn finish(&mut self) -> Option<RowBatch> {
        self.data_ended = true;
        self.next()
    }

    /// The next batch of rows the data read so far holds: a full one, or at the end of the
    /// data what is left; `None` when neither (or the copy failed).
    pub(crate) fn next(&mut self) -> Option<RowBatch> {
        if self.failed.is_some() {
            return None;
        }
        if !self.ended {
            self.read_records(self.data_ended);
        }
        if self.batch_full() {
            return Some(std::mem::take(&mut self.batch));
        }
        if !self.data_ended {
            self.check_record_size();
            return None;
        }
        // Binary data may end without its trailer, but not inside its header or a row.
        let binary_cut = self.copy.format == Format::Binary
            && !self.ended
            && (self.header_left || !self.unread().is_empty());
        if binary_cut && self.failed.is_none() {
            self.records += u64::from(!self.header_left);
            self.fail(error(BAD_COPY_FORMAT, "unexpected EOF in COPY data"));
        }
        (self.failed.is_none() && self.batch.rows() > 0).then(|| std::mem::take(&mut self.batch))
    }

    /// The bytes of the data not read yet.
    fn unread(&self) -> &[u8] {
        &self.buffer[self.read..]
    }

    /// Whether the rows read make a batch to write.
    fn batch_full(&self) -> bool {
        self.batch.rows() >= BATCH_ROWS || self.batch.bytes() >= BATCH_BYTES
    }

    /// Stops the copy when what is buffered of one record passes [`MAX_RECORD_BYTES`].
    fn check_record_size(&mut self) {
        if self.failed.is_none() && self.unread().len() > MAX_RECORD_BYTES {
            self.fail(error(
                "54000",
                format!("a COPY record is over {} MiB", MAX_RECORD_BYTES >> 20),
            ));
        }
    }

    /// Writes `first` (from [`CopyIn::take`] or [`CopyIn::finish`]) and every batch
    /// [`CopyIn::next`] has after it.
    pub(crate) async fn write_all(&mut self, first: Option<RowBatch>) {
        let mut next = first;
        while let Some(batch) = next {
            self.write(batch).await;
            next = self.next();
        }
    }

    /// Writes `batch`, counting its rows or stopping the copy with the engine's error.
    pub(crate) async fn write(&mut self, batch: RowBatch) {
        match self.rows.write(batch).await {
            Ok(rows) => self.copied += rows,
            // The error names the refused row's line itself: the data read since is later.
            Err(e) => self.stop(query_error(&e, None), format!("COPY {}", self.table)),
        }
    }

    /// Stops the copy with `error`, naming the line it was read from.
    pub(crate) fn fail(&mut self, error: PgWireError) {
        let context = format!("COPY {}, line {}", self.table, self.records.max(1));
        self.stop(error, context);
    }

    /// Stops the copy with `error`, saying where (`context`); later data is dropped.
    fn stop(&mut self, error: PgWireError, context: String) {
        if self.failed.is_some() {
            return;
        }
        self.failed = Some(match error {
            PgWireError::UserError(mut info) => {
                info.message = format!("{}: {context}", info.message);
                PgWireError::UserError(info)
            }
            other => other,
        });
        self.buffer = Vec::new();
        self.read = 0;
        self.batch = RowBatch::default();
    }

    /// Reads the complete records in the buffer (and, `at_end`, the last one, which has
    /// no line break after it), until a batch is full.
    fn read_records(&mut self, at_end: bool) {
        let mut start = self.read;
        while start < self.buffer.len() && !self.ended && !self.batch_full() {
            let rest = &self.buffer[start..];
            let read = match self.copy.format {
                Format::Text => text_record(rest, &self.copy, at_end),
                Format::Csv => csv_record(rest, &self.copy, at_end),
                Format::Binary if self.header_left => match copy_in_binary::header(rest) {
                    Ok(Some(used)) => {
                        self.header_left = false;
                        start += used;
                        continue;
                    }
                    Ok(None) => Ok(None),
                    Err(message) => Err(message),
                },
                Format::Binary => copy_in_binary::record(rest),
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
                    if let Err(e) = self.add(&fields) {
                        self.fail(e);
                        return;
                    }
                }
            }
        }
        self.read = start;
        // What was read goes once it is most of the buffer: a large message read a batch
        // at a time is not moved down once per batch.
        if self.read == self.buffer.len() {
            self.buffer.clear();
            self.read = 0;
        } else if self.read >= self.buffer.len() / 2 {
            self.buffer.drain(..self.read);
            self.read = 0;
        }
    }

    /// Adds one record's row, each value checked against its column.
    fn add(&mut self, fields: &Record) -> Result<(), PgWireError> {
        let columns = self.types.len();
        if self.copy.format == Format::Binary && fields.len() != columns {
            return Err(error(
                BAD_COPY_FORMAT,
                format!("row field count is {}, expected {columns}", fields.len()),
            ));
        }
        if fields.len() < columns {
            let missing = self.rows.column_names().nth(fields.len()).unwrap_or("?");
            return Err(error(
                BAD_COPY_FORMAT,
                format!("missing data for column \"{missing}\""),
            ));
        }
        if fields.len() > columns {
            return Err(error(
                BAD_COPY_FORMAT,
                "extra data after last expected column",
            ));
        }
        let values = fields
            .iter()
            .zip(&self.types)
            .map(|(value, &column)| {
                let Some(bytes) = value.as_deref() else {
                    return Ok(None);
                };
                if self.copy.format == Format::Binary {
                    let text = matches!(
                        column,
                        ColumnType::Tag | ColumnType::Field(FieldType::String)
                    );
                    return copy_in_binary::value(bytes, column)
                        .map(Some)
                        .map_err(|message| {
                            error(if text { NOT_UTF8 } else { BAD_BINARY }, message)
                        });
                }
                std::str::from_utf8(bytes)
                    .map(|text| Some(RowValue::Text(text)))
                    .map_err(|_| error(NOT_UTF8, "invalid byte sequence for encoding \"UTF8\""))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.rows
            .push(&mut self.batch, &values, self.records)
            .map_err(|e| query_error(&e, None))
    }
}

/// What reading the start of the data gave.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Read {
    Record(Record),
    /// The end marker: `\.` alone on a line; in binary, a field count of -1.
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
pub(super) mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use std::sync::Arc;

    use bytes::Bytes;
    use pgwire::error::PgWireError;
    use strata_lineproto::Precision;
    use strata_query::{RowBatch, RowWriter};
    use strata_storage::{Engine, EngineOptions, WalSync};

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

    /// An engine over `dir` with table `t (time, a, n)`: `a` a tag, `n` an integer.
    pub(crate) fn engine(dir: &std::path::Path) -> Arc<Engine> {
        let options = EngineOptions {
            data_dirs: vec![dir.to_path_buf()],
            wal_sync: WalSync::None,
            background: false,
            ..EngineOptions::default()
        };
        let engine = Arc::new(Engine::open(options).unwrap().0);
        let report = engine
            .write_lines("db", b"t,a=x n=1i 0\n", Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty());
        engine
    }

    /// A copy into `t (time, a, n)` of `engine`.
    pub(crate) fn copy_in(engine: &Arc<Engine>, sql: &str) -> CopyIn {
        let columns = ["time", "a", "n"].map(String::from);
        let rows = RowWriter::new(engine, "db", "t", &columns).unwrap();
        CopyIn::new(plan(sql), "t".into(), rows)
    }

    fn lines(batch: &RowBatch) -> String {
        String::from_utf8(batch.line_protocol().to_vec()).unwrap()
    }

    #[test]
    fn rows_become_line_protocol_in_batches_and_the_first_bad_line_stops_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let mut copy = copy_in(&engine, "COPY t FROM STDIN (FORMAT csv, HEADER)");
        // Messages cut anywhere, even inside a value.
        for piece in [
            "time,a,n\n1970-01-01T00:00:01Z,x,1\n1970-01-01T00:00:02Z,y",
            " z,2\n",
            "1970-01-01T00:00:03Z,",
            ",3",
        ] {
            assert!(copy.take(&Bytes::from(piece)).is_none());
        }
        let batch = copy.finish().unwrap();
        assert_eq!(
            lines(&batch),
            "t,a=x n=1i 1000000000\nt,a=y\\ z n=2i 2000000000\nt n=3i 3000000000\n"
        );
        // A batch is written once 10,000 rows are in; the rest at the end.
        let mut big = copy_in(&engine, "COPY t FROM STDIN");
        let rows: String = (0..9_999)
            .map(|i| format!("1970-01-01T00:00:00.{i:09}Z\th{i}\t{i}\n"))
            .collect();
        assert!(big.take(&Bytes::from(rows)).is_none());
        let batch = big
            .take(&Bytes::from(
                "1970-01-01T00:00:01Z\th\t1\n1970-01-01T00:00:02Z\th\t",
            ))
            .unwrap();
        assert_eq!(batch.rows(), 10_000);
        assert!(
            lines(&batch).ends_with(
                "t,a=h9997 n=9997i 9997\nt,a=h9998 n=9998i 9998\nt,a=h n=1i 1000000000\n"
            )
        );
        assert!(big.take(&Bytes::from("2")).is_none());
        assert_eq!(lines(&big.finish().unwrap()), "t,a=h n=2i 2000000000\n");
        for (data, code, why) in [
            (
                "T\tx\t1\nT\ty\tnot a number\nT\tz\t3\n",
                "22P02",
                "invalid input syntax for type bigint: \"not a number\": COPY t, line 2",
            ),
            (
                "T\tx\n",
                "22P04",
                "missing data for column \"n\": COPY t, line 1",
            ),
            (
                "T\tx\t1\t2\n",
                "22P04",
                "extra data after last expected column: COPY t, line 1",
            ),
            (
                "T\t\\xff\t1\n",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": COPY t, line 1",
            ),
            (
                "yesterday\tx\t1\n",
                "22007",
                "invalid input syntax for type timestamp: \"yesterday\"",
            ),
        ] {
            let mut bad = copy_in(&engine, "COPY t FROM STDIN");
            let data = data.replace('T', "1970-01-01T00:00:00Z");
            assert!(bad.take(&Bytes::from(data.clone())).is_none());
            let Some(PgWireError::UserError(info)) = &bad.failed else {
                panic!("{data:?} did not fail: {:?}", bad.failed);
            };
            assert_eq!(info.code, code, "{data:?}: {}", info.message);
            assert!(info.message.contains(why), "{data:?}: {}", info.message);
            // Later data is dropped; nothing is written.
            assert!(
                bad.take(&Bytes::from("1970-01-01T00:00:00Z\tq\t9\n"))
                    .is_none()
            );
            assert!(bad.finish().is_none());
        }
        let mut ended = copy_in(&engine, "COPY t FROM STDIN");
        assert!(
            ended
                .take(&Bytes::from("1970-01-01T00:00:00Z\tx\t1\n\\.\ngarbage\n"))
                .is_none()
        );
        assert_eq!(lines(&ended.finish().unwrap()), "t,a=x n=1i 0\n");
    }

    /// Binary copy data: the header, then `rows` of optional field bytes.
    fn binary(rows: &[Vec<Option<Vec<u8>>>], trailer: bool) -> Vec<u8> {
        let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
        data.extend_from_slice(&[0; 8]);
        for row in rows {
            data.extend_from_slice(&(row.len() as i16).to_be_bytes());
            for field in row {
                match field {
                    Some(bytes) => {
                        data.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                        data.extend_from_slice(bytes);
                    }
                    None => data.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        if trailer {
            data.extend_from_slice(&(-1i16).to_be_bytes());
        }
        data
    }

    /// A binary row of `t (time, a, n)`: microseconds since 2000-01-01, a tag, an integer.
    fn binary_row(micros: i64, a: Option<&str>, n: i64) -> Vec<Option<Vec<u8>>> {
        vec![
            Some(micros.to_be_bytes().to_vec()),
            a.map(|a| a.as_bytes().to_vec()),
            Some(n.to_be_bytes().to_vec()),
        ]
    }

    #[test]
    fn binary_rows_are_read_in_pieces_as_their_columns_types() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let rows = [
            binary_row(1, Some("x y"), -5),
            binary_row(2_000_000, None, 7),
        ];
        for trailer in [true, false] {
            let data = binary(&rows, trailer);
            for cut in [1, 7, 19, 20, 30, data.len() - 1] {
                let mut copy = copy_in(&engine, "COPY t FROM STDIN (FORMAT binary)");
                assert!(copy.take(&Bytes::copy_from_slice(&data[..cut])).is_none());
                assert!(copy.take(&Bytes::copy_from_slice(&data[cut..])).is_none());
                let batch = copy.finish().unwrap();
                assert_eq!(
                    lines(&batch),
                    "t,a=x\\ y n=-5i 946684800000001000\nt n=7i 946684802000000000\n",
                    "cut at {cut}"
                );
            }
        }
        let mut bad_count = binary(&rows, true);
        bad_count[19..21].copy_from_slice(&2i16.to_be_bytes());
        let mut cut_short = binary(&rows, false);
        cut_short.pop();
        for (data, code, why) in [
            (
                b"PGCOPY\n\xff\r\n\x01".to_vec(),
                "22P04",
                "signature not recognized: COPY t, line 1",
            ),
            (
                bad_count,
                "22P04",
                "row field count is 2, expected 3: COPY t, line 1",
            ),
            (
                binary(&[vec![Some(vec![0; 8]), Some(vec![0xff]), None]], true),
                "22021",
                "UTF8",
            ),
            (
                cut_short,
                "22P04",
                "unexpected EOF in COPY data: COPY t, line 2",
            ),
            (
                b"PGCOPY\n\xff".to_vec(),
                "22P04",
                "unexpected EOF in COPY data: COPY t, line 1",
            ),
            (
                binary(&[vec![Some(vec![0; 4]), None, Some(vec![0; 8])]], true),
                "22P03",
                "a timestamp value takes 8 bytes, not 4: COPY t, line 1",
            ),
        ] {
            let mut bad = copy_in(&engine, "COPY t FROM STDIN BINARY");
            bad.take(&Bytes::from(data.clone()));
            assert!(bad.finish().is_none(), "{data:?}");
            let Some(PgWireError::UserError(info)) = &bad.failed else {
                panic!("{data:?} did not fail");
            };
            assert_eq!(info.code, code, "{}", info.message);
            assert!(info.message.contains(why), "{why}: {}", info.message);
        }
    }

    #[test]
    fn a_large_message_makes_batches_of_the_usual_size() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        for format in ["", " (FORMAT csv)"] {
            let mut copy = copy_in(&engine, &format!("COPY t FROM STDIN{format}"));
            let separator = if format.is_empty() { "\t" } else { "," };
            let data: String = (0..25_000)
                .map(|i| format!("1970-01-01T00:00:0{}Z{separator}h{separator}{i}\n", i % 10))
                .collect();
            let mut sizes = Vec::new();
            let mut next = copy.take(&Bytes::from(data));
            while let Some(batch) = next {
                sizes.push(batch.rows());
                next = copy.next();
            }
            assert_eq!(sizes, [10_000, 10_000], "{format}");
            let last = copy.finish().unwrap();
            assert_eq!(last.rows(), 5_000);
            assert!(copy.next().is_none());
        }
    }

    #[tokio::test]
    async fn batches_are_written_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let mut copy = copy_in(&engine, "COPY t FROM STDIN");
        let data = "1970-01-01T00:00:05Z\tw\t1\n1970-01-01T00:00:06Z\tw\t2\n";
        assert!(copy.take(&Bytes::from(data)).is_none());
        let batch = copy.finish().unwrap();
        copy.write(batch).await;
        assert_eq!((copy.copied, copy.failed.is_none()), (2, true));
    }
}
