//! Line protocol over plain TCP: asynchronous writes, nothing is answered. The OpenTSDB
//! telnet listener (`--opentsdb`) is the same loop with another batch handler
//! ([`crate::opentsdb::telnet`]), which answers bad lines as OpenTSDB does.
//!
//! With `--tls-cert`/`--tls-key`, connections speak TLS (the same certificate as HTTP).
//! With an auth token set, a connection's first line must be `auth <token>` (the auth
//! token; the read-only token cannot write): otherwise the server answers one line,
//! `ERR …`, closes the connection and stores nothing from it.
//!
//! `accept → per connection: read → split lines (skip over-long ones) → batch (flush at
//! TCP_BATCH_BYTES, TCP_BATCH_LINES, or when the socket has nothing more ready) →
//! spawn_blocking: Engine::write_lines`. A bad line is counted and logged (rate-limited);
//! the connection and the other lines survive.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::FutureExt;
use strata_lineproto::Precision;
use strata_storage::Engine;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::auth;
use crate::config::ServerConfig;
use crate::metrics::Metrics;

/// The `auth <token>` line may be this long at most ...
const AUTH_LINE_MAX_BYTES: usize = 4096;
/// ... and must arrive within this time of connecting.
const AUTH_TIMEOUT: Duration = Duration::from_secs(10);

/// A batch is written once it holds this many bytes: large enough that the per-write
/// costs (schema cache, shard hand-off, WAL record) are amortized, small enough that a
/// connection holds little memory.
const TCP_BATCH_BYTES: usize = 1 << 20;
/// ... or this many lines (TSBS and Telegraf batches are 5,000 to 10,000 lines).
const TCP_BATCH_LINES: usize = 10_000;
/// Bytes asked of the socket per read.
const READ_CHUNK_BYTES: usize = 64 << 10;
/// At most one bad-line log message per connection per this interval; the rest are counted
/// and summed up in the next message.
const BAD_LINE_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// How a TCP listener's lines are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TcpProtocol {
    /// Line protocol; nothing is ever answered.
    LineProtocol,
    /// OpenTSDB's telnet commands (`put`, `version`, `help`, `exit`); bad lines are answered.
    OpenTsdb,
}

/// A client that reads none of the answers to its bad lines is cut off once one answer has
/// waited this long to be sent.
const REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// What every connection shares.
#[derive(Clone)]
pub(crate) struct TcpContext {
    pub protocol: TcpProtocol,
    pub engine: Arc<Engine>,
    pub metrics: Arc<Metrics>,
    pub database: Arc<str>,
    pub max_line_bytes: usize,
    /// For the auth token.
    pub config: Arc<ServerConfig>,
    /// Set when connections must speak TLS.
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

impl std::fmt::Debug for TcpContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpContext")
            .field("protocol", &self.protocol)
            .field("database", &self.database)
            .field("max_line_bytes", &self.max_line_bytes)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// The counters of one listener's protocol.
struct Counters<'a> {
    rows: &'a AtomicU64,
    bad_lines: &'a AtomicU64,
    connections: &'a AtomicU64,
}

impl TcpContext {
    fn counters(&self) -> Counters<'_> {
        let metrics = &self.metrics;
        match self.protocol {
            TcpProtocol::LineProtocol => Counters {
                rows: &metrics.tcp_rows,
                bad_lines: &metrics.tcp_bad_lines,
                connections: &metrics.tcp_connections,
            },
            TcpProtocol::OpenTsdb => Counters {
                rows: &metrics.opentsdb_rows,
                bad_lines: &metrics.opentsdb_bad_lines,
                connections: &metrics.opentsdb_connections,
            },
        }
    }
}

