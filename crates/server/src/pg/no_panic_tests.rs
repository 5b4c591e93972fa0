//! Bounded fuzzing of what the wire layer does to a statement's text before the engine
//! sees it: seeded mutations of real client statements (psql's `\d` queries, Grafana's,
//! drivers', session statements, parameters, every kind of quoting and comment) split,
//! rewritten, matched against session statements and empty catalog tables, and bound with
//! parameters; bound values of random bytes in every format and type, arrays included;
//! and `COPY … FROM` data of random bytes cut anywhere. Nothing may
//! panic: a panic here ends the client's connection. The engine's own handling of
//! statements is fuzzed in `crates/query/tests/suite/statements_no_panic.rs`.
//!
//! `STRATA_FUZZ_RUNS` sets the number of mutated statements (default 3,000).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use pgwire::api::Type;

use super::catalog_sql::empty_answer;
use super::column_names::postgres_names;
use super::copy_statement::copy_statement;
use super::params::literal;
use super::query::to_strata;
use super::session::{Session, session_statement};
use super::setting_calls::{Mode, setting_calls};
use super::settings_view;
use super::sql_text::{cast_parameters, parameter_count, split_statements, substitute};
use crate::auth::Access;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const SEEDS: &[&str] = &[
    "SELECT c.oid::pg_catalog.regclass, t.typname::pg_catalog.text FROM pg_catalog.pg_class c \
     JOIN pg_catalog.pg_type t ON t.oid = c.reltype WHERE c.relname OPERATOR(pg_catalog.~) '^(cpu)$' \
     COLLATE pg_catalog.default AND pg_catalog.pg_table_is_visible(c.oid) ORDER BY 2, 3;",
    "SELECT a.attname, (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) \
     FROM pg_catalog.pg_attrdef d WHERE d.adrelid = a.attrelid), \
     (SELECT count(*) FROM pg_catalog.pg_class) FROM pg_catalog.pg_attribute a",
    "SELECT pol.polname, pol.polpermissive, CASE WHEN pol.polroles = '{0}' THEN NULL \
     ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles \
     where oid = any (pol.polroles) order by 1),',') END AS roles \
     FROM pg_catalog.pg_policy pol WHERE pol.polrelid = '16385' ORDER BY 1",
    "SELECT CASE WHEN trim(s[i]) = '\"$user\"' THEN user ELSE trim(s[i]) END \
     FROM generate_series(array_lower(string_to_array(current_setting('search_path'),','),1), \
     array_upper(string_to_array(current_setting('search_path'),','),1)) as i, \
     string_to_array(current_setting('search_path'),',') s \
     WHERE EXISTS (SELECT 1 FROM information_schema.tables)",
    "SELECT r.rolname, r.rolsuper, ARRAY(SELECT b.rolname FROM pg_catalog.pg_auth_members m \
     JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid) WHERE m.member = r.oid) as memberof \
     FROM pg_catalog.pg_roles r WHERE r.rolname !~ '^pg_' ORDER BY 1;",
    "SELECT c.relchecks, pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x \
     from pg_catalog.unnest(tc.reloptions) x), ', ') FROM pg_catalog.pg_class c \
     LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid) WHERE c.oid = '1435096667';",
    "COPY (SELECT host, usage FROM cpu WHERE time > now() - INTERVAL '1 hour') TO STDOUT \
     WITH (FORMAT csv, HEADER, DELIMITER ';', NULL 'NA', QUOTE '''', FORCE_QUOTE (host))",
    "copy cpu (host, usage) TO STDOUT CSV HEADER QUOTE '\"' FORCE QUOTE host",
    "SELECT 'cpu'::regclass, current_schema, CURRENT_USER, session_user, current_catalog",
    "SELECT time_bucket('1 minute', time) AS time, avg(usage_user) FROM cpu \
     WHERE time > $1 AND host = $2 GROUP BY 1 ORDER BY 1 LIMIT $3",
    "SELECT $1, '$1', \"$2\", a$1, $$ $2 $$, $tag$ $1 $tag$ FROM t WHERE x = $2",
    "SELECT ';' AS \"a;b\"; -- c;d\nSELECT $x$;$x$ /* e; /* f; */ g; */; ;\n SELECT E'\\';' ",
    "SET extra_float_digits = 3",
    "set application_name to 'psql ''x'''",
    "SET TIME ZONE 'Europe/Paris';",
    "SHOW TIME ZONE",
    "SHOW ALL",
    "RESET ALL",
    "BEGIN; COMMIT; ROLLBACK; START TRANSACTION ISOLATION LEVEL READ COMMITTED",
    "DISCARD ALL",
    "SHOW TABLES",
    "DELETE FROM cpu WHERE host = 'a' AND time < now() - INTERVAL '1 day'",
    "SELECT n.nspname, p.proname FROM pg_catalog.pg_proc p LEFT JOIN pg_catalog.pg_namespace n \
     ON n.oid = p.pronamespace WHERE p.prorettype <> 'pg_catalog.cstring'::pg_catalog.regtype",
    "select * from (values (1, 'a'), (2, 'b')) as v(x, y) where x in (select 1)",
    "SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new",
    "SELECT host, generate_series(1, 3) AS n, generate_series(now(), now(), INTERVAL '1 hour') FROM t",
    "SELECT pg_catalog.set_config('my.x', 'it''s', true), current_setting('TimeZone', true)",
    "SELECT $1::timestamptz, $2::timestamp with time zone, $3::oid[] LIMIT $4",
    "SELECT quote_literal($1::\"pg_catalog\".\"float8\"::text), $2::\"_int8\", $3::pg_catalog._text",
    "SELECT a.conrelid, array_agg(a.attname) FROM (SELECT c.conrelid, p.attname FROM \
     pg_catalog.pg_attribute p JOIN (SELECT conrelid, unnest(i.indkey) AS attnum FROM \
     pg_catalog.pg_constraint JOIN pg_catalog.pg_index i ON true LEFT JOIN pg_catalog.pg_description d \
     ON d.classoid = CAST($1::REGCLASS AS REGCLASS) WHERE contype = $2::CHAR) AS c ON true) AS a \
     GROUP BY a.conrelid",
    "SELECT s.setting FROM pg_catalog.pg_settings s JOIN pg_settings t ON s.name = t.name \
     WHERE s.name = 'max_index_keys' AND typinput = 'pg_catalog.array_in'::regproc",
    "SELECT CAST('pg_catalog.pg_class' AS pg_catalog.regclass), $1::double precision, \
     $2::timestamp without time zone[], $3::VARCHAR(20)",
];

