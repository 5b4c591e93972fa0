//! The statements Strata runs itself instead of handing them to DataFusion: `SHOW TABLES`,
//! `SHOW TAGS|FIELDS FROM t`, `SHOW TAG VALUES FROM t WITH KEY …`, `DESCRIBE t`,
//! `CREATE TABLE`, `INSERT INTO … VALUES`, `DROP TABLE`, `DELETE FROM t [WHERE …]`, and
//! `CREATE | ALTER | DROP DATABASE` and `SHOW DATABASES`, `CREATE | DROP DOWNSAMPLE` and
//! `SHOW DOWNSAMPLES`, and TDengine's `CREATE STABLE`, `CREATE TABLE … USING` and
//! `INSERT INTO d USING … TAGS …` (reference: `docs/sql.md`).
//!
//! [`execute`] looks at a statement's first words; anything else returns `None` and goes to
//! DataFusion unchanged. Results are record batches like a query's: one batch for `SHOW`
//! and `DESCRIBE` (even with no rows, so the columns are known), one row `count` for
//! `INSERT`, nothing for `CREATE`, `DROP` and `DELETE`.
//!
//! Files: `tokens.rs` (token cursor, names, errors), `show.rs` (SHOW, DESCRIBE),
//! `create.rs`, `drop.rs`, `delete.rs`, `database.rs`, `downsample.rs`, `insert.rs` (with `values.rs`: SQL
//! literals to line protocol values), `supertable.rs` and `tdengine_insert.rs` (TDengine's
//! super tables and subtables). `row_writer.rs` writes rows of values (text or typed) as
//! `INSERT` does, without SQL: `COPY … FROM STDIN` on the Postgres wire.

mod create;
mod database;
mod delete;
mod downsample;
mod drop;
mod insert;
mod row_writer;
mod show;
mod supertable;
mod tdengine_insert;
mod tokens;
mod values;

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use strata_storage::Engine;

use crate::error::QueryError;
use crate::guard::QueryStream;
pub use row_writer::{ColumnType, RowBatch, RowValue, RowWriter};
use tokens::{Cursor, is_keyword};

/// What a statement returned: its columns and its rows.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// The result's columns (empty for `CREATE` and `DROP`).
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

impl Output {
    /// No columns, no rows: what `CREATE`, `DROP` and `DELETE` return.
    fn empty() -> Self {
        Self {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
        }
    }

