//! Shared by the lake's end-to-end tests: rows loaded and flushed before a server with a
//! lake starts, waiting on its `strata_lake_*` metrics, and replaying a Delta log.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Server;

/// Loads `body` into database `db` of a server on `data` and stops it cleanly (which
/// flushes the rows into parts), then starts a server on `data` with `lake_args`.
pub fn load_then_serve(data: &Path, body: &str, lake_args: &[&str]) -> Server {
    let server = Server::start(data, &[]);
    assert_eq!(server.post("/write?db=db", body).status, 204);
    assert!(server.stop().success());
    Server::start(data, lake_args)
}

/// Polls `server`'s `/metrics` every 200 ms until `done` accepts them (returned), failing
/// after `limit` with the `strata_lake_*` lines and the server's log.
pub fn wait_for_metrics(
    what: &str,
    server: &Server,
    limit: Duration,
    mut done: impl FnMut(&str) -> bool,
) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let metrics = server.metrics();
        if done(&metrics) {
            return metrics;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not in {limit:?}\n{}\n{}",
            metrics
                .lines()
                .filter(|l| l.starts_with("strata_lake"))
                .collect::<Vec<_>>()
                .join("\n"),
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The live files of a Delta table with their row counts, replayed from the text of its
/// JSON commits in version order (adds minus removes). A file added twice, or removed
/// while not live, fails the test.
pub fn delta_live_files(commits: impl IntoIterator<Item = String>) -> BTreeMap<String, u64> {
    let mut live = BTreeMap::new();
    for commit in commits {
        for line in commit.lines() {
            let action: Value = serde_json::from_str(line).unwrap();
            if let Some(add) = action.get("add") {
                let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
                let path = add["path"].as_str().unwrap().to_string();
                let previous = live.insert(path.clone(), stats["numRecords"].as_u64().unwrap());
                assert!(previous.is_none(), "{path} added twice");
            }
            if let Some(remove) = action.get("remove") {
                let path = remove["path"].as_str().unwrap();
                assert!(live.remove(path).is_some(), "{path} removed but not live");
            }
        }
    }
    live
}

/// xorshift64*: a seeded sequence, so that a failure can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The wall clock in nanoseconds since the epoch (servers in these tests use it).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}
