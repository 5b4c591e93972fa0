//! Deletes against a model: seeded random deletes (time ranges × tag predicates)
//! interleaved with writes, flushes, maintenance, compactions and restarts; after every
//! step the rows every read path returns (scans, aggregate summaries, latest rows) must
//! equal a plain in-memory model, and once maintenance has run no tombstone may remain —
//! so the deleted rows are gone from the files, not just hidden. A second test kills a
//! child process with SIGKILL while it writes and deletes. Rerun one seed with
//! `STRATA_DELETE_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Model, Rng, engine_contents, first_difference, for_each_seed};
use std::sync::Arc;
use strata_lineproto::Precision;
use strata_storage::model::Value;
use strata_storage::series::TagPredicate;

use strata_storage::{
    DeleteRequest, Engine, EngineOptions, ManualClock, PURGE_DELAY_NS, ReadRequest, StorageError,
    WalSync,
};

const MINUTE_NS: i64 = 60_000_000_000;
const HOUR_NS: i64 = 60 * MINUTE_NS;
const START_NS: i64 = 1_700_000_000_000_000_000 / HOUR_NS * HOUR_NS;
const DB: &str = "db";
const TABLES: [&str; 2] = ["cpu", "mem"];

fn options(dir: &Path, clock: &Arc<ManualClock>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.join("a"), dir.join("b")],
        shards: 3,
        wal_sync: WalSync::None,
        memtable_bytes_max: 8 << 10,
        partition_duration: Duration::from_secs(3600),
        merge_min_parts: 3,
        background: false,
        clock: Arc::clone(clock) as _,
        ..EngineOptions::default()
    }
}

/// Opens the engine again after it was closed. Another test of this binary spawns child
/// processes; a child holds copies of this process's open files from its fork until its
/// exec, the directory lock's included, so a reopen in that window sees the lock held (by
/// this process's own pid). Retried for up to 5 s; any other error, or a lock held longer,
/// fails.
fn reopen(dir: &Path, clock: &Arc<ManualClock>) -> Engine {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match Engine::open(options(dir, clock)) {
            Ok((engine, _)) => return engine,
            Err(StorageError::InUse { owner, .. })
                if owner == Some(std::process::id().to_string())
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("reopen: {e}"),
        }
    }
}

/// Maintenance once the purge delay has passed: every tombstone is purged and retired.
fn maintain_after_delay(engine: &Engine, clock: &ManualClock) {
    clock.advance(Duration::from_nanos(PURGE_DELAY_NS as u64));
    engine.maintain().unwrap();
}

/// Whether a series with sorted `tags` matches `predicate` (the index's meaning: `NotEq`
/// also matches series without the key).
fn matches(tags: &[(String, String)], predicate: &TagPredicate) -> bool {
    let value = |key: &str| tags.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
    match predicate {
        TagPredicate::Eq { key, value: v } => value(key) == Some(v.as_str()),
        TagPredicate::NotEq { key, value: v } => value(key) != Some(v.as_str()),
        TagPredicate::In { key, values } => {
            value(key).is_some_and(|x| values.iter().any(|v| v == x))
        }
        TagPredicate::And(all) => all.iter().all(|p| matches(tags, p)),
        TagPredicate::Or(any) => any.iter().any(|p| matches(tags, p)),
    }
}

/// A random predicate over `host` (h0..h5) and `dc` (d0, d1; some series lack it).
fn random_predicate(rng: &mut Rng) -> Option<TagPredicate> {
    let host = |rng: &mut Rng| format!("h{}", rng.below(6));
    match rng.below(6) {
        0 => None,
        1 => Some(TagPredicate::Eq {
            key: "host".into(),
            value: host(rng),
        }),
        2 => Some(TagPredicate::In {
            key: "host".into(),
            values: vec![host(rng), host(rng)],
        }),
        3 => Some(TagPredicate::NotEq {
            key: "dc".into(),
            value: format!("d{}", rng.below(2)),
        }),
        4 => Some(TagPredicate::And(vec![
            TagPredicate::Eq {
                key: "dc".into(),
                value: format!("d{}", rng.below(2)),
            },
            TagPredicate::NotEq {
                key: "host".into(),
                value: host(rng),
            },
        ])),
        _ => Some(TagPredicate::Or(vec![
            TagPredicate::Eq {
                key: "host".into(),
                value: host(rng),
            },
            TagPredicate::Eq {
                key: "dc".into(),
                value: "d1".into(),
            },
        ])),
    }
}

