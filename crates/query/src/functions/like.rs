//! `LIKE` (and `ILIKE`) as Postgres takes it, where DataFusion's differs:
//! - An escape character other than `\` (`ESCAPE '/'`). SQL and Postgres take any one
//!   character; DataFusion's LIKE only `\` ("LIKE does not support escape_char other than
//!   the backslash"). SQLAlchemy writes `startswith(…, autoescape=True)` and the schema list
//!   of its inspector so (`nspname NOT LIKE 'pg/_' || '%' ESCAPE '/'`). Such a pattern
//!   becomes the same pattern escaped with `\`: a literal pattern at once, any other through
//!   `like_escape_to_backslash(pattern, escape)`. Postgres's rules: the escape character
//!   before any character makes that one literal; a pattern may not end with it.
//! - A tag (a dictionary of strings) matched against a pattern that is not a plain string
//!   literal: `site LIKE $1::VARCHAR || '%'`, as SQLAlchemy writes `startswith`.
//!   DataFusion's type coercion keeps the dictionary but casts the pattern to the common
//!   type, `Utf8View` for a `VARCHAR`, and its LIKE kernel then fails ("Invalid
//!   string/binary operation: Utf8 LIKE Utf8View"). The pattern is cast to `Utf8`, the
//!   dictionary's values' type, first.

use std::sync::Arc;

use datafusion::arrow::array::{Array, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue, exec_err};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::FunctionRewrite;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

/// The rewrite of `LIKE`s that DataFusion would refuse (see the module's doc).
#[derive(Debug)]
pub(crate) struct LikeAsPostgres;

impl FunctionRewrite for LikeAsPostgres {
    fn name(&self) -> &str {
        "strata_like_as_postgres"
    }

    fn rewrite(
        &self,
        expr: Expr,
        schema: &DFSchema,
        _config: &ConfigOptions,
    ) -> Result<Transformed<Expr>> {
        let Expr::Like(mut like) = expr else {
            return Ok(Transformed::no(expr));
        };
        let mut changed = false;
        if let Some(escape) = like.escape_char.filter(|&escape| escape != '\\') {
            like.pattern = Box::new(with_backslash_pattern(*like.pattern, escape)?);
            like.escape_char = None;
            changed = true;
        }
        if is_string_dictionary(&like.expr, schema) && !is_utf8_or_unknown(&like.pattern, schema) {
            like.pattern = Box::new(Expr::Cast(Cast::new(like.pattern, DataType::Utf8)));
            changed = true;
        }
        Ok(if changed {
            Transformed::yes(Expr::Like(like))
        } else {
            Transformed::no(Expr::Like(like))
        })
    }
}

/// Whether `expr` is a dictionary of `Utf8` strings (a tag) in `schema`.
fn is_string_dictionary(expr: &Expr, schema: &DFSchema) -> bool {
    matches!(expr.get_type(schema), Ok(DataType::Dictionary(_, values)) if *values == DataType::Utf8)
}

/// Whether `expr` is of type `Utf8` (or `NULL`) in `schema`, or of a type not known yet
/// (left to type coercion to report).
fn is_utf8_or_unknown(expr: &Expr, schema: &DFSchema) -> bool {
    match expr.get_type(schema) {
        Ok(t) => matches!(t, DataType::Utf8 | DataType::Null),
        Err(_) => true,
    }
}

/// `pattern`, whose escape character is `escape`, as a pattern escaped with `\`.
fn with_backslash_pattern(pattern: Expr, escape: char) -> Result<Expr> {
    Ok(match pattern {
        Expr::Literal(ScalarValue::Utf8(Some(text)), metadata) => Expr::Literal(
            ScalarValue::Utf8(Some(with_backslash(&text, escape)?)),
            metadata,
        ),
        Expr::Literal(ScalarValue::Utf8View(Some(text)), metadata) => Expr::Literal(
            ScalarValue::Utf8View(Some(with_backslash(&text, escape)?)),
            metadata,
        ),
        Expr::Literal(ScalarValue::LargeUtf8(Some(text)), metadata) => Expr::Literal(
            ScalarValue::LargeUtf8(Some(with_backslash(&text, escape)?)),
            metadata,
        ),
        pattern => Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::new(ScalarUDF::new_from_impl(EscapeToBackslash::new())),
            vec![
                pattern,
                Expr::Literal(ScalarValue::Utf8(Some(escape.to_string())), None),
            ],
        )),
    })
}

/// `pattern`, whose escape character is `escape`, with `\` as its escape character instead.
fn with_backslash(pattern: &str, escape: char) -> Result<String> {
    let mut out = String::with_capacity(pattern.len() + 2);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == escape {
            let Some(literal) = chars.next() else {
                return exec_err!("LIKE pattern must not end with escape character");
            };
            out.push('\\');
            out.push(literal);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// `like_escape_to_backslash(pattern, escape)`: [`with_backslash`] over a column of
/// patterns, of the pattern's string type.
#[derive(Debug, PartialEq, Eq, Hash)]
struct EscapeToBackslash {
    signature: Signature,
}

impl EscapeToBackslash {
    fn new() -> Self {
        Self {
            signature: Signature::string(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for EscapeToBackslash {
    fn name(&self) -> &str {
        "like_escape_to_backslash"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args.first().cloned().unwrap_or(DataType::Utf8))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(escape) = &args.args[1] else {
            return exec_err!("LIKE's escape character must be a constant");
        };
        let escape = match escape.try_as_str().flatten() {
            Some(text) => {
                let mut chars = text.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => c,
                    _ => return exec_err!("invalid escape string: it must be one character"),
                }
            }
            None => return exec_err!("LIKE's escape character must not be NULL"),
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let patterns = args.args[0].to_array(if scalar { 1 } else { args.number_rows })?;
        let out_type = patterns.data_type().clone();
        let patterns = cast(&patterns, &DataType::Utf8)?;
        let Some(patterns) = patterns
            .as_any()
            .downcast_ref::<datafusion::arrow::array::StringArray>()
        else {
            return exec_err!("LIKE's pattern must be text");
        };
        let mut out = StringBuilder::with_capacity(patterns.len(), patterns.value_data().len());
        for pattern in patterns {
            match pattern {
                Some(pattern) => out.append_value(with_backslash(pattern, escape)?),
                None => out.append_null(),
            }
        }
        let out = cast(&out.finish(), &out_type)?;
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::with_backslash;

    #[test]
    fn patterns_take_a_backslash_for_their_escape() {
        assert_eq!(with_backslash("pg/_%", '/').unwrap(), "pg\\_%");
        assert_eq!(with_backslash("a!%b!!c", '!').unwrap(), "a\\%b\\!c");
        // A backslash that the pattern's own escape does not mark is an ordinary character.
        assert_eq!(with_backslash("a\\b_", '#').unwrap(), "a\\\\b_");
        assert_eq!(with_backslash("é#é", '#').unwrap(), "é\\é");
        assert!(with_backslash("abc#", '#').is_err());
    }
}
