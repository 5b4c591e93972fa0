//! Aggregates and selectors over the points of one bucket, for the functions SQL has no
//! exact InfluxQL equivalent of (median, mode, percentile, spread, stddev, integral, …)
//! and for selectors whose point time is shown.

use strata_influxql::Expr;

use super::super::result::Value;

/// The answer of one aggregate over one bucket: its value, and for selectors the time of
/// the point selected.
pub(super) struct Folded {
    pub value: Value,
    pub time: Option<i64>,
}

impl Folded {
    fn plain(value: Value) -> Self {
        Folded { value, time: None }
    }
}

/// Folds `points` (time-ordered, non-null) with `function`; `args` are the call's
/// arguments after the field.
pub(super) fn fold(
    function: &str,
    args: &[Expr],
    points: &[(i64, &Value)],
) -> Result<Folded, String> {
    if points.is_empty() {
        return Ok(Folded::plain(if function.starts_with("count") {
            Value::Integer(0)
        } else {
            Value::Null
        }));
    }
    let numbers = || points.iter().filter_map(|(_, v)| v.as_f64());
    let all_int = points.iter().all(|(_, v)| matches!(v, Value::Integer(_)));
    Ok(match function {
        "count" => Folded::plain(Value::Integer(points.len() as i64)),
        "count_distinct" => {
            let mut seen: Vec<&Value> = Vec::new();
            for (_, v) in points {
                if !seen
                    .iter()
                    .any(|s| compare(s, v) == std::cmp::Ordering::Equal)
                {
                    seen.push(v);
                }
            }
            Folded::plain(Value::Integer(seen.len() as i64))
        }
        "sum" => {
            if all_int {
                let sum = points.iter().fold(0i64, |acc, (_, v)| match v {
                    Value::Integer(i) => acc.wrapping_add(*i),
                    _ => acc,
                });
                Folded::plain(Value::Integer(sum))
            } else {
                Folded::plain(Value::Float(numbers().sum()))
            }
        }
        "mean" => {
            let n = numbers().count();
            if n == 0 {
                return Ok(Folded::plain(Value::Null));
            }
            Folded::plain(Value::Float(numbers().sum::<f64>() / n as f64))
        }
        "median" => {
            let mut values: Vec<f64> = numbers().collect();
            values.sort_by(f64::total_cmp);
            let n = values.len();
            if n == 0 {
                return Ok(Folded::plain(Value::Null));
            }
            let median = if n % 2 == 1 {
                values[n / 2]
            } else {
                values[n / 2 - 1] + (values[n / 2] - values[n / 2 - 1]) / 2.0
            };
            Folded::plain(Value::Float(median))
        }
        "mode" => Folded::plain(mode(points)),
        "spread" => {
            if all_int {
                let ints = points.iter().filter_map(|(_, v)| match v {
                    Value::Integer(i) => Some(*i),
                    _ => None,
                });
                let (lo, hi) =
                    ints.fold((i64::MAX, i64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
                Folded::plain(Value::Integer(hi.wrapping_sub(lo)))
            } else {
                let (lo, hi) = numbers().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                });
                Folded::plain(Value::Float(hi - lo))
            }
        }
        "stddev" => {
            let values: Vec<f64> = numbers().collect();
            if values.len() < 2 {
                return Ok(Folded::plain(Value::Null));
            }
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>()
                / (values.len() - 1) as f64;
            Folded::plain(Value::Float(var.sqrt()))
        }
        "first" => select_at(points, 0),
        "last" => select_at(points, points.len() - 1),
        "max" | "min" => {
            let want_max = function == "max";
            let mut best: Option<(i64, &Value, f64)> = None;
            for (t, v) in points {
                let Some(x) = v.as_f64() else { continue };
                let better = match best {
                    None => true,
                    Some((_, _, b)) => (want_max && x > b) || (!want_max && x < b),
                };
                if better {
                    best = Some((*t, v, x));
                }
            }
            match best {
                Some((t, v, _)) => Folded {
                    value: v.clone(),
                    time: Some(t),
                },
                None => Folded::plain(Value::Null),
            }
        }
        "percentile" => {
            let p = match args.first() {
                Some(Expr::Integer(v)) => *v as f64,
                Some(Expr::Float(v)) => *v,
                _ => return Err("expected float argument in percentile()".into()),
            };
            let mut sorted: Vec<(i64, &Value, f64)> = points
                .iter()
                .filter_map(|(t, v)| v.as_f64().map(|x| (*t, *v, x)))
                .collect();
            sorted.sort_by(|a, b| a.2.total_cmp(&b.2));
            // Nearest rank: the value at rank ceil(p/100 × n), counting from 1.
            let rank = (sorted.len() as f64 * p / 100.0 + 0.5).floor() as i64 - 1;
            match usize::try_from(rank).ok().and_then(|i| sorted.get(i)) {
                Some((t, v, _)) => Folded {
                    value: (*v).clone(),
                    time: Some(*t),
                },
                None => Folded::plain(Value::Null),
            }
        }
        "integral" => {
            let unit = match args.first() {
                Some(Expr::Duration(d)) if *d > 0 => *d as f64,
                None => 1e9,
                _ => return Err("second argument of integral must be a duration".into()),
            };
            let mut area = 0.0;
            let mut prev: Option<(i64, f64)> = None;
            for (t, v) in points {
                let Some(x) = v.as_f64() else { continue };
                if let Some((pt, px)) = prev {
                    area += (x + px) / 2.0 * (*t - pt) as f64 / unit;
                }
                prev = Some((*t, x));
            }
            Folded::plain(Value::Float(area))
        }
        other => return Err(format!("unsupported aggregate: {other}()")),
    })
}

fn select_at(points: &[(i64, &Value)], at: usize) -> Folded {
    let (t, v) = points[at];
    Folded {
        value: v.clone(),
        time: Some(t),
    }
}

/// The most frequent value; among equally frequent ones, the smallest (InfluxDB's rule).
fn mode(points: &[(i64, &Value)]) -> Value {
    let mut counts: Vec<(&Value, usize)> = Vec::new();
    for (_, v) in points {
        match counts.iter_mut().find(|(seen, _)| seen == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    let best = counts.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let tied = counts
        .into_iter()
        .filter(|(_, n)| *n == best)
        .map(|(v, _)| v);
    // A tie goes to the smallest value, but between booleans to `true`, as InfluxDB 1.x
    // counts them (true when at least as frequent as false).
    let chosen = if matches!(points.first(), Some((_, Value::Boolean(_)))) {
        tied.max_by(|a, b| compare(a, b))
    } else {
        tied.min_by(|a, b| compare(a, b))
    };
    chosen.map_or(Value::Null, Value::clone)
}

/// An order over values of one field: numbers numerically, strings and booleans as such.
fn compare(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Boolean(x), Value::Boolean(y)) => x.cmp(y),
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            _ => std::cmp::Ordering::Equal,
        },
    }
}
