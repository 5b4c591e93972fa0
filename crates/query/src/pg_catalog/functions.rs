//! The Postgres catalog functions clients' metadata queries call, under their
//! `pg_catalog.` names and their bare ones: `pg_get_userbyid` and `current_user` (the one
//! role, `strata`), `pg_encoding_to_char` (`UTF8`), `pg_table_is_visible`,
//! `pg_type_is_visible`, `pg_function_is_visible`, `pg_operator_is_visible` and
//! `pg_conversion_is_visible` (everything of the database is on the search path), `has_database_privilege`, `has_schema_privilege`, `has_table_privilege`
//! and `pg_has_role` (true: a connection's token decides what it may do, not grants),
//! `format_type` (the type's SQL name), `pg_typeof` (a value's type, named so),
//! `pg_size_pretty`, `pg_tablespace_location` (empty,
//! as for Postgres's default tablespace), `pg_catalog.array_to_string` (lists joined as
//! Postgres joins arrays; the catalog's own arrays are stored as text and pass through; the
//! bare name is DataFusion's), and `pg_get_expr`, `obj_description`, `col_description`,
//! `shobj_description`, `pg_get_indexdef`, `pg_get_constraintdef`, `pg_get_triggerdef`,
//! `pg_get_statisticsobjdef_columns`, `pg_get_partkeydef`, `pg_get_function_result` and
//! `pg_get_function_arguments` (NULL: Strata has no defaults, comments, indexes,
//! constraints, triggers, partitions or user functions). The size functions are in
//! `sizes`.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, Int64Array, Int64Builder, ListBuilder, StringArray, StringBuilder,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;

