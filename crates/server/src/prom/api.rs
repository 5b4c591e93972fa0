//! Prometheus' HTTP query API: `/api/v1/query`, `/api/v1/query_range`, `/api/v1/series`,
//! `/api/v1/labels`, `/api/v1/label/<name>/values`, `/api/v1/metadata` and
//! `/api/v1/status/buildinfo`, with Prometheus' JSON and error shapes. Parameters come from
//! the query string and, for POST, a form body; `db` (a Strata addition) names the
//! database, `prometheus` by default.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use strata_promql::{Error, Labels, Limits, QueryValue, Source};
use strata_query::QueryError;

use super::model::{DEFAULT_DATABASE, METRIC_LABEL};
use super::source::EngineSource;
use crate::auth;
use crate::http::{Shared, read_body};

/// Parameters of a request: query string, then form body; repeated names kept.
struct Form(Vec<(String, String)>);

impl Form {
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A parameter the request must give.
    fn required(&self, name: &str) -> Result<&str, ApiFailure> {
        self.get(name)
            .ok_or_else(|| bad(format!("invalid parameter \"{name}\": missing")))
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn database(&self) -> String {
        self.get("db")
            .filter(|d| !d.is_empty())
            .unwrap_or(DEFAULT_DATABASE)
            .to_string()
    }
}

/// A failed request, answered as Prometheus does.
struct ApiFailure(Error);

impl IntoResponse for ApiFailure {
    fn into_response(self) -> Response {
        let (status, kind) = match &self.0 {
            Error::BadData(_) | Error::Unsupported(_) => (StatusCode::BAD_REQUEST, "bad_data"),
            Error::Execution(_) => (StatusCode::UNPROCESSABLE_ENTITY, "execution"),
            Error::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            Error::Timeout(_) => (StatusCode::SERVICE_UNAVAILABLE, "timeout"),
            Error::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            // Nobody reads it: the client has gone.
            Error::Cancelled => (StatusCode::SERVICE_UNAVAILABLE, "canceled"),
        };
        json(
            status,
            format!(
                "{{\"status\":\"error\",\"errorType\":\"{kind}\",\"error\":{}}}",
                serde_json::Value::String(self.0.to_string())
            ),
        )
    }
}

impl From<crate::error::ApiError> for ApiFailure {
    fn from(e: crate::error::ApiError) -> Self {
        ApiFailure(Error::BadData(e.to_string()))
    }
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn success(data: String) -> Response {
    json(
        StatusCode::OK,
        format!("{{\"status\":\"success\",\"data\":{data}}}"),
    )
}

fn bad(message: impl Into<String>) -> ApiFailure {
    ApiFailure(Error::BadData(message.into()))
}

/// Reads the parameters and checks read access.
async fn form(
    state: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
) -> Result<Form, Response> {
    let mut pairs: Vec<(String, String)> = serde_urlencoded::from_str(uri.query().unwrap_or(""))
        .map_err(|e| {
            ApiFailure(Error::BadData(format!("invalid query string: {e}"))).into_response()
        })?;
    if method == Method::POST {
        let mut inflight = crate::http::Inflight::new(state);
        let raw = read_body(
            body,
            state.config.max_body_bytes,
            state.config.client_timeout,
            &mut inflight,
        )
        .await
        .map_err(IntoResponse::into_response)?;
        let more: Vec<(String, String)> = serde_urlencoded::from_bytes(&raw).map_err(|e| {
            ApiFailure(Error::BadData(format!("invalid form body: {e}"))).into_response()
        })?;
        pairs.extend(more);
    }
    let params: std::collections::HashMap<String, String> = pairs.iter().cloned().collect();
    auth::check(&state.config, headers, &params).map_err(IntoResponse::into_response)?;
    Ok(Form(pairs))
}

/// A time parameter: RFC 3339 or Unix seconds (with a fraction), in milliseconds.
fn parse_time(text: &str, name: &str) -> Result<i64, ApiFailure> {
    if let Ok(seconds) = text.parse::<f64>()
        && seconds.is_finite()
    {
        return Ok((seconds * 1000.0).round() as i64);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            bad(format!(
                "invalid parameter \"{name}\": cannot parse \"{text}\" to a valid timestamp"
            ))
        })
}

/// A duration parameter: seconds (with a fraction) or a Prometheus duration (`15s`,
/// `1m30s`), read by promql-parser's own duration parser.
fn parse_duration(text: &str, name: &str) -> Result<i64, ApiFailure> {
    let invalid = || {
        bad(format!(
            "invalid parameter \"{name}\": cannot parse \"{text}\" to a valid duration"
        ))
    };
    // Numbers are read here: promql-parser's reading of them panics on a negative one.
    if let Ok(seconds) = text.parse::<f64>() {
        return if seconds.is_finite() {
            Ok((seconds * 1000.0).round() as i64)
        } else {
            Err(invalid())
        };
    }
    promql_parser::util::parse_duration(text)
        .map(strata_promql::eval::millis)
        .map_err(|_| invalid())
}

fn now_ms(state: &Shared) -> i64 {
    state.engine.now_ns().div_euclid(1_000_000)
}

/// Sets its flag when dropped: the handler's future is dropped when its client
/// disconnects, and the evaluation on the blocking thread sees the flag and stops.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Evaluates a query over `database` under the SQL engine's guard rails: one of its
/// concurrency slots (waited for like a SQL statement), its timeout, and cancellation when
/// the client leaves.
async fn evaluate(
    state: &Shared,
    database: String,
    work: impl FnOnce(&dyn Source, Limits) -> Result<QueryValue, Error> + Send + 'static,
) -> Result<QueryValue, ApiFailure> {
    let (slot, deadline) = state.query.admit().await.map_err(|e| {
        ApiFailure(match e {
            QueryError::Timeout { .. } => Error::Timeout(e.to_string()),
            other => Error::Unavailable(other.to_string()),
        })
    })?;
    let cancel = Arc::new(AtomicBool::new(false));
    let _cancel_on_drop = CancelOnDrop(Arc::clone(&cancel));
    let limits = Limits {
        deadline,
        cancel: Some(cancel),
        ..Limits::default()
    };
    let engine = Arc::clone(&state.engine);
    blocking(move || {
        let _slot = slot;
        let source = EngineSource {
            engine: &engine,
            database: &database,
        };
        work(&source, limits)
    })
    .await
}

/// Runs `work` on a blocking thread (evaluation reads the engine).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, ApiFailure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiFailure(Error::Internal(format!("query task failed: {e}"))))?
        .map_err(ApiFailure)
}

