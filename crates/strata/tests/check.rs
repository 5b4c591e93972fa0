//! Damaged files: `strata check` passes a clean data directory and refuses a running
//! server's; a flipped byte in any kind of file is found and the file named (exit status
//! 1); the traces a crash leaves (torn tails, a leftover part) are notes that change
//! nothing on disk; a damaged part is set aside at start-up, or when a query finds it;
//! damage in the middle of the WAL stops the start unless `--wal-recovery skip-damaged` is
//! given; `strata repair` rebuilds lost metadata files from the parts.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{Server, data_dir, strata, text};
use strata_storage::series::{FRAME_LEN, HEADER_LEN};
use strata_storage::wal::SEGMENT_HEADER_LEN;

/// Rows of two series, a varied value each, spread over three hours.
fn rows(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| {
            let t = 1_767_225_600_000_000_000i64 + i as i64 * 1_000_000_000;
            format!(
                "m,host=h{} v={}.25,n={}i {t}\n",
                i % 2,
                (i * 37) % 1000,
                i * 3
            )
        })
        .collect()
}

/// A data directory with parts (written, then a graceful stop) and WAL records in several
/// requests (written, then SIGKILL).
fn populated() -> tempfile::TempDir {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.post("/write?db=c", &rows(0, 6_000)).status, 204);
    assert_eq!(server.stop().code(), Some(0));
    let server = Server::start(dir.path(), &[]);
    for batch in 0..5 {
        let body = rows(6_000 + batch * 40, 40);
        assert_eq!(server.post("/write?db=c", &body).status, 204);
    }
    server.kill9();
    dir
}

fn check(dir: &Path) -> Output {
    strata(&["check", "--data-dir", dir.to_str().unwrap()])
}

/// Every file under `dir` whose name satisfies `wanted`, sorted.
fn files(dir: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path, wanted));
        } else if wanted(&entry.file_name().to_string_lossy()) {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The longest of `paths`: the shard's series log or WAL segment that holds records.
fn longest(paths: Vec<PathBuf>) -> PathBuf {
    paths
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A statement on `/sql` as CSV, over HTTP/1.0 (no chunking to undo): status and body.
fn sql_answer(addr: std::net::SocketAddr, statement: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /sql?db=c&format=csv HTTP/1.0\r\nContent-Length: {}\r\n\r\n{statement}",
        statement.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// A statement that must succeed, its CSV.
fn sql_csv(addr: std::net::SocketAddr, statement: &str) -> String {
    let (status, body) = sql_answer(addr, statement);
    assert_eq!(status, 200, "{body}");
    body
}

fn flip(path: &Path, offset: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    assert!(offset < bytes.len(), "{} is too short", path.display());
    bytes[offset] ^= 0x5A;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_clean_directory_passes_and_a_running_servers_is_refused() {
    let dir = populated();
    let out = check(dir.path());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("no damage found"), "{stdout}");
    assert!(!stdout.contains("damaged:"), "{stdout}");
    // 6,000 rows in parts, 200 in the WAL, two series.
    assert!(stdout.contains("holding 6000 rows"), "{stdout}");
    assert!(stdout.contains("2 series, 5 WAL records"), "{stdout}");

    let server = Server::start(dir.path(), &[]);
    let out = check(dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("in use by another Strata process"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.stop().code(), Some(0));
}

#[test]
fn a_flipped_byte_in_any_file_is_found_and_the_file_named() {
    let dir = populated();
    let root = dir.path();
    let named = |name: &'static str| move |n: &str| n == name;
    let part = files(root, &|n| n.ends_with(".part"))[0].clone();
    let wal = longest(files(root, &|n| n.ends_with(".wal")));
    let cases: Vec<(&str, PathBuf, usize)> = vec![
        ("engine meta", root.join("ENGINE"), 40),
        ("catalog", root.join("catalog.json"), 70),
        ("manifest", files(root, &named("MANIFEST"))[0].clone(), 70),
        // The first data block (the header is 16 bytes).
        ("part block", part.clone(), 20),
        // The footer's row count.
        (
            "part footer",
            part.clone(),
            std::fs::metadata(&part).unwrap().len() as usize - 40,
        ),
        // The first record's body: records follow, so it is not a torn tail.
        (
            "series log",
            longest(files(root, &named("series.log"))),
            HEADER_LEN + FRAME_LEN + 2,
        ),
        ("WAL", wal.clone(), SEGMENT_HEADER_LEN + 8 + 2),
    ];
    for (what, original, offset) in cases {
        let copy = data_dir();
        copy_dir(root, copy.path());
        let damaged = copy.path().join(original.strip_prefix(root).unwrap());
        flip(&damaged, offset);
        let out = check(copy.path());
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{what}: {stdout}{}",
            text(&out.stderr)
        );
        let reported = stdout
            .lines()
            .find(|l| l.starts_with("damaged: "))
            .unwrap_or_else(|| panic!("{what}: nothing reported:\n{stdout}"));
        // The WAL names its segment; everything else its own file.
        assert!(
            reported.contains(&damaged.display().to_string()),
            "{what}: {reported}"
        );
        assert!(stdout.contains("1 damaged file"), "{what}: {stdout}");
    }
}

#[test]
fn torn_tails_and_a_leftover_part_are_notes_and_check_changes_nothing() {
    let dir = populated();
    let root = dir.path();
    let wal = files(root, &|n| n.ends_with(".wal"));
    let last_wal = wal.last().unwrap();
    let series_log = files(root, &|n| n == "series.log")[0].clone();
    for path in [last_wal, &series_log] {
        let mut bytes = std::fs::read(path).unwrap();
        bytes.extend_from_slice(&[7, 0, 0]);
        std::fs::write(path, bytes).unwrap();
    }
    let part = files(root, &|n| n.ends_with(".part"))[0].clone();
    let leftover = part.with_file_name("0000000000009999.part");
    std::fs::copy(&part, &leftover).unwrap();
    let sizes = |paths: &[&PathBuf]| -> Vec<u64> {
        paths
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .collect()
    };
    let watched = [last_wal, &series_log, &leftover];
    let before = sizes(&watched);

    let out = check(root);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("no damage found"), "{stdout}");
    let notes: Vec<&str> = stdout.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 3, "{stdout}");
    for (path, says) in [
        (last_wal, "torn tail of 3 bytes"),
        (&series_log, "torn tail of 3 bytes"),
        (&leftover, "not in the manifest"),
    ] {
        let path = path.display().to_string();
        assert!(
            notes.iter().any(|n| n.contains(&path) && n.contains(says)),
            "{path}: {says}:\n{stdout}"
        );
    }
    assert_eq!(sizes(&watched), before, "check changed a file");

    // The server starts on it: the tails are cut, the leftover removed, nothing lost.
    let server = Server::start(root, &[]);
    assert_eq!(server.stop().code(), Some(0));
    assert!(!leftover.exists());
    let out = check(root);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("note:"), "{stdout}");
    assert!(stdout.contains("holding 6200 rows"), "{stdout}");
}

