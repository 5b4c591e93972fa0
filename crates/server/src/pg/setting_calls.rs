//! `current_setting(…)` and `set_config(…)` read and change the connection's settings, the
//! ones `SHOW` and `SET` see (`session.rs`). The engine plans statements without a
//! connection, so a call whose arguments are literals is replaced by its value before the
//! statement is planned:
//!
//! - `current_setting('name')`: the setting's value; a setting the connection does not have
//!   is Postgres's error `42704` (`unrecognized configuration parameter "jit"`), or NULL with
//!   `current_setting('name', true)`. Clients probe settings this way: asyncpg reads
//!   `jit` before its type introspection and goes on when the setting is unknown.
//!   `search_path` is left to the engine, whose `current_setting` answers the statement's
//!   database (the schema its tables are in).
//! - `set_config('name', 'value', is_local)`: sets the setting as `SET` does (there are no
//!   transactions, so `is_local` changes nothing) and is its new value. A name the
//!   connection does not have is refused (`42704`) unless it is a custom one (`a.b`), as in
//!   Postgres. The setting changes when the statement is read, before it runs.
//!
//! A call whose arguments are not all literals is left to the engine (`current_setting`
//! then answers `search_path` and NULL), or refused (`set_config`, `0A000`). Describing a
//! statement reads nothing and changes nothing: `set_config(…)` is then a text NULL.

use std::borrow::Cow;

use pgwire::error::PgWireResult;
use strata_query::sql_lex::{code_ranges, is_word_byte};

use super::errors::{NOT_SUPPORTED, error};
use super::params::quoted;
use super::session::Session;
use super::sql_text::{contains_ignore_ascii_case, skip_blank_bytes};

/// Postgres's SQLSTATE for a setting that does not exist.
const UNDEFINED_OBJECT: &str = "42704";

/// What to do with the calls of a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The statement is about to run: read and change the settings.
    Run,
    /// The statement is being described: only make it plannable.
    Describe,
}

/// `sql` with its `current_setting`/`set_config` calls replaced as the module says;
/// borrowed when it has none.
pub(crate) fn setting_calls<'a>(
    sql: &'a str,
    session: &Session,
    mode: Mode,
) -> PgWireResult<Cow<'a, str>> {
    // Every statement comes through here: lex only those that name the functions.
    if !contains_ignore_ascii_case(sql, "current_setting")
        && !contains_ignore_ascii_case(sql, "set_config")
    {
        return Ok(Cow::Borrowed(sql));
    }
    let calls = find_calls(sql);
    if calls.is_empty() {
        return Ok(Cow::Borrowed(sql));
    }
    let mut out = String::with_capacity(sql.len());
    let mut copied = 0;
    for call in calls {
        let Some(replacement) = replacement(&call, session, mode)? else {
            continue;
        };
        out.push_str(&sql[copied..call.span.start]);
        out.push_str(&replacement);
        copied = call.span.end;
    }
    if copied == 0 {
        return Ok(Cow::Borrowed(sql));
    }
    out.push_str(&sql[copied..]);
    Ok(Cow::Owned(out))
}

/// Which function a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Function {
    CurrentSetting,
    SetConfig,
}

/// An argument of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Argument {
    Text(String),
    Boolean(bool),
}

/// A call found in a statement's code: its bytes (name to closing parenthesis) and its
/// arguments, `None` when they are not all literals.
#[derive(Debug)]
struct Call {
    function: Function,
    span: std::ops::Range<usize>,
    arguments: Option<Vec<Argument>>,
}

