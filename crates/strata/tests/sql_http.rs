//! End to end: `/sql` on the real `strata serve` — rows written with `/write`, read back as
//! JSON, CSV and Arrow IPC over POST and GET; databases; errors with their status, kind and
//! position; auth; the statement timeout; the concurrency limit; query metrics.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use common::{Server, data_dir, metric};
use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::util::pretty::pretty_format_batches;

/// Two rows of every field type, one with a string that needs quoting in CSV and JSON.
const ROWS: &str = "cpu,host=a,region=eu usage=12.5,count=3i,ok=true,note=\"x,y\" 1700000000\n\
                    cpu,host=b,region=us usage=-1.25,count=-7i,ok=false,note=\"say \\\"hi\\\"\" 1700000010\n";

const SELECT: &str = "SELECT host, time, usage, count, ok, note FROM cpu ORDER BY host";

/// A response read whole; `complete` is false when a chunked body ended without its last
/// chunk (the server cut it off).
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    complete: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Sends one request (`Connection: close`) and reads the answer, chunked or not.
fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    write_request(&mut stream, addr, method, path, headers, body);
    read_answer(stream)
}

fn write_request(
    stream: &mut TcpStream,
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
}

fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            return (status, headers);
        }
        let (name, value) = trimmed.split_once(':').unwrap();
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

fn read_answer(stream: TcpStream) -> Answer {
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let mut raw = Vec::new();
    // The server closes after the answer (Connection: close); a cut body ends the same way.
    let _ = reader.read_to_end(&mut raw);
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let (body, complete) = if chunked { dechunk(&raw) } else { (raw, true) };
    Answer {
        status,
        headers,
        body,
        complete,
    }
}

/// The data of a chunked body, and whether it ended with the last (empty) chunk.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size_text = std::str::from_utf8(&raw[..eol]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            return (body, true);
        }
        let data = &raw[eol + 2..];
        if data.len() < size + 2 {
            body.extend_from_slice(&data[..data.len().min(size)]);
            return (body, false);
        }
        body.extend_from_slice(&data[..size]);
        raw = &data[size + 2..];
    }
}

/// `text` for a URL query value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn post_sql(server: &Server, query: &str, statement: &str) -> Answer {
    send(
        server.http,
        "POST",
        &format!("/sql{query}"),
        &[],
        statement.as_bytes(),
    )
}

fn get_sql(server: &Server, query: &str, statement: &str) -> Answer {
    let path = format!("/sql?q={}{query}", encode(statement));
    send(server.http, "GET", &path, &[], b"")
}

fn write_rows(server: &Server, db: &str, body: &str) {
    let response = server.post(&format!("/write?db={db}&precision=s"), body);
    assert_eq!(response.status, 204, "{}", response.text());
}

fn arrow_batches(answer: &Answer) -> Vec<RecordBatch> {
    let reader = StreamReader::try_new(answer.body.as_slice(), None).unwrap();
    reader.map(|b| b.unwrap()).collect()
}

fn expected_json() -> serde_json::Value {
    serde_json::json!({
        "columns": [
            {"name": "host", "type": "string"},
            {"name": "time", "type": "timestamp"},
            {"name": "usage", "type": "float"},
            {"name": "count", "type": "integer"},
            {"name": "ok", "type": "boolean"},
            {"name": "note", "type": "string"},
        ],
        "rows": [
            ["a", "2023-11-14T22:13:20.000000000Z", 12.5, 3, true, "x,y"],
            ["b", "2023-11-14T22:13:30.000000000Z", -1.25, -7, false, "say \"hi\""],
        ],
        "row_count": 2,
    })
}

