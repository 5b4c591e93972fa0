//! The SQL front: database resolution over a live catalog, `time_bucket`, errors.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::{HOUR_NS, START_NS, open_engine};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_lineproto::Precision;
use strata_query::{DataFault, Position, QueryEngine, QueryError};

fn table_text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

#[tokio::test]
async fn time_bucket_is_date_bin() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let minute = 60_000_000_000;
    let mut body = String::new();
    for (offset, value) in [(0, 1.0), (minute, 2.0), (59 * minute, 3.0), (HOUR_NS, 4.0)] {
        body.push_str(&format!("m,host=a v={value:?} {}\n", START_NS + offset));
    }
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    let bucketed = sql
        .sql(
            "db",
            "SELECT time_bucket(INTERVAL '30 minutes', time) AS b, count(*) AS n, sum(v) AS s \
             FROM m GROUP BY b ORDER BY b",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&bucketed),
        "+---------------------+---+-----+\n\
         | b                   | n | s   |\n\
         +---------------------+---+-----+\n\
         | 2023-11-14T22:00:00 | 2 | 3.0 |\n\
         | 2023-11-14T22:30:00 | 1 | 3.0 |\n\
         | 2023-11-14T23:00:00 | 1 | 4.0 |\n\
         +---------------------+---+-----+"
    );
    let with_origin = sql
        .sql(
            "db",
            "SELECT time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2000-01-01T00:30:00') AS b, \
             count(*) AS n FROM m GROUP BY b ORDER BY b",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&with_origin),
        "+---------------------+---+\n\
         | b                   | n |\n\
         +---------------------+---+\n\
         | 2023-11-14T21:30:00 | 2 |\n\
         | 2023-11-14T22:30:00 | 2 |\n\
         +---------------------+---+"
    );
}

