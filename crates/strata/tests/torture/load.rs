//! The load the crash torture test runs against a server until it is killed: HTTP and TCP
//! writers, deletes (SQL and InfluxQL), queries and backups, each recording in the model
//! what the server acknowledged. A request that fails because the server is gone ends its
//! thread; any other failure is recorded for the test to report.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use strata_bench::rng::Rng;

use super::model::{Model, TCP_WRITER, WRITERS, line, time_ns};

/// One HTTP/1.0 request (the answer ends when the server closes: no chunking to undo).
/// `Err` when the server cannot be reached or goes away before the answer is complete.
pub fn call(
    addr: SocketAddr,
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let head = format!(
        "{method} {target} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let broken = || std::io::Error::other(format!("not an HTTP answer: {answer:?}"));
    let (head, body) = answer.split_once("\r\n\r\n").ok_or_else(broken)?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(broken)?;
    Ok((status, body.to_owned()))
}

/// A SQL statement on `/sql` (database `strata`), answered as CSV.
pub fn sql(addr: SocketAddr, statement: &str) -> std::io::Result<(u16, String)> {
    call(
        addr,
        "POST",
        "/sql?db=strata&format=csv",
        "text/plain",
        statement.as_bytes(),
    )
}

/// An InfluxQL statement on `/query` (database `strata`), as a form like the 1.x clients.
fn influxql(addr: SocketAddr, statement: &str) -> std::io::Result<(u16, String)> {
    let mut form = String::from("q=");
    for byte in statement.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            form.push(byte as char);
        } else {
            form.push_str(&format!("%{byte:02X}"));
        }
    }
    call(
        addr,
        "POST",
        "/query?db=strata",
        "application/x-www-form-urlencoded",
        form.as_bytes(),
    )
}

/// The answer of a query run before the first row created the table (or database).
pub fn table_missing(status: u16, body: &str) -> bool {
    (status == 400 && body.contains("not found")) || (status == 200 && body.contains("not found"))
}

/// What the load threads share.
#[derive(Clone)]
pub struct Shared {
    pub model: Arc<Mutex<Model>>,
    pub failures: Arc<Mutex<Vec<String>>>,
    pub stop: Arc<AtomicBool>,
    pub http: SocketAddr,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn fail(&self, what: String) {
        self.failures.lock().unwrap().push(what);
    }

    fn pause(&self, rng: &mut Rng, max_ms: u64) {
        std::thread::sleep(Duration::from_millis(rng.below(max_ms + 1)));
    }
}

/// Starts every load thread: two HTTP writers, the TCP writer, deletes, queries and (when
/// `backup_to` is given) one backup at a random moment.
pub fn start(
    shared: &Shared,
    tcp: SocketAddr,
    backup_to: Option<(u64, PathBuf)>,
    rng: &mut Rng,
) -> Vec<JoinHandle<()>> {
    let mut threads = Vec::new();
    for writer in 0..TCP_WRITER {
        let (s, r) = (shared.clone(), Rng::new(rng.next_u64()));
        threads.push(std::thread::spawn(move || http_writer(&s, writer, r)));
    }
    let (s, r) = (shared.clone(), Rng::new(rng.next_u64()));
    threads.push(std::thread::spawn(move || tcp_writer(&s, tcp, r)));
    let (s, r) = (shared.clone(), Rng::new(rng.next_u64()));
    threads.push(std::thread::spawn(move || deleter(&s, r)));
    let (s, r) = (shared.clone(), Rng::new(rng.next_u64()));
    threads.push(std::thread::spawn(move || querier(&s, r)));
    if let Some((id, dir)) = backup_to {
        let (s, r) = (shared.clone(), Rng::new(rng.next_u64()));
        threads.push(std::thread::spawn(move || backup(&s, id, dir, r)));
    }
    threads
}

/// Batches of 1 to 100 rows to `/write`, one after another.
fn http_writer(shared: &Shared, writer: usize, mut rng: Rng) {
    while !shared.stopped() {
        let n = 1 + rng.below(100);
        let rows = shared.model.lock().unwrap().issue(writer, n);
        let body: String = rows.clone().map(|seq| line(writer, seq)).collect();
        let target = if writer == 0 {
            "/write?db=strata"
        } else {
            "/api/v2/write?bucket=strata"
        };
        let Ok((status, answer)) = call(shared.http, "POST", target, "text/plain", body.as_bytes())
        else {
            return;
        };
        let mut model = shared.model.lock().unwrap();
        if status == 204 {
            model.acknowledged(writer, rows.clone());
        } else {
            shared.fail(format!("a write was answered {status}: {answer}"));
        }
        model.completed(writer, rows.end);
        drop(model);
        shared.pause(&mut rng, 3);
    }
}

