//! One Postgres connection's session: its database, what its credentials allow, its
//! settings (`SET`/`SHOW`/`RESET`) and its cancel flag; and the session statements that
//! never reach the engine: `SET`, `RESET`, `SHOW <setting>`, `BEGIN`/`COMMIT`/`ROLLBACK`
//! (accepted, not transactional: every Strata statement is atomic on its own), `DISCARD`
//! and `DEALLOCATE`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::auth::Access;

/// Settings `SHOW` answers before any `SET`, as a Postgres server reports them.
const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("block_size", "8192"),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "read committed"),
    ("default_transaction_read_only", "off"),
    ("extra_float_digits", "1"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("lc_collate", "C"),
    ("lc_ctype", "C"),
    ("max_function_args", "100"),
    ("max_identifier_length", "63"),
    ("max_index_keys", "32"),
    ("search_path", "public"),
    ("server_encoding", "UTF8"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "read committed"),
    ("transaction_read_only", "off"),
];

/// Settings a Postgres server fixes when it is built or started (`context` `internal` in
/// `pg_settings`): `SET` cannot change them there.
const FIXED_SETTINGS: &[&str] = &[
    "block_size",
    "integer_datetimes",
    "is_superuser",
    "lc_collate",
    "lc_ctype",
    "max_function_args",
    "max_identifier_length",
    "max_index_keys",
    "server_encoding",
    "server_version",
    "server_version_num",
];

/// A connection's cancel request: set by the cancel handler, awaited by the statement
/// running on the connection.
#[derive(Debug, Default)]
pub(crate) struct CancelSignal {
    requested: AtomicBool,
    notify: Notify,
}

