//! End-to-end: line protocol over plain TCP. Bad and over-long lines are counted and
//! skipped; the connection and every good line survive.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{Server, data_dir, eventually, metric, stored_rows};

fn tcp_rows(server: &Server) -> f64 {
    metric(
        &server.metrics(),
        "strata_protocol_rows_written_total{protocol=\"tcp\"}",
    )
}

#[test]
fn tcp_writes_survive_bad_and_overlong_lines() {
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &[
            "--tcp",
            "127.0.0.1:0",
            "--tcp-db",
            "tcpdb",
            "--max-line-bytes",
            "200",
        ],
    );
    let mut stream = TcpStream::connect(server.tcp.unwrap()).unwrap();

    // First burst: good lines with a syntax error and a type conflict between them.
    stream
        .write_all(
            b"tcp,h=a v=1 1\ntcp,h=a v=bad 2\ntcp,h=a v=3 3\ntcp,h=a v=\"str\" 4\ntcp,h=a v=5 5\n",
        )
        .unwrap();
    eventually("the first burst to be written", || tcp_rows(&server) == 3.0);

    // An over-long line, sent in pieces so that it spans reads, then good lines on the
    // same connection.
    stream
        .write_all(b"tcp,h=b v=6 6\ntcp,h=long v=1,pad=\"")
        .unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stream.write_all(&[b'x'; 300]).unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stream.write_all(b"\" 7\ntcp,h=b v=8 8\n").unwrap();
    // A line split across two writes is put back together.
    stream.write_all(b"tcp,h=c v=").unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stream.write_all(b"9 9\n").unwrap();
    eventually("the second burst to be written", || {
        tcp_rows(&server) == 6.0
    });

    // A second connection works too, and the last line needs no newline.
    let mut other = TcpStream::connect(server.tcp.unwrap()).unwrap();
    other
        .write_all(b"tcp,h=d v=10 10\ntcp,h=d v=11 11")
        .unwrap();
    drop(other);
    eventually("the second connection's rows", || tcp_rows(&server) == 8.0);

    // A big burst: several batches.
    let burst: String = (0..30_000)
        .map(|i| format!("big,h=h{} v={i} {i}\n", i % 7))
        .collect();
    stream.write_all(burst.as_bytes()).unwrap();
    drop(stream);
    eventually("the big burst", || tcp_rows(&server) == 30_008.0);

    let text = server.metrics();
    assert_eq!(
        metric(&text, "strata_bad_lines_total{protocol=\"tcp\"}"),
        3.0
    );
    assert_eq!(metric(&text, "strata_tcp_connections_total"), 2.0);
    assert!(
        server.stderr().contains("TCP write rejected lines"),
        "bad lines are logged:\n{}",
        server.stderr()
    );
    assert!(server.stop().success());

    let expected: Vec<String> = [
        ("a", 1),
        ("a", 3),
        ("a", 5),
        ("b", 6),
        ("b", 8),
        ("c", 9),
        ("d", 10),
        ("d", 11),
    ]
    .iter()
    .map(|(h, n)| format!("h={h} {n} v=Float({n}.0)"))
    .collect();
    assert_eq!(stored_rows(dir.path(), "tcpdb", "tcp"), expected);
    assert_eq!(stored_rows(dir.path(), "tcpdb", "big").len(), 30_000);
}

#[test]
fn tcp_is_off_by_default() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    assert!(server.tcp.is_none());
    assert!(!server.stderr().contains("tcp://"), "{}", server.stderr());
    assert!(server.stop().success());
}

/// With an auth token, a TCP connection's first line must be `auth <token>`: without it,
/// or with a wrong or read-only token, the server answers one `ERR` line, closes the
/// connection and stores none of its lines.
#[test]
fn with_a_token_tcp_needs_an_auth_line_first() {
    use std::io::Read;
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &[
            "--tcp",
            "127.0.0.1:0",
            "--tcp-db",
            "tcpdb",
            "--auth-token",
            "s3cret",
            "--read-only-token",
            "dash",
        ],
    );
    let auth = "Token s3cret";
    let auth = [("Authorization", auth)];
    for first in ["tcp,h=x v=1 1\n", "auth nope\n", "auth dash\n"] {
        let mut stream = TcpStream::connect(server.tcp.unwrap()).unwrap();
        stream
            .write_all(format!("{first}tcp,h=x v=2 2\n").as_bytes())
            .unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(
            answer.starts_with("ERR authorization failed"),
            "{first:?}: {answer:?}"
        );
    }
    let failures = |server: &Server| {
        let metrics = server.request("GET", "/metrics", &auth, b"");
        metric(&metrics.text(), "strata_tcp_auth_failures_total")
    };
    assert_eq!(failures(&server), 3.0);

    // The auth line may arrive in pieces, with the first rows in the same packet.
    let mut stream = TcpStream::connect(server.tcp.unwrap()).unwrap();
    stream.write_all(b"auth s3").unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stream
        .write_all(b"cret\r\ntcp,h=y v=3 3\ntcp,h=y v=4 4\n")
        .unwrap();
    drop(stream);
    eventually("the authenticated rows", || {
        let metrics = server.request("GET", "/metrics", &auth, b"");
        metric(
            &metrics.text(),
            "strata_protocol_rows_written_total{protocol=\"tcp\"}",
        ) == 2.0
    });
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "tcpdb", "tcp").len(), 2);
}
