//! Reading a response: its head (status line and headers), then its body, delimited by
//! `Content-Length`, chunked encoding or the connection's end, read whole (capped) or as a
//! stream ([`BodyReader`]).

use std::io::{self, BufReader, Read};
use std::net::TcpStream;

use super::{Attempt, BODY_BYTES_MAX, HEADERS_MAX, read_line};

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

/// Reads a response's head; also says how its body is delimited and whether the connection
/// may be reused after it.
pub(super) fn read_head(
    conn: &mut BufReader<TcpStream>,
) -> Result<(ResponseHead, Framing, bool), Attempt> {
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

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    /// No body (1xx, 204, 304).
    Empty,
    /// `Content-Length` bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Up to the end of the connection.
    ToEnd,
}

/// Reads a whole body of at most [`BODY_BYTES_MAX`] bytes.
pub(super) fn read_body(
    conn: &mut BufReader<TcpStream>,
    framing: Framing,
) -> Result<Vec<u8>, Attempt> {
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
pub(super) struct BodyReader<'a> {
    conn: &'a mut BufReader<TcpStream>,
    framing: Framing,
    /// Bytes left in the body (`Length`) or in the current chunk (`Chunked`).
    left: u64,
    /// `Chunked`: the CRLF after the current chunk's data is still to be read.
    crlf_pending: bool,
    done: bool,
}

impl<'a> BodyReader<'a> {
    pub(super) fn new(conn: &'a mut BufReader<TcpStream>, framing: Framing) -> Self {
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
