//! Strata's network front: InfluxDB-compatible HTTP writes, SQL over HTTP, line protocol over
//! TCP, health and Prometheus metrics, in front of one [`strata_storage::Engine`].
//!
//! Module map:
//! - [`config`]: [`ServerConfig`] (typed settings, documented defaults) and [`FileConfig`]
//!   (the optional TOML file).
//! - [`error`]: [`ServerError`], [`ApiError`] and the one error → HTTP status mapping.
//! - `http`: the axum router — `/write`, `/api/v2/write`, `/sql`, `/ping`, `/health`,
//!   `/metrics`.
//! - `influxql`: `/query`, InfluxDB 1.x's query API (InfluxQL statements parsed by
//!   `strata-influxql`, `SELECT` run as SQL through the same query engine as `/sql`).
//! - `sql`: `/sql`, one statement through the shared [`strata_query::QueryEngine`], its
//!   result streamed batch by batch; `sql_format` (json, csv, Arrow IPC) and `sql_cells`
//!   (one column's values as text) encode it.
//! - `tcp`: the line-protocol listener, and the OpenTSDB telnet listener (`--opentsdb`).
//! - `opentsdb`: OpenTSDB's writes, `/api/put` (JSON) and the telnet `put` line, into the
//!   engine as structured series.
//! - `pg`: the Postgres wire protocol listener (`--pg`): statements through the same
//!   query engine as `/sql`.
//! - `prom`: Prometheus' APIs: remote write (`/api/v1/write`) into the engine as
//!   structured series ([`strata_storage::Engine::write_series`]), and the query API
//!   (`/api/v1/query`, `query_range`, `series`, `labels`, …) evaluating PromQL with
//!   `strata-promql` over the engine.
//! - `auth`: token checks (Token, Bearer, Basic, 1.x `u`/`p`).
//! - [`metrics`]: server counters and the Prometheus text rendering.
//!
//! Write path: `HTTP body (capped, gunzipped, counted in flight) or TCP batch →
//! spawn_blocking → Engine::write_lines (WAL append, acknowledged) → 204 or 400 with the
//! bad lines`. Query path: `/sql → QueryEngine::sql_stream (admission, timeout, memory
//! pool) → first batch awaited (errors get their status) → one body chunk per batch`.
//! Shutdown: `SIGINT/SIGTERM → stop accepting → finish in-flight requests and
//! TCP batches → Engine::flush → Engine::close → Ok`.
//!
//! When you add an endpoint, also add its name to `track` in `http` (metrics label).

pub mod allocator;
pub mod config;
pub mod error;
pub mod index_memory;
pub mod metrics;
pub mod open_files_limit;

mod auth;
mod backup;
mod console;
mod http;
mod http_serve;
mod influxql;
mod opentsdb;
mod pg;
pub mod prom;
mod settings;
mod sql;
mod sql_cells;
mod sql_format;
mod tcp;
mod tls;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use strata_query::QueryEngine;
use strata_storage::wal::WalError;
use strata_storage::{Engine, EngineOptions, StorageError};
use tokio::sync::watch;

pub use config::{FileConfig, ServerConfig};
pub use error::{ApiError, ServerError};

/// The version InfluxDB clients see in `X-Influxdb-Version`: a 1.8 the clients know, then
/// ours.
pub const INFLUXDB_VERSION: &str = concat!("1.8.10-strata-", env!("CARGO_PKG_VERSION"));

/// How long shutdown waits for requests whose client went away to finish their write.
const SHUTDOWN_WRITE_WAIT: Duration = Duration::from_secs(60);

fn version_header() -> HeaderValue {
    HeaderValue::from_static(INFLUXDB_VERSION)
}

/// Runs the server until SIGINT or SIGTERM, then shuts down cleanly: stops accepting,
/// finishes in-flight requests, flushes the engine and closes it. Returns `Ok` after a
/// clean shutdown.
pub fn run(config: ServerConfig) -> Result<(), ServerError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("strata-server")
        // Statements are planned on these threads (and on its blocking pool).
        .thread_stack_size(strata_query::nesting::PLANNING_STACK_BYTES)
        .build()
        .map_err(ServerError::Runtime)?;
    runtime.block_on(async {
        let signal = shutdown_signal()?;
        serve(config, signal).await
    })
}

