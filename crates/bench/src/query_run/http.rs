//! The HTTP target: `POST /sql` on a server, or InfluxQL on `POST /query` as TSBS's
//! `tsbs_run_queries_influx` sends it, over the workspace's keep-alive client.

use std::io::{BufReader, Read};
use std::time::{Duration, Instant};

use datafusion::arrow::ipc::reader::StreamReader;

use super::{Answer, QueryClient};
use crate::http::{HttpClient, go_query_escape, percent_encode};
use crate::queries::Query;

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

/// What the client sends, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpProtocol {
    /// SQL: `POST <base>/sql?db=…&format=…` with the statement as the body.
    Sql(ResultFormat),
    /// InfluxQL as `tsbs_run_queries_influx` sends it: `POST <base>/query?q=…&db=…` (both
    /// encoded as Go's `url.QueryEscape` does) with an empty body; the answer is InfluxDB's
    /// JSON.
    InfluxQl,
}

impl HttpProtocol {
    /// `sql` or `influxql`.
    pub fn name(&self) -> &'static str {
        match self {
            HttpProtocol::Sql(_) => "sql",
            HttpProtocol::InfluxQl => "influxql",
        }
    }

    /// The answers' format: `json` for InfluxQL.
    pub fn format_name(&self) -> &'static str {
        match self {
            HttpProtocol::Sql(format) => format.name(),
            HttpProtocol::InfluxQl => "json",
        }
    }
}

/// Runs statements over one keep-alive connection. SQL: `POST <base>/sql?db=…&format=…`
/// with the statement as the body; streamed queries (`select *`) always ask for Arrow and
/// count rows as the stream is decoded; the others read the whole body in the chosen
/// format, stop the clock, then count rows. InfluxQL: `POST <base>/query?q=…&db=…` with an
/// empty body; the whole JSON answer is read, the clock stopped, then the rows counted (the
/// `values` of every series of every statement; a statement's `error` fails the query).
pub struct HttpQueryClient {
    client: HttpClient,
    base_path: String,
    database: String,
    protocol: HttpProtocol,
}

impl HttpQueryClient {
    /// Connects to `authority` now (before any clock starts).
    pub fn connect(
        authority: &str,
        base_path: &str,
        database: &str,
        protocol: HttpProtocol,
        timeout: Duration,
    ) -> Result<Self, String> {
        let mut client = HttpClient::new(authority, timeout);
        client.connect().map_err(|e| e.to_string())?;
        Ok(Self {
            client,
            base_path: base_path.to_string(),
            database: database.to_string(),
            protocol,
        })
    }
}

/// What an HTTP answer's body gave, before the rows are counted.
enum Body {
    Counted(u64),
    Json(Vec<u8>),
    InfluxJson(Vec<u8>),
    Failed(u16, String),
}

impl QueryClient for HttpQueryClient {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let format = match self.protocol {
            HttpProtocol::InfluxQl => return self.run_influxql(query),
            HttpProtocol::Sql(_) if query.streamed => ResultFormat::Arrow,
            HttpProtocol::Sql(format) => format,
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
        finish(body, latency)
    }
}

impl HttpQueryClient {
    /// `POST /query?q=…&db=…`, empty body, as `tsbs_run_queries_influx` sends it.
    fn run_influxql(&mut self, query: &Query) -> Result<Answer, String> {
        let path = influxql_path(&self.base_path, &query.sql, &self.database);
        let started = Instant::now();
        let body = self
            .client
            .request_streaming("POST", &path, b"", |head, body| {
                if head.status != 200 {
                    let mut text = String::new();
                    body.take(4096).read_to_string(&mut text)?;
                    return Ok(Body::Failed(head.status, text));
                }
                let mut bytes = Vec::new();
                body.read_to_end(&mut bytes)?;
                Ok(Body::InfluxJson(bytes))
            })
            .map_err(|e| e.to_string())?;
        let latency = started.elapsed();
        finish(body, latency)
    }
}

