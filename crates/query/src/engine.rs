//! [`QueryEngine`]: SQL over an [`Engine`] through DataFusion.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::context::SessionState;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use strata_storage::Engine;
use strata_storage::options::available_cores;

use crate::catalog::{CATALOG_NAME, StrataCatalog};
use crate::error::QueryError;
use crate::functions;

/// How queries run.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// Threads a query may use (DataFusion's `target_partitions`): joins, aggregates and
    /// sorts repartition to this many streams. Default: the cores this process may use.
    pub target_partitions: usize,
}

impl Default for QueryOptions {
    fn default() -> Self {
        Self {
            target_partitions: available_cores(),
        }
    }
}

/// Runs SQL statements against the engine's tables.
///
/// Tables are named `table` (in the statement's database), `database.table`, or
/// `strata.database.table`. Unquoted identifiers are lower-cased (standard SQL); quote
/// names with capitals: `"CPU"`. Statements are read-only for now: DDL, DML and `SET` are
/// refused with [`QueryError::NotSupported`] or [`QueryError::Plan`].
pub struct QueryEngine {
    engine: Arc<Engine>,
    /// The session every statement starts from (functions, catalog, configuration).
    state: SessionState,
}

impl std::fmt::Debug for QueryEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryEngine")
            .field("engine", &self.engine)
            .finish()
    }
}

impl QueryEngine {
    /// A query engine over `engine` with default options.
    pub fn new(engine: Arc<Engine>) -> Self {
        Self::with_options(engine, QueryOptions::default())
    }

    /// A query engine over `engine`.
    pub fn with_options(engine: Arc<Engine>, options: QueryOptions) -> Self {
        let mut config = SessionConfig::new()
            .with_target_partitions(options.target_partitions.max(1))
            .with_default_catalog_and_schema(CATALOG_NAME, "public")
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(false);
        // Spans let planning errors point at the offending identifier.
        config.options_mut().sql_parser.collect_spans = true;
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build();
        let context = SessionContext::new_with_state(state);
        context.register_catalog(
            CATALOG_NAME,
            Arc::new(StrataCatalog::new(Arc::clone(&engine))),
        );
        functions::register(&context);
        Self {
            engine,
            state: context.state(),
        }
    }

    /// The storage engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// A DataFusion context whose unqualified table names resolve in `database`; for
    /// callers that want DataFusion's own API (data frames, streaming results).
    pub fn context(&self, database: &str) -> SessionContext {
        let mut state = self.state.clone();
        state.config_mut().options_mut().catalog.default_schema = database.to_string();
        SessionContext::new_with_state(state)
    }

    /// Runs one read-only statement with unqualified table names in `database`; returns
    /// every result batch.
    pub async fn sql(
        &self,
        database: &str,
        statement: &str,
    ) -> Result<Vec<RecordBatch>, QueryError> {
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        let frame = self
            .context(database)
            .sql_with_options(statement, options)
            .await
            .map_err(|e| QueryError::from(e).at_end_if_unplaced(statement))?;
        Ok(frame.collect().await?)
    }
}
