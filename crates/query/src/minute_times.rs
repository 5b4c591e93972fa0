//! Times written to the minute, `'2026-01-01 10:30'`: Postgres reads them (seconds 0),
//! Arrow's string-to-timestamp cast, which DataFusion uses, refuses them ("error parsing
//! time"). People type such times by hand (`WHERE time > '2026-01-01 10:30'`), so every
//! place Strata reads a time from text first gives such a time its `:00`
//! ([`with_seconds`]): the casts of string literals to timestamps in a plan (an analyzer
//! rule after type coercion, which is where a compared string becomes a cast), the direct
//! path's time bounds, `INSERT`'s and `COPY`'s values, and `DELETE`'s bounds.

use std::borrow::Cow;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{Cast, Expr, LogicalPlan, TryCast};
use datafusion::optimizer::AnalyzerRule;

/// `text` with `:00` after its minutes when it is a date and a time of day written to the
/// minute (`2026-01-01 10:30`, `2026-01-01T10:30Z`, `2026-01-01 10:30+02`); borrowed
/// otherwise.
pub(crate) fn with_seconds(text: &str) -> Cow<'_, str> {
    let start = text.len() - text.trim_start().len();
    let b = &text.as_bytes()[start..];
    let digits = |range: std::ops::Range<usize>| {
        b.get(range)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let minute_only = digits(0..4)
        && b.get(4) == Some(&b'-')
        && digits(5..7)
        && b.get(7) == Some(&b'-')
        && digits(8..10)
        && matches!(b.get(10), Some(b' ' | b'T' | b't'))
        && digits(11..13)
        && b.get(13) == Some(&b':')
        && digits(14..16)
        && !matches!(b.get(16), Some(b':' | b'.') | Some(b'0'..=b'9'));
    if !minute_only {
        return Cow::Borrowed(text);
    }
    let at = start + 16;
    Cow::Owned(format!("{}:00{}", &text[..at], &text[at..]))
}

/// Gives the string literals a plan casts to timestamps their seconds ([`with_seconds`]).
#[derive(Debug, Default)]
pub(crate) struct MinuteTimes;

impl AnalyzerRule for MinuteTimes {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // Looking costs no copies; rebuilding the plan, even unchanged, cost 0.5% of a
        // point query's instructions.
        let mut any = false;
        plan.apply_with_subqueries(|node| {
            node.apply_expressions(|expr| {
                expr.apply(|e| {
                    any |= minute_cast(e).is_some();
                    Ok(if any {
                        TreeNodeRecursion::Stop
                    } else {
                        TreeNodeRecursion::Continue
                    })
                })
            })
        })?;
        if !any {
            return Ok(plan);
        }
        plan.transform_up_with_subqueries(|node| {
            node.map_expressions(|expr| expr.transform_up(|e| Ok(with_seconds_in_cast(e))))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "minute_times"
    }
}

/// `expr` with its string literal given seconds, when it is a cast of a time written to
/// the minute to a timestamp.
fn minute_cast(expr: &Expr) -> Option<Expr> {
    let (Expr::Cast(Cast { expr: inner, field }) | Expr::TryCast(TryCast { expr: inner, field })) =
        expr
    else {
        return None;
    };
    if !matches!(field.data_type(), DataType::Timestamp(..)) {
        return None;
    }
    let Expr::Literal(value, metadata) = inner.as_ref() else {
        return None;
    };
    let (ScalarValue::Utf8(Some(text))
    | ScalarValue::Utf8View(Some(text))
    | ScalarValue::LargeUtf8(Some(text))) = value
    else {
        return None;
    };
    let Cow::Owned(fixed) = with_seconds(text) else {
        return None;
    };
    let literal = Box::new(Expr::Literal(
        ScalarValue::Utf8(Some(fixed)),
        metadata.clone(),
    ));
    let field = field.clone();
    Some(match expr {
        Expr::Cast(_) => Expr::Cast(Cast {
            expr: literal,
            field,
        }),
        _ => Expr::TryCast(TryCast {
            expr: literal,
            field,
        }),
    })
}

/// `expr` with its string literal given seconds, if it is a cast of one to a timestamp.
fn with_seconds_in_cast(expr: Expr) -> Transformed<Expr> {
    match minute_cast(&expr) {
        Some(fixed) => Transformed::yes(fixed),
        None => Transformed::no(expr),
    }
}

#[cfg(test)]
mod tests {
    use super::with_seconds;

    #[test]
    fn times_to_the_minute_get_seconds() {
        for (text, want) in [
            ("2026-01-01 10:30", "2026-01-01 10:30:00"),
            ("2026-01-01T10:30", "2026-01-01T10:30:00"),
            (" 2026-01-01 10:30Z", " 2026-01-01 10:30:00Z"),
            ("2026-01-01 10:30+02", "2026-01-01 10:30:00+02"),
            ("2026-01-01 10:30 UTC", "2026-01-01 10:30:00 UTC"),
        ] {
            assert_eq!(with_seconds(text), want);
        }
        for kept in [
            "2026-01-01 10:30:05",
            "2026-01-01",
            "2026-01-01 10:30.5",
            "2026-01-01 10:305",
            "x2026-01-01 10:30",
            "2026-01-01 10",
            "",
            "é",
        ] {
            assert_eq!(with_seconds(kept), kept);
        }
    }
}
