//! OpenTSDB's write protocols: `POST /api/put` (JSON) on the HTTP listener, and the telnet
//! `put` line on a TCP listener of its own (`--opentsdb`, served by `tcp` with the
//! [`telnet`] batch handler). Both write with [`strata_storage::Engine::write_series`]: a
//! metric is a table, its tags are tags, the value the float field `value` (so PromQL
//! reads the metric by its name, as it reads remote write), acknowledged once in the WAL.
//! See `docs/opentsdb.md`.

mod parse;
pub(crate) mod telnet;

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, json_response};
use crate::http::{Params, Shared, database_or, gunzip_if, gzip_encoded, run_write, write_params};

/// The database OpenTSDB writes go to when neither `?db=` nor `--opentsdb-db` names one (the
/// name InfluxDB's OpenTSDB listener uses too).
pub const DEFAULT_DATABASE: &str = "opentsdb";

/// At most this many failed data points are echoed in a `?details` answer; the count of
/// the others is given.
const MAX_DETAILED_ERRORS: usize = 1000;

/// What a `/api/put` body came to.
#[derive(Debug)]
struct PutOutcome {
    /// Data points in the body.
    total: u64,
    /// Data points stored.
    stored: u64,
    /// Failed data points, in body order: (index in the body, the data point, why).
    failures: Vec<(usize, serde_json::Value, String)>,
    /// Failures past [`MAX_DETAILED_ERRORS`], not in `failures`.
    omitted: usize,
}

/// `POST /api/put[?details][&summary][&db=NAME]`: OpenTSDB's JSON write, one data point
/// (an object) or many (an array), gzip allowed. As OpenTSDB answers: 204 when every point
/// is stored; with `details` or `summary`, `{"success":N,"failed":M}` (and `errors`, each
/// failed point with why) as 200, or 400 when some failed; without them a failure is a 400
/// OpenTSDB error object. The good points of a body are stored whatever the others do.
/// `sync` and `sync_timeout` are accepted: every acknowledged point is in the WAL.
pub(crate) async fn put(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    let params = write_params(&state, &headers, params)?;
    let database = database_or(&params, &state.config.opentsdb_database);
    let details = params.contains_key("details");
    let summary = details || params.contains_key("summary");
    let gzip = gzip_encoded(&headers)?;
    let max_body = state.config.max_body_bytes;
    let outcome = run_write(
        &state,
        &headers,
        body,
        started,
        "OpenTSDB put",
        move |raw, mut inflight, engine| {
            let plain = gunzip_if(raw, gzip, max_body, &mut inflight)?;
            let body: serde_json::Value = serde_json::from_slice(&plain)
                .map_err(|e| ApiError::BadRequest(format!("the body is not valid JSON: {e}")))?;
            drop(plain);
            store(engine, &database, &body)
        },
    )
    .await?;
    state
        .metrics
        .http_rows
        .fetch_add(outcome.stored, Ordering::Relaxed);
    let failed = outcome.total - outcome.stored;
    state
        .metrics
        .http_bad_lines
        .fetch_add(failed, Ordering::Relaxed);
    let status = if failed == 0 {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    if summary {
        let mut answer = serde_json::json!({ "success": outcome.stored, "failed": failed });
        if details {
            let errors: Vec<serde_json::Value> = outcome
                .failures
                .into_iter()
                .map(|(_, point, error)| serde_json::json!({ "datapoint": point, "error": error }))
                .collect();
            answer["errors"] = serde_json::Value::Array(errors);
            if outcome.omitted > 0 {
                answer["errors_omitted"] = outcome.omitted.into();
            }
        }
        return Ok(json_response(status, &answer));
    }
    match outcome.failures.first() {
        None if failed == 0 => Ok(StatusCode::NO_CONTENT.into_response()),
        first => {
            let first = first.map_or_else(String::new, |(index, _, error)| {
                format!(", first: data point {index}: {error}")
            });
            Ok(opentsdb_error(
                StatusCode::BAD_REQUEST,
                "One or more data points had errors",
                &format!(
                    "{failed} of {} data points were not stored{first}; append ?details to the \
                     put request to see each",
                    outcome.total
                ),
            ))
        }
    }
}

/// Parses the data points of a `/api/put` body and writes the good ones.
fn store(
    engine: &strata_storage::Engine,
    database: &str,
    body: &serde_json::Value,
) -> Result<PutOutcome, ApiError> {
    let points: &[serde_json::Value] = match body {
        serde_json::Value::Array(points) => points,
        serde_json::Value::Object(_) => std::slice::from_ref(body),
        _ => {
            return Err(ApiError::BadRequest(
                "expected a JSON object (one data point) or an array of them".into(),
            ));
        }
    };
    if points.is_empty() {
        return Err(ApiError::BadRequest(
            "No datapoints found in content".into(),
        ));
    }
    let mut grouper = parse::Grouper::default();
    let mut failures: Vec<(usize, String)> = Vec::new();
    for (index, point) in points.iter().enumerate() {
        match parse::json_datapoint(point) {
            Ok(point) => grouper.add(point, index),
            Err(error) => failures.push((index, error)),
        }
    }
    let grouped = grouper.finish();
    let report = engine.write_series(database, &grouped.series)?;
    // The engine numbers series by their place in what it was given; a refused series is
    // reported at its first data point.
    failures.extend(
        report
            .errors
            .iter()
            .map(|e| (grouped.first[e.line - 1], e.message.clone())),
    );
    failures.sort_by_key(|(index, _)| *index);
    let omitted = failures.len().saturating_sub(MAX_DETAILED_ERRORS);
    failures.truncate(MAX_DETAILED_ERRORS);
    Ok(PutOutcome {
        total: points.len() as u64,
        stored: report.points,
        failures: failures
            .into_iter()
            .map(|(index, error)| (index, points[index].clone(), error))
            .collect(),
        omitted,
    })
}

/// OpenTSDB's error object: `{"error":{"code":..,"message":..,"details":..}}`.
fn opentsdb_error(status: StatusCode, message: &str, details: &str) -> Response {
    json_response(
        status,
        &serde_json::json!({
            "error": { "code": status.as_u16(), "message": message, "details": details }
        }),
    )
}

/// `GET /api/version`: what OpenTSDB clients ask to see that the server is up.
pub(crate) async fn version() -> Response {
    json_response(
        StatusCode::OK,
        &serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "server": "strata",
            "api": "OpenTSDB /api/put and telnet put",
        }),
    )
}