const PIECES: &[&str] = &[
    "'",
    "\"",
    "$",
    "$1",
    "$0",
    "$65535",
    "$99999999999999999999",
    "$$",
    "$a$",
    "--",
    "/*",
    "*/",
    ";",
    "::",
    "::regclass",
    "::pg_catalog.",
    "OPERATOR(",
    "OPERATOR(pg_catalog.~)",
    "COLLATE",
    "COLLATE pg_catalog.",
    "current_user",
    "CURRENT_SCHEMA(",
    "E'\\",
    "\\",
    "(",
    ")",
    "[",
    "]",
    ",",
    "SELECT",
    "FROM",
    "WHERE",
    "pg_catalog",
    "SET",
    "SHOW",
    "TO",
    "=",
    "TIME",
    "ZONE",
    "current_setting(",
    "set_config(",
    "generate_series(",
    "true",
    "::timestamptz",
    "::oid[]",
    "::\"pg_catalog\".\"_int8\"",
    "\"float8\"",
    "CAST(",
    " AS REGCLASS)",
    "::REGCLASS AS REGCLASS",
    "GROUP BY",
    "RIGHT JOIN",
    "max(",
    "double precision",
    "pg_settings",
    "::regproc",
    "with time zone",
    "é",
    "\u{0}",
    "\u{10FFFF}",
    "\n",
    " ",
];

