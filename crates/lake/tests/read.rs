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

use common::reads::{
    DAY_NS, DAYS, Rng, START_NS, assert_same, body, latest, request, rows, tier, write,
};
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine, ManualClock, ReadRequest};

fn open(dir: &Path, clock: &Arc<ManualClock>, lake: Option<&Path>) -> Arc<Engine> {
    let engine = common::open(dir, clock);
    if let Some(root) = lake {
        common::read_from(&engine, root);
    }
    engine
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
