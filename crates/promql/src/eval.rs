//! The evaluator: every node of a query is evaluated for all steps at once.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use promql_parser::label::{METRIC_NAME, MatchOp, Matcher};
use promql_parser::parser::{
    AtModifier, Expr, MatrixSelector, Offset, SubqueryExpr, VectorSelector,
};

use crate::labels::Labels;
use crate::{
    DEFAULT_SUBQUERY_STEP_MS, Error, Limits, QueryValue, Series, Source, WindowSummary, aggregate,
    binary, functions, is_stale,
};

/// An instant-vector series: one optional value per step.
#[derive(Debug, Clone)]
pub struct StepSeries {
    /// Its labels.
    pub labels: Labels,
    /// Its value at each step, if it has one there.
    pub values: Vec<Option<f64>>,
}

/// What a node evaluates to.
#[derive(Debug, Clone)]
pub enum Value {
    /// A scalar per step.
    Scalar(Vec<f64>),
    /// An instant vector.
    Vector(Vec<StepSeries>),
    /// A string.
    String(String),
}

/// A range-vector argument: raw samples, windowed per step at `refs[step]` over the closed
/// interval `[ref - range, ref]`.
#[derive(Debug)]
pub struct RangeArg {
    /// The series, stale markers removed.
    pub series: Vec<Series>,
    /// Window length (ms).
    pub range: i64,
    /// Each step's window end (ms): the step time, or the `@` time, minus the offset.
    pub refs: Vec<i64>,
    /// The offset (ms): a window end plus it is the step's evaluation time.
    pub offset: i64,
}

impl RangeArg {
    /// Samples of `series` in step `step`'s window.
    pub fn window<'s>(&self, series: &'s Series, step: usize) -> &'s [(i64, f64)] {
        let end = self.refs[step];
        let samples = &series.samples;
        let lo = samples.partition_point(|(t, _)| *t < end - self.range);
        let hi = samples.partition_point(|(t, _)| *t <= end);
        &samples[lo..hi.max(lo)]
    }

    /// As [`RangeArg::window`] for the steps of one series in order, through `cursor`
    /// (fresh for each series). Window ends never go back from one step to the next, so
    /// each bound moves forward from where it was, galloping: the samples are read in
    /// order, which the CPU prefetches. Two binary searches per step instead probe all
    /// over a series' samples, and when the series were read just before (more than the
    /// caches hold), each probe waits on memory.
    pub fn window_from<'s>(
        &self,
        series: &'s Series,
        step: usize,
        cursor: &mut WindowCursor,
    ) -> &'s [(i64, f64)] {
        let end = self.refs[step];
        let samples = &series.samples;
        if cursor.end.is_none_or(|last| end < last) {
            // The first step, or ends that went back (never from `refs`, which only grow):
            // search from the start.
            *cursor = WindowCursor::default();
        }
        cursor.lo = gallop(samples, cursor.lo, |t| t < end - self.range);
        cursor.hi = gallop(samples, cursor.hi.max(cursor.lo), |t| t <= end);
        cursor.end = Some(end);
        &samples[cursor.lo..cursor.hi]
    }
}

/// Where [`RangeArg::window_from`] left a series' window.
#[derive(Debug, Default, Clone, Copy)]
pub struct WindowCursor {
    lo: usize,
    hi: usize,
    /// The last window's end; `None` before the first.
    end: Option<i64>,
}

/// The first index at or after `from` whose time fails `before` (the times of `samples`
/// ascend, and every time before `from` passes it): probes `from`, `from + 1`, `+ 3`, `+ 7`,
/// … until one fails, then searches that last stretch.
fn gallop(samples: &[(i64, f64)], from: usize, before: impl Fn(i64) -> bool) -> usize {
    let mut low = from;
    let mut stride = 1;
    loop {
        let probe = low + stride - 1;
        if probe >= samples.len() || !before(samples[probe].0) {
            let high = probe.min(samples.len());
            return low + samples[low..high].partition_point(|(t, _)| before(*t));
        }
        low = probe + 1;
        stride *= 2;
    }
}

/// Evaluates one query (or subquery) over its steps.
pub struct Evaluator<'a> {
    source: &'a dyn Source,
    start: i64,
    end: i64,
    step: i64,
    lookback: i64,
    limits: Limits,
    /// The outermost query's start and end, for `@ start()` and `@ end()`.
    query_start: i64,
    query_end: i64,
    /// Samples read so far (checked against `limits.max_samples`).
    samples: usize,
}

