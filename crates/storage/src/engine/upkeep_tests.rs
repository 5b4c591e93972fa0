//! A shard's two upkeep threads. A merge writes its part without the manifest lock: a
//! flush publishes meanwhile, and a merge whose run another rewrite replaced meanwhile
//! throws its part away (the shard's test hook runs the other work between the merge's
//! write and its publication). Merges run at a lower CPU priority than flushes. A stop
//! ends a backlog of merges after the one under way.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use strata_lineproto::Precision;

use super::{Engine, ReadRequest};
use crate::model::Value;
use crate::options::EngineOptions;

const DB: &str = "db";
const HOUR_NS: i64 = 3_600_000_000_000;

fn open(dir: &Path) -> Engine {
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 1,
        background: false,
        merge_min_parts: 2,
        partition_duration: Duration::from_secs(3600),
        ..EngineOptions::default()
    })
    .unwrap();
    engine
}

fn write(engine: &Engine, body: &str) {
    let report = engine
        .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

/// (time, v) of every row of `table`, in time order.
fn rows(engine: &Engine, table: &str) -> Vec<(i64, Value)> {
    let Some(id) = engine.inner.catalog.table_id(DB, table) else {
        return Vec::new();
    };
    let field = engine.table(DB, table).unwrap().field("v").unwrap().id;
    let mut rows = Vec::new();
    for series in engine.read(&ReadRequest::all(id)).unwrap() {
        let column = series.data.column(field).unwrap();
        for (row, time) in series.data.times.iter().enumerate() {
            rows.push((*time, column.values.get(row)));
        }
    }
    rows.sort_by_key(|(time, _)| *time);
    rows
}

/// Part files on disk, whatever the manifest says.
fn part_files(dir: &Path) -> usize {
    fn walk(dir: &Path, found: &mut usize) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|e| e == "part") {
                *found += 1;
            }
        }
    }
    let mut found = 0;
    walk(dir, &mut found);
    found
}

#[test]
fn a_flush_publishes_while_a_merge_writes_and_its_rows_stay_newer() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    write(&engine, "cpu v=1i 10\ncpu v=2i 20\n");
    engine.flush().unwrap();
    write(&engine, "cpu v=3i 30\n");
    engine.flush().unwrap();
    // Unflushed: a newer value for time 10, which must win over the merged part's.
    write(&engine, "cpu v=9i 10\ncpu v=4i 40\n");
    let shard = &engine.inner.shards[0];
    *shard.merge_written_hook.lock() = Some(Box::new(|shard| {
        assert!(
            shard.manifest.try_lock().is_some(),
            "the merge holds the manifest lock while it writes"
        );
        shard.flush_all().unwrap();
        assert_eq!(shard.parts().len(), 3, "the flush published its part");
    }));
    assert!(shard.merge_one().unwrap());
    *shard.merge_written_hook.lock() = None;

    assert_eq!(engine.stats().merges, 1);
    assert_eq!(
        shard.parts().len(),
        2,
        "the merged part and the flushed one"
    );
    assert_eq!(part_files(dir.path()), 2);
    let expected = vec![
        (10, Value::Integer(9)),
        (20, Value::Integer(2)),
        (30, Value::Integer(3)),
        (40, Value::Integer(4)),
    ];
    assert_eq!(rows(&engine, "cpu"), expected);
    // The same from the files alone, and once more merged.
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(rows(&engine, "cpu"), expected);
    engine.compact().unwrap();
    assert_eq!(engine.inner.shards[0].parts().len(), 1);
    assert_eq!(rows(&engine, "cpu"), expected);
}