/// Accepts connections until `shutdown` turns true, then waits for every connection to
/// write what it has read.
pub(crate) async fn serve(
    listener: TcpListener,
    context: TcpContext,
    shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    context.counters().connections.fetch_add(1, Ordering::Relaxed);
                    let context = context.clone();
                    let shutdown = shutdown.clone();
                    connections.spawn(async move {
                        let result = match &context.tls {
                            Some(acceptor) => match crate::tls::handshake(acceptor, stream, peer).await {
                                Some(tls) => connection(tls, peer, &context, shutdown).await,
                                None => Ok(()),
                            },
                            None => connection(stream, peer, &context, shutdown).await,
                        };
                        if let Err(e) = result {
                            tracing::warn!(%peer, "TCP connection closed: {e}");
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!("cannot accept TCP connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = stopped(&mut stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// Resolves once the shutdown flag is set (or its sender is gone).
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

/// Splits a byte stream into a batch of whole lines, skipping lines over the cap.
#[derive(Debug, Default)]
struct LineSplitter {
    /// Whole lines, each ending in `\n`.
    batch: Vec<u8>,
    batch_lines: usize,
    /// The start of a line whose end has not arrived.
    partial: Vec<u8>,
    /// Dropping the rest of an over-long line until its newline.
    skipping: bool,
    /// Over-long lines seen and not yet reported.
    too_long: u64,
    /// Leave an empty line in the batch in place of each over-long line, so that the lines
    /// after it keep their numbers (OpenTSDB's answers name lines by number).
    keep_place: bool,
}

impl LineSplitter {
    fn push(&mut self, mut data: &[u8], max_line_bytes: usize) {
        while !data.is_empty() {
            let newline = memchr::memchr(b'\n', data);
            let (segment, rest) = match newline {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &data[data.len()..]),
            };
            if self.skipping {
                if newline.is_some() {
                    self.skipping = false;
                }
            } else if self.partial.len() + segment.len() > max_line_bytes {
                self.partial.clear();
                self.too_long += 1;
                self.skipping = newline.is_none();
                if self.keep_place {
                    self.batch.push(b'\n');
                    self.batch_lines += 1;
                }
            } else if newline.is_some() {
                if self.partial.is_empty() {
                    self.batch.extend_from_slice(segment);
                } else {
                    self.batch.append(&mut self.partial);
                    self.batch.extend_from_slice(segment);
                }
                self.batch.push(b'\n');
                self.batch_lines += 1;
            } else {
                self.partial.extend_from_slice(segment);
            }
            data = rest;
        }
    }

    /// At end of stream: a last line without a newline still counts.
    fn finish(&mut self) {
        if !self.partial.is_empty() && !self.skipping {
            self.batch.append(&mut self.partial);
            self.batch.push(b'\n');
            self.batch_lines += 1;
        }
    }

    fn full(&self) -> bool {
        self.batch.len() >= TCP_BATCH_BYTES || self.batch_lines >= TCP_BATCH_LINES
    }
}

/// Rate-limited logging of bad lines.
#[derive(Debug, Default)]
struct BadLineLog {
    last: Option<Instant>,
    suppressed: u64,
}

impl BadLineLog {
    fn report(&mut self, peer: SocketAddr, count: u64, example: &str) {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) < BAD_LINE_LOG_INTERVAL)
        {
            self.suppressed += count;
            return;
        }
        let earlier = std::mem::take(&mut self.suppressed);
        tracing::warn!(%peer, bad_lines = count, suppressed_since_last_log = earlier, "TCP write rejected lines: {example}");
        self.last = Some(now);
    }
}

async fn connection<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    peer: SocketAddr,
    context: &TcpContext,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    tracing::debug!(%peer, "TCP connection");
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut lines = LineSplitter {
        keep_place: context.protocol == TcpProtocol::OpenTsdb,
        ..LineSplitter::default()
    };
    // The number of the next line handed to a batch (OpenTSDB's answers name lines).
    let mut next_line = 1u64;
    if context.config.auth_token.is_some() {
        next_line += 1;
        match authenticate(&mut stream, context).await? {
            Some(rest) => lines.push(&rest, context.max_line_bytes),
            None => {
                context
                    .metrics
                    .tcp_auth_failures
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%peer, "TCP connection refused: no valid auth line");
                return Ok(());
            }
        }
    }
    let mut log = BadLineLog::default();
    let mut eof = false;
    let mut cut_short = false;
    // Whole lines that came with the auth line are run before waiting for more (an
    // interactive OpenTSDB client waits for its `version`).
    let mut run_first = !lines.batch.is_empty();
    while !eof {
        let read = if std::mem::take(&mut run_first) {
            None
        } else {
            let read = tokio::select! {
                read = stream.read(&mut chunk) => read,
                () = stopped(&mut shutdown) => Ok(0),
            };
            Some(end_of_stream(read, &mut cut_short, peer)?)
        };
        if read == Some(0) {
            eof = true;
        } else if let Some(read) = read {
            lines.push(&chunk[..read], context.max_line_bytes);
            // Take what is already there without waiting, up to a full batch.
            while !lines.full() {
                // One poll: a read that would wait is dropped (reads are cancel-safe, on
                // plain sockets and TLS streams alike).
                let Some(read) = stream.read(&mut chunk).now_or_never() else {
                    break;
                };
                match end_of_stream(read, &mut cut_short, peer)? {
                    0 => {
                        eof = true;
                        break;
                    }
                    n => lines.push(&chunk[..n], context.max_line_bytes),
                }
            }
        }
        // A TLS stream that ended without close_notify may have been cut by someone in
        // between: its unfinished last line is dropped, the whole lines before it kept.
        if eof && !cut_short {
            lines.finish();
        }
        if lines.too_long > 0 {
            let count = std::mem::take(&mut lines.too_long);
            context
                .counters()
                .bad_lines
                .fetch_add(count, Ordering::Relaxed);
            let message = format!(
                "line longer than the limit of {} bytes (max line bytes), skipped",
                context.max_line_bytes
            );
            log.report(peer, count, &message);
            if context.protocol == TcpProtocol::OpenTsdb {
                let answer = format!("put: {count} {message}\n");
                send_answer(&mut stream, answer.as_bytes()).await?;
            }
        }
        if !lines.batch.is_empty() {
            match context.protocol {
                TcpProtocol::LineProtocol => {
                    write_batch(&mut lines, peer, context, &mut log).await?
                }
                TcpProtocol::OpenTsdb => {
                    let exit =
                        run_opentsdb_batch(&mut stream, &mut lines, &mut next_line, peer, context)
                            .await?;
                    if exit {
                        return Ok(());
                    }
                }
            }
        }
    }
    Ok(())
}