/// Batches of 1 to 100 lines over one TCP connection. TCP has no acknowledgement, and a
/// query may return rows whose WAL record is not yet written (the memtable takes them
/// first, as InfluxDB's cache does): a crash then may lose them. So TCP rows stay
/// uncertain until a restart settles them; once a query sees a whole batch, deletes may
/// cover it (they must remove it, even though its WAL record may be written after).
fn tcp_writer(shared: &Shared, tcp: SocketAddr, mut rng: Rng) {
    let Ok(mut stream) = TcpStream::connect(tcp) else {
        return;
    };
    while !shared.stopped() {
        let n = 1 + rng.below(100);
        let rows = shared.model.lock().unwrap().issue(TCP_WRITER, n);
        let body: String = rows.clone().map(|seq| line(TCP_WRITER, seq)).collect();
        if stream.write_all(body.as_bytes()).is_err() {
            return;
        }
        let count = format!(
            "SELECT count(*) AS n FROM m WHERE w = '{}' AND time >= to_timestamp_nanos({}) AND time <= to_timestamp_nanos({})",
            WRITERS[TCP_WRITER],
            time_ns(rows.start),
            time_ns(rows.end - 1)
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Ok((status, answer)) = sql(shared.http, &count) else {
                return;
            };
            if status == 200 && answer.lines().nth(1) == Some(n.to_string().as_str()) {
                break;
            }
            if !(status == 200 || table_missing(status, &answer)) || Instant::now() > deadline {
                shared.fail(format!("TCP rows not visible ({status}): {answer}"));
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        shared.model.lock().unwrap().completed(TCP_WRITER, rows.end);
    }
}

/// Deletes of 1 to 300 rows of one writer, among rows whose writes were all answered,
/// through SQL and InfluxQL in turn.
fn deleter(shared: &Shared, mut rng: Rng) {
    let mut sent = 0u64;
    while !shared.stopped() {
        shared.pause(&mut rng, 40);
        let writer = rng.below(WRITERS.len() as u64) as usize;
        let mut model = shared.model.lock().unwrap();
        let completed = model.writers[writer].completed;
        if completed == 0 {
            continue;
        }
        let start = rng.below(completed);
        let rows = start..completed.min(start + 1 + rng.below(300));
        model.delete_sent(writer, rows.clone());
        drop(model);
        let condition = format!(
            "w = '{}' AND time >= {} AND time < {}",
            WRITERS[writer],
            time_ns(rows.start),
            time_ns(rows.end)
        );
        let statement = format!("DELETE FROM m WHERE {condition}");
        sent += 1;
        let answer = if sent.is_multiple_of(2) {
            sql(shared.http, &statement)
        } else {
            influxql(shared.http, &statement)
        };
        let Ok((status, body)) = answer else {
            return;
        };
        // InfluxQL answers 200 with the error in the body.
        if status != 200 || body.contains("\"error\"") {
            shared.fail(format!("{statement} was answered {status}: {body}"));
            return;
        }
        shared
            .model
            .lock()
            .unwrap()
            .delete_acknowledged(writer, rows);
    }
}

/// Queries of every path (scans, aggregates, InfluxQL, metadata); only their status is
/// checked, since the rows change under them.
fn querier(shared: &Shared, mut rng: Rng) {
    const QUERIES: [(bool, &str); 4] = [
        (true, "SELECT w, count(*), max(v) FROM m GROUP BY w"),
        (
            true,
            "SELECT host, sum(v) FROM m WHERE w = 'h1' GROUP BY host",
        ),
        (false, "SELECT count(v) FROM m GROUP BY w"),
        (false, "SHOW SERIES FROM m"),
    ];
    while !shared.stopped() {
        shared.pause(&mut rng, 30);
        let (is_sql, query) = QUERIES[rng.below(QUERIES.len() as u64) as usize];
        let answer = if is_sql {
            sql(shared.http, query)
        } else {
            influxql(shared.http, query)
        };
        let Ok((status, body)) = answer else {
            return;
        };
        let failed = status != 200 || body.contains("\"error\"");
        if failed && !table_missing(status, &body) {
            shared.fail(format!("{query} was answered {status}: {body}"));
        }
    }
}

/// One backup into `dir` at a random moment, recorded with what it must hold.
fn backup(shared: &Shared, id: u64, dir: PathBuf, mut rng: Rng) {
    shared.pause(&mut rng, 300);
    if shared.stopped() {
        return;
    }
    shared.model.lock().unwrap().backup_started(id);
    let target = format!("/api/v1/backup?to={}", dir.display());
    let answer = call(shared.http, "POST", &target, "text/plain", b"");
    if let Ok((status, body)) = &answer
        && *status != 200
    {
        shared.fail(format!("backup answered {status}: {body}"));
    }
    let answered = matches!(answer, Ok((200, _)));
    shared.model.lock().unwrap().backup_ended(id, answered);
}
