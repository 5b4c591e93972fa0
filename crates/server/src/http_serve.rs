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

/// The HTTP listener without TLS. Each accepted socket gets TCP_NODELAY: with Nagle's
/// algorithm a response whose last segment is small (a streamed body's final chunk) waits
/// for the client's delayed ACK, 40 ms on Linux, which was the p99 of TSBS high-cpu over
/// HTTP. A failed accept (out of file descriptors, most likely) is logged and tried
/// again after a pause, as the TCP, Postgres and HTTPS listeners do; axum's own listener
/// waits a second without a word unless built with its `tracing` feature.
pub(crate) struct PlainListener(pub tokio::net::TcpListener);

impl Listener for PlainListener {
    type Io = tokio::net::TcpStream;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, peer)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!("cannot set TCP_NODELAY: {e}");
                    }
                    return (stream, peer);
                }
                // The client gave up before the accept: nothing to wait for.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted
                            | std::io::ErrorKind::ConnectionReset
                            | std::io::ErrorKind::ConnectionRefused
                    ) => {}
                Err(e) => {
                    tracing::warn!("cannot accept HTTP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

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

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    #[tokio::test]
    async fn accepted_http_connections_have_nagle_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let mut listener = super::PlainListener(listener);
        let client = tokio::spawn(tokio::net::TcpStream::connect(addr));
        let (stream, _) = listener.accept().await;
        assert_eq!(stream.nodelay().ok(), Some(true));
        drop(client.await);
    }
}
