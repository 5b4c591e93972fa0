//! Golden tests of InfluxQL over HTTP: requests to the real `strata serve`'s `/query`, each
//! answer compared byte for byte with a recorded one. Every recorded answer was checked
//! against the real InfluxDB 1.6.7 (`influxd`) when it was recorded; where Strata's answer
//! differs from influxd's, the block says so in a `# KNOWN DIFFERENCE` comment.
//!
//! The files are in `tests/golden/influxql/`:
//!
//! - `data.lp`: the data set, line protocol with millisecond timestamps (`#` lines are
//!   comments). Before any request it is written with `POST /write?db=…&precision=ms` to two
//!   databases, `db` (which the requests read) and `scratch` (which `management` changes).
//! - `<topic>.influxql`: blocks of requests, separated by blank lines, sent in order (the
//!   files in name order, one server for all of them, so a file may change what later ones
//!   see). A block is lines:
//!   - `# …`: a comment, anywhere in the block (it is not sent). `# KNOWN DIFFERENCE (…): …`
//!     marks an answer that differs from influxd 1.6.7's, and why.
//!   - before the query, optionally and in any order: `?k=v&k2=v2` — URL parameters, written
//!     raw (the test percent-encodes each value; a value cannot hold `&`); `db=db` is added
//!     unless the line names `db` (`?db=` sends an empty one); `Accept: …` — that request
//!     header (e.g. `Accept: application/csv`); `POST` — send `POST /query` with the query in
//!     an `application/x-www-form-urlencoded` body (`q=…`) instead of `GET /query?…&q=…`.
//!   - the rest: the `q` text, which may span lines and hold several statements separated by
//!     `;`. A block without one sends no `q` parameter.
//! - `<topic>.out`: for each block, the block as written, then `=> <HTTP status>`, then the
//!   response body exactly; blocks separated by a blank line. The status line ends with
//!   ` (no final newline)` when the body does not end with a newline (one is added so the
//!   next block starts on its own line), and with ` (empty body)` when there is no body.
//!
//! `STRATA_BLESS=1 cargo test -p strata --test influxql_golden` rewrites the `.out` files from
//! Strata's answers; otherwise any difference fails the test, naming the file and block and
//! showing both answers. Check a blessed answer against influxd 1.6.7 before committing it.

#![allow(clippy::unwrap_used)]

mod common;

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{Server, data_dir, read_head};

/// The database the data set is written to and requests read by default.
const DATABASE: &str = "db";
/// A second copy of the data set, for statements that change or drop data.
const SCRATCH: &str = "scratch";

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/influxql")
}

/// One request of a `.influxql` file.
#[derive(Debug)]
struct Block {
    /// The block's lines as written.
    text: String,
    /// URL parameters (raw values), `db` first.
    params: Vec<(String, String)>,
    /// `Accept` header, if any.
    accept: Option<String>,
    /// Send as a form body (`POST`).
    post: bool,
    /// The query text; empty = no `q` parameter.
    query: String,
}

fn parse_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines().chain(std::iter::once("")) {
        if !line.trim().is_empty() {
            lines.push(line);
            continue;
        }
        if lines.is_empty() {
            continue;
        }
        blocks.push(parse_block(&lines));
        lines.clear();
    }
    blocks
}

