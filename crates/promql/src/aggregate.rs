//! Aggregation operators (`sum by (job) (…)`), as Prometheus 2.42 computes them.

use std::collections::HashMap;

use promql_parser::parser::{AggregateExpr, Expr, LabelModifier};

use crate::Error;
use crate::eval::{Evaluator, StepSeries, Value, collect, unwrap_parens};
use crate::functions::quantile;
use crate::labels::Labels;

/// Evaluates an aggregation.
pub fn eval(ev: &mut Evaluator<'_>, agg: &AggregateExpr) -> Result<Value, Error> {
    let op = agg.op.to_string();
    let steps = ev.steps();
    let param = match (op.as_str(), &agg.param) {
        ("topk" | "bottomk" | "quantile", Some(p)) => Param::Scalar(ev.scalar(p)?),
        ("count_values", Some(p)) => match unwrap_parens(p) {
            Expr::StringLiteral(s) => Param::Label(s.val.clone()),
            _ => {
                return Err(Error::BadData(
                    "count_values: the label must be a string".into(),
                ));
            }
        },
        ("sum" | "avg" | "min" | "max" | "count" | "group" | "stddev" | "stdvar", _) => Param::None,
        (other, _) => return Err(Error::Unsupported(format!("the aggregation {other}"))),
    };
    let input = ev.vector(&agg.expr)?;
    let key = |labels: &Labels| -> Labels {
        match &agg.modifier {
            None => Labels::default(),
            Some(LabelModifier::Include(by)) => labels.keep(&by.labels),
            Some(LabelModifier::Exclude(without)) => labels.drop(&without.labels),
        }
    };
    // Series by group, in order of first appearance.
    let mut groups: Vec<(Labels, Vec<&StepSeries>)> = Vec::new();
    let mut index: HashMap<Labels, usize> = HashMap::new();
    for series in &input {
        let k = key(&series.labels);
        let at = *index.entry(k.clone()).or_insert_with(|| {
            groups.push((k, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(series);
    }
    if matches!(param, Param::None) {
        return Ok(Value::Vector(fold_groups(ev, &op, steps, groups)?));
    }
    let mut points: Vec<(Labels, usize, f64)> = Vec::new();
    for (labels, members) in &groups {
        ev.check()?;
        for step in 0..steps {
            let present: Vec<(&StepSeries, f64)> = members
                .iter()
                .filter_map(|s| s.values[step].map(|v| (*s, v)))
                .collect();
            if present.is_empty() {
                continue;
            }
            let values = || present.iter().map(|(_, v)| *v);
            match (op.as_str(), &param) {
                ("topk" | "bottomk", Param::Scalar(k)) => {
                    let k = k[step];
                    // Below 1, or NaN: nothing.
                    if k.is_nan() || k < 1.0 {
                        continue;
                    }
                    let top = op == "topk";
                    let values: Vec<f64> = present.iter().map(|(_, v)| *v).collect();
                    for i in select_k(&values, k.min(1e9) as usize, top) {
                        points.push((present[i].0.labels.clone(), step, values[i]));
                    }
                }
                ("count_values", Param::Label(label)) => {
                    let mut counts: Vec<(String, f64)> = Vec::new();
                    for v in values() {
                        let text = format_value(v);
                        match counts.iter_mut().find(|(t, _)| *t == text) {
                            Some((_, n)) => *n += 1.0,
                            None => counts.push((text, 1.0)),
                        }
                    }
                    for (text, n) in counts {
                        let mut out = labels.clone();
                        out.set(label, &text);
                        points.push((out, step, n));
                    }
                }
                ("quantile", Param::Scalar(q)) => {
                    points.push((labels.clone(), step, quantile(q[step], values().collect())));
                }
                _ => points.push((labels.clone(), step, fold(&op, values()))),
            }
        }
    }
    ev.count(points.len())?;
    Ok(Value::Vector(collect(steps, points)?))
}

/// The aggregations with one value per group and step (`sum`, `avg`, `min`, `max`,
/// `count`, `group`, `stddev`, `stdvar`): each group is one output series, built in place —
/// groups have distinct labels, so no two can clash — in the order of their first member,
/// leaving out groups without a value at any step.
fn fold_groups(
    ev: &mut Evaluator<'_>,
    op: &str,
    steps: usize,
    groups: Vec<(Labels, Vec<&StepSeries>)>,
) -> Result<Vec<StepSeries>, Error> {
    let mut out = Vec::with_capacity(groups.len());
    let mut count = 0;
    for (labels, members) in groups {
        ev.check()?;
        let mut values: Vec<Option<f64>> = Vec::with_capacity(steps);
        for step in 0..steps {
            let mut present = members.iter().filter_map(|s| s.values[step]).peekable();
            values.push(present.peek().is_some().then(|| fold(op, present)));
        }
        let present = values.iter().flatten().count();
        if present > 0 {
            count += present;
            out.push(StepSeries { labels, values });
        }
    }
    ev.count(count)?;
    Ok(out)
}

enum Param {
    None,
    Scalar(Vec<f64>),
    Label(String),
}

/// The `k` values `topk` (or `bottomk`) keeps, by index, chosen exactly as Prometheus 2.x
/// chooses them: a heap of the `k` best so far (Go's `container/heap`), whose worst is
/// replaced only by a strictly better value. Equal values make the choice depend on the
/// heap's shape, so it is reproduced step by step rather than by a sort.
fn select_k(values: &[f64], k: usize, top: bool) -> Vec<usize> {
    // `less(a, b)`: a is worse than b (the heap's root is the worst kept); NaN is worst.
    let less = |a: f64, b: f64| a.is_nan() || if top { a < b } else { a > b };
    // `k` is the query's (`topk(1e9, …)`): never more room than there are values.
    let mut heap: Vec<usize> = Vec::with_capacity(k.min(values.len()));
    for (i, v) in values.iter().enumerate() {
        if heap.is_empty() {
            heap.push(i);
            continue;
        }
        let root = values[heap[0]];
        let better = if top { root < *v } else { root > *v };
        if heap.len() < k || better || root.is_nan() {
            if heap.len() == k {
                if k == 1 {
                    heap[0] = i;
                    continue;
                }
                // Go's heap.Pop: swap the root with the last, sift it down, drop the last.
                let n = heap.len() - 1;
                heap.swap(0, n);
                sift_down(&mut heap, 0, n, values, &less);
                heap.pop();
            }
            // Go's heap.Push: append, sift up.
            heap.push(i);
            let mut j = heap.len() - 1;
            while j > 0 {
                let parent = (j - 1) / 2;
                if !less(values[heap[j]], values[heap[parent]]) {
                    break;
                }
                heap.swap(parent, j);
                j = parent;
            }
        }
    }
    heap
}

/// Go's `container/heap` `down`.
fn sift_down(
    heap: &mut [usize],
    mut i: usize,
    n: usize,
    values: &[f64],
    less: &dyn Fn(f64, f64) -> bool,
) {
    loop {
        let left = 2 * i + 1;
        if left >= n {
            break;
        }
        let mut j = left;
        if left + 1 < n && less(values[heap[left + 1]], values[heap[left]]) {
            j = left + 1;
        }
        if !less(values[heap[j]], values[heap[i]]) {
            break;
        }
        heap.swap(i, j);
        i = j;
    }
}

/// `sum`, `avg`, `min`, `max`, `count`, `group`, `stddev`, `stdvar` of a group's values.
fn fold(op: &str, mut values: impl Iterator<Item = f64>) -> f64 {
    let first = values.next().unwrap_or(f64::NAN);
    let (mut value, mut mean, mut count) = (first, first, 1.0f64);
    let mut aux = 0.0;
    for v in values {
        count += 1.0;
        match op {
            "sum" => value += v,
            "avg" => {
                if mean.is_infinite() {
                    if v.is_infinite() && (mean > 0.0) == (v > 0.0) {
                        continue;
                    }
                    if !v.is_infinite() && !v.is_nan() {
                        continue;
                    }
                }
                mean += v / count - mean / count;
            }
            "min" if value > v || value.is_nan() => value = v,
            "max" if value < v || value.is_nan() => value = v,
            "stddev" | "stdvar" => {
                let delta = v - mean;
                mean += delta / count;
                aux += delta * (v - mean);
            }
            _ => {}
        }
    }
    match op {
        "avg" => mean,
        "count" => count,
        "group" => 1.0,
        "stdvar" => aux / count,
        "stddev" => (aux / count).sqrt(),
        _ => value,
    }
}

/// A float as Prometheus writes it (Go's `FormatFloat(v, 'f', -1, 64)`).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::select_k;

    /// `k` comes from the query: `topk(1e9, x)` once reserved room for a billion indexes
    /// (8 GB) whatever the series. A `k` past any allocation keeps every value.
    #[test]
    fn a_huge_k_reserves_room_for_the_values_only() {
        let values = [1.0, 3.0, f64::NAN, 2.0];
        let mut kept = select_k(&values, usize::MAX, true);
        kept.sort_unstable();
        assert_eq!(kept, [0, 1, 2, 3]);
        assert_eq!(select_k(&values, 1, true), [1]);
        assert_eq!(select_k(&values, 1, false), [0]);
    }
}