use super::tables::OWNER_NAME;
use super::types::{PG_TYPES, pg_type};

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
    /// `array_to_string(array, separator)`: a list's non-NULL elements joined, as
    /// Postgres's; a text argument (the catalog's arrays, stored as text) passes through.
    ArrayToString,
    /// `pg_size_pretty(bigint)`: bytes in Postgres's words (`8192 bytes`, `10 kB`).
    SizePretty,
    /// `quote_ident(text)`: the name, double-quoted when it needs to be.
    QuoteIdent,
    /// `quote_literal(value)`: its text as a string literal; NULL stays NULL.
    QuoteLiteral,
    /// `quote_nullable(value)`: as `quote_literal`, but NULL is `NULL`.
    QuoteNullable,
    /// `to_regtype(name)`: the oid of the type so named (`int4`, `integer`, `text[]`), NULL
    /// for a type this server does not have (psycopg looks up `hstore` so).
    ToRegtype,
    /// `current_setting(name)`: `search_path` is the statement's database; other settings
    /// are NULL here.
    CurrentSetting,
    /// `parse_ident(text)`: a qualified name's parts, as a list.
    ParseIdent,
    /// `current_schemas(implicit)`: the search path as a list, `pg_catalog` first.
    CurrentSchemas,
    /// `array_lower(list, 1)`: 1, or NULL for an empty list.
    ArrayLower,
    /// `array_upper(list, 1)`: the list's length, or NULL for an empty one.
    ArrayUpper,
    /// `pg_typeof(value)`: the Postgres type the value's column is sent as, named as
    /// `format_type` names it (`double precision`, `text`, `timestamp without time zone`).
    TypeOf,
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
            Body::ArrayLower | Body::ArrayUpper | Body::ToRegtype => DataType::Int64,
            Body::ParseIdent | Body::CurrentSchemas => DataType::new_list(DataType::Utf8, true),
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = |value| Ok(ColumnarValue::Scalar(value));
        match self.body {
            Body::Text(text) => scalar(ScalarValue::Utf8(Some(text.to_owned()))),
            Body::NullText => scalar(ScalarValue::Utf8(None)),
            Body::True => scalar(ScalarValue::Boolean(Some(true))),
            Body::ArrayToString => array_to_string(&args),
            Body::SizePretty => {
                let Some(first) = args.args.first() else {
                    return scalar(ScalarValue::Utf8(None));
                };
                let sizes = cast(&first.to_array(args.number_rows)?, &DataType::Int64)?;
                let sizes = sizes.as_primitive::<Int64Type>();
                let mut out = StringBuilder::new();
                for i in 0..sizes.len() {
                    if sizes.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(size_pretty(sizes.value(i)));
                    }
                }
                Ok(ColumnarValue::Array(Arc::new(out.finish())))
            }
            Body::QuoteIdent => map_text(&args, |name| Some(quote_ident(name))),
            Body::QuoteLiteral => map_text(&args, |value| Some(quote_literal(value))),
            Body::ToRegtype => {
                let Some(first) = args.args.first() else {
                    return scalar(ScalarValue::Int64(None));
                };
                let names = cast(&first.to_array(args.number_rows)?, &DataType::Utf8)?;
                let out: Int64Array = names
                    .as_string::<i32>()
                    .iter()
                    .map(|name| name.and_then(type_oid))
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(out)))
            }
            Body::QuoteNullable => {
                let Some(first) = args.args.first() else {
                    return scalar(ScalarValue::Utf8(None));
                };
                let values = cast(&first.to_array(args.number_rows)?, &DataType::Utf8)?;
                let out: StringArray = values
                    .as_string::<i32>()
                    .iter()
                    .map(|v| Some(v.map_or_else(|| "NULL".to_owned(), quote_literal)))
                    .collect();
                Ok(ColumnarValue::Array(Arc::new(out)))
            }
            Body::CurrentSetting => {
                let database = args.config_options.catalog.default_schema.clone();
                map_text(&args, |name| {
                    name.eq_ignore_ascii_case("search_path")
                        .then(|| database.clone())
                })
            }
            Body::ParseIdent => {
                let Some(first) = args.args.first() else {
                    return scalar(ScalarValue::Utf8(None));
                };
                let names = cast(&first.to_array(args.number_rows)?, &DataType::Utf8)?;
                let names = names.as_string::<i32>();
                let mut out = ListBuilder::new(StringBuilder::new());
                for i in 0..names.len() {
                    if names.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    for part in parse_ident(names.value(i)) {
                        out.values().append_value(part);
                    }
                    out.append(true);
                }
                Ok(ColumnarValue::Array(Arc::new(out.finish())))
            }
            Body::CurrentSchemas => {
                let database = args.config_options.catalog.default_schema.clone();
                let mut out = ListBuilder::new(StringBuilder::new());
                for _ in 0..args.number_rows.max(1) {
                    out.values().append_value("pg_catalog");
                    out.values().append_value(&database);
                    out.append(true);
                }
                let list = out.finish();
                if args.number_rows <= 1 {
                    return Ok(ColumnarValue::Scalar(ScalarValue::List(Arc::new(list))));
                }
                Ok(ColumnarValue::Array(Arc::new(list)))
            }
            Body::ArrayLower | Body::ArrayUpper => {
                let Some(first) = args.args.first() else {
                    return scalar(ScalarValue::Int64(None));
                };
                let lists = first.to_array(args.number_rows)?;
                let Some(lists) = lists.as_list_opt::<i32>() else {
                    return scalar(ScalarValue::Int64(None));
                };
                let mut out = Int64Builder::new();
                for i in 0..lists.len() {
                    let len = if lists.is_null(i) {
                        0
                    } else {
                        lists.value_length(i)
                    };
                    match (len, self.body) {
                        (0, _) => out.append_null(),
                        (_, Body::ArrayLower) => out.append_value(1),
                        (n, _) => out.append_value(i64::from(n)),
                    }
                }
                Ok(ColumnarValue::Array(Arc::new(out.finish())))
            }
            Body::TypeOf => {
                let name = args
                    .arg_fields
                    .first()
                    .map(|field| super::types::pg_type_of(field.data_type()).display);
                scalar(ScalarValue::Utf8(name.map(str::to_owned)))
            }
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