#[tokio::test]
async fn unqualified_names_resolve_in_the_statement_database() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let t = START_NS;
    engine
        .write_lines(
            "one",
            format!("m v=1i {t}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    // A table made after the query engine: visible to the next statement.
    engine
        .write_lines(
            "two",
            format!("m v=2i {t}\nm v=3i {}\n", t + 1).as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    let count = |batches: Vec<RecordBatch>| table_text(&batches);
    assert!(count(sql.sql("one", "SELECT sum(v) FROM m").await.unwrap()).contains("| 1 "));
    assert!(count(sql.sql("two", "SELECT sum(v) FROM m").await.unwrap()).contains("| 5 "));
    assert!(
        count(sql.sql("one", "SELECT sum(v) FROM two.m").await.unwrap()).contains("| 5 "),
        "database-qualified"
    );
    assert!(
        count(
            sql.sql("one", "SELECT sum(v) FROM strata.two.m")
                .await
                .unwrap()
        )
        .contains("| 5 "),
        "fully qualified"
    );
    // A column added after the first query is seen by the next.
    engine
        .write_lines(
            "one",
            format!("m w=7i {}\n", t + 5).as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    assert!(count(sql.sql("one", "SELECT sum(w) FROM m").await.unwrap()).contains("| 7 "));

    let err = sql.sql("three", "SELECT * FROM m").await.unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert!(err.to_string().contains("not found"), "{err}");

    // The system catalog's tables unqualified, as Postgres finds them; a table of the
    // database with such a name comes first.
    let relname = "SELECT relname FROM pg_class WHERE relname = 'm'";
    assert!(count(sql.sql("one", relname).await.unwrap()).contains("| m "));
    let joined = "SELECT t.typname FROM pg_type t JOIN pg_namespace n ON t.typnamespace = n.oid \
                  WHERE t.typname = 'int8'";
    assert!(count(sql.sql("one", joined).await.unwrap()).contains("| int8 "));
    engine
        .write_lines(
            "one",
            format!("pg_class relname=\"mine\" {t}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    let mine = count(
        sql.sql("one", "SELECT relname FROM pg_class")
            .await
            .unwrap(),
    );
    assert!(mine.contains("| mine ") && !mine.contains("| m "), "{mine}");
    let err = sql
        .sql("one", "SELECT * FROM pg_nothing")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");
}

/// `public`, Postgres's default schema, which clients and ORMs write out, is the
/// statement's own database, in queries (DataFusion's and the direct path), `INSERT`,
/// `DESCRIBE` and `DELETE`; until a database is named `public`.
#[tokio::test]
async fn public_is_the_statements_database_until_one_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    let t = START_NS;
    engine
        .write_lines(
            "one",
            format!("m,host=a v=1i {t}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    let text = |batches: Vec<RecordBatch>| table_text(&batches);
    for q in [
        "SELECT sum(v) FROM public.m",
        "SELECT sum(v) FROM \"public\".\"m\"",
        "SELECT sum(v) FROM strata.public.m",
        "SELECT sum(n.v) FROM public.m JOIN public.m AS n USING (host, time)",
    ] {
        assert!(
            text(sql.sql("one", q).await.unwrap()).contains("| 1 "),
            "{q}"
        );
    }
    // The direct path (an aggregate it answers itself) and Strata's own statements.
    let direct = "SELECT sum(v) FROM public.m WHERE host = 'a'".to_owned();
    assert!(sql.is_direct("one", &direct), "{direct}");
    assert!(
        text(sql.sql("one", &direct).await.unwrap()).contains("| 1 "),
        "{direct}"
    );
    sql.sql(
        "one",
        &format!(
            "INSERT INTO public.m (time, host, v) VALUES ({}, 'b', 2)",
            t + 1
        ),
    )
    .await
    .unwrap();
    assert!(text(sql.sql("one", "DESCRIBE public.m").await.unwrap()).contains("host"));
    assert!(text(sql.sql("one", "SELECT sum(v) FROM m").await.unwrap()).contains("| 3 "));
    sql.sql("one", "DELETE FROM public.m WHERE host = 'b'")
        .await
        .unwrap();
    assert!(text(sql.sql("one", "SELECT sum(v) FROM m").await.unwrap()).contains("| 1 "));
    // Once a database is named `public`, `public.m` is its table.
    engine
        .write_lines(
            "public",
            format!("m,host=z v=40i {t}\n").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    assert!(text(sql.sql("one", "SELECT sum(v) FROM public.m").await.unwrap()).contains("| 40 "));
    assert!(
        !text(sql.sql("one", &direct).await.unwrap()).contains("| 1 "),
        "{direct}"
    );
}

/// Postgres's `mod`, `div`, `width_bucket`, `md5` and `sha256`, answering as Postgres 15.18
/// does; a division by zero and a bucket count of 0 are refused as there.
#[tokio::test]
async fn postgres_arithmetic_and_hash_functions_answer_as_postgres() {
    let (_dir, sql) = one_row_of_m();
    let row = table_text(
        &sql.sql(
            "db",
            "SELECT mod(-7, 3) AS a, mod(7, -3) AS b, div(-7, 2) AS c, div(7.5, 2) AS d, \
             mod(7.5, 2) AS e, width_bucket(5.35, 0.024, 10.06, 5) AS f, \
             width_bucket(v, 0, 10, 4) AS g, md5('abc') AS h, encode(sha256('abc'), 'hex') AS i, \
             md5(host) AS j, mod(v, 2) AS k FROM m",
        )
        .await
        .unwrap(),
    );
    for want in [
        "| -1 | 1 | -3 | 3.0 | 1.5 | 3 | 1 | 900150983cd24fb0d6963f7d28e17f72 |",
        "| ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad |",
        "| 0cc175b9c0f1b6a831c399e269772661 | 1 |",
    ] {
        assert!(row.contains(want), "{want}\n{row}");
    }
    for (q, fault, message) in [
        (
            "SELECT mod(1, 0) AS v",
            DataFault::DivisionByZero,
            "Divide by zero",
        ),
        (
            "SELECT div(1.5, 0) AS v",
            DataFault::DivisionByZero,
            "Divide by zero",
        ),
        (
            "SELECT width_bucket(1, 0, 1, 0) AS v",
            DataFault::InvalidArgument,
            "count must be greater than zero",
        ),
    ] {
        let err = sql.sql("db", q).await.unwrap_err();
        assert!(
            matches!(&err, QueryError::Data { fault: f, .. } if *f == fault),
            "{q}: {err:?}"
        );
        assert!(err.to_string().contains(message), "{q}: {err}");
    }
}

/// A quoted literal for an existing number or boolean column is read as the column's type,
/// as Postgres reads an untyped literal (node-postgres sends every parameter so); text not
/// of the type is refused as Postgres refuses it.
#[tokio::test]
async fn quoted_literals_are_read_as_their_columns_types() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        "db",
        "CREATE TABLE m (time TIMESTAMP, host VARCHAR TAG, f DOUBLE, i BIGINT, u BIGINT UNSIGNED, b BOOLEAN, s VARCHAR)",
    )
    .await
    .unwrap();
    sql.sql(
        "db",
        "INSERT INTO m (time, host, f, i, u, b, s) VALUES \
         ('2026-01-01T00:00:00Z', 'a', '2.5', ' -7 ', '18446744073709551615', 'yes', '42')",
    )
    .await
    .unwrap();
    let row = table_text(&sql.sql("db", "SELECT f, i, u, b, s FROM m").await.unwrap());
    assert!(
        row.contains("| 2.5 | -7 | 18446744073709551615 | true | 42 |"),
        "{row}"
    );
    for (value, column, message) in [
        (
            "'abc'",
            "f",
            "column \"f\" is float: invalid input syntax for type double precision: \"abc\"",
        ),
        (
            "'2.5'",
            "i",
            "column \"i\" is integer: invalid input syntax for type bigint: \"2.5\"",
        ),
        (
            "'maybe'",
            "b",
            "invalid input syntax for type boolean: \"maybe\"",
        ),
        (
            "'-1'",
            "u",
            "value \"-1\" is out of range for type unsigned",
        ),
    ] {
        let q = format!("INSERT INTO m (time, host, {column}) VALUES (1, 'a', {value})");
        let err = sql.sql("db", &q).await.unwrap_err();
        // Placed at the value, as the other errors of a row's values are.
        assert_eq!(
            err.position(),
            Some(Position {
                line: 1,
                column: 46 + column.len() as u64
            }),
            "{q}: {err:?}"
        );
        assert!(err.to_string().contains(message), "{q}: {err}");
    }
}

/// An `INSERT`'s parameters are described by the columns they fill, as Postgres describes
/// them: clients that encode by the described types (pgx, asyncpg) send times and numbers
/// only to parameters so typed.
#[tokio::test]
async fn insert_parameters_are_described_by_their_columns() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        "db",
        "CREATE TABLE m (time TIMESTAMP, host VARCHAR TAG, f DOUBLE, i BIGINT, u BIGINT UNSIGNED, b BOOLEAN)",
    )
    .await
    .unwrap();
    let described = sql
        .describe(
            "db",
            "INSERT INTO m (time, host, f, i, b) VALUES ($1, $2, $3, ($5), $6), (now(), 'x', $3, 1 + $7, $8)",
        )
        .await
        .unwrap();
    assert_eq!(
        described.parameters,
        [
            Some(DataType::Timestamp(TimeUnit::Nanosecond, None)),
            Some(DataType::Utf8),
            Some(DataType::Float64),
            None,
            Some(DataType::Int64),
            Some(DataType::Boolean),
            None,
            Some(DataType::Boolean),
        ]
    );
    // Without a column list, in DESCRIBE's order (time, tags, fields).
    let described = sql
        .describe("db", "INSERT INTO m VALUES ($1, $2, $3, $4, $5, $6)")
        .await
        .unwrap();
    assert_eq!(described.parameters[4], Some(DataType::UInt64));
    // A statement that does not fit its table is described without types; running it says why.
    for unfit in [
        "INSERT INTO nope (time, v) VALUES ($1, $2)",
        "INSERT INTO m (time, nope) VALUES ($1, $2)",
    ] {
        let described = sql.describe("db", unfit).await.unwrap();
        assert!(described.parameters.is_empty(), "{unfit}");
    }
}

/// `LIKE … ESCAPE` with any escape character, and tags matched against computed patterns
/// (`host LIKE 'a'::VARCHAR || '%'`, as SQLAlchemy's `startswith` writes it), answering as
/// Postgres 15.18 does for the same rows.
#[tokio::test]
async fn like_takes_any_escape_character_and_computed_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    engine
        .write_lines(
            "db",
            b"m,host=a_1 v=1i 1\nm,host=ab1 v=2i 2\nm,host=a%b v=3i 3\nm,host=x\\\\y v=4i 4\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    let hosts = |filter: &str| {
        format!("SELECT string_agg(host, ',' ORDER BY host) AS h FROM m WHERE {filter}")
    };
    for (filter, want) in [
        ("host LIKE 'a!_%' ESCAPE '!'", "| a_1 |"),
        ("host LIKE 'a' || '#%' || '%' ESCAPE '#'", "| a%b |"),
        ("host LIKE 'a'::VARCHAR || '%'", "| a%b,a_1,ab1 |"),
        ("host ILIKE 'A'::VARCHAR || '_1'", "| a_1,ab1 |"),
        ("host LIKE 'x\\y' ESCAPE '#'", "| x\\y |"),
        ("host NOT LIKE '%!%%' ESCAPE '!'", "| a_1,ab1,x\\y |"),
    ] {
        let q = hosts(filter);
        let got = table_text(&sql.sql("db", &q).await.unwrap());
        assert!(got.contains(want), "{q}: want {want}\n{got}");
    }
    let err = sql
        .sql("db", "SELECT 'a#' LIKE 'a#' ESCAPE '#' AS v")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("LIKE pattern must not end with escape character"),
        "{err}"
    );
}

