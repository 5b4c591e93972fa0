//! `WHERE`: the time range is taken out of the top-level `AND`s, the rest becomes a SQL
//! condition the engine pushes down, with InfluxDB's meaning for tags: a series without
//! the tag has the value `''`, so `host != 'a'` keeps it and `host = ''` selects it, and a
//! tag regex is resolved against the tag's stored values into an `IN` list, which the
//! storage index answers.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr as Sql};
use strata_influxql::{BinaryOp, Expr, VarType};
use strata_storage::Engine;
use strata_storage::catalog::TableSchema;

use super::regex::Regex;
use super::tree;

/// Nanoseconds since the epoch; `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TimeRange {
    /// First instant included.
    pub start: Option<i64>,
    /// First instant excluded.
    pub end: Option<i64>,
}

impl TimeRange {
    fn lower(&mut self, at: i64) {
        self.start = Some(self.start.map_or(at, |s| s.max(at)));
    }

    fn upper(&mut self, at: i64) {
        self.end = Some(self.end.map_or(at, |e| e.min(at)));
    }
}

/// Splits `condition` into its time range and the rest.
pub(crate) fn split_time(
    condition: Option<&Expr>,
    now_ns: i64,
) -> Result<(TimeRange, Option<Expr>), String> {
    let mut range = TimeRange::default();
    let rest = match condition {
        Some(expr) => take_time(expr, now_ns, &mut range)?,
        None => None,
    };
    Ok((range, rest))
}

fn take_time(expr: &Expr, now_ns: i64, range: &mut TimeRange) -> Result<Option<Expr>, String> {
    match expr {
        Expr::Paren(inner) => take_time(inner, now_ns, range),
        Expr::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => {
            let l = take_time(lhs, now_ns, range)?;
            let r = take_time(rhs, now_ns, range)?;
            Ok(match (l, r) {
                (Some(l), Some(r)) => Some(Expr::Binary {
                    op: BinaryOp::And,
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                }),
                (l, r) => l.or(r),
            })
        }
        Expr::Binary { op, lhs, rhs } if is_time(lhs) || is_time(rhs) => {
            let (op, value) = if is_time(lhs) {
                (*op, rhs)
            } else {
                (flip(*op), lhs)
            };
            let at = time_value(value, now_ns)?;
            match op {
                BinaryOp::Gt => range.lower(at.saturating_add(1)),
                BinaryOp::GtEq => range.lower(at),
                BinaryOp::Lt => range.upper(at),
                BinaryOp::LtEq => range.upper(at.saturating_add(1)),
                BinaryOp::Eq => {
                    range.lower(at);
                    range.upper(at.saturating_add(1));
                }
                _ => return Err("invalid time comparison operator".into()),
            }
            Ok(None)
        }
        other => {
            if mentions_time(other) {
                return Err("invalid time condition: time may only be compared in AND".into());
            }
            Ok(Some(other.clone()))
        }
    }
}

fn is_time(expr: &Expr) -> bool {
    matches!(expr, Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time"))
}

fn mentions_time(expr: &Expr) -> bool {
    match expr {
        Expr::Binary { lhs, rhs, .. } => mentions_time(lhs) || mentions_time(rhs),
        Expr::Paren(inner) => mentions_time(inner),
        other => is_time(other),
    }
}

fn flip(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Gt,
        BinaryOp::LtEq => BinaryOp::GtEq,
        BinaryOp::Gt => BinaryOp::Lt,
        BinaryOp::GtEq => BinaryOp::LtEq,
        other => other,
    }
}

/// A time literal: an RFC 3339 string, an integer (nanoseconds), a duration literal since
/// the epoch (`1700000000000ms`), `now()`, and sums and differences of those with durations.
pub(crate) fn time_value(expr: &Expr, now_ns: i64) -> Result<i64, String> {
    match expr {
        Expr::Paren(inner) => time_value(inner, now_ns),
        Expr::String(text) => parse_time(text).ok_or_else(|| format!("invalid time: '{text}'")),
        Expr::Integer(v) | Expr::Duration(v) => Ok(*v),
        Expr::Float(v) => Ok(*v as i64),
        Expr::Call { name, args } if name == "now" && args.is_empty() => Ok(now_ns),
        Expr::Binary {
            op: op @ (BinaryOp::Add | BinaryOp::Sub),
            lhs,
            rhs,
        } => {
            let (l, r) = (time_value(lhs, now_ns)?, time_value(rhs, now_ns)?);
            let sum = if *op == BinaryOp::Add {
                l.checked_add(r)
            } else {
                l.checked_sub(r)
            };
            sum.ok_or_else(|| "time overflows".to_owned())
        }
        _ => Err("invalid time condition".into()),
    }
}

/// `2016-01-01T00:00:00Z`, with a fraction or an offset; `2016-01-01 00:00:00` and
/// `2016-01-01` (UTC) too, as InfluxDB accepts.
pub(crate) fn parse_time(text: &str) -> Option<i64> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .ok()?;
    parsed.timestamp_nanos_opt()
}

