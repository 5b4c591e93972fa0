//! `/sql`: one SQL statement per request, its result streamed batch by batch.
//!
//! `request → auth → statement and database (query string, text body or JSON body) →
//! QueryEngine::sql_stream → first batch awaited (so errors found while planning or on the
//! first batch get their own status) → headers → one body chunk per batch → end`. Nothing
//! but the batch being encoded is held, so `SELECT *` over a whole table streams out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use datafusion::arrow::array::RecordBatch;
use futures::StreamExt;
use strata_query::{QueryError, QueryStream};
use strata_storage::StorageError;

use crate::auth;
use crate::config::{DEFAULT_SQL_DATABASE, ServerConfig};
use crate::error::{ApiError, json_response};
use crate::http::{Params, Shared};
use crate::metrics::Metrics;
use crate::sql_format::{Encoder, Format};

/// Why a `/sql` request failed before its body began.
#[derive(Debug)]
pub(crate) enum SqlError {
    /// The request itself: auth, parameters, body.
    Api(ApiError),
    /// The statement.
    Query(QueryError),
}

impl From<ApiError> for SqlError {
    fn from(err: ApiError) -> Self {
        SqlError::Api(err)
    }
}

impl From<QueryError> for SqlError {
    fn from(err: QueryError) -> Self {
        SqlError::Query(err)
    }
}

/// The HTTP status of a statement's failure: the client's fault (bad SQL, unknown names,
/// unsupported statements, data that does not fit the schema or that a function refuses,
/// expressions nested too deeply) is 400, a change sent to a read-only server 403, a
/// timeout 504, too many queries 503, everything else 500.
pub(crate) fn query_status(err: &QueryError) -> StatusCode {
    match err {
        QueryError::Syntax { .. }
        | QueryError::Plan { .. }
        | QueryError::NotSupported { .. }
        | QueryError::Data { .. }
        | QueryError::TooComplex { .. } => StatusCode::BAD_REQUEST,
        QueryError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        QueryError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
        QueryError::Storage(StorageError::Schema(_) | StorageError::Invalid(_)) => {
            StatusCode::BAD_REQUEST
        }
        QueryError::Storage(StorageError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
        QueryError::Storage(StorageError::ReadOnly(_)) => StatusCode::FORBIDDEN,
        QueryError::Storage(e) if e.is_out_of_space() => StatusCode::INSUFFICIENT_STORAGE,
        QueryError::Storage(_)
        | QueryError::Execution { .. }
        | QueryError::ResourcesExhausted { .. } => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for SqlError {
    fn into_response(self) -> Response {
        let err = match self {
            SqlError::Api(err) => return err.into_response(),
            SqlError::Query(err) => err,
        };
        let status = query_status(&err);
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            tracing::error!("query failed: {err}");
        }
        let mut message = err.to_string();
        if status == StatusCode::INSUFFICIENT_STORAGE {
            message.push_str(crate::error::OUT_OF_SPACE_HINT);
        }
        let mut body = serde_json::json!({ "error": message, "kind": err.kind() });
        if let Some(position) = err.position() {
            body["position"] =
                serde_json::json!({ "line": position.line, "column": position.column });
        }
        let mut response = json_response(status, &body);
        let retry_after = match status {
            StatusCode::SERVICE_UNAVAILABLE => Some("1"),
            StatusCode::INSUFFICIENT_STORAGE => Some("10"),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}

/// `GET /sql?q=&db=&format=`.
pub(crate) async fn sql_get(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
) -> Result<Response, SqlError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let access = auth::check(&state.config, &headers, &params)?;
    let statement = params.get("q").cloned().unwrap_or_default();
    let database = database(&params, None);
    require_access(access, &statement)?;
    run(&state, &headers, &params, database, statement).await
}

/// `POST /sql?db=&format=`: the statement is the body (any content type), or with
/// `Content-Type: application/json` the body is `{"q": …, "db": …}`.
pub(crate) async fn sql_post(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Result<Response, SqlError> {
    let Query(params) = params.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let access = auth::check(&state.config, &headers, &params)?;
    let bytes = read_statement(body, &state.config).await?;
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    let (statement, database) = if is_json {
        let request: JsonRequest = serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::BadRequest(format!(
                "JSON body must be {{\"q\": \"statement\", \"db\": \"database\"}}: {e}"
            ))
        })?;
        (request.q, database(&params, request.db))
    } else {
        let text = String::from_utf8(bytes)
            .map_err(|_| ApiError::BadRequest("the statement is not UTF-8".into()))?;
        let statement = if text.trim().is_empty() {
            params.get("q").cloned().unwrap_or_default()
        } else {
            text
        };
        (statement, database(&params, None))
    };
    require_access(access, &statement)?;
    run(&state, &headers, &params, database, statement).await
}

/// The read-only token may run only statements that read (`SELECT`, `SHOW`, …).
fn require_access(access: auth::Access, statement: &str) -> Result<(), ApiError> {
    if strata_query::is_read_statement(statement) {
        return Ok(());
    }
    access.require_write(
        "run statements that change data (only SELECT, WITH, SHOW, DESCRIBE, EXPLAIN)",
    )
}

/// The request body, refused past the max body bytes or when it pauses past the client
/// timeout.
pub(crate) async fn read_statement(
    mut body: Body,
    config: &ServerConfig,
) -> Result<Vec<u8>, ApiError> {
    let limit = config.max_body_bytes;
    let mut out = Vec::new();
    while let Some(frame) = crate::http::next_frame(&mut body, config.client_timeout).await? {
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        if out.len() + data.len() > limit {
            return Err(ApiError::PayloadTooLarge(format!(
                "statement is over the limit of {limit} bytes (max body bytes)"
            )));
        }
        out.extend_from_slice(&data);
    }
    Ok(out)
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonRequest {
    q: String,
    db: Option<String>,
}

/// The database: the JSON body's, else `db=`, else [`DEFAULT_SQL_DATABASE`].
fn database(params: &HashMap<String, String>, from_body: Option<String>) -> String {
    from_body
        .or_else(|| params.get("db").cloned())
        .filter(|db| !db.is_empty())
        .unwrap_or_else(|| DEFAULT_SQL_DATABASE.to_owned())
}

/// `format=`, else the `Accept` header, else JSON.
fn format(headers: &HeaderMap, params: &HashMap<String, String>) -> Result<Format, ApiError> {
    match params.get("format").filter(|f| !f.is_empty()) {
        Some(name) => Format::from_name(name).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown format {name:?}: expected json, csv or arrow"
            ))
        }),
        None => Ok(headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .map_or(Format::Json, Format::from_accept)),
    }
}

