//! `POST /api/v1/backup?to=DIR`: a consistent backup of the running server into `DIR`, a
//! directory on the server's machine (see `strata_storage::Engine::backup`); an earlier
//! backup there is brought up to date, copying only new parts. Needs the auth token.
//! Answers the backup's report as JSON. `strata backup --to DIR` calls it.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::auth;
use crate::error::{ApiError, json_response};
use crate::http::{Params, Shared};

pub(crate) async fn backup(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    auth::check(&state.config, &headers, &params)?.require_write("take backups")?;
    let target = params
        .get("to")
        .filter(|t| !t.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| ApiError::BadRequest("the backup directory is required: ?to=DIR".into()))?;
    if !target.is_absolute() {
        return Err(ApiError::BadRequest(format!(
            "the backup directory must be an absolute path on the server's machine, got {}",
            target.display()
        )));
    }
    let engine = std::sync::Arc::clone(&state.engine);
    let started = std::time::Instant::now();
    let report = tokio::task::spawn_blocking(move || engine.backup(&target))
        .await
        .map_err(|e| ApiError::Internal(format!("backup task failed: {e}")))??;
    state.metrics.backups.fetch_add(1, Ordering::Relaxed);
    state
        .metrics
        .last_backup_ns
        .store(report.created_ns.max(0) as u64, Ordering::Relaxed);
    tracing::info!(
        parts = report.parts,
        new_parts = report.parts_new,
        bytes_copied = report.bytes_copied,
        "backup taken in {:.1?}",
        started.elapsed()
    );
    let mut body = serde_json::to_value(&report)
        .map_err(|e| ApiError::Internal(format!("cannot encode the report: {e}")))?;
    body["seconds"] = serde_json::json!(started.elapsed().as_secs_f64());
    Ok(json_response(StatusCode::OK, &body))
}
