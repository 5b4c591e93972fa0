//! A full disk, for real: the server's data directory is on a small tmpfs that the test
//! fills. Writes (and deletes) are answered 507 with a clear message, queries go on being
//! answered, `/health` says which shards refuse writes, and once space is freed writes
//! resume by themselves; no acknowledged row is lost, no file is left damaged or behind.
//!
//! Mounting a tmpfs needs root (or CAP_SYS_ADMIN). Where the test may not mount one, the
//! same scenario runs with the other way space runs out: a file-size limit put on the
//! running server (`prlimit --fsize`), whose writes then fail part way with EFBIG, and
//! lifted to free the space. Every assertion is the same (`STRATA_TEST_NO_MOUNT=1` picks
//! that way where a tmpfs could be mounted). The WAL's side is also tested in-process in
//! `storage/tests/out_of_space.rs`.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Server, scratch, stored_rows, strata, text};

/// A tmpfs mounted on a directory, unmounted on drop.
struct Tmpfs {
    dir: PathBuf,
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Fills the file system holding `path` by writing `path` until no byte more fits, then
/// frees `leave` bytes of it.
fn fill(path: &Path, leave: u64) {
    let mut file = std::fs::File::create(path).unwrap();
    let chunk = vec![0xA5u8; 64 << 10];
    let mut written = 0u64;
    loop {
        match file.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n as u64,
            Err(e) if e.raw_os_error() == Some(28) => break, // ENOSPC
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
        assert!(written < 1 << 30, "the tmpfs never filled");
    }
    file.set_len(written.saturating_sub(leave)).unwrap();
    file.sync_all().unwrap();
}

/// How the test runs out of space, and gets it back.
enum Squeeze {
    /// A 16 MiB tmpfs under the data directory, filled by a ballast file but 16 KiB.
    Tmpfs { _mount: Tmpfs, ballast: PathBuf },
    /// A 32 KiB file-size limit on the server process (smaller than the WAL segment and
    /// the part a flush writes, larger than the catalog and the series log).
    FileSizeLimit,
}

impl Squeeze {
    /// A tmpfs where the test may mount one, else the file-size limit. Returns the data
    /// directory to use.
    fn new(root: &Path) -> (Squeeze, PathBuf) {
        let dir = root.join("fs");
        std::fs::create_dir_all(&dir).unwrap();
        let mounted = if std::env::var_os("STRATA_TEST_NO_MOUNT").is_some() {
            Command::new("false").output()
        } else {
            Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
                .arg(&dir)
                .output()
        }
        .expect("run mount");
        if mounted.status.success() {
            let ballast = dir.join("ballast");
            let data = dir.join("data");
            let mount = Tmpfs { dir };
            (
                Squeeze::Tmpfs {
                    _mount: mount,
                    ballast,
                },
                data,
            )
        } else {
            eprintln!(
                "cannot mount a tmpfs here ({}): running out of space by a file-size limit",
                text(&mounted.stderr).trim()
            );
            (Squeeze::FileSizeLimit, dir.join("data"))
        }
    }

    fn take_space(&self, server: &Server) {
        match self {
            Squeeze::Tmpfs { ballast, .. } => fill(ballast, 16 << 10),
            Squeeze::FileSizeLimit => prlimit(server, "32768:unlimited"),
        }
    }

    fn give_space_back(&self, server: &Server) {
        match self {
            Squeeze::Tmpfs { ballast, .. } => std::fs::remove_file(ballast).unwrap(),
            Squeeze::FileSizeLimit => prlimit(server, "unlimited:unlimited"),
        }
    }

    /// What the OS says when no space is left.
    fn os_error(&self) -> &'static str {
        match self {
            Squeeze::Tmpfs { .. } => "No space left on device",
            Squeeze::FileSizeLimit => "File too large",
        }
    }
}

/// Sets the server process's file-size limit (soft:hard, in bytes).
fn prlimit(server: &Server, fsize: &str) {
    let out = Command::new("prlimit")
        .arg("--pid")
        .arg(server.pid().to_string())
        .arg(format!("--fsize={fsize}"))
        .output()
        .expect("run prlimit (util-linux)");
    assert!(out.status.success(), "prlimit: {}", text(&out.stderr));
}

/// `count` rows, `m,host=h<i%7> v=<hash of i> <t0 + i>` for i in `first..first + count`;
/// the values are scrambled so that parts do not compress to nothing.
fn batch(first: u64, count: u64) -> String {
    (first..first + count)
        .map(|i| {
            let v = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
            format!("m,host=h{} v={v}i {}\n", i % 7, T0 + i as i64)
        })
        .collect()
}

/// The first row's timestamp.
const T0: i64 = 1_700_000_000_000_000_000;

fn times_of(rows: &[String]) -> Vec<i64> {
    rows.iter()
        .map(|row| row.split(' ').nth(1).unwrap().parse().unwrap())
        .collect()
}

