//! Functions whose results a small argument can make huge — `repeat(s, n)`, `lpad(s, n)`,
//! `rpad(s, n)`, `array_repeat(x, n)`, `array_resize(a, n)` — wrapped to refuse a call
//! whose results over one batch of rows would pass [`MAX_RESULT_BYTES`], before the
//! function allocates them.
//! `regexp_replace(s, pattern, replacement [, flags])` and `replace(s, from, to)` write
//! their replacement once per match: their results may grow past their input by at most
//! [`MAX_RESULT_BYTES`]. `array_to_string(a, delimiter [, null])` writes its delimiter once
//! per element, and `to_char(t, format)` its format once per row: they are bounded too.
//! `levenshtein(a, b)` is bounded by its work, `a`'s length times `b`'s ([`MAX_STEPS`]).
//!
//! DataFusion's `repeat` reserves a whole batch's results at once:
//! `repeat('x', 100000000 + value)` over 100 rows asked for 10 GB and aborted the server
//! (an allocation that fails aborts a Rust process). `array_repeat(1, 2000000000)` asked
//! for 16 GB, `replace(repeat('a', 100000), 'a', repeat('b', 100000))` 10 GB, and
//! `to_char` with a 1 MB format over a batch of 8,192 rows 8 GB. The query memory limit
//! does not see these: a function's results are not an operator's reservation. Other
//! functions were not reviewed one by one; `range` and `generate_series` reserve with
//! `try_reserve` and fail cleanly.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

use super::bounded_lists::joined_bytes;
use super::pg_to_char;
use crate::data_fault::TooLarge;

/// The most bytes one call of a bounded function may make over one batch of rows (a
/// string counts 4 bytes a character for the pads, an array 8 bytes an element; for
/// `regexp_replace` and `replace`, what they add to their input).
pub const MAX_RESULT_BYTES: u64 = 256 << 20;

/// What `to_char` may write for one byte of its format: `%+` (two bytes) writes 32.
const FORMAT_EXPANSION: u64 = 16;

/// The most steps (one string's bytes times the other's) one call of `levenshtein` may
/// take over one batch of rows: nothing interrupts a function while it runs, not the
/// query timeout nor a client that leaves. 2^30 steps took 31 s in a debug build.
/// Postgres's own `levenshtein` takes strings of at most 255 characters.
pub const MAX_STEPS: u64 = 1 << 30;

/// How a bounded function's result size follows from its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(s, n)`: `n` times the bytes of `s`.
    Repeat,
    /// `lpad(s, n [, fill])`, `rpad(…)`: `n` characters.
    Pad,
    /// `array_repeat(x, n)`, `array_resize(a, n [, x])`: `n` elements.
    Elements,
    /// `regexp_replace(s, pattern, replacement [, flags])`: the replacement once per match.
    RegexpReplace,
    /// `replace(s, from, to)`: `to` in place of `from`, once per match.
    Replace,
    /// `array_to_string(a, delimiter [, null])`: each element's text and a delimiter.
    Join,
    /// `to_char(t, format)`: the format, expanded, once per row.
    Format,
    /// `levenshtein(a, b)`: not its result but its work, `a`'s bytes times `b`'s.
    Steps,
}

