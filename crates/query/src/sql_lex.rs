//! Just enough of SQL's lexical rules (Postgres's, which DataFusion's dialects accept) to
//! tell code from what is not code: `'…'` (with `''`), `E'…'` (with backslash escapes),
//! `"…"`, `$tag$…$tag$`, `-- …` and nested `/* … */`. Shared by checks that look at a
//! statement's text before any parser does ([`crate::nesting`]) and by the Postgres wire's
//! statement splitting and rewriting.

use std::ops::Range;

/// The byte ranges of `sql` outside strings, quoted names and comments, in order.
pub fn code_ranges(sql: &str) -> Vec<Range<usize>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let skipped_to = match bytes[i] {
            b'\'' => Some(skip_quoted(
                bytes,
                i + 1,
                b'\'',
                backslash_escapes_at(bytes, i),
            )),
            b'"' => Some(skip_quoted(bytes, i + 1, b'"', false)),
            b'-' if bytes.get(i + 1) == Some(&b'-') => Some(skip_line_comment(bytes, i)),
            b'/' if bytes.get(i + 1) == Some(&b'*') => Some(skip_block_comment(bytes, i)),
            b'$' if i == 0 || !is_word_byte(bytes[i - 1]) => skip_dollar_quoted(sql, i),
            _ => None,
        };
        match skipped_to {
            Some(end) => {
                out.push(start..i);
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    out.push(start..bytes.len());
    out
}

/// Whether a byte may be part of a word (an unquoted name, a keyword, a parameter).
pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Whether the `'` at `quote` opens an `E'…'` string, whose backslashes escape.
fn backslash_escapes_at(bytes: &[u8], quote: usize) -> bool {
    quote > 0
        && matches!(bytes[quote - 1], b'E' | b'e')
        && (quote == 1 || !is_word_byte(bytes[quote - 2]))
}

/// The byte after the closing `quote` of a string or name opened before `i`; the end of
/// the text if it is never closed (the engine's parser then reports it).
fn skip_quoted(bytes: &[u8], mut i: usize, quote: u8, backslash_escapes: bool) -> usize {
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if backslash_escapes => i += 2,
            b if b == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The byte after a `-- …` comment starting at `i`: past the end of its line.
pub fn skip_line_comment(bytes: &[u8], i: usize) -> usize {
    bytes[i..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |n| i + n + 1)
}

/// The byte after a `/* … */` comment starting at `i` (comments nest, as in Postgres).
pub fn skip_block_comment(bytes: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < bytes.len() {
        if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// The byte after a `$tag$ … $tag$` string starting at `start`, if one starts there (`$1`
/// is a parameter, not a string).
fn skip_dollar_quoted(sql: &str, start: usize) -> Option<usize> {
    let rest = &sql[start + 1..];
    let tag_len = rest.find('$')?;
    let tag = &rest[..tag_len];
    if tag.starts_with(|c: char| c.is_ascii_digit())
        || !tag.chars().all(|c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    let delimiter = &sql[start..start + tag_len + 2];
    let body = start + delimiter.len();
    Some(
        sql[body..]
            .find(delimiter)
            .map_or(sql.len(), |n| body + n + delimiter.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::code_ranges;

    fn code(sql: &str) -> String {
        code_ranges(sql).into_iter().map(|r| &sql[r]).collect()
    }

    #[test]
    fn code_is_what_is_left_outside_strings_names_and_comments() {
        assert_eq!(
            code("SELECT 'a;b', \"c;d\", E'\\';', $$;$$, $t$;$t$ -- ;\n, 1 /* ; /* ; */ ; */ ;"),
            "SELECT , , E, ,  , 1  ;"
        );
        // `$1` is a parameter; a word ending in `e` before a quote is not `E'…'`.
        assert_eq!(code("SELECT $1, $2"), "SELECT $1, $2");
        assert_eq!(code("SELECT some'\\' , 1"), "SELECT some , 1");
        // Unclosed pieces run to the end.
        for text in ["'", "\"", "/*", "$t$"] {
            assert_eq!(code(text), "", "{text}");
        }
        assert_eq!(code("E'\\"), "E");
    }
}