/// A time written to the minute (`'2026-01-01 10:30'`) is read with seconds 0, as Postgres
/// reads it, where Arrow's cast refused it: in comparisons (DataFusion's plans and the
/// direct path), `TIMESTAMP '…'`, `INSERT` and `DELETE`.
#[tokio::test]
async fn times_to_the_minute_are_read_as_postgres_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let sql = QueryEngine::new(Arc::clone(&engine)).unwrap();
    sql.sql(
        "db",
        "CREATE TABLE m (time TIMESTAMP, host VARCHAR TAG, v BIGINT)",
    )
    .await
    .unwrap();
    sql.sql(
        "db",
        "INSERT INTO m (time, host, v) VALUES ('2026-01-01 10:29', 'a', 1), \
         ('2026-01-01T10:30Z', 'a', 2), ('2026-01-01 10:31:30', 'a', 4)",
    )
    .await
    .unwrap();
    let sum = |batches: Vec<RecordBatch>| table_text(&batches);
    let direct = "SELECT sum(v) FROM m WHERE time >= '2026-01-01 10:30' AND host = 'a'";
    assert!(sql.is_direct("db", direct), "{direct}");
    assert!(sum(sql.sql("db", direct).await.unwrap()).contains("| 6 "));
    // Through DataFusion's plans.
    for (q, want) in [
        (
            "SELECT v FROM m WHERE time < TIMESTAMP '2026-01-01 10:31' ORDER BY v DESC LIMIT 1",
            "| 2 ",
        ),
        ("SELECT v FROM m WHERE time = '2026-01-01 10:29'", "| 1 "),
    ] {
        assert!(!sql.is_direct("db", q), "{q}");
        assert!(sum(sql.sql("db", q).await.unwrap()).contains(want), "{q}");
    }
    sql.sql("db", "DELETE FROM m WHERE time < '2026-01-01 10:30'")
        .await
        .unwrap();
    assert!(sum(sql.sql("db", "SELECT sum(v) AS s FROM m").await.unwrap()).contains("| 6 "));
}