/// Splits a statement into words, punctuation and whitespace, each kept, so that joining
/// them gives the statement back.
fn pieces(sql: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in sql.chars() {
        let word = c.is_alphanumeric() || c == '_';
        match out.last_mut() {
            Some(last) if word && last.chars().all(|l| l.is_alphanumeric() || l == '_') => {
                last.push(c)
            }
            _ => out.push(c.to_string()),
        }
    }
    out
}

fn mutate(seed: &str, rng: &mut Rng) -> String {
    let mut parts = pieces(seed);
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(parts.len().max(1));
        match rng.below(5) {
            0 if !parts.is_empty() => {
                parts.remove(i);
            }
            1 if !parts.is_empty() => {
                let repeated = parts[i].clone();
                parts.insert(i, repeated);
            }
            2 if parts.len() > 1 => {
                let j = rng.below(parts.len());
                parts.swap(i, j);
            }
            3 if !parts.is_empty() => parts[i] = rng.pick(PIECES).to_owned(),
            _ => parts.insert(i.min(parts.len()), rng.pick(PIECES).to_owned()),
        }
    }
    parts.concat()
}

/// Everything the wire layer does with one statement's text.
fn exercise(sql: &str, session: &Session, rng: &mut Rng) {
    // Columns as the engine names expressions, one to four of them.
    let engine_names = Schema::new(
        (0..1 + rng.below(4))
            .map(|i| Field::new(format!("f({i})"), DataType::Int64, true))
            .collect::<Vec<_>>(),
    );
    for (offset, statement) in split_statements(sql) {
        assert!(
            sql.get(offset..)
                .is_some_and(|rest| rest.starts_with(statement)),
            "{sql:?}: statement {statement:?} is not at byte {offset}"
        );
        session_statement(statement, session, false);
        session_statement(statement, session, true);
        empty_answer(statement);
        copy_statement(statement);
        to_strata(statement);
        cast_parameters(statement);
        let _ = setting_calls(statement, session, Mode::Describe);
        let _ = setting_calls(statement, session, Mode::Run);
        settings_view::rewrite(statement, session);
        postgres_names(statement, &engine_names);
        let count = parameter_count(statement);
        if count <= 8 {
            let values: Vec<String> = (0..count + rng.below(2))
                .map(|i| format!("'v{i}'"))
                .collect();
            let bound = substitute(statement, &values);
            if let Ok(text) = bound {
                to_strata(&text);
            }
        }
    }
}

