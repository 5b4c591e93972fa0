//! End to end: the guard rails of `/sql` on the real `strata serve` — the statement
//! timeout (before and after the result began), the concurrency limit, and the cancel of a
//! statement whose client went away.

#![allow(clippy::unwrap_used)]

mod common;
mod sql_common;

use std::io::{BufReader, Read};
use std::net::TcpStream;
use std::time::Duration;

use common::{Server, data_dir, eventually, metric, read_head};
use sql_common::{Answer, dechunk, many_rows, post_sql, read_answer, write_request, write_rows};

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

/// An expression nested deeper than the bound is refused with 400 and its place; one at
/// the bound answers. A chain of 40,000 `+` once overflowed a worker's stack and aborted
/// the whole server.
#[test]
fn an_expression_nested_too_deeply_is_400_and_the_server_lives_on() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let chain = |terms: usize| format!("SELECT 1{} AS x", " + 1".repeat(terms));
    for terms in [1001, 40_000] {
        let deep = post_sql(&server, "", &chain(terms));
        assert_eq!(deep.status, 400, "{}", deep.text());
        let error = deep.json();
        assert_eq!(error["kind"], "too_complex", "{error}");
        assert_eq!(
            error["error"], "expression too deeply nested: more than 1000 levels",
            "{error}"
        );
        // The 1001st `+`: the k-th is at column 6 + 4k.
        assert_eq!(error["position"]["line"], 1, "{error}");
        assert_eq!(error["position"]["column"], 4010, "{error}");
    }
    let at_the_bound = post_sql(&server, "", &chain(1000));
    assert_eq!(at_the_bound.status, 200, "{}", at_the_bound.text());
    assert_eq!(at_the_bound.json()["rows"][0][0], 1001);
    assert!(server.stop().success());
}

/// A client that goes away cancels its statement: the handler reading the statement is
/// dropped with it, and the server's CPU goes quiet. Before the yield points above joins,
/// this cross join (20,000 x 20,000 rows) ran on in one poll of the handler, minutes
/// after its client had gone and past its timeout. The join runs on the query threads,
/// and a cancelled task stops at the end of its current poll: up to Tokio's task budget
/// of 128 batches, about 0.4 s of a debug build's CPU per thread. So the CPU must go quiet
/// within three seconds, not in the first one.
#[test]
fn a_client_that_disconnects_cancels_its_statement() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--query-timeout", "none"]);
    write_rows(&server, "metrics", &many_rows(20, 1000));
    let mut stream = TcpStream::connect(server.http).unwrap();
    let statement = "SELECT sum(cos(a.usage * b.usage) * ln(a.usage + b.usage + 1)) \
                     FROM cpu a CROSS JOIN cpu b";
    write_request(
        &mut stream,
        server.http,
        "POST",
        "/sql?db=metrics",
        &[],
        statement.as_bytes(),
    );
    std::thread::sleep(Duration::from_millis(500));
    drop(stream);
    eventually("the dropped statement to be counted", || {
        metric(&server.metrics(), "strata_queries_total{status=\"error\"}") == 1.0
    });
    let mut seconds = Vec::new();
    while seconds.len() < 3 && seconds.last().is_none_or(|&spent| spent >= 30) {
        let before = server.cpu_ticks();
        std::thread::sleep(Duration::from_secs(1));
        seconds.push(server.cpu_ticks() - before);
    }
    assert!(
        seconds.last().is_some_and(|&spent| spent < 30),
        "the server's ticks of CPU in each second after its client left: {seconds:?}"
    );
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
