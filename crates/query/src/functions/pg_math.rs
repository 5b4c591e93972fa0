//! Postgres's arithmetic functions that DataFusion lacks, with Postgres's answers:
//!
//! - `mod(a, b)`: the remainder of `a / b`, with the sign of `a` (as `%`);
//! - `div(a, b)`: the quotient of `a / b` truncated toward zero (an integer for integers, a
//!   whole float for floats, where Postgres's `div(numeric, numeric)` gives a whole numeric);
//! - `width_bucket(x, low, high, count)`: which of `count` equal buckets between `low` and
//!   `high` holds `x`: 1 to `count`, 0 below the range and `count + 1` at or above its end
//!   (`low > high` reverses it). For histograms in dashboards.
//!
//! A division by zero is a division by zero (`22012`); a bucket count below 1, bounds that
//! are equal or not finite, are invalid arguments (`22023`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::kernels::numeric::{div as divide, rem};
use datafusion::arrow::compute::{cast, unary};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Mod,
    Div,
    WidthBucket,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PgMath {
    op: Op,
    signature: Signature,
}

impl PgMath {
    fn new(op: Op) -> Self {
        let signature = match op {
            // Integers stay integers; anything else numeric is a float.
            Op::Mod | Op::Div => Signature::one_of(
                vec![
                    TypeSignature::Exact(vec![DataType::Int64, DataType::Int64]),
                    TypeSignature::Exact(vec![DataType::Float64, DataType::Float64]),
                ],
                Volatility::Immutable,
            ),
            Op::WidthBucket => Signature::exact(
                vec![
                    DataType::Float64,
                    DataType::Float64,
                    DataType::Float64,
                    DataType::Int64,
                ],
                Volatility::Immutable,
            ),
        };
        Self { op, signature }
    }
}

impl ScalarUDFImpl for PgMath {
    fn name(&self) -> &str {
        match self.op {
            Op::Mod => "mod",
            Op::Div => "div",
            Op::WidthBucket => "width_bucket",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match self.op {
            Op::Mod | Op::Div => args.first().cloned().unwrap_or(DataType::Int64),
            Op::WidthBucket => DataType::Int64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let floats = arrays[0].data_type() == &DataType::Float64;
        // Arrow divides floats by zero into infinities and NaNs; Postgres refuses, as it
        // does for integers (which Arrow refuses too).
        if floats && self.op != Op::WidthBucket && has_zero(&arrays[0], &arrays[1]) {
            return Err(DataFusionError::ArrowError(
                Box::new(ArrowError::DivideByZero),
                None,
            ));
        }
        let out: ArrayRef = match self.op {
            Op::Mod => rem(&arrays[0], &arrays[1])?,
            Op::Div if floats => {
                let quotient = divide(&arrays[0], &arrays[1])?;
                let quotient = quotient.as_primitive::<Float64Type>();
                Arc::new(unary::<_, _, Float64Type>(quotient, f64::trunc))
            }
            Op::Div => divide(&arrays[0], &arrays[1])?,
            Op::WidthBucket => width_buckets(&arrays)?,
        };
        if all_scalar {
            return Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&out, 0)?,
            ));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// Whether a row with a dividend divides it by a float zero.
fn has_zero(dividend: &ArrayRef, divisor: &ArrayRef) -> bool {
    let dividend = dividend.as_primitive::<Float64Type>();
    divisor
        .as_primitive::<Float64Type>()
        .iter()
        .zip(dividend.iter())
        .any(|(d, n)| d == Some(0.0) && n.is_some())
}

/// `width_bucket` of each row; NULL where any argument is NULL.
fn width_buckets(arrays: &[ArrayRef]) -> Result<ArrayRef> {
    let [x, low, high] =
        [&arrays[0], &arrays[1], &arrays[2]].map(|a| a.as_primitive::<Float64Type>());
    let count = cast(&arrays[3], &DataType::Int64)?;
    let count = count.as_primitive::<Int64Type>();
    let mut out = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if x.is_null(i) || low.is_null(i) || high.is_null(i) || count.is_null(i) {
            out.push(None);
            continue;
        }
        out.push(Some(width_bucket(
            x.value(i),
            low.value(i),
            high.value(i),
            count.value(i),
        )?));
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// Postgres's `width_bucket(operand, low, high, count)` for floats.
fn width_bucket(x: f64, low: f64, high: f64, count: i64) -> Result<i64> {
    if count <= 0 {
        return exec_err!("count must be greater than zero");
    }
    if !low.is_finite() || !high.is_finite() {
        return exec_err!("lower and upper bounds must be finite");
    }
    if low == high {
        return exec_err!("lower bound cannot equal upper bound");
    }
    if x.is_nan() {
        return exec_err!("operand, lower bound, and upper bound cannot be NaN");
    }
    let buckets = count as f64;
    let bucket = if low < high {
        if x < low {
            0
        } else if x >= high {
            count.saturating_add(1)
        } else {
            ((buckets * ((x - low) / (high - low))) as i64 + 1).min(count)
        }
    } else if x > low {
        0
    } else if x <= high {
        count.saturating_add(1)
    } else {
        ((buckets * ((low - x) / (low - high))) as i64 + 1).min(count)
    };
    Ok(bucket)
}

/// Adds `mod`, `div` and `width_bucket` to `context`.
pub(crate) fn register(context: &SessionContext) {
    for op in [Op::Mod, Op::Div, Op::WidthBucket] {
        context.register_udf(ScalarUDF::new_from_impl(PgMath::new(op)));
    }
}

#[cfg(test)]
mod tests {
    use super::width_bucket;

    #[test]
    fn buckets_are_postgres_s() {
        // Postgres 15.18's answers.
        let cases = [
            ((5.35, 0.024, 10.06, 5), 3),
            ((-1.0, 0.0, 10.0, 5), 0),
            ((10.0, 0.0, 10.0, 5), 6),
            ((0.0, 0.0, 10.0, 5), 1),
            ((9.999, 0.0, 10.0, 5), 5),
            ((5.35, 10.06, 0.024, 5), 3),
            ((10.06, 10.06, 0.024, 5), 1),
            ((0.024, 10.06, 0.024, 5), 6),
        ];
        for ((x, low, high, count), want) in cases {
            assert_eq!(
                width_bucket(x, low, high, count).unwrap(),
                want,
                "{x} {low} {high}"
            );
        }
        assert!(width_bucket(1.0, 0.0, 1.0, 0).is_err());
        assert!(width_bucket(1.0, 1.0, 1.0, 3).is_err());
    }
}