impl<'a> Evaluator<'a> {
    /// An evaluator for steps `start, start + step, …, end` (ms).
    pub fn new(
        source: &'a dyn Source,
        start: i64,
        end: i64,
        step: i64,
        lookback: i64,
        limits: Limits,
    ) -> Self {
        Self {
            source,
            start,
            end,
            step: step.max(1),
            lookback,
            limits,
            query_start: start,
            query_end: end,
            samples: 0,
        }
    }

    /// Number of steps.
    pub fn steps(&self) -> usize {
        ((self.end - self.start) / self.step + 1) as usize
    }

    /// Time (ms) of step `i`.
    pub fn time(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }

    /// An instant query's answer.
    pub fn instant(&mut self, expr: &Expr) -> Result<QueryValue, Error> {
        let t = self.start;
        match unwrap_parens(expr) {
            Expr::MatrixSelector(_) | Expr::Subquery(_) => {
                let arg = self.range_arg(expr)?;
                let mut out: Vec<(Labels, Vec<(i64, f64)>)> = arg
                    .series
                    .iter()
                    .map(|s| (s.labels.clone(), arg.window(s, 0).to_vec()))
                    .filter(|(_, points)| !points.is_empty())
                    .collect();
                out.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(QueryValue::Matrix(out))
            }
            _ => Ok(match self.eval(expr)? {
                Value::Scalar(v) => QueryValue::Scalar(t, v[0]),
                Value::String(s) => QueryValue::String(t, s),
                Value::Vector(series) => QueryValue::Vector(
                    series
                        .into_iter()
                        .filter_map(|s| s.values[0].map(|v| (s.labels, t, v)))
                        .collect(),
                ),
            }),
        }
    }