async fn run(
    state: &Shared,
    headers: &HeaderMap,
    params: &HashMap<String, String>,
    database: String,
    statement: String,
) -> Result<Response, SqlError> {
    let format = format(headers, params)?;
    if statement.trim().is_empty() {
        return Err(ApiError::BadRequest(
            "no statement: send it as the request body or as q=".into(),
        )
        .into());
    }
    let record = QueryRecord::start(Arc::clone(&state.metrics));
    let mut stream = state.query.sql_stream(&database, &statement).await?;
    let first = match stream.next().await {
        Some(Ok(batch)) => Some(batch),
        Some(Err(err)) => return Err(err.into()),
        None => None,
    };
    let encoder = format
        .encoder(stream.schema())
        .map_err(|e| ApiError::Internal(format!("cannot encode the result: {e}")))?;
    let body = ResultBody {
        stream: Some(stream),
        encoder,
        first,
        phase: Phase::Begin,
        record,
    };
    let mut response =
        Body::from_stream(futures::stream::unfold(body, ResultBody::step)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    Ok(response)
}

/// Where a streamed result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing sent yet.
    Begin,
    /// Header and first batch sent; batches follow.
    Rows,
    /// Ended (finished, failed or cut off).
    Done,
}

/// A result being sent: the statement's stream and the encoder of its format.
struct ResultBody {
    stream: Option<QueryStream>,
    encoder: Encoder,
    /// The batch awaited before the headers went out.
    first: Option<RecordBatch>,
    phase: Phase,
    record: QueryRecord,
}

type Chunk = Result<Vec<u8>, std::io::Error>;