impl CancelSignal {
    /// Asks the running statement to stop.
    pub(crate) fn cancel(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Forgets an earlier request: a cancel applies to the statement running when it
    /// arrives, not to later ones.
    fn clear(&self) {
        self.requested.store(false, Ordering::SeqCst);
    }

    /// Resolves once a cancel is requested.
    pub(crate) async fn requested(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.requested.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// One connection's state, kept in its session extensions from authentication on.
#[derive(Debug)]
pub(crate) struct Session {
    /// The connection's database (its `database` startup parameter, else its user name,
    /// else the default SQL database).
    pub database: String,
    /// What the connection's password allows.
    pub access: Access,
    settings: Mutex<BTreeMap<String, String>>,
    /// Set by a cancel request; cleared when a statement starts.
    pub cancel: Arc<CancelSignal>,
    /// The `COPY … FROM STDIN` in progress, between its statement and its end.
    pub copy_in: Mutex<Option<super::copy_in::CopyIn>>,
}

impl Session {
    pub(crate) fn new(database: String, access: Access, cancel: Arc<CancelSignal>) -> Self {
        let settings = DEFAULT_SETTINGS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .chain([
                (
                    "server_version".to_owned(),
                    strata_query::POSTGRES_VERSION.to_owned(),
                ),
                ("server_version_num".to_owned(), version_num()),
            ])
            .collect();
        Self {
            database,
            access,
            settings: Mutex::new(settings),
            cancel,
            copy_in: Mutex::new(None),
        }
    }

    /// Clears the cancel flag before a statement runs.
    pub(crate) fn start_statement(&self) {
        self.cancel.clear();
    }

    /// Sets `name` (any case) to `value`, as `SET` does.
    pub(crate) fn set(&self, name: &str, value: String) {
        self.settings
            .lock()
            .insert(name.to_ascii_lowercase(), value);
    }

    /// The value of setting `name` (any case), if the connection has it.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        self.settings
            .lock()
            .get(&name.to_ascii_lowercase())
            .cloned()
    }

    fn reset(&self, name: &str) {
        let name = name.to_ascii_lowercase();
        let default = DEFAULT_SETTINGS
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned());
        let mut settings = self.settings.lock();
        match default {
            Some(value) => {
                settings.insert(name, value);
            }
            None => {
                settings.remove(&name);
            }
        }
    }

    /// Every setting of the connection, by name, with its value.
    pub(crate) fn all(&self) -> Vec<(String, String)> {
        self.settings
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl Session {
    /// The value setting `name` (any case) has before any `SET`, if it has one to go back
    /// to (`server_version` has none: it cannot be set).
    pub(crate) fn default_value(name: &str) -> Option<&'static str> {
        DEFAULT_SETTINGS
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// Whether setting `name` (any case) is one a Postgres server fixes at its start.
    pub(crate) fn is_fixed(name: &str) -> bool {
        FIXED_SETTINGS.iter().any(|k| k.eq_ignore_ascii_case(name))
    }
}

/// `server_version_num` for [`strata_query::POSTGRES_VERSION`]: `16.6` is `160006`.
fn version_num() -> String {
    let mut parts = strata_query::POSTGRES_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major * 10_000 + minor).to_string()
}

/// What a session statement does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionStatement {
    /// Done; the command tag to answer.
    Done(&'static str),
    /// `BEGIN` / `START TRANSACTION`.
    Begin,
    /// `COMMIT` / `END` (`false`) or `ROLLBACK` / `ABORT` (`true`).
    End { rollback: bool },
    /// `SHOW name` (`None`: `SHOW ALL`): rows of setting and value.
    Show(Option<String>),
    /// `SHOW` of a setting this server does not have.
    UnknownSetting(String),
}

impl SessionStatement {
    /// The columns this statement returns: one for `SHOW name`, two for `SHOW ALL`.
    pub(crate) fn columns(&self) -> Vec<String> {
        match self {
            SessionStatement::Show(Some(name)) => vec![name.clone()],
            SessionStatement::Show(None) => vec!["name".into(), "setting".into()],
            _ => Vec::new(),
        }
    }

    /// The rows of a `SHOW`.
    pub(crate) fn rows(&self, session: &Session) -> Vec<Vec<String>> {
        match self {
            SessionStatement::Show(Some(name)) => {
                vec![vec![session.get(name).unwrap_or_default()]]
            }
            SessionStatement::Show(None) => {
                session.all().into_iter().map(|(k, v)| vec![k, v]).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// `statement` if it is a session statement, parsed, with its effect on `session` applied
/// (`apply` false only looks: for describing it before it runs). `None`: the engine runs
/// it.
pub(crate) fn session_statement(
    statement: &str,
    session: &Session,
    apply: bool,
) -> Option<SessionStatement> {
    // Most statements are queries: look at the first word before splitting the rest.
    const FIRST_WORDS: [&str; 13] = [
        "BEGIN",
        "START",
        "COMMIT",
        "END",
        "ROLLBACK",
        "ABORT",
        "SAVEPOINT",
        "RELEASE",
        "DISCARD",
        "DEALLOCATE",
        "SET",
        "RESET",
        "SHOW",
    ];
    let first = statement.split_whitespace().next().unwrap_or_default();
    let first = first.trim_end_matches(';');
    if !FIRST_WORDS.iter().any(|w| first.eq_ignore_ascii_case(w)) {
        return None;
    }
    let words = words(statement);
    let word = |i: usize| {
        words
            .get(i)
            .map(|w| w.to_ascii_uppercase())
            .unwrap_or_default()
    };
    match word(0).as_str() {
        "BEGIN" | "START" => Some(SessionStatement::Begin),
        "COMMIT" | "END" => Some(SessionStatement::End { rollback: false }),
        "ROLLBACK" | "ABORT" => Some(SessionStatement::End { rollback: true }),
        "SAVEPOINT" => Some(SessionStatement::Done("SAVEPOINT")),
        "RELEASE" => Some(SessionStatement::Done("RELEASE")),
        "DISCARD" => Some(SessionStatement::Done("DISCARD ALL")),
        "DEALLOCATE" => Some(SessionStatement::Done("DEALLOCATE")),
        "SET" => {
            let mut rest = &words[1..];
            if rest.first().is_some_and(|w| {
                w.eq_ignore_ascii_case("SESSION") || w.eq_ignore_ascii_case("LOCAL")
            }) {
                rest = &rest[1..];
            }
            let (name, value) = match rest {
                [time, zone, value @ ..]
                    if time.eq_ignore_ascii_case("TIME") && zone.eq_ignore_ascii_case("ZONE") =>
                {
                    ("timezone".to_owned(), value.join(" "))
                }
                [name, to, value @ ..] if to == "=" || to.eq_ignore_ascii_case("TO") => {
                    (name.clone(), value.join(" "))
                }
                // `SET TRANSACTION …`, `SET SESSION CHARACTERISTICS …`: accepted, no effect.
                _ => return Some(SessionStatement::Done("SET")),
            };
            if apply {
                session.set(&name, unquote(&value));
            }
            Some(SessionStatement::Done("SET"))
        }
        "RESET" => {
            if apply {
                match words.get(1) {
                    Some(all) if all.eq_ignore_ascii_case("ALL") => {
                        for (name, _) in session.all() {
                            session.reset(&name);
                        }
                    }
                    Some(name) => session.reset(name),
                    None => {}
                }
            }
            Some(SessionStatement::Done("RESET"))
        }
        "SHOW" if !strata_query::is_strata_statement(statement) => {
            let name = words.get(1)?.to_ascii_lowercase();
            // SQL's multi-word names for two settings.
            let rest: Vec<String> = words[2..].iter().map(|w| w.to_ascii_lowercase()).collect();
            let name = match (name.as_str(), rest.as_slice()) {
                ("time", [zone]) if zone == "zone" => "timezone".to_owned(),
                ("transaction", [isolation, level])
                    if isolation == "isolation" && level == "level" =>
                {
                    "transaction_isolation".to_owned()
                }
                _ => name,
            };
            if name == "all" {
                Some(SessionStatement::Show(None))
            } else if session.get(&name).is_some() {
                Some(SessionStatement::Show(Some(name)))
            } else {
                Some(SessionStatement::UnknownSetting(name))
            }
        }
        _ => None,
    }
}

/// The words of a short statement: blanks, `=` and a final `;` separate them; quoted
/// strings stay whole.
fn words(statement: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    for c in statement.trim().trim_end_matches(';').chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                current.push(c);
                quote = None;
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                current.push(c);
                quote = Some(c);
            }
            (None, '=') => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                out.push("=".into());
            }
            (None, c) if c.is_whitespace() || c == ',' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            (None, c) => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A setting's value without its quotes.
fn unquote(value: &str) -> String {
    let trimmed = value.trim();
    for q in ['\'', '"'] {
        if let Some(inner) = trimmed.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner.replace(&format!("{q}{q}"), &q.to_string());
        }
    }
    trimmed.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> Session {
        Session::new("db".into(), Access::Full, Arc::default())
    }

    #[test]
    fn set_show_and_reset_keep_session_settings() {
        let s = session();
        assert_eq!(
            session_statement("SET extra_float_digits = 3", &s, true),
            Some(SessionStatement::Done("SET"))
        );
        assert_eq!(
            session_statement("set application_name to 'psql ''x'''", &s, true),
            Some(SessionStatement::Done("SET"))
        );
        assert_eq!(
            session_statement("SET TIME ZONE 'Europe/Paris';", &s, true),
            Some(SessionStatement::Done("SET"))
        );
        let show = session_statement("SHOW extra_float_digits", &s, true).expect("session");
        assert_eq!(show.rows(&s), [["3"]]);
        assert_eq!(
            session_statement("show application_name", &s, true)
                .expect("session")
                .rows(&s),
            [["psql 'x'"]]
        );
        assert_eq!(
            session_statement("SHOW TIME ZONE", &s, true)
                .expect("session")
                .rows(&s),
            [["Europe/Paris"]]
        );
        // SQLAlchemy asks this on every new connection.
        let isolation =
            session_statement("show transaction isolation level", &s, true).expect("session");
        assert_eq!(isolation.columns(), ["transaction_isolation"]);
        assert_eq!(isolation.rows(&s), [["read committed"]]);
        session_statement("RESET extra_float_digits", &s, true);
        assert_eq!(show.rows(&s), [["1"]]);
        assert_eq!(
            session_statement("SHOW nope", &s, true),
            Some(SessionStatement::UnknownSetting("nope".into()))
        );
        // Strata's own SHOW statements go to the engine.
        assert_eq!(session_statement("SHOW TABLES", &s, true), None);
        assert_eq!(session_statement("SELECT 1", &s, true), None);
        assert_eq!(
            session_statement("begin", &s, true),
            Some(SessionStatement::Begin)
        );
        assert_eq!(
            session_statement("ROLLBACK;", &s, true),
            Some(SessionStatement::End { rollback: true })
        );
    }
}