/// The text a call is replaced by; `None` leaves it to the engine.
fn replacement(call: &Call, session: &Session, mode: Mode) -> PgWireResult<Option<String>> {
    let arguments = call.arguments.as_deref();
    match (call.function, mode) {
        (Function::SetConfig, Mode::Describe) => Ok(Some("CAST(NULL AS TEXT)".to_owned())),
        (Function::CurrentSetting, Mode::Describe) => Ok(None),
        (Function::CurrentSetting, Mode::Run) => {
            let (name, missing_ok) = match arguments {
                Some([Argument::Text(name)]) => (name, false),
                Some([Argument::Text(name), Argument::Boolean(missing_ok)]) => (name, *missing_ok),
                _ => return Ok(None),
            };
            if name.eq_ignore_ascii_case("search_path") {
                return Ok(None);
            }
            match session.get(name) {
                Some(value) => Ok(Some(text_literal(&value))),
                None if missing_ok => Ok(Some("CAST(NULL AS TEXT)".to_owned())),
                None => Err(unknown_setting(name)),
            }
        }
        (Function::SetConfig, Mode::Run) => {
            let Some(
                [
                    Argument::Text(name),
                    Argument::Text(value),
                    Argument::Boolean(_),
                ],
            ) = arguments
            else {
                return Err(error(
                    NOT_SUPPORTED,
                    "set_config takes literal arguments here: set_config('name', 'value', false)",
                ));
            };
            if session.get(name).is_none() && !name.contains('.') {
                return Err(unknown_setting(name));
            }
            session.set(name, value.clone());
            Ok(Some(text_literal(value)))
        }
    }
}

