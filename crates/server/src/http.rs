//! The HTTP API (axum): InfluxDB 1.x and 2.x writes, SQL (`/sql`, in `sql`), ping, health,
//! metrics.
//!
//! `request → track (metrics) → auth → body (capped, counted in flight) → spawn_blocking:
//! gunzip (capped) + Engine::write_lines → 204, or 400 naming the first bad lines`.

use std::collections::HashMap;
use std::io::Read;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hyper::body::Frame;
use strata_lineproto::{DEFAULT_MAX_LINE_BYTES, Precision};
use strata_query::QueryEngine;
use strata_storage::ingest::LineError;
use strata_storage::{Engine, WriteReport};

use crate::config::ServerConfig;
use crate::error::{ApiError, json_response};
use crate::metrics::Metrics;
use crate::{auth, version_header};

/// Bad lines named in a partial-write answer; the rest are only counted (InfluxDB names
/// the first few too, and a 100,000-line bad batch must not make a 10 MB error body).
pub(crate) const MAX_REPORTED_LINES: usize = 10;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct AppState {
    pub engine: Arc<Engine>,
    /// SQL over `engine`, shared by every `/sql` request (its guard rails are global).
    pub query: Arc<QueryEngine>,
    pub metrics: Arc<Metrics>,
    pub config: Arc<ServerConfig>,
    /// When the server started (the engine's clock), for `SHOW DIAGNOSTICS`.
    pub started_ns: i64,
    /// The lake's counters, when cold partitions are copied to one.
    pub lake: Option<Arc<strata_lake::LakeStats>>,
}

pub(crate) type Shared = Arc<AppState>;
pub(crate) type Params =
    Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>;

/// The router with every endpoint.
pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/write", post(write_v1))
        .route("/api/v2/write", post(write_v2))
        .route("/sql", get(crate::sql::sql_get).post(crate::sql::sql_post))
        .route(
            "/query",
            get(crate::influxql::query_get).post(crate::influxql::query_post),
        )
        .route("/ping", get(ping).head(ping))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/api/v1/backup", post(crate::backup::backup))
        .route("/api/v1/write", post(crate::prom::remote_write))
        .route("/api/v1/import/prometheus", post(crate::prom::import_text))
        .route(
            "/api/v1/query",
            get(crate::prom::api::query).post(crate::prom::api::query),
        )
        .route(
            "/api/v1/query_range",
            get(crate::prom::api::query_range).post(crate::prom::api::query_range),
        )
        .route(
            "/api/v1/series",
            get(crate::prom::api::series).post(crate::prom::api::series),
        )
        .route(
            "/api/v1/labels",
            get(crate::prom::api::labels).post(crate::prom::api::labels),
        )
        .route(
            "/api/v1/label/{name}/values",
            get(crate::prom::api::label_values),
        )
        .route("/api/v1/metadata", get(crate::prom::api::metadata))
        .route("/api/v1/status/buildinfo", get(crate::prom::api::buildinfo))
        .route("/api/v1/status/flags", get(crate::settings::flags))
        .route("/api/put", post(crate::opentsdb::put))
        .route("/api/version", get(crate::opentsdb::version))
        .route("/", get(crate::console::index))
        .route("/console/{*path}", get(crate::console::asset))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::disable())
        .layer(middleware::from_fn_with_state(Arc::clone(&state), track))
        .with_state(state)
}

/// Counts every request by endpoint and status, and stamps InfluxDB's version headers.
async fn track(State(state): State<Shared>, request: Request, next: Next) -> Response {
    let endpoint = match request.uri().path() {
        "/write" => "write",
        "/api/v2/write" => "api_v2_write",
        "/sql" => "sql",
        "/query" => "query",
        "/ping" => "ping",
        "/health" => "health",
        "/metrics" => "metrics",
        "/api/v1/backup" => "backup",
        "/api/v1/write" => "prometheus_remote_write",
        "/api/v1/import/prometheus" => "prometheus_import",
        "/api/v1/query" => "prometheus_query",
        "/api/v1/query_range" => "prometheus_query_range",
        "/api/v1/series"
        | "/api/v1/labels"
        | "/api/v1/metadata"
        | "/api/v1/status/buildinfo"
        | "/api/v1/status/flags" => "prometheus_metadata",
        path if path.starts_with("/api/v1/label/") => "prometheus_metadata",
        "/api/put" => "opentsdb_put",
        "/api/version" => "opentsdb_version",
        path if path == "/" || path.starts_with("/console/") => "console",
        _ => "other",
    };
    let mut response = next.run(request).await;
    state
        .metrics
        .count_request(endpoint, response.status().as_u16());
    let headers = response.headers_mut();
    headers.insert("X-Influxdb-Version", version_header());
    headers.insert("X-Influxdb-Build", HeaderValue::from_static("OSS"));
    response
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such endpoint".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed("method not allowed on this endpoint".into())
}

