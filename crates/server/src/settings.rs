//! `GET /api/v1/status/flags`: the settings the server runs with, named as `strata serve`'s
//! flags, in Prometheus' shape (`{"status":"success","data":{"flag":"value",…}}`, as its
//! own `/api/v1/status/flags` answers). The console's server panel shows them. Tokens are
//! never shown, only whether one is set. Behind the same auth as the other read endpoints.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use strata_storage::WalSync;

use crate::auth;
use crate::config::{PgListen, ServerConfig};
use crate::http::Shared;

fn duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn or_none<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "none".to_string(), show)
}

/// Every setting as (flag, value).
pub(crate) fn settings(c: &ServerConfig) -> Vec<(&'static str, String)> {
    let set = |token: &Option<String>| if token.is_some() { "set" } else { "none" }.to_string();
    vec![
        ("http", c.http_addr.to_string()),
        ("tcp", or_none(c.tcp_addr, |a| a.to_string())),
        ("tcp-db", c.tcp_database.clone()),
        ("opentsdb", or_none(c.opentsdb_addr, |a| a.to_string())),
        ("opentsdb-db", c.opentsdb_database.clone()),
        (
            "pg",
            match c.pg {
                PgListen::Off => "off".to_string(),
                PgListen::Default => "default".to_string(),
                PgListen::Addr(a) => a.to_string(),
            },
        ),
        (
            "data-dir",
            c.data_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(","),
        ),
        (
            "shards",
            if c.shards == 0 {
                "0 (one per core)".to_string()
            } else {
                c.shards.to_string()
            },
        ),
        (
            "write-concurrency",
            if c.write_concurrency == 0 {
                "0 (two per core)".to_string()
            } else {
                c.write_concurrency.to_string()
            },
        ),
        (
            "merge-assist-parts",
            if c.merge_assist_parts == 0 {
                "0 (off)".to_string()
            } else {
                c.merge_assist_parts.to_string()
            },
        ),
        (
            "wal-sync",
            match c.wal_sync {
                WalSync::Always => "always".to_string(),
                WalSync::Interval(d) => duration(d),
                WalSync::None => "none".to_string(),
            },
        ),
        (
            "wal-recovery",
            if c.wal_skip_damaged {
                "skip-damaged"
            } else {
                "strict"
            }
            .to_string(),
        ),
        ("retention", or_none(c.retention, duration)),
        ("max-series", or_none(c.max_series, |n| n.to_string())),
        ("auth-token", set(&c.auth_token)),
        ("read-only-token", set(&c.read_only_token)),
        (
            "tls-cert",
            or_none(c.tls_cert.as_ref(), |p| p.display().to_string()),
        ),
        (
            "tls-key",
            or_none(c.tls_key.as_ref(), |p| p.display().to_string()),
        ),
        ("max-body-bytes", c.max_body_bytes.to_string()),
        ("max-line-bytes", c.max_line_bytes.to_string()),
        (
            "max-inflight-write-bytes",
            c.max_inflight_write_bytes.to_string(),
        ),
        ("query-timeout", or_none(c.query.timeout, duration)),
        (
            "query-memory-limit",
            or_none(c.query.memory_limit, |n| n.to_string()),
        ),
        ("query-concurrency", c.query.max_concurrent.to_string()),
        ("query-queue", c.query.queue_length().to_string()),
        ("max-connections", c.max_connections.to_string()),
        ("client-timeout", duration(c.client_timeout)),
        ("lake", or_none(c.lake.as_ref(), |l| l.url.clone())),
        (
            "lake-read-only",
            c.lake.as_ref().is_some_and(|l| l.read_only).to_string(),
        ),
        (
            "tier-after",
            or_none(c.lake.as_ref(), |l| duration(l.tier_after)),
        ),
        (
            "tier-interval",
            or_none(c.lake.as_ref(), |l| duration(l.tier_interval)),
        ),
        (
            "lake-endpoint",
            or_none(c.lake.as_ref().and_then(|l| l.s3.endpoint.clone()), |e| e),
        ),
        (
            "lake-region",
            or_none(c.lake.as_ref().and_then(|l| l.s3.region.clone()), |r| r),
        ),
        (
            "lake-access-key-id",
            set(&c.lake.as_ref().and_then(|l| l.s3.access_key_id.clone())),
        ),
        (
            "lake-secret-access-key",
            set(&c.lake.as_ref().and_then(|l| l.s3.secret_access_key.clone())),
        ),
    ]
}

/// `GET /api/v1/status/flags`.
pub(crate) async fn flags(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    if let Err(e) = auth::check(&state.config, &headers, &params) {
        return e.into_response();
    }
    let data: serde_json::Map<String, serde_json::Value> = settings(&state.config)
        .into_iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v)))
        .collect();
    let body = serde_json::json!({"status": "success", "data": data}).to_string();
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_never_shown() {
        let config = ServerConfig {
            auth_token: Some("s3cret-token".into()),
            ..ServerConfig::default()
        };
        let all = settings(&config);
        assert!(all.iter().all(|(_, v)| !v.contains("s3cret")));
        let get = |k: &str| all.iter().find(|(f, _)| *f == k).unwrap().1.clone();
        assert_eq!(get("auth-token"), "set");
        assert_eq!(get("read-only-token"), "none");
        assert_eq!(get("http"), "127.0.0.1:8086");
        assert_eq!(get("wal-sync"), "1s");
        assert_eq!(get("retention"), "none");
    }
}
