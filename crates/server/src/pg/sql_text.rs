//! A simple-query string cut into statements, its parameters (`$1`, `$2`, …) found (and
//! those that must be arrays) and bound, and Postgres-only catalog syntax rewritten: always in code only, never in
//! strings, quoted names or comments, which `strata_query::sql_lex` tells apart.

use std::borrow::Cow;
use std::ops::Range;

use strata_query::pg_catalog::quote_ident;
use strata_query::sql_lex::{code_ranges, is_word_byte, skip_block_comment, skip_line_comment};

/// A lexical piece of SQL text that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mark {
    /// A `;` outside strings and comments, at this byte.
    End(usize),
    /// `$n` at these bytes.
    Parameter(usize, Range<usize>),
}

/// The `;` ends and `$n` parameters of `sql`, in order: only in code, never in strings,
/// quoted names or comments.
fn marks(sql: &str) -> Vec<Mark> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    for range in code_ranges(sql) {
        let mut i = range.start;
        while i < range.end {
            match bytes[i] {
                b'$' if i == 0 || !is_word_byte(bytes[i - 1]) => {
                    let digits = bytes[i + 1..range.end]
                        .iter()
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    if digits > 0 {
                        let end = i + 1 + digits;
                        let number = sql[i + 1..end].parse().unwrap_or(usize::MAX);
                        out.push(Mark::Parameter(number, i..end));
                        i = end;
                        continue;
                    }
                }
                b';' => out.push(Mark::End(i)),
                _ => {}
            }
            i += 1;
        }
    }
    out
}

/// The statements of a simple-query string, each with its byte offset in it; empty ones
/// (only blanks and comments between `;`s) are left out.
pub(crate) fn split_statements(sql: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    let ends = marks(sql).into_iter().filter_map(|m| match m {
        Mark::End(at) => Some(at),
        Mark::Parameter(..) => None,
    });
    for end in ends.chain(std::iter::once(sql.len())) {
        let piece = &sql[start..end];
        if !is_blank(piece) {
            out.push((start, piece));
        }
        start = (end + 1).min(sql.len());
    }
    out
}

/// Whether `sql` holds nothing but whitespace and comments.
pub(crate) fn is_blank(sql: &str) -> bool {
    let bytes = sql.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
        } else if bytes[i..].starts_with(b"--") {
            i = skip_line_comment(bytes, i);
        } else if bytes[i..].starts_with(b"/*") {
            i = skip_block_comment(bytes, i);
        } else {
            return false;
        }
    }
    true
}

/// The highest parameter number `sql` uses (0 when it has none; `usize::MAX` for a number
/// too long to read).
pub(crate) fn parameter_count(sql: &str) -> usize {
    marks(sql)
        .into_iter()
        .filter_map(|m| match m {
            Mark::Parameter(n, _) => Some(n),
            Mark::End(_) => None,
        })
        .max()
        .unwrap_or(0)
}

/// The numbers of the parameters that stand alone in `ANY(…)`, `ALL(…)` or `SOME(…)`
/// (`host = ANY($1)`): Postgres takes such a parameter as an array, so a client may send
/// one (psycopg's list of strings) without naming its type.
pub(crate) fn array_parameters(sql: &str) -> Vec<usize> {
    marks(sql)
        .into_iter()
        .filter_map(|mark| match mark {
            Mark::Parameter(n, range) => {
                let before = sql[..range.start].trim_end().strip_suffix('(')?.trim_end();
                let word_start = before
                    .rfind(|c: char| !is_ident_char(c))
                    .map_or(0, |i| i + 1);
                let word = &before[word_start..];
                let quantifier = ["ANY", "ALL", "SOME"]
                    .iter()
                    .any(|q| word.eq_ignore_ascii_case(q));
                let closed = sql[range.end..].trim_start().starts_with(')');
                (quantifier && closed).then_some(n)
            }
            Mark::End(_) => None,
        })
        .collect()
}

