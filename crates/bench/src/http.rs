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

    /// `POST path` with `body`; `gzip` says the body is gzip-compressed already.
    pub fn post(&mut self, path: &str, body: &[u8], gzip: bool) -> Result<Response, HttpError> {
        self.request("POST", path, body, gzip)
    }

    /// `GET path`.
    pub fn get(&mut self, path: &str) -> Result<Response, HttpError> {
        self.request("GET", path, &[], false)
    }

    /// Sends one request and reads its response. A reused connection that turns out to be
    /// closed before any byte of the answer arrived is reopened and the request sent again
    /// once (the server closed it while idle, so it never saw the request).
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: &[u8],
        gzip: bool,
    ) -> Result<Response, HttpError> {
        let head = self.request_head(method, path, body.len(), gzip);
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
        let head = self.request_head(method, path, body.len(), false);
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

    fn request_head(&self, method: &str, path: &str, body_len: usize, gzip: bool) -> String {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nUser-Agent: strata-bench\r\nContent-Length: {}\r\n",
            self.authority, body_len
        );
        if gzip {
            head.push_str("Content-Encoding: gzip\r\n");
        }
        if body_len > 0 {
            head.push_str("Content-Type: text/plain; charset=utf-8\r\n");
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

/// The status line and headers of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    /// Status code, e.g. 200.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
}

impl ResponseHead {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Up to the end of the connection.
    ToEnd,
}

/// Reads a response's head; also says how its body is delimited and whether the connection
/// may be reused after it.
fn read_head(conn: &mut BufReader<TcpStream>) -> Result<(ResponseHead, Framing, bool), Attempt> {
    let mut line = Vec::new();
    if read_line(conn, &mut line)?.is_none() {
        return Err(Attempt::Stale);
    }
    let status_line = String::from_utf8_lossy(&line).into_owned();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(Attempt::Malformed(format!(
            "status line {status_line:?} is not HTTP/1.x"
        )));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or_else(|| Attempt::Malformed(format!("no status code in {status_line:?}")))?;
    let mut headers = Vec::new();
    loop {
        if read_line(conn, &mut line)?.is_none() {
            return Err(Attempt::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the headers",
            )));
        }
        if line.is_empty() {
            break;
        }
        if headers.len() == HEADERS_MAX {
            return Err(Attempt::Malformed(format!(
                "more than {HEADERS_MAX} headers"
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| Attempt::Malformed(format!("header line {text:?} has no colon")))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let head = ResponseHead { status, headers };
    let mut keep_alive = !version.ends_with("1.0")
        && !head
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
    let framing = if status < 200 || status == 204 || status == 304 {
        Framing::Empty
    } else if head
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    {
        Framing::Chunked
    } else if let Some(length) = head.header("content-length") {
        let length: u64 = length
            .parse()
            .map_err(|_| Attempt::Malformed(format!("Content-Length {length:?}")))?;
        Framing::Length(length)
    } else {
        // No length: the body runs to the end of the connection.
        keep_alive = false;
        Framing::ToEnd
    };
    Ok((head, framing, keep_alive))
}

/// Reads a whole body of at most [`BODY_BYTES_MAX`] bytes.
fn read_body(conn: &mut BufReader<TcpStream>, framing: Framing) -> Result<Vec<u8>, Attempt> {
    match framing {
        Framing::Empty => Ok(Vec::new()),
        Framing::Chunked => read_chunked(conn),
        Framing::Length(length) => {
            let length = usize::try_from(length)
                .ok()
                .filter(|l| *l <= BODY_BYTES_MAX)
                .ok_or_else(|| {
                    Attempt::Malformed(format!("body of {length} bytes, over {BODY_BYTES_MAX}"))
                })?;
            let mut body = vec![0; length];
            conn.read_exact(&mut body).map_err(Attempt::Io)?;
            Ok(body)
        }
        Framing::ToEnd => {
            let mut body = Vec::new();
            conn.take(BODY_BYTES_MAX as u64)
                .read_to_end(&mut body)
                .map_err(Attempt::Io)?;
            Ok(body)
        }
    }
}

/// A response body as a reader: decodes chunked encoding, stops at `Content-Length`.
struct BodyReader<'a> {
    conn: &'a mut BufReader<TcpStream>,
    framing: Framing,
    /// Bytes left in the body (`Length`) or in the current chunk (`Chunked`).
    left: u64,
    /// `Chunked`: the CRLF after the current chunk's data is still to be read.
    crlf_pending: bool,
    done: bool,
}

impl<'a> BodyReader<'a> {
    fn new(conn: &'a mut BufReader<TcpStream>, framing: Framing) -> Self {
        let left = match framing {
            Framing::Length(n) => n,
            _ => 0,
        };
        Self {
            conn,
            framing,
            left,
            crlf_pending: false,
            done: framing == Framing::Empty,
        }
    }

    /// Reads up to `self.left` bytes of data into `buf`.
    fn read_counted(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.conn.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside the body",
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }

    /// `Chunked`: moves to the next chunk; false at the last (empty) chunk.
    fn next_chunk(&mut self) -> io::Result<bool> {
        let mut line = Vec::new();
        if self.crlf_pending {
            let mut crlf = [0; 2];
            self.conn.read_exact(&mut crlf)?;
            if &crlf != b"\r\n" {
                return Err(invalid("chunk not followed by CRLF".into()));
            }
            self.crlf_pending = false;
        }
        if read_line(self.conn, &mut line)
            .map_err(attempt_to_io)?
            .is_none()
        {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside a chunked body",
            ));
        }
        let text = String::from_utf8_lossy(&line);
        let size_text = text.split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| invalid(format!("chunk size {size_text:?}")))?;
        if size == 0 {
            for _ in 0..HEADERS_MAX {
                match read_line(self.conn, &mut line).map_err(attempt_to_io)? {
                    Some(()) if !line.is_empty() => {}
                    _ => return Ok(false),
                }
            }
            return Err(invalid(format!("more than {HEADERS_MAX} trailers")));
        }
        self.left = size;
        self.crlf_pending = true;
        Ok(true)
    }
}