fn unknown_setting(name: &str) -> pgwire::error::PgWireError {
    error(
        UNDEFINED_OBJECT,
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

/// `value` as a literal of type text (a bare string literal would be DataFusion's `Utf8`
/// too, but the cast keeps the column's type when the value is NULL elsewhere).
fn text_literal(value: &str) -> String {
    format!("CAST({} AS TEXT)", quoted(value))
}

/// The calls of `current_setting` and `set_config` (also written `pg_catalog.…`) in the
/// code of `sql`, in order and not overlapping.
fn find_calls(sql: &str) -> Vec<Call> {
    const NAMES: [(&str, Function); 2] = [
        ("current_setting", Function::CurrentSetting),
        ("set_config", Function::SetConfig),
    ];
    let bytes = sql.as_bytes();
    let mut calls: Vec<Call> = Vec::new();
    for range in code_ranges(sql) {
        let mut i = range.start;
        while i < range.end {
            let after_call = calls.last().map_or(0, |c| c.span.end);
            let starts_word = i >= after_call && (i == 0 || !is_word_byte(bytes[i - 1]));
            let found = starts_word
                .then(|| {
                    NAMES.iter().find(|(name, _)| {
                        sql.get(i..i + name.len())
                            .is_some_and(|w| w.eq_ignore_ascii_case(name))
                            && !bytes.get(i + name.len()).copied().is_some_and(is_word_byte)
                    })
                })
                .flatten();
            let Some(&(name, function)) = found else {
                i += 1;
                continue;
            };
            let open = skip_blank_bytes(bytes, i + name.len());
            if bytes.get(open) != Some(&b'(') {
                i += name.len();
                continue;
            }
            let start = qualified_start(sql, i);
            match arguments(sql, open + 1) {
                Some((arguments, end)) => {
                    calls.push(Call {
                        function,
                        span: start..end,
                        arguments: Some(arguments),
                    });
                    i = end;
                }
                None => {
                    let Some(end) = closing_parenthesis(bytes, open) else {
                        break;
                    };
                    calls.push(Call {
                        function,
                        span: start..end,
                        arguments: None,
                    });
                    i = end;
                }
            }
        }
    }
    calls
}

/// Where the call whose name starts at `name_at` starts: before a `pg_catalog.` prefix.
fn qualified_start(sql: &str, name_at: usize) -> usize {
    const SCHEMA: &str = "pg_catalog.";
    name_at
        .checked_sub(SCHEMA.len())
        .filter(|&at| {
            sql.get(at..name_at)
                .is_some_and(|s| s.eq_ignore_ascii_case(SCHEMA))
                && (at == 0 || !is_word_byte(sql.as_bytes()[at - 1]))
        })
        .unwrap_or(name_at)
}

/// The literal arguments from `at` (just after the opening parenthesis) and the byte after
/// the closing one; `None` when an argument is anything but a string literal, `true` or
/// `false`.
fn arguments(sql: &str, mut at: usize) -> Option<(Vec<Argument>, usize)> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    loop {
        at = skip_blank_bytes(bytes, at);
        if out.is_empty() && bytes.get(at) == Some(&b')') {
            return Some((out, at + 1));
        }
        let (argument, end) = literal(sql, at)?;
        out.push(argument);
        at = skip_blank_bytes(bytes, end);
        match bytes.get(at)? {
            b',' => at += 1,
            b')' => return Some((out, at + 1)),
            _ => return None,
        }
    }
}

/// The literal at `at` and the byte after it: a string (`''` for a quote) or a boolean.
fn literal(sql: &str, at: usize) -> Option<(Argument, usize)> {
    let bytes = sql.as_bytes();
    if bytes.get(at) == Some(&b'\'') {
        let mut text = String::new();
        let mut i = at + 1;
        loop {
            let next = i + sql[i..].find('\'')?;
            text.push_str(&sql[i..next]);
            if bytes.get(next + 1) == Some(&b'\'') {
                text.push('\'');
                i = next + 2;
            } else {
                return Some((Argument::Text(text), next + 1));
            }
        }
    }
    let end = at + bytes[at..].iter().take_while(|&&b| is_word_byte(b)).count();
    let word = &sql[at..end];
    if word.eq_ignore_ascii_case("true") {
        Some((Argument::Boolean(true), end))
    } else if word.eq_ignore_ascii_case("false") {
        Some((Argument::Boolean(false), end))
    } else {
        None
    }
}

/// The byte after the parenthesis that closes the one at `open`, skipping strings and
/// quoted names; `None` when it is never closed.
fn closing_parenthesis(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            quote @ (b'\'' | b'"') => {
                i += 1;
                while i < bytes.len() && bytes[i] != quote {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::Access;

    fn session() -> Session {
        Session::new("db".into(), Access::Full, Arc::default())
    }

    fn run(sql: &str, session: &Session) -> PgWireResult<String> {
        setting_calls(sql, session, Mode::Run).map(Cow::into_owned)
    }

    #[test]
    fn current_setting_reads_the_connections_settings() {
        let s = session();
        assert_eq!(
            run("SELECT current_setting('TimeZone') AS tz, x", &s).unwrap(),
            "SELECT CAST('UTC' AS TEXT) AS tz, x"
        );
        assert_eq!(
            run("SELECT pg_catalog.current_setting ( 'jit' , true )", &s).unwrap(),
            "SELECT CAST(NULL AS TEXT)"
        );
        let err = run(
            "SELECT current_setting('jit') AS cur, set_config('jit', 'off', false)",
            &s,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("unrecognized configuration parameter \"jit\""),
            "{err}"
        );
        // Left to the engine: search_path, arguments that are not literals, strings and
        // names that only look like calls.
        for kept in [
            "SELECT current_setting('search_path')",
            "SELECT current_setting(name) FROM t",
            "SELECT 'current_setting(''jit'')', my_current_setting('jit'), \"current_setting\"",
        ] {
            assert_eq!(run(kept, &s).unwrap(), kept);
        }
    }

    #[test]
    fn set_config_sets_what_current_setting_and_show_read() {
        let s = session();
        assert_eq!(
            run(
                "SELECT set_config('application_name', 'it''s me', false), current_setting('application_name')",
                &s
            )
            .unwrap(),
            "SELECT CAST('it''s me' AS TEXT), CAST('it''s me' AS TEXT)"
        );
        assert_eq!(s.get("application_name").as_deref(), Some("it's me"));
        assert_eq!(
            run("SELECT set_config('my.flag', 'on', true)", &s).unwrap(),
            "SELECT CAST('on' AS TEXT)"
        );
        assert_eq!(s.get("my.flag").as_deref(), Some("on"));
        let unknown = run("SELECT set_config('jit', 'off', false)", &s).unwrap_err();
        assert!(unknown.to_string().contains("\"jit\""), "{unknown}");
        assert!(s.get("jit").is_none());
        let computed = run("SELECT set_config('a.b', name, false) FROM t", &s).unwrap_err();
        assert!(
            computed.to_string().contains("literal arguments"),
            "{computed}"
        );
    }

    #[test]
    fn describing_reads_and_changes_nothing() {
        let s = session();
        let sql = "SELECT current_setting('jit'), set_config('application_name', $1, false)";
        assert_eq!(
            setting_calls(sql, &s, Mode::Describe).unwrap(),
            "SELECT current_setting('jit'), CAST(NULL AS TEXT)"
        );
        assert_eq!(s.get("application_name").as_deref(), Some(""));
    }
}
