//! Postgres's size functions over Strata's part files: `pg_table_size`,
//! `pg_relation_size` and `pg_total_relation_size` of a table (by oid, as psql's `\dt+`
//! passes `c.oid`, or by name, as a person writes `pg_table_size('cpu')`),
//! `pg_indexes_size` (0: a part's index is part of its table's bytes), and
//! `pg_database_size` (by name or oid). A table's size is the bytes of the live parts that
//! hold its rows (`Engine::part_bytes_by_table`); rows not flushed yet count from their
//! flush on, so a table written a moment ago can be 0 bytes. The catalog's own tables are
//! 0 bytes; an oid or name that is no table is NULL, as in Postgres, and a database that
//! does not exist is an error.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Builder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::prelude::SessionContext;
use strata_storage::Engine;

use super::tables::{TABLES, catalog_oid, oid_of};

/// Which size a function gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Size {
    Table,
    Indexes,
    Database,
}

#[derive(Debug)]
struct SizeFunction {
    name: &'static str,
    aliases: Vec<String>,
    size: Size,
    signature: Signature,
    engine: Arc<Engine>,
}

impl PartialEq for SizeFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.engine, &other.engine)
    }
}

impl Eq for SizeFunction {}

impl std::hash::Hash for SizeFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for SizeFunction {
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
        Ok(DataType::Int64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(first) = args.args.first() else {
            return exec_err!("{}() needs an argument", self.name);
        };
        let database = args.config_options.catalog.default_schema.clone();
        let values = first.to_array(args.number_rows)?;
        let by_oid = values.data_type().is_integer();
        let mut out = Int64Builder::new();
        match self.size {
            Size::Indexes => {
                for i in 0..values.len() {
                    if values.is_null(i) {
                        out.append_null();
                    } else {
                        out.append_value(0);
                    }
                }
            }
            Size::Table => {
                let tables = self.tables(&database);
                let bytes = self.engine.part_bytes_by_table();
                let lookup = |i: usize, values: &dyn Array| -> Option<i64> {
                    let table = if by_oid {
                        let oid = values.as_primitive::<Int64Type>().value(i);
                        if TABLES.iter().any(|t| catalog_oid(t.name) == oid) {
                            return Some(0);
                        }
                        tables.iter().find(|(o, _, _)| *o == oid)
                    } else {
                        let name = values.as_string::<i32>().value(i);
                        let name = name.strip_prefix(&format!("{database}.")).unwrap_or(name);
                        let user = tables.iter().find(|(_, n, _)| n == name);
                        let catalog = name.strip_prefix("pg_catalog.").unwrap_or(name);
                        if user.is_none() && TABLES.iter().any(|t| t.name == catalog) {
                            return Some(0);
                        }
                        user
                    }?;
                    Some(bytes.get(&table.2).copied().unwrap_or(0) as i64)
                };
                let values = self.normalized(&values, by_oid)?;
                for i in 0..values.len() {
                    match (!values.is_null(i)).then(|| lookup(i, &values)).flatten() {
                        Some(size) => out.append_value(size),
                        None => out.append_null(),
                    }
                }
            }
            Size::Database => {
                let sizes = self.engine.part_bytes_by_database();
                let mut names = self.engine.catalog().databases();
                if !names.contains(&database) {
                    names.push(database.clone());
                }
                let values = self.normalized(&values, by_oid)?;
                for i in 0..values.len() {
                    if values.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let name = if by_oid {
                        let oid = values.as_primitive::<Int64Type>().value(i);
                        names.iter().find(|n| oid_of(n) == oid).cloned()
                    } else {
                        let name = values.as_string::<i32>().value(i);
                        names.iter().find(|n| *n == name).cloned()
                    };
                    let Some(name) = name else {
                        if by_oid {
                            let oid = values.as_primitive::<Int64Type>().value(i);
                            return exec_err!("database with OID {oid} does not exist");
                        }
                        let name = values.as_string::<i32>().value(i);
                        return exec_err!("database \"{name}\" does not exist");
                    };
                    let size = sizes.iter().find(|(n, _)| *n == name).map_or(0, |s| s.1);
                    out.append_value(size as i64);
                }
            }
        }
        let result = out.finish();
        if args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)))
        {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &result, 0,
            )?));
        }
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}