impl Read for BodyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        match self.framing {
            Framing::Empty => Ok(0),
            Framing::Length(_) => {
                if self.left == 0 {
                    self.done = true;
                    return Ok(0);
                }
                self.read_counted(buf)
            }
            Framing::ToEnd => {
                let n = self.conn.read(buf)?;
                self.done = n == 0;
                Ok(n)
            }
            Framing::Chunked => {
                if self.left == 0 && !self.next_chunk()? {
                    self.done = true;
                    return Ok(0);
                }
                self.read_counted(buf)
            }
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

fn attempt_to_io(attempt: Attempt) -> io::Error {
    match attempt {
        Attempt::Stale => io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"),
        Attempt::Io(e) => e,
        Attempt::Malformed(reason) => invalid(reason),
        Attempt::Fatal(e) => io::Error::other(e.to_string()),
    }
}

fn read_chunked(conn: &mut BufReader<TcpStream>) -> Result<Vec<u8>, Attempt> {
    let mut body = Vec::new();
    let mut line = Vec::new();
    // Bounded: every chunk adds at least one byte until BODY_BYTES_MAX, or ends the body.
    loop {
        if read_line(conn, &mut line)?.is_none() {
            return Err(Attempt::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed inside a chunked body",
            )));
        }
        let text = String::from_utf8_lossy(&line);
        let size_text = text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| Attempt::Malformed(format!("chunk size {size_text:?}")))?;
        if size == 0 {
            // Trailers, up to the empty line.
            for _ in 0..HEADERS_MAX {
                match read_line(conn, &mut line)? {
                    Some(()) if !line.is_empty() => {}
                    _ => return Ok(body),
                }
            }
            return Err(Attempt::Malformed(format!(
                "more than {HEADERS_MAX} trailers"
            )));
        }
        if body.len() + size > BODY_BYTES_MAX {
            return Err(Attempt::Malformed(format!(
                "chunked body over {BODY_BYTES_MAX} bytes"
            )));
        }
        let start = body.len();
        body.resize(start + size, 0);
        conn.read_exact(&mut body[start..]).map_err(Attempt::Io)?;
        let mut crlf = [0; 2];
        conn.read_exact(&mut crlf).map_err(Attempt::Io)?;
        if &crlf != b"\r\n" {
            return Err(Attempt::Malformed("chunk not followed by CRLF".into()));
        }
    }
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
