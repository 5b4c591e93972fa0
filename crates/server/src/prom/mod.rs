//! Prometheus' HTTP APIs. Remote write (`POST /api/v1/write`) decodes into structured
//! series and writes them with [`strata_storage::Engine::write_series`]: the same catalog,
//! WAL and shards as line protocol, acknowledged once in the WAL. The query API (`api`)
//! evaluates PromQL with `strata-promql` over the engine (`source`).

pub(crate) mod api;
mod exposition;
pub mod model;
pub mod remote_write;
mod source;
mod summary;

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use strata_storage::Engine;

use crate::error::{ApiError, json_response};
use crate::http::{
    Inflight, MAX_REPORTED_LINES, Params, Shared, database_or, gunzip_if, gzip_encoded, run_write,
    write_params,
};
pub(crate) use strata_promql::aggregate::format_value;

/// The database a Prometheus write goes to (`?db=`, default `prometheus`), once the
/// credentials allow writing.
fn write_database(state: &Shared, headers: &HeaderMap, params: Params) -> Result<String, ApiError> {
    let params = write_params(state, headers, params)?;
    Ok(database_or(&params, model::DEFAULT_DATABASE))
}

/// `POST /api/v1/write?db=`: Prometheus remote write 1.0 (snappy block, protobuf). Answers
/// 204 when every sample is stored; 400 naming the refused series otherwise (the others
/// are stored: Prometheus does not retry a 4xx, and a retry would write them twice);
/// 413/429/5xx as the line-protocol writes do, which Prometheus retries.
pub(crate) async fn remote_write(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let database = write_database(&state, &headers, params)?;
    match headers
        .get(header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("?").trim().to_ascii_lowercase())
        .as_deref()
    {
        // Remote write is always snappy; a missing header is taken to mean it too.
        None | Some("snappy") => {}
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "unsupported Content-Encoding {other:?}: remote write bodies are snappy"
            )));
        }
    }
    let max_body = state.config.max_body_bytes;
    let work = move |raw: Vec<u8>, mut inflight: Inflight, engine: &Engine| {
        let plain = remote_write::unsnappy(&raw, max_body).map_err(|e| {
            if e.contains("over the limit") {
                ApiError::PayloadTooLarge(e)
            } else {
                ApiError::BadRequest(e)
            }
        })?;
        drop(raw);
        inflight.reserve(plain.len())?;
        let request = remote_write::decode(Bytes::from(plain)).map_err(ApiError::BadRequest)?;
        let decoded = remote_write::to_series(&request);
        let report = engine.write_series(&database, &decoded.series)?;
        let mut refused = decoded.refused;
        // The engine numbers series by their place in what it was given.
        refused.extend(
            report
                .errors
                .iter()
                .map(|e| (decoded.origins[e.line - 1], e.message.clone())),
        );
        refused.sort_by_key(|(index, _)| *index);
        Ok::<_, ApiError>((report.points, refused, decoded.histograms))
    };
    let (points, refused, histograms) =
        run_write(&state, &headers, body, started, "remote write", work).await?;
    state.metrics.http_rows.fetch_add(points, Ordering::Relaxed);
    if refused.is_empty() && histograms == 0 {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    state
        .metrics
        .http_bad_lines
        .fetch_add(refused.len() as u64, Ordering::Relaxed);
    let mut error = format!("{} series refused", refused.len());
    if let Some((index, message)) = refused.first() {
        error.push_str(&format!(", first: series {index}: {message}"));
    }
    if histograms > 0 {
        error.push_str(&format!(
            "; {histograms} native histogram samples not stored: Strata stores float samples only"
        ));
    }
    let series: Vec<serde_json::Value> = refused
        .iter()
        .take(MAX_REPORTED_LINES)
        .map(|(index, message)| serde_json::json!({ "series": index, "message": message }))
        .collect();
    Ok(json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({
            "status": "error",
            "errorType": "bad_data",
            "error": error,
            "written": points,
            "refused": series,
        }),
    ))
}

/// `POST /api/v1/import/prometheus?db=`: samples in Prometheus' text exposition format, or
/// OpenMetrics text when the Content-Type says `application/openmetrics-text` (gzip
/// allowed). A sample without a timestamp takes the server's clock. 204 when every line is
/// stored; otherwise 400 naming the bad lines by line and column, the good ones stored.
pub(crate) async fn import_text(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let database = write_database(&state, &headers, params)?;
    let gzip = gzip_encoded(&headers)?;
    let format = match headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        Some(t) if t.trim_start().starts_with("application/openmetrics-text") => {
            exposition::Format::OpenMetrics
        }
        _ => exposition::Format::Text,
    };
    let max_body = state.config.max_body_bytes;
    let work = move |raw: Vec<u8>, mut inflight: Inflight, engine: &Engine| {
        let plain = gunzip_if(raw, gzip, max_body, &mut inflight)?;
        let text = std::str::from_utf8(&plain).map_err(|e| {
            ApiError::BadRequest(format!("the body is not UTF-8 (byte {})", e.valid_up_to()))
        })?;
        let now_ms = engine.now_ns().div_euclid(1_000_000);
        let exposition::Parsed {
            series,
            lines,
            mut errors,
        } = exposition::parse(text, format, now_ms);
        let report = engine.write_series(&database, &series)?;
        errors.extend(report.errors.iter().map(|e| exposition::LineError {
            // The engine numbers series by their place in what it was given.
            line: lines.get(e.line.wrapping_sub(1)).copied().unwrap_or(0),
            column: 1,
            message: e.message.clone(),
        }));
        errors.sort_by_key(|e| e.line);
        Ok::<_, ApiError>((report.points, errors))
    };
    let (points, errors) = run_write(&state, &headers, body, started, "import", work).await?;
    state.metrics.http_rows.fetch_add(points, Ordering::Relaxed);
    if errors.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    state
        .metrics
        .http_bad_lines
        .fetch_add(errors.len() as u64, Ordering::Relaxed);
    let first = &errors[0];
    let lines: Vec<serde_json::Value> = errors
        .iter()
        .take(MAX_REPORTED_LINES)
        .map(|e| serde_json::json!({ "line": e.line, "column": e.column, "message": e.message }))
        .collect();
    Ok(json_response(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({
            "error": format!(
                "partial write: {} lines rejected, first: line {}, column {}: {}",
                errors.len(), first.line, first.column, first.message
            ),
            "rejected": errors.len(),
            "written": points,
            "lines": lines,
        }),
    ))
}