    /// A range query's answer: a matrix sorted by labels.
    pub fn range(&mut self, expr: &Expr) -> Result<QueryValue, Error> {
        let kind = match unwrap_parens(expr) {
            Expr::MatrixSelector(_) | Expr::Subquery(_) => Some("range vector"),
            Expr::StringLiteral(_) => Some("string"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(Error::BadData(format!(
                "invalid expression type \"{kind}\" for range query, must be Scalar or instant Vector"
            )));
        }
        let times: Vec<i64> = (0..self.steps()).map(|i| self.time(i)).collect();
        let mut out = match self.eval(expr)? {
            Value::Scalar(values) => vec![(
                Labels::default(),
                times.iter().copied().zip(values).collect(),
            )],
            Value::String(_) => unreachable!("string literals are refused above"),
            Value::Vector(series) => series
                .into_iter()
                .map(|s| {
                    let points: Vec<(i64, f64)> = times
                        .iter()
                        .zip(s.values)
                        .filter_map(|(t, v)| v.map(|v| (*t, v)))
                        .collect();
                    (s.labels, points)
                })
                .filter(|(_, points)| !points.is_empty())
                .collect(),
        };
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(QueryValue::Matrix(out))
    }

    /// Evaluates an expression for every step.
    pub fn eval(&mut self, expr: &Expr) -> Result<Value, Error> {
        let steps = self.steps();
        match expr {
            Expr::NumberLiteral(n) => Ok(Value::Scalar(vec![n.val; steps])),
            Expr::StringLiteral(s) => Ok(Value::String(s.val.clone())),
            Expr::Paren(p) => self.eval(&p.expr),
            Expr::Unary(u) => match self.eval(&u.expr)? {
                Value::Scalar(v) => Ok(Value::Scalar(v.into_iter().map(|x| -x).collect())),
                Value::Vector(series) => Ok(Value::Vector(
                    series
                        .into_iter()
                        .map(|s| StepSeries {
                            labels: s.labels.without_name(),
                            values: s.values.into_iter().map(|v| v.map(|x| -x)).collect(),
                        })
                        .collect(),
                )),
                Value::String(_) => Err(Error::BadData("unary minus of a string".into())),
            },
            Expr::VectorSelector(vs) => {
                let selected = self.select_instant(vs)?;
                Ok(Value::Vector(
                    selected
                        .into_iter()
                        .map(|(labels, values)| StepSeries {
                            labels,
                            values: values.into_iter().map(|v| v.map(|(_, x)| x)).collect(),
                        })
                        .collect(),
                ))
            }
            Expr::MatrixSelector(_) | Expr::Subquery(_) => Err(Error::BadData(
                "a range vector is not allowed here: give it to a function that takes one".into(),
            )),
            Expr::Call(call) => functions::call(self, call),
            Expr::Aggregate(agg) => aggregate::eval(self, agg),
            Expr::Binary(bin) => binary::eval(self, bin),
            Expr::Extension(_) => Err(Error::Unsupported("an extension expression".into())),
        }
    }

    /// Evaluates an argument that must be a scalar.
    pub fn scalar(&mut self, expr: &Expr) -> Result<Vec<f64>, Error> {
        match self.eval(expr)? {
            Value::Scalar(v) => Ok(v),
            _ => Err(Error::BadData(format!("expected a scalar, got {expr}"))),
        }
    }

    /// Evaluates an argument that must be an instant vector.
    pub fn vector(&mut self, expr: &Expr) -> Result<Vec<StepSeries>, Error> {
        match self.eval(expr)? {
            Value::Vector(v) => Ok(v),
            _ => Err(Error::BadData(format!(
                "expected an instant vector, got {expr}"
            ))),
        }
    }

    /// The window end of each step for a selector with `at` and `offset`.
    fn refs(&self, at: &Option<AtModifier>, offset: &Option<Offset>) -> Vec<i64> {
        let offset = offset_ms(offset);
        let at = at.as_ref().map(|at| match at {
            AtModifier::Start => self.query_start,
            AtModifier::End => self.query_end,
            AtModifier::At(time) => system_time_ms(*time),
        });
        (0..self.steps())
            .map(|i| at.unwrap_or_else(|| self.time(i)) - offset)
            .collect()
    }

    /// An instant selector: for each series and step, the latest sample at most the
    /// lookback before the step (`None` where there is none or it is a stale marker).
    #[allow(clippy::type_complexity)] // (labels, per step (time, value))
    pub fn select_instant(
        &mut self,
        vs: &VectorSelector,
    ) -> Result<Vec<(Labels, Vec<Option<(i64, f64)>>)>, Error> {
        let refs = self.refs(&vs.at, &vs.offset);
        let (lo, hi) = min_max(&refs);
        let series = self.fetch(vs, lo - self.lookback, hi)?;
        let lookback = self.lookback;
        Ok(series
            .into_iter()
            .map(|s| {
                let values = refs
                    .iter()
                    .map(|r| {
                        let at = s.samples.partition_point(|(t, _)| *t <= *r);
                        let (t, v) = *s.samples[..at].last()?;
                        (t >= r - lookback && !is_stale(v)).then_some((t, v))
                    })
                    .collect();
                (s.labels, values)
            })
            .collect())
    }

    /// A range-vector argument: a matrix selector or a subquery.
    pub fn range_arg(&mut self, expr: &Expr) -> Result<RangeArg, Error> {
        match unwrap_parens(expr) {
            Expr::MatrixSelector(ms) => {
                let mut arg = self.matrix_shape(ms);
                let mut series = Vec::new();
                self.matrix_each(ms, &arg, &mut |one| {
                    series.push(one);
                    Ok(())
                })?;
                // In label order, as `fetch` selects them.
                series.sort_by(|a, b| a.labels.cmp(&b.labels));
                arg.series = series;
                Ok(arg)
            }
            Expr::Subquery(sq) => self.subquery(sq),
            other => Err(Error::BadData(format!(
                "expected a range vector, got {other}"
            ))),
        }
    }

    fn subquery(&mut self, sq: &SubqueryExpr) -> Result<RangeArg, Error> {
        let range = millis(sq.range);
        let step = sq
            .step
            .map(millis)
            .filter(|s| *s > 0)
            .unwrap_or(DEFAULT_SUBQUERY_STEP_MS);
        let refs = self.refs(&sq.at, &sq.offset);
        let (lo, hi) = min_max(&refs);
        let mut start = (lo - range).div_euclid(step) * step;
        if start < lo - range {
            start += step;
        }
        // Every inner step holds at least one value: refuse before allocating them.
        let inner_steps = (hi.max(start) - start) / step + 1;
        if inner_steps > self.limits.max_samples as i64 {
            return Err(Error::Execution(format!(
                "the subquery {sq} would evaluate {inner_steps} steps: query processing would load too many samples into memory in query execution"
            )));
        }
        let mut inner = Evaluator {
            source: self.source,
            start,
            end: hi.max(start),
            step,
            lookback: self.lookback,
            limits: self.limits.clone(),
            query_start: self.query_start,
            query_end: self.query_end,
            samples: self.samples,
        };
        let value = inner.eval(&sq.expr)?;
        self.samples = inner.samples;
        let times: Vec<i64> = (0..inner.steps()).map(|i| inner.time(i)).collect();
        let series = match value {
            Value::Vector(series) => series
                .into_iter()
                .map(|s| Series {
                    labels: s.labels,
                    samples: times
                        .iter()
                        .zip(s.values)
                        .filter_map(|(t, v)| v.map(|v| (*t, v)))
                        .collect(),
                })
                .collect(),
            _ => {
                return Err(Error::BadData(
                    "subquery is only allowed on instant vector".into(),
                ));
            }
        };
        Ok(RangeArg {
            series,
            range,
            refs,
            offset: offset_ms(&sq.offset),
        })
    }

    /// The series of a selector with their samples in `[start, end]`.
    /// A matrix selector's windows — range, each step's window end, offset — with no
    /// series yet (see [`Evaluator::matrix_each`]).
    pub fn matrix_shape(&self, ms: &MatrixSelector) -> RangeArg {
        RangeArg {
            series: Vec::new(),
            range: millis(ms.range),
            refs: self.refs(&ms.vs.at, &ms.vs.offset),
            offset: offset_ms(&ms.vs.offset),
        }
    }

    /// Hands each series of a matrix selector with samples in reach of `shape`'s windows
    /// to `visit`, stale markers removed, one at a time in the source's order: a range
    /// function windows a series while its samples are in cache and lets them go, instead
    /// of holding every series' samples first. Counted against the same limits as
    /// [`Evaluator::range_arg`].
    pub fn matrix_each(
        &mut self,
        ms: &MatrixSelector,
        shape: &RangeArg,
        visit: &mut dyn FnMut(Series) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let (lo, hi) = min_max(&shape.refs);
        let matchers = selector_matchers(&ms.vs)?;
        self.check()?;
        let source = self.source;
        let limits = self.limits.clone();
        let mut held = self.samples;
        let mut seen = 0usize;
        let result = source.select_each(&matchers, lo - shape.range, hi, &mut |mut series| {
            seen += 1;
            if seen > limits.max_series {
                return Err(too_many_series(&ms.vs, limits.max_series));
            }
            held += series.samples.len();
            limits.check()?;
            if held > limits.max_samples {
                return Err(too_many_samples());
            }
            // Read-only first: stale markers are rare, and a scan is cheaper than `retain`
            // (folded without an early exit, so that it vectorizes).
            if series
                .samples
                .iter()
                .fold(false, |stale, (_, v)| stale | is_stale(*v))
            {
                series.samples.retain(|(_, v)| !is_stale(*v));
            }
            visit(series)
        });
        self.samples = held;
        result
    }

    /// As [`Evaluator::matrix_each`] for a selector evaluated at one step only, through
    /// the source's summaries ([`Source::summarize_each`]) of the window `[start, end]`:
    /// the samples they held (each run counts as one), checked against the limit but not
    /// yet counted, or `None` when the source cannot summarize. The caller counts them
    /// ([`Evaluator::count`]) once it uses the answer, so that a fallback to the samples
    /// does not count the window twice. Stale markers are removed from the samples (runs
    /// hold none).
    pub fn summarize_each(
        &mut self,
        ms: &MatrixSelector,
        (start, end): (i64, i64),
        visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
    ) -> Result<Option<usize>, Error> {
        let matchers = selector_matchers(&ms.vs)?;
        self.check()?;
        let source = self.source;
        let limits = self.limits.clone();
        let before = self.samples;
        let mut held = 0usize;
        let mut seen = 0usize;
        let done = source.summarize_each(&matchers, start, end, &mut |mut summary| {
            seen += 1;
            if seen > limits.max_series {
                return Err(too_many_series(&ms.vs, limits.max_series));
            }
            held += summary.samples.len() + summary.runs.len();
            limits.check()?;
            if before + held > limits.max_samples {
                return Err(too_many_samples());
            }
            summary.samples.retain(|(_, v)| !is_stale(*v));
            visit(summary)
        })?;
        Ok(done.then_some(held))
    }

    /// The limits the query runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn fetch(&mut self, vs: &VectorSelector, start: i64, end: i64) -> Result<Vec<Series>, Error> {
        let matchers = selector_matchers(vs)?;
        self.check()?;
        let mut series = self.source.select(&matchers, start, end)?;
        // In label order, as Prometheus selects them: topk's and bottomk's ties go to the
        // first series, and answers do not depend on how the storage ordered them.
        series.sort_by(|a, b| a.labels.cmp(&b.labels));
        if series.len() > self.limits.max_series {
            return Err(Error::Execution(format!(
                "the selector {vs} matches {} series, over the limit of {}",
                series.len(),
                self.limits.max_series
            )));
        }
        self.count(series.iter().map(|s| s.samples.len()).sum())?;
        Ok(series)
    }