/// Resolves on the first SIGINT or SIGTERM. The handlers are installed before it returns,
/// so a signal that arrives while the server starts is not lost.
fn shutdown_signal() -> Result<impl Future<Output = ()> + Send + 'static, ServerError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).map_err(ServerError::Runtime)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(ServerError::Runtime)?;
    // A write past the file-size limit (`ulimit -f`) raises SIGXFSZ, whose default action
    // ends the process. With a handler installed (tokio keeps it for the process's life)
    // the write fails with EFBIG instead, which is answered like a full disk (507).
    // Dropping the stream keeps the handler.
    drop(signal(SignalKind::from_raw(libc::SIGXFSZ)).map_err(ServerError::Runtime)?);
    Ok(async move {
        let name = tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        };
        tracing::info!("{name} received: shutting down");
    })
}

/// Opens the engine and serves until `shutdown` resolves, then shuts down cleanly (see
/// [`run`]). For embedding and tests; must be called inside a multi-threaded tokio runtime.
pub async fn serve(
    config: ServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let read_only_lake = config.lake.clone().filter(|lake| lake.read_only);
    let mut options = EngineOptions {
        data_dirs: config.data_dirs.clone(),
        shards: config.shards,
        write_concurrency: config.write_concurrency,
        merge_assist_parts: config.merge_assist_parts,
        wal_sync: config.wal_sync,
        retention: config.retention,
        max_series_per_database: config.max_series,
        wal_skip_damaged: config.wal_skip_damaged,
        ..EngineOptions::default()
    };
    let mirror = match read_only_lake {
        Some(lake) => {
            let (mirror, shards) = blocking(move || open_mirror(&lake)).await??;
            options.read_only = true;
            if let Some(shards) = shards {
                options.shards = shards;
            }
            Some(mirror)
        }
        None => None,
    };
    let started = Instant::now();
    let (engine, report) = blocking(move || Engine::open(options))
        .await?
        .map_err(with_wal_recovery_hint)?;
    tracing::info!(
        data_dirs = ?config.data_dirs,
        shards = report.shards,
        replayed_rows = report.replayed_rows,
        orphan_parts_removed = report.orphan_parts_removed,
        "engine open in {:.1?}",
        started.elapsed()
    );
    for tail in &report.torn_wal_tails {
        tracing::warn!("torn WAL tail cut: {tail}");
    }
    for skipped in &report.wal_damage_skipped {
        tracing::error!("damaged WAL skipped (--wal-recovery skip-damaged): {skipped}");
    }
    for part in &report.quarantined {
        tracing::error!("damaged part set aside, its rows are not queried: {part}");
    }
    if let Some(note) = &report.shard_count_note {
        tracing::warn!("{note}");
    }
    let engine = Arc::new(engine);
    let tierer = match mirror {
        Some(mirror) => Some(start_mirror(&engine, mirror, &config).await?),
        None => start_lake(&engine, config.lake.as_ref())?,
    };
    let query = QueryEngine::with_options(Arc::clone(&engine), config.query.clone())
        .map_err(|e| ServerError::Config(format!("cannot start the query engine: {e}")))?;
    let query = Arc::new(query);
    let metrics = Arc::new(metrics::Metrics::default());
    let config = Arc::new(config);
    let (stop_tx, stop_rx) = watch::channel(false);

    let http_listener = tokio::net::TcpListener::bind(config.http_addr)
        .await
        .map_err(|source| ServerError::Listen {
            addr: config.http_addr,
            source,
        })?;
    let http_addr = http_listener
        .local_addr()
        .map_err(|source| ServerError::Listen {
            addr: config.http_addr,
            source,
        })?;
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some((
            tls::acceptor(cert, key, tls::Wire::Http)?,
            tls::acceptor(cert, key, tls::Wire::LineProtocol)?,
            tls::acceptor(cert, key, tls::Wire::Postgres)?,
        )),
        (None, None) => None,
        _ => {
            return Err(ServerError::Config(
                "TLS needs both a certificate and a key".into(),
            ));
        }
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    // The line-protocol and OpenTSDB telnet listeners: one accept loop, two batch handlers.
    let mut tcp_tasks = Vec::new();
    for (addr, protocol, database) in [
        (
            config.tcp_addr,
            tcp::TcpProtocol::LineProtocol,
            &config.tcp_database,
        ),
        (
            config.opentsdb_addr,
            tcp::TcpProtocol::OpenTsdb,
            &config.opentsdb_database,
        ),
    ] {
        let Some(addr) = addr else { continue };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Listen { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| ServerError::Listen { addr, source })?;
        let what = match protocol {
            tcp::TcpProtocol::LineProtocol => "line protocol",
            tcp::TcpProtocol::OpenTsdb => "OpenTSDB telnet put",
        };
        tracing::info!(
            "listening for {what} on tcp://{bound} (database {database:?}, TLS {})",
            if tls.is_some() { "on" } else { "off" }
        );
        let context = tcp::TcpContext {
            protocol,
            engine: Arc::clone(&engine),
            metrics: Arc::clone(&metrics),
            database: Arc::from(database.as_str()),
            max_line_bytes: config.max_line_bytes,
            config: Arc::clone(&config),
            tls: tls
                .as_ref()
                .map(|(_, line_protocol, _)| line_protocol.clone()),
        };
        tcp_tasks.push((
            what,
            tokio::spawn(tcp::serve(listener, context, stop_rx.clone())),
        ));
    }
    let pg_task = match pg_listener(config.pg).await? {
        Some((listener, bound)) => {
            tracing::info!(
                "listening for Postgres on postgres://{bound} (TLS {})",
                if tls.is_some() { "on request" } else { "off" }
            );
            let context = pg::PgContext {
                query: Arc::clone(&query),
                config: Arc::clone(&config),
                tls: tls.as_ref().map(|(_, _, postgres)| postgres.clone()),
            };
            Some(tokio::spawn(pg::serve(listener, context, stop_rx.clone())))
        }
        None => None,
    };
    let state = Arc::new(http::AppState {
        engine: Arc::clone(&engine),
        query,
        metrics: Arc::clone(&metrics),
        config: Arc::clone(&config),
        started_ns: engine.now_ns(),
        lake: tierer.as_ref().map(|t| Arc::clone(t.stats())),
    });
    let router = http::router(state);
    tracing::info!(
        auth = config.auth_token.is_some(),
        "listening for HTTP on {scheme}://{http_addr}"
    );
    let limits = http_serve::ConnectionLimits {
        max_connections: config.max_connections,
        client_timeout: config.client_timeout,
    };
    let http_task = match tls {
        Some((http_acceptor, _, _)) => {
            let listener =
                tls::TlsListener::new(http_listener, http_acceptor).map_err(|source| {
                    ServerError::Listen {
                        addr: http_addr,
                        source,
                    }
                })?;
            tokio::spawn(http_serve::serve(
                listener,
                router,
                limits,
                Arc::clone(&metrics),
                stop_rx.clone(),
            ))
        }
        None => tokio::spawn(http_serve::serve(
            http_serve::PlainListener(http_listener),
            router,
            limits,
            Arc::clone(&metrics),
            stop_rx.clone(),
        )),
    };

    shutdown.await;
    let _ = stop_tx.send(true);
    if let Err(e) = http_task.await {
        tracing::error!("HTTP server task failed: {e}");
    }
    for (what, task) in tcp_tasks {
        if let Err(e) = task.await {
            tracing::error!("{what} server task failed: {e}");
        }
    }
    if let Some(task) = pg_task
        && let Err(e) = task.await
    {
        tracing::error!("Postgres server task failed: {e}");
    }
    drop(metrics);
    if let Some(mut tierer) = tierer {
        // A round under way ends at its next partition, or abandons the copy it is writing
        // before its commit (its files are left for vacuum); a commit is released first.
        blocking(move || tierer.stop()).await?;
    }
    close_engine(engine).await
}

