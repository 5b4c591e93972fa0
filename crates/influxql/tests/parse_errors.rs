//! Errors: exact messages (InfluxDB's wording) and positions, unsupported statements,
//! and the nesting limits that keep any input from overflowing the stack.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use strata_influxql::ParseError;

/// Asserts that each query fails with exactly the displayed error.
fn assert_errors(cases: &[(&str, &str)]) {
    for (query, want) in cases {
        assert_eq!(error_text(query), *want, "query: {query:?}");
    }
}

#[test]
fn error_fields_and_display() {
    assert_eq!(
        error("SELECT FROM cpu"),
        ParseError {
            message: "found FROM, expected identifier, string, number, bool".into(),
            line: 1,
            column: 8,
            offset: 7,
        }
    );
    assert_eq!(
        error_text("SELECT FROM cpu"),
        "found FROM, expected identifier, string, number, bool at line 1, char 8"
    );
    // Lines are 1-based, columns count characters (not bytes), offsets are bytes.
    assert_eq!(
        error("SELECT \"é\"\nFROM b WHERE x = 'ü' AND é"),
        ParseError {
            message: "found é, expected identifier, string, number, bool".into(),
            line: 2,
            column: 26,
            offset: 12 + 26,
        }
    );
    assert_eq!(
        error("SELECT a\nFROM b\nWHERE c = "),
        ParseError {
            message: "found EOF, expected identifier, string, number, bool".into(),
            line: 3,
            column: 11,
            offset: 26,
        }
    );
    // ParseError is a std error.
    let boxed: Box<dyn std::error::Error> = Box::new(error("SELECT *"));
    assert_eq!(
        boxed.to_string(),
        "found EOF, expected FROM at line 1, char 9"
    );
}

#[test]
fn found_expected_messages() {
    assert_errors(&[
        (
            "select from cpu",
            "found from, expected identifier, string, number, bool at line 1, char 8",
        ),
        (
            "SELECT * FROM",
            "found EOF, expected identifier, regex at line 1, char 14",
        ),
        ("SELECT *", "found EOF, expected FROM at line 1, char 9"),
        (
            "SELECT a FROM x WHER y",
            "found WHER, expected ; at line 1, char 17",
        ),
        (
            "SELECT (a FROM b",
            "found FROM, expected ) at line 1, char 11",
        ),
        (
            "SELECT f(a b) FROM c",
            "found b, expected , or ) at line 1, char 12",
        ),
        (
            "SELECT a FROM b WHERE",
            "found EOF, expected identifier, string, number, bool at line 1, char 22",
        ),
        (
            "SELECT a FROM b WHERE a # 1",
            "found #, expected ; at line 1, char 25",
        ),
        (
            "SELECT a FROM b WHERE $ = 1",
            "found $, expected identifier, string, number, bool at line 1, char 23",
        ),
        (
            "SELECT a:b FROM c",
            "found :, expected FROM at line 1, char 9",
        ),
        (
            "SELECT a FROM b WHERE a =~ 'x'",
            "found 'x', expected regex at line 1, char 28",
        ),
        (
            "SELECT a FROM db.",
            "found EOF, expected identifier, regex at line 1, char 18",
        ),
        (
            "SELECT a::foo FROM b",
            "found foo, expected float, integer, unsigned, string, boolean, field, tag at line 1, char 11",
        ),
        (
            "SELECT *::float FROM b",
            "found float, expected field, tag at line 1, char 11",
        ),
        (
            "SELECT count(distinct) FROM b",
            "found ), expected identifier at line 1, char 22",
        ),
        (
            "SELECT a FROM b; SELECT",
            "found EOF, expected identifier, string, number, bool at line 1, char 24",
        ),
        (
            "FOO",
            "found FOO, expected SELECT, DELETE, SHOW, CREATE, DROP, ALTER at line 1, char 1",
        ),
    ]);
}