/// The type a cast written on a parameter names (`$1::timestamptz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CastType {
    /// `timestamptz`, `timestamp with time zone`: planned as `timestamp` (one timestamp
    /// type, without a zone), so a plan cannot tell it from a cast to that.
    Timestamptz,
    /// `oid`: planned as `bigint` (oids are plain integers here).
    Oid,
    /// `oid[]`: planned as `bigint[]`.
    OidArray,
    /// Any other type of `pg_type` (by its oid), under its name or SQL's (`integer`, `int4`,
    /// `bigint[]`): what Postgres describes such a parameter as, where no plan types it.
    Other(u32),
}

/// The parameters cast where they stand (`$1::timestamptz`, `$2::pg_catalog.timestamp with
/// time zone`, `$3::oid[]`, `$4::INTEGER`) to a type Strata knows, by number. Postgres
/// describes such a parameter with the cast's type, and clients encode values by the
/// described type: asyncpg refuses an aware `datetime` for a `timestamp` parameter, an
/// integer for a text one, and sends its type introspection's list of oids only as `oid[]`.
pub(crate) fn cast_parameters(sql: &str) -> Vec<(usize, CastType)> {
    marks(sql)
        .into_iter()
        .filter_map(|mark| match mark {
            Mark::Parameter(n, range) => {
                let cast = sql[range.end..].trim_start().strip_prefix("::")?;
                let name = cast_type_name(cast)?;
                let cast = match name.as_str() {
                    "timestamptz" | "timestamp with time zone" => CastType::Timestamptz,
                    "oid" => CastType::Oid,
                    "oid[]" => CastType::OidArray,
                    other => CastType::Other(
                        strata_query::pg_catalog::type_oid(other)
                            .and_then(|oid| u32::try_from(oid).ok())?,
                    ),
                };
                Some((n, cast))
            }
            Mark::End(_) => None,
        })
        .collect()
}

/// The type name `text` starts with, in lower case, its words one blank apart, without
/// `pg_catalog.` or a length (`varchar(10)`), `[]` after an array's: `INTEGER`,
/// `pg_catalog.timestamp  with time zone`, `oid [ ]`. `None` where no name is, or a name's
/// words are not Postgres's (`timestamp with zones`).
fn cast_type_name(text: &str) -> Option<String> {
    let mut rest = text.trim_start();
    let mut name = next_word(&mut rest)?;
    if name == "pg_catalog" {
        rest = rest.strip_prefix('.')?;
        name = next_word(&mut rest)?;
    }
    // The types whose names have more words, and what may follow their first.
    let more: &[&[&str]] = match name.as_str() {
        "double" => &[&["precision"]],
        "character" => &[&["varying"], &[]],
        "timestamp" | "time" => &[&["with", "time", "zone"], &["without", "time", "zone"], &[]],
        _ => &[&[]],
    };
    let mut found = false;
    for words in more {
        let before = rest;
        if words
            .iter()
            .all(|w| next_word(&mut rest).as_deref() == Some(*w))
        {
            for w in *words {
                name.push(' ');
                name.push_str(w);
            }
            found = true;
            break;
        }
        rest = before;
    }
    // `timestamp with zones` is no type; `timestamp` alone before another word is one.
    let mut peek = rest;
    let dangling = matches!(
        next_word(&mut peek).as_deref(),
        Some("with" | "without" | "varying" | "precision")
    );
    if !found || dangling {
        return None;
    }
    let after = rest.trim_start();
    if let Some(length) = after.strip_prefix('(') {
        rest = &length[length.find(')')? + 1..];
    }
    let after = rest.trim_start();
    if let Some(open) = after.strip_prefix('[')
        && open.trim_start().starts_with(']')
    {
        name.push_str("[]");
    }
    Some(name)
}

/// The word (letters, digits, `_`) at the start of `rest`, after blanks, in lower case;
/// `rest` moves past it.
fn next_word(rest: &mut &str) -> Option<String> {
    let text = rest.trim_start();
    let len = text.find(|c: char| !is_ident_char(c)).unwrap_or(text.len());
    *rest = &text[len..];
    (len > 0).then(|| text[..len].to_ascii_lowercase())
}

/// `sql` with each `$n` replaced by `values[n - 1]`; `Err(n)` names a parameter that has
/// no value.
pub(crate) fn substitute(sql: &str, values: &[String]) -> Result<String, usize> {
    let mut out = String::with_capacity(sql.len() + values.iter().map(String::len).sum::<usize>());
    let mut copied = 0;
    for mark in marks(sql) {
        if let Mark::Parameter(n, range) = mark {
            let value = n.checked_sub(1).and_then(|i| values.get(i)).ok_or(n)?;
            out.push_str(&sql[copied..range.start]);
            out.push_str(value);
            copied = range.end;
        }
    }
    out.push_str(&sql[copied..]);
    Ok(out)
}

