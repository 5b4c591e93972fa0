//! A bound on how deeply a statement's expressions nest, checked on its text before any
//! parser sees it.
//!
//! Why on the text: sqlparser limits its own recursion (parentheses, unary operators,
//! subqueries), but it builds a chain such as `a + b + c …` or `x OR y OR z …` in a loop,
//! one tree level per operator. Everything after it walks that tree recursively —
//! DataFusion's analyzer and optimizer, Strata's direct path, even dropping the tree — so
//! a long enough chain overflowed the thread's stack and aborted the whole server. Once
//! the tree exists it is too late: dropping it recurses. So the text is measured first,
//! in one pass without allocation per byte.
//!
//! The measure is an upper bound on the tree's depth: every open parenthesis or bracket
//! counts one level, and so does every operator (a run of operator characters, or an
//! operator keyword such as `AND`, `OR`, `IS`, `BETWEEN`) between two commas at the same
//! parenthesis level, summed over the enclosing levels. Only code counts: strings, quoted
//! names and comments are skipped ([`crate::sql_lex`]). Real statements stay far below it:
//! TSBS's deepest uses about 20.

use crate::error::{Position, QueryError};
use crate::sql_lex::code_ranges;

/// The deepest expression a statement may hold, as [`check`] measures it: the same bound
/// as InfluxQL's parser.
pub const MAX_EXPRESSION_DEPTH: usize = 1000;

/// The stack a thread that plans statements needs for the deepest one [`check`] lets
/// through: DataFusion's passes recurse through the tree, and not all of them grow their
/// stack on demand. A debug build needed 8 MiB for 1,000 levels (`tests/suite/sql.rs`); a
/// release build far less. Only touched pages cost memory.
pub const PLANNING_STACK_BYTES: usize = 16 << 20;

/// Keywords that sqlparser may apply to the expression before them in its loop, growing the
/// tree without recursing (compared in upper case).
const OPERATOR_KEYWORDS: &[&str] = &[
    "AND", "OR", "XOR", "NOT", "IS", "IN", "LIKE", "ILIKE", "BETWEEN", "COLLATE", "AT", "SIMILAR",
    "REGEXP", "RLIKE", "DIV", "MOD", "OVERLAPS", "NOTNULL", "ISNULL", "MEMBER", "SOUNDS", "GLOB",
    "MATCH", "OPERATOR",
];

/// Characters of infix and postfix operators: a run of them counts one operator.
fn is_operator_byte(b: u8) -> bool {
    matches!(
        b,
        b'+' | b'-'
            | b'*'
            | b'/'
            | b'%'
            | b'^'
            | b'|'
            | b'&'
            | b'<'
            | b'>'
            | b'='
            | b'!'
            | b'~'
            | b':'
            | b'#'
            | b'@'
            | b'?'
    )
}

/// `Ok` when no expression in `statement` is deeper than [`MAX_EXPRESSION_DEPTH`];
/// otherwise [`QueryError::TooComplex`] at the place the bound was passed.
pub fn check(statement: &str) -> Result<(), QueryError> {
    match deepest_point(statement, MAX_EXPRESSION_DEPTH) {
        None => Ok(()),
        Some(at) => Err(QueryError::TooComplex {
            message: format!(
                "expression too deeply nested: more than {MAX_EXPRESSION_DEPTH} levels"
            ),
            position: Some(position_of(statement, at)),
        }),
    }
}

