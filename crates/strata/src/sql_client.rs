//! The HTTP side of `strata sql`: one `POST /sql` per statement over `std::net`, the
//! response read as it arrives (by `Content-Length`, chunked encoding, or to the close).
//!
//! A new connection per statement keeps this small; a shell sends a statement every few
//! seconds at most, and a script's statements each take longer than a loopback connect.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// `text` for a URL query value (the benchmarks' HTTP client has the same need).
pub use strata_bench::http::percent_encode;

/// How long to wait for a connection and between bytes of an answer. Statements have
/// their own timeout on the server (`--query-timeout`, 60 s by default); this is longer so
/// that the server's 504 arrives rather than a client-side error.
const IO_TIMEOUT: Duration = Duration::from_secs(600);

/// How long to wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Longest response head line accepted.
const HEAD_LINE_MAX: usize = 16 * 1024;

/// Where and how to send statements.
#[derive(Debug, Clone)]
pub struct Client {
    /// `host:port`.
    authority: String,
    /// Path prefix of the server (usually empty).
    base_path: String,
    database: String,
    token: Option<String>,
}

/// A statement's failure as the server describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerFailure {
    /// HTTP status (200 when the failure came after the result began).
    pub status: u16,
    /// The message.
    pub message: String,
    /// `QueryError::kind` (`syntax`, `plan`, …), when given.
    pub kind: Option<String>,
    /// Line and column (from 1) in the statement, when given.
    pub position: Option<(u64, u64)>,
}

/// Why a statement produced no (complete) result.
#[derive(Debug)]
pub enum Failure {
    /// The server answered with an error.
    Server(ServerFailure),
    /// The connection or the answer failed.
    Transport(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Server(failure) => write!(f, "{}", failure.message),
            Failure::Transport(message) => write!(f, "{message}"),
        }
    }
}

/// A response whose status and headers have been read; the body is read from `body`.
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// The body, de-chunked.
    pub body: Box<dyn Read>,
}

impl Client {
    /// A client for `url` (`http://host[:port][/path]`), statements in `database`.
    pub fn new(url: &str, database: &str, token: Option<String>) -> Result<Self, String> {
        let parsed = strata_bench::http::HttpUrl::parse(url).map_err(|e| e.to_string())?;
        Ok(Self {
            authority: parsed.authority,
            base_path: parsed.base_path,
            database: database.to_owned(),
            token,
        })
    }

    /// The server's URL, for messages.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority, self.base_path)
    }

    /// Sends `statement`, asking for `format` (`json` or `csv`).
    pub fn send(&self, statement: &str, format: &str) -> Result<Response, Failure> {
        let path = format!("/sql?db={}&format={format}", percent_encode(&self.database));
        self.post(&path, statement.as_bytes())
    }

    /// `POST` of `body` to `path` (with its query string) under the server's base path;
    /// an answer other than 200 is a [`Failure::Server`].
    pub fn post(&self, path: &str, body: &[u8]) -> Result<Response, Failure> {
        let transport = |what: &str, e: io::Error| {
            Failure::Transport(format!("{what} {}: {e}", self.authority))
        };
        let addrs: Vec<_> = self
            .authority
            .to_socket_addrs()
            .map_err(|e| transport("cannot resolve", e))?
            .collect();
        let mut stream = None;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let mut stream = stream.ok_or_else(|| transport("cannot connect to", last))?;
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| stream.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| transport("cannot set up the connection to", e))?;
        let mut head = format!(
            "POST {}{path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: strata-cli\r\n\
             Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.base_path,
            self.authority,
            body.len()
        );
        if let Some(token) = &self.token {
            head.push_str(&format!("Authorization: Token {token}\r\n"));
        }
        head.push_str("\r\n");
        // One write: head and body in two would leave the body to Nagle's algorithm,
        // waiting for the server's delayed ACK of the head (40 ms on Linux).
        let mut request = head.into_bytes();
        request.extend_from_slice(body);
        stream
            .write_all(&request)
            .map_err(|e| transport("cannot send to", e))?;
        let mut reader = BufReader::with_capacity(64 * 1024, stream);
        let (status, chunked, length) =
            read_head(&mut reader).map_err(|e| transport("bad answer from", e))?;
        let body: Box<dyn Read> = if chunked {
            Box::new(Chunked::new(reader))
        } else if let Some(length) = length {
            Box::new(reader.take(length))
        } else {
            Box::new(reader)
        };
        if status == 200 {
            return Ok(Response { status, body });
        }
        let mut text = Vec::new();
        body.take(1 << 20)
            .read_to_end(&mut text)
            .map_err(|e| transport("cannot read the answer from", e))?;
        Err(Failure::Server(failure_from_json(status, &text)))
    }
}