/// `array_to_string(array, separator)`: each list's non-NULL elements as text, joined by
/// the separator; a text first argument passes through unchanged.
fn array_to_string(args: &ScalarFunctionArgs) -> Result<ColumnarValue> {
    let Some(first) = args.args.first() else {
        return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
    };
    let arrays = first.to_array(args.number_rows)?;
    let lists = match arrays.data_type() {
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
            let item = DataType::new_list(DataType::Utf8, true);
            cast(&arrays, &item)?
        }
        _ => return Ok(ColumnarValue::Array(cast(&arrays, &DataType::Utf8)?)),
    };
    let lists = lists.as_list::<i32>();
    let separators = match args.args.get(1) {
        Some(separator) => cast(&separator.to_array(args.number_rows)?, &DataType::Utf8)?,
        None => return exec_err!("array_to_string() needs a separator"),
    };
    let separators = separators.as_string::<i32>();
    let mut out = StringBuilder::new();
    for i in 0..lists.len() {
        if lists.is_null(i) || separators.is_null(i) {
            out.append_null();
            continue;
        }
        let items = lists.value(i);
        let items = items.as_string::<i32>();
        let joined: Vec<&str> = items.iter().flatten().collect();
        out.append_value(joined.join(separators.value(i)));
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

/// `pg_size_pretty`: below 10 kB in bytes, then kB, MB, GB, TB and PB, each rounded half
/// away from zero, switching units below 20 × 1024 − 0.5 of the next smaller one; as
/// Postgres 15's.
fn size_pretty(bytes: i64) -> String {
    // (unit, limit, rounded, unit bits)
    const UNITS: [(&str, i64, bool, u32); 6] = [
        ("bytes", 10 * 1024, false, 0),
        ("kB", 20 * 1024 - 1, true, 10),
        ("MB", 20 * 1024 - 1, true, 20),
        ("GB", 20 * 1024 - 1, true, 30),
        ("TB", 20 * 1024 - 1, true, 40),
        ("PB", 20 * 1024 - 1, true, 50),
    ];
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    let mut size = bytes;
    for (i, &(name, limit, rounded, bits)) in UNITS.iter().enumerate() {
        let Some(&(_, _, next_rounded, next_bits)) = UNITS.get(i + 1) else {
            let size = if rounded { half_rounded(size) } else { size };
            return format!("{size} {name}");
        };
        if size.unsigned_abs() < limit.unsigned_abs() {
            let size = if rounded { half_rounded(size) } else { size };
            return format!("{size} {name}");
        }
        let shift = next_bits - bits - u32::from(next_rounded) + u32::from(rounded);
        size /= 1i64 << shift;
    }
    unreachable!("the last unit returns")
}

/// `f` of every text value of the first argument (NULL stays NULL).
fn map_text(
    args: &ScalarFunctionArgs,
    f: impl Fn(&str) -> Option<String>,
) -> Result<ColumnarValue> {
    let Some(first) = args.args.first() else {
        return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None)));
    };
    let values = cast(&first.to_array(args.number_rows)?, &DataType::Utf8)?;
    let values = values.as_string::<i32>();
    let mut out = StringBuilder::new();
    for i in 0..values.len() {
        match (!values.is_null(i)).then(|| f(values.value(i))).flatten() {
            Some(text) => out.append_value(text),
            None => out.append_null(),
        }
    }
    Ok(ColumnarValue::Array(Arc::new(out.finish())))
}

/// `name` as Postgres's `quote_ident` gives it: unchanged when it is lower-case letters,
/// digits and `_` not starting with a digit, else in double quotes with `"` doubled.
pub fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// The oid of the type `name` names: its `pg_type` name or the name `format_type` gives it
/// (`int8`, `bigint`, `_int8`, `bigint[]`), in any case, `pg_catalog.` allowed before it,
/// and SQL's other names for the integer and float types (`int`, `float`, `double`).
pub fn type_oid(name: &str) -> Option<i64> {
    let name = name.trim().to_ascii_lowercase();
    let name = name
        .strip_prefix("pg_catalog.")
        .unwrap_or(&name)
        .trim_matches('"');
    let (base, array) = match name.strip_suffix("[]") {
        Some(element) => (element.trim_end(), true),
        None => (name, false),
    };
    let base = match base {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "float" | "double" => "float8",
        "real" => "float4",
        "boolean" => "bool",
        "varchar" | "character varying" | "string" => "text",
        other => other,
    };
    if let Some(named) = PG_TYPES.iter().find(|t| t.name == name) {
        return Some(i64::from(named.oid));
    }
    let found = PG_TYPES
        .iter()
        .find(|t| t.element == 0 && (t.name == base || t.display == base))?;
    let oid = if array { found.array } else { found.oid };
    Some(i64::from(oid))
}

/// `value` as Postgres's `quote_literal` gives it: in single quotes with `'` doubled; with
/// any `\\` doubled too and an `E` before the quotes when it holds one.
fn quote_literal(value: &str) -> String {
    let quoted = value.replace('\'', "''");
    if value.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// The parts of a qualified name (`a.b`, `"A.x".b`): quoted parts kept as written, others
/// lower-cased, as Postgres's `parse_ident` does.
fn parse_ident(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => current.push(c),
            (false, '"') => quoted = true,
            (false, '.') => parts.push(std::mem::take(&mut current)),
            (false, c) => current.extend(c.to_lowercase()),
        }
    }
    parts.push(current);
    parts
}

