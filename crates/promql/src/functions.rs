//! PromQL functions, as Prometheus 2.42 computes them.

use promql_parser::label::METRIC_NAME;
use promql_parser::parser::{Call, Expr};
use regex::Regex;

use crate::eval::{Evaluator, RangeArg, StepSeries, Value, WindowCursor, collect, unwrap_parens};
use crate::labels::Labels;
use crate::{Error, Limits, Series, summarized};

/// Evaluates a function call.
pub fn call(ev: &mut Evaluator<'_>, call: &Call) -> Result<Value, Error> {
    let name = call.func.name;
    let args: Vec<&Expr> = call.args.args.iter().map(|a| a.as_ref()).collect();
    let arg = |i: usize| -> Result<&Expr, Error> {
        args.get(i)
            .copied()
            .ok_or_else(|| Error::BadData(format!("{name}: missing argument {}", i + 1)))
    };
    match name {
        "rate" => over_range(ev, arg(0)?, false, |w, s, e, r| {
            extrapolated(w, s, e, r, true, true)
        }),
        "increase" => over_range(ev, arg(0)?, false, |w, s, e, r| {
            extrapolated(w, s, e, r, true, false)
        }),
        "delta" => over_range(ev, arg(0)?, false, |w, s, e, r| {
            extrapolated(w, s, e, r, false, false)
        }),
        "irate" => over_range(ev, arg(0)?, false, |w, _, _, _| instant_value(w, true)),
        "idelta" => over_range(ev, arg(0)?, false, |w, _, _, _| instant_value(w, false)),
        "resets" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            Some(w.windows(2).filter(|p| p[1].1 < p[0].1).count() as f64)
        }),
        "changes" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            Some(
                w.windows(2)
                    .filter(|p| !(p[1].1 == p[0].1 || (p[1].1.is_nan() && p[0].1.is_nan())))
                    .count() as f64,
            )
        }),
        "deriv" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            (w.len() >= 2).then(|| linear_regression(w, w[0].0).0)
        }),
        "predict_linear" => {
            let seconds = ev.scalar(arg(1)?)?;
            let arg = ev.range_arg(arg(0)?)?;
            let offset = arg.offset;
            range_points(ev, &arg, false, |w, step, _, end| {
                (w.len() >= 2).then(|| {
                    // At the evaluation time (Prometheus' `enh.Ts`), not the window's end.
                    let (slope, intercept) = linear_regression(w, end + offset);
                    slope * seconds[step] + intercept
                })
            })
        }
        "holt_winters" => {
            let (sf, tf) = (ev.scalar(arg(1)?)?, ev.scalar(arg(2)?)?);
            for (name, factors) in [("smoothing", &sf), ("trend", &tf)] {
                if let Some(bad) = factors.iter().find(|f| !(**f > 0.0 && **f < 1.0)) {
                    return Err(Error::Execution(format!(
                        "invalid {name} factor. Expected: 0 < {} < 1, got: {bad:.6}",
                        &name[..1]
                    )));
                }
            }
            over_range_stepped(ev, arg(0)?, false, |w, step, _, _| {
                holt_winters(w, sf[step], tf[step])
            })
        }
        "avg_over_time" | "sum_over_time" | "count_over_time" | "min_over_time"
        | "max_over_time"
            if let Some(value) = summarized::over_time(ev, arg(0)?, name)? =>
        {
            Ok(value)
        }
        "avg_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| nonempty(w).map(avg)),
        "sum_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| nonempty(w).map(kahan_sum)),
        "count_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            nonempty(w).map(|w| w.len() as f64)
        }),
        "min_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            nonempty(w).map(|w| extreme(w.iter().map(|p| p.1), |a, b| b < a))
        }),
        "max_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            nonempty(w).map(|w| extreme(w.iter().map(|p| p.1), |a, b| b > a))
        }),
        "last_over_time" => over_range(ev, arg(0)?, true, |w, _, _, _| w.last().map(|p| p.1)),
        "present_over_time" => {
            over_range(ev, arg(0)?, false, |w, _, _, _| nonempty(w).map(|_| 1.0))
        }
        "stddev_over_time" => over_range(ev, arg(0)?, false, |w, _, _, _| {
            nonempty(w).map(|w| variance(w).sqrt())
        }),
        "stdvar_over_time" => {
            over_range(ev, arg(0)?, false, |w, _, _, _| nonempty(w).map(variance))
        }
        "quantile_over_time" => {
            let q = ev.scalar(arg(0)?)?;
            over_range_stepped(ev, arg(1)?, false, |w, step, _, _| {
                nonempty(w).map(|w| quantile(q[step], w.iter().map(|p| p.1).collect()))
            })
        }
        "absent_over_time" => {
            let range = ev.range_arg(arg(0)?)?;
            let labels = absent_labels(arg(0)?);
            let values = (0..ev.steps())
                .map(|step| {
                    let any = range
                        .series
                        .iter()
                        .any(|s| !range.window(s, step).is_empty());
                    (!any).then_some(1.0)
                })
                .collect();
            Ok(Value::Vector(vec![StepSeries { labels, values }]))
        }
        "absent" => {
            let input = ev.vector(arg(0)?)?;
            let labels = absent_labels(arg(0)?);
            let values = (0..ev.steps())
                .map(|step| {
                    let any = input.iter().any(|s| s.values[step].is_some());
                    (!any).then_some(1.0)
                })
                .collect();
            Ok(Value::Vector(vec![StepSeries { labels, values }]))
        }
        "abs" => map(ev, arg(0)?, f64::abs),
        "ceil" => map(ev, arg(0)?, f64::ceil),
        "floor" => map(ev, arg(0)?, f64::floor),
        "exp" => map(ev, arg(0)?, f64::exp),
        "ln" => map(ev, arg(0)?, f64::ln),
        "log2" => map(ev, arg(0)?, f64::log2),
        "log10" => map(ev, arg(0)?, f64::log10),
        "sqrt" => map(ev, arg(0)?, f64::sqrt),
        "sgn" => map(ev, arg(0)?, |v| {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }),
        "round" => {
            let nearest = match args.get(1) {
                Some(e) => ev.scalar(e)?,
                None => vec![1.0; ev.steps()],
            };
            map_stepped(ev, arg(0)?, |v, step| {
                let inverse = 1.0 / nearest[step];
                (v * inverse + 0.5).floor() / inverse
            })
        }
        "clamp" => {
            let (lo, hi) = (ev.scalar(arg(1)?)?, ev.scalar(arg(2)?)?);
            filter_map_stepped(ev, arg(0)?, |v, step| {
                (hi[step] >= lo[step]).then(|| v.max(lo[step]).min(hi[step]))
            })
        }
        "clamp_min" => {
            let lo = ev.scalar(arg(1)?)?;
            map_stepped(ev, arg(0)?, |v, step| v.max(lo[step]))
        }
        "clamp_max" => {
            let hi = ev.scalar(arg(1)?)?;
            map_stepped(ev, arg(0)?, |v, step| v.min(hi[step]))
        }
        "time" => Ok(Value::Scalar(
            (0..ev.steps())
                .map(|i| ev.time(i) as f64 / 1000.0)
                .collect(),
        )),
        "vector" => {
            let values = ev.scalar(arg(0)?)?;
            Ok(Value::Vector(vec![StepSeries {
                labels: Labels::default(),
                values: values.into_iter().map(Some).collect(),
            }]))
        }
        "scalar" => {
            let input = ev.vector(arg(0)?)?;
            Ok(Value::Scalar(
                (0..ev.steps())
                    .map(|step| {
                        let mut present = input.iter().filter_map(|s| s.values[step]);
                        match (present.next(), present.next()) {
                            (Some(v), None) => v,
                            _ => f64::NAN,
                        }
                    })
                    .collect(),
            ))
        }
        "timestamp" => timestamp(ev, arg(0)?),
        "minute" | "hour" | "day_of_month" | "day_of_week" | "days_in_month" | "month" | "year" => {
            date_part(ev, name, args.first().copied())
        }
        "sort" | "sort_desc" => Ok(Value::Vector(ev.vector(arg(0)?)?)),
        "label_replace" => label_replace(ev, &args),
        "label_join" => label_join(ev, &args),
        "histogram_quantile" => histogram_quantile(ev, arg(0)?, arg(1)?),
        // These read native-histogram samples only; Strata stores floats, so there are none.
        "histogram_count" | "histogram_sum" | "histogram_fraction" => {
            for expr in &args {
                ev.eval(expr)?;
            }
            Ok(Value::Vector(Vec::new()))
        }
        other => Err(Error::Unsupported(format!("the function {other}()"))),
    }
}

