//! DataFusion filters → the time range and tag predicate of a Strata [`ReadRequest`].
//!
//! DataFusion hands a table provider the conjuncts of a `WHERE` clause one by one
//! ([`classify`]) and again at scan time ([`apply`]). A conjunct is translated when it is
//! built only of:
//! - comparisons of `time` with a timestamp literal (`=`, `<`, `<=`, `>`, `>=`, `BETWEEN`),
//!   which become `[start, end)`: **exact**, the engine returns exactly the rows in range;
//! - `tag = 'v'`, `tag IN ('a', 'b')`: **exact** ([`TagPredicate::Eq`] / [`TagPredicate::In`]
//!   match exactly the series SQL keeps);
//! - `tag != 'v'`: **inexact**. [`TagPredicate::NotEq`] also keeps series that lack the tag,
//!   which SQL drops (`NULL <> 'v'` is unknown), and no predicate says "has the tag", so the
//!   engine returns a superset and DataFusion re-applies the filter;
//! - `AND` of the above (ranges intersect, predicates conjoin; an untranslatable side is
//!   dropped, making it inexact) and `OR` of tag-only parts; exact when every part is.
//!
//! Anything else (functions of `time`, `NOT`, `IS NULL`, comparisons with fields, `OR`
//! mixing time and tags) is left to DataFusion.
//!
//! [`ReadRequest`]: strata_storage::ReadRequest

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{
    Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown,
    expr::{Cast, InList, TryCast},
};
use strata_storage::catalog::TIME_COLUMN;
use strata_storage::model::Timestamp;
use strata_storage::series::TagPredicate;

/// What a set of filters asks of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanFilter {
    /// Inclusive start.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// Series filter; every series when `None`.
    pub predicate: Option<TagPredicate>,
    /// Whether the engine's answer is exactly the rows the filters keep.
    pub exact: bool,
}

impl ScanFilter {
    /// No restriction.
    pub(crate) fn all() -> Self {
        Self {
            start: Timestamp::MIN,
            end: Timestamp::MAX,
            predicate: None,
            exact: true,
        }
    }

    fn range(start: Timestamp, end: Timestamp) -> Self {
        Self {
            start,
            end,
            ..Self::all()
        }
    }

    fn tags(predicate: TagPredicate, exact: bool) -> Self {
        Self {
            predicate: Some(predicate),
            exact,
            ..Self::all()
        }
    }

    fn is_time_unbounded(&self) -> bool {
        self.start == Timestamp::MIN && self.end == Timestamp::MAX
    }

    /// Rows both filters keep.
    fn and(self, other: ScanFilter) -> ScanFilter {
        let predicate = match (self.predicate, other.predicate) {
            (None, p) | (p, None) => p,
            (Some(TagPredicate::And(mut a)), Some(TagPredicate::And(b))) => {
                a.extend(b);
                Some(TagPredicate::And(a))
            }
            (Some(TagPredicate::And(mut a)), Some(p))
            | (Some(p), Some(TagPredicate::And(mut a))) => {
                a.push(p);
                Some(TagPredicate::And(a))
            }
            (Some(a), Some(b)) => Some(TagPredicate::And(vec![a, b])),
        };
        ScanFilter {
            start: self.start.max(other.start),
            end: self.end.min(other.end),
            predicate,
            exact: self.exact && other.exact,
        }
    }
}

/// How far `filter` can be pushed into a scan of a table with tag columns `tags`.
pub(crate) fn classify(filter: &Expr, tags: &[String]) -> TableProviderFilterPushDown {
    match translate(filter, tags) {
        None => TableProviderFilterPushDown::Unsupported,
        Some(f) if f.exact => TableProviderFilterPushDown::Exact,
        Some(_) => TableProviderFilterPushDown::Inexact,
    }
}

/// The conjunction of every translatable filter (the others are applied by DataFusion,
/// which [`classify`] told so).
pub(crate) fn apply(filters: &[Expr], tags: &[String]) -> ScanFilter {
    filters
        .iter()
        .filter_map(|f| translate(f, tags))
        .fold(ScanFilter::all(), ScanFilter::and)
}

