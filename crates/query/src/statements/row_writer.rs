//! Rows whose values come one per column, as text or already typed: what `COPY … FROM
//! STDIN` reads (text and CSV give text; binary gives values of the columns' types). Each
//! value is checked against its column as `INSERT … VALUES` checks a literal, the row
//! becomes a line of line protocol, and a batch of rows goes through `Engine::write_lines`,
//! the write path of `INSERT` and of every other client. No SQL is made or parsed per row
//! (an `INSERT` of the same rows spends most of its time in its own parsing).
//!
//! Values are read as Postgres reads text input:
//! - `time`: a timestamp (`2026-01-01T00:00:00Z`, `2026-01-01 00:00:00`, no offset = UTC);
//!   in a table declared `time BIGINT`, an integer counting its unit since the epoch.
//! - tags: the text itself; NULL leaves the tag out; an empty one is refused, as in
//!   `INSERT` (a series has the tag or not).
//! - fields: a float, an integer, an unsigned integer or a boolean (`t`, `true`, `yes`,
//!   `on`, `1`, and their opposites), space around it allowed; strings as they are. NULL
//!   leaves the field out of the row; a row needs one field at least. Floats must be finite
//!   (line protocol cannot carry NaN or infinities).

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use strata_lineproto::FieldValue;
use strata_lineproto::writer::write_line;
use strata_storage::Engine;
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;

use super::insert::{Column, Kind, parse, target};
use super::show::lookup;
use super::tokens::plan;
use super::write_lines;
use crate::error::{DataFault, Position, QueryError};
use crate::minute_times::with_seconds;

/// One value of a row: text, read as its column's type, or a value of that type already.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowValue<'a> {
    /// Text to read as the column's type (any column; a tag's or a string's value as is).
    Text(&'a str),
    /// A `time`: nanoseconds since the epoch.
    Time(i64),
    /// A float field's value.
    Float(f64),
    /// An integer field's value.
    Integer(i64),
    /// An unsigned field's value.
    Unsigned(u64),
    /// A boolean field's value.
    Boolean(bool),
}

impl RowValue<'_> {
    /// What the value is, for messages.
    fn kind(&self) -> &'static str {
        match self {
            RowValue::Text(_) => "text",
            RowValue::Time(_) => "a timestamp",
            RowValue::Float(_) => "a float",
            RowValue::Integer(_) => "an integer",
            RowValue::Unsigned(_) => "an unsigned integer",
            RowValue::Boolean(_) => "a boolean",
        }
    }
}

/// What a column of the rows is in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `time`.
    Time,
    /// A tag: a string.
    Tag,
    /// A field of this type.
    Field(FieldType),
}

/// A table's columns, in the order rows give them, ready to check and write rows.
#[derive(Debug, Clone)]
pub struct RowWriter {
    engine: Arc<Engine>,
    database: String,
    schema: Arc<TableSchema>,
    columns: Vec<Column>,
}

/// Rows checked and not yet written, as line protocol.
#[derive(Debug, Default)]
pub struct RowBatch {
    body: Vec<u8>,
    /// The caller's number of each row (a COPY's line), for errors.
    lines: Vec<u64>,
}

impl RowBatch {
    /// Rows in the batch.
    pub fn rows(&self) -> usize {
        self.lines.len()
    }

    /// Bytes of line protocol the batch holds.
    pub fn bytes(&self) -> usize {
        self.body.len()
    }

    /// The rows as the line protocol that will be written.
    pub fn line_protocol(&self) -> &[u8] {
        &self.body
    }
}