fn nonempty(w: &[(i64, f64)]) -> Option<&[(i64, f64)]> {
    (!w.is_empty()).then_some(w)
}

/// A range function applied to every series and step: `f(window, range start, range end,
/// range length in seconds)`.
fn over_range(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    keep_name: bool,
    f: impl Fn(&[(i64, f64)], i64, i64, f64) -> Option<f64>,
) -> Result<Value, Error> {
    each_window(ev, expr, keep_name, |w, _, start, end, seconds| {
        f(w, start, end, seconds)
    })
}

/// As [`over_range`], with the step index (for per-step scalar arguments) instead of the
/// range length.
fn over_range_stepped(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    keep_name: bool,
    f: impl Fn(&[(i64, f64)], usize, i64, i64) -> Option<f64>,
) -> Result<Value, Error> {
    each_window(ev, expr, keep_name, |w, step, start, end, _| {
        f(w, step, start, end)
    })
}

/// `f(window, step, range start, range end, range length in seconds)` over every series
/// and step of a range vector. A matrix selector's series are windowed one at a time as
/// the source reads them (see [`Evaluator::matrix_each`]); a subquery's are held.
fn each_window(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    keep_name: bool,
    f: impl Fn(&[(i64, f64)], usize, i64, i64, f64) -> Option<f64>,
) -> Result<Value, Error> {
    let Expr::MatrixSelector(ms) = unwrap_parens(expr) else {
        let arg = ev.range_arg(expr)?;
        let seconds = arg.range as f64 / 1000.0;
        return range_points(ev, &arg, keep_name, |w, step, start, end| {
            f(w, step, start, end, seconds)
        });
    };
    let shape = ev.matrix_shape(ms);
    let seconds = shape.range as f64 / 1000.0;
    let steps = ev.steps();
    let limits = ev.limits().clone();
    // The labels of input series without output are kept for `names_needed`, which looks
    // at every input; those with output are in `out`.
    let mut silent: Vec<Labels> = Vec::new();
    let mut out: Vec<StepSeries> = Vec::new();
    let mut count = 0;
    ev.matrix_each(ms, &shape, &mut |series| {
        let values = window_values(&shape, &series, steps, &limits, |w, step, start, end| {
            f(w, step, start, end, seconds)
        })?;
        let present = values.iter().flatten().count();
        if present > 0 {
            count += present;
            out.push(StepSeries {
                labels: series.labels,
                values,
            });
        } else {
            silent.push(series.labels);
        }
        Ok(())
    })?;
    finish_windows(ev, out, &silent, keep_name, count)
}