fn translate(expr: &Expr, tags: &[String]) -> Option<ScanFilter> {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => match (translate(left, tags), translate(right, tags)) {
                (Some(a), Some(b)) => Some(a.and(b)),
                // One side alone keeps a superset of the rows.
                (Some(mut a), None) | (None, Some(mut a)) => {
                    a.exact = false;
                    Some(a)
                }
                (None, None) => None,
            },
            Operator::Or => {
                let (a, b) = (translate(left, tags)?, translate(right, tags)?);
                if !a.is_time_unbounded() || !b.is_time_unbounded() {
                    return None;
                }
                let mut parts = Vec::new();
                for p in [a.predicate?, b.predicate?] {
                    match p {
                        TagPredicate::Or(inner) => parts.extend(inner),
                        p => parts.push(p),
                    }
                }
                Some(ScanFilter::tags(
                    TagPredicate::Or(parts),
                    a.exact && b.exact,
                ))
            }
            _ => comparison(left, *op, right, tags),
        },
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time_column(expr) => {
            let (low, high) = (time_literal(low)?, time_literal(high)?);
            let (end, exact) = inclusive_end(high);
            let mut f = ScanFilter::range(low, end);
            f.exact = exact;
            Some(f)
        }
        Expr::InList(InList {
            expr,
            list,
            negated: false,
        }) => {
            let key = tag_column(expr, tags)?;
            let mut values = Vec::with_capacity(list.len());
            for item in list {
                match tag_literal(item)? {
                    // `tag IN ('a', NULL)` keeps exactly the rows `tag IN ('a')` keeps.
                    None => {}
                    Some(v) => values.push(v),
                }
            }
            Some(ScanFilter::tags(TagPredicate::In { key, values }, true))
        }
        _ => None,
    }
}

/// `left op right` where one side is `time` or a tag and the other a literal.
fn comparison(left: &Expr, op: Operator, right: &Expr, tags: &[String]) -> Option<ScanFilter> {
    if is_time_column(left) {
        return time_comparison(op, time_literal(right)?);
    }
    if is_time_column(right) {
        return time_comparison(op.swap()?, time_literal(left)?);
    }
    let (key, value) = match (tag_column(left, tags), tag_column(right, tags)) {
        (Some(key), None) => (key, tag_literal(right)??),
        (None, Some(key)) => (key, tag_literal(left)??),
        _ => return None,
    };
    match op {
        Operator::Eq => Some(ScanFilter::tags(TagPredicate::Eq { key, value }, true)),
        // A superset: NotEq also keeps series without the tag, which SQL drops.
        Operator::NotEq => Some(ScanFilter::tags(TagPredicate::NotEq { key, value }, false)),
        _ => None,
    }
}

/// `time op value`.
fn time_comparison(op: Operator, value: Timestamp) -> Option<ScanFilter> {
    let (start, end, exact) = match op {
        Operator::GtEq => (value, Timestamp::MAX, true),
        Operator::Gt => match value.checked_add(1) {
            Some(start) => (start, Timestamp::MAX, true),
            // Nothing is after the last instant.
            None => (Timestamp::MAX, Timestamp::MAX, true),
        },
        Operator::Lt => (Timestamp::MIN, value, true),
        Operator::LtEq => {
            let (end, exact) = inclusive_end(value);
            (Timestamp::MIN, end, exact)
        }
        Operator::Eq => {
            let (end, exact) = inclusive_end(value);
            (value, end, exact)
        }
        _ => return None,
    };
    let mut f = ScanFilter::range(start, end);
    f.exact = exact;
    Some(f)
}

/// The exclusive end for an inclusive bound. `Timestamp::MAX` itself cannot be an
/// inclusive bound of the engine's `[start, end)`; the range then misses that one instant,
/// so it is not exact (DataFusion keeps the filter; such rows are never stored anyway).
fn inclusive_end(value: Timestamp) -> (Timestamp, bool) {
    match value.checked_add(1) {
        Some(end) => (end, true),
        None => (Timestamp::MAX, false),
    }
}

fn is_time_column(expr: &Expr) -> bool {
    match expr {
        Expr::Column(c) => c.name == TIME_COLUMN,
        // Comparing with a UTC timestamp (`now()`) casts `time` to a UTC-zoned type: the
        // same instants.
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            matches!(field.data_type(), DataType::Timestamp(TimeUnit::Nanosecond, tz) if is_utc(tz.as_deref()))
                && is_time_column(expr)
        }
        _ => false,
    }
}

