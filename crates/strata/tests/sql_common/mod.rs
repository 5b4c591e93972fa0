//! Shared by the `/sql` end-to-end tests: an HTTP/1.1 client that reads chunked answers
//! and says whether they ended cleanly, and request helpers.

#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::ipc::reader::StreamReader;

use crate::common::{Server, read_head};

/// A response read whole; `complete` is false when a chunked body ended without its last
/// chunk (the server cut it off).
#[derive(Debug)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
    /// False when a chunked body ended without its last chunk.
    pub complete: bool,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Sends one request (`Connection: close`) and reads the answer, chunked or not.
pub fn send(
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

pub fn write_request(
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

pub fn read_answer(stream: TcpStream) -> Answer {
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
pub fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
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
pub fn encode(text: &str) -> String {
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

pub fn post_sql(server: &Server, query: &str, statement: &str) -> Answer {
    send(
        server.http,
        "POST",
        &format!("/sql{query}"),
        &[],
        statement.as_bytes(),
    )
}

pub fn get_sql(server: &Server, query: &str, statement: &str) -> Answer {
    let path = format!("/sql?q={}{query}", encode(statement));
    send(server.http, "GET", &path, &[], b"")
}

pub fn write_rows(server: &Server, db: &str, body: &str) {
    let response = server.post(&format!("/write?db={db}&precision=s"), body);
    assert_eq!(response.status, 204, "{}", response.text());
}

pub fn arrow_batches(answer: &Answer) -> Vec<RecordBatch> {
    let reader = StreamReader::try_new(answer.body.as_slice(), None).unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// Rows enough that a self-join runs far longer than a millisecond.
pub fn many_rows(hosts: usize, per_host: usize) -> String {
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