/// Runs `work` on a blocking thread.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ServerError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ServerError::Runtime(std::io::Error::other(e)))
}

/// A read-only server's lake mirror and reader, and the shard count the lake's files need
/// (`None`: the lake holds none yet). An unreachable lake fails the start.
fn open_mirror(
    lake: &config::LakeConfig,
) -> Result<(strata_lake::LakeMirror, Option<usize>), ServerError> {
    let (url, storage_options) = lake.location()?;
    let reader = strata_lake::LakeReader::new(url.clone(), storage_options)
        .map_err(|e| ServerError::Config(e.to_string()))?;
    let mirror = strata_lake::LakeMirror::new(Arc::new(reader));
    let shards = mirror
        .lake_shards()
        .map_err(|e| ServerError::Config(format!("cannot read the lake at {url}: {e}")))?;
    Ok((mirror, shards))
}

/// Mirrors the lake into the read-only `engine` once (before the server answers), then
/// every `--tier-interval`.
async fn start_mirror(
    engine: &Arc<Engine>,
    mirror: strata_lake::LakeMirror,
    config: &ServerConfig,
) -> Result<strata_lake::Tierer, ServerError> {
    let interval = config
        .lake
        .as_ref()
        .map_or(config::DEFAULT_TIER_INTERVAL, |lake| lake.tier_interval);
    engine.set_cold_source(mirror.reader());
    let stats = Arc::new(strata_lake::LakeStats::for_mirror());
    let (mirror, report) = {
        let (engine, stats) = (Arc::clone(engine), Arc::clone(&stats));
        blocking(move || {
            let report = mirror.refresh(&engine);
            stats.record_mirror(&report, engine.now_ns());
            (mirror, report)
        })
        .await?
    };
    tracing::info!(
        "read-only query server on the lake at {}: {} table(s), {} file(s), {} series \
         mirrored (refreshed every {}); writes are refused",
        config.lake.as_ref().map_or("", |lake| lake.url.as_str()),
        report.tables,
        report.files,
        report.series_added,
        humantime::format_duration(interval)
    );
    strata_lake::Tierer::start_mirror(Arc::clone(engine), mirror, interval, stats)
        .map_err(ServerError::Runtime)
}