/// The answer's rows, once the clock has stopped; a failed answer is the error.
fn finish(body: Body, latency: Duration) -> Result<Answer, String> {
    let rows = match body {
        Body::Counted(rows) => rows,
        Body::Json(bytes) => json_row_count(&bytes)?,
        Body::InfluxJson(bytes) => influxql_row_count(&bytes)?,
        Body::Failed(status, text) => {
            return Err(format!("HTTP {status}: {}", text.trim()));
        }
    };
    Ok(Answer { rows, latency })
}

/// The request target of an InfluxQL statement, as `tsbs_run_queries_influx` builds it:
/// `<base>/query?q=<statement>&db=<database>`, each value encoded as Go's `url.QueryEscape`.
pub(crate) fn influxql_path(base_path: &str, statement: &str, database: &str) -> String {
    format!(
        "{base_path}/query?q={}&db={}",
        go_query_escape(statement),
        go_query_escape(database)
    )
}

/// Rows of an InfluxDB 1.x JSON answer: the `values` of every series of every statement.
/// An `error` at the top or in any statement's result is an error.
fn influxql_row_count(bytes: &[u8]) -> Result<u64, String> {
    #[derive(serde::Deserialize)]
    struct Answer {
        results: Option<Vec<Statement>>,
        error: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Statement {
        series: Option<Vec<Series>>,
        error: Option<serde_json::Value>,
    }
    #[derive(serde::Deserialize)]
    struct Series {
        values: Option<Vec<serde::de::IgnoredAny>>,
    }
    let answer: Answer = serde_json::from_slice(bytes)
        .map_err(|e| format!("the JSON answer does not parse: {e}"))?;
    if let Some(error) = answer.error {
        return Err(format!("the answer is an error: {error}"));
    }
    let results = answer
        .results
        .filter(|r| !r.is_empty())
        .ok_or_else(|| "the JSON answer has no results".to_string())?;
    let mut rows = 0u64;
    for (index, statement) in results.iter().enumerate() {
        if let Some(error) = &statement.error {
            return Err(format!("statement {index} failed: {error}"));
        }
        for series in statement.series.iter().flatten() {
            rows += series.values.as_ref().map_or(0, |v| v.len() as u64);
        }
    }
    Ok(rows)
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
    fn influxql_rows_sum_the_series_values() {
        let count = |text: &str| influxql_row_count(text.as_bytes());
        assert_eq!(
            count(
                r#"{"results":[{"statement_id":0,"series":[
                    {"name":"cpu","tags":{"hostname":"host_0"},"columns":["time","max"],
                     "values":[["2016-01-01T00:00:00Z",1],["2016-01-01T00:01:00Z",null]]},
                    {"name":"cpu","tags":{"hostname":"host_1"},"columns":["time","max"],
                     "values":[["2016-01-01T00:00:00Z",3]]}]}]}"#
            ),
            Ok(3)
        );
        // No series: an empty answer, zero rows.
        assert_eq!(count(r#"{"results":[{"statement_id":0}]}"#), Ok(0));
        assert_eq!(
            count(r#"{"results":[{"statement_id":0,"series":[{"name":"cpu"}]}]}"#),
            Ok(0)
        );
        let failed = count(r#"{"results":[{"statement_id":0,"error":"database not found: x"}]}"#);
        assert!(failed.unwrap_err().contains("database not found"));
        assert!(count(r#"{"error":"error parsing query"}"#).is_err());
        assert!(count(r#"{"results":[]}"#).is_err());
        assert!(count("{}").is_err());
        assert!(count("not json").is_err());
    }

    #[test]
    fn influxql_targets_are_encoded_as_go_does() {
        assert_eq!(
            influxql_path("", "SELECT * from cpu where a = 'b'", "benchmark"),
            "/query?q=SELECT+%2A+from+cpu+where+a+%3D+%27b%27&db=benchmark"
        );
        assert_eq!(
            influxql_path("/base", "x,y(1m)", "my db"),
            "/base/query?q=x%2Cy%281m%29&db=my+db"
        );
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(percent_encode("bench"), "bench");
        assert_eq!(percent_encode("a b&c"), "a%20b%26c");
    }
}