    /// Fails once the query is cancelled or past its deadline.
    pub fn check(&self) -> Result<(), Error> {
        self.limits.check()
    }

    /// Counts `n` more samples held, failing past the limit as Prometheus does (and when
    /// the query is cancelled or late).
    pub fn count(&mut self, n: usize) -> Result<(), Error> {
        self.limits.check()?;
        self.samples += n;
        if self.samples > self.limits.max_samples {
            return Err(too_many_samples());
        }
        Ok(())
    }
}

/// Prometheus' error for a query over its sample limit.
fn too_many_series(vs: &VectorSelector, max: usize) -> Error {
    Error::Execution(format!(
        "the selector {vs} matches more than {max} series, over the limit"
    ))
}

fn too_many_samples() -> Error {
    Error::Execution(
        "query processing would load too many samples into memory in query execution".into(),
    )
}

/// Every matcher of a selector, its metric name (`foo{…}`) as a `__name__` matcher.
pub fn selector_matchers(vs: &VectorSelector) -> Result<Vec<Matcher>, Error> {
    if !vs.matchers.or_matchers.is_empty() {
        return Err(Error::Unsupported("`or` inside a selector's braces".into()));
    }
    let mut matchers = vs.matchers.matchers.clone();
    if let Some(name) = &vs.name {
        matchers.push(Matcher::new(MatchOp::Equal, METRIC_NAME, name));
    }
    Ok(matchers)
}

