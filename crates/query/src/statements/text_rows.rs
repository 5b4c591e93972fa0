//! Rows whose values come as text, one per column: what `COPY … FROM STDIN` reads. Each
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
use strata_lineproto::writer::write_line;
use strata_lineproto::{FieldValue, Precision};
use strata_storage::Engine;
use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;

use super::blocking;
use super::insert::{Column, Kind, parse, target};
use super::show::lookup;
use super::tokens::plan;
use crate::error::{DataFault, Position, QueryError};

/// A table's columns, in the order text rows give them, ready to check and write rows.
#[derive(Debug, Clone)]
pub struct TextRows {
    engine: Arc<Engine>,
    database: String,
    schema: Arc<TableSchema>,
    columns: Vec<Column>,
}

/// Rows checked and not yet written, as line protocol.
#[derive(Debug, Default)]
pub struct TextBatch {
    body: Vec<u8>,
    /// The caller's number of each row (a COPY's line), for errors.
    lines: Vec<u64>,
}

impl TextBatch {
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

impl TextRows {
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
        let target = target(&insert, database)?;
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
        Ok(TextRows {
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

    /// Checks one row, one value per column (`None` for NULL), and adds it to `batch` as
    /// row `line`. A bad value is an error naming its column; nothing of the row is added.
    pub fn push(
        &self,
        batch: &mut TextBatch,
        values: &[Option<&str>],
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
            match (&column.kind, value) {
                (Kind::Time, None) => {
                    return Err(unplaced("time cannot be NULL: every row needs one"));
                }
                (Kind::Time, Some(text)) => time = Some(self.time(text)?),
                (_, None) => {}
                (Kind::Tag, Some("")) => {
                    return Err(unplaced(format!(
                        "tag \"{name}\" cannot be empty; use NULL to leave it out"
                    )));
                }
                (Kind::Tag, Some(text)) => tags.push((name, text)),
                (Kind::Field(field_type), Some(text)) => {
                    fields.push((name, field(text, name, *field_type)?));
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
    pub async fn write(&self, batch: TextBatch) -> Result<u64, QueryError> {
        let engine = Arc::clone(&self.engine);
        let database = self.database.clone();
        let TextBatch { body, lines } = batch;
        let report = blocking(move || {
            engine
                .write_lines(&database, &body, Precision::Nanoseconds)
                .map_err(QueryError::Storage)
        })
        .await?;
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
                let per = match unit {
                    Precision::Nanoseconds => 1,
                    Precision::Microseconds => 1_000,
                    Precision::Milliseconds => 1_000_000,
                    Precision::Seconds => 1_000_000_000,
                };
                return count.checked_mul(per).ok_or_else(|| {
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
        string_to_timestamp_nanos(text.trim()).map_err(|e| {
            data(
                DataFault::InvalidDatetime,
                format!("invalid input syntax for type timestamp: \"{text}\" ({e})"),
            )
        })
    }
}

/// The value of field `name` of `field_type` read from `text`.
fn field<'a>(
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
            if !value.is_finite() {
                return Err(data(
                    DataFault::OutOfRange,
                    format!(
                        "column \"{name}\" takes finite floats; \"{trimmed}\" is not one \
                         (line protocol cannot carry NaN or infinities)"
                    ),
                ));
            }
            FieldValue::Float(value)
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
        let rows = TextRows::new(
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
        let mut batch = TextBatch::default();
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
            rows.push(&mut batch, row, line as u64 + 1).unwrap();
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
        let mut spaced = TextBatch::default();
        let row = [
            Some("2026-01-01T00:00:02Z"),
            None,
            None,
            None,
            None,
            None,
            Some(" x "),
        ];
        rows.push(&mut spaced, &row, 3).unwrap();
        rows.write(spaced).await.unwrap();
        let lengths = select(&sql, "SELECT length(s) AS n FROM t ORDER BY time").await;
        assert!(
            lengths.ends_with("| 14 |\n| 0  |\n| 3  |\n+----+"),
            "{lengths}"
        );

        // Every column, in `SELECT *`'s order; a `time BIGINT` table counts its unit.
        let all = TextRows::new(sql.engine(), "db", "n", &[]).unwrap();
        assert_eq!(all.column_names().collect::<Vec<_>>(), ["time", "v"]);
        let mut batch = TextBatch::default();
        all.push(&mut batch, &[Some("1767225600000"), Some("2")], 1)
            .unwrap();
        all.push(&mut batch, &[Some("2026-01-01T00:00:01Z"), Some("3")], 2)
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
    async fn a_bad_value_is_refused_with_its_column_and_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let sql = engine_with_table(dir.path()).await;
        let rows = TextRows::new(
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
        let mut batch = TextBatch::default();
        rows.push(&mut batch, &good.map(Some), 1).unwrap();
        let bytes = batch.bytes();
        for (column, value, kind, message) in cases {
            let mut row = good.map(Some);
            row[column] = value;
            let err = rows.push(&mut batch, &row, 2).unwrap_err();
            assert_eq!(err.kind(), kind, "{err}");
            assert!(err.to_string().contains(message), "{value:?}: {err}");
        }
        let nulls = [Some(good[0]), Some("h"), None, None, None, None];
        let err = rows.push(&mut batch, &nulls, 2).unwrap_err();
        assert!(err.to_string().contains("no field value"), "{err}");
        let err = rows.push(&mut batch, &nulls[..2], 2).unwrap_err();
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
                TextRows::new(sql.engine(), "db", table, &columns(&names)).expect_err(message);
            assert!(err.to_string().contains(message), "{table}: {err}");
        }
        // Another database, named in the table.
        sql.sql("db", "CREATE DATABASE other").await.unwrap();
        sql.sql("other", "CREATE TABLE o (time TIMESTAMP, v DOUBLE)")
            .await
            .unwrap();
        let rows = TextRows::new(sql.engine(), "db", "other.o", &[]).unwrap();
        let mut batch = TextBatch::default();
        rows.push(&mut batch, &[Some("2026-01-01T00:00:00Z"), Some("1")], 1)
            .unwrap();
        assert_eq!(rows.write(batch).await.unwrap(), 1);
        assert!(
            select(&sql, "SELECT count(*) AS n FROM other.o")
                .await
                .contains("| 1 |")
        );
    }
}
