//! The in-process target: statements run on a [`QueryEngine`] in this process.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use strata_query::QueryEngine;

use super::{Answer, QueryClient};
use crate::queries::Query;

/// An in-process query target: one [`QueryEngine`] over the storage engine and the tokio
/// runtime its statements run on, shared by every [`EmbeddedClient`].
pub struct EmbeddedQueries {
    engine: Arc<QueryEngine>,
    runtime: Arc<tokio::runtime::Runtime>,
    database: String,
}

impl EmbeddedQueries {
    /// A query engine with default options over `engine`, reading `database`, on a runtime
    /// with one worker thread per core this process may use.
    pub fn new(engine: Arc<strata_storage::Engine>, database: &str) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(strata_storage::options::available_cores())
            .thread_stack_size(strata_query::nesting::PLANNING_STACK_BYTES)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the query runtime: {e}"))?;
        let engine = QueryEngine::new(engine).map_err(|e| e.to_string())?;
        Ok(Self {
            engine: Arc::new(engine),
            runtime: Arc::new(runtime),
            database: database.to_string(),
        })
    }

    /// A client (one per client thread).
    pub fn client(&self) -> EmbeddedClient {
        EmbeddedClient::new(
            Arc::clone(&self.engine),
            Arc::clone(&self.runtime),
            &self.database,
        )
    }
}

/// Runs statements in-process on a shared [`QueryEngine`] and tokio runtime.
pub struct EmbeddedClient {
    engine: Arc<QueryEngine>,
    runtime: Arc<tokio::runtime::Runtime>,
    database: String,
}

impl EmbeddedClient {
    /// A client of `engine` (reading `database`) that runs on `runtime`.
    pub fn new(
        engine: Arc<QueryEngine>,
        runtime: Arc<tokio::runtime::Runtime>,
        database: &str,
    ) -> Self {
        Self {
            engine,
            runtime,
            database: database.to_string(),
        }
    }
}

impl QueryClient for EmbeddedClient {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let started = Instant::now();
        let rows = self.runtime.block_on(async {
            if query.streamed {
                // Rows are counted as batches arrive; nothing is held.
                let mut stream = self
                    .engine
                    .sql_stream(&self.database, &query.sql)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut rows = 0u64;
                while let Some(batch) = stream.next().await {
                    rows += batch.map_err(|e| e.to_string())?.num_rows() as u64;
                }
                Ok::<u64, String>(rows)
            } else {
                let batches = self
                    .engine
                    .sql(&self.database, &query.sql)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
            }
        })?;
        Ok(Answer {
            rows,
            latency: started.elapsed(),
        })
    }
}