/// Builds an instant vector from (labels, step, value) points, failing like Prometheus
/// when two series end up with the same labels and a value at the same step.
pub fn collect(
    steps: usize,
    points: impl IntoIterator<Item = (Labels, usize, f64)>,
) -> Result<Vec<StepSeries>, Error> {
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut out: Vec<StepSeries> = Vec::new();
    for (labels, step, value) in points {
        let at = match index.get(&labels) {
            Some(at) => *at,
            None => {
                index.insert(labels.clone(), out.len());
                out.push(StepSeries {
                    labels,
                    values: vec![None; steps],
                });
                out.len() - 1
            }
        };
        let slot = &mut out[at].values[step];
        if slot.is_some() {
            return Err(Error::Execution(
                "vector cannot contain metrics with the same labelset".into(),
            ));
        }
        *slot = Some(value);
    }
    Ok(out)
}

/// The expression inside any parentheses.
pub fn unwrap_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => unwrap_parens(&p.expr),
        other => other,
    }
}

fn offset_ms(offset: &Option<Offset>) -> i64 {
    match offset {
        None => 0,
        Some(Offset::Pos(d)) => millis(*d),
        Some(Offset::Neg(d)) => -millis(*d),
    }
}

fn system_time_ms(time: SystemTime) -> i64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => millis(d),
        Err(e) => -millis(e.duration()),
    }
}

fn min_max(values: &[i64]) -> (i64, i64) {
    let lo = values.iter().copied().min().unwrap_or(0);
    let hi = values.iter().copied().max().unwrap_or(0);
    (lo, hi)
}

/// Milliseconds of a duration, at most [`MAX_SPAN_MS`]: with times bounded the same way,
/// sums and differences of the two never overflow.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis())
        .unwrap_or(i64::MAX)
        .min(crate::MAX_SPAN_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Labels;

    #[test]
    fn window_cursor_finds_the_same_windows_as_binary_search() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |modulo: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % modulo) as i64
        };
        for _ in 0..300 {
            // Ascending times with gaps of any size, windows of any length and steps that
            // skip over whole stretches or stay put (as `@` makes them).
            let mut time = next(100);
            let samples: Vec<(i64, f64)> = (0..next(400))
                .map(|i| {
                    time += 1 + next(if i % 50 == 0 { 5_000 } else { 30 });
                    (time, 0.0)
                })
                .collect();
            let series = Series {
                labels: Labels::new(Vec::new()),
                samples,
            };
            let mut end = next(200) - 100;
            let refs: Vec<i64> = (0..next(60) + 1)
                .map(|_| {
                    end += next(4) * next(800);
                    end
                })
                .collect();
            let arg = RangeArg {
                series: Vec::new(),
                range: next(2_000),
                refs,
                offset: 0,
            };
            let mut cursor = WindowCursor::default();
            for step in 0..arg.refs.len() {
                assert_eq!(
                    arg.window_from(&series, step, &mut cursor),
                    arg.window(&series, step),
                    "step {step} of {:?}, range {}",
                    arg.refs,
                    arg.range
                );
            }
        }
    }
}
