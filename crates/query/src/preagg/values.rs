//! Scalar helpers of the pre-aggregate fold: combining partial values the way DataFusion's
//! accumulators do (wrapping integer sums, floats ordered with NaN above everything), and
//! reading values from pre-aggregates and decoded value slices.

use datafusion::common::ScalarValue;
use strata_storage::column::Values;
use strata_storage::part::PreAgg;

/// Whether a float is smaller under Arrow's order for min/max (NaN above everything).
pub(super) fn float_lt(a: f64, b: f64) -> bool {
    a.total_cmp(&b).is_lt()
}

pub(super) fn combine_min(current: &mut Option<ScalarValue>, value: ScalarValue) {
    let replace = match (current.as_ref(), &value) {
        (None, _) => true,
        (Some(ScalarValue::Float64(Some(c))), ScalarValue::Float64(Some(v))) => float_lt(*v, *c),
        (Some(c), v) => v < c,
    };
    if replace {
        *current = Some(value);
    }
}

pub(super) fn combine_max(current: &mut Option<ScalarValue>, value: ScalarValue) {
    let replace = match (current.as_ref(), &value) {
        (None, _) => true,
        (Some(ScalarValue::Float64(Some(c))), ScalarValue::Float64(Some(v))) => float_lt(*c, *v),
        (Some(c), v) => v > c,
    };
    if replace {
        *current = Some(value);
    }
}

pub(super) fn combine_sum(current: &mut Option<ScalarValue>, value: ScalarValue) {
    *current = Some(match (current.take(), value) {
        (None, v) => v,
        (Some(ScalarValue::Float64(Some(a))), ScalarValue::Float64(Some(b))) => {
            ScalarValue::Float64(Some(a + b))
        }
        (Some(ScalarValue::Int64(Some(a))), ScalarValue::Int64(Some(b))) => {
            ScalarValue::Int64(Some(a.wrapping_add(b)))
        }
        (Some(ScalarValue::UInt64(Some(a))), ScalarValue::UInt64(Some(b))) => {
            ScalarValue::UInt64(Some(a.wrapping_add(b)))
        }
        (Some(a), _) => a,
    });
}

pub(super) fn preagg_min_max(p: &PreAgg, min: bool) -> Option<ScalarValue> {
    Some(match *p {
        PreAgg::Float {
            min: lo, max: hi, ..
        } => ScalarValue::Float64(Some(if min { lo } else { hi })),
        PreAgg::Integer {
            min: lo, max: hi, ..
        } => ScalarValue::Int64(Some(if min { lo } else { hi })),
        PreAgg::Unsigned {
            min: lo, max: hi, ..
        } => ScalarValue::UInt64(Some(if min { lo } else { hi })),
        _ => return None,
    })
}

pub(crate) fn preagg_edge(p: &PreAgg, first: bool) -> Option<ScalarValue> {
    Some(match *p {
        PreAgg::Float {
            first: a, last: b, ..
        } => ScalarValue::Float64(Some(if first { a } else { b })),
        PreAgg::Integer {
            first: a, last: b, ..
        } => ScalarValue::Int64(Some(if first { a } else { b })),
        PreAgg::Unsigned {
            first: a, last: b, ..
        } => ScalarValue::UInt64(Some(if first { a } else { b })),
        PreAgg::Boolean {
            first: a, last: b, ..
        } => ScalarValue::Boolean(Some(if first { a } else { b })),
        PreAgg::String { .. } => return None,
    })
}

pub(super) fn scalar(values: &Values, index: usize) -> ScalarValue {
    match values {
        Values::Float(v) => ScalarValue::Float64(Some(v[index])),
        Values::Integer(v) => ScalarValue::Int64(Some(v[index])),
        Values::Unsigned(v) => ScalarValue::UInt64(Some(v[index])),
        Values::Boolean(v) => ScalarValue::Boolean(Some(v[index])),
        Values::String(v) => ScalarValue::Utf8(Some(v[index].clone())),
    }
}

pub(super) fn slice_sum(values: &Values, from: usize, to: usize) -> Option<ScalarValue> {
    Some(match values {
        Values::Float(v) => ScalarValue::Float64(Some(v[from..to].iter().sum())),
        Values::Integer(v) => ScalarValue::Int64(Some(
            v[from..to].iter().fold(0i64, |a, x| a.wrapping_add(*x)),
        )),
        Values::Unsigned(v) => ScalarValue::UInt64(Some(
            v[from..to].iter().fold(0u64, |a, x| a.wrapping_add(*x)),
        )),
        _ => return None,
    })
}

pub(super) fn slice_extreme(
    values: &Values,
    from: usize,
    to: usize,
    min: bool,
) -> Option<ScalarValue> {
    Some(match values {
        Values::Float(v) => {
            let slice = &v[from..to];
            let mut best = slice[0];
            for x in &slice[1..] {
                if (min && float_lt(*x, best)) || (!min && float_lt(best, *x)) {
                    best = *x;
                }
            }
            ScalarValue::Float64(Some(best))
        }
        Values::Integer(v) => {
            let slice = v[from..to].iter().copied();
            ScalarValue::Int64(if min { slice.min() } else { slice.max() })
        }
        Values::Unsigned(v) => {
            let slice = v[from..to].iter().copied();
            ScalarValue::UInt64(if min { slice.min() } else { slice.max() })
        }
        _ => return None,
    })
}