/// Runs a batch of OpenTSDB telnet commands, sends back what they answer, and says whether
/// the client asked to `exit`.
async fn run_opentsdb_batch<S: AsyncWrite + Unpin>(
    stream: &mut S,
    lines: &mut LineSplitter,
    next_line: &mut u64,
    peer: SocketAddr,
    context: &TcpContext,
) -> std::io::Result<bool> {
    let batch = std::mem::take(&mut lines.batch);
    let first_line = *next_line;
    *next_line += std::mem::take(&mut lines.batch_lines) as u64;
    let engine = Arc::clone(&context.engine);
    let database = Arc::clone(&context.database);
    let (result, mut batch) = tokio::task::spawn_blocking(move || {
        let result = crate::opentsdb::telnet::run_batch(&engine, &database, &batch, first_line);
        (result, batch)
    })
    .await
    .map_err(|e| std::io::Error::other(format!("write task failed: {e}")))?;
    batch.clear();
    lines.batch = batch; // keep the capacity
    let outcome = result.map_err(|e| {
        tracing::error!(%peer, "OpenTSDB write failed: {e}");
        std::io::Error::other(format!("write failed: {e}"))
    })?;
    let counters = context.counters();
    counters.rows.fetch_add(outcome.points, Ordering::Relaxed);
    counters
        .bad_lines
        .fetch_add(outcome.bad_lines, Ordering::Relaxed);
    if !outcome.replies.is_empty() {
        send_answer(stream, &outcome.replies).await?;
    }
    Ok(outcome.exit)
}

/// Sends `answer` to the client, which has [`REPLY_TIMEOUT`] to make room for it.
async fn send_answer<S: AsyncWrite + Unpin>(stream: &mut S, answer: &[u8]) -> std::io::Result<()> {
    let send = async {
        stream.write_all(answer).await?;
        stream.flush().await
    };
    tokio::time::timeout(REPLY_TIMEOUT, send)
        .await
        .map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the client read none of the answers to its bad lines for {REPLY_TIMEOUT:?}"
                ),
            )
        })?
}

