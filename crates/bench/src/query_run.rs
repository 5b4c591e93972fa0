//! Running generated queries against a target with C client threads, timing each.
//!
//! A [`QueryClient`] runs one statement and says how many rows came back and how long the
//! answer took: in-process through [`QueryEngine`] ([`EmbeddedClient`]), or over HTTP
//! (`POST /sql`, [`HttpQueryClient`]), reading the whole answer before the clock stops.
//! [`run_type`] runs one type's queries with one thread per client, each taking the next
//! query from a shared counter (as TSBS's workers take queries from one channel), until
//! the queries or the time budget run out. The first failing query stops the run.

use std::io::{BufReader, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use datafusion::arrow::ipc::reader::StreamReader;
use futures::StreamExt;
use strata_query::QueryEngine;

use crate::http::HttpClient;
use crate::queries::Query;
use crate::stats::Latencies;

/// What one query returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Rows in the result.
    pub rows: u64,
    /// From sending the statement to the last byte (or batch) of the answer.
    pub latency: Duration,
}

/// Something that runs statements; one per client thread.
pub trait QueryClient: Send {
    /// Runs `query` and reads its whole answer; an error is the message to show.
    fn run(&mut self, query: &Query) -> Result<Answer, String>;
}

/// An in-process query target: one [`QueryEngine`] over the storage engine and the tokio
/// runtime its statements run on, shared by every [`EmbeddedClient`].
pub struct EmbeddedQueries {
    engine: Arc<QueryEngine>,
    runtime: Arc<tokio::runtime::Runtime>,
    database: String,
}

impl EmbeddedQueries {
    /// A query engine with default options over `engine`, reading `database`, on a runtime
    /// with one worker thread per core this process may use.
    pub fn new(engine: Arc<strata_storage::Engine>, database: &str) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(strata_storage::options::available_cores())
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the query runtime: {e}"))?;
        let engine = QueryEngine::new(engine).map_err(|e| e.to_string())?;
        Ok(Self {
            engine: Arc::new(engine),
            runtime: Arc::new(runtime),
            database: database.to_string(),
        })
    }

    /// A client (one per client thread).
    pub fn client(&self) -> EmbeddedClient {
        EmbeddedClient::new(
            Arc::clone(&self.engine),
            Arc::clone(&self.runtime),
            &self.database,
        )
    }
}

/// Runs statements in-process on a shared [`QueryEngine`] and tokio runtime.
pub struct EmbeddedClient {
    engine: Arc<QueryEngine>,
    runtime: Arc<tokio::runtime::Runtime>,
    database: String,
}

impl EmbeddedClient {
    /// A client of `engine` (reading `database`) that runs on `runtime`.
    pub fn new(
        engine: Arc<QueryEngine>,
        runtime: Arc<tokio::runtime::Runtime>,
        database: &str,
    ) -> Self {
        Self {
            engine,
            runtime,
            database: database.to_string(),
        }
    }
}

impl QueryClient for EmbeddedClient {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let started = Instant::now();
        let rows = self.runtime.block_on(async {
            if query.streamed {
                // Rows are counted as batches arrive; nothing is held.
                let mut stream = self
                    .engine
                    .sql_stream(&self.database, &query.sql)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut rows = 0u64;
                while let Some(batch) = stream.next().await {
                    rows += batch.map_err(|e| e.to_string())?.num_rows() as u64;
                }
                Ok::<u64, String>(rows)
            } else {
                let batches = self
                    .engine
                    .sql(&self.database, &query.sql)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
            }
        })?;
        Ok(Answer {
            rows,
            latency: started.elapsed(),
        })
    }
}

/// The `format` of `POST /sql` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultFormat {
    /// `{"columns":[…],"rows":[[…]],"row_count":N}`.
    Json,
    /// A header line, then one line per row.
    Csv,
    /// An Arrow IPC stream.
    Arrow,
}

impl ResultFormat {
    /// The `format` parameter's value.
    pub fn name(&self) -> &'static str {
        match self {
            ResultFormat::Json => "json",
            ResultFormat::Csv => "csv",
            ResultFormat::Arrow => "arrow",
        }
    }
}

/// Runs statements over one keep-alive connection: `POST <base>/sql?db=…&format=…` with
/// the statement as the body. Streamed queries (`select *`) always ask for Arrow and count
/// rows as the stream is decoded; the others read the whole body in the chosen format,
/// stop the clock, then count rows.
pub struct HttpQueryClient {
    client: HttpClient,
    base_path: String,
    database: String,
    format: ResultFormat,
}