const BOUNDED: [(&str, Growth); 10] = [
    ("repeat", Growth::Repeat),
    ("lpad", Growth::Pad),
    ("rpad", Growth::Pad),
    ("array_repeat", Growth::Elements),
    ("array_resize", Growth::Elements),
    ("regexp_replace", Growth::RegexpReplace),
    ("replace", Growth::Replace),
    ("array_to_string", Growth::Join),
    ("to_char", Growth::Format),
    ("levenshtein", Growth::Steps),
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
    /// Fails when the call's results over its rows would pass [`MAX_RESULT_BYTES`] (its
    /// work [`MAX_STEPS`], for `levenshtein`).
    fn check(&self, args: &[ColumnarValue], rows: usize) -> Result<()> {
        // Scalar arguments alone make one scalar result.
        let all_scalar = args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if all_scalar { 1 } else { rows };
        // A list's elements are counted over the batch at once, not row by row.
        if self.growth == Growth::Join {
            if joined_bytes(args, rows) > MAX_RESULT_BYTES {
                return Err(self.too_large(rows));
            }
            return Ok(());
        }
        let limit = match self.growth {
            Growth::Steps => MAX_STEPS,
            _ => MAX_RESULT_BYTES,
        };
        let mut total: u64 = 0;
        let mut matches = MatchCounter::default();
        for row in 0..rows {
            // The count, the second argument of all but regexp_replace; negative is none.
            let count = || {
                let count = args.get(1).and_then(|a| int_at(a, row)).unwrap_or(0);
                u64::try_from(count).unwrap_or(0)
            };
            let bytes = match self.growth {
                Growth::Repeat => count().saturating_mul(str_len_at(&args[0], row)),
                Growth::Pad => count().saturating_mul(4),
                Growth::Elements => count().saturating_mul(8),
                Growth::RegexpReplace => regexp_replace_growth(args, row, &mut matches),
                Growth::Replace => replace_growth(args, row),
                Growth::Format => args.get(1).map_or(0, |format| {
                    str_len_at(format, row)
                        .saturating_mul(FORMAT_EXPANSION)
                        .saturating_add(10)
                }),
                Growth::Steps => str_len_at(&args[0], row)
                    .saturating_mul(args.get(1).map_or(0, |b| str_len_at(b, row))),
                // Counted over the whole batch above.
                Growth::Join => 0,
            };
            total = total.saturating_add(bytes);
            if total > limit {
                return Err(self.too_large(row + 1));
            }
        }
        Ok(())
    }

    /// The refusal of a call whose first `rows` rows pass the bound.
    fn too_large(&self, rows: usize) -> DataFusionError {
        if self.growth == Growth::Steps {
            return TooLarge(format!(
                "{} would take more than {MAX_STEPS} steps for {rows} row{}: Strata bounds its work over a batch of rows (one string's bytes times the other's), which nothing interrupts once it runs",
                self.inner.name(),
                if rows == 1 { "" } else { "s" }
            ))
            .into();
        }
        TooLarge(format!(
            "{} would make more than {MAX_RESULT_BYTES} bytes for {rows} row{}: Strata bounds one function's results over a batch of rows (counting 4 bytes a character for lpad and rpad, 8 an element for array_repeat and array_resize, what regexp_replace and replace add to their input, 40 bytes and a delimiter an element for array_to_string, and 16 bytes a byte of to_char's format)",
            self.inner.name(),
            if rows == 1 { "" } else { "s" }
        ))
        .into()
    }
}

/// An upper bound on the bytes `replace` adds to row `row`'s string: `to` in place of
/// `from` at each match, at most one per `from`'s length of the string; past a few KiB
/// they are counted instead. An empty `from` replaces nothing.
fn replace_growth(args: &[ColumnarValue], row: usize) -> u64 {
    let Some((string, from, to)) = first_three_str_at(args, row) else {
        return 0;
    };
    if from.is_empty() || to.len() <= from.len() {
        return 0;
    }
    let grows = |matches: usize| (matches as u64).saturating_mul((to.len() - from.len()) as u64);
    if grows(string.len() / from.len()) <= 4096 {
        return grows(string.len() / from.len());
    }
    grows(string.matches(from).count())
}