#[test]
fn results_in_json_csv_and_arrow_over_post_and_get() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);

    let post = post_sql(&server, "?db=metrics", SELECT);
    assert_eq!(post.status, 200, "{}", post.text());
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert!(post.complete);
    assert_eq!(post.json(), expected_json());

    let get = get_sql(&server, "&db=metrics&format=json", SELECT);
    assert_eq!(get.status, 200, "{}", get.text());
    assert_eq!(get.json(), expected_json());

    let body = serde_json::json!({ "q": SELECT, "db": "metrics" }).to_string();
    let json_body = send(
        server.http,
        "POST",
        "/sql",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(json_body.status, 200, "{}", json_body.text());
    assert_eq!(json_body.json(), expected_json());

    let csv = post_sql(&server, "?db=metrics&format=csv", SELECT);
    assert_eq!(csv.status, 200, "{}", csv.text());
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    assert_eq!(
        csv.text(),
        "host,time,usage,count,ok,note\n\
         a,2023-11-14T22:13:20.000000000Z,12.5,3,true,\"x,y\"\n\
         b,2023-11-14T22:13:30.000000000Z,-1.25,-7,false,\"say \"\"hi\"\"\"\n"
    );
    let accepted = send(
        server.http,
        "GET",
        &format!("/sql?db=metrics&q={}", encode(SELECT)),
        &[("Accept", "text/csv")],
        b"",
    );
    assert_eq!(accepted.text(), csv.text());

    let arrow = get_sql(&server, "&db=metrics&format=arrow", SELECT);
    assert_eq!(arrow.status, 200, "{}", arrow.text());
    assert_eq!(
        arrow.header("content-type"),
        Some("application/vnd.apache.arrow.stream")
    );
    let batches = arrow_batches(&arrow);
    assert_eq!(
        pretty_format_batches(&batches).unwrap().to_string(),
        "+------+---------------------+-------+-------+-------+----------+\n\
         | host | time                | usage | count | ok    | note     |\n\
         +------+---------------------+-------+-------+-------+----------+\n\
         | a    | 2023-11-14T22:13:20 | 12.5  | 3     | true  | x,y      |\n\
         | b    | 2023-11-14T22:13:30 | -1.25 | -7    | false | say \"hi\" |\n\
         +------+---------------------+-------+-------+-------+----------+"
    );
    let accepted = send(
        server.http,
        "POST",
        "/sql?db=metrics",
        &[("Accept", "application/vnd.apache.arrow.stream")],
        SELECT.as_bytes(),
    );
    assert_eq!(arrow_batches(&accepted), batches);

    // An empty result still has its columns.
    let empty = post_sql(
        &server,
        "?db=metrics",
        "SELECT host FROM cpu WHERE host = 'zz'",
    );
    assert_eq!(
        empty.json(),
        serde_json::json!({"columns": [{"name": "host", "type": "string"}], "rows": [], "row_count": 0})
    );

    let metrics = server.metrics();
    assert!(
        metric(&metrics, "strata_queries_total{status=\"ok\"}") >= 8.0,
        "{metrics}"
    );
    assert!(metric(&metrics, "strata_query_duration_seconds_count") >= 8.0);
    assert!(metrics.contains("strata_http_requests_total{endpoint=\"sql\",status=\"200\"}"));
    assert!(server.stop().success());
}

#[test]
fn tables_resolve_in_the_requested_database() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);
    write_rows(&server, "strata", "cpu,host=z usage=1 1700000000\n");

    let count = |query: &str, statement: &str| {
        let answer = post_sql(&server, query, statement);
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.json()["rows"][0][0].clone()
    };
    // No db: the default database, `strata` (where TCP writes go too).
    assert_eq!(count("", "SELECT count(*) FROM cpu"), 1);
    assert_eq!(count("?db=metrics", "SELECT count(*) FROM cpu"), 2);
    assert_eq!(count("?db=strata", "SELECT count(*) FROM metrics.cpu"), 2);
    // Unsorted batches come from different shards, each with its own tag dictionary: the
    // Arrow stream replaces dictionaries between batches and says the same as JSON.
    write_rows(&server, "big", &many_rows(20, 100));
    let arrow = post_sql(
        &server,
        "?db=big&format=arrow",
        "SELECT host, usage FROM cpu",
    );
    assert_eq!(arrow.status, 200, "{}", arrow.text());
    let mut from_arrow = Vec::new();
    for batch in arrow_batches(&arrow) {
        let hosts = cast(batch.column(0), &DataType::Utf8).unwrap();
        let hosts = hosts.as_string::<i32>();
        let usage = batch.column(1).as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            from_arrow.push(format!("{} {}", hosts.value(row), usage.value(row)));
        }
    }
    let json = post_sql(&server, "?db=big", "SELECT host, usage FROM cpu").json();
    let mut from_json: Vec<String> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| format!("{} {}", row[0].as_str().unwrap(), row[1].as_f64().unwrap()))
        .collect();
    from_arrow.sort();
    from_json.sort();
    assert_eq!(from_arrow.len(), 2000);
    assert_eq!(from_arrow, from_json);
    let missing = post_sql(&server, "?db=nowhere", "SELECT * FROM cpu");
    assert_eq!(missing.status, 400, "{}", missing.text());
    assert_eq!(missing.json()["kind"], "plan");
    assert!(server.stop().success());
}