impl SizeFunction {
    /// The tables of `database`: oid, name, id.
    fn tables(&self, database: &str) -> Vec<(i64, String, strata_storage::model::TableId)> {
        self.engine
            .catalog()
            .tables(database)
            .into_iter()
            .map(|t| {
                (
                    oid_of(&format!("{database}.{}", t.name)),
                    t.name.clone(),
                    t.id,
                )
            })
            .collect()
    }

    /// The argument as oids (Int64) or names (Utf8).
    fn normalized(&self, values: &Arc<dyn Array>, by_oid: bool) -> Result<Arc<dyn Array>> {
        Ok(cast(
            values,
            if by_oid {
                &DataType::Int64
            } else {
                &DataType::Utf8
            },
        )?)
    }
}

/// Adds the size functions, reading `engine`'s parts, to `context`.
pub(crate) fn register(context: &SessionContext, engine: &Arc<Engine>) {
    let functions = [
        ("pg_table_size", Size::Table),
        ("pg_relation_size", Size::Table),
        ("pg_total_relation_size", Size::Table),
        ("pg_indexes_size", Size::Indexes),
        ("pg_database_size", Size::Database),
    ];
    for (name, size) in functions {
        context.register_udf(ScalarUDF::new_from_impl(SizeFunction {
            name,
            aliases: vec![format!("pg_catalog.{name}")],
            size,
            signature: Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Volatile,
            ),
            engine: Arc::clone(engine),
        }));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::Int64Type;

    use crate::QueryEngine;
    use crate::test_engine::engine_with_rows;

    /// One row of one BIGINT column per result cell, NULL as `None`.
    async fn sizes(sql: &QueryEngine, statement: &str) -> Vec<Option<i64>> {
        let batches = sql.sql("db", statement).await.unwrap();
        let batch = &batches[0];
        (0..batch.num_columns())
            .map(|c| {
                let column = batch.column(c).as_primitive::<Int64Type>();
                (!column.is_null(0)).then(|| column.value(0))
            })
            .collect()
    }

    #[tokio::test]
    async fn sizes_are_the_bytes_of_the_parts_holding_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine_with_rows(dir.path());
        let sql = QueryEngine::new(std::sync::Arc::clone(&engine)).unwrap();
        let statement = "SELECT pg_table_size('m'), pg_database_size('db'), \
                         pg_catalog.pg_total_relation_size('db.m'), pg_table_size('nope'), \
                         pg_indexes_size('m'), pg_table_size('pg_catalog.pg_class')";
        // Before a flush the rows are in memtables: no part holds them.
        let before = sizes(&sql, statement).await;
        assert_eq!(before, [Some(0), Some(0), Some(0), None, Some(0), Some(0)]);
        engine.flush().unwrap();
        let bytes = engine.part_bytes_by_table();
        assert_eq!(bytes.len(), 1);
        let m = *bytes.values().next().unwrap() as i64;
        assert!(m > 0);
        let after = sizes(&sql, statement).await;
        assert_eq!(after, [Some(m), Some(m), Some(m), None, Some(0), Some(0)]);
        // psql's \dt+ passes the table's oid.
        let by_oid = "SELECT pg_catalog.pg_table_size(c.oid) FROM pg_catalog.pg_class c \
                      WHERE c.relname = 'm'";
        assert_eq!(sizes(&sql, by_oid).await, [Some(m)]);
        let catalog = "SELECT pg_table_size(c.oid) FROM pg_catalog.pg_class c \
                       WHERE c.relname = 'pg_class'";
        assert_eq!(sizes(&sql, catalog).await, [Some(0)]);
        let missing = sql.sql("db", "SELECT pg_database_size('nowhere')").await;
        let message = missing.err().unwrap().to_string();
        assert!(
            message.contains("database \"nowhere\" does not exist"),
            "{message}"
        );
    }
}
