//! Shared by the end-to-end tests: run the `strata` binary, start the real `strata serve`
//! on a free loopback port, a tiny HTTP/1.1 client over `std::net::TcpStream`, and reading
//! rows back with the storage engine once the server is stopped.

#![allow(clippy::unwrap_used, dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub mod lake;
pub mod psql;

use strata_storage::column::SeriesData;
use strata_storage::{Engine, EngineOptions, ReadRequest};

/// A loopback port nobody listened on a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The `strata` binary under test: the one Cargo built with the tests, or the one named by
/// `STRATA_TEST_BINARY` (e.g. a release build, for long runs of the crash torture test).
pub fn strata_binary() -> PathBuf {
    std::env::var_os("STRATA_TEST_BINARY")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_strata")))
}

/// Runs the `strata` binary with `args` and waits for it.
pub fn strata(args: &[&str]) -> Output {
    Command::new(strata_binary())
        .args(args)
        .output()
        .expect("run strata")
}

/// A fresh directory under the target dir, unique to the test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A JSON file, parsed.
pub fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read json")).expect("parse json")
}

/// How long a server may take to start or stop before the test fails.
const START_STOP_LIMIT: Duration = Duration::from_secs(20);

/// A running `strata serve`; killed (SIGKILL) on drop if still running.
pub struct Server {
    child: Option<Child>,
    /// Its HTTP address.
    pub http: SocketAddr,
    /// Its TCP line-protocol address, when started with `--tcp`.
    pub tcp: Option<SocketAddr>,
    /// Its OpenTSDB telnet address, when started with `--opentsdb`.
    pub opentsdb: Option<SocketAddr>,
    /// Its Postgres wire address, when started with `--pg` (the helper turns the
    /// default 127.0.0.1:5432 off, so parallel tests never race for it).
    pub pg: Option<SocketAddr>,
    /// Its data directory.
    pub data_dir: PathBuf,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts a server on `data_dir` with 2 shards, HTTP on a free loopback port, plus
    /// `extra` flags.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Server {
        Self::start_with_env(data_dir, extra, &[])
    }

    /// As [`Server::start`], with environment variables set.
    pub fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Self::start_under(&[], data_dir, extra, env)
    }

    /// As [`Server::start_with_env`], run by `launcher` (a command and its arguments, the
    /// server's command line appended, e.g. `prlimit --nofile=96:96`); none when empty.
    pub fn start_under(
        launcher: &[&str],
        data_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut command = match launcher.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(strata_binary());
                command
            }
            None => Command::new(strata_binary()),
        };
        command
            .args(["serve", "--data-dir"])
            .arg(data_dir)
            .args(["--http", "127.0.0.1:0", "--shards", "2", "--log", "info"])
            .args(extra)
            .args(if extra.contains(&"--pg") {
                &[][..]
            } else {
                &["--pg", "off"][..]
            })
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let pipe = child.stderr.take().unwrap();
        let log = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + START_STOP_LIMIT;
        let mut tcp = None;
        let mut pg = None;
        let mut opentsdb = None;
        let http = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                panic!("server did not start; stderr:\n{}", stderr.lock().unwrap());
            };
            if let Some(addr) = address_after(&line, "listening for line protocol on tcp://") {
                tcp = Some(addr);
            }
            if let Some(addr) = address_after(&line, "listening for OpenTSDB telnet put on tcp://")
            {
                opentsdb = Some(addr);
            }
            if let Some(addr) = address_after(&line, "listening for Postgres on postgres://") {
                pg = Some(addr);
            }
            if let Some(addr) = address_after(&line, "listening for HTTP on http://")
                .or_else(|| address_after(&line, "listening for HTTP on https://"))
            {
                break addr;
            }
        };
        Server {
            child: Some(child),
            http,
            tcp,
            opentsdb,
            pg,
            data_dir: data_dir.to_path_buf(),
            stderr,
        }
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(mut self) -> ExitStatus {
        let child = self.child.take().unwrap();
        signal(&child, "-TERM");
        wait(child)
    }

    /// Sends SIGTERM without waiting (see [`Server::wait`]).
    pub fn terminate(&self) {
        signal(self.child.as_ref().unwrap(), "-TERM");
    }

    /// Waits for the exit.
    pub fn wait(mut self) -> ExitStatus {
        wait(self.child.take().unwrap())
    }

    /// Sends SIGKILL and waits for the exit.
    pub fn kill9(mut self) -> ExitStatus {
        let child = self.child.take().unwrap();
        signal(&child, "-KILL");
        wait(child)
    }

    /// One HTTP request to this server.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        request(self.http, method, path, headers, body)
    }

    /// `POST path` with a line-protocol body.
    pub fn post(&self, path: &str, body: &str) -> Response {
        self.request("POST", path, &[], body.as_bytes())
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).expect("running")
    }

    /// CPU time the server process has used so far (user + system), in clock ticks
    /// (`/proc/<pid>/stat`, fields 14 and 15; 100 a second on Linux).
    pub fn cpu_ticks(&self) -> u64 {
        let pid = self.child.as_ref().map(Child::id).expect("running");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    /// `GET /metrics` (no auth) as text.
    pub fn metrics(&self) -> String {
        let response = self.request("GET", "/metrics", &[], b"");
        assert_eq!(response.status, 200, "{}", response.text());
        response.text()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn address_after(line: &str, marker: &str) -> Option<SocketAddr> {
    let start = line.find(marker)? + marker.len();
    let rest = &line[start..];
    let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn signal(child: &Child, which: &str) {
    let status = Command::new("kill")
        .arg(which)
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill {which} failed");
}

/// Waits for `child` to exit; kills it and fails the test if it runs past the start/stop
/// limit.
pub fn wait(mut child: Child) -> ExitStatus {
    let deadline = Instant::now() + START_STOP_LIMIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("server did not exit within {START_STOP_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh data directory (removed when the returned guard drops).
pub fn data_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("strata-serve-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// An HTTP response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Headers, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Response {
    /// The value of header `name` (lower case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text()))
    }
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    read_response(&mut stream, method == "HEAD")
}

/// Reads one response up to the end of its body.
pub fn read_response(stream: &mut TcpStream, head_only: bool) -> Response {
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if head_only || status == 204 {
        return response;
    }
    assert_ne!(
        response.header("transfer-encoding"),
        Some("chunked"),
        "chunked responses are not expected"
    );
    match response.header("content-length") {
        Some(length) => {
            let mut body = vec![0; length.parse().unwrap()];
            reader.read_exact(&mut body).unwrap();
            response.body = body;
        }
        None => {
            reader.read_to_end(&mut response.body).unwrap();
        }
    }
    response
}

/// A response's status and headers (names in lower case), up to the blank line.
pub fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"))
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            return (status, headers);
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
}

/// `value` gzip-compressed.
pub fn gzip(value: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(value).unwrap();
    encoder.finish().unwrap()
}

/// Opens the engine on a stopped server's data directory (no background threads).
pub fn open_engine(data_dir: &Path) -> Engine {
    let options = EngineOptions {
        data_dirs: vec![data_dir.to_path_buf()],
        background: false,
        ..EngineOptions::default()
    };
    Engine::open(options).unwrap().0
}

/// Every row of `database.table`, one string each — `tags time field=value ...` with tags
/// and fields sorted by name — sorted. Empty when the table does not exist.
pub fn rows(engine: &Engine, database: &str, table: &str) -> Vec<String> {
    let Some(schema) = engine.table(database, table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for series in engine.read(&ReadRequest::all(schema.id)).unwrap() {
        let tags: Vec<String> = series
            .tags
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.extend(render(&tags.join(","), &series.data, &schema.fields));
    }
    out.sort();
    out
}

fn render(
    tags: &str,
    data: &SeriesData,
    fields: &[strata_storage::catalog::FieldDef],
) -> Vec<String> {
    let indexes: Vec<Vec<Option<usize>>> = data
        .columns
        .iter()
        .map(|c| c.value_indexes(data.rows()))
        .collect();
    (0..data.rows())
        .map(|row| {
            let mut values: Vec<String> = data
                .columns
                .iter()
                .zip(&indexes)
                .filter_map(|(column, index)| {
                    let i = index[row]?;
                    let name = &fields[column.field as usize].name;
                    Some(format!("{name}={:?}", column.values.get(i)))
                })
                .collect();
            values.sort();
            format!("{tags} {} {}", data.times[row], values.join(" "))
        })
        .collect()
}

/// Rows of `database.table` after the server has stopped.
pub fn stored_rows(data_dir: &Path, database: &str, table: &str) -> Vec<String> {
    let engine = open_engine(data_dir);
    let out = rows(&engine, database, table);
    engine.close().unwrap();
    out
}

/// The value of the sample `name` (with labels, exactly as printed) in a metrics text.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            (key == name).then(|| value.parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
}

/// Polls `condition` every 20 ms for up to 10 s.
pub fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
