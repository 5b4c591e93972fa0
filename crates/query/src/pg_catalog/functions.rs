//! The Postgres catalog functions clients' metadata queries call, under their
//! `pg_catalog.` names and their bare ones: `pg_get_userbyid` and `current_user` (the one
//! role, `strata`),
//! `pg_encoding_to_char` (`UTF8`), `pg_table_is_visible` (every table of the database is on
//! the search path), `format_type` (the type's SQL name), `array_to_string` (catalog
//! arrays are stored as text already, so it passes them through), and `pg_get_expr`,
//! `obj_description`, `col_description`, `pg_get_indexdef`, `pg_get_constraintdef`,
//! `pg_get_triggerdef`, `pg_get_statisticsobjdef_columns`, `pg_get_partkeydef` (NULL:
//! Strata has no defaults, comments, indexes, constraints, triggers or partitions).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use super::tables::OWNER_NAME;
use super::types::pg_type;

/// What a catalog function computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Body {
    /// The same text for every row.
    Text(&'static str),
    /// NULL text for every row.
    NullText,
    /// TRUE for every row.
    True,
    /// `format_type(oid, typmod)`.
    FormatType,
    /// `array_to_string(text, separator)`: the first argument.
    PassText,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CatalogFunction {
    name: &'static str,
    aliases: Vec<String>,
    body: Body,
    signature: Signature,
}

impl ScalarUDFImpl for CatalogFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match self.body {
            Body::True => DataType::Boolean,
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = |value| Ok(ColumnarValue::Scalar(value));
        match self.body {
            Body::Text(text) => scalar(ScalarValue::Utf8(Some(text.to_owned()))),
            Body::NullText => scalar(ScalarValue::Utf8(None)),
            Body::True => scalar(ScalarValue::Boolean(Some(true))),
            Body::PassText => match args.args.first() {
                Some(first) => {
                    let array = first.to_array(args.number_rows)?;
                    Ok(ColumnarValue::Array(cast(&array, &DataType::Utf8)?))
                }
                None => scalar(ScalarValue::Utf8(None)),
            },
            Body::FormatType => {
                let Some(oids) = args.args.first() else {
                    return scalar(ScalarValue::Utf8(None));
                };
                let oids = cast(&oids.to_array(args.number_rows)?, &DataType::Int64)?;
                let oids = oids.as_primitive::<Int64Type>();
                let mut out = StringBuilder::new();
                for i in 0..oids.len() {
                    if oids.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    match u32::try_from(oids.value(i)).ok().and_then(pg_type) {
                        Some(t) => out.append_value(t.display),
                        None => out.append_value("???"),
                    }
                }
                Ok(ColumnarValue::Array(Arc::new(out.finish())))
            }
        }
    }
}

/// Adds the catalog functions to `context`.
pub(crate) fn register(context: &SessionContext) {
    let functions: [(&'static str, Body); 14] = [
        ("pg_get_userbyid", Body::Text(OWNER_NAME)),
        ("current_user", Body::Text(OWNER_NAME)),
        ("pg_encoding_to_char", Body::Text("UTF8")),
        ("pg_table_is_visible", Body::True),
        ("format_type", Body::FormatType),
        ("array_to_string", Body::PassText),
        ("pg_get_expr", Body::NullText),
        ("obj_description", Body::NullText),
        ("col_description", Body::NullText),
        ("pg_get_indexdef", Body::NullText),
        ("pg_get_constraintdef", Body::NullText),
        ("pg_get_triggerdef", Body::NullText),
        ("pg_get_statisticsobjdef_columns", Body::NullText),
        ("pg_get_partkeydef", Body::NullText),
    ];
    for (name, body) in functions {
        context.register_udf(ScalarUDF::new_from_impl(CatalogFunction {
            name,
            aliases: vec![format!("pg_catalog.{name}")],
            body,
            signature: Signature::variadic_any(Volatility::Stable),
        }));
    }
    // The session functions under their catalog names too.
    for (name, qualified) in [
        ("current_database", "pg_catalog.current_database"),
        ("current_schema", "pg_catalog.current_schema"),
        ("version", "pg_catalog.version"),
    ] {
        if let Ok(udf) = context.udf(name) {
            context.register_udf(udf.as_ref().clone().with_aliases([qualified]));
        }
    }
}