struct Run {
    rng: Rng,
    model: Model,
}

impl Run {
    fn write(&mut self, engine: &Engine) {
        let mut body = String::new();
        for _ in 0..1 + self.rng.below(50) {
            let table = TABLES[self.rng.below(2) as usize];
            let mut tags = vec![("host".to_string(), format!("h{}", self.rng.below(6)))];
            if self.rng.chance(70) {
                tags.push(("dc".to_string(), format!("d{}", self.rng.below(2))));
            }
            let time = START_NS + self.rng.below(180) as i64 * MINUTE_NS;
            let value = self.rng.below(1000) as i64;
            let tag_text: Vec<String> = tags.iter().map(|(k, v)| format!(",{k}={v}")).collect();
            body.push_str(&format!("{table}{} v={value}i {time}\n", tag_text.concat()));
            tags.sort();
            let row = self
                .model
                .entry((table.to_string(), tags))
                .or_default()
                .entry(time)
                .or_default();
            row.insert("v".to_string(), Value::Integer(value));
        }
        let report = engine
            .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
    }

    fn delete(&mut self, engine: &Engine) {
        let table = TABLES[self.rng.below(2) as usize];
        let start = START_NS + self.rng.below(200) as i64 * MINUTE_NS - 10 * MINUTE_NS;
        let end = start + self.rng.below(90) as i64 * MINUTE_NS;
        let predicate = random_predicate(&mut self.rng);
        let Some(schema) = engine.table(DB, table) else {
            return;
        };
        engine
            .delete(&DeleteRequest {
                table: schema.id,
                start,
                end,
                predicate: predicate.clone(),
            })
            .unwrap();
        for ((t, tags), rows) in self.model.iter_mut() {
            if t == table && predicate.as_ref().is_none_or(|p| matches(tags, p)) {
                rows.retain(|time, _| *time < start || *time >= end);
            }
        }
        self.model.retain(|_, rows| !rows.is_empty());
    }

    /// The series index holds every series of the model, and, once maintenance or a
    /// compaction has purged every delete (`exact`), no other: a series whose every row is
    /// gone has left it.
    fn check_series(&self, engine: &Engine, step: &str, exact: bool) {
        let mut live = 0;
        for table in TABLES {
            let Some(schema) = engine.table(DB, table) else {
                continue;
            };
            let indexed: BTreeSet<Vec<(String, String)>> =
                engine.series_tags(schema.id).into_iter().collect();
            live += indexed.len();
            let expected: BTreeSet<Vec<(String, String)>> = self
                .model
                .keys()
                .filter(|(t, _)| t == table)
                .map(|(_, tags)| tags.clone())
                .collect();
            if exact {
                assert_eq!(indexed, expected, "{step}: series of {table}");
            } else {
                let missing: Vec<_> = expected.difference(&indexed).collect();
                assert!(missing.is_empty(), "{step}: {table} lacks {missing:?}");
            }
        }
        assert_eq!(engine.stats().series, live as u64, "{step}: live series");
    }

