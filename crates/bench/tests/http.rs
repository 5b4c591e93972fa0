//! The loader's HTTP client and targets against tiny servers on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use strata_bench::http::{BodyEncoding, HttpClient, HttpError, HttpUrl, gzip};
use strata_bench::load::{Batch, HttpTarget, Target, TcpTarget, Work, run_load};

const TIMEOUT: Duration = Duration::from_secs(5);

/// A request as the test server saw it.
#[derive(Debug, Clone)]
struct Seen {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Reads one request from `reader`; `None` when the client closed.
fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let request_line = line.trim_end().to_string();
    let mut headers = Vec::new();
    for _ in 0..100 {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().expect("test server"));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        request_line,
        headers,
        body,
    })
}

/// Serves `connections` connections one after another; on each, answers up to
/// `per_connection` requests with `answer(request index overall)`, then closes.
fn serve(
    connections: usize,
    per_connection: usize,
    answer: impl Fn(usize) -> Vec<u8> + Send + 'static,
) -> (String, JoinHandle<Vec<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("test server");
    let addr = listener.local_addr().expect("test server").to_string();
    let handle = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut index = 0;
        for _ in 0..connections {
            let (stream, _) = listener.accept().expect("test server");
            stream.set_read_timeout(Some(TIMEOUT)).expect("test server");
            let mut writer = stream.try_clone().expect("test server");
            let mut reader = BufReader::new(stream);
            let mut seen = Vec::new();
            for _ in 0..per_connection {
                let Some(request) = read_request(&mut reader) else {
                    break;
                };
                seen.push(request);
                writer.write_all(&answer(index)).expect("test server");
                index += 1;
            }
            all.push(seen);
        }
        all
    });
    (addr, handle)
}

const NO_CONTENT: &[u8] = b"HTTP/1.1 204 No Content\r\nX-Influxdb-Version: 1.8\r\n\r\n";

#[test]
fn keep_alive_reuses_one_connection() {
    let (addr, server) = serve(1, 3, |_| NO_CONTENT.to_vec());
    let mut client = HttpClient::new(&addr, TIMEOUT);
    for i in 0..3 {
        let body = format!("cpu v={i}i 1\n");
        let response = client
            .post(
                "/write?db=x&precision=ns",
                body.as_bytes(),
                BodyEncoding::Text,
            )
            .unwrap();
        assert_eq!(response.status, 204);
        assert_eq!(response.header("x-influxdb-version"), Some("1.8"));
        assert!(response.body.is_empty());
    }
    assert_eq!(client.connects(), 1);
    drop(client);
    let seen = server.join().unwrap();
    assert_eq!(seen.len(), 1, "one connection");
    assert_eq!(seen[0].len(), 3);
    assert_eq!(
        seen[0][2].request_line,
        "POST /write?db=x&precision=ns HTTP/1.1"
    );
    assert_eq!(seen[0][2].body, b"cpu v=2i 1\n");
    assert!(seen[0][0].headers.contains(&("host".into(), addr.clone())));
}

#[test]
fn status_and_bodies_by_length_and_chunked() {
    let (addr, server) = serve(1, 3, |i| {
        match i {
        0 => b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n{\"error\":\"line\"}\n".to_vec(),
        1 => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n".to_vec(),
        _ => b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n".to_vec(),
    }
    });
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let bad = client
        .post("/write", b"garbage\n", BodyEncoding::Text)
        .unwrap();
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body, b"{\"error\":\"line\"}\n");
    let chunked = client.get("/query").unwrap();
    assert_eq!(
        (chunked.status, chunked.body.as_slice()),
        (200, &b"abcde"[..])
    );
    let busy = client.post("/write", b"x\n", BodyEncoding::Text).unwrap();
    assert_eq!(busy.status, 503);
    assert_eq!(busy.header("Retry-After"), Some("1"));
    assert_eq!(client.connects(), 1);
    drop(client);
    assert_eq!(server.join().unwrap()[0].len(), 3);
}

#[test]
fn reconnects_when_the_server_closed_an_idle_connection() {
    // First connection: one answer, then the server closes it; the next request must go
    // out again on a fresh connection, once.
    let (addr, server) = serve(2, 1, |_| NO_CONTENT.to_vec());
    let mut client = HttpClient::new(&addr, TIMEOUT);
    assert_eq!(
        client
            .post("/write", b"a\n", BodyEncoding::Text)
            .unwrap()
            .status,
        204
    );
    // Let the server close the first connection before the next request.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        client
            .post("/write", b"b\n", BodyEncoding::Text)
            .unwrap()
            .status,
        204
    );
    assert_eq!(client.connects(), 2);
    drop(client);
    let seen = server.join().unwrap();
    assert_eq!(seen[0][0].body, b"a\n");
    assert_eq!(seen[1][0].body, b"b\n");
}