/// The SQL form of a (time-free) condition over `schema`'s columns, as sqlparser's tree.
pub(crate) fn to_sql(expr: &Expr, schema: &TableSchema, engine: &Engine) -> Result<Sql, String> {
    match expr {
        Expr::Paren(inner) => Ok(tree::nested(to_sql(inner, schema, engine)?)),
        Expr::Binary {
            op: op @ (BinaryOp::And | BinaryOp::Or),
            ..
        } => {
            // A chain `a OR b OR c …` is one parenthesised list (grouped from the left, as
            // SQL parses it), not parentheses nested per operator: printed for a statement
            // still sent as text, the SQL parser bounds nesting at 50 levels, and InfluxDB
            // answers hundreds of ORed hosts. (A chain has two terms or more.)
            let terms = chain_terms(expr, *op)
                .into_iter()
                .map(|term| to_sql(term, schema, engine))
                .collect::<Result<Vec<_>, _>>()?;
            let chained = tree::chain(terms, op_sql(*op)).unwrap_or_else(|| tree::boolean(true));
            Ok(tree::nested(chained))
        }
        Expr::Binary { op, lhs, rhs } if is_comparison(*op) => {
            if let Some((tag, value)) = tag_operand(lhs, rhs, schema) {
                return tag_condition(*op, tag, value, schema, engine, is_var(rhs));
            }
            if matches!(op, BinaryOp::RegexMatch | BinaryOp::RegexNotMatch) {
                return field_regex(*op, lhs, rhs);
            }
            Ok(tree::nested(tree::binary(
                operand_sql(lhs, schema)?,
                op_sql(*op),
                operand_sql(rhs, schema)?,
            )))
        }
        Expr::Boolean(b) => Ok(tree::boolean(*b)),
        _ => Err("invalid condition: expected a comparison".into()),
    }
}

/// The operands of the chain of `op` at `expr`, left to right: `a OR b OR c` (however the
/// parser nested it) gives `[a, b, c]`. Without recursion: a chain may be 1,000 long.
fn chain_terms(expr: &Expr, op: BinaryOp) -> Vec<&Expr> {
    let mut terms = Vec::new();
    let mut pending = vec![expr];
    while let Some(next) = pending.pop() {
        match next {
            Expr::Binary { op: o, lhs, rhs } if *o == op => {
                pending.push(rhs);
                pending.push(lhs);
            }
            term => terms.push(term),
        }
    }
    terms
}

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq
            | BinaryOp::NotEq
            | BinaryOp::Lt
            | BinaryOp::LtEq
            | BinaryOp::Gt
            | BinaryOp::GtEq
            | BinaryOp::RegexMatch
            | BinaryOp::RegexNotMatch
    )
}

fn is_var(expr: &Expr) -> bool {
    matches!(expr, Expr::VarRef { .. })
}

/// A tag (or a name that is neither tag nor field: a tag no series has) compared with a
/// literal, either way round.
fn tag_operand<'e>(
    lhs: &'e Expr,
    rhs: &'e Expr,
    schema: &TableSchema,
) -> Option<(&'e str, &'e Expr)> {
    let as_tag = |e: &'e Expr| match e {
        Expr::VarRef { name, cast } => {
            let is_field = schema.field(name).is_some() && *cast != Some(VarType::Tag);
            (!is_field && !name.eq_ignore_ascii_case("time")).then_some(name.as_str())
        }
        _ => None,
    };
    let literal = |e: &Expr| matches!(e, Expr::String(_) | Expr::Regex(_));
    match (as_tag(lhs), as_tag(rhs)) {
        (Some(tag), None) if literal(rhs) => Some((tag, rhs)),
        (None, Some(tag)) if literal(lhs) => Some((tag, lhs)),
        _ => None,
    }
}