    /// Scans, summaries and latest rows all agree with the model.
    fn check(&self, engine: &Engine, step: &str) {
        let actual = engine_contents(engine, DB);
        assert!(
            actual == self.model,
            "{step}: {}",
            first_difference(&self.model, &actual)
        );
        for table in TABLES {
            let Some(schema) = engine.table(DB, table) else {
                continue;
            };
            let expected: BTreeMap<Vec<(String, String)>, (usize, i64)> = self
                .model
                .iter()
                .filter(|((t, _), _)| t == table)
                .map(|((_, tags), rows)| (tags.clone(), (rows.len(), *rows.keys().last().unwrap())))
                .collect();
            let request = ReadRequest::all(schema.id);
            let mut counted = BTreeMap::new();
            for shard in 0..engine.shard_count() {
                for summary in engine.summarize_shard(shard, &request, &|_| true).unwrap() {
                    let rows: usize = summary
                        .chunks
                        .iter()
                        .map(|c| c.rows as usize)
                        .sum::<usize>()
                        + summary.rest.rows();
                    counted.insert(summary.tags.clone(), rows);
                }
            }
            let expected_counts: BTreeMap<_, _> = expected
                .iter()
                .map(|(tags, (n, _))| (tags.clone(), *n))
                .collect();
            assert_eq!(counted, expected_counts, "{step}: summaries of {table}");
            let latest: BTreeMap<_, _> = engine
                .latest(&request)
                .unwrap()
                .into_iter()
                .map(|s| (s.tags, s.data.times[0]))
                .collect();
            let expected_latest: BTreeMap<_, _> = expected
                .iter()
                .map(|(tags, (_, last))| (tags.clone(), *last))
                .collect();
            assert_eq!(latest, expected_latest, "{step}: latest rows of {table}");
        }
    }
}

fn run(seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 4 * HOUR_NS));
    let mut run = Run {
        rng: Rng::new(seed),
        model: Model::new(),
    };
    let (mut engine, _) = Engine::open(options(dir.path(), &clock)).unwrap();
    for step in 0..70 {
        let name = match run.rng.below(100) {
            0..=39 => {
                run.write(&engine);
                "write"
            }
            40..=59 => {
                run.delete(&engine);
                "delete"
            }
            60..=69 => {
                engine.flush().unwrap();
                "flush"
            }
            70..=74 => {
                // Within the purge delay: tombstones wait, rows stay hidden.
                engine.maintain().unwrap();
                "maintain"
            }
            75..=79 => {
                maintain_after_delay(&engine, &clock);
                assert_eq!(engine.pending_tombstones(), 0, "maintenance retires them");
                "maintain after the purge delay"
            }
            80..=86 => {
                engine.compact().unwrap();
                assert_eq!(engine.pending_tombstones(), 0, "compaction purges at once");
                "compact"
            }
            _ => {
                engine.close().unwrap();
                engine = reopen(dir.path(), &clock);
                "restart"
            }
        };
        // Deleted rows never come back, even when a latest-row cache was built before.
        let step = format!("seed {seed}, step {step} ({name})");
        run.check(&engine, &step);
        let purged = matches!(name, "compact" | "maintain after the purge delay");
        run.check_series(&engine, &step, purged);
    }
    // With every tombstone retired, nothing hides rows: the files hold exactly the model.
    maintain_after_delay(&engine, &clock);
    assert_eq!(engine.pending_tombstones(), 0);
    engine.close().unwrap();
    let engine = reopen(dir.path(), &clock);
    run.check(&engine, &format!("seed {seed}, reopened after retiring"));
    run.check_series(
        &engine,
        &format!("seed {seed}, reopened after retiring"),
        true,
    );
}

#[test]
fn deletes_match_a_model_through_every_read_path() {
    for_each_seed("STRATA_DELETE_SEED", 1..=6, run);
}