/// The byte offset where the measured depth first passes `limit`, if it does.
fn deepest_point(text: &str, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    // Operators counted since the last comma, per open parenthesis level (the statement's
    // top level first), and their sum plus the open levels: the current depth.
    let mut runs: Vec<usize> = vec![0];
    let mut depth = 0usize;
    for code in code_ranges(text) {
        let mut i = code.start;
        while i < code.end {
            let b = bytes[i];
            i += 1;
            match b {
                b'(' | b'[' => {
                    runs.push(0);
                    depth += 1;
                }
                // A close without an open is left for the parser to report.
                b')' | b']' if runs.len() > 1 => {
                    depth -= runs.pop().unwrap_or(0) + 1;
                }
                b',' | b';' => {
                    if let Some(run) = runs.last_mut() {
                        depth -= *run;
                        *run = 0;
                    }
                }
                _ if is_operator_byte(b) => {
                    while i < code.end && is_operator_byte(bytes[i]) {
                        i += 1;
                    }
                    depth += 1;
                    if let Some(run) = runs.last_mut() {
                        *run += 1;
                    }
                }
                _ if b.is_ascii_alphabetic() || b == b'_' => {
                    let start = i - 1;
                    while i < code.end && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                        i += 1;
                    }
                    let word = &bytes[start..i];
                    if OPERATOR_KEYWORDS
                        .iter()
                        .any(|k| k.as_bytes().eq_ignore_ascii_case(word))
                    {
                        depth += 1;
                        if let Some(run) = runs.last_mut() {
                            *run += 1;
                        }
                    }
                }
                _ => {}
            }
            if depth > limit {
                return Some(i - 1);
            }
        }
    }
    None
}

/// Line and column (in characters, from 1) of byte `at` in `text`.
fn position_of(text: &str, at: usize) -> Position {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    Position {
        line: before.matches('\n').count() as u64 + 1,
        column: before[line_start..].chars().count() as u64 + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_passes(text: &str, limit: usize) -> Option<usize> {
        deepest_point(text, limit)
    }

    #[test]
    fn chains_count_one_level_per_operator() {
        let chain = |n: usize| format!("SELECT 1{}", " + 0".repeat(n));
        assert_eq!(depth_passes(&chain(10), 10), None);
        assert!(depth_passes(&chain(11), 10).is_some());
        let ors = |n: usize| format!("SELECT 1 WHERE a{}", " OR a".repeat(n));
        assert_eq!(depth_passes(&ors(10), 10), None);
        assert!(depth_passes(&ors(11), 10).is_some());
    }

    #[test]
    fn commas_end_a_chain_and_parentheses_add_to_it() {
        // Ten columns of five operators each: five deep, not fifty.
        let columns = ["a + b + c + d + e + f"; 10].join(", ");
        assert_eq!(depth_passes(&format!("SELECT {columns}"), 5), None);
        // Inside parentheses, the enclosing chain's operators count too.
        assert_eq!(depth_passes("SELECT a + (b + (c + d))", 5), None);
        assert!(depth_passes("SELECT a + (b + (c + d))", 4).is_some());
        // Closing a level forgets its operators.
        assert_eq!(depth_passes("SELECT f(a + b + c) + g(a + b + c)", 5), None);
    }

    #[test]
    fn strings_names_and_comments_are_skipped() {
        let noise = "'+++', \"a+b+c\", E'\\'+++', $$+++$$, $t$+$$+$t$, -- +++\n /* + /* + */ + */";
        assert_eq!(depth_passes(&format!("SELECT {noise}, 1"), 0), None);
        // `$1` is a parameter, not a dollar quote.
        assert_eq!(depth_passes("SELECT $1 + $2", 1), None);
        assert!(depth_passes("SELECT $1 + $2 + $3", 1).is_some());
    }

    #[test]
    fn operator_keywords_count_other_words_do_not() {
        assert!(depth_passes("SELECT a FROM t WHERE a AND b", 0).is_some());
        assert_eq!(
            depth_passes("SELECT android, origin, island FROM t", 0),
            None
        );
    }

    #[test]
    fn unbalanced_text_is_measured_without_panicking() {
        for text in [")))", "((((", "'", "\"", "/*", "$tag$", "E'\\", "$", "--"] {
            let _ = depth_passes(text, 1);
        }
        assert!(depth_passes(&"(".repeat(1_000_000), 1000).is_some());
    }

    #[test]
    fn the_error_names_the_bound_and_where_it_was_passed() {
        let text = format!("SELECT 1\n  {}", "+ 0 ".repeat(MAX_EXPRESSION_DEPTH + 1));
        let e = check(&text).unwrap_err();
        assert_eq!(
            e.to_string(),
            "expression too deeply nested: more than 1000 levels"
        );
        assert_eq!(
            e.position(),
            // The 1001st `+`: two spaces, then 1000 × "+ 0 ".
            Some(Position {
                line: 2,
                column: 3 + 4 * 1000
            })
        );
    }
}
