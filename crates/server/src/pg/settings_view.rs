//! `pg_settings`, Postgres's view of the connection's settings: one row per setting `SHOW
//! ALL` lists, with its current value. pgjdbc reads `max_index_keys` from it before it
//! lists a table's foreign keys, and Tableau on connecting (it gives up on the connection
//! when the row is missing). The engine plans statements without a connection, so the view
//! is written into the statement, before planning, as a derived table of `VALUES` holding
//! the connection's settings: `FROM pg_catalog.pg_settings s` becomes `FROM (SELECT … FROM
//! (VALUES …)) AS s`, with Postgres's columns and their types.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Ident, ObjectNamePart, Query, TableAlias, TableFactor, VisitMut, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::from_functions::rewritten;
use super::params::quoted;
use super::session::Session;
use super::sql_text::contains_ignore_ascii_case;

const VIEW: &str = "pg_settings";

/// The view's columns, as Postgres 15 names and types them, except `enumvals` (an array of
/// text there, NULL in every row here).
const COLUMNS: &[(&str, &str)] = &[
    ("name", "TEXT"),
    ("setting", "TEXT"),
    ("unit", "TEXT"),
    ("category", "TEXT"),
    ("short_desc", "TEXT"),
    ("extra_desc", "TEXT"),
    ("context", "TEXT"),
    ("vartype", "TEXT"),
    ("source", "TEXT"),
    ("min_val", "TEXT"),
    ("max_val", "TEXT"),
    ("enumvals", "TEXT"),
    ("boot_val", "TEXT"),
    ("reset_val", "TEXT"),
    ("sourcefile", "TEXT"),
    ("sourceline", "INT"),
    ("pending_restart", "BOOLEAN"),
];

/// Settings whose names Postgres writes in mixed case; `SET` and `SHOW` take any case.
const MIXED_CASE: &[&str] = &["DateStyle", "IntervalStyle", "TimeZone"];

/// `sql` with each `pg_settings` it reads (or `pg_catalog.pg_settings`) replaced by the
/// connection's settings; `None` when it reads none.
pub(crate) fn rewrite(sql: &str, session: &Session) -> Option<String> {
    if !contains_ignore_ascii_case(sql, VIEW) {
        return None;
    }
    rewritten(sql, |statements| {
        let mut view = None;
        let mut visitor = Replace {
            view: &mut view,
            session,
            changed: false,
            shadowed: false,
        };
        let _ = statements.visit(&mut visitor);
        visitor.changed
    })
}

struct Replace<'a> {
    /// The view's query, built at its first use.
    view: &'a mut Option<Option<Box<Query>>>,
    session: &'a Session,
    changed: bool,
    /// Whether the statement names a CTE `pg_settings`, which an unqualified name then
    /// means (taken for the whole statement, not only the CTE's scope).
    shadowed: bool,
}

impl VisitorMut for Replace<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            self.shadowed |= with
                .cte_tables
                .iter()
                .any(|cte| cte.alias.name.value.eq_ignore_ascii_case(VIEW));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name, alias, args, ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|part| match part {
                ObjectNamePart::Identifier(ident) => ident.value.to_ascii_lowercase(),
                other => other.to_string(),
            })
            .collect();
        let is_view = args.is_none()
            && match parts.as_slice() {
                [table] => table == VIEW && !self.shadowed,
                [schema, table] => schema == "pg_catalog" && table == VIEW,
                _ => false,
            };
        if !is_view {
            return ControlFlow::Continue(());
        }
        let Some(subquery) = self.view.get_or_insert_with(|| view(self.session)).clone() else {
            return ControlFlow::Continue(());
        };
        let alias = alias.take().unwrap_or(TableAlias {
            explicit: true,
            name: Ident::new(VIEW),
            columns: Vec::new(),
            at: None,
        });
        *factor = TableFactor::Derived {
            lateral: false,
            subquery,
            alias: Some(alias),
            sample: None,
        };
        self.changed = true;
        ControlFlow::Continue(())
    }
}

