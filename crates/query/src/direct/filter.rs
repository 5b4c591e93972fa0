//! A WHERE clause the direct path answers: an AND of time comparisons (`=`, `<`, `<=`, `>`,
//! `>=`, `BETWEEN` with timestamp literals) and tag conditions (`tag = 'v'`, `tag IN (…)`,
//! and OR of those), all of which the engine applies exactly. Anything else leaves the
//! statement to DataFusion.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr};
use strata_storage::model::Timestamp;
use strata_storage::series::TagPredicate;

use super::parse::{From, column, string, timestamp};
use strata_storage::catalog::TIME_COLUMN;

/// What a WHERE clause keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Filter {
    /// Inclusive start.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// Series filter; every series when `None`.
    pub predicate: Option<TagPredicate>,
}

/// The filter of `selection` (`None` clause: everything), or `None` when some part of it
/// is not an exact time range or tag condition.
pub(super) fn filter(selection: Option<&Expr>, from: &From) -> Option<Filter> {
    let mut filter = Filter {
        start: Timestamp::MIN,
        end: Timestamp::MAX,
        predicate: None,
    };
    let mut predicates = Vec::new();
    if let Some(expr) = selection {
        conjuncts(expr, from, &mut filter, &mut predicates)?;
    }
    filter.predicate = match predicates.len() {
        0 => None,
        1 => predicates.pop(),
        _ => Some(TagPredicate::And(predicates)),
    };
    Some(filter)
}

fn conjuncts(
    expr: &Expr,
    from: &From,
    filter: &mut Filter,
    predicates: &mut Vec<TagPredicate>,
) -> Option<()> {
    match expr {
        Expr::Nested(inner) => conjuncts(inner, from, filter, predicates),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, from, filter, predicates)?;
            conjuncts(right, from, filter, predicates)
        }
        Expr::Between {
            expr,
            negated: false,
            low,
            high,
        } if is_time(expr, from) => {
            let (low, high) = (timestamp(low)?, timestamp(high)?);
            filter.start = filter.start.max(low);
            filter.end = filter.end.min(high.saturating_add(1));
            Some(())
        }
        Expr::BinaryOp { left, op, right } if is_time(left, from) || is_time(right, from) => {
            // `literal op time` reads as `time op' literal`.
            let (op, literal) = if is_time(left, from) {
                (op.clone(), right)
            } else {
                (flip(op)?, left)
            };
            let at = timestamp(literal)?;
            match op {
                BinaryOperator::Gt => filter.start = filter.start.max(at.saturating_add(1)),
                BinaryOperator::GtEq => filter.start = filter.start.max(at),
                BinaryOperator::Lt => filter.end = filter.end.min(at),
                BinaryOperator::LtEq => filter.end = filter.end.min(at.saturating_add(1)),
                BinaryOperator::Eq => {
                    filter.start = filter.start.max(at);
                    filter.end = filter.end.min(at.saturating_add(1));
                }
                _ => return None,
            }
            Some(())
        }
        other => {
            predicates.push(tags(other, from)?);
            Some(())
        }
    }
}

/// `time op literal` for `literal op time`.
fn flip(op: &BinaryOperator) -> Option<BinaryOperator> {
    Some(match op {
        BinaryOperator::Gt => BinaryOperator::Lt,
        BinaryOperator::GtEq => BinaryOperator::LtEq,
        BinaryOperator::Lt => BinaryOperator::Gt,
        BinaryOperator::LtEq => BinaryOperator::GtEq,
        BinaryOperator::Eq => BinaryOperator::Eq,
        _ => return None,
    })
}

fn is_time(expr: &Expr, from: &From) -> bool {
    column(expr, from).is_some_and(|c| c == TIME_COLUMN)
}

/// A tag condition: `tag = 'v'` (either side), `tag IN ('a', …)`, or an OR of those.
fn tags(expr: &Expr, from: &From) -> Option<TagPredicate> {
    let tag = |e: &Expr| column(e, from).filter(|c| from.table.tags.contains(c));
    match expr {
        Expr::Nested(inner) => tags(inner, from),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Or,
            right,
        } => {
            let mut parts = Vec::new();
            for side in [left, right] {
                match tags(side, from)? {
                    TagPredicate::Or(more) => parts.extend(more),
                    one => parts.push(one),
                }
            }
            Some(TagPredicate::Or(parts))
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            let (key, value) = match (tag(left), tag(right)) {
                (Some(key), None) => (key, string(right)?),
                (None, Some(key)) => (key, string(left)?),
                _ => return None,
            };
            Some(TagPredicate::Eq {
                key,
                value: value.to_string(),
            })
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } => {
            let key = tag(expr)?;
            let values = list
                .iter()
                .map(|v| string(v).map(str::to_string))
                .collect::<Option<Vec<_>>>()?;
            Some(TagPredicate::In { key, values })
        }
        _ => None,
    }
}
