//! The engine's catalog as DataFusion sees it: one catalog, `strata`, whose schemas are the
//! engine's databases and whose tables are read from the engine's catalog at every lookup,
//! so tables created after start are visible to the next statement.
//!
//! `public`, Postgres's default schema, which clients and ORMs write out (`"public"."t"`),
//! is the statement's own database unless a database is named `public` ([`database_of`]).
//! A name no table of the database has may be a table of `pg_catalog`, as in Postgres.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;
use strata_storage::Engine;

use crate::pg_catalog::{PG_CATALOG, PgCatalogSchema};
use crate::table::StrataTable;

/// Name of the DataFusion catalog holding every database (`strata.db.table`).
pub const CATALOG_NAME: &str = "strata";

/// Postgres's default schema.
const PUBLIC: &str = "public";

/// The statement being planned or run: the engine and the statement's database.
struct Statement {
    engine: Arc<Engine>,
    database: String,
}

impl Statement {
    fn new(engine: &Arc<Engine>, database: &str) -> Self {
        Statement {
            engine: Arc::clone(engine),
            database: database.to_owned(),
        }
    }
}

tokio::task_local! {
    /// The statement whose names are being resolved: where `public.t` is.
    static STATEMENT: Statement;
}

/// Runs `work` (a statement's planning or running, which resolves its table names) as a
/// statement of `database`.
pub(crate) async fn in_statement<F: Future>(
    engine: &Arc<Engine>,
    database: &str,
    work: F,
) -> F::Output {
    STATEMENT
        .scope(Statement::new(engine, database), work)
        .await
}

/// [`in_statement`] for work that does not wait.
pub(crate) fn in_statement_now<R>(
    engine: &Arc<Engine>,
    database: &str,
    work: impl FnOnce() -> R,
) -> R {
    STATEMENT.sync_scope(Statement::new(engine, database), work)
}

/// The database that schema name `schema` means in the current statement (itself outside
/// one): see [`database_of`].
pub(crate) fn schema_database(schema: &str) -> String {
    STATEMENT
        .try_with(|s| database_of(&s.engine, &s.database, schema).to_owned())
        .unwrap_or_else(|_| schema.to_owned())
}

/// The database a statement in `database` means by schema `schema`: itself, except that
/// `public` means the statement's own database when no database is named `public`.
pub(crate) fn database_of<'a>(engine: &Engine, database: &'a str, schema: &'a str) -> &'a str {
    if schema == PUBLIC && !engine.catalog().has_database(PUBLIC) {
        database
    } else {
        schema
    }
}

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
            database: schema_database(name),
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

    /// The database's table `name`, else the system catalog's: Postgres looks names up in
    /// `pg_catalog` too, so tools write `FROM pg_class` unqualified. A table of the
    /// database comes first (Postgres searches `pg_catalog` first), so that no stored
    /// measurement named like a catalog table is hidden.
    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match StrataTable::open(Arc::clone(&self.engine), &self.database, name) {
            Some(table) => Ok(Some(Arc::new(table))),
            None => {
                PgCatalogSchema::new(Arc::clone(&self.engine))
                    .table(name)
                    .await
            }
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.engine.table(&self.database, name).is_some()
    }
}
