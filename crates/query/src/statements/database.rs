//! Databases and their retention: `CREATE DATABASE [IF NOT EXISTS] db [WITH RETENTION d]`,
//! `ALTER DATABASE db SET RETENTION d`, `DROP DATABASE [IF EXISTS] db` and
//! `SHOW DATABASES`. A retention `d` is a duration (`30d`, `12h`, `2w`, bare or quoted),
//! `INF`/`FOREVER`/`0` for no expiry, or `DEFAULT` for the server's `--retention`.
//! `WITH … TIER AFTER d` / `SET TIER AFTER d` set how long after a partition ends the
//! lake copies the database's rows (`docs/lake.md`): a positive duration, or `DEFAULT` for
//! the server's `--tier-after`.
//! `CREATE DATABASE … PRECISION 'ms'|'us'|'ns'` is TDengine's: the unit of integer times in
//! `INSERT`s into the database's super tables (see `supertable.rs`).

use std::sync::Arc;
use std::time::Duration;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_lineproto::Precision;
use strata_storage::{Engine, Retention};

use super::tokens::{Cursor, plan, syntax};
use super::{Output, blocking};
use crate::error::{Position, QueryError};

/// A parsed database statement.
#[derive(Debug)]
pub(super) enum DatabaseStatement {
    Create {
        name: String,
        at: Position,
        if_not_exists: bool,
        retention: Option<Retention>,
        /// `TIER AFTER`: `Some(None)` is `DEFAULT`.
        tier_after: Option<Option<Duration>>,
        /// TDengine's `PRECISION`.
        precision: Option<Precision>,
    },
    Alter {
        name: String,
        at: Position,
        setting: DatabaseSetting,
    },
    Drop {
        name: String,
        at: Position,
        if_exists: bool,
    },
}

/// What `ALTER DATABASE … SET` changes.
#[derive(Debug)]
pub(super) enum DatabaseSetting {
    /// `SET RETENTION d`.
    Retention(Retention),
    /// `SET TIER AFTER d` (`None`: `DEFAULT`).
    TierAfter(Option<Duration>),
}

/// The rest of `CREATE DATABASE …` after `CREATE`.
pub(super) fn parse_create(cursor: &mut Cursor) -> Result<DatabaseStatement, QueryError> {
    cursor.expect_keyword("DATABASE")?;
    let if_not_exists = cursor.eat_if_not_exists()?;
    let (name, at) = cursor.identifier("a database name")?;
    let precision = if cursor.eat_keyword("PRECISION") {
        Some(precision(cursor)?)
    } else {
        None
    };
    let mut retention_setting = None;
    let mut tier_after_setting = None;
    if cursor.eat_keyword("WITH") {
        // `RETENTION d` and `TIER AFTER d`, each at most once, in either order.
        loop {
            if retention_setting.is_none() && cursor.eat_keyword("RETENTION") {
                retention_setting = Some(retention(cursor)?);
            } else if tier_after_setting.is_none() && cursor.eat_keyword("TIER") {
                tier_after_setting = Some(tier_after(cursor)?);
            } else if retention_setting.is_none() && tier_after_setting.is_none() {
                return Err(cursor.expected("RETENTION or TIER AFTER"));
            } else {
                break;
            }
        }
    }
    cursor.expect_end()?;
    Ok(DatabaseStatement::Create {
        name,
        at,
        if_not_exists,
        retention: retention_setting,
        tier_after: tier_after_setting,
        precision,
    })
}

/// TDengine's precision after `PRECISION`: `'ms'`, `'us'` or `'ns'`.
fn precision(cursor: &mut Cursor) -> Result<Precision, QueryError> {
    let at = cursor.here();
    let Some(text) = cursor.eat_string() else {
        return Err(cursor.expected("a precision: 'ms', 'us' or 'ns'"));
    };
    match text.to_ascii_lowercase().as_str() {
        "ms" => Ok(Precision::Milliseconds),
        "us" => Ok(Precision::Microseconds),
        "ns" => Ok(Precision::Nanoseconds),
        _ => Err(plan(
            format!("unknown precision '{text}'; TDengine's are 'ms', 'us' and 'ns'"),
            at,
        )),
    }
}

/// The rest of `ALTER DATABASE db SET RETENTION d | TIER AFTER d` after `ALTER`.
pub(super) fn parse_alter(cursor: &mut Cursor) -> Result<DatabaseStatement, QueryError> {
    cursor.expect_keyword("DATABASE")?;
    let (name, at) = cursor.identifier("a database name")?;
    cursor.expect_keyword("SET")?;
    let setting = if cursor.eat_keyword("TIER") {
        DatabaseSetting::TierAfter(tier_after(cursor)?)
    } else if cursor.eat_keyword("RETENTION") {
        DatabaseSetting::Retention(retention(cursor)?)
    } else {
        return Err(cursor.expected("RETENTION or TIER AFTER"));
    };
    cursor.expect_end()?;
    Ok(DatabaseStatement::Alter { name, at, setting })
}

/// The rest of `DROP DATABASE …` after `DROP`.
pub(super) fn parse_drop(cursor: &mut Cursor) -> Result<DatabaseStatement, QueryError> {
    cursor.expect_keyword("DATABASE")?;
    let if_exists = cursor.eat_if_exists()?;
    let (name, at) = cursor.identifier("a database name")?;
    cursor.expect_end()?;
    Ok(DatabaseStatement::Drop {
        name,
        at,
        if_exists,
    })
}

