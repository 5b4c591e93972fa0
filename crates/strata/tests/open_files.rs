//! A server whose history holds more part files than it may open: each day is a partition
//! of each shard, so months of data are hundreds of parts. Under a limit of open files far
//! below that (`prlimit --nofile`), writes, clean stops, restarts and queries over every
//! part go on, with every row there and no more part files open than half the limit.
//! Before part files were kept within a budget, the flush that passed the limit failed
//! with "Too many open files" and every write after it was refused.
//!
//! The same server keeps parts' indexes within `--index-memory` (16 KiB here, a few
//! parts' worth): the rest are read again from their files when queried.
//!
//! Also: `strata serve` raises its soft limit of open files to the hard one.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use common::{Server, data_dir, metric};

/// The limit the server runs under, soft and hard: part files get half.
const NOFILE: u64 = 96;
const HOSTS: u64 = 8;
const DAY_NS: i64 = 86_400_000_000_000;
/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000_000_000;

/// Hourly rows of every host for days `first..first + days`; `v` is a scrambled integer so
/// that sums check every value.
fn days(first: i64, days: i64) -> String {
    let mut body = String::new();
    for day in first..first + days {
        for hour in 0..24 {
            for host in 0..HOSTS {
                let t = T0 + day * DAY_NS + hour * 3_600_000_000_000;
                body.push_str(&format!("m,host=h{host} v={}i {t}\n", value(t, host)));
            }
        }
    }
    body
}

fn value(t: i64, host: u64) -> u64 {
    ((t as u64 / 1_000_000_000) ^ (host << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 44
}

/// Rows and the sum of `v` per host, as the test wrote them for days `0..days`.
fn expected(days: i64) -> Vec<(String, u64, u64)> {
    (0..HOSTS)
        .map(|host| {
            let mut sum = 0;
            for day in 0..days {
                for hour in 0..24 {
                    sum += value(T0 + day * DAY_NS + hour * 3_600_000_000_000, host);
                }
            }
            (format!("h{host}"), days as u64 * 24, sum)
        })
        .collect()
}

/// Rows and the sum of `v` per host, read from every part through InfluxQL (the condition
/// on `v` makes the engine read the values rather than answer from pre-aggregates).
fn stored(server: &Server) -> Vec<(String, u64, u64)> {
    let statement = "SELECT count(v), sum(v) FROM m WHERE v >= 0 GROUP BY host";
    let encoded: String = statement
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let response = server.request("GET", &format!("/query?db=db&q={encoded}"), &[], b"");
    assert_eq!(response.status, 200, "{}", response.text());
    let answer = response.json();
    answer["results"][0]["series"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|series| {
            let values = &series["values"][0];
            (
                series["tags"]["host"].as_str().unwrap().to_owned(),
                values[1].as_u64().unwrap(),
                values[2].as_u64().unwrap(),
            )
        })
        .collect()
}

fn start_limited(data: &Path) -> Server {
    let limit = format!("--nofile={NOFILE}:{NOFILE}");
    Server::start_under(
        &["prlimit", &limit, "--"],
        data,
        &["--index-memory", "16K"],
        &[],
    )
}

fn part_files(data: &Path) -> usize {
    let mut count = 0;
    let mut dirs = vec![data.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "part") {
                count += 1;
            }
        }
    }
    count
}

/// Files the server process has open, from /proc.
fn open_files(server: &Server) -> usize {
    std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
        .unwrap()
        .count()
}

/// Checks the rows, and that part files stay within half the limit.
fn check(server: &Server, days: i64) {
    assert_eq!(stored(server), expected(days));
    let metrics = server.metrics();
    let budget = metric(&metrics, "strata_part_files_open_max");
    assert_eq!(budget, (NOFILE / 2) as f64);
    assert!(metric(&metrics, "strata_part_files_open") <= budget);
    assert!(open_files(server) < NOFILE as usize);
    let index_budget = metric(&metrics, "strata_part_index_bytes_max");
    assert_eq!(index_budget, 16384.0);
    assert!(metric(&metrics, "strata_part_index_bytes") <= index_budget);
    assert!(metric(&metrics, "strata_part_index_reloads_total") > 0.0);
}

#[test]
fn months_of_parts_under_a_low_limit_of_open_files() {
    let dir = data_dir();
    let data = dir.path().join("data");

    let server = start_limited(&data);
    assert!(
        server
            .stderr()
            .contains(&format!("open files: limit {NOFILE}")),
        "{}",
        server.stderr()
    );
    // 100 days in ten requests: a flush at the clean stop writes a part per day per shard.
    for first in (0..100).step_by(10) {
        let response = server.post("/write?db=db", &days(first, 10));
        assert_eq!(response.status, 204, "{}", response.text());
    }
    assert!(server.stop().success());
    let parts = part_files(&data);
    assert!(
        parts >= 190,
        "{parts} part files: the test needs more than the limit"
    );

    // Restart: every part is opened and checked, and at most half the limit stays open.
    let server = start_limited(&data);
    check(&server, 100);
    let reopens = metric(&server.metrics(), "strata_part_file_reopens_total");
    assert!(reopens > 0.0, "every part was read without one reopened");

    // Writes go on, and a second stop and restart flush and open them too.
    let response = server.post("/write?db=db", &days(100, 30));
    assert_eq!(response.status, 204, "{}", response.text());
    check(&server, 130);
    assert!(server.stop().success());
    assert!(part_files(&data) > parts);
    let server = start_limited(&data);
    check(&server, 130);
    let log = server.stderr();
    assert!(server.stop().success());
    assert!(!log.contains("Too many open files"), "{log}");
}

#[test]
fn the_soft_limit_is_raised_to_the_hard_one() {
    let dir = data_dir();
    let server = Server::start_under(
        &["prlimit", "--nofile=200:4096", "--"],
        &dir.path().join("data"),
        &[],
        &[],
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[3..5],
        ["4096", "4096"],
        "{line}"
    );
    assert!(
        server
            .stderr()
            .contains("open files: limit raised from 200 to the hard limit 4096"),
        "{}",
        server.stderr()
    );
    assert_eq!(
        metric(&server.metrics(), "strata_part_files_open_max"),
        2048.0
    );
    assert!(server.stop().success());
}