#[test]
fn mutated_statements_never_panic_the_wire_layer() {
    let runs: usize = std::env::var("STRATA_FUZZ_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let session = Session::new("db".into(), Access::Full, Arc::default());
    let mut rng = Rng(0x005e_ed0f_9a11);
    for run in 0..runs {
        let sql = match SEEDS.get(run) {
            Some(seed) => (*seed).to_owned(),
            None => {
                let seed = rng.pick(SEEDS);
                mutate(seed, &mut rng)
            }
        };
        exercise(&sql, &session, &mut rng);
    }
}

#[test]
fn bound_values_of_any_bytes_are_literals_or_errors() {
    let types = [
        Type::BOOL,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::OID,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::DATE,
        Type::INTERVAL,
        Type::TEXT,
        Type::VARCHAR,
        Type::NAME,
        Type::UNKNOWN,
        Type::JSON,
        Type::BYTEA,
        Type::NUMERIC,
        Type::TEXT_ARRAY,
        Type::INT2_ARRAY,
        Type::INT8_ARRAY,
        Type::FLOAT8_ARRAY,
        Type::BOOL_ARRAY,
        Type::TIMESTAMPTZ_ARRAY,
    ];
    let texts = [
        "",
        "1",
        "-1",
        "1e400",
        "NaN",
        "-Infinity",
        "9223372036854775808",
        "0x10",
        "t",
        "yes",
        "2024-02-30",
        "294277-01-01",
        "infinity",
        "1 day",
        "'; DROP",
        "é",
        "\u{0}",
        "{a,b}",
        "{1, NULL ,\"2\"}",
        "{\"x\\\"y\",\\,}",
        "{}",
        "{{1},{2}}",
        "{1,",
        "{\"",
        "{\\",
        "[1:2]={1,2}",
        "{'}",
    ];
    let mut rng = Rng(0xb1d5);
    for _ in 0..20_000 {
        let ty = &types[rng.below(types.len())];
        let binary = rng.below(2) == 0;
        let bytes: Vec<u8> = if binary && rng.below(3) == 0 {
            // An array's header (dimensions, NULL flag, element oid, length, lower bound)
            // of small random words, then random elements' bytes.
            let mut bytes: Vec<u8> = (0..rng.below(6))
                .flat_map(|_| (rng.below(4) as i32 - 1).to_be_bytes())
                .collect();
            bytes.extend((0..rng.below(24)).map(|_| rng.next() as u8));
            bytes
        } else if binary || rng.below(3) == 0 {
            let len = rng.pick(&[0usize, 1, 2, 4, 8, 9, 16]);
            (0..len).map(|_| rng.next() as u8).collect()
        } else {
            rng.pick(&texts).as_bytes().to_vec()
        };
        if let Ok(text) = literal(Some(&bytes), ty, binary) {
            // A literal is whole: its quotes pair up, so it cannot end the statement.
            let quotes = text.matches('\'').count();
            assert!(quotes % 2 == 0, "{ty} {bytes:?} binary={binary}: {text}");
        }
    }
}

#[test]
fn copy_data_of_any_bytes_is_rows_or_an_error() {
    use super::copy_in::tests::{copy_in, engine};
    let statements = [
        "COPY t FROM STDIN",
        "COPY t FROM STDIN (DELIMITER '|', NULL 'N')",
        "COPY t FROM STDIN (FORMAT csv, HEADER)",
        "COPY t FROM STDIN (FORMAT csv, ESCAPE '\\', NULL 'NA')",
    ];
    // Records of fields that are often good and sometimes not, with any delimiter and
    // line break, cut into pieces anywhere; any byte now and then.
    let values: [&[u8]; 11] = [
        b"2026-01-01T00:00:00Z",
        b"2026-01-01T00:00:00Z",
        b"ab",
        b"17",
        b"-1",
        b"",
        b"N",
        b"NA",
        b"\\N",
        b"\"q,\"\"\"",
        b"a\\tb\\.",
    ];
    let separators: [&[u8]; 6] = [b"\t", b"\t", b",", b",", b"|", b"\""];
    let ends: [&[u8]; 5] = [b"\n", b"\n", b"\r\n", b"\r", b"\\.\n"];
    let dir = tempfile::tempdir().expect("temporary directory");
    let engine = engine(dir.path());
    let mut rng = Rng(0xc0b1);
    let mut rows = 0;
    for _ in 0..4_000 {
        let sql = rng.pick(&statements);
        let copy = copy_in(&engine, sql);
        // Mostly the statement's own delimiter, and the fields `t` takes.
        let delimiter: &[u8] = if sql.contains('|') {
            b"|"
        } else if sql.contains("csv") {
            b","
        } else {
            b"\t"
        };
        let good: [&[u8]; 3] = [values[0], values[2], values[3]];
        let mut data = Vec::new();
        for _ in 0..rng.below(6) {
            let fields = if rng.below(4) == 0 {
                rng.pick(&[2, 4])
            } else {
                3
            };
            for field in 0..fields {
                if field > 0 {
                    let separator = if rng.below(8) == 0 {
                        rng.pick(&separators)
                    } else {
                        delimiter
                    };
                    data.extend_from_slice(separator);
                }
                let value = match good.get(field) {
                    Some(good) if rng.below(4) != 0 => good,
                    _ => rng.pick(&values),
                };
                data.extend_from_slice(value);
                if rng.below(16) == 0 {
                    data.push(rng.next() as u8);
                }
            }
            data.extend_from_slice(rng.pick(&ends));
        }
        rows += copy_in_pieces(copy, &data, &mut rng);
    }
    assert!(rows > 100, "the data made only {rows} good rows");
}

#[test]
fn binary_copy_data_of_any_bytes_is_rows_or_an_error() {
    use super::copy_in::tests::{copy_in, engine};
    let dir = tempfile::tempdir().expect("temporary directory");
    let engine = engine(dir.path());
    let mut rng = Rng(0xb1a7);
    let mut rows = 0;
    for _ in 0..4_000 {
        let copy = copy_in(&engine, "COPY t FROM STDIN (FORMAT binary)");
        let mut data = b"PGCOPY\n\xff\r\n\0".to_vec();
        data.extend_from_slice(&[0, 0, 0, 0]);
        data.extend_from_slice(&(rng.below(3) as u32).to_be_bytes());
        data.extend((0..data[data.len() - 1]).map(|_| rng.next() as u8));
        // Rows of `t (time, a, n)`: mostly the right counts and sizes, any bytes in them,
        // and now and then a wrong count or size, a NULL, or a stray byte.
        for _ in 0..rng.below(6) {
            let count: i16 = if rng.below(8) == 0 {
                rng.pick(&[0, 2, 4, -1, -7])
            } else {
                3
            };
            data.extend_from_slice(&count.to_be_bytes());
            for field in 0..count.max(0) as usize {
                let size = match (field, rng.below(10)) {
                    (_, 0) => -1,
                    (_, 1) => rng.pick(&[0, 1, 4, 9, -5, 1 << 20]),
                    (1, _) => rng.below(6) as i32,
                    _ => 8,
                };
                data.extend_from_slice(&size.to_be_bytes());
                // Times near 2026 so that some are in range.
                let value: Vec<u8> = if field == 0 && size == 8 && rng.below(2) == 0 {
                    (820_000_000_000_000i64 + rng.below(1 << 30) as i64)
                        .to_be_bytes()
                        .to_vec()
                } else {
                    (0..size.clamp(0, 16))
                        .map(|_| rng.pick(b"ab\x00\xff7 ,"))
                        .collect()
                };
                data.extend_from_slice(&value);
            }
            if rng.below(16) == 0 {
                data.push(rng.next() as u8);
            }
        }
        if rng.below(2) == 0 {
            data.extend_from_slice(&(-1i16).to_be_bytes());
        }
        rows += copy_in_pieces(copy, &data, &mut rng);
    }
    assert!(rows > 100, "the data made only {rows} good rows");
}

/// Feeds `data` to `copy` in pieces cut anywhere, then ends it; checks that every row it
/// took is one line of valid line protocol, and returns how many it took.
fn copy_in_pieces(mut copy: super::copy_in::CopyIn, data: &[u8], rng: &mut Rng) -> usize {
    use strata_lineproto::{ParseOptions, parse_lines};
    let mut batches = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let (piece, after) = rest.split_at(rng.below(rest.len() + 1));
        let mut next = copy.take(&bytes::Bytes::copy_from_slice(piece));
        while let Some(batch) = next {
            batches.push(batch);
            next = copy.next();
        }
        rest = after;
    }
    let mut next = copy.finish();
    while let Some(batch) = next {
        batches.push(batch);
        next = copy.next();
    }
    let mut rows = 0;
    for batch in batches {
        let lines: Vec<_> = parse_lines(batch.line_protocol(), &ParseOptions::default()).collect();
        assert_eq!(lines.len(), batch.rows(), "{batch:?}");
        assert!(lines.iter().all(Result::is_ok), "{batch:?}: {lines:?}");
        rows += batch.rows();
    }
    rows
}
