//! TLS for the HTTP and TCP listeners (`--tls-cert`, `--tls-key`): rustls on ring, TLS 1.2
//! and 1.3, one certificate chain and key from PEM files. With TLS on, a listener speaks
//! only TLS: a plaintext client's bytes fail the handshake and its connection is closed.
//!
//! Handshakes run on their own tasks (bounded by [`HANDSHAKE_TIMEOUT`]) so that a slow or
//! silent client never holds up the accept loop; finished connections reach the HTTP
//! server through [`TlsListener`], an `axum::serve::Listener`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::error::ServerError;

/// A client must finish its handshake within this time of connecting.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Finished handshakes waiting for the HTTP server to take them.
const READY_QUEUE: usize = 64;

/// What a listener speaks over TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// HTTP/1.1 (announced by ALPN).
    Http,
    /// Line protocol over TCP: nothing is ever sent to the client after the handshake, not
    /// even TLS 1.3 session tickets. A fire-and-forget client closes without reading; had
    /// tickets been sent, unread bytes would make its kernel reset the connection, and a
    /// reset can discard the last lines it wrote before they are read.
    LineProtocol,
    /// The Postgres wire: TLS after an SSL request, or direct TLS announced by ALPN.
    Postgres,
}

/// The acceptor for `cert` (a PEM chain, leaf first) and `key` (a PEM private key:
/// PKCS#8, PKCS#1 or SEC1). Errors name the file and what is wrong.
pub fn acceptor(cert: &Path, key: &Path, wire: Wire) -> Result<TlsAcceptor, ServerError> {
    let bad = |what: &str, path: &Path, e: &dyn std::fmt::Display| {
        ServerError::Config(format!("{what} {}: {e}", path.display()))
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("cannot read TLS certificate", cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad("bad TLS certificate", cert, &e))?;
    if chain.is_empty() {
        return Err(bad(
            "no certificate in",
            cert,
            &"expected PEM \"BEGIN CERTIFICATE\" blocks",
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("cannot read TLS key", key, &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Config(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| ServerError::Config(format!("TLS certificate and key do not fit: {e}")))?;
    match wire {
        Wire::Http => config.alpn_protocols = vec![b"http/1.1".to_vec()],
        Wire::LineProtocol => config.send_tls13_tickets = 0,
        Wire::Postgres => config.alpn_protocols = vec![b"postgresql".to_vec()],
    }
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Runs `acceptor`'s handshake on `stream` within [`HANDSHAKE_TIMEOUT`]; `None` (logged at
/// debug) when it fails: a plaintext client, a client that does not trust the
/// certificate, or one that says nothing.
pub async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
) -> Option<TlsStream<TcpStream>> {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::debug!(%peer, "TLS handshake failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            None
        }
    }
}

/// A listener handing out connections whose TLS handshake has finished.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `listener` and runs each handshake on a task of its own. Each accepted
    /// socket gets TCP_NODELAY (as `http_serve::PlainListener` does).
    pub fn new(listener: TcpListener, acceptor: TlsAcceptor) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (sender, ready) = mpsc::channel(READY_QUEUE);
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    // The server dropped the listener: stop accepting (and unbind).
                    () = sender.closed() => break,
                };
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait instead of spinning.
                        tracing::warn!("cannot accept HTTPS connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, sender) = (acceptor.clone(), sender.clone());
                tokio::spawn(async move {
                    if let Some(tls) = handshake(&acceptor, stream, peer).await {
                        let _ = sender.send((tls, peer)).await;
                    }
                });
            }
        });
        Ok(Self { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(connection) => connection,
            // The accept task ended (it never does while the listener lives).
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