#[test]
fn connection_close_is_honoured() {
    let (addr, server) = serve(2, 1, |_| {
        b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".to_vec()
    });
    let mut client = HttpClient::new(&addr, TIMEOUT);
    assert_eq!(
        client
            .post("/write", b"a\n", BodyEncoding::Text)
            .unwrap()
            .status,
        204
    );
    assert_eq!(
        client
            .post("/write", b"b\n", BodyEncoding::Text)
            .unwrap()
            .status,
        204
    );
    assert_eq!(client.connects(), 2);
    drop(client);
    assert_eq!(server.join().unwrap().len(), 2);
}

#[test]
fn errors_are_values() {
    // Nothing listens on a port we just released.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut client = HttpClient::new(&format!("127.0.0.1:{port}"), TIMEOUT);
    assert!(matches!(
        client.post("/write", b"x\n", BodyEncoding::Text),
        Err(HttpError::Connect { .. })
    ));

    let (addr, server) = serve(1, 1, |_| b"SMTP ready\r\n\r\n".to_vec());
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let error = client
        .post("/write", b"x\n", BodyEncoding::Text)
        .unwrap_err();
    assert!(matches!(error, HttpError::Malformed { .. }), "{error}");
    drop(client);
    server.join().unwrap();

    let (addr, server) = serve(1, 1, |_| {
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".to_vec()
    });
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let error = client
        .post("/write", b"x\n", BodyEncoding::Text)
        .unwrap_err();
    assert!(matches!(error, HttpError::Io { .. }), "{error}");
    server.join().unwrap();

    for bad in ["https://x:1", "http://", "127.0.0.1:8086", "http://h:port"] {
        assert!(
            matches!(HttpUrl::parse(bad), Err(HttpError::BadUrl { .. })),
            "{bad}"
        );
    }
    let url = HttpUrl::parse("http://127.0.0.1:8086/").unwrap();
    assert_eq!(
        (url.authority.as_str(), url.base_path.as_str()),
        ("127.0.0.1:8086", "")
    );
    let url = HttpUrl::parse("http://localhost/influx").unwrap();
    assert_eq!(
        (url.authority.as_str(), url.base_path.as_str()),
        ("localhost:80", "/influx")
    );
}

#[test]
fn gzip_header_and_body() {
    let (addr, server) = serve(1, 1, |_| NO_CONTENT.to_vec());
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let body = b"cpu usage=1i 1\n".repeat(100);
    let compressed = gzip(&body).unwrap();
    assert!(compressed.len() < body.len());
    assert_eq!(
        client
            .post("/write", &compressed, BodyEncoding::GzipText)
            .unwrap()
            .status,
        204
    );
    drop(client);
    let seen = server.join().unwrap();
    let request = &seen[0][0];
    assert!(
        request
            .headers
            .contains(&("content-encoding".into(), "gzip".into()))
    );
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(request.body.as_slice())
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, body);
}

fn batch(text: &str) -> Batch {
    Batch {
        body: text.as_bytes().to_vec(),
        rows: text.lines().count() as u64,
        points: text.lines().count() as u64,
    }
}

#[test]
fn http_load_counts_rows_on_204_and_errors_otherwise() {
    // Two workers, one connection each; the server answers 204 except to the third request.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = std::thread::spawn(move || {
        let mut handles = Vec::new();
        for _ in 0..2 {
            let (stream, _) = listener.accept().unwrap();
            stream.set_read_timeout(Some(TIMEOUT)).unwrap();
            let counter = Arc::clone(&counter);
            handles.push(std::thread::spawn(move || {
                let mut writer = stream.try_clone().unwrap();
                let mut reader = BufReader::new(stream);
                let mut bodies = Vec::new();
                for _ in 0..10 {
                    let Some(request) = read_request(&mut reader) else {
                        break;
                    };
                    let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let answer: &[u8] = if request.body == b"bad 3\n" {
                        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 8\r\n\r\nbad line"
                    } else {
                        NO_CONTENT
                    };
                    let _ = n;
                    writer.write_all(answer).unwrap();
                    bodies.push(request.body);
                }
                bodies
            }));
        }
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    let work = Arc::new(Work {
        queues: vec![vec![
            batch("a 1\nb 1\n"),
            batch("c 2\n"),
            batch("bad 3\n"),
            batch("d 4\ne 4\nf 4\n"),
        ]],
    });
    let path = HttpTarget::write_path("", "bench", strata_lineproto::Precision::Milliseconds);
    assert_eq!(path, "/write?db=bench&precision=ms");
    let targets: Vec<Box<dyn Target>> = (0..2)
        .map(|_| {
            Box::new(HttpTarget::connect(&addr, &path, BodyEncoding::Text, TIMEOUT).unwrap())
                as Box<dyn Target>
        })
        .collect();
    let progress = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let load = run_load(&work, targets, Some(Arc::clone(&progress)));
    assert_eq!(load.rows, 6);
    assert_eq!(load.requests, 4);
    assert_eq!(load.errors, 1);
    assert_eq!(load.error_messages, vec!["HTTP 400: bad line".to_string()]);
    assert_eq!(load.latencies.count(), 3);
    assert_eq!(load.rows_per_worker.iter().sum::<u64>(), 6);
    assert_eq!(progress.load(std::sync::atomic::Ordering::SeqCst), 7);
    let mut bodies = server.join().unwrap();
    bodies.sort();
    assert_eq!(bodies.len(), 4, "every batch sent exactly once");
}

