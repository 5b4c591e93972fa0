//! The oracle of the InfluxQL differential test (`influxql_differential.rs`): the real
//! InfluxDB 1.x server (Debian's `influxdb` package, `influxd` 1.6.7), started on loopback
//! ports with a generated config in a scratch directory, plus a small HTTP/1.1 client that
//! reads chunked answers (influxd chunks every body over about 2 KiB).
//!
//! Module map: [`data`] the seeded data set and its schema; [`statements`] the seeded
//! generator's pieces; [`templates`], [`functions`] and [`show`] its statement templates;
//! [`compare`] the comparison of answers.

#![allow(clippy::unwrap_used, dead_code)]

pub mod compare;
pub mod data;
pub mod functions;
pub mod show;
pub mod statements;
pub mod templates;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{free_port, read_head};

/// How long influxd may take to answer `/ping` after it is started.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Read timeout of one request: a statement that takes longer is a failure, not a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// The `influxd` binary: on PATH or at `/usr/bin/influxd`. Panics (never skips) when it is
/// missing, naming the step that installs it.
pub fn influxd_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("influxd"))
            .find(|candidate| candidate.is_file())
    });
    let fallback = PathBuf::from("/usr/bin/influxd");
    match on_path {
        Some(path) => path,
        None if fallback.is_file() => fallback,
        None => panic!(
            "influxd (InfluxDB 1.x) is not installed: the InfluxQL differential, OpenTSDB and \
             bench compare tests need it as their oracle or peer. `.ci/run` installs Debian's `influxdb` package (as root: \
             `apt-get install -y influxdb`); install it and run the test again"
        ),
    }
}

/// A running `influxd`, killed on drop; its files live in a scratch directory.
pub struct Influxd {
    child: Option<Child>,
    /// Its HTTP address (loopback).
    pub http: SocketAddr,
    /// Its OpenTSDB listener (telnet `put` and HTTP `/api/put` on one port), when started
    /// with [`Influxd::start_with_opentsdb`].
    pub opentsdb: Option<SocketAddr>,
    dir: PathBuf,
}

impl Influxd {
    /// Starts influxd with everything but HTTP off, in a fresh directory `dir`, and waits
    /// for `/ping`. Retries with other ports (at most three times) if a port was taken
    /// between choosing it and influxd binding it.
    pub fn start(dir: &Path) -> Influxd {
        Self::launch(dir, None)
    }

    /// As [`Influxd::start`], with the OpenTSDB listener on too, writing into `database`
    /// (create it before writing: influxd 1.6 does not), a batch written every 10 ms.
    pub fn start_with_opentsdb(dir: &Path, database: &str) -> Influxd {
        Self::launch(dir, Some(database))
    }

    fn launch(dir: &Path, opentsdb_database: Option<&str>) -> Influxd {
        let binary = influxd_binary();
        let mut last_log = String::new();
        for attempt in 0..3 {
            let _ = std::fs::remove_dir_all(dir);
            std::fs::create_dir_all(dir).unwrap();
            let (http, rpc) = (free_port(), free_port());
            let opentsdb = opentsdb_database.map(|database| (free_port(), database));
            let config = dir.join("influxdb.conf");
            std::fs::write(&config, config_text(dir, http, rpc, opentsdb)).unwrap();
            let log = std::fs::File::create(dir.join("influxd.log")).unwrap();
            let child = Command::new(&binary)
                .arg("run")
                .arg("-config")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
            let mut server = Influxd {
                child: Some(child),
                http: SocketAddr::from(([127, 0, 0, 1], http)),
                opentsdb: opentsdb.map(|(port, _)| SocketAddr::from(([127, 0, 0, 1], port))),
                dir: dir.to_path_buf(),
            };
            if server.wait_for_ping() {
                return server;
            }
            last_log = server.log();
            eprintln!("influxd attempt {attempt} did not start; retrying on other ports");
            drop(server);
        }
        panic!("influxd did not answer /ping within {START_LIMIT:?}; its log:\n{last_log}");
    }

    /// True once `/ping` answers 204; false when influxd exits or the limit passes.
    fn wait_for_ping(&mut self) -> bool {
        let deadline = Instant::now() + START_LIMIT;
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(Child::try_wait) {
                return false;
            }
            if send(self.http, "GET", "/ping", b"").is_ok_and(|reply| reply.status == 204) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// Its process id (for its CPU time and memory in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The directory holding its data, WAL and metadata.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What influxd logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("influxd.log")).unwrap_or_default()
    }
}

