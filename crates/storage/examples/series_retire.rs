//! What retiring series costs a shard that holds many.
//!
//! `cargo run --release -p strata-storage --example series_retire [-- SERIES]` (default
//! 1,000,000): one shard, SERIES hosts with one row in each of three daily partitions,
//! flushed. Then it times the first maintenance round after opening (the look for series
//! to retire runs once after every open: it reads every part's series directory and finds
//! none), a round with nothing to do, and a compaction after deleting 1% of the hosts whole
//! (purge, merges, and the look that retires them).

// A measurement program: a failure is a crash with its message.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use strata_lineproto::Precision;
use strata_storage::series::TagPredicate;
use strata_storage::{DeleteRequest, Engine, EngineOptions, WalSync};

const DAY_NS: i64 = 86_400_000_000_000;
const START_NS: i64 = 1_700_006_400_000_000_000;

fn options(dir: &std::path::Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 1,
        wal_sync: WalSync::None,
        background: false,
        partition_duration: Duration::from_secs(86_400),
        memtable_bytes_max: 1 << 30,
        ..EngineOptions::default()
    }
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = f();
    println!("{what}: {:.3} s", started.elapsed().as_secs_f64());
    out
}

fn main() {
    let series: usize = std::env::args()
        .nth(1)
        .map_or(1_000_000, |s| s.parse().unwrap());
    let dir = tempfile::tempdir().unwrap();
    {
        let (engine, _) = Engine::open(options(dir.path())).unwrap();
        timed(&format!("write and flush {series} series x 3 days"), || {
            for day in 0..3 {
                let time = START_NS + day * DAY_NS;
                let mut body = String::new();
                for host in 0..series {
                    body.push_str(&format!(
                        "cpu,hostname=host_{host},region=r{},rack=k{} usage={host} {time}\n",
                        host % 9,
                        host % 100
                    ));
                    if body.len() > 8 << 20 {
                        engine
                            .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
                            .unwrap();
                        body.clear();
                    }
                }
                engine
                    .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
                    .unwrap();
                engine.flush().unwrap();
            }
        });
        engine.compact().unwrap();
        engine.close().unwrap();
    }
    let (engine, _) = timed("open", || Engine::open(options(dir.path())).unwrap());
    timed(
        "first maintenance round (looks for series to retire)",
        || {
            engine.maintain().unwrap();
        },
    );
    timed("next round (nothing to do)", || engine.maintain().unwrap());
    let gone: Vec<String> = (0..series / 100)
        .map(|i| format!("host_{}", i * 100))
        .collect();
    let table = engine.table("db", "cpu").unwrap().id;
    timed(&format!("delete {} hosts whole", gone.len()), || {
        engine
            .delete(&DeleteRequest {
                table,
                start: i64::MIN,
                end: i64::MAX,
                predicate: Some(TagPredicate::In {
                    key: "hostname".into(),
                    values: gone.clone(),
                }),
            })
            .unwrap();
    });
    timed("compact (purge, merges, retirement)", || {
        engine.compact().unwrap();
    });
    let stats = engine.stats();
    println!(
        "series {}, retired {}, parts {}",
        stats.series, stats.series_retired, stats.parts
    );
    assert_eq!(stats.series_retired as usize, gone.len());
}