/// A query engine over a fresh directory whose `db.m` holds one row (`host=a`, `v=1`).
fn one_row_of_m() -> (tempfile::TempDir, QueryEngine) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    engine
        .write_lines("db", b"m,host=a v=1i 1\n", Precision::Nanoseconds)
        .unwrap();
    (dir, QueryEngine::new(engine).unwrap())
}

#[tokio::test]
async fn errors_say_what_and_where() {
    let (_dir, sql) = one_row_of_m();

    let err = sql
        .sql("db", "SELECT v\nFROM m WHERE ) AND")
        .await
        .unwrap_err();
    assert!(matches!(err, QueryError::Syntax { .. }), "{err:?}");
    assert_eq!(
        err.position(),
        Some(Position {
            line: 2,
            column: 14
        }),
        "{err}"
    );

    // At the end of input the parser gives no position: it is just past the last character.
    let err = sql.sql("db", "SELECT v\nFROM m WHERE").await.unwrap_err();
    assert!(matches!(err, QueryError::Syntax { .. }), "{err:?}");
    assert_eq!(
        err.position(),
        Some(Position {
            line: 2,
            column: 13
        }),
        "{err}"
    );

    let err = sql.sql("db", "SELECT nope FROM m").await.unwrap_err();
    assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");
    assert_eq!(
        err.position(),
        Some(Position { line: 1, column: 8 }),
        "{err}"
    );

    let err = sql.sql("db", "INSERT INTO m VALUES (1)").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Plan { .. } | QueryError::NotSupported { .. }
        ),
        "{err:?}"
    );
    let err = sql.sql("db", "CREATE TABLE x (a INT)").await.unwrap_err();
    assert!(
        matches!(
            err,
            QueryError::Plan { .. } | QueryError::NotSupported { .. }
        ),
        "{err:?}"
    );
}

