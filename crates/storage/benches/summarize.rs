//! `Engine::summarize_shard_each` the way a TSBS "max of N fields per hour over 12 h" query
//! uses it: 100 hosts (one series each) x 1 day at 10 s, 5 float fields (2-decimal random
//! walks), flushed to parts of 8 h partitions (one 2,880-row chunk per series and part).
//! The window is 06:00-18:00, so the 00-08 and 16-24 chunks straddle its ends, and `usable`
//! only accepts chunks inside one hour, so no chunk is kept whole: every chunk is decoded,
//! the two straddling ones partly. Each series is folded (max per field) as it is visited.
//!
//! `cargo bench -p strata-storage --bench summarize`

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_lineproto::Precision;
use strata_storage::column::Values;
use strata_storage::part::ChunkMeta;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest};

const HOUR: i64 = 3_600_000_000_000;
/// 2026-01-01T00:00:00Z, a multiple of 8 h.
const DAY_START: i64 = 1_767_225_600_000_000_000;
const HOSTS: usize = 100;
const STEP_NS: i64 = 10_000_000_000;
const FIELDS: [&str; 5] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
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

fn build(dir: &std::path::Path) -> Engine {
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 1,
        background: false,
        partition_duration: Duration::from_secs(8 * 3600),
        clock: Arc::new(ManualClock::new(DAY_START + 24 * HOUR)),
        ..EngineOptions::default()
    })
    .expect("engine opens");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Hundredths, one walk per host and field.
    let mut walks = vec![[5_000i64; 5]; HOSTS];
    let rows = (24 * HOUR / STEP_NS) as usize;
    for hour in 0..24 {
        let mut body = String::new();
        for row in hour * rows / 24..(hour + 1) * rows / 24 {
            let t = DAY_START + row as i64 * STEP_NS;
            for (host, walk) in walks.iter_mut().enumerate() {
                body.push_str(&format!("cpu,hostname=host_{host} "));
                for (i, (name, v)) in FIELDS.iter().zip(walk.iter_mut()).enumerate() {
                    *v = (*v + (rng.next() % 7) as i64 - 3).clamp(0, 10_000);
                    let sep = if i == 0 { "" } else { "," };
                    body.push_str(&format!("{sep}{name}={}.{:02}", *v / 100, *v % 100));
                }
                body.push_str(&format!(" {t}\n"));
            }
        }
        let report = engine
            .write_lines("benchmark", body.as_bytes(), Precision::Nanoseconds)
            .expect("write");
        assert!(report.errors.is_empty(), "{:?}", report.errors);
    }
    engine.flush().expect("flush");
    engine
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = build(dir.path());
    let schema = engine.table("benchmark", "cpu").expect("table");
    let table = engine
        .catalog()
        .table_id("benchmark", "cpu")
        .expect("table id");
    let usable = |c: &ChunkMeta| c.min_time.div_euclid(HOUR) == c.max_time.div_euclid(HOUR);
    let mut g = c.benchmark_group("summarize_12h_partial_chunks");
    for n in [1, 5] {
        let fields: Vec<_> = FIELDS[..n]
            .iter()
            .map(|f| schema.field(f).expect("field").id)
            .collect();
        let request = ReadRequest {
            start: DAY_START + 6 * HOUR,
            end: DAY_START + 18 * HOUR,
            fields: Some(fields),
            ..ReadRequest::all(table)
        };
        g.bench_function(format!("{n}_fields"), |b| {
            b.iter(|| {
                let mut max = f64::MIN;
                let mut rows = 0;
                for shard in 0..engine.shard_count() {
                    engine
                        .summarize_shard_each(shard, &request, &usable, None, &mut |s| {
                            rows += s.rest.rows();
                            for column in &s.rest.columns {
                                if let Values::Float(v) = &column.values {
                                    max = v.iter().copied().fold(max, f64::max);
                                }
                            }
                            Ok(true)
                        })
                        .expect("summarize");
                }
                assert_eq!(rows, HOSTS * 12 * 360);
                black_box(max)
            });
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(8));
    targets = bench
}
criterion_main!(benches);
