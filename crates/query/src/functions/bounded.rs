//! Functions whose results a small argument can make huge — `repeat(s, n)`, `lpad(s, n)`,
//! `rpad(s, n)`, `array_repeat(x, n)` — wrapped to refuse a call whose results over one
//! batch of rows would pass [`MAX_RESULT_BYTES`], before the function allocates them.
//!
//! DataFusion's `repeat` reserves a whole batch's results at once:
//! `repeat('x', 100000000 + value)` over 100 rows asked for 10 GB and aborted the server
//! (an allocation that fails aborts a Rust process). `array_repeat(1, 2000000000)` asked
//! for 16 GB. The query memory limit does not see these: a function's results are not an
//! operator's reservation. Every other function's results are bounded by its inputs.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

/// The most bytes one call of a bounded function may make over one batch of rows (a
/// string counts 4 bytes a character for the pads, an array 8 bytes an element).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// How a bounded function's result size follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(s, n)`: `n` times the bytes of `s`.
    Repeat,
    /// `lpad(s, n [, fill])`, `rpad(…)`: `n` characters.
    Pad,
    /// `array_repeat(x, n)`: `n` elements.
    ArrayRepeat,
}

const BOUNDED: [(&str, Growth); 4] = [
    ("repeat", Growth::Repeat),
    ("lpad", Growth::Pad),
    ("rpad", Growth::Pad),
    ("array_repeat", Growth::ArrayRepeat),
];

/// Replaces each of [`BOUNDED`]'s functions registered in `context` with its bounded
/// form: the same function, checked first.
pub(crate) fn register(context: &SessionContext) {
    for (name, growth) in BOUNDED {
        if let Ok(inner) = context.udf(name) {
            context.register_udf(ScalarUDF::new_from_impl(Bounded { inner, growth }));
        }
    }
}

/// A DataFusion function, unchanged but for the check on its results' size.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: Arc<ScalarUDF>,
    growth: Growth,
}

impl Bounded {
    /// Fails when the call's results over its rows would pass [`MAX_RESULT_BYTES`].
    fn check(&self, args: &[ColumnarValue], rows: usize) -> Result<()> {
        // Scalar arguments alone make one scalar result.
        let all_scalar = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if all_scalar { 1 } else { rows };
        let mut total: u64 = 0;
        for row in 0..rows {
            let count = args.get(1).and_then(|a| int_at(a, row)).unwrap_or(0);
            let count = u64::try_from(count).unwrap_or(0);
            let bytes = match self.growth {
                Growth::Repeat => count.saturating_mul(str_len_at(&args[0], row)),
                Growth::Pad => count.saturating_mul(4),
                Growth::ArrayRepeat => count.saturating_mul(8),
            };
            total = total.saturating_add(bytes);
            if total > MAX_RESULT_BYTES {
                return exec_err!(
                    "{} would make more than {MAX_RESULT_BYTES} bytes for {} row{}: Strata bounds one function's results over a batch of rows (counting 4 bytes a character for lpad and rpad, 8 an element for array_repeat)",
                    self.inner.name(),
                    row + 1,
                    if row == 0 { "" } else { "s" }
                );
            }
        }
        Ok(())
    }
}

/// Row `row` of an integer argument (a scalar is every row's); `None` when null.
fn int_at(value: &ColumnarValue, row: usize) -> Option<i64> {
    match value {
        ColumnarValue::Scalar(ScalarValue::Int64(n)) => *n,
        ColumnarValue::Scalar(_) => None,
        ColumnarValue::Array(array) => {
            let ints = array.as_any().downcast_ref::<Int64Array>()?;
            ints.is_valid(row).then(|| ints.value(row))
        }
    }
}

/// The bytes of row `row` of a string argument (0 when null or not a string).
fn str_len_at(value: &ColumnarValue, row: usize) -> u64 {
    let len = match value {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::LargeUtf8(Some(s))
            | ScalarValue::Utf8View(Some(s)),
        ) => s.len(),
        ColumnarValue::Scalar(_) => 0,
        ColumnarValue::Array(array) if array.is_null(row) => 0,
        ColumnarValue::Array(array) => match array.data_type() {
            DataType::Utf8 => array.as_string::<i32>().value(row).len(),
            DataType::LargeUtf8 => array.as_string::<i64>().value(row).len(),
            DataType::Utf8View => array.as_string_view().value(row).len(),
            _ => 0,
        },
    };
    len as u64
}

impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.check(&args.args, args.number_rows)?;
        self.inner.invoke_with_args(args)
    }
}