/// A `tier after` after `TIER`: `AFTER`, then a positive duration or `DEFAULT` (`None`).
fn tier_after(cursor: &mut Cursor) -> Result<Option<Duration>, QueryError> {
    cursor.expect_keyword("AFTER")?;
    let (text, at) = duration_text(cursor, "a duration such as 7d, or DEFAULT")?;
    // The same words and units as a retention; "forever" is not a tier after.
    match Retention::parse(&text) {
        Ok(Retention::ServerDefault) => Ok(None),
        Ok(Retention::Keep(d)) => Ok(Some(d)),
        Ok(Retention::Forever) => Err(syntax(
            format!("tier after {text:?}: give a positive duration such as 7d, or DEFAULT"),
            at,
        )),
        Err(_) => Err(syntax(
            format!("tier after {text:?}: expected a duration such as 7d or 12h, or DEFAULT"),
            at,
        )),
    }
}

/// A retention: `'30d'`, `30d` (a number and a unit, as the tokenizer splits it), `30
/// days`, or a word (`INF`, `FOREVER`, `DEFAULT`).
pub(super) fn retention(cursor: &mut Cursor) -> Result<Retention, QueryError> {
    let (text, at) = duration_text(cursor, "a retention such as 30d, INF or DEFAULT")?;
    Retention::parse(&text).map_err(|e| syntax(e, at))
}

/// The text of a duration as a statement writes it: `'30d'`, `30d` (a number and a unit,
/// as the tokenizer splits them), `30 days`, or a bare word; and where it starts.
pub(super) fn duration_text(
    cursor: &mut Cursor,
    what: &str,
) -> Result<(String, Position), QueryError> {
    let at = cursor.here();
    let text = match cursor.peek() {
        Some(Token::SingleQuotedString(s)) => s.clone(),
        Some(Token::Number(n, _)) => {
            let mut text = n.clone();
            cursor.advance();
            if let Some(Token::Word(unit)) = cursor.peek()
                && unit.quote_style.is_none()
            {
                text.push_str(&unit.value);
            } else {
                return Ok((text, at));
            }
            text
        }
        Some(Token::Word(word)) if word.quote_style.is_none() => word.value.clone(),
        _ => return Err(cursor.expected(what)),
    };
    cursor.advance();
    Ok((text, at))
}

/// Runs a database statement (durably: the catalog is written before it returns).
pub(super) async fn execute(
    engine: &Arc<Engine>,
    statement: DatabaseStatement,
) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    blocking(move || {
        let exists = |name: &str| engine.catalog().has_database(name);
        match statement {
            DatabaseStatement::Create {
                name,
                at,
                if_not_exists,
                retention,
                tier_after,
                precision,
            } => {
                if exists(&name) {
                    if if_not_exists {
                        return Ok(Output::empty());
                    }
                    return Err(plan(format!("database \"{name}\" already exists"), at));
                }
                if let Some(precision) = precision {
                    // Records the database too, in the same catalog write.
                    engine
                        .catalog()
                        .set_database_precision(&name, precision)
                        .map_err(QueryError::Storage)?;
                }
                engine
                    .create_database_with_retention(
                        &name,
                        retention.unwrap_or(Retention::ServerDefault),
                    )
                    .map_err(QueryError::Storage)?;
                if let Some(Some(tier_after)) = tier_after {
                    engine
                        .catalog()
                        .set_tier_after(&name, Some(tier_after))
                        .map_err(QueryError::Storage)?;
                }
            }
            DatabaseStatement::Alter { name, at, setting } => {
                if !exists(&name) {
                    return Err(plan(format!("database \"{name}\" not found"), at));
                }
                match setting {
                    DatabaseSetting::Retention(retention) => {
                        if matches!(retention, Retention::Keep(d) if d.is_zero()) {
                            return Err(plan("a retention must be positive", at));
                        }
                        engine
                            .set_retention(&name, retention)
                            .map_err(QueryError::Storage)?;
                    }
                    DatabaseSetting::TierAfter(tier_after) => engine
                        .catalog()
                        .set_tier_after(&name, tier_after)
                        .map_err(QueryError::Storage)?,
                }
            }
            DatabaseStatement::Drop {
                name,
                at,
                if_exists,
            } => {
                let existed = engine.drop_database(&name).map_err(QueryError::Storage)?;
                if !existed && !if_exists {
                    return Err(plan(format!("database \"{name}\" not found"), at));
                }
            }
        }
        Ok(Output::empty())
    })
    .await
}

/// `SHOW DATABASES`: each database, how long it keeps rows, where that comes from, and its
/// lake `tier after` (`default`: the server's `--tier-after`).
pub(super) fn show(engine: &Engine, cursor: &mut Cursor) -> Result<Output, QueryError> {
    cursor.expect_end()?;
    let default = engine.default_retention();
    let rows = engine
        .catalog()
        .databases()
        .into_iter()
        .map(|name| {
            let setting = engine.retention_setting(&name);
            let source = match setting {
                Retention::ServerDefault => "server default",
                _ => "database",
            };
            let kept = setting.effective(default);
            let tier_after = engine
                .catalog()
                .tier_after(&name)
                .map_or_else(|| "default".to_string(), |d| Retention::text(Some(d)));
            vec![name, Retention::text(kept), source.to_string(), tier_after]
        })
        .collect();
    Output::strings(
        &[
            "database_name",
            "retention",
            "retention_source",
            "tier_after",
        ],
        rows,
    )
}
