//! Tiering under SIGKILL: a server copying twenty days of two tables into a `file://` lake
//! (and releasing its local parts once a copy is committed) is killed at seeded random
//! moments, over and over, while late rows change partitions it has copied and released.
//! Once it has been let finish, the Delta log of each table, replayed from disk, names
//! every row Strata holds exactly once: the live files' row counts equal Strata's answers
//! (which read the lake), each shard partition is one copy (one origin in its file names),
//! never an old and a new one side by side, and no local part is left.
//! `STRATA_LAKE_CRASH_SEED` picks another sequence.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::lake::{Rng, delta_live_files, now_ns};
use common::{Server, data_dir, metric};

const DAY_NS: i64 = 86_400_000_000_000;
const DAYS: i64 = 20;
const KILLS: usize = 12;

fn first_day() -> i64 {
    let now = now_ns();
    (now / DAY_NS - DAYS - 1) * DAY_NS
}

/// `DAYS` days of `cpu` (four hosts) and `mem` (one), every 10 minutes.
fn rows(start: i64) -> String {
    let mut body = String::new();
    let mut time = start;
    let mut i = 0;
    while time < start + DAYS * DAY_NS {
        for host in ["a", "b", "c", "d"] {
            body.push_str(&format!("cpu,host={host} usage={i} {time}\n"));
        }
        body.push_str(&format!("mem,host=a used={i}i {time}\n"));
        time += 600_000_000_000;
        i += 1;
    }
    body
}

/// A file's origin from its name: (shard, partition) and (order, tombstone).
fn origin(path: &str) -> ((String, String), (String, String)) {
    let name = path.rsplit('/').next().unwrap();
    let parts: Vec<&str> = name.splitn(5, '_').collect();
    (
        (parts[0].to_string(), parts[1].to_string()),
        (parts[2].to_string(), parts[3].to_string()),
    )
}

/// The live files of the Delta table at `dir` with their row counts (adds minus removes,
/// replayed from its JSON commits).
fn live_files(dir: &Path) -> BTreeMap<String, u64> {
    let mut commits: Vec<_> = std::fs::read_dir(dir.join("_delta_log"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    commits.sort();
    delta_live_files(
        commits
            .iter()
            .map(|commit| std::fs::read_to_string(commit).unwrap()),
    )
}

/// Parquet files under `dir`, committed or not.
fn parquet_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|day| day.path().is_dir())
        .flat_map(|day| std::fs::read_dir(day.path()).unwrap().flatten())
        .filter(|f| f.path().extension().is_some_and(|e| e == "parquet"))
        .count()
}

fn count(server: &Server, q: &str) -> u64 {
    let answer = server
        .request(
            "GET",
            &format!("/query?db=db&q={}", q.replace(' ', "%20")),
            &[],
            b"",
        )
        .json();
    answer["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("{q}: {answer}"))
}

#[test]
fn sigkill_during_tiering_leaves_every_row_in_the_lake_once() {
    let seed = std::env::var("STRATA_LAKE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1a4e_u64);
    println!("seed {seed} (STRATA_LAKE_CRASH_SEED)");
    let mut rng = Rng(seed.max(1));
    let dir = data_dir();
    let data = dir.path().join("data");
    let lake = dir.path().join("lake");
    let start = first_day();
    let server = Server::start(&data, &[]);
    assert_eq!(server.post("/write?db=db", &rows(start)).status, 204);
    assert!(server.stop().success());
    let url = format!("file://{}", lake.display());
    let args = [
        "--lake",
        url.as_str(),
        "--tier-after",
        "1h",
        "--tier-interval",
        "50ms",
    ];
    let mut late_rows = 0;
    for kill in 0..KILLS {
        let server = Server::start(&data, &args);
        if kill % 2 == 1 {
            // Late rows into five random copied days; a clean stop flushes them into parts
            // (raising those partitions' orders), so the next server copies them again
            // and is killed while it does.
            let mut body = String::new();
            for _ in 0..5 {
                let day = rng.below(DAYS as u64) as i64;
                let time = start + day * DAY_NS + 1 + rng.below(1_000_000) as i64;
                for host in ["a", "b", "c", "d"] {
                    body.push_str(&format!("cpu,host={host} usage=-1 {time}\n"));
                    late_rows += 1;
                }
            }
            assert_eq!(server.post("/write?db=db", &body).status, 204);
            assert!(server.stop().success());
            continue;
        }
        std::thread::sleep(Duration::from_millis(rng.below(400)));
        server.kill9();
        // (How the kills landed, for the log: fewer live files than days is a first copy
        // cut short; files on disk beyond the live ones are replaced copies, kept until a
        // vacuum, and copies a kill cut short before their commit.)
        let table = lake.join("db/cpu");
        if table.join("_delta_log").exists() {
            let live = live_files(&table).len();
            let on_disk = parquet_files(&table);
            println!("killed {kill}: cpu {live} live files, {on_disk} on disk");
        }
    }
    // Let it finish: rounds until one commits nothing.
    let server = Server::start(&data, &args);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last = -1.0;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let metrics = server.metrics();
        let commits = metric(&metrics, "strata_lake_commits_total");
        assert_eq!(
            metric(&metrics, "strata_lake_failures_total"),
            0.0,
            "{}",
            server.stderr()
        );
        if commits == last && metric(&metrics, "strata_lake_rounds_total") >= 3.0 {
            break;
        }
        last = commits;
        assert!(Instant::now() < deadline, "tiering did not settle");
    }
    for (table, q) in [
        ("cpu", "SELECT count(usage) FROM cpu"),
        ("mem", "SELECT count(used) FROM mem"),
    ] {
        let live = live_files(&lake.join("db").join(table));
        let rows: u64 = live.values().sum();
        assert_eq!(rows, count(&server, q), "{table}: rows in the lake");
        let mut copies: BTreeMap<_, Vec<_>> = BTreeMap::new();
        for path in live.keys() {
            let (place, state) = origin(path);
            copies.entry(place).or_default().push(state);
        }
        for (place, states) in copies {
            assert!(
                states.windows(2).all(|w| w[0] == w[1]),
                "{table} {place:?}: two copies side by side: {states:?}"
            );
        }
    }
    assert_eq!(
        count(&server, "SELECT count(usage) FROM cpu"),
        (DAYS * 144 * 4) as u64 + late_rows
    );
    // Every row is in the lake: no local part is left (kills between a commit and the
    // release of the parts it holds included), and the queries above read the lake.
    assert_eq!(metric(&server.metrics(), "strata_parts"), 0.0);
    assert!(server.stop().success());
}
