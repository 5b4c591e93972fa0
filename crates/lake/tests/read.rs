//! Reads over released partitions: two engines take the same writes and deletes; one
//! tiers into a `file://` lake (its local parts of the cold days released) and reads them
//! back through [`LakeReader`]; the other keeps every row local. Every read — rows with tag
//! predicates, time ranges and field lists drawn from a seeded generator, the latest rows,
//! the earliest time — answers the same from both, before and after late writes and
//! deletes into the released days, and after a restart.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_lake::{Lake, LakeOptions, TierReport, parse_url};
use strata_lineproto::Precision;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine, ManualClock, ReadRequest};

const DAY_NS: i64 = 86_400_000_000_000;
const START_NS: i64 = 1_700_000_000_000_000_000 / DAY_NS * DAY_NS;
const DAYS: i64 = 4;

fn open(dir: &Path, clock: &Arc<ManualClock>, lake: Option<&Path>) -> Arc<Engine> {
    let engine = common::open(dir, clock);
    if let Some(root) = lake {
        common::read_from(&engine, root);
    }
    engine
}

/// A tiny seeded generator (xorshift), so that a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rows over `DAYS` days: 12 hosts of `cpu` in 3 racks (some rows lack `idle`, host h11
/// lacks the rack tag), every 5 min + 7 ns, and host `gone` on all days but the last; `mem`
/// for host h11 (the tags of a cpu series) every 25 min.
fn body() -> String {
    let mut body = String::new();
    let step = 5 * 60_000_000_000 + 7;
    let mut i = 0i64;
    while START_NS + i * step < START_NS + DAYS * DAY_NS {
        let time = START_NS + i * step;
        for host in 0..12 {
            let tags = if host == 11 {
                format!("host=h{host}")
            } else {
                format!("host=h{host},rack=r{}", host % 3)
            };
            if (i + host) % 4 == 0 {
                body.push_str(&format!("cpu,{tags} usage={}.5 {time}\n", i + host));
            } else {
                body.push_str(&format!(
                    "cpu,{tags} usage={}.25,idle={}i {time}\n",
                    i * host,
                    i - host
                ));
            }
        }
        // Another table with a series of the same tags as cpu's h11, less often.
        if i % 5 == 0 {
            body.push_str(&format!("mem,host=h11 free={i}i {time}\n"));
        }
        // A host that stopped reporting before the last day: once tiered, all its rows
        // are in the lake.
        if time < START_NS + (DAYS - 1) * DAY_NS {
            body.push_str(&format!("cpu,host=gone usage={}.75 {time}\n", i % 40));
        }
        i += 1;
    }
    body
}

fn write(engines: &[&Arc<Engine>], lines: &str) {
    for engine in engines {
        let report = engine
            .write_lines("db", lines.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors.first());
        engine.flush().unwrap();
    }
}

/// A random read of `cpu`.
fn request(engine: &Engine, rng: &mut Rng) -> ReadRequest {
    let table = engine.table("db", "cpu").unwrap().id;
    let span = DAYS * DAY_NS;
    let a = START_NS - DAY_NS / 2 + (rng.next() % (span as u64 + DAY_NS as u64)) as i64;
    let b = a + (rng.next() % (2 * DAY_NS as u64)) as i64 + 1;
    let predicate = match rng.below(5) {
        0 => None,
        1 => Some(TagPredicate::Eq {
            key: "host".into(),
            value: format!("h{}", rng.below(13)),
        }),
        2 => Some(TagPredicate::NotEq {
            key: "rack".into(),
            value: format!("r{}", rng.below(3)),
        }),
        3 => Some(TagPredicate::In {
            key: "host".into(),
            values: vec![format!("h{}", rng.below(12)), "h11".into()],
        }),
        _ => Some(TagPredicate::Eq {
            key: "rack".into(),
            value: "r1".into(),
        }),
    };
    let fields = match rng.below(3) {
        0 => None,
        1 => Some(vec![0]),
        _ => Some(vec![1]),
    };
    ReadRequest {
        table,
        predicate,
        start: a,
        end: b,
        fields,
    }
}

/// A series' tags and its rows, printed.
type Series = (Vec<(String, String)>, String);

/// Every series' rows (sorted by tags, so that shard and series order do not matter).
fn rows(engine: &Engine, request: &ReadRequest) -> Vec<Series> {
    printed(engine.read(request).unwrap())
}

/// Every series' latest row in the range, as [`rows`].
fn latest(engine: &Engine, request: &ReadRequest) -> Vec<Series> {
    printed(engine.latest(request).unwrap())
}

fn printed(series: Vec<strata_storage::SeriesRows>) -> Vec<Series> {
    let mut out: Vec<Series> = series
        .into_iter()
        .map(|s| (s.tags, format!("{:?}", s.data)))
        .collect();
    out.sort();
    out
}

/// Fails naming the first series that differs (whole answers are too long to print).
fn assert_same(found: &[Series], expected: &[Series], what: &str) {
    for (f, e) in found.iter().zip(expected) {
        assert_eq!(f.0, e.0, "{what}: series");
        assert!(
            f.1 == e.1,
            "{what}: {:?}: {} vs {}",
            f.0,
            f.1.len(),
            e.1.len()
        );
    }
    assert_eq!(found.len(), expected.len(), "{what}: series count");
}