#[test]
fn errors_carry_status_kind_and_position() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);

    let syntax = post_sql(
        &server,
        "?db=metrics",
        "SELECT host\nFROM cpu\nWHERE usage >",
    );
    assert_eq!(syntax.status, 400, "{}", syntax.text());
    let error = syntax.json();
    assert_eq!(error["kind"], "syntax", "{error}");
    assert_eq!(
        error["position"],
        serde_json::json!({"line": 3, "column": 14}),
        "{error}"
    );
    assert!(
        error["error"].as_str().unwrap().contains("syntax error"),
        "{error}"
    );

    let misspelled = post_sql(&server, "?db=metrics", "SELEC host FROM cpu");
    assert_eq!(misspelled.status, 400);
    assert_eq!(
        misspelled.json()["position"],
        serde_json::json!({"line": 1, "column": 1})
    );

    let unknown = get_sql(&server, "&db=metrics", "SELECT * FROM memory");
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    let error = unknown.json();
    assert_eq!(error["kind"], "plan");
    assert!(
        error["error"].as_str().unwrap().contains("memory"),
        "{error}"
    );

    let column = post_sql(&server, "?db=metrics", "SELECT nope FROM cpu");
    assert_eq!(column.status, 400);
    assert_eq!(
        column.json()["position"],
        serde_json::json!({"line": 1, "column": 8})
    );

    let empty = post_sql(&server, "?db=metrics", "  ");
    assert_eq!(empty.status, 400);
    assert!(
        empty.json()["error"]
            .as_str()
            .unwrap()
            .contains("no statement")
    );
    let format = post_sql(&server, "?format=xml", "SELECT 1");
    assert_eq!(format.status, 400);
    assert!(format.json()["error"].as_str().unwrap().contains("xml"));
    let bad_json = send(
        server.http,
        "POST",
        "/sql",
        &[("Content-Type", "application/json")],
        b"{\"query\": \"SELECT 1\"}",
    );
    assert_eq!(bad_json.status, 400, "{}", bad_json.text());

    let metrics = server.metrics();
    assert!(
        metric(&metrics, "strata_queries_total{status=\"error\"}") >= 4.0,
        "{metrics}"
    );
    assert!(server.stop().success());
}

#[test]
fn auth_is_required_when_configured() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "s3cret"]);
    let refused = post_sql(&server, "", "SELECT 1");
    assert_eq!(refused.status, 401, "{}", refused.text());
    let wrong = send(
        server.http,
        "POST",
        "/sql",
        &[("Authorization", "Token nope")],
        b"SELECT 1",
    );
    assert_eq!(wrong.status, 401);
    let allowed = send(
        server.http,
        "POST",
        "/sql",
        &[("Authorization", "Token s3cret")],
        b"SELECT 1 AS one",
    );
    assert_eq!(allowed.status, 200, "{}", allowed.text());
    assert_eq!(allowed.json()["rows"], serde_json::json!([[1]]));
    let by_parameter = get_sql(&server, "&u=any&p=s3cret", "SELECT 1");
    assert_eq!(by_parameter.status, 200, "{}", by_parameter.text());
    assert!(server.stop().success());
}

/// Rows enough that a self-join runs far longer than a millisecond.
fn many_rows(hosts: usize, per_host: usize) -> String {
    let mut body = String::new();
    for host in 0..hosts {
        for i in 0..per_host {
            body.push_str(&format!(
                "cpu,host=h{host} usage={} {}\n",
                (host * 31 + i * 7) % 100,
                1_700_000_000 + i
            ));
        }
    }
    body
}

#[test]
fn a_statement_past_its_timeout_is_504() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--query-timeout", "1ms"]);
    write_rows(&server, "metrics", &many_rows(20, 100));
    let slow = post_sql(
        &server,
        "?db=metrics",
        "SELECT count(*) FROM cpu a, cpu b WHERE a.usage <= b.usage",
    );
    assert_eq!(slow.status, 504, "{}", slow.text());
    let error = slow.json();
    assert_eq!(error["kind"], "timeout", "{error}");
    assert!(error["error"].as_str().unwrap().contains("1ms"), "{error}");
    let metrics = server.metrics();
    assert!(metric(&metrics, "strata_queries_total{status=\"error\"}") >= 1.0);
    assert!(server.stop().success());
}