/// A range function's output series, in the selector's label order (as `range_arg`
/// holds them), names dropped as `range_points` drops them; `silent` are the labels of
/// input series without output, `count` the values.
pub(crate) fn finish_windows(
    ev: &mut Evaluator<'_>,
    mut out: Vec<StepSeries>,
    silent: &[Labels],
    keep_name: bool,
    count: usize,
) -> Result<Value, Error> {
    out.sort_by(|a, b| a.labels.cmp(&b.labels));
    let inputs = out.iter().map(|s| &s.labels).chain(silent);
    if !(keep_name || names_needed(inputs)) {
        for series in &mut out {
            series.labels = std::mem::take(&mut series.labels).without_name();
        }
    }
    ev.count(count)?;
    Ok(Value::Vector(out))
}

fn range_points(
    ev: &mut Evaluator<'_>,
    arg: &RangeArg,
    keep_name: bool,
    f: impl Fn(&[(i64, f64)], usize, i64, i64) -> Option<f64>,
) -> Result<Value, Error> {
    let steps = ev.steps();
    // Prometheus refuses the answer when removing the metric names leaves two series
    // with the same labels ("vector cannot contain metrics with the same labelset"); Strata
    // keeps the names instead, as VictoriaMetrics does, so that a function over several
    // metrics at once (`max_over_time({__name__=~"cpu_.*"}[1h])`) has an answer.
    let keep_name = keep_name || names_needed(arg.series.iter().map(|s| &s.labels));
    // With the names settled above, every input series is one output series: no two
    // share labels (the selector's series are distinct, and so are a subquery's).
    let mut out = Vec::with_capacity(arg.series.len());
    let mut count = 0;
    let limits = ev.limits().clone();
    for series in &arg.series {
        let values = window_values(arg, series, steps, &limits, &f)?;
        let present = values.iter().flatten().count();
        if present > 0 {
            count += present;
            let labels = if keep_name {
                series.labels.clone()
            } else {
                series.labels.clone().without_name()
            };
            out.push(StepSeries { labels, values });
        }
    }
    ev.count(count)?;
    Ok(Value::Vector(out))
}

