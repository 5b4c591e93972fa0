//! The Postgres wire protocol (`--pg`, v3), on the `pgwire` library: psql, Grafana's
//! PostgreSQL data source and Postgres drivers query Strata through it. Every statement
//! runs through [`strata_query::QueryEngine::sql_stream`], like `/sql`; the connection's
//! Postgres database is the Strata database its unqualified table names are in.
//!
//! Files: `startup` (authentication, cancel requests), `session` (settings and the session
//! statements answered here), `query` (simple and extended protocol), `params` (bound
//! values as literals), `sql_text` (statement splitting, `$n`, Postgres-only catalog
//! syntax), `catalog_sql` and `from_functions` (catalog queries made plannable), `encode`
//! (Arrow to Postgres
//! rows), `errors` (SQLSTATE codes). `pg_catalog` itself is in `strata_query`. What differs from Postgres is in `docs/postgres.md`.

mod catalog_arrays;
mod catalog_sql;
mod column_names;
mod copy_in;
mod copy_in_binary;
mod copy_out;
mod copy_statement;
mod encode;
mod encode_array;
mod errors;
mod float_text;
mod from_functions;
mod interval;
mod params;
mod params_array;
mod query;
mod select_series;
mod session;
mod setting_calls;
mod settings_view;
mod sql_text;
mod startup;
mod type_introspection;

#[cfg(test)]
mod no_panic_tests;

use std::sync::Arc;
use std::time::Duration;

use pgwire::api::{ConnectionManager, PgWireServerHandlers, RandomPidSecretKeyGenerator};
use strata_query::QueryEngine;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;
use query::Queries;
use startup::{CancelFlags, Canceller, Startup};

/// What the listener needs.
pub(crate) struct PgContext {
    pub query: Arc<QueryEngine>,
    pub config: Arc<ServerConfig>,
    /// TLS for clients that ask for it (`sslmode=require`); without it their SSL request
    /// is refused and they may go on in plaintext.
    pub tls: Option<TlsAcceptor>,
}

/// pgwire's handler set: one of each, shared by every connection.
struct Handlers {
    startup: Arc<Startup>,
    queries: Arc<Queries>,
    canceller: Arc<Canceller>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        Arc::clone(&self.queries)
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        Arc::clone(&self.queries)
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        Arc::clone(&self.startup)
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::clone(&self.canceller)
    }

    fn copy_handler(&self) -> Arc<impl pgwire::api::copy::CopyHandler> {
        Arc::clone(&self.queries)
    }
}

/// Serves Postgres connections on `listener` until `stop` turns true, then closes them
/// (a fast shutdown: a statement still running is cancelled; its client sees the
/// connection end). At most `max_connections` are open at once; one more is closed at
/// once.
pub(crate) async fn serve(
    listener: TcpListener,
    context: PgContext,
    mut stop: watch::Receiver<bool>,
) {
    let manager = Arc::new(ConnectionManager::new());
    let flags = Arc::new(CancelFlags::default());
    let handlers = Arc::new(Handlers {
        startup: Arc::new(Startup {
            config: Arc::clone(&context.config),
            flags: Arc::clone(&flags),
            manager: Arc::clone(&manager),
            keys: RandomPidSecretKeyGenerator::default(),
        }),
        queries: Arc::new(Queries::new(Arc::clone(&context.query))),
        canceller: Arc::new(Canceller { flags, manager }),
    });
    let slots = Arc::new(Semaphore::new(context.config.max_connections));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
                        tracing::warn!(%peer, "Postgres connection refused: {} open (max connections)", context.config.max_connections);
                        continue;
                    };
                    if let Err(e) = socket.set_nodelay(true) {
                        tracing::debug!("cannot set TCP_NODELAY: {e}");
                    }
                    let handlers = Arc::clone(&handlers);
                    let tls = context.tls.clone();
                    connections.spawn(async move {
                        if let Err(e) = pgwire::tokio::process_socket(socket, tls, handlers).await {
                            tracing::debug!(%peer, "Postgres connection ended: {e}");
                        }
                        drop(slot);
                    });
                }
                Err(e) => {
                    // Out of file descriptors, most likely: wait rather than spin.
                    tracing::warn!("Postgres accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stop.changed() => break,
        }
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}