async fn ping() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// `GET /health` (InfluxDB 2.x's shape): `pass`, or `warn` with a check per damaged part
/// set aside and per shard refusing writes (still 200: the server answers queries).
async fn health(State(state): State<Shared>) -> Response {
    let quarantined = state.engine.quarantined();
    let write_problems = state.engine.write_problems();
    let lake_failures = state
        .lake
        .as_ref()
        .map(|lake| lake.last_failures.lock().clone())
        .unwrap_or_default();
    let read_only = state.lake.as_ref().is_some_and(|lake| lake.mirror);
    let mut notes = Vec::new();
    if !lake_failures.is_empty() {
        notes.push(format!(
            "{} the lake failed for {} table(s), retried with backoff (see the checks)",
            if read_only { "reading" } else { "copying to" },
            lake_failures.len()
        ));
    }
    if !write_problems.is_empty() {
        notes.push(format!(
            "{} shard(s) refuse writes (a full disk, most often; see the checks)",
            write_problems.len()
        ));
    }
    if !quarantined.is_empty() {
        notes.push(format!(
            "{} damaged part(s) set aside, their rows are not queried (see the checks, and \
             strata check)",
            quarantined.len()
        ));
    }
    let ready = if read_only {
        "ready for queries (a read-only query server on the lake: writes are refused)"
    } else {
        "ready for queries and writes"
    };
    let (status, message) = if notes.is_empty() {
        ("pass", ready.to_string())
    } else if write_problems.is_empty() {
        ("warn", format!("{ready}; {}", notes.join("; ")))
    } else {
        ("warn", format!("ready for queries; {}", notes.join("; ")))
    };
    let checks: Vec<serde_json::Value> = write_problems
        .iter()
        .map(|(shard, problem)| {
            serde_json::json!({
                "name": format!("shard-{shard}/writes"),
                "status": "warn",
                "message": problem,
            })
        })
        .chain(lake_failures.iter().map(
            |failure| serde_json::json!({ "name": "lake", "status": "warn", "message": failure }),
        ))
        .chain(quarantined.iter().map(|part| {
            serde_json::json!({
                "name": format!("shard-{}/p{}/{:016}.part", part.shard, part.partition, part.id),
                "status": "warn",
                "message": part.to_string(),
            })
        }))
        .collect();
    json_response(
        StatusCode::OK,
        &serde_json::json!({
            "name": "strata",
            "message": message,
            "status": status,
            "checks": checks,
            "version": env!("CARGO_PKG_VERSION"),
        }),
    )
}

