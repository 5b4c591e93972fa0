//! End to end: hostile HTTP clients on the real `strata serve` — one that trickles its
//! request head is disconnected at `--client-timeout`, one that pauses its body longer is
//! answered 408 with nothing stored, and connections past `--max-connections` are closed
//! at once and counted, while the server goes on serving; one that runs out of file
//! descriptors says so in its log and serves again once connections close.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, data_dir, eventually, metric};

/// `GET /metrics`'s body, or `None` when the server closes the connection unanswered (it
/// is at its connection limit).
fn metrics_if_served(server: &Server) -> Option<String> {
    let mut stream = TcpStream::connect(server.http).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: strata\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    Some(body.to_owned())
}

/// Reads until the server closes `stream` (or resets it); panics past `within`.
fn closed_by_server(stream: &mut TcpStream, within: Duration) -> Duration {
    let started = Instant::now();
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return started.elapsed(),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return started.elapsed(),
            Err(e) => panic!("the server did not close the connection within {within:?}: {e}"),
        }
    }
}

#[test]
fn a_client_that_trickles_its_request_head_is_disconnected() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--client-timeout", "1s"]);
    let mut slow = TcpStream::connect(server.http).unwrap();
    slow.write_all(b"POST /write?db=x HTTP/1.1\r\nHost: strata\r\n")
        .unwrap();
    // One more header line half a second later: still within the second, still slow.
    std::thread::sleep(Duration::from_millis(500));
    slow.write_all(b"X-Slow: 1\r\n").unwrap();
    let waited = closed_by_server(&mut slow, Duration::from_secs(10));
    assert!(waited < Duration::from_secs(5), "closed after {waited:?}");
    // A client that sends its request at once is served as ever.
    let ok = server.post("/write?db=x", "m v=1 1700000000000000000\n");
    assert_eq!(ok.status, 204, "{}", ok.text());
    assert!(server.stop().success());
}

#[test]
fn a_write_whose_body_pauses_past_the_client_timeout_is_408_and_stores_nothing() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--client-timeout", "1s"]);
    let lines = "m v=1 1700000000000000000\nm v=2 1700000000000000001\n";
    for path in ["/write?db=x", "/sql?db=x"] {
        let mut slow = TcpStream::connect(server.http).unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: strata\r\nContent-Length: {}\r\n\r\n",
            lines.len()
        );
        slow.write_all(head.as_bytes()).unwrap();
        // The first line, then nothing: the body stalls.
        slow.write_all(&lines.as_bytes()[..26]).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let response = common::read_response(&mut slow, false);
        assert_eq!(response.status, 408, "{path}: {}", response.text());
        assert!(response.text().contains("paused"), "{}", response.text());
    }
    let metrics = server.metrics();
    assert_eq!(
        metric(&metrics, "strata_rows_written_total"),
        0.0,
        "nothing stored"
    );
    assert!(server.stop().success());
}

#[test]
fn connections_past_the_limit_are_closed_and_counted() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--max-connections", "3"]);
    let mut held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(server.http).unwrap())
        .collect();
    // Every slot is taken once the server has accepted the three: a fourth is closed.
    eventually("a fourth connection to be closed at once", || {
        let mut extra = TcpStream::connect(server.http).unwrap();
        let _ = extra.write_all(b"GET /ping HTTP/1.1\r\nHost: strata\r\n\r\n");
        closed_by_server(&mut extra, Duration::from_secs(10)) < Duration::from_secs(5)
    });
    // A held connection is still served.
    held[0]
        .write_all(b"GET /ping HTTP/1.1\r\nHost: strata\r\nConnection: close\r\n\r\n")
        .unwrap();
    let response = common::read_response(&mut held[0], false);
    assert_eq!(response.status, 204);
    held.clear();
    // With the held connections gone, requests are served and the refusals were counted.
    // Until the server has seen the three close, the request for the metrics is itself
    // past the limit and closed: that is a "not yet", not a failure.
    eventually("the slots to free", || {
        let Some(text) = metrics_if_served(&server) else {
            return false;
        };
        metric(&text, "strata_http_connections_open") == 1.0
            && metric(&text, "strata_http_connections_refused_total") >= 1.0
    });
    assert!(server.stop().success());
}

#[test]
fn a_server_out_of_file_descriptors_says_so_and_serves_again() {
    let dir = data_dir();
    let server = Server::start_under(&["prlimit", "--nofile=64:64", "--"], dir.path(), &[], &[]);
    // More connections than the server may hold files: the kernel completes them all (the
    // listen backlog), and the server accepts until it runs out of descriptors.
    let held: Vec<TcpStream> = (0..80)
        .map(|_| TcpStream::connect(server.http).unwrap())
        .collect();
    eventually("a failed accept to be logged", || {
        server.stderr().contains("cannot accept HTTP connection")
    });
    let log = server.stderr();
    assert!(log.contains("Too many open files"), "{log}");
    drop(held);
    eventually("requests to be served again", || {
        metrics_if_served(&server).is_some()
    });
    assert!(server.stop().success());
}

#[test]
fn limits_must_be_positive() {
    let dir = data_dir();
    for (flag, value) in [("--max-connections", "0"), ("--client-timeout", "0s")] {
        let out = common::strata(&[
            "serve",
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            flag,
            value,
        ]);
        assert!(!out.status.success(), "{flag} {value} was accepted");
        let stderr = common::text(&out.stderr);
        assert!(stderr.contains("must be positive"), "{stderr}");
    }
}
