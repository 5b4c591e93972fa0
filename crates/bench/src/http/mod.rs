//! A small HTTP/1.1 client over `std::net::TcpStream`: the loader's hot path.
//!
//! One keep-alive connection per client (per loader worker). A request writes the head and
//! the body with `Content-Length`; the response is read as status line, headers, then the
//! body by `Content-Length` or chunked encoding (or to the end when the server closes).
//! A server that closed an idle keep-alive connection is answered by reconnecting once.
//! [`HttpClient::request_streaming`] hands the body to the caller as a reader instead (the
//! query benchmark counts the rows of answers far larger than memory should hold).
//! Every failure is a value ([`HttpError`]); nothing here panics on what a server sends.
//!
//! Why not a client crate: the loader must measure the server, so the client does nothing
//! per request beyond two writes and one buffered read, and adds no runtime.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

pub use response::ResponseHead;
use response::{BodyReader, Framing, read_body, read_head};

mod response;

/// Longest status line or header line accepted, bytes: a sane server sends far less.
const HEAD_LINE_BYTES_MAX: usize = 16 * 1024;
/// Most header lines accepted in one response.
const HEADERS_MAX: usize = 100;
/// Largest response body kept, bytes; a write endpoint answers with at most a short JSON.
const BODY_BYTES_MAX: usize = 16 << 20;

/// What went wrong with a request.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL is not `http://host:port[/path]`.
    #[error("bad URL {url:?}: {reason}")]
    BadUrl {
        /// The URL given.
        url: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// Could not connect.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// Address dialled.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// The connection failed while sending or receiving.
    #[error("I/O error talking to {addr}: {source}")]
    Io {
        /// Address of the server.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// The server's answer is not HTTP/1.x as we read it.
    #[error("malformed response from {addr}: {reason}")]
    Malformed {
        /// Address of the server.
        addr: String,
        /// What was wrong.
        reason: String,
    },
}

/// An `http://host:port` base URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// `host:port`, as dialled and sent in the `Host` header.
    pub authority: String,
    /// Path prefix without a trailing slash (often empty).
    pub base_path: String,
}

impl HttpUrl {
    /// Parses `http://host[:port][/path]`; the port defaults to 80. HTTPS is not supported.
    pub fn parse(url: &str) -> Result<Self, HttpError> {
        let bad = |reason| HttpError::BadUrl {
            url: url.to_string(),
            reason,
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        let authority = if authority
            .rsplit_once(':')
            .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
        {
            authority.to_string()
        } else if authority.contains(':') && !authority.ends_with(']') {
            return Err(bad("port is not a number"));
        } else {
            format!("{authority}:80")
        };
        Ok(Self {
            authority,
            base_path: path.trim_end_matches('/').to_string(),
        })
    }
}

/// A response: status, headers (names lower-cased) and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code, e.g. 204.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a request body is, for its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEncoding {
    /// Text as is (line protocol, SQL).
    Text,
    /// Text, gzip-compressed (`Content-Encoding: gzip`).
    GzipText,
    /// A Prometheus remote-write request: snappy-compressed protobuf.
    RemoteWrite,
    /// OpenTSDB telnet `put` lines, sent as is over TCP (never over HTTP).
    OpenTsdbTelnet,
}

/// A keep-alive HTTP/1.1 client bound to one server.
#[derive(Debug)]
pub struct HttpClient {
    authority: String,
    timeout: Duration,
    conn: Option<BufReader<TcpStream>>,
    connects: u64,
}

impl HttpClient {
    /// A client for `authority` (`host:port`); connects lazily, on the first request.
    pub fn new(authority: &str, timeout: Duration) -> Self {
        Self {
            authority: authority.to_string(),
            timeout,
            conn: None,
            connects: 0,
        }
    }

    /// Connects now (so the connection is made before a benchmark's clock starts).
    pub fn connect(&mut self) -> Result<(), HttpError> {
        if self.conn.is_none() {
            self.conn = Some(self.dial()?);
        }
        Ok(())
    }