/// What a statement's data or arguments make fail while it runs is the client's error,
/// told by its fault, with the cause's own message; the server's failures stay `Execution`.
#[tokio::test]
async fn errors_of_the_data_say_which_fault() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    engine
        .write_lines(
            "db",
            b"m,host=a v=1i,s=\"abc\" 1\nm,host=b v=0i,s=\"12\" 2\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    for (statement, fault, message) in [
        (
            "SELECT v / v FROM m",
            DataFault::DivisionByZero,
            "Divide by zero error",
        ),
        // Folded by the optimizer: the cast's own error, not the optimizer's.
        (
            "SELECT CAST('abc' AS INT)",
            DataFault::InvalidText,
            "Cast error: Cannot cast string 'abc' to value of Int32 type",
        ),
        (
            "SELECT CAST(s AS BIGINT) FROM m",
            DataFault::InvalidText,
            "Cast error: Cannot cast string 'abc' to value of Int64 type",
        ),
        (
            "SELECT CAST(host AS TIMESTAMP) FROM m",
            DataFault::InvalidDatetime,
            // Either row may fail first.
            "Parser error: Error parsing timestamp from '",
        ),
        (
            "SELECT CAST(v + 300 AS TINYINT) FROM m",
            DataFault::OutOfRange,
            "Cast error: Can't cast value 30",
        ),
        (
            "SELECT abs(v - 9223372036854775807 - 2) FROM m",
            DataFault::OutOfRange,
            "overflow",
        ),
        // Folded by the optimizer, and run.
        (
            "SELECT host FROM m WHERE host ~ '['",
            DataFault::InvalidRegex,
            "invalid regular expression: regex parse error",
        ),
        (
            "SELECT regexp_replace(s, '(', 'x') FROM m",
            DataFault::InvalidRegex,
            "invalid regular expression: regex parse error",
        ),
        (
            "SELECT substr(s, 1, v - 1) FROM m",
            DataFault::InvalidArgument,
            "negative count not allowed: -1",
        ),
        (
            "SELECT (SELECT v FROM m)",
            DataFault::MoreThanOneRow,
            "Scalar subquery returned more than one row",
        ),
        (
            "SELECT repeat(s, 300000000) FROM m",
            DataFault::TooLarge,
            "repeat would make more than 268435456 bytes",
        ),
    ] {
        let err = sql.sql("db", statement).await.unwrap_err();
        let QueryError::Data { fault: found, .. } = &err else {
            panic!("{statement}: not a data error: {err:?}");
        };
        assert_eq!(*found, fault, "{statement}: {err}");
        assert_eq!(err.kind(), "data");
        assert!(err.to_string().contains(message), "{statement}: {err}");
        assert!(
            !err.to_string().contains("Arrow error"),
            "{statement}: {err}"
        );
    }
}

/// `substr`, `substring(… FROM … FOR …)` and `position(… IN …)` are planned (DataFusion's
/// planner for them comes with its `unicode_expressions` feature), and `variance` is
/// Postgres's name of `var_samp`.
#[tokio::test]
async fn substring_position_and_variance_are_planned() {
    let (_dir, sql) = one_row_of_m();
    let batches = sql
        .sql(
            "db",
            "SELECT substr(host || 'xyz', 2) AS a, substring(host || 'xyz' FROM 2 FOR 1) AS b, \
             position('y' IN host || 'xyz') AS c, substring('abc', 2) AS d FROM m",
        )
        .await
        .unwrap();
    let variance = sql
        .sql(
            "db",
            "SELECT variance(x) = var_samp(x) AS same, variance(x) AS v \
             FROM (VALUES (1.0), (2.0), (3.0)) AS t(x)",
        )
        .await
        .unwrap();
    assert_eq!(
        table_text(&variance),
        "+------+-----+\n\
         | same | v   |\n\
         +------+-----+\n\
         | true | 1.0 |\n\
         +------+-----+"
    );
    assert_eq!(
        table_text(&batches),
        "+-----+---+---+----+\n\
         | a   | b | c | d  |\n\
         +-----+---+---+----+\n\
         | xyz | x | 3 | bc |\n\
         +-----+---+---+----+"
    );
}

