//! End-to-end durability: a graceful stop (SIGTERM) finishes requests in flight and exits 0
//! with everything flushed, and
//! SIGKILL in the middle of a load loses no acknowledged row (the WAL); `strata backup`
//! of a running server and `strata restore` give back what was written before it.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::io::Write;
use std::net::TcpStream;

use common::{
    Server, data_dir, eventually, metric, open_engine, read_response, request, rows, stored_rows,
};

fn batch(writer: usize, batch: usize, rows_per_batch: usize) -> String {
    (0..rows_per_batch)
        .map(|i| {
            let t = (batch * rows_per_batch + i) as i64;
            format!("load,w=w{writer} seq={t}i {t}\n")
        })
        .collect()
}

#[test]
fn sigterm_exits_0_and_a_restart_has_everything() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    for b in 0..5 {
        assert_eq!(server.post("/write?db=g", &batch(0, b, 200)).status, 204);
    }
    let stderr_before = server.stderr();
    let status = server.stop();
    assert_eq!(
        status.code(),
        Some(0),
        "graceful stop exits 0; stderr:\n{stderr_before}"
    );

    // The stop flushed memtables to parts: nothing left to replay.
    let engine = open_engine(dir.path());
    assert!(engine.stats().parts > 0, "the stop flushed to parts");
    assert_eq!(rows(&engine, "g", "load").len(), 1_000);
    engine.close().unwrap();

    let server = Server::start(dir.path(), &[]);
    assert!(
        server.stderr().contains("replayed_rows=0"),
        "{}",
        server.stderr()
    );
    for b in 5..8 {
        assert_eq!(
            server
                .post("/api/v2/write?bucket=g", &batch(0, b, 200))
                .status,
            204
        );
    }
    assert_eq!(server.stop().code(), Some(0));
    let stored = stored_rows(dir.path(), "g", "load");
    let mut expected: Vec<String> = (0..1_600)
        .map(|t| format!("w=w0 {t} seq=Integer({t})"))
        .collect();
    expected.sort();
    assert_eq!(stored, expected);
}

#[test]
fn sigterm_lets_a_request_in_flight_finish() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let body = batch(0, 0, 50);
    let mut slow = TcpStream::connect(server.http).unwrap();
    write!(
        slow,
        "POST /write?db=f HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    slow.write_all(&body.as_bytes()[..100]).unwrap();
    slow.flush().unwrap();
    eventually("the request to be in flight", || {
        metric(&server.metrics(), "strata_inflight_write_bytes") > 0.0
    });
    server.terminate();
    eventually("the shutdown to begin", || {
        server.stderr().contains("SIGTERM received")
    });
    // New connections are refused once shutdown begins...
    eventually("the listener to close", || {
        TcpStream::connect(server.http).is_err()
    });
    // ...but the request in flight is finished and answered.
    slow.write_all(&body.as_bytes()[100..]).unwrap();
    let response = read_response(&mut slow, false);
    assert_eq!(response.status, 204, "{}", response.text());
    assert_eq!(server.wait().code(), Some(0));
    assert_eq!(stored_rows(dir.path(), "f", "load").len(), 50);
}

#[test]
fn sigkill_during_a_load_keeps_every_acknowledged_row() {
    const WRITERS: usize = 2;
    const ROWS_PER_BATCH: usize = 100;
    const MAX_BATCHES: usize = 5_000;
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let addr = server.http;
    let stop = Arc::new(AtomicBool::new(false));
    // Batches each writer saw acknowledged (204), in order.
    let acked: Arc<Mutex<Vec<Vec<usize>>>> = Arc::new(Mutex::new(vec![Vec::new(); WRITERS]));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let stop = Arc::clone(&stop);
            let acked = Arc::clone(&acked);
            std::thread::spawn(move || {
                for b in 0..MAX_BATCHES {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let body = batch(w, b, ROWS_PER_BATCH);
                    // The request fails once the server is gone: the writer stops there.
                    let Ok(status) = std::panic::catch_unwind(|| {
                        request(addr, "POST", "/write?db=k", &[], body.as_bytes()).status
                    }) else {
                        break;
                    };
                    assert_eq!(status, 204);
                    acked.lock().unwrap()[w].push(b);
                }
            })
        })
        .collect();
    // Load for a while (bounded), then kill -9 while writers are mid-request.
    let started = Instant::now();
    while acked.lock().unwrap().iter().map(Vec::len).sum::<usize>() < 40
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = server.kill9();
    assert!(!status.success());
    stop.store(true, Ordering::SeqCst);
    for thread in threads {
        thread.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let total: usize = acked.iter().map(Vec::len).sum();
    assert!(total >= 40, "the load ran: {total} batches acknowledged");

    let engine = open_engine(dir.path());
    let stored: std::collections::HashSet<String> =
        rows(&engine, "k", "load").into_iter().collect();
    for (w, batches) in acked.iter().enumerate() {
        for &b in batches {
            for i in 0..ROWS_PER_BATCH {
                let t = b * ROWS_PER_BATCH + i;
                let row = format!("w=w{w} {t} seq=Integer({t})");
                assert!(stored.contains(&row), "acknowledged row lost: {row}");
            }
        }
    }
    // Rows of unacknowledged batches may be there or not, but never more than were sent.
    assert!(stored.len() <= (total + WRITERS) * ROWS_PER_BATCH);
    engine.close().unwrap();
}

