//! Time buckets of GROUP BY keys. Fixed-width buckets (`date_bin`/`time_bucket` with a day
//! or shorter interval, `date_trunc` up to a week, `time` itself) are a [`Grid`] computed in
//! integer arithmetic, exactly as DataFusion computes them; anything else (month intervals,
//! time zones) stays a DataFusion expression evaluated over the times.
//!
//! Times inside a series are sorted, so the rows of one bucket are a run; a grid finds the
//! run's end by exponential search instead of bucketing every row.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, TimestampNanosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, IntervalMonthDayNanoType, TimeUnit};
use datafusion::common::{DataFusionError, Result as DfResult, ScalarValue};
use datafusion::physical_expr::PhysicalExpr;

use super::plan::time_schema;

const NANOS_PER_DAY: i64 = 86_400_000_000_000;

/// Buckets `origin + k × width` for every integer `k`; a time's bucket is the last one at or
/// before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grid {
    /// Bucket width in nanoseconds, at least 1.
    pub width: i64,
    /// A bucket start, in nanoseconds since the epoch.
    pub origin: i64,
}

impl Grid {
    /// `time` itself: every distinct time is its own bucket.
    pub(crate) const IDENTITY: Grid = Grid {
        width: 1,
        origin: 0,
    };

    /// The start of the bucket holding `time`; `None` where it does not fit an i64
    /// (DataFusion fails there too).
    pub(crate) fn bucket(&self, time: i64) -> Option<i64> {
        let diff = time.checked_sub(self.origin)?;
        let delta = diff.div_euclid(self.width).checked_mul(self.width)?;
        self.origin.checked_add(delta)
    }

    /// A `date_bin(interval, time [, origin])` grid, from the interval and origin literals;
    /// `None` for month intervals, non-positive widths and origins of other types.
    pub(crate) fn date_bin(interval: &ScalarValue, origin: Option<&ScalarValue>) -> Option<Grid> {
        let width = match interval {
            ScalarValue::IntervalMonthDayNano(Some(v)) => {
                let (months, days, nanos) = IntervalMonthDayNanoType::to_parts(*v);
                if months != 0 {
                    return None;
                }
                i64::from(days)
                    .checked_mul(NANOS_PER_DAY)?
                    .checked_add(nanos)?
            }
            ScalarValue::IntervalDayTime(Some(v)) => i64::from(v.days)
                .checked_mul(NANOS_PER_DAY)?
                .checked_add(i64::from(v.milliseconds).checked_mul(1_000_000)?)?,
            _ => return None,
        };
        if width <= 0 {
            return None;
        }
        let origin = match origin {
            None => 0,
            Some(ScalarValue::TimestampNanosecond(Some(v), _)) => *v,
            Some(ScalarValue::TimestampMicrosecond(Some(v), _)) => v.checked_mul(1_000)?,
            Some(ScalarValue::TimestampMillisecond(Some(v), _)) => v.checked_mul(1_000_000)?,
            Some(ScalarValue::TimestampSecond(Some(v), _)) => v.checked_mul(1_000_000_000)?,
            Some(_) => return None,
        };
        Some(Grid { width, origin })
    }

    /// A `date_trunc(unit, time)` grid for units of fixed width (a week at most; weeks
    /// start on Monday); `None` for months and longer.
    pub(crate) fn date_trunc(unit: &str) -> Option<Grid> {
        let width = match unit.to_ascii_lowercase().as_str() {
            "microsecond" => 1_000,
            "millisecond" => 1_000_000,
            "second" => 1_000_000_000,
            "minute" => 60_000_000_000,
            "hour" => 3_600_000_000_000,
            "day" => NANOS_PER_DAY,
            // 1970-01-05 was a Monday.
            "week" => {
                return Some(Grid {
                    width: 7 * NANOS_PER_DAY,
                    origin: 4 * NANOS_PER_DAY,
                });
            }
            _ => return None,
        };
        Some(Grid { width, origin: 0 })
    }
}

/// One time key of a GROUP BY.
#[derive(Debug, Clone)]
pub(crate) enum TimeKey {
    /// Fixed-width buckets.
    Grid(Grid),
    /// Any other function of time that never decreases as time grows, rebound to read
    /// column 0 of a one-column batch of times and evaluated by DataFusion.
    Expr(Arc<dyn PhysicalExpr>),
}

impl std::fmt::Display for TimeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeKey::Grid(Grid { width, origin }) => {
                write!(f, "bucket(width={width}ns, origin={origin})")
            }
            TimeKey::Expr(expr) => write!(f, "{expr}"),
        }
    }
}

impl TimeKey {
    /// The bucket of each time.
    pub(crate) fn buckets(&self, times: &[i64]) -> DfResult<Vec<i64>> {
        match self {
            TimeKey::Grid(grid) => times
                .iter()
                .map(|t| grid.bucket(*t).ok_or_else(|| overflow(*t)))
                .collect(),
            TimeKey::Expr(expr) => evaluate(expr, times),
        }
    }