impl Drop for Influxd {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// influxd's config: data under `dir`, HTTP and RPC on loopback, quiet, every service and
/// background job that is not needed off.
fn config_text(dir: &Path, http: u16, rpc: u16, opentsdb: Option<(u16, &str)>) -> String {
    let dir = dir.display();
    let mut text = format!(
        r#"reporting-disabled = true
bind-address = "127.0.0.1:{rpc}"

[meta]
  dir = "{dir}/meta"
  retention-autocreate = true
  logging-enabled = false

[data]
  dir = "{dir}/data"
  wal-dir = "{dir}/wal"
  wal-fsync-delay = "0s"
  query-log-enabled = false
  trace-logging-enabled = false

[coordinator]
  log-queries-after = "0s"

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{http}"
  auth-enabled = false
  log-enabled = false
  suppress-write-log = true
  pprof-enabled = false
  unix-socket-enabled = false

[ifql]
  enabled = false

[logging]
  level = "error"
  suppress-logo = true

[continuous_queries]
  enabled = false
  log-enabled = false
"#
    );
    for service in ["graphite", "collectd", "udp"] {
        text.push_str(&format!("\n[[{service}]]\n  enabled = false\n"));
    }
    match opentsdb {
        None => text.push_str("\n[[opentsdb]]\n  enabled = false\n"),
        Some((port, database)) => text.push_str(&format!(
            "\n[[opentsdb]]\n  enabled = true\n  bind-address = \"127.0.0.1:{port}\"\n  \
             database = \"{database}\"\n  batch-size = 100\n  batch-timeout = \"10ms\"\n"
        )),
    }
    text
}

/// An HTTP answer, body de-chunked.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET /query?db=diff&q=...[&epoch=...]`.
pub fn query(addr: SocketAddr, q: &str, epoch: Option<&str>) -> Result<Reply, String> {
    let mut path = format!("/query?db=diff&q={}", encode(q));
    if let Some(epoch) = epoch {
        path.push_str(&format!("&epoch={epoch}"));
    }
    send(addr, "GET", &path, b"")
}

/// `POST path` with a form body `q=...` (statements that change something).
pub fn post_query(addr: SocketAddr, q: &str) -> Result<Reply, String> {
    send(addr, "POST", &format!("/query?q={}", encode(q)), b"")
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn encode(text: &str) -> String {
    strata_bench::http::percent_encode(text)
}

/// One request on a fresh connection (`Connection: close`); errors are transport errors.
pub fn send(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> Result<Reply, String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT)).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| format!("send to {addr}: {e}"))?;
    let mut reader = BufReader::new(stream);
    // `read_head` panics on a malformed head; a peer that closes early is caught here.
    if reader
        .fill_buf()
        .map_err(|e| format!("read: {e}"))?
        .is_empty()
    {
        return Err(format!("{addr} closed the connection without an answer"));
    }
    let (status, headers) = read_head(&mut reader);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = Vec::new();
    if status == 204 || method == "HEAD" {
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        body = read_chunked(&mut reader)?;
    } else if let Some(length) = header("content-length") {
        let length: usize = length.parse().map_err(|_| "bad content-length")?;
        body.resize(length, 0);
        reader
            .read_exact(&mut body)
            .map_err(|e| format!("read body: {e}"))?;
    } else {
        reader
            .read_to_end(&mut body)
            .map_err(|e| format!("read body: {e}"))?;
    }
    Ok(Reply { status, body })
}

fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader
            .read_line(&mut size_line)
            .map_err(|e| format!("read chunk size: {e}"))?;
        let size_text = size_line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size line {size_line:?} (body cut off?)"))?;
        if size == 0 {
            // Trailers (none expected) up to the blank line.
            loop {
                let mut line = String::new();
                let n = reader.read_line(&mut line).map_err(|e| e.to_string())?;
                if n == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .map_err(|e| format!("read chunk: {e}"))?;
        let mut crlf = [0; 2];
        reader
            .read_exact(&mut crlf)
            .map_err(|e| format!("read chunk end: {e}"))?;
    }
}