#[test]
fn select_clause_errors() {
    assert_errors(&[
        (
            "SELECT a FROM b ORDER BY host",
            "only ORDER BY time supported at this time at line 1, char 26",
        ),
        (
            "SELECT a FROM b ORDER BY time DESC, host",
            "only ORDER BY time supported at this time at line 1, char 35",
        ),
        (
            "SELECT a FROM b LIMIT -1",
            "found -, expected integer at line 1, char 23",
        ),
        (
            "SELECT a FROM b LIMIT 1.5",
            "found 1.5, expected integer at line 1, char 23",
        ),
        (
            "SELECT a FROM b SLIMIT x",
            "found x, expected integer at line 1, char 24",
        ),
        (
            "SELECT a FROM b GROUP BY time",
            "time() is a function and expects at least one argument at line 1, char 26",
        ),
        (
            "SELECT a FROM b GROUP BY time(0s)",
            "time dimension must have a positive duration at line 1, char 31",
        ),
        (
            "SELECT a FROM b GROUP BY time(1)",
            "found 1, expected duration at line 1, char 31",
        ),
        (
            "SELECT a FROM b GROUP BY time(1m, 2)",
            "found 2, expected duration at line 1, char 35",
        ),
        (
            "SELECT a FROM b fill(foo)",
            "found foo, expected null, none, previous, linear, number at line 1, char 22",
        ),
        (
            "SELECT a FROM b GROUP BY time(1m) fill(",
            "found EOF, expected null, none, previous, linear, number at line 1, char 40",
        ),
        (
            "SELECT a FROM b tz(UTC)",
            "found UTC, expected string at line 1, char 20",
        ),
        (
            "SELECT a FROM a.b.c.d",
            "too many segments in measurement name at line 1, char 20",
        ),
    ]);
}

#[test]
fn literal_errors() {
    assert_errors(&[
        (
            "SELECT a FROM x\nWHERE a = 'unterminated",
            "unterminated string at line 2, char 11",
        ),
        (
            "SELECT a FROM x WHERE a = 'two\nlines'",
            "unterminated string at line 1, char 27",
        ),
        (
            "SELECT a FROM x WHERE a = \"open",
            "unterminated quoted identifier at line 1, char 27",
        ),
        (
            "SELECT a FROM x WHERE a =~ /open",
            "unterminated regex at line 1, char 28",
        ),
        (
            "SELECT a FROM x WHERE a = 'bad \\q'",
            "bad escape \\q at line 1, char 32",
        ),
        (
            "SELECT a FROM x /* open",
            "unterminated comment at line 1, char 17",
        ),
        (
            "SELECT 10x FROM b",
            "invalid duration 10x at line 1, char 8",
        ),
        (
            "SELECT 1h5 FROM b",
            "invalid duration 1h5 at line 1, char 8",
        ),
        (
            "SELECT 99999999999999999999 FROM b",
            "unable to parse integer at line 1, char 8",
        ),
        (
            "SELECT 9223372036854775808 FROM b",
            "integer out of range at line 1, char 8",
        ),
        (
            "SELECT a FROM b WHERE a = $x",
            "missing parameter: x at line 1, char 27",
        ),
    ]);
}