fn parse_block(lines: &[&str]) -> Block {
    let mut params = Vec::new();
    let mut accept = None;
    let mut post = false;
    let mut query: Vec<&str> = Vec::new();
    for line in lines {
        if line.starts_with('#') {
            continue;
        }
        if query.is_empty() {
            if let Some(rest) = line.strip_prefix('?') {
                for pair in rest.split('&').filter(|p| !p.is_empty()) {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    params.push((key.to_owned(), value.to_owned()));
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("Accept:") {
                accept = Some(value.trim().to_owned());
                continue;
            }
            if *line == "POST" {
                post = true;
                continue;
            }
        }
        query.push(line);
    }
    if !params.iter().any(|(key, _)| key == "db") {
        params.insert(0, ("db".to_owned(), DATABASE.to_owned()));
    }
    Block {
        text: lines.join("\n"),
        params,
        accept,
        post,
        query: query.join("\n"),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

fn form(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Sends `block`; returns the status and the body (chunked transfer decoded).
fn send(addr: SocketAddr, block: &Block) -> (u16, String) {
    let mut params = block.params.clone();
    let mut body = String::new();
    let mut headers = String::new();
    if block.post {
        body = form(&[("q".to_owned(), block.query.clone())]);
        headers.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    } else if !block.query.is_empty() {
        params.push(("q".to_owned(), block.query.clone()));
    }
    if let Some(accept) = &block.accept {
        headers.push_str(&format!("Accept: {accept}\r\n"));
    }
    let method = if block.post { "POST" } else { "GET" };
    let mut head = format!(
        "{method} /query?{} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}",
        form(&params)
    );
    if block.post {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let mut bytes = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            bytes.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(length) = header("content-length") {
        bytes = vec![0; length.parse().unwrap()];
        reader.read_exact(&mut bytes).unwrap();
    } else {
        reader.read_to_end(&mut bytes).unwrap();
    }
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// A block and its answer in the `.out` format.
fn render(block: &Block, status: u16, body: &str) -> String {
    let note = if body.is_empty() {
        " (empty body)"
    } else if !body.ends_with('\n') {
        " (no final newline)"
    } else {
        ""
    };
    let mut out = format!("{}\n=> {status}{note}\n{body}", block.text);
    if !body.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// The recorded answer of each block in `expected` (the `.out` text), found by the block's
/// text; `None` for a block the file does not have (in order).
fn recorded<'a>(expected: &'a str, blocks: &[Block]) -> Vec<Option<&'a str>> {
    let mut starts: Vec<Option<usize>> = Vec::new();
    let mut from = 0;
    for block in blocks {
        let needle = format!("{}\n=> ", block.text);
        let found = expected[from..]
            .find(&needle)
            .map(|i| from + i)
            .filter(|&i| i == 0 || expected[..i].ends_with("\n\n"));
        if let Some(start) = found {
            from = start + needle.len();
        }
        starts.push(found);
    }
    (0..blocks.len())
        .map(|i| {
            let start = starts[i]?;
            let end = starts[i + 1..]
                .iter()
                .flatten()
                .next()
                .map_or(expected.len(), |&next| next - 1);
            Some(&expected[start..end.max(start)])
        })
        .collect()
}

fn load(server: &Server, database: &str) {
    let data = std::fs::read_to_string(golden_dir().join("data.lp")).unwrap();
    let lines: Vec<&str> = data
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    let response = server.post(
        &format!("/write?db={database}&precision=ms"),
        &lines.join("\n"),
    );
    assert_eq!(response.status, 204, "write data.lp: {}", response.text());
}

#[test]
fn influxql_answers_match_the_golden_files() {
    let bless = std::env::var("STRATA_BLESS").is_ok_and(|v| v == "1");
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    load(&server, DATABASE);
    load(&server, SCRATCH);

    let mut files: Vec<PathBuf> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "influxql"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no .influxql files in {:?}",
        golden_dir()
    );

    let mut failures = String::new();
    let mut count = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let blocks = parse_blocks(&std::fs::read_to_string(file).unwrap());
        let answers: Vec<String> = blocks
            .iter()
            .map(|block| {
                let (status, body) = send(server.http, block);
                render(block, status, &body)
            })
            .collect();
        count += blocks.len();
        let actual = answers.join("\n");
        let out = file.with_extension("out");
        if bless {
            std::fs::write(&out, &actual).unwrap();
            continue;
        }
        let Ok(expected) = std::fs::read_to_string(&out) else {
            let _ = writeln!(
                failures,
                "{name}: no {:?}; record it with STRATA_BLESS=1",
                out.file_name().unwrap()
            );
            continue;
        };
        if expected == actual {
            continue;
        }
        let recorded = recorded(&expected, &blocks);
        let mut named = false;
        for (i, (block, answer)) in blocks.iter().zip(&answers).enumerate() {
            match recorded[i] {
                Some(want) if want == answer => {}
                Some(want) => {
                    named = true;
                    let _ = writeln!(
                        failures,
                        "{name} block {} ({}):\n--- recorded\n{want}\n+++ now\n{answer}",
                        i + 1,
                        block.text.lines().last().unwrap_or_default()
                    );
                }
                None => {
                    named = true;
                    let _ = writeln!(
                        failures,
                        "{name} block {}: not in {:?} (record it with STRATA_BLESS=1):\n{answer}",
                        i + 1,
                        out.file_name().unwrap()
                    );
                }
            }
        }
        if !named {
            let _ = writeln!(
                failures,
                "{name}: {:?} differs outside the blocks (blocks removed or reordered?); \
                 re-record it with STRATA_BLESS=1",
                out.file_name().unwrap()
            );
        }
    }
    assert!(
        failures.is_empty(),
        "InfluxQL answers differ from the golden files (STRATA_BLESS=1 records the new \
         ones; check them against influxd 1.6.7 first):\n\n{failures}"
    );
    eprintln!("{count} blocks in {} files match", files.len());
}