/// `f(window, step, range start, range end)` of one series at every step; `None` where
/// its window is empty.
fn window_values(
    arg: &RangeArg,
    series: &Series,
    steps: usize,
    limits: &Limits,
    f: impl Fn(&[(i64, f64)], usize, i64, i64) -> Option<f64>,
) -> Result<Vec<Option<f64>>, Error> {
    limits.check()?;
    let mut values: Vec<Option<f64>> = Vec::with_capacity(steps);
    let mut cursor = WindowCursor::default();
    for step in 0..steps {
        // Long windows over many steps: look up now and then too.
        if step % 1024 == 1023 {
            limits.check()?;
        }
        let window = arg.window_from(series, step, &mut cursor);
        // No samples in the window: no series at this step, whatever the function.
        values.push(if window.is_empty() {
            None
        } else {
            let end = arg.refs[step];
            f(window, step, end - arg.range, end)
        });
    }
    Ok(values)
}

/// `rate`, `increase` and `delta`: the change over the window, extrapolated to its edges.
fn extrapolated(
    w: &[(i64, f64)],
    range_start: i64,
    range_end: i64,
    range_seconds: f64,
    counter: bool,
    per_second: bool,
) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (first, last) = (w[0], w[w.len() - 1]);
    let mut result = last.1 - first.1;
    if counter {
        let mut previous = 0.0;
        for (_, v) in w {
            if *v < previous {
                result += previous;
            }
            previous = *v;
        }
    }
    let mut to_start = (first.0 - range_start) as f64 / 1000.0;
    let to_end = (range_end - last.0) as f64 / 1000.0;
    let sampled = (last.0 - first.0) as f64 / 1000.0;
    let average_gap = sampled / (w.len() - 1) as f64;
    if counter && result > 0.0 && first.1 >= 0.0 {
        let to_zero = sampled * (first.1 / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = average_gap * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        average_gap / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        average_gap / 2.0
    };
    // In Prometheus' order of operations, so that results agree to the last bit.
    let mut factor = interval / sampled;
    if per_second {
        factor /= range_seconds;
    }
    Some(result * factor)
}

/// Double exponential smoothing, as Prometheus 2.x's `holt_winters`.
fn holt_winters(w: &[(i64, f64)], sf: f64, tf: f64) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (mut s0, mut s1) = (0.0, w[0].1);
    let mut b = w[1].1 - w[0].1;
    for (i, (_, v)) in w.iter().enumerate().skip(1) {
        let x = sf * v;
        if i > 1 {
            b = tf * (s1 - s0) + (1.0 - tf) * b;
        }
        let y = (1.0 - sf) * (s1 + b);
        (s0, s1) = (s1, x + y);
    }
    Some(s1)
}

/// `irate` and `idelta`: from the last two samples.
fn instant_value(w: &[(i64, f64)], rate: bool) -> Option<f64> {
    if w.len() < 2 {
        return None;
    }
    let (previous, last) = (w[w.len() - 2], w[w.len() - 1]);
    let mut result = if rate && last.1 < previous.1 {
        last.1
    } else {
        last.1 - previous.1
    };
    let interval = last.0 - previous.0;
    if interval == 0 {
        return None;
    }
    if rate {
        result /= interval as f64 / 1000.0;
    }
    Some(result)
}

/// Neumaier's compensated addition, as Prometheus' `kahanSumInc`.
pub fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}

/// The compensated sum of a window's values.
///
/// Four lanes (samples `i mod 4`), each a compensated sum, joined by Neumaier's addition:
/// one sum's chain of dependent additions was the speed limit of `sum_over_time` and
/// `avg_over_time` over long windows, and four independent chains the compiler turns into
/// vector operations. Each lane adds with Knuth's two-sum, whose error term is exactly
/// Neumaier's (both are the rounding error of the addition) without its comparison and
/// select, so the result is as exact as one chain's; it may differ from Prometheus' single
/// chain in the last bit. An infinite or NaN sum is what one chain gives: any NaN, or both
/// infinities, give NaN; one infinity gives it.
pub(crate) fn kahan_sum(w: &[(i64, f64)]) -> f64 {
    let (mut sums, mut errors) = ([0.0f64; 4], [0.0f64; 4]);
    let mut add = |lane: usize, v: f64| {
        let t = sums[lane] + v;
        let z = t - sums[lane];
        errors[lane] += (sums[lane] - (t - z)) + (v - z);
        sums[lane] = t;
    };
    let mut quads = w.chunks_exact(4);
    for quad in &mut quads {
        for (lane, (_, v)) in quad.iter().enumerate() {
            add(lane, *v);
        }
    }
    for (lane, (_, v)) in quads.remainder().iter().enumerate() {
        add(lane, *v);
    }
    let (mut sum, mut c) = (0.0, 0.0);
    for (lane_sum, lane_error) in sums.into_iter().zip(errors) {
        (sum, c) = kahan_inc(lane_sum, sum, c);
        c += lane_error;
    }
    if sum.is_infinite() || sum.is_nan() {
        sum
    } else {
        sum + c
    }
}