#[test]
fn tcp_load_sends_every_byte() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        let mut all = Vec::new();
        stream.read_to_end(&mut all).unwrap();
        all
    });
    let work = Arc::new(Work {
        queues: vec![vec![batch("a 1\n"), batch("b 2\nc 3\n")]],
    });
    let targets: Vec<Box<dyn Target>> = vec![Box::new(TcpTarget::connect(&addr).unwrap())];
    let load = run_load(&work, targets, None);
    assert_eq!((load.rows, load.requests, load.errors), (3, 2, 0));
    assert_eq!(server.join().unwrap(), b"a 1\nb 2\nc 3\n");
}

/// A chunked 200 response whose body is `chunks` (one chunk each).
fn chunked(chunks: &[&[u8]]) -> Vec<u8> {
    let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for chunk in chunks {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\nX-Trailer: t\r\n\r\n");
    out
}

#[test]
fn streaming_bodies_chunked_sized_over_the_cap_and_drained() {
    // Over the 16 MiB cap of whole-body reads: streaming has no cap.
    let big = vec![b'x'; 17 << 20];
    let big_answer = {
        let mut out =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", big.len()).into_bytes();
        out.extend_from_slice(&big);
        out
    };
    let (addr, server) = serve(1, 4, move |i| match i {
        0 => chunked(&[b"a,b\n1,", b"2\n", b"3,4\n"]),
        1 => big_answer.clone(),
        // Read only in part by the caller: the rest is drained, the connection reused.
        2 => chunked(&[b"first", b"second"]),
        _ => b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\n\r\noops".to_vec(),
    });
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let whole = client
        .request_streaming("POST", "/sql", b"select 1", |head, body| {
            assert_eq!(head.status, 200);
            assert_eq!(head.header("Transfer-Encoding"), Some("chunked"));
            let mut all = Vec::new();
            body.read_to_end(&mut all)?;
            Ok(all)
        })
        .unwrap();
    assert_eq!(whole, b"a,b\n1,2\n3,4\n");
    let length = client
        .request_streaming("POST", "/sql", b"select 2", |_, body| {
            std::io::copy(body, &mut std::io::sink())
        })
        .unwrap();
    assert_eq!(length, 17 << 20);
    let part = client
        .request_streaming("POST", "/sql", b"select 3", |_, body| {
            let mut first = [0u8; 3];
            body.read_exact(&mut first)?;
            Ok(first)
        })
        .unwrap();
    assert_eq!(&part, b"fir");
    let failed = client
        .request_streaming("POST", "/sql", b"select 4", |head, body| {
            let mut text = String::new();
            body.read_to_string(&mut text)?;
            Ok((head.status, text))
        })
        .unwrap();
    assert_eq!(failed, (500, "oops".to_string()));
    assert_eq!(client.connects(), 1, "every body was read to its end");
    drop(client);
    let seen = server.join().unwrap();
    assert_eq!(seen[0].len(), 4);
    assert_eq!(seen[0][3].body, b"select 4");

    // A body cut off before its end is an I/O error, not a short answer.
    let (addr, server) = serve(1, 1, |_| {
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab".to_vec()
    });
    let mut client = HttpClient::new(&addr, TIMEOUT);
    let error = client
        .request_streaming("POST", "/sql", b"x", |_, body| {
            let mut all = Vec::new();
            body.read_to_end(&mut all).map(|_| all)
        })
        .unwrap_err();
    assert!(matches!(error, HttpError::Io { .. }), "{error}");
    server.join().unwrap();
}