impl RowWriter {
    /// The rows of `table` in `database`, of `columns` in that order (empty: every column,
    /// `time` first, then tags and fields, as `SELECT *` gives them). `table` and `columns`
    /// are SQL as written in the statement (quoted, qualified): they are read as the
    /// `INSERT INTO table (columns)` they stand for, and checked as it checks them.
    pub fn new(
        engine: &Arc<Engine>,
        database: &str,
        table: &str,
        columns: &[String],
    ) -> Result<Self, QueryError> {
        let list = if columns.is_empty() {
            String::new()
        } else {
            format!("({})", columns.join(", "))
        };
        let insert = parse(&format!("INSERT INTO {table} {list} VALUES (NULL)"))?;
        let target =
            crate::catalog::in_statement_now(engine, database, || target(&insert, database))?;
        let schema = lookup(engine, &target)?;
        if engine.catalog().super_table(schema.id).is_some() {
            return Err(plan(
                format!(
                    "\"{}\" is a TDengine super table: rows go into its subtables",
                    schema.name
                ),
                target.position,
            ));
        }
        let columns = super::insert::columns(&insert, &schema, &target)?;
        Ok(RowWriter {
            engine: Arc::clone(engine),
            database: target.database,
            schema,
            columns,
        })
    }

    /// The columns' names, in the order rows give them.
    pub fn column_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.columns.iter().map(|c| c.name.as_str())
    }

    /// What each column is, in the order rows give them.
    pub fn column_types(&self) -> impl ExactSizeIterator<Item = ColumnType> + '_ {
        self.columns.iter().map(|c| match c.kind {
            Kind::Time => ColumnType::Time,
            Kind::Tag => ColumnType::Tag,
            Kind::Field(field_type) => ColumnType::Field(field_type),
        })
    }

    /// Checks one row, one value per column (`None` for NULL), and adds it to `batch` as
    /// row `line`. A bad value is an error naming its column; nothing of the row is added.
    pub fn push(
        &self,
        batch: &mut RowBatch,
        values: &[Option<RowValue<'_>>],
        line: u64,
    ) -> Result<(), QueryError> {
        if values.len() != self.columns.len() {
            return Err(unplaced(format!(
                "row has {} values for {} columns",
                values.len(),
                self.columns.len()
            )));
        }
        let mut time = None;
        let mut tags: Vec<(&str, &str)> = Vec::with_capacity(values.len());
        let mut fields: Vec<(&str, FieldValue<'_>)> = Vec::with_capacity(values.len());
        for (column, value) in self.columns.iter().zip(values) {
            let name = column.name.as_str();
            let Some(value) = *value else {
                if matches!(column.kind, Kind::Time) {
                    return Err(unplaced("time cannot be NULL: every row needs one"));
                }
                continue;
            };
            match (&column.kind, value) {
                (Kind::Time, RowValue::Text(text)) => time = Some(self.time(text)?),
                (Kind::Time, RowValue::Time(nanos)) => time = Some(nanos),
                (Kind::Tag, RowValue::Text("")) => {
                    return Err(unplaced(format!(
                        "tag \"{name}\" cannot be empty; use NULL to leave it out"
                    )));
                }
                (Kind::Tag, RowValue::Text(text)) => tags.push((name, text)),
                (Kind::Field(field_type), RowValue::Text(text)) => {
                    fields.push((name, field(text, name, *field_type)?));
                }
                (Kind::Field(FieldType::Float), RowValue::Float(value)) => {
                    fields.push((name, finite(value, name, &value.to_string())?));
                }
                (Kind::Field(FieldType::Integer), RowValue::Integer(value)) => {
                    fields.push((name, FieldValue::Integer(value)));
                }
                (Kind::Field(FieldType::Unsigned), RowValue::Unsigned(value)) => {
                    fields.push((name, FieldValue::UInteger(value)));
                }
                (Kind::Field(FieldType::Boolean), RowValue::Boolean(value)) => {
                    fields.push((name, FieldValue::Boolean(value)));
                }
                (kind, value) => {
                    let is = match kind {
                        Kind::Time => "the time".to_owned(),
                        Kind::Tag => "a tag".to_owned(),
                        Kind::Field(field_type) => field_type.to_string(),
                    };
                    return Err(unplaced(format!(
                        "column \"{name}\" is {is}; {} is not",
                        value.kind()
                    )));
                }
            }
        }
        if fields.is_empty() {
            return Err(unplaced(
                "row has no field value (all NULL): a row stores at least one field",
            ));
        }
        let start = batch.body.len();
        write_line(&mut batch.body, &self.schema.name, &tags, &fields, time).map_err(|e| {
            batch.body.truncate(start);
            unplaced(format!("row cannot be written: {e}"))
        })?;
        batch.lines.push(line);
        Ok(())
    }

    /// Writes `batch` and returns how many rows were written. When the engine refuses a
    /// row (a concurrent write gave its column another type, a series limit), the rows
    /// before and after it are still stored; the error names its line and the count.
    pub async fn write(&self, batch: RowBatch) -> Result<u64, QueryError> {
        let RowBatch { body, lines } = batch;
        let report = write_lines(&self.engine, self.database.clone(), body).await?;
        if let Some(first) = report.errors.first() {
            let line = lines
                .get(first.line.saturating_sub(1))
                .copied()
                .unwrap_or(0);
            return Err(unplaced(format!(
                "line {line} was not written: {}; {} of the {} rows sent with it were written",
                first.message,
                report.rows,
                lines.len()
            )));
        }
        Ok(report.rows)
    }

    /// The time of a row, in nanoseconds since the epoch.
    fn time(&self, text: &str) -> Result<i64, QueryError> {
        if let Some(unit) = self.schema.time_unit {
            let trimmed = text.trim();
            if let Ok(count) = trimmed.parse::<i64>() {
                return count.checked_mul(unit.nanos_per_unit()).ok_or_else(|| {
                    data(
                        DataFault::OutOfRange,
                        format!(
                            "time {trimmed} is out of range: times run from 1677-09-21 to \
                             2262-04-11"
                        ),
                    )
                });
            }
        }
        string_to_timestamp_nanos(&with_seconds(text.trim())).map_err(|e| {
            data(
                DataFault::InvalidDatetime,
                format!("invalid input syntax for type timestamp: \"{text}\" ({e})"),
            )
        })
    }
}

/// The value of field `name` of `field_type` read from `text`, as Postgres reads text of
/// the column's type.
pub(super) fn field<'a>(
    text: &'a str,
    name: &str,
    field_type: FieldType,
) -> Result<FieldValue<'a>, QueryError> {
    let trimmed = text.trim();
    let invalid = |type_name: &str| {
        data(
            DataFault::InvalidText,
            format!("invalid input syntax for type {type_name}: \"{text}\""),
        )
    };
    let out_of_range = |type_name: &str| {
        data(
            DataFault::OutOfRange,
            format!("value \"{trimmed}\" is out of range for type {type_name} (column \"{name}\")"),
        )
    };
    let integral = |digits: &str| {
        let digits = digits.strip_prefix(['-', '+']).unwrap_or(digits);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    Ok(match field_type {
        FieldType::Float => {
            let value: f64 = trimmed.parse().map_err(|_| invalid("double precision"))?;
            return finite(value, name, trimmed);
        }
        FieldType::Integer => match trimmed.parse() {
            Ok(value) => FieldValue::Integer(value),
            Err(_) if integral(trimmed) => return Err(out_of_range("bigint")),
            Err(_) => return Err(invalid("bigint")),
        },
        FieldType::Unsigned => match trimmed.parse() {
            Ok(value) => FieldValue::UInteger(value),
            Err(_) if integral(trimmed) => return Err(out_of_range("unsigned")),
            Err(_) => return Err(invalid("unsigned")),
        },
        FieldType::Boolean => {
            let is = |words: &[&str]| words.iter().any(|w| trimmed.eq_ignore_ascii_case(w));
            if is(&["t", "true", "y", "yes", "on", "1"]) {
                FieldValue::Boolean(true)
            } else if is(&["f", "false", "n", "no", "off", "0"]) {
                FieldValue::Boolean(false)
            } else {
                return Err(invalid("boolean"));
            }
        }
        FieldType::String => FieldValue::String(Cow::Borrowed(text)),
    })
}