/// The mean: a compensated sum over the count, as Prometheus 2.5x computes it, falling
/// back to 2.42's incremental mean when the sum overflows (it cannot, then, for finite
/// means). Agrees with 2.42's incremental mean within the last bit, at a division per
/// window instead of two per sample.
fn avg(w: &[(i64, f64)]) -> f64 {
    let sum = kahan_sum(w);
    if sum.is_finite() {
        return sum / w.len() as f64;
    }
    incremental_mean(w)
}

fn incremental_mean(w: &[(i64, f64)]) -> f64 {
    let (mut mean, mut count, mut c) = (0.0f64, 0.0, 0.0);
    for (_, v) in w {
        count += 1.0;
        if mean.is_infinite() {
            if v.is_infinite() && (mean > 0.0) == (*v > 0.0) {
                continue;
            }
            if !v.is_infinite() && !v.is_nan() {
                continue;
            }
        }
        (mean, c) = kahan_inc(v / count - mean / count, mean, c);
    }
    if mean.is_infinite() { mean } else { mean + c }
}

fn variance(w: &[(i64, f64)]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (_, v) in w {
        count += 1.0;
        let delta = v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

/// The first value, replaced by each later one that `better` prefers (or when it is NaN).
pub(crate) fn extreme(
    mut values: impl Iterator<Item = f64>,
    better: impl Fn(f64, f64) -> bool,
) -> f64 {
    let mut best = values.next().unwrap_or(f64::NAN);
    for v in values {
        if better(best, v) || best.is_nan() {
            best = v;
        }
    }
    best
}

/// Prometheus' `quantile`: NaN sorts first; linear interpolation between ranks.
pub fn quantile(q: f64, mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    values.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    values[lower as usize] * (1.0 - weight) + values[upper as usize] * weight
}

/// Least-squares slope and intercept (at `intercept_time`), as Prometheus' compensated
/// `linearRegression`.
fn linear_regression(w: &[(i64, f64)], intercept_time: i64) -> (f64, f64) {
    let (mut n, mut sx, mut cx, mut sy, mut cy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut sxy, mut cxy, mut sx2, mut cx2) = (0.0, 0.0, 0.0, 0.0);
    let init = w[0].1;
    let mut constant = true;
    for (i, (t, v)) in w.iter().enumerate() {
        if constant && i > 0 && *v != init {
            constant = false;
        }
        n += 1.0;
        let x = (t - intercept_time) as f64 / 1e3;
        (sx, cx) = kahan_inc(x, sx, cx);
        (sy, cy) = kahan_inc(*v, sy, cy);
        (sxy, cxy) = kahan_inc(x * v, sxy, cxy);
        (sx2, cx2) = kahan_inc(x * x, sx2, cx2);
    }
    if constant {
        if init.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init);
    }
    let (sx, sy, sxy, sx2) = (sx + cx, sy + cy, sxy + cxy, sx2 + cx2);
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

/// An instant-vector function of each value; drops the metric name.
fn map(ev: &mut Evaluator<'_>, expr: &Expr, f: impl Fn(f64) -> f64) -> Result<Value, Error> {
    filter_map_stepped(ev, expr, |v, _| Some(f(v)))
}

fn map_stepped(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    f: impl Fn(f64, usize) -> f64,
) -> Result<Value, Error> {
    filter_map_stepped(ev, expr, |v, step| Some(f(v, step)))
}

fn filter_map_stepped(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    f: impl Fn(f64, usize) -> Option<f64>,
) -> Result<Value, Error> {
    let input = ev.vector(expr)?;
    let steps = ev.steps();
    let points = |keep_name: bool| {
        let f = &f;
        input.iter().flat_map(move |s| {
            let labels = if keep_name {
                s.labels.clone()
            } else {
                s.labels.clone().without_name()
            };
            s.values
                .iter()
                .enumerate()
                .filter_map(move |(step, v)| Some((labels.clone(), step, f((*v)?, step)?)))
        })
    };
    // Where Prometheus refuses series left with equal labels once their names are removed,
    // Strata keeps the names (see `range_points`).
    match collect(steps, points(false)) {
        Ok(series) => Ok(Value::Vector(series)),
        Err(_) => Ok(Value::Vector(collect(steps, points(true))?)),
    }
}

/// Whether two of these label sets are equal once their metric names are removed.
fn names_needed<'l>(labels: impl Iterator<Item = &'l Labels> + Clone) -> bool {
    // Distinct series of one metric stay distinct without it: the common case needs no
    // copy of every label set.
    let mut names = labels.clone().map(|l| l.get(METRIC_NAME));
    let first = names.next();
    if names.all(|name| Some(name) == first) {
        return false;
    }
    let mut seen = std::collections::HashSet::new();
    labels
        .into_iter()
        .any(|l| !seen.insert(l.clone().without_name()))
}

/// `timestamp(v)`: a selected sample's own time (seconds), else the step's.
fn timestamp(ev: &mut Evaluator<'_>, expr: &Expr) -> Result<Value, Error> {
    let steps = ev.steps();
    if let Expr::VectorSelector(vs) = unwrap_parens(expr) {
        let selected = ev.select_instant(vs)?;
        let points = selected.into_iter().flat_map(|(labels, values)| {
            let labels = labels.without_name();
            values.into_iter().enumerate().filter_map(move |(step, v)| {
                v.map(|(t, _)| (labels.clone(), step, t as f64 / 1000.0))
            })
        });
        return Ok(Value::Vector(collect(steps, points)?));
    }
    let times: Vec<f64> = (0..steps).map(|i| ev.time(i) as f64 / 1000.0).collect();
    map_stepped(ev, expr, |_, step| times[step])
}

/// The date functions: a part of each value read as Unix seconds (UTC); without an
/// argument, of the step's time.
fn date_part(ev: &mut Evaluator<'_>, name: &str, arg: Option<&Expr>) -> Result<Value, Error> {
    use chrono::{Datelike, Timelike};
    let part = |seconds: f64| -> f64 {
        let Some(t) = chrono::DateTime::from_timestamp(seconds as i64, 0) else {
            return f64::NAN;
        };
        f64::from(match name {
            "minute" => t.minute(),
            "hour" => t.hour(),
            "day_of_month" => t.day(),
            "day_of_week" => t.weekday().num_days_from_sunday(),
            "month" => t.month(),
            "year" => return f64::from(t.year()),
            _ => {
                let (y, m) = (t.year(), t.month());
                let next = if m == 12 {
                    chrono::NaiveDate::from_ymd_opt(y + 1, 1, 1)
                } else {
                    chrono::NaiveDate::from_ymd_opt(y, m + 1, 1)
                };
                next.and_then(|d| d.pred_opt()).map_or(0, |d| d.day())
            }
        })
    };
    match arg {
        Some(expr) => map(ev, expr, |v| if v.is_nan() { v } else { part(v) }),
        None => {
            let values = (0..ev.steps())
                .map(|i| Some(part(ev.time(i) as f64 / 1000.0)))
                .collect();
            Ok(Value::Vector(vec![StepSeries {
                labels: Labels::default(),
                values,
            }]))
        }
    }
}

/// The labels `absent` gives its answer: the selector's equality matchers.
fn absent_labels(expr: &Expr) -> Labels {
    let selector = match unwrap_parens(expr) {
        Expr::VectorSelector(vs) => Some(vs),
        Expr::MatrixSelector(ms) => Some(&ms.vs),
        _ => None,
    };
    let Some(vs) = selector else {
        return Labels::default();
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut repeated: Vec<String> = Vec::new();
    for m in &vs.matchers.matchers {
        if m.name == METRIC_NAME {
            continue;
        }
        if matches!(m.op, promql_parser::label::MatchOp::Equal) {
            if pairs.iter().any(|(n, _)| *n == m.name) {
                repeated.push(m.name.clone());
            }
            pairs.push((m.name.clone(), m.value.clone()));
        }
    }
    pairs.retain(|(n, _)| !repeated.contains(n));
    Labels::new(pairs)
}

fn string_arg(args: &[&Expr], i: usize, function: &str) -> Result<String, Error> {
    match args.get(i).map(|e| unwrap_parens(e)) {
        Some(Expr::StringLiteral(s)) => Ok(s.val.clone()),
        _ => Err(Error::BadData(format!(
            "{function}: argument {} must be a string",
            i + 1
        ))),
    }
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn label_replace(ev: &mut Evaluator<'_>, args: &[&Expr]) -> Result<Value, Error> {
    let dst = string_arg(args, 1, "label_replace")?;
    let replacement = string_arg(args, 2, "label_replace")?;
    let src = string_arg(args, 3, "label_replace")?;
    let pattern = string_arg(args, 4, "label_replace")?;
    let regex = Regex::new(&format!("^(?s:{pattern})$")).map_err(|e| {
        Error::BadData(format!(
            "invalid regular expression in label_replace(): {e}"
        ))
    })?;
    if !valid_label_name(&dst) {
        return Err(Error::BadData(format!(
            "invalid destination label name in label_replace(): {dst}"
        )));
    }
    let input = ev.vector(args[0])?;
    let steps = ev.steps();
    let points = input.into_iter().flat_map(|s| {
        let mut labels = s.labels.clone();
        if let Some(captures) = regex.captures(s.labels.get(&src)) {
            let mut value = String::new();
            captures.expand(&replacement, &mut value);
            labels.set(&dst, &value);
        }
        s.values
            .into_iter()
            .enumerate()
            .filter_map(move |(step, v)| Some((labels.clone(), step, v?)))
    });
    Ok(Value::Vector(collect(steps, points)?))
}

fn label_join(ev: &mut Evaluator<'_>, args: &[&Expr]) -> Result<Value, Error> {
    let dst = string_arg(args, 1, "label_join")?;
    let separator = string_arg(args, 2, "label_join")?;
    let sources: Vec<String> = (3..args.len())
        .map(|i| string_arg(args, i, "label_join"))
        .collect::<Result<_, _>>()?;
    if !valid_label_name(&dst) {
        return Err(Error::BadData(format!(
            "invalid destination label name in label_join(): {dst}"
        )));
    }
    let input = ev.vector(args[0])?;
    let steps = ev.steps();
    let points = input.into_iter().flat_map(|s| {
        let mut labels = s.labels.clone();
        let joined: Vec<&str> = sources.iter().map(|n| s.labels.get(n)).collect();
        labels.set(&dst, &joined.join(&separator));
        s.values
            .into_iter()
            .enumerate()
            .filter_map(move |(step, v)| Some((labels.clone(), step, v?)))
    });
    Ok(Value::Vector(collect(steps, points)?))
}

/// `histogram_quantile(φ, buckets)`: classic `le` buckets, grouped by the other labels.
fn histogram_quantile(ev: &mut Evaluator<'_>, q: &Expr, buckets: &Expr) -> Result<Value, Error> {
    let q = ev.scalar(q)?;
    let input = ev.vector(buckets)?;
    let steps = ev.steps();
    let mut groups: Vec<(Labels, Vec<(f64, &StepSeries)>)> = Vec::new();
    for s in &input {
        let Ok(bound) = parse_bound(s.labels.get("le")) else {
            continue;
        };
        let key = s.labels.drop(&["le".to_string()]);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push((bound, s)),
            None => groups.push((key, vec![(bound, s)])),
        }
    }
    let mut points = Vec::new();
    for (labels, members) in &groups {
        for (step, q) in q.iter().enumerate() {
            let mut present: Vec<(f64, f64)> = members
                .iter()
                .filter_map(|(bound, s)| s.values[step].map(|v| (*bound, v)))
                .collect();
            if present.is_empty() {
                continue;
            }
            points.push((labels.clone(), step, bucket_quantile(*q, &mut present)));
        }
    }
    Ok(Value::Vector(collect(steps, points)?))
}

fn parse_bound(text: &str) -> Result<f64, ()> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Ok(f64::INFINITY),
        "-Inf" | "-inf" => Ok(f64::NEG_INFINITY),
        _ => text.parse::<f64>().map_err(|_| ()),
    }
}

