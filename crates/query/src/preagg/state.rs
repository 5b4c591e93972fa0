//! One aggregate's partial state while folding, as DataFusion's partial state for the same
//! aggregate ([`State::partial_value`]), merged across shards ([`State::merge`]) and
//! finished into the aggregate's value ([`State::final_value`]) by the direct path.

use datafusion::common::ScalarValue;

use super::plan::{AggKind, AggSpec};
use super::row_value;
use super::values::{combine_max, combine_min, combine_sum};
use crate::functions::first_last::End;

/// One aggregate's partial state.
#[derive(Debug, Clone)]
pub(crate) enum State {
    Count(i64),
    Sum(Option<ScalarValue>),
    Min(Option<ScalarValue>),
    Max(Option<ScalarValue>),
    Avg { count: u64, sum: f64 },
    Edge(End, Option<(i64, ScalarValue)>),
    Row(row_value::Best),
}

impl State {
    pub(crate) fn new(spec: &AggSpec) -> Self {
        match spec.kind {
            AggKind::CountRows | AggKind::Count => State::Count(0),
            AggKind::Sum => State::Sum(None),
            AggKind::Min => State::Min(None),
            AggKind::Max => State::Max(None),
            AggKind::Avg => State::Avg { count: 0, sum: 0.0 },
            AggKind::First => State::Edge(End::First, None),
            AggKind::Last => State::Edge(End::Last, None),
            AggKind::RowValue(_) => State::Row(None),
        }
    }

    /// Offers a (time, value) to a first/last state.
    pub(crate) fn edge(&mut self, time: i64, value: ScalarValue) {
        if let State::Edge(end, best) = self {
            let better = match best {
                None => true,
                Some((t, v)) => end.beats(time, &value, *t, v),
            };
            if better {
                *best = Some((time, value));
            }
        }
    }

    /// Folds `other`, a state of the same aggregate over other rows, into this one.
    pub(crate) fn merge(&mut self, other: State, spec: &AggSpec) {
        match (self, other) {
            (State::Count(a), State::Count(b)) => *a += b,
            (State::Sum(a), State::Sum(Some(b))) => combine_sum(a, b),
            (State::Min(a), State::Min(Some(b))) => combine_min(a, b),
            (State::Max(a), State::Max(Some(b))) => combine_max(a, b),
            (
                State::Avg { count, sum },
                State::Avg {
                    count: other_count,
                    sum: other_sum,
                },
            ) => {
                *count += other_count;
                *sum += other_sum;
            }
            (state @ State::Edge(..), State::Edge(_, Some((time, value)))) => {
                state.edge(time, value)
            }
            (State::Row(best), State::Row(Some((time, value)))) => {
                if let AggKind::RowValue(end) = spec.kind {
                    row_value::offer(best, end, time, || value);
                }
            }
            _ => {}
        }
    }

    /// Part `part` of the partial state as a scalar; `null` is a null of the part's type.
    /// Row values are built by [`row_value::state_part`], which knows the group.
    pub(crate) fn partial_value(&self, part: usize, null: &ScalarValue) -> ScalarValue {
        match (self, part) {
            (State::Count(n), _) => ScalarValue::Int64(Some(*n)),
            (State::Sum(v) | State::Min(v) | State::Max(v), _) => v.clone().unwrap_or(null.clone()),
            // A group no value reached has a null count, as DataFusion's own partial state
            // has: its final step would otherwise divide 0 by 0.
            (State::Avg { count, .. }, 0) => ScalarValue::UInt64((*count > 0).then_some(*count)),
            (State::Avg { count, sum }, _) => ScalarValue::Float64((*count > 0).then_some(*sum)),
            (State::Edge(_, best), 0) => best.as_ref().map_or(null.clone(), |(_, v)| v.clone()),
            (State::Edge(_, best), _) => {
                ScalarValue::TimestampNanosecond(best.as_ref().map(|(t, _)| *t), None)
            }
            (State::Row(_), _) => null.clone(),
        }
    }

    /// The aggregate's value; `null` is a null of the value's type.
    pub(crate) fn final_value(&self, null: &ScalarValue) -> ScalarValue {
        match self {
            State::Count(n) => ScalarValue::Int64(Some(*n)),
            State::Sum(v) | State::Min(v) | State::Max(v) => v.clone().unwrap_or(null.clone()),
            State::Avg { count, sum } => {
                ScalarValue::Float64((*count > 0).then(|| sum / *count as f64))
            }
            State::Edge(_, best) => best.as_ref().map_or(null.clone(), |(_, v)| v.clone()),
            State::Row(best) => best
                .as_ref()
                .and_then(|(_, v)| v.clone())
                .unwrap_or(null.clone()),
        }
    }
}