fn count_rows(server: &Server) -> u64 {
    let response = server.request(
        "GET",
        "/query?db=db&q=SELECT%20count(v)%20FROM%20m",
        &[],
        b"",
    );
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    body["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("{body}"))
}

fn health(server: &Server) -> serde_json::Value {
    let response = server.request("GET", "/health", &[], b"");
    assert_eq!(response.status, 200);
    response.json()
}

#[test]
fn a_full_disk_refuses_writes_with_507_serves_reads_and_recovers_by_itself() {
    let root = scratch("disk_full");
    let (squeeze, data) = Squeeze::new(&root);
    let server = Server::start(&data, &[]);

    let mut rows = Rows::default();
    for _ in 0..20 {
        assert_eq!(rows.write_many(&server, 1000).status, 204);
    }

    // The disk fills. A delete, which flushes, needs room for a part: refused with 507,
    // and the partial part it wrote is removed (the check at the end finds no leftover).
    squeeze.take_space(&server);
    let delete = server.post("/sql?db=db", "DELETE FROM m WHERE host = 'h0'");
    assert_eq!(delete.status, 507, "{}", delete.text());
    assert!(
        delete.text().contains(squeeze.os_error()),
        "{}",
        delete.text()
    );

    // Writes keep coming: a few more fit, then every one is refused.
    let refused = (0..2000)
        .map(|_| rows.write(&server))
        .find(|r| r.status != 204)
        .expect("writes never failed on a full disk");
    assert_eq!(refused.status, 507, "{}", refused.text());
    let message = refused.json()["error"].as_str().unwrap().to_string();
    assert!(message.contains(squeeze.os_error()), "{message}");
    assert!(message.contains("writes resume by themselves"), "{message}");
    assert_eq!(refused.header("retry-after"), Some("10"));
    for _ in 0..3 {
        assert_eq!(rows.write(&server).status, 507);
    }

    // Reads go on, and /health and /metrics say what is wrong.
    assert!(count_rows(&server) >= rows.acknowledged.len() as u64);
    let report = health(&server);
    assert_eq!(report["status"], "warn", "{report}");
    let check = &report["checks"][0];
    assert!(
        check["name"].as_str().unwrap().ends_with("/writes"),
        "{report}"
    );
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains(squeeze.os_error()),
        "{report}"
    );
    assert!(common::metric(&server.metrics(), "strata_shards_refusing_writes") >= 1.0);

    // Space returns: writes succeed again without a restart.
    squeeze.give_space_back(&server);
    let deadline = Instant::now() + Duration::from_secs(30);
    while rows.write(&server).status != 204 {
        assert!(
            Instant::now() < deadline,
            "writes did not resume after space returned"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for _ in 0..5 {
        assert_eq!(rows.write(&server).status, 204);
    }
    let delete = server.request(
        "POST",
        "/query?db=db",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"q=DELETE%20FROM%20m%20WHERE%20host%3D%27h0%27",
    );
    assert_eq!(delete.status, 200, "{}", delete.text());
    assert_eq!(
        delete.json(),
        serde_json::json!({"results": [{"statement_id": 0}]})
    );
    rows.deleted_below = rows.next;
    let deadline = Instant::now() + Duration::from_secs(30);
    while health(&server)["status"] != "pass" {
        assert!(
            Instant::now() < deadline,
            "health stayed {}",
            health(&server)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Nothing is damaged or left behind, through a clean stop and through a crash.
    assert!(server.stop().success());
    let check = strata(&["check", "--data-dir", data.to_str().unwrap()]);
    let said = format!("{}{}", text(&check.stdout), text(&check.stderr));
    assert!(check.status.success(), "{said}");
    assert!(
        !said.contains("not in the manifest"),
        "a failed flush left its part: {said}"
    );
    let leftovers: Vec<PathBuf> = walk(&data)
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    rows.check_stored(&data);
    let server = Server::start(&data, &[]);
    assert_eq!(rows.write(&server).status, 204);
    server.kill9();
    rows.check_stored(&data);
}

/// The rows written, each once.
#[derive(Default)]
struct Rows {
    next: u64,
    /// Rows of host h0 sent before this were deleted.
    deleted_below: u64,
    acknowledged: BTreeSet<i64>,
    sent: BTreeSet<i64>,
}

impl Rows {
    fn write(&mut self, server: &Server) -> common::Response {
        self.write_many(server, 100)
    }

    fn write_many(&mut self, server: &Server, count: u64) -> common::Response {
        let body = batch(self.next, count);
        let times: Vec<i64> = (self.next..self.next + count)
            .map(|i| T0 + i as i64)
            .collect();
        self.next += count;
        self.sent.extend(&times);
        let response = server.post("/write?db=db", &body);
        if response.status == 204 {
            self.acknowledged.extend(times);
        }
        response
    }

    /// What the stopped server's data directory holds: every acknowledged row but the
    /// deleted ones (host h0, sent before the delete), once; nothing that was not sent.
    fn check_stored(&self, data: &Path) {
        let deleted = |t: &i64| {
            let i = (*t - T0) as u64;
            i.is_multiple_of(7) && i < self.deleted_below
        };
        let stored = times_of(&stored_rows(data, "db", "m"));
        let unique: BTreeSet<i64> = stored.iter().copied().collect();
        assert_eq!(unique.len(), stored.len(), "a row stored twice");
        for t in &self.acknowledged {
            assert!(
                deleted(t) || unique.contains(t),
                "acknowledged row {t} lost"
            );
        }
        for t in &unique {
            assert!(
                self.sent.contains(t) && !deleted(t),
                "row {t} was never sent, or was deleted"
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