/// A part whose footer is damaged is set aside when the server starts: it starts anyway,
/// logs the part, answers from the rest (here the WAL's rows), says so on `/health` and in
/// `/metrics`, and `strata check` lists the set-aside file afterwards.
#[test]
fn a_damaged_part_is_set_aside_and_the_server_answers_from_the_rest() {
    let dir = populated();
    let part = files(dir.path(), &|n| n.ends_with(".part"))[0].clone();
    flip(&part, std::fs::metadata(&part).unwrap().len() as usize - 40);

    let server = Server::start(dir.path(), &[]);
    assert!(
        server
            .stderr()
            .contains("damaged part set aside, its rows are not queried"),
        "{}",
        server.stderr()
    );
    let health = server.request("GET", "/health", &[], b"");
    assert_eq!(health.status, 200);
    let health = health.json();
    assert_eq!(health["status"], "warn", "{health}");
    let part_check = &health["checks"][0];
    assert_eq!(part_check["status"], "warn", "{health}");
    assert!(
        part_check["message"]
            .as_str()
            .unwrap()
            .contains("6000 rows"),
        "{health}"
    );
    assert_eq!(
        common::metric(&server.metrics(), "strata_parts_quarantined"),
        1.0
    );
    assert_eq!(
        sql_csv(server.http, "SELECT count(*) AS n FROM m"),
        "n\n200\n"
    );
    assert_eq!(server.stop().code(), Some(0));

    assert!(!part.exists());
    let out = check(dir.path());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("a damaged part the server set aside"),
        "{stdout}"
    );
}