    /// The bucket of one time.
    pub(crate) fn bucket(&self, time: i64) -> DfResult<i64> {
        match self {
            TimeKey::Grid(grid) => grid.bucket(time).ok_or_else(|| overflow(time)),
            TimeKey::Expr(expr) => Ok(evaluate(expr, &[time])?[0]),
        }
    }
}

fn overflow(time: i64) -> DataFusionError {
    DataFusionError::Execution(format!("time bucket of {time} overflows a timestamp"))
}

/// `expr` evaluated over `times`, as i64.
fn evaluate(expr: &Arc<dyn PhysicalExpr>, times: &[i64]) -> DfResult<Vec<i64>> {
    let array: ArrayRef = Arc::new(TimestampNanosecondArray::from(times.to_vec()));
    let batch = RecordBatch::try_new(time_schema(), vec![array])?;
    let out = expr.evaluate(&batch)?.into_array(times.len())?;
    let out = cast(&out, &DataType::Int64)?;
    let out = out.as_primitive::<Int64Type>();
    if out.null_count() > 0 {
        return Err(DataFusionError::Internal(
            "time bucket of a time is null".into(),
        ));
    }
    Ok(out.values().to_vec())
}

/// Where rows of sorted `times` split into runs of equal buckets under `keys`: calls
/// `run(start, end, buckets)` for each run in order.
pub(crate) fn for_each_run(
    keys: &[&TimeKey],
    times: &[i64],
    mut run: impl FnMut(usize, usize, &[i64]) -> DfResult<()>,
) -> DfResult<()> {
    let rows = times.len();
    if rows == 0 {
        return Ok(());
    }
    if keys.is_empty() {
        return run(0, rows, &[]);
    }
    let grids: Option<Vec<Grid>> = keys
        .iter()
        .map(|k| match k {
            TimeKey::Grid(g) => Some(*g),
            TimeKey::Expr(_) => None,
        })
        .collect();
    if let Some(grids) = grids {
        let mut buckets = vec![0i64; grids.len()];
        let mut start = 0;
        while start < rows {
            let time = times[start];
            // The run ends at the first time past the nearest bucket end.
            let mut limit = i64::MAX;
            for (bucket, grid) in buckets.iter_mut().zip(&grids) {
                *bucket = grid.bucket(time).ok_or_else(|| overflow(time))?;
                limit = limit.min(bucket.saturating_add(grid.width));
            }
            let end = first_at_or_after(times, start + 1, limit);
            run(start, end, &buckets)?;
            start = end;
        }
        return Ok(());
    }
    let columns: Vec<Vec<i64>> = keys
        .iter()
        .map(|k| k.buckets(times))
        .collect::<DfResult<_>>()?;
    let mut buckets = vec![0i64; columns.len()];
    let mut start = 0;
    while start < rows {
        let mut end = start + 1;
        while end < rows && columns.iter().all(|c| c[end] == c[start]) {
            end += 1;
        }
        for (bucket, column) in buckets.iter_mut().zip(&columns) {
            *bucket = column[start];
        }
        run(start, end, &buckets)?;
        start = end;
    }
    Ok(())
}

/// The first index `i >= from` with `times[i] >= limit` (`times.len()` if none), for sorted
/// `times`: exponential then binary search, so a run of n rows costs O(log n).
fn first_at_or_after(times: &[i64], from: usize, limit: i64) -> usize {
    let rows = times.len();
    let mut step = 1;
    let mut low = from;
    loop {
        let probe = low.saturating_add(step - 1);
        if probe >= rows {
            break;
        }
        if times[probe] >= limit {
            return low + times[low..=probe].partition_point(|t| *t < limit);
        }
        low = probe + 1;
        step *= 2;
    }
    low.min(rows) + times[low.min(rows)..].partition_point(|t| *t < limit)
}

