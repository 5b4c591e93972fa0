//! Property: no input makes the parser panic (or overflow its stack), and every error
//! points inside the text.

use std::collections::HashMap;

use proptest::prelude::*;
use strata_influxql::{Param, parse_query};

/// Parses `text` and checks what holds for any input.
fn check(text: &str) -> Result<(), TestCaseError> {
    let params = HashMap::from([
        ("p".to_string(), Param::Integer(3)),
        ("s".to_string(), Param::String("x".into())),
    ]);
    match parse_query(text, &params) {
        Ok(q) => prop_assert!(!q.statements.is_empty()),
        Err(e) => {
            prop_assert!(e.offset <= text.len(), "{e:?}");
            prop_assert!(text.is_char_boundary(e.offset), "{e:?}");
            let before = &text[..e.offset];
            prop_assert_eq!(e.line, before.matches('\n').count() + 1);
            prop_assert!(e.column >= 1 && e.column <= e.offset + 1, "{e:?}");
            prop_assert!(!e.message.is_empty());
            let suffix = format!("at line {}, char {}", e.line, e.column);
            prop_assert!(e.to_string().ends_with(&suffix), "{}", e);
        }
    }
    Ok(())
}

/// Pieces of InfluxQL: every keyword the grammar uses, operators, punctuation and
/// literals of each kind, including broken ones.
const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "ORDER",
    "LIMIT",
    "OFFSET",
    "SLIMIT",
    "SOFFSET",
    "INTO",
    "AS",
    "ASC",
    "DESC",
    "AND",
    "OR",
    "TRUE",
    "FALSE",
    "DISTINCT",
    "SHOW",
    "DATABASES",
    "MEASUREMENTS",
    "MEASUREMENT",
    "TAG",
    "KEYS",
    "KEY",
    "VALUES",
    "FIELD",
    "SERIES",
    "WITH",
    "CARDINALITY",
    "EXACT",
    "RETENTION",
    "POLICY",
    "POLICIES",
    "ON",
    "CREATE",
    "DROP",
    "ALTER",
    "DELETE",
    "DATABASE",
    "DURATION",
    "REPLICATION",
    "SHARD",
    "DEFAULT",
    "NAME",
    "INF",
    "IN",
    "STATS",
    "FOR",
    "DIAGNOSTICS",
    "USERS",
    "EXPLAIN",
    "KILL",
    "GRANT",
    "fill",
    "time",
    "tz",
    "now",
    "null",
    "none",
    "previous",
    "linear",
    "cpu",
    "host",
    "\"quoted id\"",
    "\"",
    "'str'",
    "'",
    "/re/",
    "/",
    "\\",
    "*",
    "+",
    "-",
    "%",
    "&",
    "|",
    "^",
    "=",
    "!=",
    "<>",
    "<",
    "<=",
    ">",
    ">=",
    "=~",
    "!~",
    "(",
    ")",
    ",",
    ";",
    ".",
    "..",
    "::",
    ":",
    "::field",
    "::tag",
    "0",
    "1",
    "-1",
    "1.5",
    ".5",
    "10s",
    "1h30m",
    "1x",
    "99999999999999999999",
    "9223372036854775808",
    "$p",
    "$s",
    "$missing",
    "$\"p\"",
    "$",
    "--",
    "/*",
    "*/",
    "\n",
    "é",
    "µ",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn token_soups_never_panic(
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..40),
        spaced in any::<bool>(),
    ) {
        let text = tokens.join(if spaced { " " } else { "" });
        check(&text)?;
    }

    #[test]
    fn statement_prefixed_soups_never_panic(
        head in prop::sample::select(vec!["SELECT * FROM cpu WHERE", "SELECT", "SHOW TAG VALUES WITH KEY", "CREATE DATABASE d WITH", "SELECT mean(v) FROM m GROUP BY"]),
        tokens in prop::collection::vec(prop::sample::select(TOKENS), 0..30),
    ) {
        let text = format!("{head} {}", tokens.join(" "));
        check(&text)?;
    }

    #[test]
    fn mutated_real_queries_never_panic(
        seed in prop::sample::select(SEEDS.to_vec()),
        edits in prop::collection::vec((any::<usize>(), prop::sample::select(TOKENS), any::<bool>()), 1..6),
    ) {
        let mut text = seed.to_string();
        for (at, token, insert) in edits {
            // Edit at a char boundary: insert a token, or cut the text there.
            let mut i = at % (text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            if insert {
                text.insert_str(i, token);
            } else {
                text.truncate(i);
            }
        }
        check(&text)?;
    }
}

/// Real queries the mutation test starts from.
const SEEDS: &[&str] = &[
    "SELECT max(usage_user),max(usage_system) from cpu where (hostname = 'host_249' or hostname = 'host_1') and time >= '2016-01-01T09:01:37Z' and time < '2016-01-01T17:01:37Z' group by time(1h)",
    r#"SELECT mean("f") FROM "m" WHERE ("host" =~ /^a$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY time(10s), "host" fill(null)"#,
    "SHOW TAG VALUES ON db FROM cpu WITH KEY IN (a, b) WHERE x = $s LIMIT $p",
    "CREATE RETENTION POLICY rp ON db DURATION 1d REPLICATION 1 SHARD DURATION 1h DEFAULT; DROP SERIES FROM /x/",
];

/// The mutation test only means something if its starting points parse.
#[test]
fn seeds_parse() {
    let params = HashMap::from([
        ("p".to_string(), Param::Integer(3)),
        ("s".to_string(), Param::String("x".into())),
    ]);
    for seed in SEEDS {
        assert!(parse_query(seed, &params).is_ok(), "{seed}");
    }
}
