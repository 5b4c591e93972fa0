//! End-to-end: `strata serve --lake file:///…` copies partitions that ended `--tier-after`
//! ago into Delta tables (log and Parquet files on disk), reports it on `/metrics` and
//! `/api/v1/status/flags`, keeps answering queries from its own parts, and refuses a lake
//! it cannot use by name.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::lake::{load_then_serve, now_ns, wait_for_metrics};
use common::{Server, data_dir, metric, strata};

const DAY_NS: i64 = 86_400_000_000_000;

/// Lines of two hosts, one row every 10 minutes from 3 days ago to 2 days ago.
fn old_rows() -> (String, usize) {
    let now = now_ns();
    let start = now - 3 * DAY_NS;
    let mut body = String::new();
    let mut rows = 0;
    let mut time = start;
    while time < start + DAY_NS {
        for host in ["a", "b"] {
            body.push_str(&format!("cpu,host={host} usage=1.5,n={rows}i {time}\n"));
            rows += 1;
        }
        time += 600_000_000_000;
    }
    (body, rows)
}

/// Every file under `dir`, as paths relative to it.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            } else {
                out.push(
                    entry
                        .path()
                        .strip_prefix(dir)
                        .unwrap()
                        .display()
                        .to_string(),
                );
            }
        }
    }
    out.sort();
    out
}

#[test]
fn cold_partitions_reach_the_lake_and_metrics_say_so() {
    let dir = data_dir();
    let data = dir.path().join("data");
    let lake = dir.path().join("lake");
    let (body, rows) = old_rows();
    let url = format!("file://{}", lake.display());
    let server = load_then_serve(
        &data,
        &body,
        &[
            "--lake",
            &url,
            "--tier-after",
            "1h",
            "--tier-interval",
            "1s",
        ],
    );
    let metrics = wait_for_metrics("tiered", &server, Duration::from_secs(60), |m| {
        metric(m, "strata_lake_rows_tiered_total") as usize >= rows
    });
    assert_eq!(
        metric(&metrics, "strata_lake_rows_tiered_total") as usize,
        rows
    );
    assert_eq!(metric(&metrics, "strata_lake_failures_total"), 0.0);
    assert!(metric(&metrics, "strata_lake_commits_total") >= 1.0);
    assert!(metric(&metrics, "strata_lake_last_commit_timestamp_seconds") > 0.0);

    let files = files_under(&lake.join("db").join("cpu"));
    assert!(
        files
            .iter()
            .any(|f| f == "_delta_log/00000000000000000000.json"),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.starts_with("day=") && f.ends_with(".parquet")),
        "{files:?}"
    );

    // The server keeps its own rows: queries answer as before.
    let answer = server.request(
        "GET",
        "/query?db=db&q=SELECT%20count(n)%20FROM%20cpu",
        &[],
        b"",
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(
        answer.json()["results"][0]["series"][0]["values"][0][1],
        rows as i64,
        "{}",
        answer.text()
    );
    let flags = server
        .request("GET", "/api/v1/status/flags", &[], b"")
        .json();
    assert_eq!(flags["data"]["lake"], url.as_str());
    assert_eq!(flags["data"]["tier-after"], "1h");
    let health = server.request("GET", "/health", &[], b"").json();
    assert_eq!(health["status"], "pass", "{health}");

    // A later round finds nothing new: no commit.
    let commits = metric(&metrics, "strata_lake_commits_total");
    std::thread::sleep(Duration::from_millis(2500));
    let later = server.metrics();
    assert!(
        metric(&later, "strata_lake_rounds_total") > metric(&metrics, "strata_lake_rounds_total")
    );
    assert_eq!(metric(&later, "strata_lake_commits_total"), commits);
    assert!(server.stop().success());
}

#[test]
fn a_lake_it_cannot_use_is_refused_by_name() {
    let dir = data_dir();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--lake", "s3:///prefix"], "names no bucket"),
        (&["--lake", "ftp://host/x"], "unknown lake scheme"),
        (&["--tier-after", "1d"], "need a lake"),
        (&["--lake-read-only"], "need a lake"),
        (
            &["--lake", "file:///tmp/lake", "--tier-after", "0s"],
            "tier after \"0s\"",
        ),
    ];
    for (args, named) in cases {
        let mut all = vec!["serve", "--data-dir", data, "--http", "127.0.0.1:0"];
        all.extend(["--pg", "off"]);
        all.extend(args);
        let out = strata(&all);
        assert!(!out.status.success(), "{args:?} started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
    // A read-only query server never takes over a server's data directory.
    let server = Server::start(std::path::Path::new(data), &[]);
    assert_eq!(server.post("/write?db=db", "cpu v=1 1\n").status, 204);
    assert!(server.stop().success());
    let lake = dir.path().join("lake");
    let url = format!("file://{}", lake.display());
    let out = strata(&[
        "serve",
        "--data-dir",
        data,
        "--http",
        "127.0.0.1:0",
        "--pg",
        "off",
        "--lake",
        &url,
        "--lake-read-only",
    ]);
    assert!(
        !out.status.success(),
        "read-only on a server's data started"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs an empty directory"), "{stderr}");
    let server = Server::start(std::path::Path::new(data), &[]);
    let answer = server.request(
        "GET",
        "/query?db=db&q=SELECT%20count(v)%20FROM%20cpu",
        &[],
        b"",
    );
    assert_eq!(
        answer.json()["results"][0]["series"][0]["values"][0][1],
        1,
        "{}",
        answer.text()
    );
    assert!(server.stop().success());
}