async fn metrics(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    auth::check(&state.config, &headers, &params)?;
    let mut text = state.metrics.render(&state.engine.stats());
    crate::metrics::render_database_bytes(&mut text, &state.engine.part_bytes_by_database());
    if let Some(lake) = &state.lake {
        crate::metrics::render_lake(&mut text, lake);
    }
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

/// `POST /write?db=&precision=&rp=&u=&p=` (InfluxDB 1.x).
async fn write_v1(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, ApiError> {
    let params = write_params(&state, &headers, params)?;
    let database = params
        .get("db")
        .filter(|db| !db.is_empty())
        .ok_or_else(|| ApiError::BadRequest("database is required".into()))?;
    let precision = precision(&params)?;
    write(&state, database.clone(), precision, &headers, body).await
}

/// `POST /api/v2/write?bucket=&org=&precision=` (InfluxDB 2.x): the bucket is the database.
async fn write_v2(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, ApiError> {
    let params = write_params(&state, &headers, params)?;
    let database = params
        .get("bucket")
        .filter(|b| !b.is_empty())
        .ok_or_else(|| ApiError::BadRequest("bucket is required".into()))?;
    let precision = precision(&params)?;
    write(&state, database.clone(), precision, &headers, body).await
}

fn precision(params: &HashMap<String, String>) -> Result<Precision, ApiError> {
    match params.get("precision").map(String::as_str) {
        None | Some("") => Ok(Precision::Nanoseconds),
        Some(text) => text.parse().map_err(|_| {
            ApiError::BadRequest(format!(
                "invalid precision {text:?}: expected ns, us, ms or s (1.x also n, u)"
            ))
        }),
    }
}

/// Reads the body (capped, counted in flight), then decompresses and writes it on a
/// blocking thread.
async fn write(
    state: &Shared,
    database: String,
    precision: Precision,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let gzip = gzip_encoded(headers)?;
    let max_body = state.config.max_body_bytes;
    let max_line_bytes = state.config.max_line_bytes;
    let metrics = &state.metrics;
    let report = run_write(
        state,
        headers,
        body,
        started,
        "write",
        move |raw, mut inflight, engine| {
            let body = gunzip_if(raw, gzip, max_body, &mut inflight)?;
            let (body, long_lines) = drop_long_lines(body, max_line_bytes);
            let mut report = engine.write_lines(&database, &body, precision)?;
            drop(inflight);
            if !long_lines.is_empty() {
                report.errors.extend(long_lines);
                report.errors.sort_by_key(|e| e.line);
            }
            Ok::<WriteReport, ApiError>(report)
        },
    )
    .await?;
    metrics.http_rows.fetch_add(report.rows, Ordering::Relaxed);
    if report.errors.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let rejected = report.errors.len();
    metrics
        .http_bad_lines
        .fetch_add(rejected as u64, Ordering::Relaxed);
    tracing::debug!(rejected, written = report.rows, first = %report.errors[0], "partial write");
    let lines: Vec<serde_json::Value> = report
        .errors
        .iter()
        .take(MAX_REPORTED_LINES)
        .map(|e| serde_json::json!({ "line": e.line, "column": e.column, "message": e.message }))
        .collect();
    // InfluxDB's words for rows past the retention: Telegraf and the InfluxDB clients look
    // for them to tell rows dropped for good from a batch worth retrying.
    let error = if report.expired > 0 {
        format!(
            "partial write: points beyond retention policy dropped={}; {rejected} lines rejected, first: {}",
            report.expired, report.errors[0]
        )
    } else {
        format!(
            "partial write: {rejected} lines rejected, first: {}",
            report.errors[0]
        )
    };
    Ok(json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({
            "error": error,
            "rejected": rejected,
            "expired": report.expired,
            "written": report.rows,
            "lines": lines,
        }),
    ))
}

/// The query parameters of a write, once the credentials allow writing.
pub(crate) fn write_params(
    state: &Shared,
    headers: &HeaderMap,
    params: Params,
) -> Result<HashMap<String, String>, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    auth::check(&state.config, headers, &params)?.require_write("write")?;
    Ok(params)
}

/// `?db=` when given and not empty, else `default`.
pub(crate) fn database_or(params: &HashMap<String, String>, default: &str) -> String {
    params
        .get("db")
        .filter(|db| !db.is_empty())
        .map_or(default, String::as_str)
        .to_string()
}

/// A write's body: refused at once when its declared length is over the cap, counted in
/// flight from its declared length (so concurrent writers are turned away before they
/// send), then read (capped, and refused when it pauses past the client timeout).
pub(crate) async fn read_write_body(
    state: &Shared,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Vec<u8>, Inflight), ApiError> {
    let mut inflight = Inflight::new(state);
    let max_body = state.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(length) = declared {
        if length > max_body {
            return Err(too_large(max_body));
        }
        inflight.reserve(length)?;
    }
    let raw = read_body(body, max_body, state.config.client_timeout, &mut inflight).await?;
    Ok((raw, inflight))
}

/// A write's body (see [`read_write_body`]) handed to `work` on a blocking thread, with
/// its in-flight count and the engine (writes wait on the WAL); the write's latency,
/// from `started`, is recorded whatever `work` answers. `what` names the write in the
/// error of a task that failed.
pub(crate) async fn run_write<T: Send + 'static>(
    state: &Shared,
    headers: &HeaderMap,
    body: Body,
    started: Instant,
    what: &str,
    work: impl FnOnce(Vec<u8>, Inflight, &Engine) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let (raw, inflight) = read_write_body(state, headers, body).await?;
    let engine = Arc::clone(&state.engine);
    let outcome = tokio::task::spawn_blocking(move || work(raw, inflight, &engine))
        .await
        .map_err(|e| ApiError::Internal(format!("{what} task failed: {e}")))?;
    state.metrics.observe_write(started.elapsed());
    outcome
}

