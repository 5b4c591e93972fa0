//! Transformations over a series of values, one per row (raw points, or buckets when
//! grouped by time): derivatives, differences, moving averages, running sums, elapsed time.

use strata_influxql::Expr;

use super::super::result::Value;

/// Applies `function(args…)` to `rows` (time-ordered `(time, value)`; nulls are skipped);
/// returns the output rows. `interval_ns` is the `GROUP BY time` width, if any.
pub(super) fn apply(
    function: &str,
    args: &[Expr],
    rows: &[(i64, Value)],
    interval_ns: Option<i64>,
) -> Result<Vec<(i64, Value)>, String> {
    let points: Vec<(i64, &Value)> = rows
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(t, v)| (*t, v))
        .collect();
    let duration_arg = |default: i64| -> Result<i64, String> {
        match args.first() {
            None => Ok(default),
            Some(Expr::Duration(d)) if *d > 0 => Ok(*d),
            Some(_) => Err(format!(
                "second argument to {function} must be a duration, got a different type"
            )),
        }
    };
    let mut out = Vec::new();
    match function {
        "derivative" | "non_negative_derivative" => {
            // The default unit: the GROUP BY time interval over buckets, else one second.
            let unit = duration_arg(interval_ns.unwrap_or(1_000_000_000))? as f64;
            for pair in points.windows(2) {
                let ((t0, v0), (t1, v1)) = (pair[0], pair[1]);
                let (Some(a), Some(b)) = (v0.as_f64(), v1.as_f64()) else {
                    continue;
                };
                if t1 == t0 {
                    continue;
                }
                // Over descending points (ORDER BY time DESC) the elapsed time still counts
                // positive, as InfluxDB computes it.
                let rate = (b - a) / ((t1 - t0).abs() as f64 / unit);
                if function == "derivative" || rate >= 0.0 {
                    out.push((t1, Value::Float(rate)));
                }
            }
        }
        "difference" | "non_negative_difference" => {
            for pair in points.windows(2) {
                let ((_, v0), (t1, v1)) = (pair[0], pair[1]);
                let diff = match (v0, v1) {
                    (Value::Integer(a), Value::Integer(b)) => Value::Integer(b.wrapping_sub(*a)),
                    _ => match (v0.as_f64(), v1.as_f64()) {
                        (Some(a), Some(b)) => Value::Float(b - a),
                        _ => continue,
                    },
                };
                let negative = diff.as_f64().is_some_and(|d| d < 0.0);
                if function == "difference" || !negative {
                    out.push((t1, diff));
                }
            }
        }
        "moving_average" => {
            let n = match args.first() {
                Some(Expr::Integer(n)) if *n >= 1 => *n as usize,
                _ => {
                    return Err(
                        "second argument for moving_average must be an integer greater than 0"
                            .into(),
                    );
                }
            };
            for window in points.windows(n) {
                let values: Vec<f64> = window.iter().filter_map(|(_, v)| v.as_f64()).collect();
                if values.len() == n {
                    let t = window[n - 1].0;
                    out.push((t, Value::Float(values.iter().sum::<f64>() / n as f64)));
                }
            }
        }
        "cumulative_sum" => {
            let mut int_sum = 0i64;
            let mut float_sum = 0.0f64;
            for (t, v) in &points {
                match v {
                    Value::Integer(i) => {
                        int_sum = int_sum.wrapping_add(*i);
                        out.push((*t, Value::Integer(int_sum)));
                    }
                    other => {
                        let Some(x) = other.as_f64() else { continue };
                        float_sum += x;
                        out.push((*t, Value::Float(float_sum)));
                    }
                }
            }
        }
        "elapsed" => {
            let unit = duration_arg(1)?;
            for pair in points.windows(2) {
                let (t0, t1) = (pair[0].0, pair[1].0);
                out.push((t1, Value::Integer((t1 - t0) / unit)));
            }
        }
        other => return Err(format!("unsupported function: {other}()")),
    }
    Ok(out)
}
