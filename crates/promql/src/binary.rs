//! Binary operators: arithmetic, comparison (filtering or `bool`) and set operators, with
//! Prometheus' vector matching (`on`, `ignoring`, `group_left`, `group_right`).

use std::collections::HashMap;

use promql_parser::parser::{BinModifier, BinaryExpr, LabelModifier, VectorMatchCardinality};

use crate::Error;
use crate::eval::{Evaluator, StepSeries, Value, collect};
use crate::labels::Labels;

/// Evaluates a binary expression.
pub fn eval(ev: &mut Evaluator<'_>, bin: &BinaryExpr) -> Result<Value, Error> {
    let op = bin.op.to_string();
    let return_bool = bin.modifier.as_ref().is_some_and(|m| m.return_bool);
    let lhs = ev.eval(&bin.lhs)?;
    let rhs = ev.eval(&bin.rhs)?;
    let steps = ev.steps();
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => Ok(Value::Scalar(
            l.iter()
                .zip(&r)
                .map(|(a, b)| {
                    let (v, keep) = apply(&op, *a, *b);
                    if is_comparison(&op) {
                        f64::from(u8::from(keep))
                    } else {
                        v
                    }
                })
                .collect(),
        )),
        (Value::Vector(v), Value::Scalar(s)) => with_scalar(steps, &op, v, &s, false, return_bool),
        (Value::Scalar(s), Value::Vector(v)) => with_scalar(steps, &op, v, &s, true, return_bool),
        (Value::Vector(l), Value::Vector(r)) => {
            let value = match op.as_str() {
                "and" | "or" | "unless" => set_op(steps, &op, l, r, bin.modifier.as_ref()),
                _ => vectors(steps, &op, l, r, bin.modifier.as_ref(), return_bool)?,
            };
            ev.count(
                value
                    .iter()
                    .map(|s| s.values.iter().flatten().count())
                    .sum(),
            )?;
            Ok(Value::Vector(value))
        }
        _ => Err(Error::BadData(format!(
            "binary operator {op} is not defined on strings"
        ))),
    }
}

fn is_comparison(op: &str) -> bool {
    matches!(op, "==" | "!=" | ">" | "<" | ">=" | "<=")
}

fn is_arithmetic(op: &str) -> bool {
    matches!(op, "+" | "-" | "*" | "/" | "%" | "^" | "atan2")
}

/// Prometheus' `vectorElemBinop`: the value, and whether a comparison holds.
fn apply(op: &str, l: f64, r: f64) -> (f64, bool) {
    match op {
        "+" => (l + r, true),
        "-" => (l - r, true),
        "*" => (l * r, true),
        "/" => (l / r, true),
        "%" => (l % r, true),
        "^" => (l.powf(r), true),
        "atan2" => (l.atan2(r), true),
        "==" => (l, l == r),
        "!=" => (l, l != r),
        ">" => (l, l > r),
        "<" => (l, l < r),
        ">=" => (l, l >= r),
        "<=" => (l, l <= r),
        _ => (f64::NAN, false),
    }
}

fn with_scalar(
    steps: usize,
    op: &str,
    vector: Vec<StepSeries>,
    scalar: &[f64],
    scalar_first: bool,
    return_bool: bool,
) -> Result<Value, Error> {
    let mut points = Vec::new();
    for s in vector {
        let drop_name = is_arithmetic(op) || return_bool;
        let labels = if drop_name {
            s.labels.without_name()
        } else {
            s.labels
        };
        for (step, v) in s.values.into_iter().enumerate() {
            let Some(v) = v else { continue };
            let (l, r) = if scalar_first {
                (scalar[step], v)
            } else {
                (v, scalar[step])
            };
            let (mut value, mut keep) = apply(op, l, r);
            if is_comparison(op) && scalar_first {
                value = r;
            }
            if return_bool {
                value = f64::from(u8::from(keep));
                keep = true;
            }
            if keep {
                points.push((labels.clone(), step, value));
            }
        }
    }
    Ok(Value::Vector(collect(steps, points)?))
}

/// The labels two series are matched on.
fn signature(labels: &Labels, matching: Option<&LabelModifier>) -> Labels {
    match matching {
        Some(LabelModifier::Include(on)) => labels.keep(&on.labels),
        Some(LabelModifier::Exclude(ignoring)) => labels.drop(&ignoring.labels),
        None => labels.drop(&[]),
    }
}