/// `raw` decompressed when `gzip` (capped, the output counted in flight), else as is.
pub(crate) fn gunzip_if(
    raw: Vec<u8>,
    gzip: bool,
    max_body: usize,
    inflight: &mut Inflight,
) -> Result<Vec<u8>, ApiError> {
    if !gzip {
        return Ok(raw);
    }
    let plain = gunzip(&raw, max_body)?;
    inflight.reserve(plain.len())?;
    Ok(plain)
}

/// Whether a text body is gzip-compressed (`Content-Encoding: gzip`); identity or none
/// means plain; anything else is refused.
pub(crate) fn gzip_encoded(headers: &HeaderMap) -> Result<bool, ApiError> {
    match headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("") | Some("identity") => Ok(false),
        Some("gzip") => Ok(true),
        Some(other) => Err(ApiError::BadRequest(format!(
            "unsupported Content-Encoding {other:?}: send gzip or identity"
        ))),
    }
}

/// The next frame of a request body (`None` at its end), waiting at most `stall` for it: a
/// client that pauses longer is answered 408 rather than holding the request for ever.
pub(crate) async fn next_frame(
    body: &mut Body,
    stall: Duration,
) -> Result<Option<Frame<Bytes>>, ApiError> {
    let frame = std::future::poll_fn(|cx| Pin::new(&mut *body).poll_frame(cx));
    match tokio::time::timeout(stall, frame).await {
        Err(_) => Err(ApiError::RequestTimeout(format!(
            "the request body paused for more than {stall:?} (client timeout); send it without pauses"
        ))),
        Ok(None) => Ok(None),
        Ok(Some(frame)) => frame
            .map(Some)
            .map_err(|e| ApiError::BadRequest(format!("cannot read request body: {e}"))),
    }
}

pub(crate) fn too_large(max_body: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "request body is over the limit of {max_body} bytes (max body bytes); send smaller batches"
    ))
}

/// Collects the body, refusing it past `max_body` bytes or when it pauses for `stall`, and
/// counting what arrives beyond the declared length as in flight.
pub(crate) async fn read_body(
    mut body: Body,
    max_body: usize,
    stall: Duration,
    inflight: &mut Inflight,
) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(inflight.bytes.min(max_body));
    while let Some(frame) = next_frame(&mut body, stall).await? {
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if out.len() + data.len() > max_body {
            return Err(too_large(max_body));
        }
        out.extend_from_slice(&data);
        if out.len() > inflight.bytes {
            inflight.reserve(out.len() - inflight.bytes)?;
        }
    }
    Ok(out)
}

/// Enforces a line cap below the parser's own (the engine's `write_lines` parses with the
/// parser's default limits and takes no options): each line over `max_line_bytes` is
/// emptied, keeping its newline so that line numbers stay right, and reported. Free when
/// the cap is the parser's: no scan at all.
fn drop_long_lines(body: Vec<u8>, max_line_bytes: usize) -> (Vec<u8>, Vec<LineError>) {
    if max_line_bytes >= DEFAULT_MAX_LINE_BYTES {
        return (body, Vec::new());
    }
    let mut errors = Vec::new();
    let mut kept: Option<Vec<u8>> = None;
    let mut start = 0;
    let mut line = 1;
    while start < body.len() {
        let end = memchr::memchr(b'\n', &body[start..]).map_or(body.len(), |i| start + i);
        let content = &body[start..end];
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        if content.len() > max_line_bytes {
            let out = kept.get_or_insert_with(|| body[..start].to_vec());
            if end < body.len() {
                out.push(b'\n');
            }
            errors.push(LineError {
                line,
                column: Some(max_line_bytes + 1),
                message: format!(
                    "line of {} bytes is longer than the limit of {max_line_bytes} bytes (max line bytes)",
                    content.len()
                ),
            });
        } else if let Some(out) = kept.as_mut() {
            out.extend_from_slice(&body[start..(end + 1).min(body.len())]);
        }
        start = end + 1;
        line += 1;
    }
    (kept.unwrap_or(body), errors)
}

/// Decompresses a gzip body (concatenated members too), refusing output past `max_body`.
fn gunzip(raw: &[u8], max_body: usize) -> Result<Vec<u8>, ApiError> {
    let mut out = Vec::with_capacity(raw.len().saturating_mul(4).min(max_body));
    flate2::read::MultiGzDecoder::new(raw)
        .take(max_body as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ApiError::BadRequest(format!("cannot decompress gzip body: {e}")))?;
    if out.len() > max_body {
        return Err(ApiError::PayloadTooLarge(format!(
            "decompressed request body is over the limit of {max_body} bytes (max body bytes)"
        )));
    }
    Ok(out)
}