/// Any arguments, none included (`current_user()`).
fn any_arguments() -> Signature {
    Signature::one_of(
        vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
        Volatility::Stable,
    )
}

/// Adds the catalog functions to `context`.
pub(crate) fn register(context: &SessionContext) {
    let functions: [(&'static str, Body); 36] = [
        ("current_schemas", Body::CurrentSchemas),
        ("quote_ident", Body::QuoteIdent),
        ("quote_literal", Body::QuoteLiteral),
        ("quote_nullable", Body::QuoteNullable),
        ("to_regtype", Body::ToRegtype),
        ("current_setting", Body::CurrentSetting),
        ("parse_ident", Body::ParseIdent),
        ("array_lower", Body::ArrayLower),
        ("array_upper", Body::ArrayUpper),
        ("pg_get_userbyid", Body::Text(OWNER_NAME)),
        ("current_user", Body::Text(OWNER_NAME)),
        ("pg_encoding_to_char", Body::Text("UTF8")),
        ("pg_table_is_visible", Body::True),
        ("pg_type_is_visible", Body::True),
        ("pg_function_is_visible", Body::True),
        ("pg_operator_is_visible", Body::True),
        ("pg_conversion_is_visible", Body::True),
        ("has_database_privilege", Body::True),
        ("has_schema_privilege", Body::True),
        ("has_table_privilege", Body::True),
        ("pg_has_role", Body::True),
        ("pg_size_pretty", Body::SizePretty),
        ("pg_tablespace_location", Body::Text("")),
        ("shobj_description", Body::NullText),
        ("pg_get_function_result", Body::NullText),
        ("pg_get_function_arguments", Body::NullText),
        ("format_type", Body::FormatType),
        ("pg_typeof", Body::TypeOf),
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
            signature: any_arguments(),
        }));
    }
    // Only qualified: the bare name is DataFusion's, over real lists; the catalog's
    // "arrays" (`datacl`, `reloptions`) are text here and pass through.
    context.register_udf(ScalarUDF::new_from_impl(CatalogFunction {
        name: "pg_catalog.array_to_string",
        aliases: Vec::new(),
        body: Body::ArrayToString,
        signature: any_arguments(),
    }));
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

#[cfg(test)]
mod tests {
    use super::{parse_ident, quote_ident, quote_literal, size_pretty, type_oid};

    #[test]
    fn sizes_are_pretty_as_postgres_prints_them() {
        // Postgres 15.18's own answers.
        let cases = [
            (0, "0 bytes"),
            (8192, "8192 bytes"),
            (10_239, "10239 bytes"),
            (10_240, "10 kB"),
            (10_752, "11 kB"),
            (10_485_247, "10239 kB"),
            (10_485_248, "10 MB"),
            (20_970_495, "20 MB"),
            (1_073_741_824, "1024 MB"),
            (21_474_836_480, "20 GB"),
            (-10_240, "-10 kB"),
            (i64::MAX, "8192 PB"),
            (i64::MIN, "-8192 PB"),
        ];
        for (bytes, pretty) in cases {
            assert_eq!(size_pretty(bytes), pretty, "{bytes}");
        }
    }

    #[test]
    fn identifiers_are_quoted_and_parsed_as_postgres_does() {
        assert_eq!(quote_ident("cpu_2"), "cpu_2");
        assert_eq!(quote_ident("Cpu"), "\"Cpu\"");
        assert_eq!(quote_ident("a\"b c"), "\"a\"\"b c\"");
        assert_eq!(quote_ident("2x"), "\"2x\"");
        assert_eq!(parse_ident("public.Games"), ["public", "games"]);
        assert_eq!(parse_ident("\"My.Db\".t"), ["My.Db", "t"]);
    }

    #[test]
    fn type_names_are_looked_up_as_to_regtype_does() {
        for (name, oid) in [
            ("int4", Some(23)),
            ("Integer", Some(23)),
            ("pg_catalog.int8", Some(20)),
            ("double precision", Some(701)),
            ("text[]", Some(1009)),
            ("_int8", Some(1016)),
            ("timestamp with time zone", Some(1184)),
            ("hstore", None),
            ("json", None),
        ] {
            assert_eq!(type_oid(name), oid, "{name}");
        }
    }

    #[test]
    fn literals_are_quoted_as_postgres_does() {
        // Postgres 15.18's answers to quote_literal(…).
        assert_eq!(quote_literal("abc"), "'abc'");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal("a\\b'c"), "E'a\\\\b''c'");
        assert_eq!(quote_literal(""), "''");
    }
}