/// An upper bound on the bytes `regexp_replace` adds to row `row`'s string: the
/// replacement once per match, and each group reference in it at most the whole string
/// over all matches (matches do not overlap). Matches are at most one per character and
/// one more with the `g` flag, one without; past a few KiB they are counted instead.
fn regexp_replace_growth(args: &[ColumnarValue], row: usize, matches: &mut MatchCounter) -> u64 {
    let Some((string, pattern, replacement)) = first_three_str_at(args, row) else {
        return 0;
    };
    let flags = args.get(3).and_then(|a| str_at(a, row));
    let global = flags.is_some_and(|f| f.contains('g'));
    let references = replacement.matches(['$', '\\']).count() as u64;
    let grows = |matches: u64| {
        matches
            .saturating_mul(replacement.len() as u64)
            .saturating_add(references.saturating_mul(string.len() as u64))
    };
    let most = if global {
        string.chars().count() as u64 + 1
    } else {
        1
    };
    // Short strings and replacements: the bound is small, and counting would cost more.
    if grows(most) <= 4096 {
        return grows(most);
    }
    grows(matches.count(string, pattern, flags, global))
}

/// Counts a pattern's matches as `regexp_replace` finds them (its flags but `g` inlined),
/// keeping the last compiled pattern.
#[derive(Default)]
struct MatchCounter {
    last: Option<(String, Option<String>, Option<regex::Regex>)>,
}

impl MatchCounter {
    fn count(&mut self, string: &str, pattern: &str, flags: Option<&str>, global: bool) -> u64 {
        let same = self
            .last
            .as_ref()
            .is_some_and(|(p, f, _)| p == pattern && f.as_deref() == flags);
        if !same {
            let inline = flags.map(|f| f.replace('g', "")).unwrap_or_default();
            let full = if inline.is_empty() {
                pattern.to_owned()
            } else {
                format!("(?{inline}){pattern}")
            };
            let compiled = regex::Regex::new(&full).ok();
            self.last = Some((pattern.to_owned(), flags.map(str::to_owned), compiled));
        }
        // A pattern that does not compile: the function itself says so.
        let Some((_, _, Some(re))) = &self.last else {
            return 0;
        };
        if global {
            re.find_iter(string).count() as u64
        } else {
            u64::from(re.is_match(string))
        }
    }
}

/// Row `row` of the first three arguments, strings (the string, what is replaced, its
/// replacement); `None` when one is null.
fn first_three_str_at(args: &[ColumnarValue], row: usize) -> Option<(&str, &str, &str)> {
    Some((
        str_at(args.first()?, row)?,
        str_at(args.get(1)?, row)?,
        str_at(args.get(2)?, row)?,
    ))
}

/// `to_char`'s format, when it is one string for every row and a Postgres template (no
/// `%`), as chrono's format (`pg_to_char`); a template chrono cannot write exactly fails.
/// A format that varies by row goes to chrono as it is.
fn postgres_template(args: &mut [ColumnarValue]) -> Result<()> {
    let Some(ColumnarValue::Scalar(
        ScalarValue::Utf8(Some(format))
        | ScalarValue::LargeUtf8(Some(format))
        | ScalarValue::Utf8View(Some(format)),
    )) = args.get_mut(1)
    else {
        return Ok(());
    };
    if pg_to_char::is_template(format) {
        *format = pg_to_char::chrono_format(format).map_err(DataFusionError::Execution)?;
    }
    Ok(())
}

/// Row `row` of a string argument (a scalar is every row's); `None` when null.
fn str_at(value: &ColumnarValue, row: usize) -> Option<&str> {
    match value {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s),
        ) => s.as_deref(),
        ColumnarValue::Scalar(_) => None,
        ColumnarValue::Array(array) if array.is_null(row) => None,
        ColumnarValue::Array(array) => match array.data_type() {
            DataType::Utf8 => Some(array.as_string::<i32>().value(row)),
            DataType::LargeUtf8 => Some(array.as_string::<i64>().value(row)),
            DataType::Utf8View => Some(array.as_string_view().value(row)),
            _ => None,
        },
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
pub(super) fn str_len_at(value: &ColumnarValue, row: usize) -> u64 {
    str_at(value, row).map_or(0, |s| s.len() as u64)
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

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.growth == Growth::Format {
            postgres_template(&mut args.args)?;
        }
        self.check(&args.args, args.number_rows)?;
        self.inner.invoke_with_args(args)
    }
}
