//! SQL's standard form of `LIMIT`: `[OFFSET n ROWS] FETCH { FIRST | NEXT } [n] { ROW |
//! ROWS } ONLY`, which Postgres takes and tools write (Hibernate's Postgres dialect, JDBC
//! tools, SQL written for other databases). DataFusion parses it and refuses to plan it;
//! a statement it refused for that is planned again with each such `FETCH` as the `LIMIT`
//! it means (`FETCH FIRST ROW ONLY`: `LIMIT 1`). `WITH TIES` and `PERCENT` stay refused,
//! and so does a `FETCH` beside a `LIMIT`, as in Postgres.

use std::ops::ControlFlow;

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::ast::{
    Expr, LimitClause, Query, Statement, Value, VisitMut, VisitorMut,
};

/// Whether `error` is DataFusion's refusal of a `FETCH` clause.
pub(crate) fn is_fetch_refusal(error: &DataFusionError) -> bool {
    match error {
        DataFusionError::NotImplemented(message) => message.starts_with("FETCH clause"),
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            is_fetch_refusal(inner)
        }
        DataFusionError::Collection(errors) => errors.iter().any(is_fetch_refusal),
        _ => false,
    }
}

/// Turns every plain `FETCH` of `statement`, in subqueries too, into its `LIMIT`; returns
/// whether any was.
pub(crate) fn fetch_as_limit(statement: &mut Statement) -> bool {
    let mut visitor = FetchAsLimit { changed: false };
    let _ = statement.visit(&mut visitor);
    visitor.changed
}

struct FetchAsLimit {
    changed: bool,
}

impl VisitorMut for FetchAsLimit {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        let Some(fetch) = &query.fetch else {
            return ControlFlow::Continue(());
        };
        if fetch.with_ties || fetch.percent {
            return ControlFlow::Continue(());
        }
        let count = fetch
            .quantity
            .clone()
            .unwrap_or_else(|| Expr::value(Value::Number("1".into(), false)));
        match &mut query.limit_clause {
            None => {
                query.limit_clause = Some(LimitClause::LimitOffset {
                    limit: Some(count),
                    offset: None,
                    limit_by: Vec::new(),
                });
            }
            Some(LimitClause::LimitOffset {
                limit: limit @ None,
                limit_by,
                ..
            }) if limit_by.is_empty() => *limit = Some(count),
            // A `LIMIT` too: Postgres refuses both, and so does DataFusion.
            Some(_) => return ControlFlow::Continue(()),
        }
        query.fetch = None;
        self.changed = true;
        ControlFlow::Continue(())
    }
}