    /// How many TCP connections this client has opened (1 when keep-alive held throughout).
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// `POST path` with `body`, already encoded as `encoding` says.
    pub fn post(
        &mut self,
        path: &str,
        body: &[u8],
        encoding: BodyEncoding,
    ) -> Result<Response, HttpError> {
        self.request("POST", path, body, encoding)
    }

    /// `GET path`.
    pub fn get(&mut self, path: &str) -> Result<Response, HttpError> {
        self.request("GET", path, &[], BodyEncoding::Text)
    }

    /// Sends one request and reads its response. A reused connection that turns out to be
    /// closed before any byte of the answer arrived is reopened and the request sent again
    /// once (the server closed it while idle, so it never saw the request).
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        encoding: BodyEncoding,
    ) -> Result<Response, HttpError> {
        let head = self.request_head(method, path, body.len(), encoding);
        let reused = self.conn.is_some();
        match self.exchange(head.as_bytes(), body) {
            Err(Attempt::Stale) if reused => {
                self.conn = None;
                self.exchange(head.as_bytes(), body)
                    .map_err(|e| e.into_error(&self.authority))
            }
            other => other.map_err(|e| e.into_error(&self.authority)),
        }
    }

    /// Sends one request and hands the response's head and its body, as a reader, to
    /// `read_body`; no size limit applies. Whatever `read_body` leaves unread is drained, so
    /// the connection stays reusable. Reconnects once like [`HttpClient::request`]; an
    /// error `read_body` returns comes back as [`HttpError::Io`].
    pub fn request_streaming<T>(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        read_body: impl FnOnce(&ResponseHead, &mut dyn Read) -> io::Result<T>,
    ) -> Result<T, HttpError> {
        let head = self.request_head(method, path, body.len(), BodyEncoding::Text);
        let reused = self.conn.is_some();
        let started = match self.send_and_read_head(head.as_bytes(), body) {
            Err(Attempt::Stale) if reused => {
                self.conn = None;
                self.send_and_read_head(head.as_bytes(), body)
            }
            other => other,
        };
        let (response_head, framing, keep_alive) =
            started.map_err(|e| e.into_error(&self.authority))?;
        let Some(conn) = self.conn.as_mut() else {
            return Err(Attempt::Io(io::Error::other("no connection")).into_error(&self.authority));
        };
        let mut reader = BodyReader::new(conn, framing);
        let result = read_body(&response_head, &mut reader);
        let drained = result.is_ok() && io::copy(&mut reader, &mut io::sink()).is_ok();
        if !keep_alive || !drained {
            self.conn = None;
        }
        result.map_err(|source| HttpError::Io {
            addr: self.authority.clone(),
            source,
        })
    }

    fn request_head(
        &self,
        method: &str,
        path: &str,
        body_len: usize,
        encoding: BodyEncoding,
    ) -> String {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: strata-bench\r\nContent-Length: {}\r\n",
            self.authority, body_len
        );
        match encoding {
            BodyEncoding::Text | BodyEncoding::OpenTsdbTelnet => {}
            BodyEncoding::GzipText => head.push_str("Content-Encoding: gzip\r\n"),
            BodyEncoding::RemoteWrite => head.push_str(
                "Content-Encoding: snappy\r\nX-Prometheus-Remote-Write-Version: 0.1.0\r\n",
            ),
        }
        if body_len > 0 {
            head.push_str(match encoding {
                BodyEncoding::RemoteWrite => "Content-Type: application/x-protobuf\r\n",
                _ => "Content-Type: text/plain; charset=utf-8\r\n",
            });
        }
        head.push_str("\r\n");
        head
    }

    fn dial(&mut self) -> Result<BufReader<TcpStream>, HttpError> {
        let connect_error = |source| HttpError::Connect {
            addr: self.authority.clone(),
            source,
        };
        let addrs: Vec<_> = self
            .authority
            .to_socket_addrs()
            .map_err(connect_error)?
            .collect();
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.timeout) {
                Ok(stream) => {
                    let setup = stream
                        .set_nodelay(true)
                        .and_then(|()| stream.set_read_timeout(Some(self.timeout)))
                        .and_then(|()| stream.set_write_timeout(Some(self.timeout)));
                    setup.map_err(connect_error)?;
                    self.connects += 1;
                    return Ok(BufReader::with_capacity(64 * 1024, stream));
                }
                Err(e) => last = e,
            }
        }
        Err(connect_error(last))
    }

    /// Sends the request and reads the response's head; the body is left on the connection.
    fn send_and_read_head(
        &mut self,
        head: &[u8],
        body: &[u8],
    ) -> Result<(ResponseHead, Framing, bool), Attempt> {
        if self.conn.is_none() {
            self.conn = Some(self.dial().map_err(Attempt::Fatal)?);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Attempt::Io(io::Error::other("no connection")));
        };
        let sent = {
            let stream = conn.get_mut();
            stream.write_all(head).and_then(|()| stream.write_all(body))
        };
        if let Err(e) = sent {
            self.conn = None;
            return Err(stale_or_io(e));
        }
        let result = read_head(conn);
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    fn exchange(&mut self, head: &[u8], body: &[u8]) -> Result<Response, Attempt> {
        let (head, framing, keep) = self.send_and_read_head(head, body)?;
        let Some(conn) = self.conn.as_mut() else {
            return Err(Attempt::Io(io::Error::other("no connection")));
        };
        match read_body(conn, framing) {
            Ok(body) => {
                if !keep {
                    self.conn = None;
                }
                Ok(Response {
                    status: head.status,
                    headers: head.headers,
                    body,
                })
            }
            Err(e) => {
                self.conn = None;
                Err(e)
            }
        }
    }
}