/// A row written after a delete, inside its range, is kept; one written before is not,
/// whether it was in a part or a memtable.
#[test]
fn a_delete_removes_only_rows_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 4 * HOUR_NS));
    let engine = reopen(dir.path(), &clock);
    let write = |lines: &str| {
        engine
            .write_lines(DB, lines.as_bytes(), Precision::Nanoseconds)
            .unwrap();
    };
    write(&format!(
        "cpu,host=a v=1i {START_NS}\ncpu,host=b v=1i {START_NS}\n"
    ));
    engine.flush().unwrap();
    write(&format!("cpu,host=a v=2i {}\n", START_NS + MINUTE_NS));
    let table = engine.table(DB, "cpu").unwrap().id;
    let request = DeleteRequest {
        table,
        start: START_NS,
        end: START_NS + HOUR_NS,
        predicate: Some(TagPredicate::Eq {
            key: "host".into(),
            value: "a".into(),
        }),
    };
    engine.delete(&request).unwrap();
    write(&format!("cpu,host=a v=3i {}\n", START_NS + 2 * MINUTE_NS));
    let times = |engine: &Engine| {
        let contents = engine_contents(engine, DB);
        contents
            .iter()
            .map(|((_, tags), rows)| (tags[0].1.clone(), rows.keys().copied().collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    };
    let expected = vec![
        ("a".to_string(), vec![START_NS + 2 * MINUTE_NS]),
        ("b".to_string(), vec![START_NS]),
    ];
    assert_eq!(times(&engine), expected);
    assert_eq!(engine.pending_tombstones(), 1);
    // Merging the deleted rows' part with the later one keeps the later row only.
    engine.flush().unwrap();
    engine.maintain().unwrap();
    assert_eq!(
        engine.pending_tombstones(),
        1,
        "the purge waits for the delay"
    );
    assert_eq!(times(&engine), expected);
    maintain_after_delay(&engine, &clock);
    assert_eq!(engine.pending_tombstones(), 0);
    assert_eq!(times(&engine), expected);
}

const CRASH_DB: &str = "crash";

/// Operation `i` of the crash child: a write of 10 series at minute `i`, or every fifth, a
/// delete of one host's rows in the last 20 minutes.
fn crash_op(i: u64) -> Result<String, (String, i64, i64)> {
    if i % 5 == 4 {
        let host = format!("h{}", (i / 5) % 10);
        let end = START_NS + i as i64 * MINUTE_NS;
        return Err((host, end - 20 * MINUTE_NS, end));
    }
    let time = START_NS + i as i64 * MINUTE_NS;
    Ok((0..10)
        .map(|s| format!("cpu,host=h{s} v={i}i {time}\n"))
        .collect())
}

fn crash_options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.join("data")],
        shards: 2,
        wal_sync: WalSync::Always,
        memtable_bytes_max: 16 << 10,
        merge_min_parts: 2,
        partition_duration: Duration::from_secs(3600),
        ..EngineOptions::default()
    }
}

/// The child: runs operations from where the last one left off, logging each one's index
/// once it is acknowledged, until killed.
fn crash_child(dir: &Path) {
    let (engine, _) = Engine::open(crash_options(dir)).unwrap();
    let log_path = dir.join("acked");
    let done = std::fs::read_to_string(&log_path)
        .unwrap_or_default()
        .lines()
        .count() as u64;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .unwrap();
    for i in done..done + 100_000 {
        match crash_op(i) {
            Ok(body) => {
                engine
                    .write_lines(CRASH_DB, body.as_bytes(), Precision::Nanoseconds)
                    .unwrap();
            }
            Err((host, start, end)) => {
                let table = engine.table(CRASH_DB, "cpu").unwrap().id;
                engine
                    .delete(&DeleteRequest {
                        table,
                        start,
                        end,
                        predicate: Some(TagPredicate::Eq {
                            key: "host".into(),
                            value: host,
                        }),
                    })
                    .unwrap();
            }
        }
        log.write_all(format!("{i}\n").as_bytes()).unwrap();
    }
}

/// host → times the engine must hold after operations `0..ops`.
fn crash_model(ops: u64) -> BTreeMap<String, Vec<i64>> {
    let mut model: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for i in 0..ops {
        match crash_op(i) {
            Ok(_) => {
                for s in 0..10 {
                    model
                        .entry(format!("h{s}"))
                        .or_default()
                        .push(START_NS + i as i64 * MINUTE_NS);
                }
            }
            Err((host, start, end)) => {
                if let Some(times) = model.get_mut(&host) {
                    times.retain(|t| *t < start || *t >= end);
                }
            }
        }
    }
    model
}

