//! Reads that go over more parts' index entries than they may hold go a block of series at
//! a time, with the entries copied out of each index (`shard/part_entries.rs`): they must
//! answer exactly what reads that lease every index answer. Seeded random series over three
//! days, flushed into many parts, some rows deleted and some left in memtables; the same
//! data directory opened with the default limit and with limits that make blocks of one
//! series and of a few. Prints the seed on failure; rerun one with
//! `STRATA_READ_BLOCKS_SEED=<seed>`.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;

use common::Rng;
use strata_lineproto::Precision;
use strata_storage::model::TableId;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine, EngineOptions, ManualClock, ReadRequest, WalSync};

const START_NS: i64 = 1_700_006_400_000_000_000; // a midnight, UTC
const HOUR_NS: i64 = 3_600_000_000_000;

fn options(dir: &std::path::Path, clock: &Arc<ManualClock>, limit: Option<usize>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        background: false,
        read_index_bytes_max: limit,
        clock: clock.clone(),
        ..EngineOptions::default()
    }
}

fn write(engine: &Engine, rng: &mut Rng, hosts: u64) {
    let mut body = String::new();
    for _ in 0..200 {
        let host = rng.below(hosts);
        let time = START_NS + rng.below(72 * 3600) as i64 * 1_000_000_000;
        body.push_str(&format!(
            "cpu,host=h{host},rack=r{} v={},n={}i {time}\n",
            host % 7,
            rng.below(1000),
            rng.below(50)
        ));
    }
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

/// Everything the three series-by-series reads answer for `request`.
fn answers(engine: &Engine, request: &ReadRequest) -> String {
    let mut out = format!("{:?}\n", engine.read(request).unwrap());
    out.push_str(&format!("{:?}\n", engine.latest_uncached(request).unwrap()));
    for shard in 0..engine.shard_count() {
        let usable = |c: &strata_storage::part::ChunkMeta| c.rows.is_multiple_of(2);
        let summaries = engine.summarize_shard(shard, request, &usable).unwrap();
        out.push_str(&format!("{summaries:?}\n"));
    }
    out
}

fn requests(table: TableId, rng: &mut Rng) -> Vec<ReadRequest> {
    let mut out = vec![ReadRequest::all(table)];
    for _ in 0..6 {
        let at = |rng: &mut Rng| START_NS + rng.below(80) as i64 * HOUR_NS;
        let (a, b) = (at(rng), at(rng));
        out.push(ReadRequest {
            table,
            predicate: rng.chance(50).then(|| TagPredicate::Eq {
                key: "rack".into(),
                value: format!("r{}", rng.below(7)),
            }),
            start: a.min(b),
            end: a.max(b) + 1,
            fields: rng.chance(50).then(|| vec![rng.below(2) as u32]),
        });
    }
    out
}

fn run(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + 80 * HOUR_NS));
    let hosts = 40 + rng.below(40);
    let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
    for step in 0..12 {
        write(&engine, &mut rng, hosts);
        if step % 3 != 2 {
            engine.flush().unwrap();
        }
        if step == 7 {
            let table = engine.table("db", "cpu").unwrap().id;
            let from = START_NS + rng.below(60) as i64 * HOUR_NS;
            engine
                .delete(&DeleteRequest {
                    table,
                    start: from,
                    end: from + 6 * HOUR_NS,
                    predicate: Some(TagPredicate::Eq {
                        key: "rack".into(),
                        value: "r3".into(),
                    }),
                })
                .unwrap();
        }
    }
    let table = engine.table("db", "cpu").unwrap().id;
    let requests = requests(table, &mut rng);
    let leased: Vec<String> = requests.iter().map(|r| answers(&engine, r)).collect();
    assert!(
        leased[0].matches("SeriesRows").count() >= 40,
        "too few series read"
    );
    engine.close().unwrap();
    // One series a block, then a few.
    for limit in [1, 2 << 10] {
        let (engine, _) = Engine::open(options(dir.path(), &clock, Some(limit))).unwrap();
        for (request, want) in requests.iter().zip(&leased) {
            let got = answers(&engine, request);
            assert!(got == *want, "limit {limit}, {request:?}: answers differ");
        }
        engine.close().unwrap();
    }
}

#[test]
fn reads_in_blocks_of_series_answer_as_reads_that_lease_every_index() {
    common::for_each_seed("STRATA_READ_BLOCKS_SEED", 1..=4, run);
}