/// The Arrow type of bucket values.
pub(crate) fn bucket_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, None)
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::Field;
    use datafusion::arrow::datatypes::{IntervalDayTime, IntervalMonthDayNano};
    use datafusion::config::ConfigOptions;
    use datafusion::physical_expr::ScalarFunctionExpr;
    use datafusion::physical_expr::expressions::{Column, Literal};

    use super::*;

    fn df_date_bin(width_nanos: i64, origin: Option<i64>) -> Arc<dyn PhysicalExpr> {
        let interval =
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, width_nanos)));
        let mut args: Vec<Arc<dyn PhysicalExpr>> = vec![
            Arc::new(Literal::new(interval)),
            Arc::new(Column::new("time", 0)),
        ];
        if let Some(o) = origin {
            args.push(Arc::new(Literal::new(ScalarValue::TimestampNanosecond(
                Some(o),
                None,
            ))));
        }
        function(datafusion::functions::datetime::date_bin(), args)
    }

    fn function(
        udf: Arc<datafusion::logical_expr::ScalarUDF>,
        args: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Arc<dyn PhysicalExpr> {
        let return_field = Arc::new(Field::new("out", bucket_type(), true));
        let name = udf.name().to_string();
        Arc::new(ScalarFunctionExpr::new(
            &name,
            udf,
            args,
            return_field,
            Arc::new(ConfigOptions::default()),
        ))
    }

    /// Seeded times spread over ±2 years around the epoch and 2016.
    fn times() -> Vec<i64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut out = vec![
            0,
            -1,
            1,
            NANOS_PER_DAY,
            -NANOS_PER_DAY,
            1_451_606_400_000_000_000,
        ];
        for _ in 0..2_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let span = 2 * 365 * NANOS_PER_DAY;
            let offset = (state % (2 * span as u64)) as i64 - span;
            let base = if state & 1 == 0 {
                0
            } else {
                1_451_606_400_000_000_000
            };
            out.push(base + offset);
        }
        out
    }

    #[test]
    fn grid_date_bin_equals_datafusion() {
        let times = times();
        for width in [
            1,
            7,
            1_000_000_000,
            60_000_000_000,
            3_600_000_000_000,
            7 * NANOS_PER_DAY,
        ] {
            for origin in [
                None,
                Some(0),
                Some(123_456_789),
                Some(-5 * NANOS_PER_DAY + 17),
            ] {
                let interval =
                    ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, width)));
                let origin_value = origin.map(|o| ScalarValue::TimestampNanosecond(Some(o), None));
                let grid = Grid::date_bin(&interval, origin_value.as_ref()).unwrap();
                let ours = TimeKey::Grid(grid).buckets(&times).unwrap();
                let theirs = TimeKey::Expr(df_date_bin(width, origin))
                    .buckets(&times)
                    .unwrap();
                assert_eq!(ours, theirs, "width {width} origin {origin:?}");
            }
        }
    }

    #[test]
    fn grid_date_trunc_equals_datafusion() {
        let times = times();
        for unit in [
            "second",
            "minute",
            "hour",
            "day",
            "week",
            "millisecond",
            "microsecond",
        ] {
            let grid = Grid::date_trunc(unit).unwrap();
            let expr = function(
                datafusion::functions::datetime::date_trunc(),
                vec![
                    Arc::new(Literal::new(ScalarValue::Utf8(Some(unit.into())))),
                    Arc::new(Column::new("time", 0)),
                ],
            );
            let ours = TimeKey::Grid(grid).buckets(&times).unwrap();
            let theirs = TimeKey::Expr(expr).buckets(&times).unwrap();
            assert_eq!(ours, theirs, "unit {unit}");
        }
        assert_eq!(Grid::date_trunc("month"), None);
    }

    #[test]
    fn day_time_intervals_and_months() {
        let day = ScalarValue::IntervalDayTime(Some(IntervalDayTime::new(1, 500)));
        assert_eq!(
            Grid::date_bin(&day, None),
            Some(Grid {
                width: NANOS_PER_DAY + 500_000_000,
                origin: 0
            })
        );
        let month = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(1, 0, 0)));
        assert_eq!(Grid::date_bin(&month, None), None);
        let zero = ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(0, 0, 0)));
        assert_eq!(Grid::date_bin(&zero, None), None);
    }

    #[test]
    fn runs_split_where_buckets_change_for_every_run_length() {
        let grid = TimeKey::Grid(Grid {
            width: 10,
            origin: 0,
        });
        for length in 1..=100usize {
            // Buckets 0, 10, 20 hold `length`, 1 and `length` rows.
            let mut times: Vec<i64> = (0..length).map(|i| (i * 9 / length) as i64).collect();
            times.push(15);
            times.extend((0..length).map(|i| 20 + (i * 9 / length) as i64));
            let mut runs = Vec::new();
            for_each_run(&[&grid], &times, |start, end, buckets| {
                runs.push((start, end, buckets[0]));
                Ok(())
            })
            .unwrap();
            assert_eq!(
                runs,
                vec![
                    (0, length, 0),
                    (length, length + 1, 10),
                    (length + 1, 2 * length + 1, 20)
                ],
                "length {length}"
            );
        }
    }

    #[test]
    fn no_time_key_is_one_run_and_expressions_split_like_grids() {
        let times: Vec<i64> = (0..50).map(|i| i * 7).collect();
        let mut runs = Vec::new();
        for_each_run(&[], &times, |s, e, _| {
            runs.push((s, e));
            Ok(())
        })
        .unwrap();
        assert_eq!(runs, vec![(0, 50)]);
        let grid = TimeKey::Grid(Grid {
            width: 60,
            origin: 0,
        });
        let expr = TimeKey::Expr(df_date_bin(60, None));
        let collect = |key: &TimeKey| {
            let mut runs = Vec::new();
            for_each_run(&[key], &times, |s, e, b| {
                runs.push((s, e, b[0]));
                Ok(())
            })
            .unwrap();
            runs
        };
        assert_eq!(collect(&grid), collect(&expr));
    }
}