fn is_utc(tz: Option<&str>) -> bool {
    matches!(
        tz,
        None | Some("UTC" | "utc" | "Z" | "+00:00" | "+0000" | "+00")
    )
}

/// A timestamp literal (any unit, any zone: the value is an instant) in nanoseconds.
fn time_literal(expr: &Expr) -> Option<Timestamp> {
    match expr {
        Expr::Literal(value, _) => scalar_ns(value),
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            let Expr::Literal(value, _) = expr.as_ref() else {
                return None;
            };
            scalar_ns(&value.cast_to(field.data_type()).ok()?)
        }
        _ => None,
    }
}

fn scalar_ns(value: &ScalarValue) -> Option<Timestamp> {
    match value {
        ScalarValue::TimestampNanosecond(Some(v), _) => Some(*v),
        ScalarValue::TimestampMicrosecond(Some(v), _) => v.checked_mul(1_000),
        ScalarValue::TimestampMillisecond(Some(v), _) => v.checked_mul(1_000_000),
        ScalarValue::TimestampSecond(Some(v), _) => v.checked_mul(1_000_000_000),
        _ => None,
    }
}

/// The tag key when `expr` is a tag column (possibly cast to a string type).
fn tag_column(expr: &Expr, tags: &[String]) -> Option<String> {
    match expr {
        Expr::Column(c) => tags.iter().find(|t| **t == c.name).cloned(),
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })
            if is_string_type(field.data_type()) =>
        {
            tag_column(expr, tags)
        }
        _ => None,
    }
}

fn is_string_type(t: &DataType) -> bool {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => is_string_type(value),
        _ => false,
    }
}

/// `Some(Some(v))` for a string literal, `Some(None)` for a NULL string literal, `None` when
/// `expr` is no string literal.
fn tag_literal(expr: &Expr) -> Option<Option<String>> {
    let value = match expr {
        Expr::Literal(value, _) => value.clone(),
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field })
            if is_string_type(field.data_type()) =>
        {
            let Expr::Literal(value, _) = expr.as_ref() else {
                return None;
            };
            value.cast_to(field.data_type()).ok()?
        }
        _ => return None,
    };
    string_scalar(&value)
}