/// With one slot held by a result the client does not read, and the waiting line full, a
/// new statement is refused at once with 503 and Retry-After.
#[test]
fn a_full_waiting_line_is_503() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--query-concurrency", "1"]);
    write_rows(&server, "metrics", &many_rows(20, 100));

    // 4 million joined rows: far more than socket buffers hold, so the unread result
    // keeps its slot.
    let mut holder = TcpStream::connect(server.http).unwrap();
    holder
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let statement = "SELECT a.host, a.time, b.usage FROM cpu a, cpu b";
    write_request(
        &mut holder,
        server.http,
        "POST",
        "/sql?db=metrics",
        &[],
        statement.as_bytes(),
    );
    let mut holder = BufReader::new(holder);
    let (status, _) = read_head(&mut holder);
    assert_eq!(status, 200);

    // A probe either waits for the slot or is refused at once. At most four may wait, so
    // of six probes at least two are refused; sending stops early once one answers.
    let mut probes = Vec::new();
    for _ in 0..6 {
        let mut probe = TcpStream::connect(server.http).unwrap();
        probe
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        write_request(&mut probe, server.http, "POST", "/sql", &[], b"SELECT 1");
        let answered = probe.peek(&mut [0u8; 1]).is_ok();
        probes.push(probe);
        if answered {
            break;
        }
    }
    // Freeing the slot lets the waiting statements run.
    drop(holder);
    let answers: Vec<Answer> = probes
        .into_iter()
        .map(|probe| {
            probe
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            read_answer(probe)
        })
        .collect();
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    let served = answers.iter().filter(|a| a.status == 200).count();
    assert!(!refused.is_empty(), "nothing was refused: {answers:?}");
    assert!(served <= 4, "more than four statements waited: {answers:?}");
    assert_eq!(refused.len() + served, answers.len(), "{answers:?}");
    for answer in refused {
        assert_eq!(answer.header("retry-after"), Some("1"));
        assert_eq!(answer.json()["kind"], "busy", "{}", answer.text());
    }
    assert!(server.stop().success());
}

/// A statement that times out after its result began: JSON ends with an `error` member,
/// CSV and Arrow are cut off (no last chunk), so no client takes a short result for whole.
#[test]
fn a_failure_after_the_result_began_is_never_a_short_success() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--query-timeout", "4s"]);
    write_rows(&server, "metrics", &many_rows(20, 100));
    // 4 million joined rows: the client reads the head (sent with the first batch, well
    // within the timeout), then stops reading until the deadline has passed.
    let statement = "SELECT a.host, a.time, b.usage FROM cpu a, cpu b";
    let started: Vec<(&str, BufReader<TcpStream>)> = ["json", "csv", "arrow"]
        .into_iter()
        .map(|format| {
            let mut stream = TcpStream::connect(server.http).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            let path = format!("/sql?db=metrics&format={format}");
            write_request(
                &mut stream,
                server.http,
                "POST",
                &path,
                &[],
                statement.as_bytes(),
            );
            let mut reader = BufReader::new(stream);
            let (status, _) = read_head(&mut reader);
            assert_eq!(status, 200, "{format}");
            (format, reader)
        })
        .collect();
    std::thread::sleep(Duration::from_secs(5));
    for (format, mut reader) in started {
        let mut raw = Vec::new();
        let _ = reader.read_to_end(&mut raw);
        let (body, complete) = dechunk(&raw);
        assert!(
            !body.is_empty(),
            "{format}: rows were sent before the timeout"
        );
        match format {
            "json" => {
                assert!(complete, "json ends its document");
                let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(value["error"]["kind"], "timeout", "{}", value["error"]);
                let rows = value["rows"].as_array().unwrap().len();
                assert!(rows > 0 && rows < 4_000_000, "{rows} rows");
                assert_eq!(value["row_count"], rows);
            }
            _ => assert!(!complete, "{format}: a cut result must not end cleanly"),
        }
    }
    let metrics = server.metrics();
    assert!(
        metric(&metrics, "strata_queries_total{status=\"error\"}") >= 3.0,
        "{metrics}"
    );
    assert!(server.stop().success());
}