/// The same answers from both engines to `reads` seeded reads.
fn assert_same_reads(tiered: &Engine, local: &Engine, seed: u64, reads: usize) {
    let mut rng = Rng(seed);
    for n in 0..reads {
        let request = request(local, &mut rng);
        let what = format!("read {n} (seed {seed}): {request:?}");
        assert_same(&rows(tiered, &request), &rows(local, &request), &what);
        let what = format!("latest {n} (seed {seed}): {request:?}");
        assert_same(&latest(tiered, &request), &latest(local, &request), &what);
    }
    // `mem` (its series has the tags of one of cpu's): its latest rows and all its rows.
    let mem = ReadRequest::all(local.table("db", "mem").unwrap().id);
    assert_same(&latest(tiered, &mem), &latest(local, &mem), "mem latest");
    assert_same(&rows(tiered, &mem), &rows(local, &mem), "mem rows");
    // The whole table, and the earliest time of an unbounded read.
    let all = ReadRequest::all(local.table("db", "cpu").unwrap().id);
    assert_same(&rows(tiered, &all), &rows(local, &all), "all rows");
    assert_eq!(tiered.earliest_time(&all), local.earliest_time(&all));
}

fn tier(runtime: &tokio::runtime::Runtime, root: &Path, engine: &Arc<Engine>) -> TierReport {
    let mut options = LakeOptions::new(parse_url(root.to_str().unwrap()).unwrap());
    options.tier_after = Duration::from_secs(86_400);
    let report = runtime.block_on(Lake::new(options).tier(engine));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    report
}

#[test]
fn released_partitions_read_the_same_as_local_ones() {
    let seed = std::env::var("STRATA_LAKE_READ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1a4e);
    let (tiered_dir, local_dir, root) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let tiered = open(tiered_dir.path(), &clock, Some(root.path()));
    let local = open(local_dir.path(), &clock, None);
    write(&[&tiered, &local], &body());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let parts_before = tiered.stats().parts;
    let first = tier(&runtime, root.path(), &tiered);
    assert!(first.parts_released > 0, "{first:?}");
    // Days 0..DAYS-1 (of both shards) left the disk; the last day is still local.
    let parts_after = tiered.stats().parts;
    assert!(
        parts_after < parts_before,
        "{parts_before} -> {parts_after}"
    );
    assert_eq!(
        tiered.cold_partitions(START_NS + (DAYS - 1) * DAY_NS).len(),
        2 * (DAYS - 1) as usize
    );
    assert_same_reads(&tiered, &local, seed, 60);
    // Nothing changed: the next round copies and releases nothing.
    let again = tier(&runtime, root.path(), &tiered);
    assert_eq!((again.commits, again.parts_released), (0, 0), "{again:?}");

    // A late write into a released day (an overwrite, a new series, and a row of `gone`
    // older than its rows in the lake: its only local row, so the latest-row cache holds
    // it, and must not answer with it), and a delete over another day: reads merge them
    // over the lake's rows before the next round...
    let late = START_NS + DAY_NS + 5 * 60_000_000_000 + 7;
    write(
        &[&tiered, &local],
        &format!(
            "cpu,host=h1,rack=r1 usage=-1.5 {late}\ncpu,host=new usage=7.5 {late}\n\
             cpu,host=gone usage=-2.25 {}\n",
            START_NS + 3
        ),
    );
    for engine in [&tiered, &local] {
        engine
            .delete(&DeleteRequest {
                table: engine.table("db", "cpu").unwrap().id,
                start: START_NS + 2 * DAY_NS + DAY_NS / 3,
                end: START_NS + 2 * DAY_NS + DAY_NS / 2,
                predicate: Some(TagPredicate::Eq {
                    key: "rack".into(),
                    value: "r2".into(),
                }),
            })
            .unwrap();
    }
    // `gone`'s latest row over the days it reported is its last one in the lake.
    let gone = ReadRequest {
        predicate: Some(TagPredicate::Eq {
            key: "host".into(),
            value: "gone".into(),
        }),
        start: START_NS,
        end: START_NS + (DAYS - 1) * DAY_NS,
        ..ReadRequest::all(local.table("db", "cpu").unwrap().id)
    };
    let answer = tiered.latest(&gone).unwrap();
    assert_eq!(answer.len(), 1);
    assert!(
        answer[0].data.times[0] > START_NS + 2 * DAY_NS,
        "{answer:?}"
    );
    assert_same(&latest(&tiered, &gone), &latest(&local, &gone), "gone");
    assert_same_reads(&tiered, &local, seed + 1, 40);
    // ... and after it, which copies those partitions again and releases the late part.
    let third = tier(&runtime, root.path(), &tiered);
    assert!(third.commits >= 2 && third.parts_released >= 1, "{third:?}");
    assert_same_reads(&tiered, &local, seed + 2, 40);
    // The delete is in the copy now: a purge retires its tombstone, and the rounds after
    // find the copies current (their files still name the retired delete, and reads must
    // keep finding those files, not the copies they replaced).
    tiered.compact().unwrap();
    assert!(tiered.catalog().tombstones().snapshot().is_empty());
    assert_same_reads(&tiered, &local, seed + 3, 20);
    let fourth = tier(&runtime, root.path(), &tiered);
    assert_eq!(fourth.commits, 0, "{fourth:?}");
    assert_same_reads(&tiered, &local, seed + 5, 20);

    // A restart reads the released partitions from the manifest's record alone.
    drop(tiered);
    let tiered = open(tiered_dir.path(), &clock, Some(root.path()));
    assert_same_reads(&tiered, &local, seed + 4, 40);

    // Without the lake, a read of a released day says where the rows are.
    drop(tiered);
    let blind = open(tiered_dir.path(), &clock, None);
    let all = ReadRequest::all(blind.table("db", "cpu").unwrap().id);
    let error = blind.read(&all).unwrap_err().to_string();
    assert!(
        error.contains("are in the lake") && error.contains("--lake"),
        "{error}"
    );
}