impl ResultBody {
    /// The next body chunk.
    async fn step(mut self) -> Option<(Chunk, Self)> {
        match self.phase {
            Phase::Done => None,
            Phase::Begin => {
                self.phase = Phase::Rows;
                let mut out = self.encoder.begin();
                if let Some(batch) = self.first.take() {
                    match self.encoder.batch(&batch) {
                        Ok(bytes) => out.extend(bytes),
                        Err(e) => return Some(self.fail(&e.to_string(), "execution")),
                    }
                }
                Some((Ok(out), self))
            }
            Phase::Rows => loop {
                let next = match self.stream.as_mut() {
                    Some(stream) => stream.next().await,
                    None => None,
                };
                match next {
                    Some(Ok(batch)) => match self.encoder.batch(&batch) {
                        Ok(bytes) if bytes.is_empty() => continue,
                        Ok(bytes) => return Some((Ok(bytes), self)),
                        Err(e) => return Some(self.fail(&e.to_string(), "execution")),
                    },
                    Some(Err(err)) => return Some(self.fail(&err.to_string(), err.kind())),
                    None => {
                        self.stream = None;
                        self.phase = Phase::Done;
                        return Some(match self.encoder.finish() {
                            Ok(bytes) => {
                                self.record.ok = true;
                                (Ok(bytes), self)
                            }
                            Err(e) => {
                                let message = format!("cannot encode the result: {e}");
                                tracing::warn!("{message}");
                                (Err(std::io::Error::other(message)), self)
                            }
                        });
                    }
                }
            },
        }
    }

    /// Ends the body after a failure part-way: with the format's error marker, or by
    /// cutting it off (an error chunk makes the server abort the response).
    fn fail(mut self, message: &str, kind: &str) -> (Chunk, Self) {
        tracing::warn!(kind, "query failed after its result began: {message}");
        self.stream = None;
        self.phase = Phase::Done;
        match self.encoder.fail(message, kind) {
            Some(bytes) => (Ok(bytes), self),
            None => (Err(std::io::Error::other(message.to_owned())), self),
        }
    }
}

/// Counts one statement in the metrics when dropped: `ok` once its result was sent in
/// full, an error otherwise (failed, timed out, or the client went away).
struct QueryRecord {
    metrics: Arc<Metrics>,
    started: Instant,
    ok: bool,
}

impl QueryRecord {
    fn start(metrics: Arc<Metrics>) -> Self {
        Self {
            metrics,
            started: Instant::now(),
            ok: false,
        }
    }
}

impl Drop for QueryRecord {
    fn drop(&mut self) {
        self.metrics.observe_query(self.started.elapsed(), self.ok);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn statuses_of_query_errors() {
        let syntax = QueryError::Syntax {
            message: "x".into(),
            position: None,
        };
        assert_eq!(query_status(&syntax), StatusCode::BAD_REQUEST);
        assert_eq!(
            query_status(&QueryError::Timeout {
                limit: Duration::from_millis(1)
            }),
            StatusCode::GATEWAY_TIMEOUT
        );
        let busy = SqlError::Query(QueryError::Busy {
            limit: 2,
            queued: 8,
        })
        .into_response();
        assert_eq!(busy.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            busy.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("1"))
        );
        assert_eq!(
            query_status(&QueryError::ResourcesExhausted {
                message: "m".into()
            }),
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(
            query_status(&QueryError::Storage(StorageError::Invalid(
                "bad row".into()
            ))),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            query_status(&QueryError::Data {
                message: "Divide by zero error".into(),
                fault: strata_query::DataFault::DivisionByZero,
            }),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            query_status(&QueryError::Execution {
                message: "task failed".into()
            }),
            StatusCode::INTERNAL_SERVER_ERROR
        );
    }

    #[test]
    fn database_and_format_come_from_the_request() {
        let params = HashMap::from([("db".to_owned(), "metrics".to_owned())]);
        assert_eq!(database(&params, None), "metrics");
        assert_eq!(database(&params, Some("other".into())), "other");
        assert_eq!(database(&HashMap::new(), None), DEFAULT_SQL_DATABASE);
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("text/csv"));
        assert_eq!(format(&headers, &HashMap::new()).ok(), Some(Format::Csv));
        let arrow = HashMap::from([("format".to_owned(), "arrow".to_owned())]);
        assert_eq!(format(&headers, &arrow).ok(), Some(Format::Arrow));
        let bad = HashMap::from([("format".to_owned(), "xml".to_owned())]);
        assert!(format(&headers, &bad).is_err());
    }
}