/// Write-body bytes this request holds, counted in [`Metrics::inflight_write_bytes`] and
/// released on drop.
#[derive(Debug)]
pub(crate) struct Inflight {
    metrics: Arc<Metrics>,
    cap: usize,
    bytes: usize,
}

impl Inflight {
    pub(crate) fn new(state: &AppState) -> Self {
        Self {
            metrics: Arc::clone(&state.metrics),
            cap: state.config.max_inflight_write_bytes,
            bytes: 0,
        }
    }

    /// Counts `more` bytes, or answers overload when the total would pass the cap. A
    /// request is always let through when nothing else is in flight, so one body bigger
    /// than the cap is still served.
    pub(crate) fn reserve(&mut self, more: usize) -> Result<(), ApiError> {
        let counter = &self.metrics.inflight_write_bytes;
        let before = counter.fetch_add(more as u64, Ordering::SeqCst) as usize;
        let others = before - self.bytes;
        if others > 0 && before + more > self.cap {
            counter.fetch_sub(more as u64, Ordering::SeqCst);
            self.metrics
                .overload_rejections
                .fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::Overloaded(format!(
                "overloaded: {before} write bytes in flight (max in-flight write bytes {}); retry shortly",
                self.cap
            )));
        }
        self.bytes += more;
        Ok(())
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        self.metrics
            .inflight_write_bytes
            .fetch_sub(self.bytes as u64, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn long_lines_are_emptied_and_reported_with_their_numbers() {
        let body = b"a v=1 1\nb v=1234567890 2\r\nc v=3 3\nd v=1234567890 4".to_vec();
        let (kept, errors) = drop_long_lines(body.clone(), 12);
        assert_eq!(kept, b"a v=1 1\n\nc v=3 3\n");
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 4]);
        assert!(errors[0].message.contains("limit of 12 bytes"));
        assert_eq!(drop_long_lines(body.clone(), 100).0, body);
        assert_eq!(
            drop_long_lines(body.clone(), DEFAULT_MAX_LINE_BYTES).0,
            body
        );
    }

    #[test]
    fn gunzip_caps_output() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&vec![b'a'; 10_000]).expect("gzip");
        let raw = encoder.finish().expect("gzip");
        assert_eq!(gunzip(&raw, 10_000).expect("fits").len(), 10_000);
        assert_eq!(
            gunzip(&raw, 9_999).expect_err("over").status(),
            StatusCode::PAYLOAD_TOO_LARGE
        );
        assert_eq!(
            gunzip(b"not gzip", 100).expect_err("bad").status(),
            StatusCode::BAD_REQUEST
        );
    }

    /// Bounded fuzzing of gzip bodies: seeded mutations (flipped, overwritten, cut and
    /// repeated bytes) of a real two-member body never panic and never yield more than the
    /// cap; what fails is a 400 or a 413.
    #[test]
    fn mutated_gzip_bodies_are_answered_never_panic() {
        let member = |text: &[u8]| {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            encoder.write_all(text).expect("gzip");
            encoder.finish().expect("gzip")
        };
        let mut seed = member(b"cpu,host=a usage=1.5 1700000000000000000\n");
        seed.extend(member(
            &b"mem,host=b free=2i 1700000000000000001\n".repeat(40),
        ));
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n.max(1) as u64) as usize
        };
        let (mut failed, runs) = (0, 5_000);
        for _ in 0..runs {
            let mut body = seed.clone();
            for _ in 0..1 + next(3) {
                let at = next(body.len());
                match next(4) {
                    0 => body[at] ^= 1 << next(8),
                    1 => body[at] = next(256) as u8,
                    2 => body.truncate(at),
                    _ => {
                        let end = (at + 1 + next(64)).min(body.len());
                        let slice = body[at..end].to_vec();
                        body.splice(at..at, slice);
                    }
                }
                if body.is_empty() {
                    body.push(0x1f);
                }
            }
            match gunzip(&body, 1_000) {
                Ok(out) => assert!(out.len() <= 1_000),
                Err(e) => {
                    failed += 1;
                    assert!(
                        matches!(
                            e.status(),
                            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE
                        ),
                        "{e}"
                    );
                }
            }
        }
        assert!(failed > 0 && failed < runs, "{failed} of {runs} refused");
    }
}
