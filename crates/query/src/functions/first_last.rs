//! `first(x)` and `last(x)`: the value of `x` at the earliest / latest time, as InfluxQL's
//! and TDengine's functions of the same names.
//!
//! Both are aggregates of two arguments, `first(x, time)`; the one-argument form written in
//! SQL gets the table's `time` column from [`super::rewrite`]. Null values of `x` are
//! skipped (the first *value*). Ties — several rows at the same extreme time, which happens
//! only across series — go to the smallest value for `first` and the largest for `last`, so
//! the answer does not depend on the order rows are read in (shards, parts, threads), and
//! the pre-aggregate path gives the same one.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit, TimestampNanosecondType};
use datafusion::common::{Result as DfResult, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

/// Which end of time an aggregate keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum End {
    /// The earliest time: `first`.
    First,
    /// The latest time: `last`.
    Last,
}

impl End {
    /// Whether `(time, value)` beats the current best `(best_time, best_value)`.
    pub(crate) fn beats(
        self,
        time: i64,
        value: &ScalarValue,
        best_time: i64,
        best_value: &ScalarValue,
    ) -> bool {
        let by_value = value.partial_cmp(best_value).unwrap_or(Ordering::Equal);
        match self {
            End::First => time < best_time || (time == best_time && by_value == Ordering::Less),
            End::Last => time > best_time || (time == best_time && by_value == Ordering::Greater),
        }
    }
}

/// The `first` / `last` aggregate function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct FirstLast {
    end: End,
    signature: Signature,
}

impl FirstLast {
    pub(crate) fn new(end: End) -> Self {
        Self {
            end,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

/// Timestamps in nanoseconds, the type the time argument is coerced to.
const TIME_TYPE: DataType = DataType::Timestamp(TimeUnit::Nanosecond, None);

impl AggregateUDFImpl for FirstLast {
    fn name(&self) -> &str {
        match self.end {
            End::First => "first",
            End::Last => "last",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> DfResult<Vec<DataType>> {
        match arg_types {
            [value] => Ok(vec![value.clone()]),
            [value, DataType::Timestamp(..) | DataType::Int64] => {
                Ok(vec![value.clone(), TIME_TYPE])
            }
            [_, other] => plan_err!(
                "{}(value, time): time must be a timestamp, not {other}",
                self.name()
            ),
            _ => plan_err!(
                "{}() takes one argument (the value; time is the table's time column) \
                 or two (value, time)",
                self.name()
            ),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        match arg_types.first() {
            Some(value) => Ok(value.clone()),
            None => plan_err!("{}() needs an argument", self.name()),
        }
    }

    fn accumulator(&self, args: AccumulatorArgs) -> DfResult<Box<dyn Accumulator>> {
        let value_type = args.return_field.data_type().clone();
        Ok(Box::new(FirstLastAccumulator {
            end: self.end,
            best: None,
            null: ScalarValue::try_from(&value_type)?,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> DfResult<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                format!("{}[value]", args.name),
                args.return_type().clone(),
                true,
            )),
            Arc::new(Field::new(format!("{}[time]", args.name), TIME_TYPE, true)),
        ])
    }
}

/// The best `(time, value)` seen so far.
#[derive(Debug)]
struct FirstLastAccumulator {
    end: End,
    best: Option<(i64, ScalarValue)>,
    /// A null of the value type: the answer when no row had a value.
    null: ScalarValue,
}

impl FirstLastAccumulator {
    /// Folds in rows `(values[i], times[i])`, skipping null values and null times.
    fn fold(&mut self, values: &ArrayRef, times: &ArrayRef) -> DfResult<()> {
        if values.len() != times.len() {
            return exec_err!(
                "first/last: {} values but {} times",
                values.len(),
                times.len()
            );
        }
        let times = cast(times, &TIME_TYPE)?;
        let times = times.as_primitive::<TimestampNanosecondType>();
        // The extreme time among rows with a value, then the best value at that time.
        let mut extreme: Option<i64> = None;
        for row in 0..values.len() {
            if values.is_null(row) || times.is_null(row) {
                continue;
            }
            let time = times.value(row);
            extreme = Some(match (extreme, self.end) {
                (None, _) => time,
                (Some(t), End::First) => t.min(time),
                (Some(t), End::Last) => t.max(time),
            });
        }
        let Some(extreme) = extreme else {
            return Ok(());
        };
        if let Some((best_time, _)) = &self.best {
            let worse = match self.end {
                End::First => extreme > *best_time,
                End::Last => extreme < *best_time,
            };
            if worse {
                return Ok(());
            }
        }
        for row in 0..values.len() {
            if values.is_null(row) || times.is_null(row) || times.value(row) != extreme {
                continue;
            }
            let value = ScalarValue::try_from_array(values, row)?;
            let better = match &self.best {
                None => true,
                Some((best_time, best_value)) => {
                    self.end.beats(extreme, &value, *best_time, best_value)
                }
            };
            if better {
                self.best = Some((extreme, value));
            }
        }
        Ok(())
    }
}

impl Accumulator for FirstLastAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> DfResult<()> {
        match values {
            [value, time] => self.fold(value, time),
            _ => exec_err!(
                "first/last got {} arguments; the time argument should have been added \
                 when the query was planned",
                values.len()
            ),
        }
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> DfResult<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> DfResult<Vec<ScalarValue>> {
        Ok(match &self.best {
            Some((time, value)) => vec![
                value.clone(),
                ScalarValue::TimestampNanosecond(Some(*time), None),
            ],
            None => vec![
                self.null.clone(),
                ScalarValue::TimestampNanosecond(None, None),
            ],
        })
    }

    fn evaluate(&mut self) -> DfResult<ScalarValue> {
        Ok(match &self.best {
            Some((_, value)) => value.clone(),
            None => self.null.clone(),
        })
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.best.as_ref().map_or(0, |(_, v)| v.size()) + self.null.size()
    }
}
