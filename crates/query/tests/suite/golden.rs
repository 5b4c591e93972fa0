//! SQL golden files.
//!
//! Each `tests/golden/<name>.sql` runs on a fresh engine (three shards, hour partitions, the
//! clock fixed at 2023-11-15T02:00:00Z) whose database `db` holds `tests/golden/<name>.lp`,
//! or the shared `tests/golden/data.lp` when there is none, written as line protocol with
//! nanosecond timestamps and flushed (so later `INSERT`s land in the memtable beside parts).
//!
//! Format of a `.sql` file: statements run in `db` one after the other; a statement ends
//! with `;` at the end of a line and may span lines; lines starting with `--` between
//! statements are comments. The sibling `.out` holds, per statement, the statement as
//! written, then its result: Arrow's pretty-printed table, `OK` for a statement without
//! result columns (`CREATE`, `DROP`), or `ERROR <kind> at line L, column C: <message>`;
//! statements are separated by a blank line.
//!
//! A mismatch fails with a line diff of every file that differs. `STRATA_BLESS=1 cargo
//! test -p strata-query --test suite golden::` rewrites the `.out` files instead (review the diff).

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::path::{Path, PathBuf};

use common::{DB, open_engine};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use strata_lineproto::Precision;
use strata_query::{QueryEngine, QueryError};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The statements of a `.sql` file, each as written (lines joined with `\n`).
fn statements(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        if current.is_empty() && (line.trim().is_empty() || line.trim_start().starts_with("--")) {
            continue;
        }
        current.push(line);
        if line.trim_end().ends_with(';') {
            out.push(current.join("\n"));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// One statement's result as the `.out` file shows it.
async fn result_text(sql: &QueryEngine, statement: &str) -> String {
    match run(sql, statement).await {
        Ok((0, batches)) => {
            assert!(batches.iter().all(|b| b.num_rows() == 0));
            "OK".to_string()
        }
        Ok((_, batches)) => pretty_format_batches(&batches).unwrap().to_string(),
        Err(err) => {
            let place = match err.position() {
                Some(p) => format!(" at line {}, column {}", p.line, p.column),
                None => String::new(),
            };
            format!("ERROR {}{place}: {err}", err.kind())
        }
    }
}

/// Runs `statement`; the number of result columns and the batches (one empty batch when
/// there are no rows, so the header still prints).
async fn run(sql: &QueryEngine, statement: &str) -> Result<(usize, Vec<RecordBatch>), QueryError> {
    let stream = sql.sql_stream(DB, statement).await?;
    let schema = stream.schema();
    let mut batches = stream.collect().await?;
    batches.retain(|b| b.num_rows() > 0);
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(schema.clone()));
    }
    Ok((schema.fields().len(), batches))
}

/// The `.out` text of one `.sql` file.
async fn run_file(sql_path: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_engine(dir.path());
    let own = sql_path.with_extension("lp");
    let data = if own.exists() {
        own
    } else {
        golden_dir().join("data.lp")
    };
    let body = std::fs::read(&data).unwrap();
    let report = engine
        .write_lines(DB, &body, Precision::Nanoseconds)
        .unwrap();
    assert!(
        report.errors.is_empty(),
        "{}: {:?}",
        data.display(),
        report.errors
    );
    engine.flush().unwrap();
    let sql = QueryEngine::new(engine).unwrap();
    let text = std::fs::read_to_string(sql_path).unwrap();
    let mut out = String::new();
    for statement in statements(&text) {
        out.push_str(&statement);
        out.push('\n');
        out.push_str(&result_text(&sql, &statement).await);
        out.push_str("\n\n");
    }
    out
}

/// A line diff (longest common subsequence) with three lines of context: ` ` kept, `-`
/// expected only, `+` actual only, `…` where unchanged lines are left out.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut lines: Vec<(char, &str)> = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = (0..lines.len()).filter(|&n| lines[n].0 != ' ').collect();
    let near = |n: usize| changed.iter().any(|&c| c.abs_diff(n) <= CONTEXT);
    let mut out = String::new();
    let mut skipped = false;
    for (n, (mark, line)) in lines.iter().enumerate() {
        if near(n) {
            out.push_str(&format!("{mark} {line}\n"));
            skipped = false;
        } else if !skipped {
            out.push_str("…\n");
            skipped = true;
        }
    }
    out
}

#[tokio::test]
async fn golden_files() {
    let bless = std::env::var_os("STRATA_BLESS").is_some_and(|v| v == "1");
    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no golden files");
    let mut failures = Vec::new();
    for sql_path in &files {
        let actual = run_file(sql_path).await;
        let out_path = sql_path.with_extension("out");
        if bless {
            std::fs::write(&out_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&out_path).unwrap_or_default();
        if expected != actual {
            failures.push(format!(
                "{} differs (- expected, + actual; STRATA_BLESS=1 rewrites it):\n{}",
                out_path.display(),
                diff(&expected, &actual)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn statements_split_at_semicolons_at_line_end() {
    let text = "-- a comment\nSELECT 1;\n\nSELECT 'a;b'\n  FROM t;\n-- another\nSHOW TABLES";
    assert_eq!(
        statements(text),
        vec!["SELECT 1;", "SELECT 'a;b'\n  FROM t;", "SHOW TABLES"]
    );
    assert_eq!(diff("a\nb\nc", "a\nx\nc"), "  a\n- b\n+ x\n  c\n");
    let long: String = (0..20).map(|n| format!("{n}\n")).collect();
    let changed = long.replace("10\n", "ten\n");
    assert_eq!(
        diff(&long, &changed),
        "…\n  7\n  8\n  9\n- 10\n+ ten\n  11\n  12\n  13\n…\n"
    );
}