/// A damaged block is found by the query that reads it: that query fails naming the part,
/// which is set aside then; the next query answers from the rest, and `/health` says so.
#[test]
fn a_part_found_damaged_by_a_query_is_set_aside_for_the_next_one() {
    let dir = populated();
    let part = files(dir.path(), &|n| n.ends_with(".part"))[0].clone();
    flip(&part, 20);
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        common::metric(&server.metrics(), "strata_parts_quarantined"),
        0.0
    );
    // An expression over every column: each block is decoded (no pre-aggregate answers).
    let (status, message) = sql_answer(server.http, "SELECT sum(n * v) AS s FROM m");
    assert_eq!(status, 500, "{message}");
    assert!(message.contains(&part.display().to_string()), "{message}");
    assert!(message.contains("the part was set aside"), "{message}");
    assert_eq!(
        sql_csv(server.http, "SELECT count(*) AS n FROM m"),
        "n\n200\n"
    );
    let health = server.request("GET", "/health", &[], b"").json();
    assert_eq!(health["status"], "warn", "{health}");
    assert!(server.stderr().contains("damaged part set aside"));
    assert_eq!(server.stop().code(), Some(0));
}

/// Damage in the middle of the WAL stops the start with a message naming the file and the
/// way out; `--wal-recovery skip-damaged` starts anyway, losing only the damaged record.
#[test]
fn wal_damage_stops_the_start_unless_skip_damaged_is_given() {
    let dir = populated();
    let wal = longest(files(dir.path(), &|n| n.ends_with(".wal")));
    flip(&wal, SEGMENT_HEADER_LEN + 8 + 2);

    let out = strata(&[
        "serve",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&wal.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("run with --wal-recovery skip-damaged"),
        "{stderr}"
    );

    let server = Server::start(dir.path(), &["--wal-recovery", "skip-damaged"]);
    let log = server.stderr();
    assert_eq!(
        log.matches("damaged WAL skipped (--wal-recovery skip-damaged)")
            .count(),
        1,
        "{log}"
    );
    let count = sql_csv(server.http, "SELECT count(*) AS n FROM m");
    let n: u64 = count.lines().nth(1).unwrap().parse().unwrap();
    // One request's record (its rows of this shard: 20 or 40) is lost; the rest is there.
    assert!((6_160..6_200).contains(&n), "{count}");
    assert_eq!(server.stop().code(), Some(0));
}

/// A lost catalog, lost manifests and damaged series logs stop the start with a message
/// naming `strata repair`; the real `strata repair` rebuilds them from the parts and the
/// WAL, `strata check` then passes, and the server answers as before.
#[test]
fn strata_repair_rebuilds_lost_metadata_and_the_answers_are_unchanged() {
    let dir = populated();
    let root = dir.path();
    let queries = [
        "SELECT count(*) AS n, sum(v) AS v, max(n) AS n_max FROM m",
        "SELECT host, count(*) AS n FROM m GROUP BY host ORDER BY host",
        "SELECT time, host, v, n FROM m ORDER BY time DESC, host LIMIT 5",
    ];
    let server = Server::start(root, &[]);
    let before: Vec<String> = queries.iter().map(|q| sql_csv(server.http, q)).collect();
    assert_eq!(server.stop().code(), Some(0));

    std::fs::remove_file(root.join("catalog.json")).unwrap();
    for manifest in files(root, &|n| n == "MANIFEST") {
        std::fs::remove_file(manifest).unwrap();
    }
    for log in files(root, &|n| n == "series.log") {
        if std::fs::metadata(&log).unwrap().len() > (HEADER_LEN + FRAME_LEN) as u64 {
            flip(&log, HEADER_LEN + FRAME_LEN + 2);
        }
    }
    let out = strata(&[
        "serve",
        "--data-dir",
        root.to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("strata repair"), "{stderr}");
    assert_eq!(check(root).status.code(), Some(1));

    let out = strata(&["repair", "--data-dir", root.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    // Both series hash to one shard: its manifest and series log, and the catalog. (The
    // other shard holds nothing, so its missing manifest is only written at the next start.)
    for rebuilt in [
        "MANIFEST: 2 parts holding 6200 rows",
        "series.log: 2 series (2 live, 0 retired)",
        "catalog.json: 1 tables",
    ] {
        assert!(stdout.contains(rebuilt), "{rebuilt}: {stdout}");
    }
    assert_eq!(stdout.matches("rebuilt: ").count(), 3, "{stdout}");
    let out = check(root);
    assert!(out.status.success(), "{}", text(&out.stdout));

    let server = Server::start(root, &[]);
    let after: Vec<String> = queries.iter().map(|q| sql_csv(server.http, q)).collect();
    assert_eq!(before, after);
    assert_eq!(server.stop().code(), Some(0));
    let out = strata(&["repair", "--data-dir", root.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("nothing to repair"),
        "{}",
        text(&out.stdout)
    );
}