/// The failure a JSON error body describes (`{"error","kind","position"}`), or the body's
/// text when it is not one.
pub fn failure_from_json(status: u16, text: &[u8]) -> ServerFailure {
    let value: Option<serde_json::Value> = serde_json::from_slice(text).ok();
    let error = value.as_ref().and_then(|v| v.get("error"));
    // A mid-stream JSON error is an object with its own message and kind.
    let (message, kind) = match error {
        Some(serde_json::Value::Object(inner)) => (
            inner
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned),
            inner
                .get("kind")
                .and_then(|k| k.as_str())
                .map(str::to_owned),
        ),
        Some(serde_json::Value::String(message)) => (
            Some(message.clone()),
            value
                .as_ref()
                .and_then(|v| v.get("kind"))
                .and_then(|k| k.as_str())
                .map(str::to_owned),
        ),
        _ => (None, None),
    };
    let position = value.as_ref().and_then(|v| {
        let position = v.get("position")?;
        Some((
            position.get("line")?.as_u64()?,
            position.get("column")?.as_u64()?,
        ))
    });
    ServerFailure {
        status,
        message: message.unwrap_or_else(|| {
            format!(
                "HTTP {status}: {}",
                String::from_utf8_lossy(text)
                    .trim()
                    .chars()
                    .take(500)
                    .collect::<String>()
            )
        }),
        kind,
        position,
    }
}

/// Reads the status line and headers: (status, chunked, content length).
fn read_head(reader: &mut impl BufRead) -> io::Result<(u16, bool, Option<u64>)> {
    let malformed = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let mut line = String::new();
    read_line(reader, &mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| malformed(format!("status line {:?}", line.trim_end())))?;
    let mut chunked = false;
    let mut length = None;
    loop {
        read_line(reader, &mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(malformed(format!("header {header:?}")));
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(
                value
                    .parse()
                    .map_err(|_| malformed(format!("Content-Length {value:?}")))?,
            );
        }
    }
    Ok((status, chunked, length))
}

fn read_line(reader: &mut impl BufRead, line: &mut String) -> io::Result<()> {
    line.clear();
    let n = reader.take(HEAD_LINE_MAX as u64).read_line(line)?;
    if n == 0 || !line.ends_with('\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed inside the response head",
        ));
    }
    Ok(())
}

/// A chunked body as a plain reader. A connection that ends before the last (empty)
/// chunk is an error: the server cuts a result off that way when it fails part-way.
struct Chunked<R> {
    inner: R,
    left: usize,
    done: bool,
}

impl<R: BufRead> Chunked<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            left: 0,
            done: false,
        }
    }
}

impl<R: BufRead> Read for Chunked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let cut = || {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server ended the result early (the query failed after it began)",
            )
        };
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut line = String::new();
            if self.inner.by_ref().take(1024).read_line(&mut line)? == 0 {
                return Err(cut());
            }
            let size = line.trim_end().split(';').next().unwrap_or_default().trim();
            self.left = usize::from_str_radix(size, 16).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, format!("chunk size {size:?}"))
            })?;
            if self.left == 0 {
                self.done = true;
                return Ok(0);
            }
        }
        let want = buf.len().min(self.left);
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(cut());
        }
        self.left -= n;
        if self.left == 0 {
            let mut crlf = [0; 2];
            self.inner.read_exact(&mut crlf).map_err(|_| cut())?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_bodies_are_joined_and_cuts_detected() {
        let mut whole = String::new();
        Chunked::new(&b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"[..])
            .read_to_string(&mut whole)
            .expect("complete body");
        assert_eq!(whole, "abcde");
        let mut part = String::new();
        let err = Chunked::new(&b"3\r\nabc\r\n"[..])
            .read_to_string(&mut part)
            .expect_err("cut body");
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn failures_are_read_from_json() {
        let failure = failure_from_json(
            400,
            br#"{"error":"bad","kind":"syntax","position":{"line":2,"column":5}}"#,
        );
        assert_eq!(failure.message, "bad");
        assert_eq!(failure.kind.as_deref(), Some("syntax"));
        assert_eq!(failure.position, Some((2, 5)));
        let mid = failure_from_json(200, br#"{"error":{"message":"late","kind":"timeout"}}"#);
        assert_eq!(mid.kind.as_deref(), Some("timeout"));
        let plain = failure_from_json(502, b"gateway");
        assert_eq!(plain.message, "HTTP 502: gateway");
    }

    #[test]
    fn database_names_are_escaped() {
        assert_eq!(percent_encode("my db&x"), "my%20db%26x");
    }
}