#[test]
fn a_merge_whose_run_was_rewritten_meanwhile_throws_its_part_away() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let t = HOUR_NS;
    write(&engine, &format!("cpu v=1i {t}\nmem v=1i {t}\n"));
    engine.flush().unwrap();
    write(
        &engine,
        &format!("cpu v=2i {}\nmem v=2i {}\n", t + 1, t + 1),
    );
    engine.flush().unwrap();
    let shard = &engine.inner.shards[0];
    let before: Vec<u64> = shard.parts().iter().map(|p| p.entry.id).collect();
    engine.drop_table(DB, "mem").unwrap();
    // The purge of the dropped table rewrites both parts of the run while the merge
    // writes them.
    *shard.merge_written_hook.lock() = Some(Box::new(|shard| {
        assert_eq!(shard.purge_dropped().unwrap(), 2);
    }));
    assert!(
        shard.merge_one().unwrap(),
        "a thrown-away merge says work is left"
    );
    *shard.merge_written_hook.lock() = None;

    assert_eq!(engine.stats().merges, 0, "the merge was not published");
    let after: Vec<u64> = shard.parts().iter().map(|p| p.entry.id).collect();
    assert_eq!(after.len(), 2);
    assert!(
        after.iter().all(|id| !before.contains(id)),
        "{before:?} {after:?}"
    );
    assert_eq!(
        part_files(dir.path()),
        2,
        "the thrown-away part's file is gone"
    );
    assert_eq!(
        rows(&engine, "cpu"),
        vec![(t, Value::Integer(1)), (t + 1, Value::Integer(2))]
    );
    // The next merge runs on the rewritten parts.
    assert!(shard.merge_one().unwrap());
    assert_eq!(engine.stats().merges, 1);
    assert_eq!(part_files(dir.path()), 1);
    assert_eq!(
        rows(&engine, "cpu"),
        vec![(t, Value::Integer(1)), (t + 1, Value::Integer(2))]
    );
}

/// The nice value in a `/proc/.../stat` line.
fn nice_in_stat(stat: &str) -> i64 {
    // The fields after the parenthesised name start with the state (field 3); nice is
    // field 19.
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    after_name.split(' ').nth(16).unwrap().parse().unwrap()
}

/// The nice value of each of this process's threads whose name starts with `prefix`.
fn nice_of_threads(prefix: &str) -> Vec<i64> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let task = task.unwrap().path();
        // A thread may end between the listing and the reads.
        let (Ok(name), Ok(stat)) = (
            std::fs::read_to_string(task.join("comm")),
            std::fs::read_to_string(task.join("stat")),
        ) else {
            continue;
        };
        if name.starts_with(prefix) {
            found.push(nice_in_stat(&stat));
        }
    }
    found
}

#[test]
fn merges_yield_the_cpu_to_writes_and_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![dir.path().to_path_buf()],
        shards: 3,
        ..EngineOptions::default()
    })
    .unwrap();
    let own = nice_in_stat(&std::fs::read_to_string("/proc/thread-self/stat").unwrap());
    // Thread names are cut to 15 bytes: "strata-maintenance-0" reads "strata-maintena".
    // Engines of other tests start and stop threads too, and one just started has not set
    // its nice yet: this engine's three must be among those that have. (Waiting for every
    // one to have set it failed once in CI, with other tests' engines coming and going.)
    let lowered = |nice: &[i64]| nice.iter().filter(|n| **n == own + 10).count();
    // A thread takes its name when it first runs, so this engine's flush threads may not
    // be named yet when three maintenance threads (maybe another engine's) are lowered.
    let (mut maintenance, mut flush) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        maintenance = nice_of_threads("strata-maintena");
        flush = nice_of_threads("strata-flush-");
        if lowered(&maintenance) >= 3 && flush.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(lowered(&maintenance) >= 3, "{maintenance:?}, own {own}");
    assert!(flush.len() >= 3, "{flush:?}");
    assert!(flush.iter().all(|n| *n == own), "{flush:?}, own {own}");
    drop(engine);
}

#[test]
fn a_stop_waits_for_the_merge_under_way_not_for_the_backlog() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    // Three partitions of two parts each: three merges to do.
    for round in 0..2 {
        for hour in 0..3 {
            write(
                &engine,
                &format!("cpu v={round}i {}\n", hour * HOUR_NS + round),
            );
        }
        engine.flush().unwrap();
    }
    let shard = &engine.inner.shards[0];
    assert_eq!(shard.parts().len(), 6);
    // The engine stops while the first merge writes its part.
    let inner = std::sync::Arc::clone(&engine.inner);
    *shard.merge_written_hook.lock() = Some(Box::new(move |_| {
        inner.stop.store(true, Ordering::SeqCst);
    }));
    super::maintain_parts(&engine.inner, 0).unwrap();
    *shard.merge_written_hook.lock() = None;
    assert_eq!(engine.stats().merges, 1, "the merge under way is published");
    assert_eq!(shard.parts().len(), 5);
    // The next start merges the rest; every row is there.
    drop(engine);
    let engine = open(dir.path());
    engine.maintain().unwrap();
    assert_eq!(engine.inner.shards[0].parts().len(), 3);
    assert_eq!(rows(&engine, "cpu").len(), 6);
}
