//! The write path's per-row shortcuts and its stage accounting: tags read back from raw
//! series keys (escapes, tag order, repeated keys), the same series from either path of a
//! request, and every stage a write passes through counted.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::sync::Arc;
use std::time::Duration;

use strata_lineproto::Precision;
use strata_storage::write_stages::WriteStage;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest};

fn open(dir: &std::path::Path, shards: usize) -> Engine {
    Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards,
        background: false,
        partition_duration: Duration::from_secs(3600),
        clock: Arc::new(ManualClock::new(0)),
        ..EngineOptions::default()
    })
    .unwrap()
    .0
}

/// Every series of `table` as (sorted tags, row count), sorted.
fn series(engine: &Engine, table: &str) -> Vec<(Vec<(String, String)>, usize)> {
    let table = engine.catalog().table_id("db", table).unwrap();
    let mut out: Vec<_> = engine
        .read(&ReadRequest::all(table))
        .unwrap()
        .into_iter()
        .map(|rows| (rows.tags, rows.data.rows()))
        .collect();
    out.sort();
    out
}

fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn tags_are_read_back_from_raw_keys_whatever_their_escapes_order_or_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 4);
    // One series written four ways (tag order, a repeated key whose last value wins), one
    // with the other value of the repeated key, and a measurement with escapes.
    let body = "m,ho\\ st=a\\,b,dc=x\\=y v=1 1\n\
                m,dc=x\\=y,ho\\ st=a\\,b v=2 2\n\
                m,dc=zz,ho\\ st=a\\,b,dc=x\\=y v=3 3\n\
                m,ho\\ st=a\\,b,dc=x\\=y v=4 4\n\
                m,dc=x\\=y,ho\\ st=a\\,b,dc=zz v=5 5\n\
                n\\ 1\\,x,k=\u{e9}\u{65e5} v=6 6\n";
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(report.rows, 6);
    let want = vec![
        (tags(&[("dc", "x=y"), ("ho st", "a,b")]), 4),
        (tags(&[("dc", "zz"), ("ho st", "a,b")]), 1),
    ];
    assert_eq!(series(&engine, "m"), want);
    assert_eq!(series(&engine, "n 1,x"), vec![(tags(&[("k", "é日")]), 1)]);

    // The same after a restart: the WAL carries the series created from raw keys.
    drop(engine);
    let engine = open(dir.path(), 4);
    assert_eq!(series(&engine, "m"), want);
    // And a row that only finds its series by its tags (a new spelling of the raw key).
    engine
        .write_lines(
            "db",
            b"m,dc=x\\=y,dc=x\\=y,ho\\ st=a\\,b v=7 7\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    assert_eq!(series(&engine, "m")[0].1, 5);
}

#[test]
fn every_stage_a_write_passes_through_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 3);
    let body: String = (0..3000)
        .map(|i| {
            format!(
                "cpu,host=h{},dc=d{} a={i},b={i}i {}\n",
                i % 50,
                i % 3,
                i + 1
            )
        })
        .collect();
    let before = engine.stats();
    assert_eq!(before.write_stage_ns, [0; WriteStage::ALL.len()]);
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    let stats = engine.stats();
    assert_eq!(stats.points_written, 6000);
    let ns = |stage: WriteStage| stats.write_stage_ns[stage as usize];
    for stage in [
        WriteStage::Admission,
        WriteStage::Parse,
        WriteStage::Catalog,
        WriteStage::LockWait,
        WriteStage::Series,
        WriteStage::Memtable,
        WriteStage::WalAppend,
        WriteStage::WalCommit,
        WriteStage::Flush,
    ] {
        assert!(ns(stage) > 0, "{} not counted: {stats:?}", stage.name());
    }
    // Nothing waited for a flush, and no merge ran.
    assert_eq!(ns(WriteStage::Backpressure), 0);
    assert_eq!(ns(WriteStage::Merge), 0);
    assert_eq!(ns(WriteStage::MergeAssist), 0);
    assert_eq!(stats.shard_busy, 0);
}

/// Writers beyond `write_concurrency` wait for a slot: with one slot and eight writers
/// every row still lands once, and a reopen without a flush replays them all from the WAL.
/// (That an acknowledged row is in the WAL file before the answer, now that the commit
/// comes after the slot, is `crash::sigkill_loses_no_acknowledged_row`'s: it fails when
/// the commit is left out.)
#[test]
fn writes_beyond_the_write_concurrency_wait_their_turn_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let options = EngineOptions {
        data_dirs: vec![dir.path().to_path_buf()],
        shards: 3,
        write_concurrency: 1,
        background: false,
        partition_duration: Duration::from_secs(3600),
        clock: Arc::new(ManualClock::new(0)),
        ..EngineOptions::default()
    };
    let engine = Engine::open(options.clone()).unwrap().0;
    std::thread::scope(|scope| {
        for writer in 0..8 {
            let engine = &engine;
            scope.spawn(move || {
                for request in 0..25 {
                    let body: String = (0..40)
                        .map(|i| {
                            let time = 1 + request * 40 + i;
                            format!("cpu,host=h{},writer=w{writer} v={time} {time}\n", i % 10)
                        })
                        .collect();
                    let report = engine
                        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
                        .unwrap();
                    assert_eq!((report.rows, report.errors.len()), (40, 0));
                }
            });
        }
    });
    let stats = engine.stats();
    assert_eq!(stats.points_written, 8 * 25 * 40);
    assert!(stats.write_stage_ns[WriteStage::Admission as usize] > 0);
    let want: Vec<_> = (0..8)
        .flat_map(|w| {
            (0..10).map(move |h| {
                let (host, writer) = (format!("h{h}"), format!("w{w}"));
                (tags(&[("host", &host), ("writer", &writer)]), 100)
            })
        })
        .collect();
    let mut want = want;
    want.sort();
    assert_eq!(series(&engine, "cpu"), want);
    drop(engine);
    let engine = Engine::open(options).unwrap().0;
    assert_eq!(series(&engine, "cpu"), want);
}

#[test]
fn a_row_repeating_the_previous_rows_fields_is_still_checked_for_types() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 2);
    let body = "m,h=a x=1,y=2i 1\n\
                m,h=a x=2,y=3i 2\n\
                m,h=a x=3i,y=4i 3\n\
                m,h=a y=5i,x=6 4\n\
                m,h=a x=7,y=\"s\" 5\n\
                m,h=a x=8,y=9i 6\n";
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    let lines: Vec<usize> = report.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [3, 5], "{report:?}");
    assert!(report.errors[0].message.contains("x"), "{report:?}");
    assert_eq!(report.rows, 4);
    assert_eq!(report.points, 8);
    assert_eq!(series(&engine, "m"), vec![(tags(&[("h", "a")]), 4)]);
}