fn set_op(
    steps: usize,
    op: &str,
    lhs: Vec<StepSeries>,
    rhs: Vec<StepSeries>,
    modifier: Option<&BinModifier>,
) -> Vec<StepSeries> {
    let matching = modifier.and_then(|m| m.matching.as_ref());
    let lsig: Vec<Labels> = lhs.iter().map(|s| signature(&s.labels, matching)).collect();
    let rsig: Vec<Labels> = rhs.iter().map(|s| signature(&s.labels, matching)).collect();
    let present_at = |series: &[StepSeries], sigs: &[Labels], step: usize| -> Vec<Labels> {
        series
            .iter()
            .zip(sigs)
            .filter(|(s, _)| s.values[step].is_some())
            .map(|(_, sig)| sig.clone())
            .collect()
    };
    let mut out_l: Vec<StepSeries> = lhs
        .iter()
        .map(|s| StepSeries {
            labels: s.labels.clone(),
            values: vec![None; steps],
        })
        .collect();
    let mut out_r: Vec<StepSeries> = rhs
        .iter()
        .map(|s| StepSeries {
            labels: s.labels.clone(),
            values: vec![None; steps],
        })
        .collect();
    for step in 0..steps {
        let right = present_at(&rhs, &rsig, step);
        let left = present_at(&lhs, &lsig, step);
        for (i, s) in lhs.iter().enumerate() {
            let Some(v) = s.values[step] else { continue };
            let matched = right.contains(&lsig[i]);
            let keep = match op {
                "and" => matched,
                "unless" => !matched,
                _ => true,
            };
            if keep {
                out_l[i].values[step] = Some(v);
            }
        }
        if op == "or" {
            for (i, s) in rhs.iter().enumerate() {
                let Some(v) = s.values[step] else { continue };
                if !left.contains(&rsig[i]) {
                    out_r[i].values[step] = Some(v);
                }
            }
        }
    }
    out_l.extend(out_r);
    out_l.retain(|s| s.values.iter().any(Option::is_some));
    out_l
}

fn vectors(
    steps: usize,
    op: &str,
    lhs: Vec<StepSeries>,
    rhs: Vec<StepSeries>,
    modifier: Option<&BinModifier>,
    return_bool: bool,
) -> Result<Vec<StepSeries>, Error> {
    let matching = modifier.and_then(|m| m.matching.as_ref());
    let card = modifier.map_or(&VectorMatchCardinality::OneToOne, |m| &m.card);
    // The "many" side first; group_right swaps the sides (and back for the value).
    let swapped = matches!(card, VectorMatchCardinality::OneToMany(_));
    let (many, one) = if swapped { (&rhs, &lhs) } else { (&lhs, &rhs) };
    let include: &[String] = match card {
        VectorMatchCardinality::ManyToOne(l) | VectorMatchCardinality::OneToMany(l) => &l.labels,
        _ => &[],
    };
    let one_to_one = matches!(card, VectorMatchCardinality::OneToOne);
    let many_sig: Vec<Labels> = many
        .iter()
        .map(|s| signature(&s.labels, matching))
        .collect();
    let one_sig: Vec<Labels> = one.iter().map(|s| signature(&s.labels, matching)).collect();
    let mut points = Vec::new();
    for step in 0..steps {
        let mut ones: HashMap<&Labels, (usize, f64)> = HashMap::new();
        for (i, s) in one.iter().enumerate() {
            if let Some(v) = s.values[step]
                && ones.insert(&one_sig[i], (i, v)).is_some()
            {
                let side = if swapped { "left" } else { "right" };
                return Err(Error::Execution(format!(
                    "found duplicate series for the match group {} on the {side} hand-side of the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                    one_sig[i].render()
                )));
            }
        }
        let mut matched: HashMap<&Labels, ()> = HashMap::new();
        for (i, s) in many.iter().enumerate() {
            let Some(mv) = s.values[step] else { continue };
            let Some(&(j, ov)) = ones.get(&many_sig[i]) else {
                continue;
            };
            if one_to_one && matched.insert(&many_sig[i], ()).is_some() {
                return Err(Error::Execution(
                    "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                        .into(),
                ));
            }
            let (l, r) = if swapped { (ov, mv) } else { (mv, ov) };
            let (mut value, mut keep) = apply(op, l, r);
            if return_bool {
                value = f64::from(u8::from(keep));
                keep = true;
            }
            if !keep {
                continue;
            }
            let mut labels = s.labels.clone();
            if is_arithmetic(op) || return_bool {
                labels = labels.without_name();
            }
            if one_to_one {
                labels = match matching {
                    Some(LabelModifier::Include(on)) => labels.keep(&on.labels),
                    Some(LabelModifier::Exclude(ignoring)) => {
                        let mut kept = labels;
                        for name in &ignoring.labels {
                            kept.set(name, "");
                        }
                        kept
                    }
                    None => labels,
                };
            }
            for name in include {
                labels.set(name, one[j].labels.get(name));
            }
            points.push((labels, step, value));
        }
    }
    collect(steps, points)
}
