//! `pg_catalog`: enough of Postgres's system catalog, built from Strata's, for SQL clients'
//! metadata queries (psql's `\l`, `\dt`, `\d`; drivers' table and column lists) to run as
//! ordinary SQL through DataFusion. It is a schema of every database (`pg_catalog.pg_class`
//! resolves wherever the connection is) whose tables are filled, when a statement scans
//! them, for the statement's database (see [`tables`]); the functions those queries call
//! are in [`functions`] and [`sizes`]; [`types`] maps Strata's columns to Postgres types.

mod functions;
mod sizes;
mod tables;
pub mod types;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use strata_storage::Engine;

pub use functions::{quote_ident, type_oid};
use tables::CatalogTable;
pub use tables::{NULL_ARRAY_COLUMNS, OWNER_NAME};

/// Adds the catalog functions, and the size functions reading `engine`'s parts, to
/// `context`.
pub(crate) fn register(context: &datafusion::prelude::SessionContext, engine: &Arc<Engine>) {
    functions::register(context);
    sizes::register(context, engine);
}

/// The schema name.
pub const PG_CATALOG: &str = "pg_catalog";

/// The `pg_catalog` schema.
#[derive(Debug)]
pub(crate) struct PgCatalogSchema {
    engine: Arc<Engine>,
}

impl PgCatalogSchema {
    pub(crate) fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

#[async_trait]
impl SchemaProvider for PgCatalogSchema {
    fn table_names(&self) -> Vec<String> {
        tables::TABLES.iter().map(|t| t.name.to_owned()).collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(tables::table(name).map(|table| {
            Arc::new(PgCatalogTable {
                engine: Arc::clone(&self.engine),
                table: *table,
            }) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        tables::table(name).is_some()
    }
}

/// One catalog table; its rows are built at scan time for the statement's database.
#[derive(Debug)]
struct PgCatalogTable {
    engine: Arc<Engine>,
    table: CatalogTable,
}

#[async_trait]
impl TableProvider for PgCatalogTable {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // The engine runs each statement with its database as the default schema.
        let database = &state.config_options().catalog.default_schema;
        let batch = self.table.batch(&self.engine, database)?;
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema(),
            projection.cloned(),
        )?)
    }
}