#[test]
fn sigkill_keeps_every_acknowledged_delete_and_write() {
    if let Ok(dir) = std::env::var("STRATA_DELETE_CRASH_CHILD") {
        crash_child(Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(7);
    for round in 0..6 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                // The child runs this test alone; its name as libtest lists it.
                "delete::sigkill_keeps_every_acknowledged_delete_and_write",
                "--nocapture",
            ])
            .env("STRATA_DELETE_CRASH_CHILD", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + rng.below(400)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();

        let acked = std::fs::read_to_string(dir.path().join("acked"))
            .unwrap_or_default()
            .lines()
            .count() as u64;
        let (engine, _) = Engine::open(crash_options(dir.path())).expect("reopen after kill");
        let mut actual: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        if let Some(schema) = engine.table(CRASH_DB, "cpu") {
            for series in engine.read(&ReadRequest::all(schema.id)).unwrap() {
                actual
                    .entry(series.tags[0].1.clone())
                    .or_default()
                    .extend(series.data.times.iter().copied());
            }
        }
        actual.values_mut().for_each(|t| t.sort_unstable());
        actual.retain(|_, t| !t.is_empty());
        // The operation in flight at the kill may have taken effect, not at all, or (a
        // write, whose rows go to several shards) in part; a delete is all or nothing.
        let rows = |model: BTreeMap<String, Vec<i64>>| -> BTreeSet<(String, i64)> {
            model
                .into_iter()
                .flat_map(|(host, times)| times.into_iter().map(move |t| (host.clone(), t)))
                .collect()
        };
        let actual = rows(actual);
        let (before, after) = (rows(crash_model(acked)), rows(crash_model(acked + 1)));
        let (least, most) = if before.is_subset(&after) {
            (before, after)
        } else {
            (after, before)
        };
        let in_between = least.is_subset(&actual) && actual.is_subset(&most);
        let whole_if_delete = crash_op(acked).is_ok() || actual == least || actual == most;
        assert!(
            in_between && whole_if_delete,
            "round {round}: after {acked} acknowledged operations the engine holds {} rows; \
             expected between {} and {} (missing: {:?}; extra: {:?})",
            actual.len(),
            least.len(),
            most.len(),
            least.difference(&actual).take(5).collect::<Vec<_>>(),
            actual.difference(&most).take(5).collect::<Vec<_>>(),
        );
        // The next child resumes at the first unacknowledged operation; redoing the one
        // that was in flight is harmless (writes and deletes here are idempotent).
        engine.close().unwrap();
    }
}

/// Parts flushed by deletes still merge while tombstones wait for their purge, even when
/// their sizes are too uneven for a similar-size run (each delete flushes whatever the
/// memtable holds): a crowded partition merges its cheapest window.
#[test]
fn parts_flushed_by_deletes_still_merge() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 4 * HOUR_NS));
    let (engine, _) = Engine::open(EngineOptions {
        shards: 1,
        ..options(dir.path(), &clock)
    })
    .unwrap();
    for round in 0..8i64 {
        // 120 rows, then 1 row, then 120, …: sizes 120x apart.
        let rows = if round % 2 == 0 { 120 } else { 1 };
        let body: String = (0..rows)
            .map(|i| {
                let time = START_NS + (round * 120 + i) * MINUTE_NS / 60;
                format!("cpu,host=h{} v={round}i {time}\n", i % 6)
            })
            .collect();
        engine
            .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        let table = engine.table(DB, "cpu").unwrap().id;
        engine
            .delete(&DeleteRequest {
                table,
                start: START_NS - HOUR_NS,
                end: START_NS - HOUR_NS + 1,
                predicate: None,
            })
            .unwrap();
    }
    let before = engine.stats();
    assert_eq!(before.parts, 8, "one part per delete's flush: {before:?}");
    engine.maintain().unwrap();
    let after = engine.stats();
    assert!(after.merges > before.merges, "{before:?} {after:?}");
    assert!(after.parts < 6, "{after:?}");
    assert!(engine.pending_tombstones() > 0, "the purge waits");
}