/// Prometheus' `bucketQuantile` over (upper bound, cumulative count) pairs.
fn bucket_quantile(q: f64, buckets: &mut [(f64, f64)]) -> f64 {
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    buckets.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    if !buckets.last().is_some_and(|b| b.0 == f64::INFINITY) {
        return f64::NAN;
    }
    // Coalesce equal bounds, then make the counts monotonic.
    let mut merged: Vec<(f64, f64)> = Vec::with_capacity(buckets.len());
    for (bound, count) in buckets.iter() {
        match merged.last_mut() {
            Some(last) if last.0 == *bound => last.1 += count,
            _ => merged.push((*bound, *count)),
        }
    }
    let mut max = f64::NEG_INFINITY;
    for b in &mut merged {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
    if merged.len() < 2 {
        return f64::NAN;
    }
    let observations = merged[merged.len() - 1].1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let last = merged.len() - 1;
    let b = merged[..last].partition_point(|b| b.1 < rank);
    if b == last {
        return merged[last - 1].0;
    }
    if b == 0 && merged[0].0 <= 0.0 {
        return merged[0].0;
    }
    let (mut start, end, mut count) = (0.0, merged[b].0, merged[b].1);
    if b > 0 {
        start = merged[b - 1].0;
        count -= merged[b - 1].1;
        rank -= merged[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_extrapolates_like_prometheus() {
        // A counter from 0 at 10 s spacing over a 60 s window: it would have been 0 at its
        // first sample, so it is not extrapolated before it; 5 s are added after the last.
        let w: Vec<(i64, f64)> = (0..6)
            .map(|i| (i * 10_000 + 5_000, i as f64 * 10.0))
            .collect();
        let r = extrapolated(&w, 0, 60_000, 60.0, true, true).unwrap();
        assert!((r - 50.0 * 55.0 / 50.0 / 60.0).abs() < 1e-12, "{r}");
        // Starting at 100 instead, it is extrapolated 5 s at the start too.
        let w: Vec<(i64, f64)> = w.iter().map(|(t, v)| (*t, v + 100.0)).collect();
        let r = extrapolated(&w, 0, 60_000, 60.0, true, true).unwrap();
        assert!((r - 50.0 * 60.0 / 50.0 / 60.0).abs() < 1e-12, "{r}");
        // A reset adds the value before it.
        let reset = [(0, 5.0), (10_000, 1.0)];
        assert_eq!(instant_value(&reset, true), Some(0.1));
    }

    #[test]
    fn compensated_sum_keeps_what_a_plain_sum_loses() {
        let pairs = |v: &[f64]| v.iter().map(|x| (0, *x)).collect::<Vec<_>>();
        // 1e100 and -1e100 in different lanes, small terms in every lane: a plain sum
        // gives 0 or loses the small terms; every length puts them in other lanes.
        for n in 0..9 {
            let mut v = vec![1e100, 1.0, -1e100, 1.0];
            v.extend(std::iter::repeat_n(0.5, n));
            let want = 2.0 + 0.5 * n as f64;
            assert_eq!(kahan_sum(&pairs(&v)), want, "{v:?}");
        }
        // Decimals: a tenth, 1,000 times, is 100 to the last bit.
        assert_eq!(kahan_sum(&pairs(&[0.1; 1000])), 100.0);
        // Infinities and NaN as one chain gives them.
        let inf = f64::INFINITY;
        assert_eq!(kahan_sum(&pairs(&[1.0, inf, 2.0, 3.0, 4.0])), inf);
        assert_eq!(kahan_sum(&pairs(&[1.0, -inf, 2.0])), -inf);
        assert!(kahan_sum(&pairs(&[inf, 1.0, -inf])).is_nan());
        assert!(kahan_sum(&pairs(&[1.0, 2.0, f64::NAN, 4.0, 5.0])).is_nan());
        assert_eq!(kahan_sum(&pairs(&[f64::MAX, f64::MAX])), inf);
        assert_eq!(kahan_sum(&[]), 0.0);
    }

    #[test]
    fn quantiles_and_buckets() {
        assert_eq!(quantile(0.5, vec![1.0, 3.0, 2.0]), 2.0);
        assert_eq!(quantile(0.25, vec![1.0, 2.0, 3.0, 4.0, 5.0]), 2.0);
        let mut b = vec![(0.1, 10.0), (0.5, 20.0), (f64::INFINITY, 20.0)];
        assert!((bucket_quantile(0.5, &mut b) - 0.1).abs() < 1e-12);
        let mut none = vec![(0.1, 1.0)];
        assert!(bucket_quantile(0.5, &mut none).is_nan());
    }
}