    /// One batch of non-null string columns named `names`, row by row.
    fn strings(names: &[&str], rows: Vec<Vec<String>>) -> Result<Self, QueryError> {
        let schema = Arc::new(Schema::new(
            names
                .iter()
                .map(|n| Field::new(*n, DataType::Utf8, false))
                .collect::<Vec<_>>(),
        ));
        let columns: Vec<ArrayRef> = (0..names.len())
            .map(|i| {
                Arc::new(StringArray::from_iter_values(
                    rows.iter().map(|row| row[i].as_str()),
                )) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(|e| {
            QueryError::Execution {
                message: format!("cannot build the result: {e}"),
            }
        })?;
        Ok(Self {
            schema,
            batches: vec![batch],
        })
    }
}

/// Runs `statement` if it is one of Strata's own statements (unqualified table names in
/// `database`); `None` if DataFusion should run it.
pub(crate) async fn execute(
    engine: &Arc<Engine>,
    database: &str,
    statement: &str,
) -> Option<Result<QueryStream, QueryError>> {
    let mut cursor = ours(statement)?;
    let running = run(engine, database, statement, &mut cursor);
    let output = crate::catalog::in_statement(engine, database, running).await;
    Some(output.map(|o| QueryStream::from_batches(o.schema, o.batches)))
}

/// The types of an `INSERT`'s parameters, by number, where they stand for a column's value
/// (see `insert::parameter_types`); empty for any other statement.
pub(crate) fn parameter_types(
    engine: &Engine,
    database: &str,
    statement: &str,
) -> Vec<Option<DataType>> {
    if !first_word(statement).eq_ignore_ascii_case("INSERT") {
        return Vec::new();
    }
    insert::parameter_types(engine, database, statement)
}

/// Whether `statement` is one of Strata's own statements (see the module doc), which
/// Strata runs itself rather than DataFusion.
pub fn is_strata_statement(statement: &str) -> bool {
    ours(statement).is_some()
}

/// A cursor at the start of `statement` if it is one of Strata's own statements.
fn ours(statement: &str) -> Option<Cursor> {
    // Queries skip the tokenizer: only these first words can start one of ours.
    let first = first_word(statement);
    if ![
        "SHOW", "DESCRIBE", "DESC", "CREATE", "DROP", "ALTER", "INSERT", "DELETE",
    ]
    .iter()
    .any(|w| first.eq_ignore_ascii_case(w))
    {
        return None;
    }
    let cursor = Cursor::new(statement)?;
    let second = cursor.peek_second();
    let ours = match cursor.peek() {
        Some(first) if is_keyword(Some(first), "SHOW") => [
            "TABLES",
            "TAGS",
            "FIELDS",
            "TAG",
            "DATABASES",
            "DOWNSAMPLES",
        ]
        .iter()
        .any(|w| is_keyword(second, w)),
        Some(first) if is_keyword(Some(first), "DESCRIBE") || is_keyword(Some(first), "DESC") => {
            true
        }
        Some(first) if is_keyword(Some(first), "CREATE") || is_keyword(Some(first), "DROP") => {
            ["TABLE", "DATABASE", "DOWNSAMPLE"]
                .iter()
                .any(|w| is_keyword(second, w))
                || (is_keyword(Some(first), "CREATE") && is_keyword(second, "STABLE"))
        }
        Some(first) if is_keyword(Some(first), "ALTER") => is_keyword(second, "DATABASE"),
        Some(first) => is_keyword(Some(first), "INSERT") || is_keyword(Some(first), "DELETE"),
        None => false,
    };
    ours.then_some(cursor)
}

async fn run(
    engine: &Arc<Engine>,
    database: &str,
    statement: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    if cursor.eat_keyword("SHOW") {
        if cursor.eat_keyword("DATABASES") {
            return database::show(engine, cursor);
        }
        if cursor.eat_keyword("DOWNSAMPLES") {
            return downsample::show(engine, database, cursor);
        }
        return show::show(engine, database, cursor);
    }
    if cursor.eat_keyword("DESCRIBE") || cursor.eat_keyword("DESC") {
        return show::describe(engine, database, cursor);
    }
    if cursor.eat_keyword("ALTER") {
        let alter = database::parse_alter(cursor)?;
        return database::execute(engine, alter).await;
    }
    if cursor.eat_keyword("CREATE") {
        if cursor.at_keyword("DATABASE") {
            let create = database::parse_create(cursor)?;
            return database::execute(engine, create).await;
        }
        if cursor.at_keyword("DOWNSAMPLE") {
            let create = downsample::parse_create(database, cursor)?;
            return downsample::execute(engine, create).await;
        }
        if supertable::is_tdengine_create(cursor) {
            return supertable::create(engine, database, cursor).await;
        }
        let create = create::parse(database, cursor)?;
        return create::execute(engine, create).await;
    }
    if cursor.eat_keyword("DROP") {
        if cursor.at_keyword("DATABASE") {
            let drop = database::parse_drop(cursor)?;
            return database::execute(engine, drop).await;
        }
        if cursor.at_keyword("DOWNSAMPLE") {
            let drop = downsample::parse_drop(database, cursor)?;
            return downsample::execute(engine, drop).await;
        }
        let drop = drop::parse(database, cursor)?;
        return drop::execute(engine, drop).await;
    }
    if cursor.eat_keyword("DELETE") {
        let delete = delete::parse(engine, database, cursor)?;
        return delete::execute(engine, delete).await;
    }
    if tdengine_insert::is_subtable_insert(engine, database, cursor) {
        return tdengine_insert::execute(engine, database, cursor).await;
    }
    insert::execute(engine, database, statement).await
}

/// Whether `statement` only reads: it starts with `SELECT`, `WITH`, `SHOW`, `DESCRIBE`,
/// `DESC`, `EXPLAIN` or `VALUES`. What a read-only credential may run; anything else
/// (`INSERT`, `CREATE`, `ALTER`, `DROP`, `DELETE`, …) may change data.
pub fn is_read_statement(statement: &str) -> bool {
    let first = first_word(statement);
    [
        "SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "VALUES",
    ]
    .iter()
    .any(|w| first.eq_ignore_ascii_case(w))
}

/// The statement's first word, after whitespace and comments (`""` if there is none).
fn first_word(statement: &str) -> &str {
    let mut rest = statement;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Writes `body` (line protocol, nanosecond times) into `database` through
/// `Engine::write_lines` off the async runtime's threads: the write of `INSERT` and of a
/// `COPY`'s rows.
async fn write_lines(
    engine: &Arc<Engine>,
    database: String,
    body: Vec<u8>,
) -> Result<strata_storage::WriteReport, QueryError> {
    let engine = Arc::clone(engine);
    blocking(move || {
        engine
            .write_lines(&database, &body, strata_lineproto::Precision::Nanoseconds)
            .map_err(QueryError::Storage)
    })
    .await
}

/// Runs blocking storage work (WAL and catalog fsyncs) off the async runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, QueryError> + Send + 'static,
) -> Result<T, QueryError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| QueryError::Execution {
            message: format!("statement task failed: {e}"),
        })?
}

#[cfg(test)]
mod tests {
    use super::{first_word, is_read_statement};

    #[test]
    fn reads_are_told_from_statements_that_change_data() {
        for read in [
            "select 1",
            "/* c */ WITH a AS (SELECT 1) SELECT * FROM a",
            "SHOW TABLES",
            "explain select 1",
            "DESC t",
        ] {
            assert!(is_read_statement(read), "{read}");
        }
        for write in [
            "INSERT INTO t VALUES (1)",
            "DROP TABLE t",
            "delete from t",
            "ALTER DATABASE d SET RETENTION 1d",
            "create database x",
            "",
        ] {
            assert!(!is_read_statement(write), "{write}");
        }
    }

    #[test]
    fn the_first_word_skips_whitespace_and_comments() {
        assert_eq!(first_word("  SELECT 1"), "SELECT");
        assert_eq!(first_word("-- note\n\tshow tables"), "show");
        assert_eq!(first_word("/* a */ /* b\n */INSERT INTO t"), "INSERT");
        assert_eq!(first_word("DESC(x)"), "DESC");
        assert_eq!(first_word("-- only a comment"), "");
        assert_eq!(first_word(""), "");
    }
}
