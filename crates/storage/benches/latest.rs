//! `Engine::latest` the way TSBS `lastpoint` uses it (`SELECT DISTINCT ON (hostname) * FROM
//! cpu ORDER BY hostname, time DESC`): 4,000 hosts (one series each, the 10 TSBS cpu tags)
//! x 3 h at 60 s, 10 float fields, flushed every 30 min (1 h partitions, so each series
//! has a chunk in 6 parts), 2 shards. The cases:
//!
//! - `warm`: the latest-row cache is built (every call after the first on an open engine);
//! - `each_warm`: `Engine::latest_each` on the built cache, visiting every series' time,
//!   tags and fields in place (what the query layer's lastpoint does) instead of owned rows;
//! - `cold`: the first call after open, which builds the cache (the engine is reopened
//!   before each sample, outside the timing);
//! - `uncached`: the scanning path the cache replaces (`Engine::latest_uncached`);
//! - `clone_of_result`: cloning what `warm` returns, the cost of the result type alone.
//!
//! `cargo bench -p strata-storage --bench latest`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest};

const MINUTE: i64 = 60_000_000_000;
/// 2026-01-01T00:00:00Z.
const START: i64 = 1_767_225_600_000_000_000;
const HOSTS: usize = 4_000;
const MINUTES: i64 = 180;
const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// xorshift64*: deterministic data without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn options(dir: &std::path::Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        background: false,
        partition_duration: Duration::from_secs(3600),
        clock: Arc::new(ManualClock::new(START + MINUTES * MINUTE)),
        ..EngineOptions::default()
    }
}

fn build(dir: &std::path::Path) {
    let (engine, _) = Engine::open(options(dir)).expect("engine opens");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let tags: Vec<String> = (0..HOSTS)
        .map(|h| {
            format!(
                "cpu,hostname=host_{h},region=eu-west-{},datacenter=eu-west-{}b,rack={},os=Ubuntu16.04LTS,\
                 arch=x64,team=SF,service={},service_version=1,service_environment=production",
                h % 3,
                h % 3,
                h % 100,
                h % 20
            )
        })
        .collect();
    for minute in 0..MINUTES {
        let t = START + minute * MINUTE;
        let mut body = String::new();
        for tags in &tags {
            body.push_str(tags);
            for (i, name) in FIELDS.iter().enumerate() {
                let v = rng.next() % 10_000;
                let sep = if i == 0 { ' ' } else { ',' };
                body.push_str(&format!("{sep}{name}={}.{:02}", v / 100, v % 100));
            }
            body.push_str(&format!(" {t}\n"));
        }
        let report = engine
            .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
            .expect("write");
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        if (minute + 1) % 30 == 0 {
            engine.flush().expect("flush");
        }
    }
    engine.flush().expect("flush");
    engine.close().expect("close");
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    build(dir.path());
    let (engine, _) = Engine::open(options(dir.path())).expect("engine opens");
    let table = engine
        .catalog()
        .table_id("benchmark", "cpu")
        .expect("table id");
    let request = ReadRequest::all(table);
    let check = |rows: &[strata_storage::SeriesRows]| {
        assert_eq!(rows.len(), HOSTS);
        assert!(
            rows.iter()
                .all(|r| r.data.times == [START + (MINUTES - 1) * MINUTE])
        );
        assert!(rows.iter().all(|r| r.data.columns.len() == FIELDS.len()));
    };
    check(&engine.latest_uncached(&request).expect("latest"));
    let mut g = c.benchmark_group("latest_4000_series");
    g.bench_function("uncached", |b| {
        b.iter(|| black_box(engine.latest_uncached(&request).expect("latest")));
    });
    let rows = engine.latest(&request).expect("latest");
    check(&rows);
    g.bench_function("warm", |b| {
        b.iter(|| black_box(engine.latest(&request).expect("latest")));
    });
    // The lean path: every series visited in place, reading what a caller building Arrow
    // columns reads (time, each tag's ids and text, each field's value).
    g.bench_function("each_warm", |b| {
        b.iter(|| {
            let mut seen = 0usize;
            engine
                .latest_each(&request, |view| {
                    black_box(view.time());
                    for (key, value) in view.tags() {
                        seen += black_box(key.id as usize + value.text.len());
                    }
                    for (_, value) in view.fields() {
                        black_box(value);
                    }
                })
                .expect("latest_each");
            black_box(seen)
        });
    });
    // The floor for this result type: allocating (and freeing) the 4,000 `SeriesRows`
    // (tags and one-row columns) that `warm` returns.
    g.bench_function("clone_of_result", |b| {
        b.iter(|| black_box(rows.clone()));
    });
    drop(engine);
    g.bench_function("cold", |b| {
        b.iter_batched(
            || Engine::open(options(dir.path())).expect("engine opens").0,
            |engine| {
                let rows = engine.latest(&request).expect("latest");
                // Dropped outside the timing.
                (engine, rows)
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(8));
    targets = bench
}
criterion_main!(benches);
