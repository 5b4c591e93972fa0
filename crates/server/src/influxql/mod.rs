//! `/query`: InfluxDB 1.x's query API. InfluxQL statements are parsed by
//! `strata-influxql`, then metadata and management statements are answered from the
//! catalog (`meta`), `DELETE` and `DROP SERIES` become engine deletes (`delete`), and
//! `SELECT`s run as SQL through the shared [`strata_query::QueryEngine`] (`select`), the
//! same entry point as `/sql`.
//!
//! `GET|POST /query?q=&db=&epoch=&chunked=&chunk_size=&pretty=&params= (q and the others
//! also in a form body) → auth → parse (400 {"error": "error parsing query: …"}) → each
//! statement in order → results (an error is that statement's, the others still run) →
//! InfluxDB's JSON, whole or one line per chunk, or CSV with Accept: application/csv`.
//! Reference and differences from InfluxDB: `docs/influxql.md`.

mod delete;
mod encode;
mod meta;
mod result;
mod select;
mod text;
mod validate;

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use strata_influxql::{Param, Statement};

use crate::auth;
use crate::http::{Params, Shared};
use encode::Epoch;
use result::{Series, StatementResult};

/// Rows per chunk of a `chunked=true` answer without `chunk_size` (InfluxDB's default).
const DEFAULT_CHUNK_ROWS: usize = 10_000;

/// `GET /query`.
pub(crate) async fn query_get(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
) -> Response {
    match params {
        Ok(Query(params)) => run(&state, &headers, params, true).await,
        Err(e) => error_response(StatusCode::BAD_REQUEST, &e.body_text()),
    }
}

/// `POST /query`: parameters in the query string, or in an
/// `application/x-www-form-urlencoded` body (the InfluxDB clients' way for long queries).
pub(crate) async fn query_post(
    State(state): State<Shared>,
    headers: HeaderMap,
    params: Params,
    body: Body,
) -> Response {
    let mut params = match params {
        Ok(Query(params)) => params,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e.body_text()),
    };
    let bytes = match crate::sql::read_statement(body, &state.config).await {
        Ok(bytes) => bytes,
        Err(e) => return e.into_response(),
    };
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if is_form && !bytes.is_empty() {
        match serde_urlencoded::from_bytes::<Vec<(String, String)>>(&bytes) {
            Ok(pairs) => params.extend(pairs),
            Err(e) => {
                return error_response(
                    StatusCode::BAD_REQUEST,
                    &format!("cannot read form body: {e}"),
                );
            }
        }
    }
    run(&state, &headers, params, false).await
}

fn error_response(status: StatusCode, message: &str) -> Response {
    let mut response = (status, encode::json_error(message)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// `params={"name": value}`: values bound to `$name` placeholders.
fn bound_params(text: Option<&String>) -> Result<HashMap<String, Param>, String> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(HashMap::new());
    };
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| format!("error parsing query parameters: {e}"))?;
    object
        .into_iter()
        .map(|(name, value)| {
            let param = match value {
                serde_json::Value::Bool(b) => Param::Boolean(b),
                serde_json::Value::String(s) => Param::String(s),
                serde_json::Value::Number(n) => match n.as_i64() {
                    Some(i) => Param::Integer(i),
                    None => Param::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
                other => {
                    return Err(format!(
                        "error parsing query parameters: unsupported value for {name}: {other}"
                    ));
                }
            };
            Ok((name, param))
        })
        .collect()
}

async fn run(
    state: &Shared,
    headers: &HeaderMap,
    params: HashMap<String, String>,
    read_only: bool,
) -> Response {
    let access = match auth::check(&state.config, headers, &params) {
        Ok(access) => access,
        Err(e) => return error_response(e.status(), &e.to_string()),
    };
    let Some(text) = params.get("q").filter(|q| !q.trim().is_empty()) else {
        return error_response(StatusCode::BAD_REQUEST, "missing required parameter \"q\"");
    };
    let Some(epoch) = Epoch::parse(params.get("epoch").map(String::as_str)) else {
        return error_response(
            StatusCode::BAD_REQUEST,
            "invalid epoch: use ns, u, µ, ms, s, m or h",
        );
    };
    let bound = match bound_params(params.get("params")) {
        Ok(bound) => bound,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e),
    };
    let query = match strata_influxql::parse_query(text, &bound) {
        Ok(query) => query,
        Err(e) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("error parsing query: {e}"),
            );
        }
    };
    // As InfluxDB authorizes every statement before running any: the read-only token may
    // only SELECT and SHOW.
    if let Some(statement) = query.statements.iter().find(|s| !is_read(s))
        && let Err(e) = access.require_write("run statements that change data")
    {
        let kind = meta::write_statement_text(statement).unwrap_or_else(|| "this statement".into());
        return error_response(
            e.status(),
            &format!("error authorizing query: {e} ({kind})"),
        );
    }
    if let Err(e) = validate::regexes(&query) {
        return error_response(
            StatusCode::BAD_REQUEST,
            &format!("error parsing query: {e}"),
        );
    }
    let database = params
        .get("db")
        .map(String::as_str)
        .filter(|d| !d.is_empty());
    let now_ns = state.engine.now_ns();
    let buckets = select::BucketBudget::default();
    let context = select::Context {
        query: &state.query,
        engine: &state.engine,
        database,
        now_ns,
        subquery: None,
        inner: false,
        arrow_rows: true,
        buckets: &buckets,
    };
    let mut results = Vec::with_capacity(query.statements.len());
    for (id, statement) in query.statements.iter().enumerate() {
        // Boxed: a statement's future (parsing, planning, the engine's) is kilobytes, and
        // inline it made this handler's future as large, which the router moves per
        // request (callgrind: a memcpy of it in tower's MapFuture::call).
        let answer = Box::pin(execute(&context, state, statement)).await;
        let mut result = match answer {
            Ok(series) => StatementResult {
                statement_id: id,
                series,
                chunkable: matches!(statement, Statement::Select(_)),
                ..StatementResult::default()
            },
            Err(error) => StatementResult::failed(id, error),
        };
        if read_only
            && result.error.is_none()
            && let Some(text) = meta::write_statement_text(statement)
        {
            result.messages.push((
                "warning".into(),
                format!("deprecated use of '{text}' in a read only context, please use a POST request instead"),
            ));
        }
        let failed = result.error.is_some();
        results.push(result);
        // InfluxDB stops at the first statement that fails.
        if failed {
            break;
        }
    }
    respond(headers, &params, epoch, results)
}