/// How one attempt failed: `Stale` (the connection was closed before any answer) may be
/// retried on a fresh connection.
enum Attempt {
    Stale,
    Io(io::Error),
    Malformed(String),
    Fatal(HttpError),
}

impl Attempt {
    fn into_error(self, addr: &str) -> HttpError {
        match self {
            Self::Stale => HttpError::Io {
                addr: addr.to_string(),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed before a response",
                ),
            },
            Self::Io(source) => HttpError::Io {
                addr: addr.to_string(),
                source,
            },
            Self::Malformed(reason) => HttpError::Malformed {
                addr: addr.to_string(),
                reason,
            },
            Self::Fatal(e) => e,
        }
    }
}

fn stale_or_io(e: io::Error) -> Attempt {
    match e.kind() {
        io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::UnexpectedEof => Attempt::Stale,
        _ => Attempt::Io(e),
    }
}

/// Reads one line ending in `\n`, without the line ending; `None` at a clean end of stream.
fn read_line(conn: &mut impl BufRead, line: &mut Vec<u8>) -> Result<Option<()>, Attempt> {
    line.clear();
    let n = conn
        .take(HEAD_LINE_BYTES_MAX as u64 + 1)
        .read_until(b'\n', line)
        .map_err(stale_or_io)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(if line.len() > HEAD_LINE_BYTES_MAX {
            Attempt::Malformed(format!("header line over {HEAD_LINE_BYTES_MAX} bytes"))
        } else {
            Attempt::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the response head",
            ))
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(()))
}

/// `text` for a URL query value: unreserved characters kept, the rest as `%XX`.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Go's `url.QueryEscape`, as TSBS's runners encode their requests: letters, digits and
/// `-_.~` stay, a space is `+`, every other byte is `%XX` (upper-case hex).
pub fn go_query_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3 / 2);
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else if byte == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A query-string value decoded as Go's `url.ParseQuery` does (`+` is a space): the
/// query generators' tests read TSBS's captured requests with it.
#[cfg(test)]
pub(crate) fn go_query_unescape(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// Compresses `body` with gzip (fast level: the loader compresses before the clock anyway).
pub fn gzip(body: &[u8]) -> io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    encoder.write_all(body)?;
    encoder.finish()
}