/// Describing lists a type for every parameter number up to the highest: `$2000000000`
/// once asked for 48 GB and aborted the server. Past 65,535 (what the Postgres protocol
/// counts) it is an error.
#[tokio::test]
async fn describe_refuses_parameter_numbers_past_the_protocols_count() {
    let (_dir, sql) = one_row_of_m();
    let described = sql
        .describe("db", "SELECT v FROM m WHERE v > $3")
        .await
        .unwrap();
    assert_eq!(described.parameters.len(), 3);
    let top = strata_query::MAX_DESCRIBED_PARAMETERS;
    let described = sql
        .describe("db", &format!("SELECT ${top} AS p"))
        .await
        .unwrap();
    assert_eq!(described.parameters.len(), top);
    for number in [top + 1, 2_000_000_000] {
        let err = sql
            .describe("db", &format!("SELECT v FROM m WHERE v > ${number}"))
            .await
            .unwrap_err();
        assert!(matches!(err, QueryError::Plan { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("there is no parameter ${number}: a statement takes at most 65535 parameters")
        );
    }
}

/// A parameter takes the type of a cast written on it, and `LIMIT`/`OFFSET` make it a
/// `bigint`, as in Postgres: asyncpg encodes values by the described types, and refused to
/// send `5` for `LIMIT $1` described as unknown. A type DataFusion infers from a column
/// still comes first.
#[tokio::test]
async fn describe_types_parameters_by_their_casts_and_limits() {
    let (_dir, sql) = one_row_of_m();
    let cases: [(&str, Vec<Option<DataType>>); 7] = [
        ("SELECT $1::int + 1", vec![Some(DataType::Int32)]),
        (
            "SELECT v FROM m WHERE time > CAST($1 AS timestamp) LIMIT $2 OFFSET $3",
            vec![
                Some(DataType::Timestamp(TimeUnit::Nanosecond, None)),
                Some(DataType::Int64),
                Some(DataType::Int64),
            ],
        ),
        (
            "SELECT TRY_CAST($1 AS double) AS x",
            vec![Some(DataType::Float64)],
        ),
        (
            "SELECT v FROM m WHERE v IN (SELECT $1::bigint)",
            vec![Some(DataType::Int64)],
        ),
        // The column's type, not the later cast's.
        (
            "SELECT v FROM m WHERE v > $1 AND $1::text = 'x'",
            vec![Some(DataType::Int64)],
        ),
        ("SELECT $1 AS untyped", vec![None]),
        // Functions whose arguments share a type give it to a parameter among them.
        (
            "SELECT generate_series(1, $1) AS n, coalesce($2, v) AS w, left($3, 2) AS x FROM m",
            vec![Some(DataType::Int64), Some(DataType::Int64), None],
        ),
    ];
    for (statement, expected) in cases {
        let described = sql.describe("db", statement).await.unwrap();
        assert_eq!(described.parameters, expected, "{statement}");
    }
}

/// `repeat`, `lpad`, `rpad`, `array_repeat` and `array_resize` make results as large as an
/// argument says, `regexp_replace` and `replace` write their replacement once per match,
/// `array_to_string` its delimiter once per element and `to_char` its format once per row
/// (and `levenshtein` works one string's length times the other's):
/// `repeat('x', 100000000 + value)` over 100 rows once reserved 10 GB at once and aborted
/// the server. Past 256 MiB over a batch's rows (what `regexp_replace` adds to its input)
/// they fail; below, they answer as before.
#[tokio::test]
async fn functions_that_a_count_makes_huge_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let sql = QueryEngine::new(open_engine(dir.path())).unwrap();
    let answer = |q: &'static str| {
        let sql = &sql;
        async move { only_value(&sql.sql("db", q).await.unwrap()) }
    };
    assert_eq!(answer("SELECT repeat('ab', 3) AS v").await, "ababab");
    assert_eq!(
        answer("SELECT lpad('x', 4, '-') || rpad('y', 3, '.') AS v").await,
        "---xy.."
    );
    assert_eq!(
        answer("SELECT array_to_string(array_repeat(7, 3), ',') AS v").await,
        "7,7,7"
    );
    assert_eq!(
        answer(
            "SELECT sum(length(repeat('x', 1000000 + value))) AS v FROM generate_series(1, 100)"
        )
        .await,
        "100005050"
    );
    assert_eq!(
        answer("SELECT regexp_replace('aXbXc', 'x', '--', 'gi') AS v").await,
        "a--b--c"
    );
    assert_eq!(
        answer("SELECT array_to_string(array_resize(make_array(1, 2), 3, 9), ',') AS v").await,
        "1,2,9"
    );
    // Long strings with a short replacement: their matches are counted, and they pass.
    assert_eq!(
        answer(
            "SELECT sum(length(regexp_replace(repeat('ab', 50000) || value::text, 'b', 'c', 'g'))) AS v FROM generate_series(1, 100)"
        )
        .await,
        "10000192"
    );
    assert_eq!(
        answer("SELECT replace('abcabc', 'b', 'XY') AS v").await,
        "aXYcaXYc"
    );
    // A long string with a longer replacement: its matches are counted, and it passes.
    assert_eq!(
        answer(
            "SELECT sum(length(replace(repeat('ab', 50000) || value::text, 'b', 'cc'))) AS v FROM generate_series(1, 100)"
        )
        .await,
        "15000192"
    );
    assert_eq!(
        answer("SELECT array_to_string(make_array(1, 2, 3), '-') || array_join(make_array('a', NULL), ',', '?') AS v").await,
        "1-2-3a,?"
    );
    assert_eq!(
        answer("SELECT to_char(TIMESTAMP '2020-01-02T03:04:05', '%Y-%m %H') AS v").await,
        "2020-01 03"
    );
    // Postgres's templates, answered as Postgres 15.18 answers them.
    for (q, want) in [
        (
            "SELECT to_char(TIMESTAMP '2026-03-04 05:06:07.089', 'YYYY-MM-DD HH24:MI:SS.MS') AS v",
            "2026-03-04 05:06:07.089",
        ),
        (
            "SELECT to_char(TIMESTAMP '2026-03-04 15:06:07', 'FMDay FMDD FMMonth, hh12:mi pm') AS v",
            "Wednesday 4 March, 03:06 pm",
        ),
        (
            "SELECT to_char(TIMESTAMP '2026-03-04 05:06:07', 'Dy, DD Mon YY \"W\"IW ID DDD US IYYY') AS v",
            "Wed, 04 Mar 26 W10 3 063 000000 2026",
        ),
    ] {
        assert_eq!(answer(q).await, want, "{q}");
    }
    // One chrono cannot write exactly is refused, not written wrong.
    let err = sql
        .sql(
            "db",
            "SELECT to_char(TIMESTAMP '2026-03-04 05:06:07', 'Month') AS v",
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("to_char pattern Month is not supported"),
        "{err}"
    );
    assert!(
        matches!(
            err,
            QueryError::Data {
                fault: DataFault::InvalidArgument,
                ..
            }
        ),
        "{err:?}"
    );
    for (q, name) in [
        // 100 rows of about 3 MB: 300 MB in one batch.
        (
            "SELECT sum(length(repeat('x', 3000000 + value))) AS v FROM generate_series(1, 100)",
            "repeat",
        ),
        ("SELECT length(repeat('xy', 150000000)) AS v", "repeat"),
        ("SELECT length(lpad('x', 70000000)) AS v", "lpad"),
        (
            "SELECT length(rpad('x', 70000000 + value, 'é')) AS v FROM generate_series(1, 2)",
            "rpad",
        ),
        (
            "SELECT cardinality(array_repeat(1, 40000000)) AS v",
            "array_repeat",
        ),
        (
            "SELECT cardinality(array_resize(make_array(1), 40000000)) AS v",
            "array_resize",
        ),
        // An empty match at every character, each replaced by 60,000 bytes: 3.6 GB.
        (
            "SELECT length(regexp_replace(repeat('a', 60000), '', repeat('b', 60000), 'g')) AS v",
            "regexp_replace",
        ),
        // One match of the whole megabyte, written 300 times by its references.
        (
            "SELECT length(regexp_replace(repeat('a', 1000000), '(.*)', repeat('\\1', 300))) AS v",
            "regexp_replace",
        ),
        // 100,000 matches, each replaced by 100,000 bytes: 10 GB.
        (
            "SELECT length(replace(repeat('a', 100000), 'a', repeat('b', 100000))) AS v",
            "replace",
        ),
        // 100,000 elements joined by 3,000 bytes each: 304 MB (by its other name too).
        (
            "SELECT length(array_to_string(array_repeat(1, 100000), repeat('x', 3000))) AS v",
            "array_to_string",
        ),
        (
            "SELECT length(array_join(range(100000), repeat('x', 3000))) AS v",
            "array_to_string",
        ),
        // A 100 KB format over 200 rows: up to 320 MB.
        (
            "SELECT sum(length(to_char(to_timestamp(value), repeat('%Y', 50000)))) AS v FROM generate_series(1, 200)",
            "to_char",
        ),
    ] {
        let err = sql.sql("db", q).await.unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("{name} would make more than 268435456 bytes")),
            "{q}: {err}"
        );
        assert!(
            matches!(
                err,
                QueryError::Data {
                    fault: DataFault::TooLarge,
                    ..
                }
            ),
            "{q}: {err:?}"
        );
    }
    // levenshtein's work, not its result, is what grows: 40,000 × 40,000 bytes would run
    // for seconds, uninterrupted.
    assert_eq!(
        answer("SELECT levenshtein('kitten', 'sitting') AS v").await,
        "3"
    );
    for q in [
        "SELECT levenshtein(repeat('a', 40000), repeat('b', 40000)) AS v",
        "SELECT sum(levenshtein(repeat('a', 1000), repeat('b', 1000) || value::text)) AS v FROM generate_series(1, 2000)",
    ] {
        let err = sql.sql("db", q).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("levenshtein would take more than 1073741824 steps"),
            "{q}: {err}"
        );
    }
}

