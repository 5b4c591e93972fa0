//! The HTTP accept loop, in place of `axum::serve`: each connection is served by hyper's
//! HTTP/1 connection with a timer, so that a client must send each request's head within
//! `client_timeout` (axum's loop sets no timer, which leaves hyper's header timeout off and
//! lets a client that trickles its headers hold a connection for ever), and at most
//! `max_connections` are open at once (one more is closed as soon as it is accepted).
//! Shutdown: the loop stops accepting, each connection finishes the request it is serving
//! and closes, and the loop returns when every connection has.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tower::ServiceExt;

use crate::metrics::Metrics;
use crate::tcp;

/// What bounds the HTTP listener's connections.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest a client may take to send a request's head.
    pub client_timeout: Duration,
}

/// Serves `router` on the connections `listener` accepts until `stop` says so.
pub(crate) async fn serve<L>(
    mut listener: L,
    router: Router,
    limits: ConnectionLimits,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) where
    L: Listener,
{
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let mut connections = JoinSet::new();
    loop {
        let io = tokio::select! {
            (io, _addr) = listener.accept() => io,
            () = tcp::stopped(&mut stop) => break,
        };
        // Reap the connections that have ended, so the set stays as large as the open ones.
        while connections.try_join_next().is_some() {}
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            metrics
                .http_connections_refused
                .fetch_add(1, Ordering::Relaxed);
            drop(io);
            continue;
        };
        metrics.http_connections.fetch_add(1, Ordering::Relaxed);
        metrics
            .http_connections_open
            .fetch_add(1, Ordering::Relaxed);
        let service = TowerToHyperService::new(
            router
                .clone()
                .map_request(|request: Request<Incoming>| request.map(Body::new)),
        );
        let (metrics, mut stop) = (Arc::clone(&metrics), stop.clone());
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.client_timeout);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            tokio::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = tcp::stopped(&mut stop) => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = served {
                tracing::debug!("HTTP connection ended: {e}");
            }
            metrics
                .http_connections_open
                .fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}
