//! The engine's catalog as DataFusion sees it: one catalog, `strata`, whose schemas are the
//! engine's databases and whose tables are read from the engine's catalog at every lookup,
//! so tables created after start are visible to the next statement.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;
use strata_storage::Engine;

use crate::pg_catalog::{PG_CATALOG, PgCatalogSchema};
use crate::table::StrataTable;

/// Name of the DataFusion catalog holding every database (`strata.db.table`).
pub const CATALOG_NAME: &str = "strata";

/// Every database of the engine; any name is a schema (a database without tables yet has
/// none, so its queries fail with "table not found"); and `pg_catalog`, Postgres's system
/// catalog for SQL clients (a database cannot be named so).
#[derive(Debug)]
pub struct StrataCatalog {
    engine: Arc<Engine>,
}

impl StrataCatalog {
    /// The catalog of `engine`.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

impl CatalogProvider for StrataCatalog {
    fn schema_names(&self) -> Vec<String> {
        let mut names = self.engine.catalog().databases();
        names.push(PG_CATALOG.to_owned());
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name == PG_CATALOG {
            return Some(Arc::new(PgCatalogSchema::new(Arc::clone(&self.engine))));
        }
        Some(Arc::new(DatabaseSchema {
            engine: Arc::clone(&self.engine),
            database: name.to_string(),
        }))
    }
}

/// The tables of one database.
#[derive(Debug)]
pub struct DatabaseSchema {
    engine: Arc<Engine>,
    database: String,
}

#[async_trait]
impl SchemaProvider for DatabaseSchema {
    fn table_names(&self) -> Vec<String> {
        self.engine
            .catalog()
            .tables(&self.database)
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(
            StrataTable::open(Arc::clone(&self.engine), &self.database, name)
                .map(|t| Arc::new(t) as Arc<dyn TableProvider>),
        )
    }

    fn table_exist(&self, name: &str) -> bool {
        self.engine.table(&self.database, name).is_some()
    }
}
