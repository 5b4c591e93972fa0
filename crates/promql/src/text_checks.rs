//! Checks on a query's text before promql-parser reads it, for what would make the parser
//! itself fail instead of answering with an error: nesting deep enough to overflow a
//! thread's stack, and a number written where a duration goes (`[1e308]`, `offset Inf`)
//! beyond what `Duration::from_secs_f64` takes, on which promql-parser 0.6 panics.

use std::time::Duration;

use crate::Error;

/// The deepest nesting (brackets of any kind) and the most operators a query may have:
/// parsing, evaluating and freeing an expression recurse once per level, and an operator
/// chain is a level per operator. Real queries stay far below; a hostile one would
/// overflow a thread's stack and abort the server.
pub const MAX_NESTING: usize = 1000;

/// Refuses a query deeper than [`MAX_NESTING`] (brackets outside strings and comments, and
/// operator symbols and words), or with a number as a duration that no `Duration` holds.
/// One pass over the text, tokenized as promql-parser's lexer does where it matters here.
pub(crate) fn check(query: &str) -> Result<(), Error> {
    let bytes = query.as_bytes();
    let (mut deepest, mut operators) = (0usize, 0usize);
    // The brackets open, innermost last: a ':' separates durations only inside a '['.
    let mut open: Vec<u8> = Vec::new();
    // Whether a duration may come next: after '[', a ':' inside one, and `offset` (and its
    // optional sign).
    let (mut duration_next, mut after_offset) = (false, false);
    let mut i = 0;
    while i < bytes.len() {
        let (mut next_duration, mut next_after_offset) = (false, false);
        match bytes[i] {
            quote @ (b'"' | b'\'' | b'`') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    if bytes[i] == b'\\' && quote != b'`' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                (next_duration, next_after_offset) = (duration_next, after_offset);
            }
            b' ' | b'\t' | b'\n' | b'\r' => {
                (next_duration, next_after_offset) = (duration_next, after_offset);
            }
            bracket @ (b'(' | b'[' | b'{') => {
                open.push(bracket);
                deepest = deepest.max(open.len());
                next_duration = bracket == b'[';
            }
            b')' | b']' | b'}' => {
                open.pop();
            }
            b':' => next_duration = open.last() == Some(&b'['),
            b'+' | b'-' => {
                operators += 1;
                next_duration = after_offset;
            }
            b'*' | b'/' | b'%' | b'^' | b'<' | b'>' | b'!' => operators += 1,
            b'=' if i > 0 && bytes[i - 1] == b'=' => operators += 1,
            c if c.is_ascii_digit()
                || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                let end = number_end(bytes, i);
                if bytes
                    .get(end)
                    .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'.')
                {
                    // A duration with units (`5m`), which promql-parser reads with checked
                    // arithmetic, or not a token at all: the parser says so.
                    i = word_end(bytes, end);
                } else {
                    if duration_next {
                        check_duration_number(query, i, end)?;
                    }
                    i = end;
                }
                continue;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = word_end(bytes, i);
                let word = &query[i..end];
                if matches!(word, "and" | "or" | "unless" | "atan2") {
                    operators += 1;
                }
                if duration_next
                    && (word.eq_ignore_ascii_case("inf") || word.eq_ignore_ascii_case("nan"))
                {
                    check_duration_number(query, i, end)?;
                }
                (next_duration, next_after_offset) = if word.eq_ignore_ascii_case("offset") {
                    (true, true)
                } else {
                    (false, false)
                };
                i = end;
                (duration_next, after_offset) = (next_duration, next_after_offset);
                continue;
            }
            _ => {}
        }
        (duration_next, after_offset) = (next_duration, next_after_offset);
        i += 1;
    }
    if deepest > MAX_NESTING || operators > MAX_NESTING {
        return Err(Error::BadData(format!(
            "the query is too complex: it nests {deepest} brackets deep and has {operators} operators; at most {MAX_NESTING} of each"
        )));
    }
    Ok(())
}

/// Where the number starting at `start` ends, as promql-parser's lexer scans one:
/// `0x` and hex digits, or digits, a fraction and an exponent with its sign.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let digits_from = |mut i: usize, hex: bool| {
        while bytes.get(i).is_some_and(|c| {
            if hex {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        }) {
            i += 1;
        }
        i
    };
    if bytes[start] == b'0' && matches!(bytes.get(start + 1), Some(b'x' | b'X')) {
        return digits_from(start + 2, true);
    }
    let mut i = digits_from(start, false);
    if bytes.get(i) == Some(&b'.') {
        i = digits_from(i + 1, false);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        i = digits_from(i, false);
    }
    i
}

/// Where the run of letters, digits and underscores from `start` ends.
fn word_end(bytes: &[u8], mut i: usize) -> usize {
    while bytes
        .get(i)
        .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
    {
        i += 1;
    }
    i
}

/// Refuses the number `query[start..end]`, written where a duration goes, when no
/// `Duration` holds that many seconds (NaN, infinities, more than about 5.8e11 years).
/// A number promql-parser cannot read at all is left to it to refuse.
fn check_duration_number(query: &str, start: usize, end: usize) -> Result<(), Error> {
    let text = &query[start..end];
    let Ok(seconds) = promql_parser::util::parse_str_radix(text) else {
        return Ok(());
    };
    if Duration::try_from_secs_f64(seconds).is_ok() {
        return Ok(());
    }
    let before = &query[..start];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Err(Error::BadData(format!(
        "{line}:{column}: parse error: duration out of range: {text} seconds"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(query: &str) -> String {
        match check(query) {
            Err(Error::BadData(message)) => message,
            other => panic!("{query}: {other:?}"),
        }
    }

    #[test]
    fn numbers_too_large_for_a_duration_are_refused_where_a_duration_goes() {
        assert_eq!(
            refused("rate(x[1e308])"),
            "1:8: parse error: duration out of range: 1e308 seconds"
        );
        assert_eq!(
            refused("x offset -Inf"),
            "1:11: parse error: duration out of range: Inf seconds"
        );
        assert_eq!(
            refused("max_over_time(x[5m:\n  NaN])"),
            "2:3: parse error: duration out of range: NaN seconds"
        );
        refused("x offset # a comment\n 99999999999999999999");
        refused("x[ 0x1p ][1e20]");
        refused("avg_over_time(x[ 2e19 : ])");
        assert_eq!(
            check("avg_over_time(x[ 1.5e19 : ])"),
            Ok(()),
            "fits in a Duration"
        );
    }

    #[test]
    fn numbers_elsewhere_and_durations_that_fit_are_left_to_the_parser() {
        for query in [
            "x[300]",
            "x[5m:1.5]",
            "x offset 1e9",
            "x * 1e308",
            "topk(Inf, x)",
            "x[1e308m]",
            "x{a=\"[1e308]\"}",
            "# [1e308]\nx",
            "x[99999999y]",
            "job:x:rate5m[1e3]",
            "x[1e-400]",
        ] {
            assert_eq!(check(query), Ok(()), "{query}");
        }
    }

    #[test]
    fn nesting_and_operators_are_bounded() {
        let deep = format!(
            "{}x{}",
            "(".repeat(MAX_NESTING + 1),
            ")".repeat(MAX_NESTING + 1)
        );
        assert!(refused(&deep).contains("nests 1001 brackets deep"));
        let chain = vec!["x"; MAX_NESTING + 2].join(" and ");
        assert!(refused(&chain).contains("1001 operators"));
        assert_eq!(check(&vec!["x"; MAX_NESTING + 1].join(" + ")), Ok(()));
    }
}