/// `sql` with the Postgres-only syntax that system-catalog queries from clients (psql's
/// `\d`, drivers' metadata calls) use turned into what Strata's SQL takes:
/// `OPERATOR(pg_catalog.~)` → `~`, `COLLATE pg_catalog.default` dropped, casts to
/// `regclass`, `regtype`, `regproc` and `oid` dropped (oids are plain integers here; a cast
/// to an array of them becomes `::bigint[]`), and
/// `::pg_catalog.text` → `::text`, `'name'::regclass` becomes the oid of the table called
/// so (a lookup in `pg_class`), `current_catalog` and `current_schema` without parentheses
/// become function calls, and `session_user` and `current_role` become `current_user`
/// (which the engine's parser reads as a call only without parentheses, as SQL writes
/// it). Only code is touched, never strings or names.
pub(crate) fn from_postgres(sql: &str) -> Cow<'_, str> {
    match plain_cast_types(sql) {
        Some(plain) => Cow::Owned(rewrite_statement(&plain).into_owned()),
        None => rewrite_statement(sql),
    }
}

/// `sql` with the type names of its casts written as Postgres's own names for them: quotes
/// taken off names that need none (`::"pg_catalog"."float8"` → `::pg_catalog.float8`, as
/// asyncpg writes the casts that inline a copy's arguments), and an array type's internal
/// name as its element's with `[]` (`::_int8` → `::int8[]`). `None` when it has no such
/// cast.
fn plain_cast_types(sql: &str) -> Option<String> {
    // Every statement comes through here: lex only those that cast.
    if !sql.contains("::") {
        return None;
    }
    let bytes = sql.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    for range in code_ranges(sql) {
        // A replaced name may run past its code range, over a quoted part.
        let mut i = range.start.max(copied);
        while i < range.end
            && let Some(found) = sql[i..range.end].find("::")
        {
            let name_at = skip_blank_bytes(bytes, i + found + 2);
            let (parts, end) = type_name_parts(sql, name_at);
            i = i + found + 2;
            let Some(last) = parts.last() else {
                continue;
            };
            let quoted = parts.iter().any(|(_, quoted)| *quoted);
            let array = last.0.strip_prefix('_').filter(|element| {
                strata_query::pg_catalog::types::PG_TYPES
                    .iter()
                    .any(|t| t.element == 0 && t.name == *element)
            });
            if !quoted && array.is_none() {
                continue;
            }
            out.push_str(&sql[copied..name_at]);
            let names: Vec<&str> = parts.iter().map(|(name, _)| name.as_str()).collect();
            match array {
                Some(element) => {
                    out.push_str(&names[..names.len() - 1].join("."));
                    if names.len() > 1 {
                        out.push('.');
                    }
                    out.push_str(element);
                    out.push_str("[]");
                }
                None => out.push_str(&names.join(".")),
            }
            copied = end;
            i = end.max(i);
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&sql[copied..]);
    Some(out)
}

/// The parts of the (possibly qualified, possibly quoted) name at `at`, each with whether
/// it was quoted, and where the name ends. A quoted part that needs its quotes (capitals,
/// spaces, a `"`) ends the list empty: such a type is left as written.
fn type_name_parts(sql: &str, mut at: usize) -> (Vec<(String, bool)>, usize) {
    let bytes = sql.as_bytes();
    let mut parts = Vec::new();
    loop {
        if bytes.get(at) == Some(&b'"') {
            let Some(close) = sql[at + 1..].find('"').map(|c| at + 1 + c) else {
                return (Vec::new(), at);
            };
            let name = &sql[at + 1..close];
            if quote_ident(name) != name {
                return (Vec::new(), at);
            }
            parts.push((name.to_owned(), true));
            at = close + 1;
        } else {
            let len = sql[at..]
                .find(|c: char| !is_ident_char(c))
                .unwrap_or(sql.len() - at);
            if len == 0 {
                return (Vec::new(), at);
            }
            parts.push((sql[at..at + len].to_ascii_lowercase(), false));
            at += len;
        }
        if bytes.get(at) != Some(&b'.') {
            return (parts, at);
        }
        at += 1;
    }
}

/// The first byte at or after `at` that is not ASCII white space.
pub(crate) fn skip_blank_bytes(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// [`from_postgres`] once cast types are plain.
fn rewrite_statement(sql: &str) -> Cow<'_, str> {
    const MARKERS: [&str; 6] = [
        "OPERATOR",
        "COLLATE",
        "::",
        "CURRENT_",
        "SESSION_USER",
        "CAST",
    ];
    if !MARKERS.iter().any(|m| contains_ignore_ascii_case(sql, m)) {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    for range in code_ranges(sql) {
        let before = &sql[copied..range.start];
        let mut code = &sql[range.clone()];
        let literal = before
            .strip_prefix('\'')
            .and_then(|b| b.strip_suffix('\''))
            .filter(|n| !n.contains('\''));
        // `'name'::regclass`, or `CAST('name' AS regclass)` as SQLAlchemy writes it.
        let oid_cast = literal.and_then(|name| {
            if let Some(open) = cast_opened(&out)
                && let Some((oid_type, after)) = oid_cast_closed(code)
            {
                return Some((name, oid_type, after, Some(open)));
            }
            let (oid_type, after) = strip_oid_cast(code)?;
            // An array of oids is left to `rewrite_code` (`::bigint[]`).
            (!after.trim_start().starts_with('[')).then_some((name, oid_type, after, None))
        });
        if let Some((name, oid_type, after, cast_open)) = oid_cast {
            if let Some(open) = cast_open {
                out.truncate(open);
            }
            // A table's name is its oid; a function's or a type's name
            // (`'pg_catalog.array_in'::regproc`, as pgjdbc compares `typinput` with it) is
            // the name, as the catalog's columns of those types hold it here; an oid is
            // itself.
            match oid_type {
                "regclass" => out.push_str(&table_oid(&format!("'{}'", unqualified(name)))),
                "oid" => out.push_str(before),
                _ => out.push_str(&format!("'{}'", unqualified(name))),
            }
            code = after;
        } else {
            out.push_str(before);
        }
        out.push_str(&rewrite_code(code));
        copied = range.end;
    }
    out.push_str(&sql[copied..]);
    Cow::Owned(out)
}

/// The oid of the table `name` (an SQL string or parameter) names, as `'name'::regclass`
/// gives it.
fn table_oid(name: &str) -> String {
    format!("(SELECT oid FROM pg_catalog.pg_class WHERE relname = {name})")
}

/// A table's name without the schema a `regclass` input may qualify it with
/// (`pg_catalog.pg_constraint`): table names are unique across Strata's schemas here.
fn unqualified(name: &str) -> &str {
    if name.contains('"') {
        return name;
    }
    name.rsplit_once('.').map_or(name, |(_, table)| table)
}

/// Where `CAST(` starts, when `out` ends with it (blanks allowed).
fn cast_opened(out: &str) -> Option<usize> {
    let open = out.trim_end().strip_suffix('(')?.trim_end();
    let start = open.len().checked_sub("CAST".len())?;
    let word = open.get(start..)?;
    let before = open[..start].chars().next_back();
    (word.eq_ignore_ascii_case("CAST") && !before.is_some_and(is_ident_char)).then_some(start)
}

/// The oid type a cast's closing `AS [pg_catalog.]type )` at the start of `code` names
/// (`regclass`, `regtype`, `regproc`, `regprocedure`, `oid`, in lower case), and the code
/// after its parenthesis. A `::` cast to an oid type may come first
/// (`CAST($1::REGCLASS AS REGCLASS)`, as SQLAlchemy's asyncpg dialect writes it); the type
/// is then `regclass` when either is.
fn oid_cast_closed(code: &str) -> Option<(&'static str, &str)> {
    let mut rest = code.trim_start();
    let mut inner_type = None;
    if rest.starts_with("::") {
        let (oid_type, after) = strip_oid_cast(rest)?;
        inner_type = Some(oid_type);
        rest = after.trim_start();
    }
    if !is_keyword_at(rest, "AS") {
        return None;
    }
    let (oid_type, after) = oid_type_at(rest["AS".len()..].trim_start())?;
    let after = after.trim_start().strip_prefix(')')?;
    let oid_type = if inner_type == Some("regclass") {
        "regclass"
    } else {
        oid_type
    };
    Some((oid_type, after))
}

/// The oid type name (`[pg_catalog.]regclass`, …) `text` starts with, in lower case, and the
/// text after it.
fn oid_type_at(text: &str) -> Option<(&'static str, &str)> {
    let text = match text.get(.."pg_catalog.".len()) {
        Some(schema) if schema.eq_ignore_ascii_case("pg_catalog.") => &text[schema.len()..],
        _ => text,
    };
    let oid_type = ["regclass", "regtype", "regprocedure", "regproc", "oid"]
        .into_iter()
        .find(|t| is_keyword_at(text, t))?;
    Some((oid_type, &text[oid_type.len()..]))
}

/// The oid type (see [`oid_type_at`]) of a `::` cast `code` starts with, and the code after
/// it.
fn strip_oid_cast(code: &str) -> Option<(&'static str, &str)> {
    oid_type_at(code.trim_start().strip_prefix("::")?.trim_start())
}

/// [`from_postgres`] on one stretch of code.
fn rewrite_code(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while !rest.is_empty() {
        if is_keyword_at(rest, "OPERATOR") && !out.ends_with(is_ident_char) {
            let after = rest["OPERATOR".len()..].trim_start();
            if let Some(inner) = after.strip_prefix('(')
                && let Some(close) = inner.find(')')
            {
                let operator = inner[..close].trim();
                let operator = operator.strip_prefix("pg_catalog.").unwrap_or(operator);
                out.push(' ');
                out.push_str(operator.trim());
                out.push(' ');
                rest = &inner[close + 1..];
                continue;
            }
        }
        if is_keyword_at(rest, "COLLATE") && !out.ends_with(is_ident_char) {
            let after = rest["COLLATE".len()..].trim_start();
            let name_len = after
                .find(|c: char| !(is_ident_char(c) || c == '.' || c == '"'))
                .unwrap_or(after.len());
            if name_len > 0 {
                rest = &after[name_len..];
                continue;
            }
        }
        // `CAST($1 AS regclass)`: a parameter's table oid, as for a literal name above.
        if is_keyword_at(rest, "CAST")
            && !out.ends_with(|c: char| is_ident_char(c) || c == '.')
            && let Some(inner) = rest["CAST".len()..].trim_start().strip_prefix('(')
            && let Some((parameter, after)) = leading_parameter(inner.trim_start())
            && let Some((oid_type, after)) = oid_cast_closed(after)
        {
            if oid_type == "regclass" {
                out.push_str(&table_oid(parameter));
            } else {
                out.push_str(parameter);
            }
            rest = after;
            continue;
        }
        // SQL's niladic functions, written without parentheses.
        if !out.ends_with(|c: char| is_ident_char(c) || c == '.')
            && let Some(word) = [
                "CURRENT_CATALOG",
                "CURRENT_SCHEMA",
                "CURRENT_ROLE",
                "SESSION_USER",
            ]
            .into_iter()
            .find(|w| is_keyword_at(rest, w))
            && !rest[word.len()..].trim_start().starts_with('(')
        {
            out.push_str(match word {
                "CURRENT_CATALOG" => "current_database()",
                "CURRENT_SCHEMA" => "current_schema()",
                _ => "current_user",
            });
            rest = &rest[word.len()..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("::") {
            let trimmed = after.trim_start();
            let name_len = trimmed
                .find(|c: char| !(is_ident_char(c) || c == '.'))
                .unwrap_or(trimmed.len());
            let name = trimmed[..name_len].to_ascii_lowercase();
            let bare = name.strip_prefix("pg_catalog.").unwrap_or(&name);
            if matches!(
                bare,
                "regclass" | "regtype" | "regproc" | "regprocedure" | "oid"
            ) {
                rest = &trimmed[name_len..];
                // An array of oids is an array of the integers oids are here.
                if let Some(after) = rest.trim_start().strip_prefix('[')
                    && let Some(after) = after.trim_start().strip_prefix(']')
                {
                    out.push_str("::bigint[]");
                    rest = after;
                }
                continue;
            }
            if name.starts_with("pg_catalog.") {
                out.push_str("::");
                out.push_str(bare);
                rest = &trimmed[name_len..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The parameter (`$1`) `text` starts with, and the text after it.
fn leading_parameter(text: &str) -> Option<(&str, &str)> {
    let digits = text.strip_prefix('$')?;
    let len = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    (len > 0 && !digits[len..].starts_with(is_ident_char)).then(|| text.split_at(1 + len))
}

/// Whether `text` starts with the whole word `keyword` (an upper-case ASCII word), in any
/// case. No copy: this runs at every position of a statement's code.
fn is_keyword_at(text: &str, keyword: &str) -> bool {
    text.get(..keyword.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(keyword))
        && !text[keyword.len()..].starts_with(is_ident_char)
}

/// Whether `needle` occurs in `haystack`, ASCII case ignored, without copying either.
pub(crate) fn contains_ignore_ascii_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_alone_in_any_or_all_are_arrays() {
        let sql = "SELECT * FROM t WHERE a = ANY($1) AND b <> all ( $3 ) AND c = some($2) \
                   AND d = ANY($4 || x) AND e = $5 AND f = COMPANY($6) AND g = 'ANY($7)'";
        assert_eq!(array_parameters(sql), [1, 3, 2]);
        assert_eq!(array_parameters("SELECT $1"), Vec::<usize>::new());
    }

    #[test]
    fn parameters_cast_to_types_strata_plans_as_others() {
        let sql = "SELECT $1::timestamptz, $2 :: PG_CATALOG.TimestampTZ, $3::timestamp  with \
                   time zone, $4::timestamp, $5::timestamptzx, ($6)::timestamptz, \
                   '$7::timestamptz', $8::timestamp with time zones, $9::oid, $10::oid [ ], \
                   $11::oids, $12::pg_catalog.oid[]";
        use CastType::*;
        assert_eq!(
            cast_parameters(sql),
            [
                (1, Timestamptz),
                (2, Timestamptz),
                (3, Timestamptz),
                (4, Other(1114)),
                (9, Oid),
                (10, OidArray),
                (12, OidArray)
            ]
        );
        // Any other type Strata knows, under its name or SQL's.
        let sql = "SELECT $1::INTEGER, $2::pg_catalog.int8, $3::double  precision, $4::text[], \
                   $5::VARCHAR(20), $6::REGCLASS, $7::character varying, $8::bool";
        assert_eq!(
            cast_parameters(sql),
            [
                (1, Other(23)),
                (2, Other(20)),
                (3, Other(701)),
                (4, Other(1009)),
                (5, Other(25)),
                (7, Other(25)),
                (8, Other(16))
            ]
        );
    }

    #[test]
    fn statements_split_on_semicolons_outside_strings_names_and_comments() {
        let sql = "SELECT ';' AS \"a;b\"; -- c;d\nSELECT $x$;$x$ /* e; /* f; */ g; */; ;\n SELECT E'\\';' ";
        let pieces: Vec<&str> = split_statements(sql).into_iter().map(|(_, s)| s).collect();
        assert_eq!(
            pieces,
            [
                "SELECT ';' AS \"a;b\"",
                " -- c;d\nSELECT $x$;$x$ /* e; /* f; */ g; */",
                "\n SELECT E'\\';' "
            ]
        );
        let offsets: Vec<usize> = split_statements(sql).into_iter().map(|(o, _)| o).collect();
        assert_eq!(offsets[0], 0);
        assert_eq!(&sql[offsets[1]..offsets[1] + 3], " --");
        assert!(split_statements(" ; -- only a comment\n;").is_empty());
        assert!(is_blank(" /* x */ -- y"));
        assert!(!is_blank(" /* x */ SELECT 1"));
    }

    #[test]
    fn parameters_are_replaced_outside_strings_and_names_only() {
        let sql = "SELECT $1, '$1', \"$2\", a$1, $$ $2 $$, $tag$ $1 $tag$ FROM t WHERE x = $2";
        assert_eq!(parameter_count(sql), 2);
        let out = substitute(sql, &["10".into(), "'y'".into()]).expect("all given");
        assert_eq!(
            out,
            "SELECT 10, '$1', \"$2\", a$1, $$ $2 $$, $tag$ $1 $tag$ FROM t WHERE x = 'y'"
        );
        assert_eq!(substitute("SELECT $3", &["1".into()]), Err(3));
        assert_eq!(substitute("SELECT $0", &["1".into()]), Err(0));
        assert_eq!(parameter_count("SELECT 1"), 0);
    }

    #[test]
    fn postgres_only_catalog_syntax_is_rewritten_outside_strings() {
        let psql = "SELECT c.oid::pg_catalog.regclass, t.typname::pg_catalog.text FROM pg_catalog.pg_class c \
                    WHERE c.relname OPERATOR(pg_catalog.~) '^(cpu)$' COLLATE pg_catalog.default \
                    AND c.oid = '16385'::pg_catalog.oid AND x = 'OPERATOR(pg_catalog.~)::regclass'";
        assert_eq!(
            from_postgres(psql),
            "SELECT c.oid, t.typname::text FROM pg_catalog.pg_class c \
                    WHERE c.relname  ~  '^(cpu)$'  \
                    AND c.oid = '16385' AND x = 'OPERATOR(pg_catalog.~)::regclass'"
        );
        assert_eq!(
            from_postgres("SELECT 1 WHERE classoid = 'pg_class'::pg_catalog.regclass AND x"),
            "SELECT 1 WHERE classoid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'pg_class') AND x"
        );
        assert_eq!(
            from_postgres(
                "SELECT current_catalog, current_schema(), session_user, CURRENT_USER, current_role, t.current_user"
            ),
            "SELECT current_database(), current_schema(), current_user, CURRENT_USER, current_user, t.current_user"
        );
        assert_eq!(
            from_postgres(
                "SELECT 1 WHERE 23 = ANY($1::oid[]) AND 25 = ANY(ARRAY[25]::regtype [ ])"
            ),
            "SELECT 1 WHERE 23 = ANY($1::bigint[]) AND 25 = ANY(ARRAY[25]::bigint[])"
        );
        assert_eq!(
            from_postgres(
                "SELECT quote_literal($1::\"pg_catalog\".\"float8\"::text), $2::\"_int8\", \
                 $3::pg_catalog._text, x::\"Mixed\", '::\"float8\"', $4:: \"int4\""
            ),
            "SELECT quote_literal($1::float8::text), $2::int8[], \
                 $3::text[], x::\"Mixed\", '::\"float8\"', $4:: int4"
        );
        // A function's or type's name is compared with the catalog's columns as a name.
        assert_eq!(
            from_postgres(
                "SELECT typinput='pg_catalog.array_in'::regproc, 'int4'::pg_catalog.regtype, \
                 '{1,2}'::oid[]"
            ),
            "SELECT typinput='array_in', 'int4', '{1,2}'::bigint[]"
        );
        // SQLAlchemy's CAST(… AS REGCLASS), of a literal (bound) or a parameter (described).
        assert_eq!(
            from_postgres(
                "SELECT 1 WHERE classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS) \
                 AND a = cast ( 'x'::REGCLASS AS pg_catalog.regclass ) AND b = CAST('23' AS OID)"
            ),
            "SELECT 1 WHERE classoid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'pg_constraint') \
                 AND a = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'x') AND b = '23'"
        );
        assert_eq!(
            from_postgres(
                "SELECT CAST($2::REGCLASS AS REGCLASS), CAST($3 AS REGTYPE), CAST($4 AS INT)"
            ),
            "SELECT (SELECT oid FROM pg_catalog.pg_class WHERE relname = $2), $3, CAST($4 AS INT)"
        );
        // A type's or function's name, cast either way, is the name without its schema.
        assert_eq!(
            from_postgres("SELECT CAST('pg_catalog.int4' AS regtype), 'pg_catalog.int4'::regtype"),
            "SELECT 'int4', 'int4'"
        );
        // Ordinary SQL comes back as it was, without a copy.
        assert!(matches!(from_postgres("SELECT 1"), Cow::Borrowed(_)));
        assert_eq!(
            from_postgres("SELECT x::BIGINT, collate_x FROM t"),
            "SELECT x::BIGINT, collate_x FROM t"
        );
    }
}
