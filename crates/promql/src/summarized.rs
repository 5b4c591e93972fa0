//! `count`, `sum`, `avg`, `min` and `max` `_over_time` of a range selector evaluated at one
//! step (an instant query, or a range query of one step) from the source's
//! pre-aggregates ([`Source::summarize_each`](crate::Source::summarize_each)).
//!
//! Why: a stat panel's `max_over_time(m[7d])` would otherwise decode a week of samples of
//! every series; whole stored chunks inside the window answer from their index entries,
//! and only the window's ragged ends are decoded. Range queries of several steps keep the
//! sample path: their windows move by less than a chunk's span.
//!
//! `count`, `min` and `max` are the numbers the sample path gives. `sum` and `avg` add the
//! runs' sums (plain sums in the source, exact for integers) with the compensated sum, so
//! they can differ from the sample path in the last bits. A mean whose sum overflows falls
//! back to the samples (Prometheus 2.42's incremental mean), as does a source that cannot
//! summarize.

use promql_parser::parser::Expr;

use crate::Error;
use crate::eval::{Evaluator, StepSeries, Value, unwrap_parens};
use crate::functions::{extreme, finish_windows, kahan_sum};
use crate::{SampleRun, WindowSummary};

/// The value of `name` (one of the five functions) over a matrix selector at the query's
/// only step, from summaries; `None` when that cannot be done (more than one step, not a
/// plain selector, a source that does not summarize, a sum that overflows).
pub(crate) fn over_time(
    ev: &mut Evaluator<'_>,
    expr: &Expr,
    name: &str,
) -> Result<Option<Value>, Error> {
    let Expr::MatrixSelector(ms) = unwrap_parens(expr) else {
        return Ok(None);
    };
    let shape = ev.matrix_shape(ms);
    let [end] = shape.refs[..] else {
        return Ok(None);
    };
    let (mut out, mut silent, mut exact) = (Vec::new(), Vec::new(), true);
    let held = ev.summarize_each(ms, (end - shape.range, end), &mut |summary| {
        match fold(name, &summary) {
            Some(Some(value)) => out.push(StepSeries {
                labels: summary.labels,
                values: vec![Some(value)],
            }),
            Some(None) => silent.push(summary.labels),
            None => exact = false,
        }
        Ok(())
    })?;
    let Some(held) = held.filter(|_| exact) else {
        return Ok(None);
    };
    ev.count(held)?;
    let count = out.len();
    finish_windows(ev, out, &silent, false, count).map(Some)
}

/// `name` over one series' window: `Some(None)` for no sample (no output series), `None`
/// when the summary cannot give the sample path's answer.
fn fold(name: &str, summary: &WindowSummary) -> Option<Option<f64>> {
    let (runs, samples) = (&summary.runs, &summary.samples);
    let count = runs.iter().map(|r| r.count).sum::<u64>() + samples.len() as u64;
    if count == 0 {
        return Some(None);
    }
    let values = || runs_and(runs, samples);
    let value = match name {
        "count_over_time" => count as f64,
        "min_over_time" => extreme(
            runs.iter()
                .map(|r| r.min)
                .chain(samples.iter().map(|s| s.1)),
            |a, b| b < a,
        ),
        "max_over_time" => extreme(
            runs.iter()
                .map(|r| r.max)
                .chain(samples.iter().map(|s| s.1)),
            |a, b| b > a,
        ),
        "sum_over_time" => kahan_sum(&values()),
        "avg_over_time" => {
            let sum = kahan_sum(&values());
            if !sum.is_finite() {
                return None;
            }
            sum / count as f64
        }
        _ => return None,
    };
    Some(Some(value))
}

/// The runs' sums and the samples' values, as the compensated sum takes them.
fn runs_and(runs: &[SampleRun], samples: &[(i64, f64)]) -> Vec<(i64, f64)> {
    runs.iter()
        .map(|r| (0, r.sum))
        .chain(samples.iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Labels;

    fn summary(runs: &[SampleRun], samples: &[f64]) -> WindowSummary {
        WindowSummary {
            labels: Labels::default(),
            runs: runs.to_vec(),
            samples: samples
                .iter()
                .enumerate()
                .map(|(i, v)| (i as i64, *v))
                .collect(),
        }
    }

    #[test]
    fn runs_fold_with_the_samples_around_them() {
        let run = SampleRun {
            count: 4,
            sum: 10.0,
            min: 1.0,
            max: 4.0,
        };
        let s = summary(&[run, run], &[0.5, 7.0]);
        assert_eq!(fold("count_over_time", &s), Some(Some(10.0)));
        assert_eq!(fold("sum_over_time", &s), Some(Some(27.5)));
        assert_eq!(fold("avg_over_time", &s), Some(Some(2.75)));
        assert_eq!(fold("min_over_time", &s), Some(Some(0.5)));
        assert_eq!(fold("max_over_time", &s), Some(Some(7.0)));
        // Runs alone; samples alone; nothing.
        assert_eq!(
            fold("max_over_time", &summary(&[run], &[])),
            Some(Some(4.0))
        );
        assert_eq!(
            fold("min_over_time", &summary(&[], &[3.0, 2.0])),
            Some(Some(2.0))
        );
        assert_eq!(fold("sum_over_time", &summary(&[], &[])), Some(None));
        // NaN samples: min and max skip them, as the sample path does.
        assert_eq!(
            fold("min_over_time", &summary(&[run], &[f64::NAN])),
            Some(Some(1.0))
        );
        // A mean whose sum overflows is left to the sample path.
        let huge = SampleRun {
            count: 1,
            sum: f64::MAX,
            min: f64::MAX,
            max: f64::MAX,
        };
        assert_eq!(fold("avg_over_time", &summary(&[huge, huge], &[])), None);
        assert_eq!(
            fold("sum_over_time", &summary(&[huge, huge], &[])),
            Some(Some(f64::INFINITY))
        );
    }
}

#[cfg(test)]
mod fallback_tests {
    use crate::{
        Error, Labels, Limits, Matcher, QueryValue, SampleRun, Series, Source, WindowSummary,
        instant_query,
    };

    /// One series: as samples, ten of them; as a summary, two runs whose sums overflow, so
    /// that `avg_over_time` falls back to the samples.
    struct Overflowing;

    fn labels() -> Labels {
        Labels::new(vec![("__name__".into(), "m".into())])
    }

    impl Source for Overflowing {
        fn select(&self, _: &[Matcher], _: i64, _: i64) -> Result<Vec<Series>, Error> {
            Ok(vec![Series {
                labels: labels(),
                samples: (1..=10).map(|i| (i * 1_000, i as f64)).collect(),
            }])
        }

        fn summarize_each(
            &self,
            _: &[Matcher],
            _: i64,
            _: i64,
            visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
        ) -> Result<bool, Error> {
            let run = SampleRun {
                count: 1,
                sum: f64::MAX,
                min: f64::MAX,
                max: f64::MAX,
            };
            visit(WindowSummary {
                labels: labels(),
                runs: vec![run, run],
                samples: Vec::new(),
            })?;
            Ok(true)
        }
    }

    #[test]
    fn a_fallback_counts_the_window_once() {
        // The samples alone fit the limit; with the summary's two runs counted too, they
        // would not.
        let limits = Limits {
            max_samples: 11,
            ..Limits::default()
        };
        let answer = instant_query(
            &Overflowing,
            "avg_over_time(m[1m])",
            10_000,
            300_000,
            limits,
        )
        .unwrap();
        let QueryValue::Vector(v) = answer else {
            panic!("{answer:?}");
        };
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].2, 5.5, "the mean of the samples, not of the runs");
    }
}