/// `GET|POST /api/v1/query?query=&time=`.
pub(crate) async fn query(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match form(&state, &method, &uri, &headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let run = async {
        let query = form.required("query")?.to_string();
        let time = match form.get("time") {
            Some(t) if !t.is_empty() => parse_time(t, "time")?,
            _ => now_ms(&state),
        };
        let value = evaluate(&state, form.database(), move |source, limits| {
            strata_promql::instant_query(
                source,
                &query,
                time,
                strata_promql::DEFAULT_LOOKBACK_MS,
                limits,
            )
        })
        .await?;
        Ok::<_, ApiFailure>(success(render(&value)))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// `GET|POST /api/v1/query_range?query=&start=&end=&step=`.
pub(crate) async fn query_range(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match form(&state, &method, &uri, &headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let run = async {
        let query = form.required("query")?.to_string();
        let start = parse_time(form.required("start")?, "start")?;
        let end = parse_time(form.required("end")?, "end")?;
        let step = parse_duration(form.required("step")?, "step")?;
        if step <= 0 {
            return Err(bad(
                "invalid parameter \"step\": zero or negative query resolution step widths are not accepted. Try a positive integer",
            ));
        }
        if end < start {
            return Err(bad(
                "invalid parameter \"end\": end timestamp must not be before start time",
            ));
        }
        // Prometheus' own guard: at most 11,000 points per series.
        if (end - start) / step > 11_000 {
            return Err(bad(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
            ));
        }
        let value = evaluate(&state, form.database(), move |source, limits| {
            strata_promql::range_query(
                source,
                &query,
                start,
                end,
                step,
                strata_promql::DEFAULT_LOOKBACK_MS,
                limits,
            )
        })
        .await?;
        Ok::<_, ApiFailure>(success(render(&value)))
    };
    run.await.unwrap_or_else(IntoResponse::into_response)
}

/// The series matching each `match[]` selector with samples in `[start, end]` (all time
/// when not given).
async fn matched_series(
    state: &Shared,
    form: &Form,
) -> Result<Vec<strata_promql::Series>, ApiFailure> {
    let selectors: Vec<String> = form.all("match[]").into_iter().map(String::from).collect();
    let start = match form.get("start") {
        Some(t) if !t.is_empty() => parse_time(t, "start")?,
        _ => i64::MIN / 2_000_000,
    };
    let end = match form.get("end") {
        Some(t) if !t.is_empty() => parse_time(t, "end")?,
        _ => i64::MAX / 2_000_000,
    };
    let database = form.database();
    let engine = Arc::clone(&state.engine);
    blocking(move || {
        let source = EngineSource {
            engine: &engine,
            database: &database,
        };
        let mut out = Vec::new();
        for selector in &selectors {
            let expr = strata_promql::parse(selector)?;
            let promql_parser::parser::Expr::VectorSelector(vs) = expr else {
                return Err(Error::BadData(format!(
                    "invalid parameter \"match[]\": {selector} is not a series selector"
                )));
            };
            let matchers = strata_promql::eval::selector_matchers(&vs)?;
            out.extend(source.select(&matchers, start, end)?);
        }
        Ok(out)
    })
    .await
}

/// `GET|POST /api/v1/series?match[]=…`.
pub(crate) async fn series(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match form(&state, &method, &uri, &headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    if form.all("match[]").is_empty() {
        return bad("no match[] parameter provided").into_response();
    }
    match matched_series(&state, &form).await {
        Ok(series) => {
            let labels: BTreeSet<Labels> = series.into_iter().map(|s| s.labels).collect();
            let items: Vec<String> = labels.iter().map(render_labels).collect();
            success(format!("[{}]", items.join(",")))
        }
        Err(failure) => failure.into_response(),
    }
}

/// The tables of the request's database with the metrics each holds.
fn metrics_of(state: &Shared, form: &Form) -> Vec<super::source::TableMetrics> {
    let database = form.database();
    EngineSource {
        engine: &state.engine,
        database: &database,
    }
    .metrics()
}

/// `GET|POST /api/v1/labels`.
pub(crate) async fn labels(
    State(state): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match form(&state, &method, &uri, &headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let names: BTreeSet<String> = if form.all("match[]").is_empty() {
        let mut names = BTreeSet::new();
        for (table, fields) in metrics_of(&state, &form) {
            if fields.is_empty() {
                continue;
            }
            names.insert(METRIC_LABEL.to_string());
            names.extend(state.engine.tag_keys(table.id));
        }
        names
    } else {
        match matched_series(&state, &form).await {
            Ok(series) => series
                .into_iter()
                .flat_map(|s| s.labels.0.into_iter().map(|(n, _)| n))
                .collect(),
            Err(failure) => return failure.into_response(),
        }
    };
    success(string_array(names.iter()))
}

/// `GET /api/v1/label/<name>/values`.
pub(crate) async fn label_values(
    State(state): State<Shared>,
    Path(name): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form = match form(&state, &method, &uri, &headers, body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    let values: BTreeSet<String> = if form.all("match[]").is_empty() {
        let mut values = BTreeSet::new();
        for (table, fields) in metrics_of(&state, &form) {
            if name == METRIC_LABEL {
                values.extend(fields.into_iter().map(|(_, metric)| metric));
            } else if !fields.is_empty() {
                values.extend(state.engine.tag_values(table.id, &name));
            }
        }
        values
    } else {
        match matched_series(&state, &form).await {
            Ok(series) => series
                .iter()
                .map(|s| s.labels.get(&name).to_string())
                .filter(|v| !v.is_empty())
                .collect(),
            Err(failure) => return failure.into_response(),
        }
    };
    success(string_array(values.iter()))
}

/// `GET /api/v1/metadata`: Strata keeps no metric metadata (remote write's is ignored).
pub(crate) async fn metadata() -> Response {
    success("{}".into())
}

/// `GET /api/v1/status/buildinfo`. The version is the Prometheus API level Strata answers
/// as (clients such as Grafana read it to choose features), Strata's own after it.
pub(crate) async fn buildinfo() -> Response {
    success(format!(
        "{{\"version\":\"2.42.0\",\"revision\":\"strata-{}\",\"branch\":\"\",\"buildUser\":\"\",\"buildDate\":\"\",\"goVersion\":\"\"}}",
        env!("CARGO_PKG_VERSION")
    ))
}

fn string_array<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let parts: Vec<String> = items
        .map(|s| serde_json::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", parts.join(","))
}

fn render_labels(labels: &Labels) -> String {
    let parts: Vec<String> = labels
        .0
        .iter()
        .map(|(n, v)| {
            format!(
                "{}:{}",
                serde_json::Value::String(n.clone()),
                serde_json::Value::String(v.clone())
            )
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// A time as Prometheus writes it: seconds, and the milliseconds as three digits when
/// there are any.
fn push_time(out: &mut String, ms: i64) {
    if ms < 0 {
        out.push('-');
    }
    let ms = ms.unsigned_abs();
    out.push_str(&(ms / 1000).to_string());
    let fraction = ms % 1000;
    if fraction != 0 {
        out.push_str(&format!(".{fraction:03}"));
    }
}

fn push_point(out: &mut String, ms: i64, value: f64) {
    out.push('[');
    push_time(out, ms);
    out.push_str(",\"");
    out.push_str(&crate::prom::format_value(value));
    out.push_str("\"]");
}

/// The `data` of a query answer.
fn render(value: &QueryValue) -> String {
    let mut out = String::new();
    match value {
        QueryValue::Scalar(t, v) => {
            out.push_str("{\"resultType\":\"scalar\",\"result\":");
            push_point(&mut out, *t, *v);
        }
        QueryValue::String(t, s) => {
            out.push_str("{\"resultType\":\"string\",\"result\":[");
            push_time(&mut out, *t);
            out.push(',');
            out.push_str(&serde_json::Value::String(s.clone()).to_string());
            out.push(']');
        }
        QueryValue::Vector(items) => {
            out.push_str("{\"resultType\":\"vector\",\"result\":[");
            for (i, (labels, t, v)) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                out.push_str(&render_labels(labels));
                out.push_str(",\"value\":");
                push_point(&mut out, *t, *v);
                out.push('}');
            }
            out.push(']');
        }
        QueryValue::Matrix(series) => {
            out.push_str("{\"resultType\":\"matrix\",\"result\":[");
            for (i, (labels, points)) in series.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str("{\"metric\":");
                out.push_str(&render_labels(labels));
                out.push_str(",\"values\":[");
                for (j, (t, v)) in points.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_point(&mut out, *t, *v);
                }
                out.push_str("]}");
            }
            out.push(']');
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations_parse_as_prometheus_does() {
        assert_eq!(
            parse_time("1700000000.5", "t").ok(),
            Some(1_700_000_000_500)
        );
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z", "t").ok(),
            Some(1_700_000_000_000)
        );
        assert!(parse_time("yesterday", "t").is_err());
        assert_eq!(parse_duration("15", "s").ok(), Some(15_000));
        assert_eq!(parse_duration("1m30s", "s").ok(), Some(90_000));
        assert_eq!(parse_duration("250ms", "s").ok(), Some(250));
        assert!(parse_duration("5x", "s").is_err());
        let mut out = String::new();
        push_time(&mut out, 1_500);
        push_time(&mut out, 2_000);
        push_time(&mut out, 7);
        assert_eq!(out, "1.50020.007");
    }
}