/// A float field's value, which must be finite: line protocol cannot carry NaN or
/// infinities. `written` is how the value came, for the error.
fn finite(value: f64, name: &str, written: &str) -> Result<FieldValue<'static>, QueryError> {
    if value.is_finite() {
        return Ok(FieldValue::Float(value));
    }
    Err(data(
        DataFault::OutOfRange,
        format!(
            "column \"{name}\" takes finite floats; \"{written}\" is not one (line protocol \
             cannot carry NaN or infinities)"
        ),
    ))
}

fn data(fault: DataFault, message: String) -> QueryError {
    QueryError::Data { message, fault }
}

/// An error about a row's values, which have no place in any statement's text.
fn unplaced(message: impl Into<String>) -> QueryError {
    QueryError::Plan {
        message: message.into(),
        position: None::<Position>,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use datafusion::arrow::util::pretty::pretty_format_batches;

    use super::*;
    use crate::QueryEngine;
    use crate::test_engine::engine_with_rows;

    async fn engine_with_table(dir: &std::path::Path) -> QueryEngine {
        let sql = QueryEngine::new(engine_with_rows(dir)).unwrap();
        sql.sql(
            "db",
            "CREATE TABLE t (host VARCHAR TAG, time TIMESTAMP, f DOUBLE, i BIGINT, \
             u BIGINT UNSIGNED, b BOOLEAN, s VARCHAR)",
        )
        .await
        .unwrap();
        sql.sql("db", "CREATE TABLE n (time BIGINT UNIT ms, v DOUBLE)")
            .await
            .unwrap();
        sql
    }

    fn text<'a>(values: &[Option<&'a str>]) -> Vec<Option<RowValue<'a>>> {
        values.iter().map(|v| v.map(RowValue::Text)).collect()
    }

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    async fn select(sql: &QueryEngine, statement: &str) -> String {
        pretty_format_batches(&sql.sql("db", statement).await.unwrap())
            .unwrap()
            .to_string()
    }

    #[tokio::test]
    async fn text_values_are_read_by_column_type_and_written() {
        let dir = tempfile::tempdir().unwrap();
        let sql = engine_with_table(dir.path()).await;
        let rows = RowWriter::new(
            sql.engine(),
            "db",
            "\"t\"",
            &columns(&["time", "\"host\"", "f", "i", "u", "b", "s"]),
        )
        .unwrap();
        assert_eq!(
            rows.column_names().collect::<Vec<_>>(),
            ["time", "host", "f", "i", "u", "b", "s"]
        );
        let mut batch = RowBatch::default();
        let values = [
            [
                Some("2026-01-01T00:00:00Z"),
                Some("a b"),
                Some(" 1.5 "),
                Some("-7"),
                Some("18446744073709551615"),
                Some("yes"),
                Some("it's, \"quoted\""),
            ],
            [
                Some("2026-01-01 00:00:01"),
                None,
                None,
                Some("+3"),
                None,
                Some("F"),
                Some(""),
            ],
        ];
        for (line, row) in values.iter().enumerate() {
            rows.push(&mut batch, &text(row), line as u64 + 1).unwrap();
        }
        assert_eq!(batch.rows(), 2);
        assert_eq!(rows.write(batch).await.unwrap(), 2);
        let got = select(&sql, "SELECT * FROM t ORDER BY time").await;
        let want = [
            "+---------------------+------+-----+----+----------------------+-------+----------------+",
            "| time                | host | f   | i  | u                    | b     | s              |",
            "+---------------------+------+-----+----+----------------------+-------+----------------+",
            "| 2026-01-01T00:00:00 | a b  | 1.5 | -7 | 18446744073709551615 | true  | it's, \"quoted\" |",
            "| 2026-01-01T00:00:01 |      |     | 3  |                      | false |                |",
            "+---------------------+------+-----+----+----------------------+-------+----------------+",
        ];
        assert_eq!(got, want.join("\n"));
        // Strings are kept as they are, space and all; an empty one is not NULL.
        let mut spaced = RowBatch::default();
        let row = [
            Some("2026-01-01T00:00:02Z"),
            None,
            None,
            None,
            None,
            None,
            Some(" x "),
        ];
        rows.push(&mut spaced, &text(&row), 3).unwrap();
        rows.write(spaced).await.unwrap();
        let lengths = select(&sql, "SELECT length(s) AS n FROM t ORDER BY time").await;
        assert!(
            lengths.ends_with("| 14 |\n| 0  |\n| 3  |\n+----+"),
            "{lengths}"
        );

        // Every column, in `SELECT *`'s order; a `time BIGINT` table counts its unit.
        let all = RowWriter::new(sql.engine(), "db", "n", &[]).unwrap();
        assert_eq!(all.column_names().collect::<Vec<_>>(), ["time", "v"]);
        let mut batch = RowBatch::default();
        all.push(&mut batch, &text(&[Some("1767225600000"), Some("2")]), 1)
            .unwrap();
        all.push(
            &mut batch,
            &text(&[Some("2026-01-01T00:00:01Z"), Some("3")]),
            2,
        )
        .unwrap();
        assert_eq!(all.write(batch).await.unwrap(), 2);
        let got = select(
            &sql,
            "SELECT CAST(time AS VARCHAR) AS t, v FROM n ORDER BY time",
        )
        .await;
        assert!(got.contains("| 2026-01-01T00:00:00 | 2.0 |"), "{got}");
        assert!(got.contains("| 2026-01-01T00:00:01 | 3.0 |"), "{got}");
    }

    #[tokio::test]
    async fn typed_values_go_to_columns_of_their_type_only() {
        let dir = tempfile::tempdir().unwrap();
        let sql = engine_with_table(dir.path()).await;
        let rows = RowWriter::new(
            sql.engine(),
            "db",
            "t",
            &columns(&["time", "host", "f", "i", "u", "b", "s"]),
        )
        .unwrap();
        assert_eq!(
            rows.column_types().collect::<Vec<_>>(),
            [
                ColumnType::Time,
                ColumnType::Tag,
                ColumnType::Field(FieldType::Float),
                ColumnType::Field(FieldType::Integer),
                ColumnType::Field(FieldType::Unsigned),
                ColumnType::Field(FieldType::Boolean),
                ColumnType::Field(FieldType::String),
            ]
        );
        let row = [
            Some(RowValue::Time(1_767_225_600_000_000_000)),
            Some(RowValue::Text("h")),
            Some(RowValue::Float(-0.5)),
            Some(RowValue::Integer(i64::MIN)),
            Some(RowValue::Unsigned(u64::MAX)),
            Some(RowValue::Boolean(true)),
            Some(RowValue::Text("s")),
        ];
        let mut batch = RowBatch::default();
        rows.push(&mut batch, &row, 1).unwrap();
        assert_eq!(
            std::str::from_utf8(batch.line_protocol()).unwrap(),
            "t,host=h f=-0.5,i=-9223372036854775808i,u=18446744073709551615u,b=true,s=\"s\" \
             1767225600000000000\n"
        );
        for (column, value, message) in [
            (
                0,
                RowValue::Float(1.0),
                "column \"time\" is the time; a float is not",
            ),
            (
                1,
                RowValue::Integer(1),
                "column \"host\" is a tag; an integer is not",
            ),
            (2, RowValue::Integer(1), "\"f\" is float; an integer is not"),
            (2, RowValue::Float(f64::NAN), "takes finite floats"),
            (
                3,
                RowValue::Unsigned(1),
                "\"i\" is integer; an unsigned integer is not",
            ),
            (
                4,
                RowValue::Integer(1),
                "\"u\" is unsigned; an integer is not",
            ),
            (5, RowValue::Time(0), "\"b\" is boolean; a timestamp is not"),
            (
                6,
                RowValue::Boolean(true),
                "\"s\" is string; a boolean is not",
            ),
        ] {
            let mut bad = row;
            bad[column] = Some(value);
            let err = rows.push(&mut batch, &bad, 2).unwrap_err();
            assert!(err.to_string().contains(message), "{value:?}: {err}");
        }
        assert_eq!(rows.write(batch).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn a_bad_value_is_refused_with_its_column_and_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sql = engine_with_table(dir.path()).await;
        let rows = RowWriter::new(
            sql.engine(),
            "db",
            "t",
            &columns(&["time", "host", "f", "i", "u", "b"]),
        )
        .unwrap();
        let good = ["2026-01-01T00:00:00Z", "h", "1", "2", "3", "t"];
        let cases: [(usize, Option<&str>, &str, &str); 11] = [
            (
                0,
                Some("noon"),
                "data",
                "invalid input syntax for type timestamp: \"noon\"",
            ),
            (0, None, "plan", "time cannot be NULL"),
            (1, Some(""), "plan", "tag \"host\" cannot be empty"),
            (
                2,
                Some("1,5"),
                "data",
                "invalid input syntax for type double precision: \"1,5\"",
            ),
            (2, Some("NaN"), "data", "takes finite floats"),
            (2, Some("1e999"), "data", "takes finite floats"),
            (
                3,
                Some("1.5"),
                "data",
                "invalid input syntax for type bigint: \"1.5\"",
            ),
            (
                3,
                Some("9223372036854775808"),
                "data",
                "out of range for type bigint",
            ),
            (4, Some("-1"), "data", "out of range for type unsigned"),
            (
                5,
                Some("maybe"),
                "data",
                "invalid input syntax for type boolean",
            ),
            (1, Some("a\nb"), "plan", "row cannot be written"),
        ];
        let mut batch = RowBatch::default();
        rows.push(&mut batch, &text(&good.map(Some)), 1).unwrap();
        let bytes = batch.bytes();
        for (column, value, kind, message) in cases {
            let mut row = good.map(Some);
            row[column] = value;
            let err = rows.push(&mut batch, &text(&row), 2).unwrap_err();
            assert_eq!(err.kind(), kind, "{err}");
            assert!(err.to_string().contains(message), "{value:?}: {err}");
        }
        let nulls = [Some(good[0]), Some("h"), None, None, None, None];
        let err = rows.push(&mut batch, &text(&nulls), 2).unwrap_err();
        assert!(err.to_string().contains("no field value"), "{err}");
        let err = rows.push(&mut batch, &text(&nulls[..2]), 2).unwrap_err();
        assert!(err.to_string().contains("2 values for 6 columns"), "{err}");
        assert_eq!((batch.rows(), batch.bytes()), (1, bytes));
        assert_eq!(rows.write(batch).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn the_target_is_checked_as_insert_checks_it() {
        let dir = tempfile::tempdir().unwrap();
        let sql = engine_with_table(dir.path()).await;
        for (table, names, message) in [
            (
                "nope",
                vec![],
                "table \"nope\" not found in database \"db\"",
            ),
            ("t", vec!["host", "f"], "needs \"time\""),
            (
                "t",
                vec!["time", "zz"],
                "column \"zz\" is not in table \"t\"",
            ),
            ("t", vec!["time", "f", "F"], "listed twice"),
            ("a.b.c.d", vec![], "at most three parts"),
        ] {
            let err =
                RowWriter::new(sql.engine(), "db", table, &columns(&names)).expect_err(message);
            assert!(err.to_string().contains(message), "{table}: {err}");
        }
        // `public`, Postgres's default schema, is the statement's database.
        let public = RowWriter::new(sql.engine(), "db", "public.n", &[]).unwrap();
        assert_eq!(public.column_names().collect::<Vec<_>>(), ["time", "v"]);
        // Another database, named in the table.
        sql.sql("db", "CREATE DATABASE other").await.unwrap();
        sql.sql("other", "CREATE TABLE o (time TIMESTAMP, v DOUBLE)")
            .await
            .unwrap();
        let rows = RowWriter::new(sql.engine(), "db", "other.o", &[]).unwrap();
        let mut batch = RowBatch::default();
        rows.push(
            &mut batch,
            &text(&[Some("2026-01-01T00:00:00Z"), Some("1")]),
            1,
        )
        .unwrap();
        assert_eq!(rows.write(batch).await.unwrap(), 1);
        assert!(
            select(&sql, "SELECT count(*) AS n FROM other.o")
                .await
                .contains("| 1 |")
        );
    }
}