fn string_scalar(value: &ScalarValue) -> Option<Option<String>> {
    match value {
        ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => {
            Some(v.clone())
        }
        ScalarValue::Dictionary(_, inner) => string_scalar(inner),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn tags() -> Vec<String> {
        vec!["host".into(), "region".into()]
    }

    fn ts(v: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(Some(v), None))
    }

    fn one(e: Expr) -> Option<ScanFilter> {
        translate(&e, &tags())
    }

    #[test]
    fn time_bounds_become_a_half_open_range() {
        let t = || col("time");
        assert_eq!(
            one(t().gt_eq(ts(10))),
            Some(ScanFilter::range(10, i64::MAX))
        );
        assert_eq!(one(t().gt(ts(10))), Some(ScanFilter::range(11, i64::MAX)));
        assert_eq!(one(t().lt(ts(10))), Some(ScanFilter::range(i64::MIN, 10)));
        assert_eq!(
            one(t().lt_eq(ts(10))),
            Some(ScanFilter::range(i64::MIN, 11))
        );
        assert_eq!(one(t().eq(ts(10))), Some(ScanFilter::range(10, 11)));
        assert_eq!(one(ts(10).lt(t())), Some(ScanFilter::range(11, i64::MAX)));
        assert_eq!(
            one(t().between(ts(5), ts(9))),
            Some(ScanFilter::range(5, 10))
        );
        assert_eq!(one(t().not_between(ts(5), ts(9))), None);
        assert_eq!(one(t().not_eq(ts(5))), None);
        let ms = lit(ScalarValue::TimestampMillisecond(
            Some(3),
            Some("+00:00".into()),
        ));
        assert_eq!(
            one(t().gt_eq(ms)),
            Some(ScanFilter::range(3_000_000, i64::MAX))
        );
        let mut at_max = ScanFilter::range(i64::MIN, i64::MAX);
        at_max.exact = false;
        assert_eq!(one(t().lt_eq(ts(i64::MAX))), Some(at_max));
    }

    #[test]
    fn string_casts_to_timestamps_are_evaluated() {
        let e = col("time").gt_eq(Expr::Cast(Cast::new(
            Box::new(lit("1970-01-01T00:00:01Z")),
            DataType::Timestamp(TimeUnit::Nanosecond, None),
        )));
        assert_eq!(one(e), Some(ScanFilter::range(1_000_000_000, i64::MAX)));
    }

    #[test]
    fn tag_equalities_are_exact_and_not_equal_is_not() {
        let eq = TagPredicate::Eq {
            key: "host".into(),
            value: "a".into(),
        };
        assert_eq!(
            one(col("host").eq(lit("a"))),
            Some(ScanFilter::tags(eq.clone(), true))
        );
        assert_eq!(
            one(lit("a").eq(col("host"))),
            Some(ScanFilter::tags(eq, true))
        );
        let ne = TagPredicate::NotEq {
            key: "host".into(),
            value: "a".into(),
        };
        assert_eq!(
            one(col("host").not_eq(lit("a"))),
            Some(ScanFilter::tags(ne, false))
        );
        assert_eq!(one(col("host").lt(lit("a"))), None);
        assert_eq!(one(col("usage").eq(lit("a"))), None, "not a tag");
        assert_eq!(one(col("host").eq(lit(ScalarValue::Utf8(None)))), None);
        let dict = lit(ScalarValue::Dictionary(
            Box::new(DataType::Int32),
            Box::new(ScalarValue::from("b")),
        ));
        assert_eq!(
            one(col("region").eq(dict)),
            Some(ScanFilter::tags(
                TagPredicate::Eq {
                    key: "region".into(),
                    value: "b".into()
                },
                true
            ))
        );
    }

    #[test]
    fn in_lists_and_ors_of_tags_translate() {
        let e = col("host").in_list(vec![lit("a"), lit("b")], false);
        let want = TagPredicate::In {
            key: "host".into(),
            values: vec!["a".into(), "b".into()],
        };
        assert_eq!(one(e), Some(ScanFilter::tags(want, true)));
        assert_eq!(one(col("host").in_list(vec![lit("a")], true)), None);

        let e = col("host")
            .eq(lit("a"))
            .or(col("region").eq(lit("x")))
            .or(col("host").not_eq(lit("c")));
        let got = one(e).unwrap();
        assert!(!got.exact, "NotEq makes the OR a superset");
        assert!(matches!(got.predicate, Some(TagPredicate::Or(ref p)) if p.len() == 3));

        // OR with a time bound is left to DataFusion.
        assert_eq!(
            one(col("host").eq(lit("a")).or(col("time").gt(ts(1)))),
            None
        );
        // OR with anything untranslatable too.
        assert_eq!(
            one(col("host").eq(lit("a")).or(col("usage").gt(lit(1)))),
            None
        );
        // An AND keeps its translatable side, inexactly.
        let got = one(col("host").eq(lit("a")).and(col("usage").gt(lit(1)))).unwrap();
        assert!(!got.exact);
        assert!(matches!(got.predicate, Some(TagPredicate::Eq { .. })));
    }

    #[test]
    fn conjunctions_intersect_and_conjoin() {
        let filters = vec![
            col("time").gt_eq(ts(10)),
            col("time").lt(ts(20)).and(col("host").eq(lit("a"))),
            col("region").not_eq(lit("x")),
            col("usage").gt(lit(1.0)),
        ];
        let got = apply(&filters, &tags());
        assert_eq!((got.start, got.end), (10, 20));
        assert!(!got.exact);
        assert!(matches!(got.predicate, Some(TagPredicate::And(ref p)) if p.len() == 2));
        assert_eq!(
            classify(&filters[1], &tags()),
            TableProviderFilterPushDown::Exact
        );
        assert_eq!(
            classify(&filters[2], &tags()),
            TableProviderFilterPushDown::Inexact
        );
        assert_eq!(
            classify(&filters[3], &tags()),
            TableProviderFilterPushDown::Unsupported
        );
    }
}