impl HttpQueryClient {
    /// Connects to `authority` now (before any clock starts).
    pub fn connect(
        authority: &str,
        base_path: &str,
        database: &str,
        format: ResultFormat,
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut client = HttpClient::new(authority, timeout);
        client.connect().map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            base_path: base_path.to_string(),
            database: database.to_string(),
            format,
        })
    }
}

/// What an HTTP answer's body gave, before the rows are counted.
enum Body {
    Counted(u64),
    Json(Vec<u8>),
    Failed(u16, String),
}

impl QueryClient for HttpQueryClient {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let format = if query.streamed {
            ResultFormat::Arrow
        } else {
            self.format
        };
        let path = format!(
            "{}/sql?db={}&format={}",
            self.base_path,
            percent_encode(&self.database),
            format.name()
        );
        let started = Instant::now();
        let body = self
            .client
            .request_streaming("POST", &path, query.sql.as_bytes(), |head, body| {
                if head.status != 200 {
                    let mut text = String::new();
                    body.take(4096).read_to_string(&mut text)?;
                    return Ok(Body::Failed(head.status, text));
                }
                match format {
                    ResultFormat::Json => {
                        let mut bytes = Vec::new();
                        body.read_to_end(&mut bytes)?;
                        Ok(Body::Json(bytes))
                    }
                    ResultFormat::Csv => count_csv_rows(body).map(Body::Counted),
                    ResultFormat::Arrow => count_arrow_rows(body).map(Body::Counted),
                }
            })
            .map_err(|e| e.to_string())?;
        let latency = started.elapsed();
        let rows = match body {
            Body::Counted(rows) => rows,
            Body::Json(bytes) => json_row_count(&bytes)?,
            Body::Failed(status, text) => {
                return Err(format!("HTTP {status}: {}", text.trim()));
            }
        };
        Ok(Answer { rows, latency })
    }
}

/// Lines of a CSV answer after its header line (values never hold line breaks here: the
/// benchmark's tables have none in their tags).
fn count_csv_rows(body: &mut dyn Read) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 64 * 1024];
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let n = body.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buffer[..n]).count() as u64;
        last = buffer[n - 1];
    }
    if last != b'\n' {
        lines += 1; // the last line has no line break
    }
    Ok(lines.saturating_sub(1))
}

/// Rows of an Arrow IPC stream, decoded batch by batch.
fn count_arrow_rows(body: &mut dyn Read) -> std::io::Result<u64> {
    let reader = StreamReader::try_new(BufReader::with_capacity(1 << 20, body), None)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let mut rows = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        rows += batch.num_rows() as u64;
    }
    Ok(rows)
}

/// `row_count` of a JSON answer (or the length of `rows` when it has no `row_count`); an
/// answer that failed part-way (an `error` after the rows) is an error.
fn json_row_count(bytes: &[u8]) -> Result<u64, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        row_count: Option<u64>,
        rows: Option<Vec<serde::de::IgnoredAny>>,
        error: Option<serde_json::Value>,
    }
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| format!("the JSON answer does not parse: {e}"))?;
    if let Some(error) = answer.error {
        return Err(format!("the answer failed part-way: {error}"));
    }
    answer
        .row_count
        .or(answer.rows.map(|r| r.len() as u64))
        .ok_or_else(|| "the JSON answer has neither row_count nor rows".to_string())
}

/// Percent-encodes a query-string value (database names are usually plain already).
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Bounds of one type's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// No query starts after this much time has passed since the first one started.
    pub max_duration: Duration,
}

/// What one type's run measured.
#[derive(Debug, Clone, Default)]
pub struct TypeRun {
    /// Latency of every completed query.
    pub latencies: Latencies,
    /// Rows of every completed query (in completion order, per client appended).
    pub rows: Vec<u64>,
    /// From the first query's start to the last answer.
    pub elapsed: Duration,
    /// Number of clients that ran it.
    pub clients: usize,
}

/// A query that failed: the run stops with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryFailure {
    /// The type's name.
    pub query_type: String,
    /// The statement.
    pub sql: String,
    /// What the target said.
    pub message: String,
}

impl std::fmt::Display for QueryFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} query failed: {}\nSQL: {}",
            self.query_type, self.message, self.sql
        )
    }
}