fn tag_condition(
    op: BinaryOp,
    tag: &str,
    value: &Expr,
    schema: &TableSchema,
    engine: &Engine,
    flipped: bool,
) -> Result<Sql, String> {
    let known = schema.tags.iter().any(|t| t == tag);
    let column = || tree::column(tag);
    let values = || {
        if known {
            engine.tag_values(schema.id, tag)
        } else {
            Vec::new()
        }
    };
    let is_null = || Sql::IsNull(Box::new(column()));
    // Which stored values (and whether the missing value '') satisfy the condition.
    let (matching, missing_matches): (Vec<String>, bool) = match (op, value) {
        (BinaryOp::Eq, Expr::String(v)) if v.is_empty() => (Vec::new(), true),
        (BinaryOp::Eq, Expr::String(v)) => {
            return Ok(if known {
                tree::nested(tree::binary(column(), BinaryOperator::Eq, tree::string(v)))
            } else {
                tree::boolean(false)
            });
        }
        (BinaryOp::NotEq, Expr::String(v)) if v.is_empty() => {
            return Ok(if known {
                tree::nested(Sql::IsNotNull(Box::new(column())))
            } else {
                tree::boolean(false)
            });
        }
        (BinaryOp::NotEq, Expr::String(v)) => {
            return Ok(if known {
                let differs = tree::binary(column(), BinaryOperator::NotEq, tree::string(v));
                tree::nested(tree::binary(is_null(), BinaryOperator::Or, differs))
            } else {
                tree::boolean(true)
            });
        }
        (BinaryOp::RegexMatch | BinaryOp::RegexNotMatch, Expr::Regex(re)) => {
            let re = Regex::new(re)?;
            let want = op == BinaryOp::RegexMatch;
            let matching = values()
                .into_iter()
                .filter(|v| re.is_match(v) == want)
                .collect();
            (matching, re.is_match("") == want)
        }
        (BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq, Expr::String(v)) => {
            let op = if flipped { flip(op) } else { op };
            let keep = |s: &str| match op {
                BinaryOp::Lt => s < v.as_str(),
                BinaryOp::LtEq => s <= v.as_str(),
                BinaryOp::Gt => s > v.as_str(),
                _ => s >= v.as_str(),
            };
            let matching = values().into_iter().filter(|s| keep(s)).collect();
            (matching, keep(""))
        }
        _ => return Err(format!("invalid condition on tag {tag}")),
    };
    if missing_matches && !known {
        return Ok(tree::boolean(true));
    }
    let mut parts: Vec<Sql> = Vec::new();
    if !matching.is_empty() {
        parts.push(Sql::InList {
            expr: Box::new(column()),
            list: matching.iter().map(|v| tree::string(v)).collect(),
            negated: false,
        });
    }
    if missing_matches {
        parts.push(is_null());
    }
    Ok(match tree::chain(parts, BinaryOperator::Or) {
        Some(any) => tree::nested(any),
        None => tree::boolean(false),
    })
}

fn field_regex(op: BinaryOp, lhs: &Expr, rhs: &Expr) -> Result<Sql, String> {
    let (Expr::VarRef { name, .. }, Expr::Regex(re)) = (lhs, rhs) else {
        return Err("invalid regex condition".into());
    };
    Regex::new(re)?;
    Ok(tree::nested(tree::binary(
        tree::column(name),
        op_sql(op),
        tree::string(re),
    )))
}

fn operand_sql(expr: &Expr, schema: &TableSchema) -> Result<Sql, String> {
    Ok(match expr {
        Expr::VarRef { name, .. } => {
            if schema.field(name).is_some() || schema.tags.iter().any(|t| t == name) {
                tree::column(name)
            } else {
                // A field no row has: every comparison with it is false, as with NULL.
                tree::null()
            }
        }
        Expr::Paren(inner) => tree::nested(operand_sql(inner, schema)?),
        Expr::Integer(v) => tree::number(&v.to_string()),
        Expr::Float(v) => tree::number(&format!("{v:?}")),
        Expr::String(s) => tree::string(s),
        Expr::Boolean(b) => tree::boolean(*b),
        Expr::Binary { op, .. } if !is_comparison(*op) => {
            // `a + b + c`: one parenthesised chain (left-associative in SQL as in
            // InfluxQL), not parentheses per operator, which the SQL parser bounds at 50.
            let mut right = Vec::new();
            let mut first = expr;
            while let Expr::Binary { op: o, lhs, rhs } = first
                && o == op
            {
                right.push(rhs);
                first = lhs;
            }
            let mut terms = vec![operand_sql(first, schema)?];
            for rhs in right.iter().rev() {
                terms.push(operand_sql(rhs, schema)?);
            }
            let chained = tree::chain(terms, op_sql(*op)).unwrap_or_else(tree::null);
            tree::nested(chained)
        }
        _ => return Err("invalid condition operand".into()),
    })
}

fn op_sql(op: BinaryOp) -> BinaryOperator {
    match op {
        BinaryOp::Add => BinaryOperator::Plus,
        BinaryOp::Sub => BinaryOperator::Minus,
        BinaryOp::Mul => BinaryOperator::Multiply,
        BinaryOp::Div => BinaryOperator::Divide,
        BinaryOp::Mod => BinaryOperator::Modulo,
        BinaryOp::BitAnd => BinaryOperator::BitwiseAnd,
        BinaryOp::BitOr => BinaryOperator::BitwiseOr,
        BinaryOp::BitXor => BinaryOperator::PGBitwiseXor,
        BinaryOp::Eq => BinaryOperator::Eq,
        BinaryOp::NotEq => BinaryOperator::NotEq,
        BinaryOp::Lt => BinaryOperator::Lt,
        BinaryOp::LtEq => BinaryOperator::LtEq,
        BinaryOp::Gt => BinaryOperator::Gt,
        BinaryOp::GtEq => BinaryOperator::GtEq,
        BinaryOp::RegexMatch => BinaryOperator::PGRegexMatch,
        BinaryOp::RegexNotMatch => BinaryOperator::PGRegexNotMatch,
        BinaryOp::And => BinaryOperator::And,
        BinaryOp::Or => BinaryOperator::Or,
    }
}