/// Starts copying cold partitions to the lake, when one is configured.
fn start_lake(
    engine: &Arc<Engine>,
    lake: Option<&config::LakeConfig>,
) -> Result<Option<strata_lake::Tierer>, ServerError> {
    let Some(lake) = lake else {
        return Ok(None);
    };
    let (url, storage_options) = lake.location()?;
    let mut options = strata_lake::LakeOptions::new(url);
    options.storage_options = storage_options;
    options.tier_after = lake.tier_after;
    options.tier_interval = lake.tier_interval;
    // Reads of partitions released to the lake take their rows from it.
    let reader = strata_lake::LakeReader::new(options.url.clone(), options.storage_options.clone())
        .map_err(|e| ServerError::Config(e.to_string()))?;
    engine.set_cold_source(Arc::new(reader));
    tracing::info!(
        "copying partitions to the lake at {} once they ended {} ago (a round every {})",
        options.url,
        humantime::format_duration(options.tier_after),
        humantime::format_duration(options.tier_interval)
    );
    strata_lake::Tierer::start(Arc::clone(engine), options)
        .map(Some)
        .map_err(ServerError::Runtime)
}

/// The Postgres wire listener `pg` asks for, and the address it is bound to. At the default
/// address a port already in use (by a Postgres server, most likely) is a warning, not a
/// failure.
async fn pg_listener(
    pg: config::PgListen,
) -> Result<Option<(tokio::net::TcpListener, std::net::SocketAddr)>, ServerError> {
    let (addr, required) = match pg {
        config::PgListen::Off => return Ok(None),
        config::PgListen::Addr(addr) => (addr, true),
        config::PgListen::Default => (
            config::parse_addr("pg address", config::DEFAULT_PG_ADDR)?,
            false,
        ),
    };
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => {
            let bound = listener
                .local_addr()
                .map_err(|source| ServerError::Listen { addr, source })?;
            Ok(Some((listener, bound)))
        }
        Err(source) if !required && source.kind() == std::io::ErrorKind::AddrInUse => {
            tracing::warn!(
                "Postgres wire not started: {addr} is in use (another Postgres server?); \
                 give --pg ADDR to listen elsewhere, or --pg off"
            );
            Ok(None)
        }
        Err(source) => Err(ServerError::Listen { addr, source }),
    }
}

/// Damage in the middle of a WAL stops the start; the message says how to start anyway.
fn with_wal_recovery_hint(error: StorageError) -> ServerError {
    match error {
        StorageError::Wal(wal @ (WalError::Corrupt { .. } | WalError::Replay { .. })) => {
            ServerError::Damaged(format!(
                "{wal}; the WAL holds acknowledged writes, so Strata does not start past \
                 damage. To start anyway, losing the damaged records (and rows that depend on \
                 them), run with --wal-recovery skip-damaged"
            ))
        }
        other => ServerError::Storage(other),
    }
}

/// Waits for writes still running (a client that went away leaves its write running on a
/// blocking thread), then flushes memtables to parts and closes the engine.
async fn close_engine(mut engine: Arc<Engine>) -> Result<(), ServerError> {
    let deadline = Instant::now() + SHUTDOWN_WRITE_WAIT;
    loop {
        match Arc::try_unwrap(engine) {
            Ok(engine) => {
                let started = Instant::now();
                blocking(move || {
                    engine.flush()?;
                    engine.close()
                })
                .await??;
                tracing::info!("engine flushed and closed in {:.1?}", started.elapsed());
                return Ok(());
            }
            Err(shared) if Instant::now() < deadline => {
                engine = shared;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(shared) => {
                tracing::warn!(
                    "writes still running after {SHUTDOWN_WRITE_WAIT:?}; flushing without closing"
                );
                blocking(move || shared.flush()).await??;
                return Ok(());
            }
        }
    }
}