/// Whether a statement only reads: a `SELECT` (`INTO` is refused by the parser) or a
/// `SHOW`.
fn is_read(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Select(_)
            | Statement::ShowDatabases
            | Statement::ShowMeasurements(_)
            | Statement::ShowTagKeys(_)
            | Statement::ShowTagValues(_)
            | Statement::ShowFieldKeys(_)
            | Statement::ShowSeries(_)
            | Statement::ShowRetentionPolicies { .. }
            | Statement::ShowCardinality(_)
            | Statement::ShowDiagnostics
            | Statement::ShowStats { .. }
            | Statement::ShowUsers
    )
}

async fn execute(
    context: &select::Context<'_>,
    state: &Shared,
    statement: &Statement,
) -> Result<Vec<Series>, String> {
    let started = state.started_ns;
    let engine = &state.engine;
    // Metadata statements read in-memory indexes; management ones write the small catalog.
    if let Some(done) = meta::execute(engine, context.database, statement, started) {
        return done;
    }
    match statement {
        Statement::Select(select) => select::select(context, select).await,
        Statement::Delete(spec) => {
            let kind = delete::Kind::Delete;
            delete::execute(engine, context.database, kind, spec, context.now_ns).await
        }
        Statement::DropSeries(spec) => {
            let kind = delete::Kind::DropSeries;
            delete::execute(engine, context.database, kind, spec, context.now_ns).await
        }
        _ => Err("statement not supported".into()),
    }
}

fn respond(
    headers: &HeaderMap,
    params: &HashMap<String, String>,
    epoch: Epoch,
    mut results: Vec<StatementResult>,
) -> Response {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let csv = accept.contains("application/csv") || accept.contains("text/csv");
    let chunk_rows = params.get("chunked").filter(|c| *c == "true").map(|_| {
        params
            .get("chunk_size")
            .and_then(|c| c.parse::<usize>().ok())
            .filter(|n| *n > 0)
            .unwrap_or(DEFAULT_CHUNK_ROWS)
    });
    if csv || chunk_rows.is_some() {
        // CSV and chunks are written from cells.
        materialize(&mut results);
    }
    let (content_type, body) = if csv {
        let mut out = Vec::new();
        encode::csv_results(&results, epoch, &mut out);
        ("text/csv", out)
    } else if let Some(rows) = chunk_rows {
        ("application/json", chunked(&results, epoch, rows))
    } else {
        let mut out = Vec::with_capacity(encode::json_size_hint(&results));
        encode::json_results(&results, epoch, &mut out);
        if params.get("pretty").is_some_and(|p| p == "true") {
            out = encode::pretty(&out);
        }
        ("application/json", out)
    };
    let mut response = (StatusCode::OK, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Every series' rows as cells; a statement whose rows cannot be read fails.
fn materialize(results: &mut [StatementResult]) {
    for result in results {
        let failed = result
            .series
            .iter_mut()
            .find_map(|series| series.materialize().err());
        if let Some(error) = failed {
            let id = result.statement_id;
            *result = StatementResult::failed(id, error);
        }
    }
}

/// One JSON line per chunk of at most `rows` rows of one series of a `SELECT`; a series
/// cut across chunks says `"partial":true` in every chunk but its last, and every chunk of
/// a statement but its last says `"partial":true` too. Other statements come whole.
fn chunked(results: &[StatementResult], epoch: Epoch, rows: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for result in results {
        if !result.chunkable || result.series.is_empty() {
            encode::json_chunk(result, epoch, false, &mut out);
            continue;
        }
        let mut pieces: Vec<(Series, bool)> = Vec::new();
        for series in &result.series {
            let count = series.values.len().div_ceil(rows).max(1);
            for i in 0..count {
                let values = series
                    .values
                    .iter()
                    .skip(i * rows)
                    .take(rows)
                    .cloned()
                    .collect();
                pieces.push((
                    Series {
                        values,
                        ..series.clone()
                    },
                    i + 1 < count,
                ));
            }
        }
        let last = pieces.len() - 1;
        for (i, (piece, series_partial)) in pieces.iter().enumerate() {
            encode::json_series_chunk(
                result.statement_id,
                piece,
                epoch,
                *series_partial,
                i != last,
                &mut out,
            );
        }
    }
    out
}
