//! Bounded fuzzing of SQL statements in stable CI: seeded mutations (tokens dropped,
//! repeated, swapped, replaced by keywords, punctuation and odd literals; text cut short)
//! of every statement of the golden files run against an engine holding their data. No
//! statement may panic anything (a panic hook counts panics, also those DataFusion's tasks
//! would turn into errors); an error that points into the statement must point inside it.
//! `STRATA_FUZZ_RUNS` sets the number of mutated statements (default 2,000); `STRATA_FUZZ_SHOW=1` prints each error.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::{DB, Rng, open_engine};
use strata_lineproto::Precision;
use strata_query::{QueryEngine, QueryOptions};

/// Pieces a mutation may insert: keywords of Strata's own statements and of queries,
/// punctuation, and literals of every kind, broken ones included.
const PIECES: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "LIMIT",
    "SHOW",
    "TABLES",
    "TAGS",
    "FIELDS",
    "TAG VALUES",
    "WITH KEY",
    "IN",
    "DESCRIBE",
    "CREATE",
    "TABLE",
    "DATABASE",
    "DROP",
    "DELETE",
    "INSERT INTO",
    "VALUES",
    "DOWNSAMPLE",
    "RETENTION",
    "ALTER",
    "SET",
    "IF NOT EXISTS",
    "IF EXISTS",
    "BETWEEN",
    "AND",
    "OR",
    "NOT",
    "TAG",
    "FIELD",
    "TIMESTAMP",
    "time",
    "host",
    "cpu",
    "db.cpu",
    "\"Quoted\"",
    "(",
    ")",
    ",",
    ";",
    "=",
    "<>",
    "!=",
    "<",
    ">=",
    "*",
    "'2023-11-15T00:00:00Z'",
    "'not a time'",
    "'",
    "\"",
    "0",
    "-1",
    "9223372036854775807",
    "99999999999999999999999",
    "1.5e308",
    "NULL",
    "INF",
    "30d",
    "0s",
    "date_bin(INTERVAL '1 hour', time)",
    "count(*)",
    "avg(usage_user)",
    "--",
    "/*",
    "\u{fe0f}",
    "é",
    "",
];

fn tokens(statement: &str) -> Vec<String> {
    statement.split_whitespace().map(str::to_owned).collect()
}

fn mutate(seed: &str, rng: &mut Rng) -> String {
    let mut words = tokens(seed);
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(words.len() as u64 + 1) as usize;
        let piece = PIECES[rng.below(PIECES.len() as u64) as usize].to_owned();
        match rng.below(5) {
            0 if at < words.len() => {
                words.remove(at);
            }
            1 if at < words.len() => {
                let word = words[at].clone();
                words.insert(at, word);
            }
            2 if words.len() > 1 => {
                let other = rng.below(words.len() as u64) as usize;
                let at = at.min(words.len() - 1);
                words.swap(at, other);
            }
            3 if at < words.len() => words[at] = piece,
            _ => words.insert(at.min(words.len()), piece),
        }
    }
    let mut text = words.join(if rng.below(4) == 0 { "\n" } else { " " });
    if rng.below(8) == 0 {
        let cut = rng.below(text.len() as u64 + 1) as usize;
        let cut = (0..=cut).rev().find(|&c| text.is_char_boundary(c)).unwrap();
        text.truncate(cut);
    }
    text
}

/// Every statement of the golden `.sql` files (they end with `;` at the end of a line).
fn seeds() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    for file in files {
        let mut current = String::new();
        for line in std::fs::read_to_string(file).unwrap().lines() {
            if current.is_empty() && (line.trim().is_empty() || line.starts_with("--")) {
                continue;
            }
            current.push_str(line);
            current.push('\n');
            if line.trim_end().ends_with(';') {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_statements_never_panic_and_errors_point_inside_them() {
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));
    let runs: u64 = std::env::var("STRATA_FUZZ_RUNS").map_or(2_000, |v| v.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let data =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/data.lp")).unwrap();
    engine
        .write_lines(DB, &data, Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    let options = QueryOptions {
        // A mutation may make a cross join: bounded, it fails with a timeout.
        timeout: Some(Duration::from_secs(2)),
        ..QueryOptions::default()
    };
    let sql = QueryEngine::with_options(Arc::clone(&engine), options).unwrap();
    let seeds = seeds();
    assert!(seeds.len() > 20, "{} seed statements", seeds.len());
    let mut rng = Rng::new(0x5_017);
    let mut failed = 0;
    for _ in 0..runs {
        let seed = &seeds[rng.below(seeds.len() as u64) as usize];
        let statement = mutate(seed, &mut rng);
        let result = match sql.sql_stream(DB, &statement).await {
            Ok(stream) => stream.collect().await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(err) = result {
            failed += 1;
            if std::env::var("STRATA_FUZZ_SHOW").is_ok() {
                eprintln!("{statement:?} -> {err}");
            }
            if let Some(at) = err.position() {
                let lines: Vec<&str> = statement.split('\n').collect();
                assert!(
                    at.line >= 1 && at.line as usize <= lines.len().max(1),
                    "{statement:?}: {err} at {at:?}"
                );
                let width = lines
                    .get(at.line as usize - 1)
                    .map_or(0, |l| l.chars().count());
                assert!(
                    at.column >= 1 && at.column as usize <= width + 1,
                    "{statement:?}: {err} at {at:?}"
                );
            }
        }
    }
    eprintln!("{runs} mutated statements, {failed} answered with an error, no panic");
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a statement panicked");
    assert!(failed > 0 && failed < runs, "{failed} of {runs} failed");
}