#[test]
fn show_and_ddl_errors() {
    let after_show = "DATABASES, DIAGNOSTICS, FIELD, MEASUREMENT, MEASUREMENTS, RETENTION, SERIES, STATS, TAG, USERS";
    assert_eq!(
        error_text("SHOW"),
        format!("found EOF, expected {after_show} at line 1, char 5")
    );
    assert_eq!(
        error_text("SHOW FOO"),
        format!("found FOO, expected {after_show} at line 1, char 6")
    );
    assert_errors(&[
        (
            "SHOW TAG",
            "found EOF, expected KEY, KEYS, VALUES at line 1, char 9",
        ),
        (
            "SHOW FIELD",
            "found EOF, expected KEY, KEYS at line 1, char 11",
        ),
        (
            "SHOW MEASUREMENT",
            "found EOF, expected CARDINALITY at line 1, char 17",
        ),
        (
            "SHOW TAG VALUES FROM cpu",
            "found EOF, expected WITH at line 1, char 25",
        ),
        (
            "SHOW TAG VALUES CARDINALITY",
            "found EOF, expected WITH at line 1, char 28",
        ),
        (
            "SHOW TAG VALUES WITH KEY",
            "found EOF, expected =, !=, =~, !~, IN at line 1, char 25",
        ),
        (
            "SHOW TAG VALUES WITH KEY = 'host'",
            "found 'host', expected identifier at line 1, char 28",
        ),
        (
            "SHOW TAG VALUES WITH KEY =~ host",
            "found host, expected regex at line 1, char 29",
        ),
        (
            "SHOW MEASUREMENTS WITH MEASUREMENT > x",
            "found >, expected =, =~ at line 1, char 36",
        ),
        (
            "SHOW FIELD KEYS WHERE a = 1",
            "found WHERE, expected ; at line 1, char 17",
        ),
        (
            "SHOW STATS FOR x",
            "found x, expected string at line 1, char 16",
        ),
        (
            "CREATE",
            "found EOF, expected DATABASE, RETENTION at line 1, char 7",
        ),
        (
            "CREATE DATABASE",
            "found EOF, expected identifier at line 1, char 16",
        ),
        (
            "CREATE DATABASE select",
            "found select, expected identifier at line 1, char 17",
        ),
        (
            "CREATE DATABASE db WITH",
            "found EOF, expected DURATION, REPLICATION, SHARD, NAME at line 1, char 24",
        ),
        (
            "CREATE RETENTION POLICY rp ON db DURATION 1d",
            "found EOF, expected REPLICATION at line 1, char 45",
        ),
        (
            "CREATE RETENTION POLICY rp ON db DURATION 1d REPLICATION 0",
            "invalid value 0: must be 1 <= n <= 2147483647 at line 1, char 58",
        ),
        (
            "CREATE RETENTION POLICY rp ON db DURATION 5 REPLICATION 1",
            "found 5, expected duration at line 1, char 43",
        ),
        (
            "ALTER RETENTION POLICY rp ON db",
            "found EOF, expected DURATION, REPLICATION, SHARD, DEFAULT at line 1, char 32",
        ),
        (
            "ALTER DATABASE x",
            "found DATABASE, expected RETENTION at line 1, char 7",
        ),
        (
            "DROP",
            "found EOF, expected DATABASE, MEASUREMENT, RETENTION, SERIES at line 1, char 5",
        ),
        (
            "DROP SERIES",
            "found EOF, expected FROM, WHERE at line 1, char 12",
        ),
        (
            "DELETE",
            "found EOF, expected FROM, WHERE at line 1, char 7",
        ),
        (
            "DELETE FROM",
            "found EOF, expected identifier, regex at line 1, char 12",
        ),
        (
            "DELETE FROM cpu, db..mem WHERE host = 'a'",
            "database not supported at line 1, char 18",
        ),
        (
            "DROP SERIES FROM db.autogen.cpu",
            "retention policy not supported at line 1, char 18",
        ),
        (
            "DROP SERIES FROM autogen./cpu/",
            "retention policy not supported at line 1, char 18",
        ),
    ]);
}

#[test]
fn unsupported_statements() {
    assert_errors(&[
        (
            "SELECT a INTO b FROM c",
            "SELECT INTO is not supported at line 1, char 10",
        ),
        (
            "EXPLAIN SELECT a FROM b",
            "EXPLAIN is not supported at line 1, char 1",
        ),
        (
            "explain analyze SELECT a FROM b",
            "EXPLAIN is not supported at line 1, char 1",
        ),
        (
            "GRANT ALL TO bob",
            "GRANT is not supported at line 1, char 1",
        ),
        (
            "REVOKE ALL FROM bob",
            "REVOKE is not supported at line 1, char 1",
        ),
        (
            "KILL QUERY 1",
            "KILL QUERY is not supported at line 1, char 1",
        ),
        (
            "SET PASSWORD FOR bob = 'x'",
            "SET PASSWORD is not supported at line 1, char 1",
        ),
        (
            "SHOW QUERIES",
            "SHOW QUERIES is not supported at line 1, char 1",
        ),
        (
            "SHOW GRANTS FOR bob",
            "SHOW GRANTS is not supported at line 1, char 1",
        ),
        (
            "SHOW SHARDS",
            "SHOW SHARDS is not supported at line 1, char 1",
        ),
        (
            "SHOW SHARD GROUPS",
            "SHOW SHARD GROUPS is not supported at line 1, char 1",
        ),
        (
            "SHOW SUBSCRIPTIONS",
            "SHOW SUBSCRIPTIONS is not supported at line 1, char 1",
        ),
        (
            "SHOW CONTINUOUS QUERIES",
            "SHOW CONTINUOUS QUERIES is not supported at line 1, char 1",
        ),
        (
            "CREATE USER bob WITH PASSWORD 'x'",
            "CREATE USER is not supported at line 1, char 1",
        ),
        (
            "CREATE CONTINUOUS QUERY cq ON db BEGIN SELECT mean(v) INTO x FROM y GROUP BY time(1m) END",
            "CREATE CONTINUOUS QUERY is not supported at line 1, char 1",
        ),
        (
            "CREATE SUBSCRIPTION s ON db.rp DESTINATIONS ALL 'udp://h:1'",
            "CREATE SUBSCRIPTION is not supported at line 1, char 1",
        ),
        (
            "DROP USER bob",
            "DROP USER is not supported at line 1, char 1",
        ),
        (
            "DROP CONTINUOUS QUERY cq ON db",
            "DROP CONTINUOUS QUERY is not supported at line 1, char 1",
        ),
        (
            "DROP SHARD 1",
            "DROP SHARD is not supported at line 1, char 1",
        ),
        (
            "DROP SUBSCRIPTION s ON db.rp",
            "DROP SUBSCRIPTION is not supported at line 1, char 1",
        ),
        // In the second statement: positions are in the whole text.
        (
            "SHOW DATABASES;\n  SHOW QUERIES",
            "SHOW QUERIES is not supported at line 2, char 3",
        ),
    ]);
}