/// A second server on a data directory in use is refused at once (exit 1, the directory
/// and the owner's pid named) and the first goes on serving; an engine opened in another
/// process is refused too. SIGKILL of the owner releases the lock: no stale lock after a
/// crash.
#[test]
fn a_data_directory_in_use_is_refused_and_a_crash_releases_it() {
    let dir = data_dir();
    let first = Server::start(dir.path(), &[]);
    assert_eq!(first.post("/write?db=g", &batch(0, 0, 10)).status, 204);

    let mut second = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A second server that started anyway would run until the limit and fail the test.
    let mut pipe = second.stderr.take().unwrap();
    let status = common::wait(second);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        stderr.contains("is in use by another Strata process") && stderr.contains("(pid "),
        "stderr:\n{stderr}"
    );

    let options = strata_storage::EngineOptions {
        data_dirs: vec![dir.path().to_path_buf()],
        background: false,
        ..strata_storage::EngineOptions::default()
    };
    let refused = strata_storage::Engine::open(options);
    assert!(
        matches!(refused, Err(strata_storage::StorageError::InUse { .. })),
        "{refused:?}"
    );

    // The first server was not disturbed.
    assert_eq!(first.post("/write?db=g", &batch(0, 1, 10)).status, 204);
    first.kill9();
    let after = Server::start(dir.path(), &[]);
    assert_eq!(after.stop().code(), Some(0));
    assert_eq!(stored_rows(dir.path(), "g", "load").len(), 20);
}

/// `strata backup --to DIR` against the running server, then `strata restore` into a new
/// data directory: a server started on it has every row written before the backup and
/// none written after; a second backup into the same directory links only new parts.
#[test]
fn backup_of_a_running_server_restores_what_was_written_before_it() {
    let dir = data_dir();
    let data = dir.path().join("data");
    let token = "s3cret";
    let server = Server::start(&data, &["--auth-token", token, "--read-only-token", "ro"]);
    let auth = format!("Token {token}");
    let write = |b: usize| {
        let response = server.request(
            "POST",
            "/write?db=b",
            &[("Authorization", auth.as_str())],
            batch(0, b, 100).as_bytes(),
        );
        assert_eq!(response.status, 204, "{}", response.text());
    };
    (0..5).for_each(write);
    let backup = dir.path().join("backup");
    let strata = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args)
            .output()
            .unwrap()
    };
    let url = format!("http://{}", server.http);
    let backup_arg = backup.to_str().unwrap();
    let refused = strata(&["backup", "--to", backup_arg, "--url", &url, "--token", "ro"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("(403)"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let taken = strata(&[
        "backup", "--to", backup_arg, "--url", &url, "--token", token,
    ]);
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&taken.stdout).unwrap();
    assert_eq!(report["rows"], 500, "{report}");
    (5..8).for_each(write);
    let again = strata(&[
        "backup", "--to", backup_arg, "--url", &url, "--token", token,
    ]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["rows"], 800, "{again}");
    assert!(
        again["parts_new"].as_u64().unwrap() < again["parts"].as_u64().unwrap()
            || again["parts"].as_u64().unwrap() <= 2,
        "{again}"
    );
    let metrics = server.request("GET", "/metrics", &[("Authorization", auth.as_str())], b"");
    assert_eq!(metric(&metrics.text(), "strata_backups_total"), 2.0);
    (8..10).for_each(write);
    assert!(server.stop().success());

    let restored = dir.path().join("restored");
    let out = strata(&[
        "restore",
        "--from",
        backup_arg,
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stored_rows(&restored, "b", "load").len(), 800);
    assert_eq!(stored_rows(&data, "b", "load").len(), 1000);
    let out = strata(&[
        "restore",
        "--from",
        backup_arg,
        "--data-dir",
        restored.to_str().unwrap(),
    ]);
    assert!(
        !out.status.success(),
        "restoring over a data directory is refused"
    );
}