/// A read's result, with a TLS stream that ended without `close_notify` (most line
/// protocol clients just close the socket) read as the end of the stream, `cut_short` set.
fn end_of_stream(
    read: std::io::Result<usize>,
    cut_short: &mut bool,
    peer: SocketAddr,
) -> std::io::Result<usize> {
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            tracing::debug!(%peer, "TLS connection ended without close_notify");
            *cut_short = true;
            Ok(0)
        }
        other => other,
    }
}

/// Reads the connection's first line and checks it is `auth <auth token>`; returns the
/// bytes that followed it, or `None` (after telling the client why) when it is not.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    context: &TcpContext,
) -> std::io::Result<Option<Vec<u8>>> {
    let deadline = tokio::time::Instant::now() + AUTH_TIMEOUT;
    let mut received: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 1024];
    let line_end = loop {
        if let Some(end) = memchr::memchr(b'\n', &received) {
            break Some(end);
        }
        if received.len() > AUTH_LINE_MAX_BYTES {
            break None;
        }
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(0)) | Err(_) => break None,
            Ok(Ok(n)) => received.extend_from_slice(&chunk[..n]),
            Ok(Err(e)) => return Err(e),
        }
    };
    let accepted = line_end
        .and_then(|end| std::str::from_utf8(&received[..end]).ok())
        .and_then(|line| line.trim_end_matches('\r').strip_prefix("auth "))
        .is_some_and(|token| auth::is_write_token(&context.config, token.trim()));
    match line_end {
        Some(end) if accepted => Ok(Some(received[end + 1..].to_vec())),
        _ => {
            // Best effort: the client may be gone already.
            let _ = stream
                .write_all(b"ERR authorization failed: the first line must be `auth <token>` with the server's auth token\n")
                .await;
            Ok(None)
        }
    }
}

async fn write_batch(
    lines: &mut LineSplitter,
    peer: SocketAddr,
    context: &TcpContext,
    log: &mut BadLineLog,
) -> std::io::Result<()> {
    let batch = std::mem::take(&mut lines.batch);
    lines.batch_lines = 0;
    let engine = Arc::clone(&context.engine);
    let database = Arc::clone(&context.database);
    let (result, mut batch) = tokio::task::spawn_blocking(move || {
        let result = engine.write_lines(&database, &batch, Precision::Nanoseconds);
        (result, batch)
    })
    .await
    .map_err(|e| std::io::Error::other(format!("write task failed: {e}")))?;
    batch.clear();
    lines.batch = batch; // keep the capacity
    let report = result.map_err(|e| {
        tracing::error!(%peer, "TCP write failed: {e}");
        std::io::Error::other(format!("write failed: {e}"))
    })?;
    let counters = context.counters();
    counters.rows.fetch_add(report.rows, Ordering::Relaxed);
    if let Some(first) = report.errors.first() {
        let count = report.errors.len() as u64;
        counters.bad_lines.fetch_add(count, Ordering::Relaxed);
        log.report(peer, count, &first.message);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitter_keeps_whole_lines_and_skips_long_ones() {
        let mut s = LineSplitter::default();
        s.push(b"a 1\nbb", 8);
        assert_eq!(s.batch, b"a 1\n");
        s.push(b"b 2\n0123456789", 8);
        assert_eq!(s.batch, b"a 1\nbbb 2\n");
        assert_eq!(s.too_long, 1);
        assert!(s.skipping);
        s.push(b"abc\nc 3\nd", 8);
        assert_eq!(s.batch, b"a 1\nbbb 2\nc 3\n");
        assert_eq!(s.batch_lines, 3);
        s.finish();
        assert_eq!(s.batch, b"a 1\nbbb 2\nc 3\nd\n");
        // A long line ending inside one chunk is skipped without skipping the next.
        let mut s = LineSplitter::default();
        s.push(b"0123456789\nok 1\n", 8);
        assert_eq!(
            (s.batch.as_slice(), s.too_long, s.skipping),
            (&b"ok 1\n"[..], 1, false)
        );
        // Keeping places, a skipped line leaves an empty line, so later lines keep their
        // numbers.
        let mut s = LineSplitter {
            keep_place: true,
            ..LineSplitter::default()
        };
        s.push(b"a 1\n0123456789", 8);
        s.push(b"0123\nb 2\n", 8);
        assert_eq!(
            (s.batch.as_slice(), s.batch_lines),
            (&b"a 1\n\nb 2\n"[..], 3)
        );
    }
}
