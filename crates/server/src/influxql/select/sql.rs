//! SQL for the engine, and its Arrow answers read back as InfluxQL values. InfluxQL runs
//! as SQL statements through [`strata_query::QueryEngine`], the same engine as `/sql`, so
//! its aggregates take the direct path and the pre-aggregates where SQL's do. The common
//! statements are built as sqlparser's tree ([`super::tree`]); the rest as text.

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::Query;
use futures::StreamExt;
use strata_query::{QueryEngine, QueryStream};

use super::super::result::Value;

/// `name` as a SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    push_ident(&mut out, name);
    out
}

/// Appends `name` to `out` as a SQL identifier (double-quoted, `"` doubled).
pub(crate) fn push_ident(out: &mut String, name: &str) {
    out.push('"');
    for (i, part) in name.split('"').enumerate() {
        if i > 0 {
            out.push_str("\"\"");
        }
        out.push_str(part);
    }
    out.push('"');
}

/// A statement for the engine: SQL text, or a `SELECT` as sqlparser's tree.
pub(crate) enum Statement<'a> {
    Text(&'a str),
    /// Boxed: a tree is large, and the futures that hold it are moved whole.
    Tree(Box<Query>),
}

impl<'a> From<&'a str> for Statement<'a> {
    fn from(text: &'a str) -> Self {
        Statement::Text(text)
    }
}

impl<'a> From<&'a String> for Statement<'a> {
    fn from(text: &'a String) -> Self {
        Statement::Text(text)
    }
}

impl From<Box<Query>> for Statement<'_> {
    fn from(tree: Box<Query>) -> Self {
        Statement::Tree(tree)
    }
}

/// Runs `statement` in `database` and returns its columns as values, one vector per
/// column.
pub(crate) async fn run(
    query: &QueryEngine,
    database: &str,
    statement: impl Into<Statement<'_>>,
) -> Result<Vec<Vec<Value>>, String> {
    Ok(run_named(query, database, statement).await?.1)
}

/// As [`run`], with the columns' names.
pub(crate) async fn run_named(
    query: &QueryEngine,
    database: &str,
    statement: impl Into<Statement<'_>>,
) -> Result<(Vec<String>, Vec<Vec<Value>>), String> {
    let mut stream = start(query, database, statement).await?;
    let names: Vec<String> = stream
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut columns: Vec<Vec<Value>> = vec![Vec::new(); names.len()];
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| e.to_string())?;
        append(&batch, &mut columns)?;
    }
    Ok((names, columns))
}

/// Runs `statement` in `database` and returns its answer's batches as they are.
pub(crate) async fn run_batches(
    query: &QueryEngine,
    database: &str,
    statement: impl Into<Statement<'_>>,
) -> Result<Vec<RecordBatch>, String> {
    let mut stream = start(query, database, statement).await?;
    let mut batches = Vec::new();
    while let Some(batch) = stream.next().await {
        batches.push(batch.map_err(|e| e.to_string())?);
    }
    Ok(batches)
}

/// `statement` started through the engine's entry point, as every InfluxQL statement runs.
async fn start(
    query: &QueryEngine,
    database: &str,
    statement: impl Into<Statement<'_>>,
) -> Result<QueryStream, String> {
    let started = match statement.into() {
        Statement::Text(text) => {
            tracing::debug!(statement = text, "influxql → sql");
            query.sql_stream(database, text).await
        }
        Statement::Tree(tree) => {
            tracing::debug!(statement = %tree, "influxql → sql tree");
            query.query_stream(database, tree).await
        }
    };
    started.map_err(|e| e.to_string())
}

/// The cells of `batches` (of one schema), one vector per column.
pub(super) fn cells(batches: &[RecordBatch]) -> Result<Vec<Vec<Value>>, String> {
    let width = batches.first().map_or(0, RecordBatch::num_columns);
    let mut columns: Vec<Vec<Value>> = vec![Vec::new(); width];
    for batch in batches {
        append(batch, &mut columns)?;
    }
    Ok(columns)
}

fn append(batch: &RecordBatch, columns: &mut [Vec<Value>]) -> Result<(), String> {
    for (out, array) in columns.iter_mut().zip(batch.columns()) {
        out.reserve(array.len());
        read_column(array, out)?;
    }
    Ok(())
}