#[test]
fn empty_queries() {
    for q in [
        "",
        "   ",
        ";",
        " ;; ; ",
        "-- just a comment",
        "/* nothing */;\n",
    ] {
        assert_eq!(error(q).message, "empty query", "{q:?}");
    }
    assert_eq!(error_text(""), "empty query at line 1, char 1");
}

/// `n` copies of `open`, then `inner`, then `n` copies of `close`, as a field.
fn nested(open: &str, inner: &str, close: &str, n: usize) -> String {
    format!("SELECT {}{inner}{} FROM m", open.repeat(n), close.repeat(n))
}

/// Runs `f` on a thread with a `kib` KiB stack, propagating its panics.
fn on_stack(kib: usize, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(kib * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

/// `n` subqueries nested in each other.
fn nested_subqueries(n: usize) -> String {
    format!(
        "SELECT x FROM {}m{}",
        "(SELECT x FROM ".repeat(n),
        ")".repeat(n)
    )
}

#[test]
fn expression_nesting_up_to_the_limit_parses_on_a_small_stack() {
    // Expressions are parsed without recursion, so 256 KiB is plenty even unoptimized.
    on_stack(256, || {
        // `-(` opens two levels: the minus and the parenthesis.
        let cases = [
            ("(", ")", 500),
            ("f(", ")", 500),
            ("-(", ")", 250),
            ("- ", "", 500),
        ];
        for (open, close, n) in cases {
            let s = select(&nested(open, "x", close, n));
            assert_eq!(s.fields.len(), 1);
        }
    });
}

#[test]
fn subquery_nesting_up_to_the_limit_parses() {
    // Subqueries recurse: a few KiB per level in a debug build, well within 1 MiB.
    on_stack(1024, || {
        assert_eq!(select(&nested_subqueries(100)).sources.len(), 1);
    });
}

#[test]
fn nesting_beyond_the_limit_is_an_error() {
    on_stack(1024, || {
        let e = error(&nested("(", "x", ")", 501));
        assert_eq!(
            e.to_string(),
            "too deeply nested: more than 500 levels at line 1, char 508"
        );
        // A long run of `(` is stopped early, not after allocating for all of them.
        let e = error(&nested("(", "x", ")", 1_000_000));
        assert_eq!(e.offset, 7 + 500);
        let e = error(&nested("f(", "x", ")", 501));
        assert_eq!(e.message, "too deeply nested: more than 500 levels");
        let e = error(&nested("- ", "x", "", 501));
        assert_eq!(e.message, "too deeply nested: more than 500 levels");
        assert_eq!(
            error(&nested_subqueries(101)).message,
            "too deeply nested: more than 100 levels of subqueries"
        );
        assert_eq!(
            error(&nested_subqueries(100_000)).message,
            "too deeply nested: more than 100 levels of subqueries"
        );
    });
}

#[test]
fn expression_tree_depth_is_bounded() {
    // A left-deep chain grows the tree without nesting; past 1000 levels it is refused.
    let chain = |n: usize| format!("SELECT x FROM m WHERE a{}", " OR a".repeat(n));
    assert!(parse_ok(&chain(999)));
    let e = error(&chain(1000));
    assert_eq!(
        e.message,
        "expression too deeply nested: more than 1000 levels"
    );
    // A huge chain fails cleanly too (and nothing overflows dropping partial trees).
    assert_eq!(
        error(&chain(200_000)).message,
        "expression too deeply nested: more than 1000 levels"
    );
}

/// Whether `text` parses.
fn parse_ok(text: &str) -> bool {
    strata_influxql::parse_query(text, &Default::default()).is_ok()
}