/// The server shares one engine among request tasks: it and its futures must be `Send`.
#[test]
fn the_query_engine_can_be_shared_across_tasks() {
    fn shared<T: Send + Sync + 'static>() {}
    fn sendable<F: Future + Send>(_: F) {}
    shared::<QueryEngine>();
    let dir = tempfile::tempdir().unwrap();
    let sql = QueryEngine::new(open_engine(dir.path())).unwrap();
    sendable(sql.sql("db", "SELECT 1"));
}

/// One value of the single-row, single-column answer `batches`, as text.
fn only_value(batches: &[RecordBatch]) -> String {
    let text = table_text(batches);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    lines[3].trim_matches(|c| c == '|' || c == ' ').to_string()
}

/// Expressions up to the depth bound are planned and answered on threads with the stack
/// the bound is sized for (the server's workers have it); deeper ones are refused before
/// anything parses them. A chain of 40,000 `+` once overflowed the stack and aborted the
/// server.
#[test]
fn expressions_nested_to_the_bound_answer_and_deeper_ones_are_refused() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_stack_size(strata_query::nesting::PLANNING_STACK_BYTES)
        .enable_all()
        .build()
        .unwrap();
    // On a worker: `block_on` would run it on this test thread, with the default stack.
    runtime
        .block_on(runtime.spawn(nested_to_the_bound()))
        .unwrap();
}