/// The cells of `array`, appended to `out`.
pub(super) fn read_column(array: &ArrayRef, out: &mut Vec<Value>) -> Result<(), String> {
    macro_rules! each {
        ($typed:expr, $wrap:expr) => {{
            let typed = $typed;
            for i in 0..typed.len() {
                out.push(if typed.is_null(i) {
                    Value::Null
                } else {
                    $wrap(typed.value(i))
                });
            }
        }};
    }
    match array.data_type() {
        DataType::Float64 => each!(downcast::<Float64Array>(array)?, Value::Float),
        DataType::Int64 => each!(downcast::<Int64Array>(array)?, Value::Integer),
        DataType::UInt64 => each!(downcast::<UInt64Array>(array)?, Value::Unsigned),
        DataType::Boolean => each!(downcast::<BooleanArray>(array)?, Value::Boolean),
        DataType::Utf8 => each!(downcast::<StringArray>(array)?, Value::text),
        DataType::Timestamp(_, _) => {
            let nanos = cast(
                array,
                &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Nanosecond, None),
            )
            .map_err(|e| e.to_string())?;
            each!(downcast::<TimestampNanosecondArray>(&nanos)?, Value::Time)
        }
        DataType::Dictionary(_, value) if value.as_ref() == &DataType::Utf8 => {
            // Tags: one shared string per dictionary value, not one per row.
            let dictionary = array.as_any_dictionary();
            let values = dictionary.values().as_string::<i32>();
            let shared: Vec<Value> = (0..values.len())
                .map(|i| match values.is_null(i) {
                    true => Value::Null,
                    false => Value::text(values.value(i)),
                })
                .collect();
            if shared.is_empty() {
                // Every key is null (arrow's normalized_keys refuses an empty dictionary).
                out.extend(std::iter::repeat_n(Value::Null, array.len()));
                return Ok(());
            }
            let keys = dictionary.normalized_keys();
            for (row, key) in keys.into_iter().enumerate() {
                out.push(match array.is_null(row) {
                    true => Value::Null,
                    false => shared.get(key).cloned().unwrap_or(Value::Null),
                });
            }
        }
        DataType::Dictionary(_, _) | DataType::LargeUtf8 | DataType::Utf8View => {
            let text = cast(array, &DataType::Utf8).map_err(|e| e.to_string())?;
            let text = text.as_string::<i32>();
            each!(text, Value::text)
        }
        DataType::Int32 | DataType::Int16 | DataType::Int8 | DataType::UInt32 => {
            let wide = cast(array, &DataType::Int64).map_err(|e| e.to_string())?;
            each!(downcast::<Int64Array>(&wide)?, Value::Integer)
        }
        DataType::Float32 | DataType::Decimal128(_, _) => {
            let wide = cast(array, &DataType::Float64).map_err(|e| e.to_string())?;
            each!(downcast::<Float64Array>(&wide)?, Value::Float)
        }
        DataType::Null => out.extend(std::iter::repeat_n(Value::Null, array.len())),
        other => {
            return Err(format!(
                "unexpected column type {other} in an InfluxQL answer"
            ));
        }
    }
    Ok(())
}

fn downcast<T: 'static>(array: &ArrayRef) -> Result<&T, String> {
    array
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| format!("unexpected array for {}", array.data_type()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, DictionaryArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::{Value, read_column};

    fn read(array: ArrayRef) -> Vec<Value> {
        let mut out = Vec::new();
        read_column(&array, &mut out).unwrap();
        out
    }

    /// Tag columns come as dictionaries: each value is one shared string, nulls stay null,
    /// and a dictionary of only nulls (no values at all) reads as nulls, not a panic.
    #[test]
    fn dictionary_columns_share_their_values() {
        let tags: DictionaryArray<Int32Type> = [Some("a"), None, Some("b"), Some("a")]
            .into_iter()
            .collect();
        let got = read(Arc::new(tags));
        assert_eq!(
            got,
            [
                Value::text("a"),
                Value::Null,
                Value::text("b"),
                Value::text("a")
            ]
        );
        let (Value::String(first), Value::String(last)) = (&got[0], &got[3]) else {
            unreachable!()
        };
        assert!(
            Arc::ptr_eq(first, last),
            "one allocation per dictionary value"
        );

        let empty: DictionaryArray<Int32Type> = [None::<&str>, None].into_iter().collect();
        assert_eq!(read(Arc::new(empty)), [Value::Null, Value::Null]);
    }
}