/// Runs `queries` of type `query_type` with one thread per client until they are all done
/// or `limits` says stop; the first error stops every client.
pub fn run_type(
    query_type: &str,
    queries: &[Query],
    clients: &mut [Box<dyn QueryClient>],
    limits: RunLimits,
) -> Result<TypeRun, QueryFailure> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<QueryFailure>> = Mutex::new(None);
    let started = Instant::now();
    let per_client: Vec<(Vec<Duration>, Vec<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter_mut()
            .map(|client| {
                let (next, stop, failure) = (&next, &stop, &failure);
                scope.spawn(move || {
                    let (mut latencies, mut rows) = (Vec::new(), Vec::new());
                    // Bounded by the number of queries and by the time budget.
                    while !stop.load(Ordering::Relaxed) && started.elapsed() < limits.max_duration {
                        let Some(query) = queries.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        match client.run(query) {
                            Ok(answer) => {
                                latencies.push(answer.latency);
                                rows.push(answer.rows);
                            }
                            Err(message) => {
                                stop.store(true, Ordering::Relaxed);
                                let mut slot =
                                    failure.lock().unwrap_or_else(PoisonError::into_inner);
                                slot.get_or_insert(QueryFailure {
                                    query_type: query_type.to_string(),
                                    sql: query.sql.clone(),
                                    message,
                                });
                                break;
                            }
                        }
                    }
                    (latencies, rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let elapsed = started.elapsed();
    if let Some(failure) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(failure);
    }
    let mut all_latencies = Vec::new();
    let mut all_rows = Vec::new();
    for (latencies, rows) in per_client {
        all_latencies.extend(latencies);
        all_rows.extend(rows);
    }
    Ok(TypeRun {
        latencies: Latencies::new(all_latencies),
        rows: all_rows,
        elapsed,
        clients: clients.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_exclude_the_header() {
        let count = |text: &str| count_csv_rows(&mut text.as_bytes()).unwrap();
        assert_eq!(count("a,b\n1,2\n3,4\n"), 2);
        assert_eq!(count("a,b\n1,2\n3,4"), 2);
        assert_eq!(count("a,b\n"), 0);
        assert_eq!(count(""), 0);
    }

    #[test]
    fn json_rows_from_row_count_or_rows() {
        assert_eq!(
            json_row_count(br#"{"columns":["a"],"rows":[[1],[2]],"row_count":2}"#),
            Ok(2)
        );
        assert_eq!(json_row_count(br#"{"rows":[[1],[2],[3]]}"#), Ok(3));
        assert!(json_row_count(b"{}").is_err());
        assert!(
            json_row_count(br#"{"rows":[[1]],"row_count":1,"error":{"message":"x"}}"#).is_err()
        );
        assert!(json_row_count(b"not json").is_err());
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(percent_encode("bench"), "bench");
        assert_eq!(percent_encode("a b&c"), "a%20b%26c");
    }

    struct Scripted {
        fail_on: Option<usize>,
    }

    impl QueryClient for Scripted {
        fn run(&mut self, query: &Query) -> Result<Answer, String> {
            let index: usize = query.sql.parse().map_err(|_| "bad sql".to_string())?;
            if Some(index) == self.fail_on {
                return Err("boom".into());
            }
            Ok(Answer {
                rows: index as u64,
                latency: Duration::from_millis(1),
            })
        }
    }

    fn numbered(n: usize) -> Vec<Query> {
        (0..n)
            .map(|i| Query {
                sql: i.to_string(),
                start_ns: None,
                end_ns: None,
                hosts: Vec::new(),
                clamped: false,
                streamed: false,
            })
            .collect()
    }

    #[test]
    fn every_query_runs_once_across_clients() {
        let mut clients: Vec<Box<dyn QueryClient>> = (0..3)
            .map(|_| Box::new(Scripted { fail_on: None }) as Box<dyn QueryClient>)
            .collect();
        let limits = RunLimits {
            max_duration: Duration::from_secs(600),
        };
        let run = run_type("t", &numbered(50), &mut clients, limits).unwrap();
        assert_eq!(run.latencies.count(), 50);
        let mut rows = run.rows.clone();
        rows.sort_unstable();
        assert_eq!(rows, (0..50).collect::<Vec<u64>>());
        assert_eq!(run.clients, 3);
    }

    #[test]
    fn the_first_failure_stops_the_run() {
        let mut clients: Vec<Box<dyn QueryClient>> = vec![Box::new(Scripted { fail_on: Some(7) })];
        let limits = RunLimits {
            max_duration: Duration::from_secs(600),
        };
        let failure = run_type("t", &numbered(50), &mut clients, limits).unwrap_err();
        assert_eq!(failure.sql, "7");
        assert_eq!(failure.message, "boom");
        assert!(failure.to_string().contains("SQL: 7"));
    }
}