async fn nested_to_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    engine
        .write_lines(
            "db",
            b"m,host=a v=1i 1\nm,host=b v=2i 2\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    let bound = strata_query::nesting::MAX_EXPRESSION_DEPTH;

    let sum = |terms: usize| format!("SELECT 1{} AS x", " + 1".repeat(terms));
    let answer = sql.sql("db", &sum(bound)).await.unwrap();
    assert_eq!(only_value(&answer), (bound + 1).to_string());
    // Each `OR v = 2` is two operators; through the scan, the filter and the direct path.
    let ors = |terms: usize| {
        format!(
            "SELECT count(*) AS n FROM m WHERE v = 2{}",
            " OR v = 2".repeat(terms)
        )
    };
    let answer = sql.sql("db", &ors(bound / 2 - 1)).await.unwrap();
    assert_eq!(only_value(&answer), "1");
    // The `=` is the thousandth operator.
    let casts = format!(
        "SELECT v{} AS c FROM m WHERE host = 'a'",
        "::bigint".repeat(bound - 1)
    );
    assert_eq!(only_value(&sql.sql("db", &casts).await.unwrap()), "1");

    for deep in [sum(bound + 1), ors(bound / 2), sum(200_000)] {
        let err = sql.sql("db", &deep).await.unwrap_err();
        assert!(matches!(err, QueryError::TooComplex { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "expression too deeply nested: more than 1000 levels"
        );
        assert!(err.position().is_some());
        let err = sql.describe("db", &deep).await.unwrap_err();
        assert!(matches!(err, QueryError::TooComplex { .. }), "{err:?}");
    }
    // The 1001st `+` of `SELECT 1 + 1 …`: the k-th is at column 6 + 4k.
    let err = sql.sql("db", &sum(bound + 1)).await.unwrap_err();
    assert_eq!(
        err.position(),
        Some(Position {
            line: 1,
            column: 4010
        })
    );
    // sqlparser's own bound, on parentheses: refused the same way.
    let parens = format!("SELECT {}1{} AS p", "(".repeat(60), ")".repeat(60));
    let err = sql.sql("db", &parens).await.unwrap_err();
    assert!(matches!(err, QueryError::TooComplex { .. }), "{err:?}");
}
