//! Downsamples (continuous aggregates): `CREATE DOWNSAMPLE [IF NOT EXISTS] name FROM
//! source INTERVAL d [AGGREGATES (a, …)] [RETENTION d]`, `DROP DOWNSAMPLE [IF EXISTS]
//! name` and `SHOW DOWNSAMPLES`. The engine keeps them current (`Engine::create_downsample`);
//! the target is a table like any other, queried with plain SQL.

use std::sync::Arc;
use std::time::Duration;

use datafusion::sql::sqlparser::tokenizer::Token;
use strata_storage::{Aggregate, DownsampleSpec, Engine, Retention};

use super::database::{duration_text, retention};
use super::tokens::{Cursor, TableRef, plan, syntax};
use super::{Output, blocking};
use crate::error::QueryError;

/// The aggregates kept when a statement names none.
const DEFAULT_AGGREGATES: [Aggregate; 4] = [
    Aggregate::Avg,
    Aggregate::Min,
    Aggregate::Max,
    Aggregate::Last,
];

/// A parsed downsample statement.
#[derive(Debug)]
pub(super) enum DownsampleStatement {
    Create {
        name: TableRef,
        source: TableRef,
        spec: DownsampleSpec,
        if_not_exists: bool,
    },
    Drop {
        name: TableRef,
        if_exists: bool,
    },
}

/// The rest of `CREATE DOWNSAMPLE …` after `CREATE`.
pub(super) fn parse_create(
    database: &str,
    cursor: &mut Cursor,
) -> Result<DownsampleStatement, QueryError> {
    cursor.expect_keyword("DOWNSAMPLE")?;
    let if_not_exists = cursor.eat_if_not_exists()?;
    let name = cursor.table_name(database)?;
    cursor.expect_keyword("FROM")?;
    let source = cursor.table_name(database)?;
    if source.database != name.database {
        return Err(plan(
            "a downsample and its source must be in the same database",
            source.position,
        ));
    }
    cursor.expect_keyword("INTERVAL")?;
    let (text, at) = duration_text(cursor, "an interval such as 1h or '5 minutes'")?;
    // A retention's grammar is a duration's, plus words an interval cannot be.
    let interval = match Retention::parse(&text) {
        Ok(Retention::Keep(d)) => d,
        _ => {
            return Err(syntax(
                format!("interval {text:?}: expected a positive duration such as 1h or 5m"),
                at,
            ));
        }
    };
    let mut aggregates = Vec::new();
    if cursor.eat_keyword("AGGREGATES") {
        cursor.expect(&Token::LParen, "(")?;
        loop {
            let (word, at) =
                cursor.identifier("an aggregate: avg, min, max, sum, count, first or last")?;
            let aggregate = Aggregate::parse(&word).ok_or_else(|| {
                syntax(
                    format!(
                        "unknown aggregate {word:?}: expected avg, min, max, sum, count, first or last"
                    ),
                    at,
                )
            })?;
            aggregates.push(aggregate);
            if !cursor.eat(&Token::Comma) {
                break;
            }
        }
        cursor.expect(&Token::RParen, ")")?;
    } else {
        aggregates.extend(DEFAULT_AGGREGATES);
    }
    let retention = if cursor.eat_keyword("RETENTION") {
        retention(cursor)?
    } else {
        Retention::ServerDefault
    };
    cursor.expect_end()?;
    Ok(DownsampleStatement::Create {
        name,
        source,
        spec: DownsampleSpec {
            interval,
            aggregates,
            retention,
        },
        if_not_exists,
    })
}

/// The rest of `DROP DOWNSAMPLE …` after `DROP`.
pub(super) fn parse_drop(
    database: &str,
    cursor: &mut Cursor,
) -> Result<DownsampleStatement, QueryError> {
    cursor.expect_keyword("DOWNSAMPLE")?;
    let if_exists = cursor.eat_if_exists()?;
    let name = cursor.table_name(database)?;
    cursor.expect_end()?;
    Ok(DownsampleStatement::Drop { name, if_exists })
}

/// Runs a downsample statement (durably: the catalog is written before it returns).
pub(super) async fn execute(
    engine: &Arc<Engine>,
    statement: DownsampleStatement,
) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    blocking(move || {
        match statement {
            DownsampleStatement::Create {
                name,
                source,
                spec,
                if_not_exists,
            } => {
                engine
                    .create_downsample(
                        &name.database,
                        &name.table,
                        &source.table,
                        &spec,
                        if_not_exists,
                    )
                    .map_err(|e| plan(e.to_string(), name.position))?;
            }
            DownsampleStatement::Drop { name, if_exists } => {
                let dropped = engine
                    .drop_downsample(&name.database, &name.table)
                    .map_err(QueryError::Storage)?;
                if !dropped && !if_exists {
                    return Err(plan(
                        format!(
                            "downsample \"{}\" not found in database \"{}\"",
                            name.table, name.database
                        ),
                        name.position,
                    ));
                }
            }
        }
        Ok(Output::empty())
    })
    .await
}

/// `SHOW DOWNSAMPLES`: the downsamples of the database, with their settings and how far
/// behind the flushed rows each is.
pub(super) fn show(
    engine: &Engine,
    database: &str,
    cursor: &mut Cursor,
) -> Result<Output, QueryError> {
    cursor.expect_end()?;
    let default = engine.retention(database);
    let rows = engine
        .downsamples(database)
        .into_iter()
        .map(|d| {
            let kept = match d.retention {
                Retention::ServerDefault => default,
                own => own.effective(engine.default_retention()),
            };
            vec![
                d.name,
                d.source,
                duration(d.interval),
                d.aggregates
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                Retention::text(kept),
                d.lag.map_or_else(|| "pending".to_string(), duration),
            ]
        })
        .collect();
    Output::strings(
        &[
            "name",
            "source",
            "interval",
            "aggregates",
            "retention",
            "lag",
        ],
        rows,
    )
}

fn duration(d: Duration) -> String {
    // Whole seconds: the lag's nanoseconds are noise, and intervals are rarely finer.
    let d = if d >= Duration::from_secs(1) {
        Duration::from_secs(d.as_secs())
    } else {
        d
    };
    Retention::text(Some(d))
}