/// The view's query over `session`'s settings; `None` if it did not parse (it is built
/// here from quoted values, so it does).
fn view(session: &Session) -> Option<Box<Query>> {
    let rows: Vec<String> = session
        .all()
        .into_iter()
        .map(|(name, value)| row(&name, &value))
        .collect();
    let columns: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .map(|(i, (name, sql_type))| format!("CAST(column{} AS {sql_type}) AS {name}", i + 1))
        .collect();
    let sql = format!(
        "SELECT {} FROM (VALUES {})",
        columns.join(", "),
        rows.join(", ")
    );
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&sql)
        .and_then(|mut parser| parser.parse_query())
        .ok()
}

/// One setting's row of the view: `VALUES` items in [`COLUMNS`]' order.
fn row(name: &str, value: &str) -> String {
    let name = MIXED_CASE
        .iter()
        .find(|mixed| mixed.eq_ignore_ascii_case(name))
        .map_or(name, |mixed| mixed);
    let default = Session::default_value(name);
    let fixed = Session::is_fixed(name);
    let vartype = if value.parse::<i64>().is_ok() {
        "integer"
    } else if matches!(value, "on" | "off") {
        "bool"
    } else {
        "string"
    };
    let (category, context) = if fixed {
        ("Preset Options", "internal")
    } else {
        ("Client Connection Defaults", "user")
    };
    let source = match default {
        Some(default) if default == value => "default",
        Some(_) => "session",
        None if fixed => "default",
        None => "session",
    };
    // What `RESET` goes back to: the default, or for a fixed setting its value.
    let reset = default
        .or(fixed.then_some(value))
        .map_or_else(|| "NULL".to_owned(), quoted);
    format!(
        "({}, {}, NULL, {}, '', NULL, {}, {}, {}, NULL, NULL, NULL, {}, {}, NULL, NULL, false)",
        quoted(name),
        quoted(value),
        quoted(category),
        quoted(context),
        quoted(vartype),
        quoted(source),
        reset,
        reset,
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::rewrite;
    use crate::auth::Access;
    use crate::pg::session::Session;

    #[test]
    fn the_view_holds_the_connections_settings_under_the_statements_alias() {
        let session = Session::new("db".into(), Access::Full, Arc::default());
        session.set("TimeZone", "Europe/Paris".into());
        let out = rewrite(
            "SELECT s.setting FROM pg_catalog.pg_settings AS s WHERE s.name = 'TimeZone'",
            &session,
        )
        .expect("rewritten");
        assert!(
            out.starts_with("SELECT s.setting FROM (SELECT CAST(column1 AS TEXT) AS name, "),
            "{out}"
        );
        assert!(out.contains("('TimeZone', 'Europe/Paris', NULL, 'Client Connection Defaults', '', NULL, 'user', 'string', 'session', NULL, NULL, NULL, 'UTC', 'UTC', NULL, NULL, false)"), "{out}");
        assert!(out.contains("('max_index_keys', '32', NULL, 'Preset Options', '', NULL, 'internal', 'integer', 'default'"), "{out}");
        assert!(out.ends_with(") AS s WHERE s.name = 'TimeZone'"), "{out}");
        // Unqualified, it is named as the view; in a join, each use is replaced.
        let out = rewrite(
            "SELECT a.name FROM pg_settings JOIN PG_CATALOG.PG_SETTINGS a ON true",
            &session,
        )
        .expect("rewritten");
        assert_eq!(out.matches("(VALUES ").count(), 2, "{out}");
        assert!(out.contains(") AS pg_settings JOIN (SELECT "), "{out}");
        // A table of another schema, a CTE of the name, a function, a string or a column:
        // left alone.
        for kept in [
            "SELECT * FROM db.pg_settings",
            "WITH pg_settings AS (SELECT 1 AS name) SELECT name FROM pg_settings",
            "SELECT 'pg_settings'",
            "SELECT pg_settings FROM t",
            "SELECT * FROM pg_settings(1)",
        ] {
            assert_eq!(rewrite(kept, &session), None, "{kept}");
        }
    }
}
