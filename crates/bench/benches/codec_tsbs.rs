//! Column codecs on TSBS cpu-only columns from the generator: one block per series and
//! field, 1,080 points (3 hours at 10 s), as the storage engine cuts them.
//!
//! Prints bytes per point over the whole 4,000-host data set (43.2M points), then measures
//! encode and decode speed in points per second on 400 hosts (4.32M points), one core.
//! Targets (issue 2): values ≤ 0.28 bytes/point, timestamps ≤ 0.01 bytes/point, encode
//! ≥ 50M and decode ≥ 300M points/s.
//!
//! Run: `cargo bench -p strata-bench --bench codec_tsbs`

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, SEED_001_START_NS};
use strata_codec::{integer, timestamp};

/// Per host: timestamps, and the ten field columns.
struct Columns {
    times: Vec<Vec<i64>>,
    fields: Vec<[Vec<i64>; 10]>,
}

fn columns(hosts: u32) -> Columns {
    let config = CpuOnlyConfig {
        hosts,
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + 3 * 3_600 * 1_000_000_000,
        interval_ns: 10_000_000_000,
        seed: 123,
    };
    let mut generator = CpuOnly::new(config);
    let mut out = Columns {
        times: vec![Vec::new(); hosts as usize],
        fields: (0..hosts)
            .map(|_| std::array::from_fn(|_| Vec::new()))
            .collect(),
    };
    while let Some(row) = generator.next_row() {
        out.times[row.host as usize].push(row.timestamp_ns);
        for (column, value) in out.fields[row.host as usize].iter_mut().zip(row.values) {
            column.push(value);
        }
    }
    out
}

fn report_sizes() {
    let all = columns(4_000);
    let (mut time_bytes, mut value_bytes, mut time_points, mut value_points) = (0, 0, 0, 0);
    let mut block = Vec::new();
    for (times, fields) in all.times.iter().zip(&all.fields) {
        block.clear();
        timestamp::encode(times, &mut block);
        time_bytes += block.len();
        time_points += times.len();
        for column in fields {
            block.clear();
            integer::encode(column, &mut block);
            value_bytes += block.len();
            value_points += column.len();
        }
    }
    println!(
        "codec_tsbs sizes over 4,000 hosts x 1,080 points: values {:.4} bytes/point ({value_points} points), \
         timestamps {:.4} bytes/point per series block ({:.2} bytes a block)",
        value_bytes as f64 / value_points as f64,
        time_bytes as f64 / time_points as f64,
        time_bytes as f64 / all.times.len() as f64,
    );
}

fn codecs(c: &mut Criterion) {
    report_sizes();
    let data = columns(400);
    let points: usize = data
        .fields
        .iter()
        .map(|f| f.iter().map(Vec::len).sum::<usize>())
        .sum();
    let encoded: Vec<Vec<u8>> = data
        .fields
        .iter()
        .flat_map(|f| f.iter())
        .map(|column| {
            let mut block = Vec::new();
            integer::encode(column, &mut block);
            block
        })
        .collect();

    let mut group = c.benchmark_group("codec_tsbs_values");
    group.throughput(Throughput::Elements(points as u64));
    group.sample_size(20);
    group.bench_function("integer_encode", |b| {
        let mut block = Vec::with_capacity(4096);
        b.iter(|| {
            let mut total = 0;
            for column in data.fields.iter().flat_map(|f| f.iter()) {
                block.clear();
                integer::encode(column, &mut block);
                total += block.len();
            }
            total
        });
    });
    group.bench_function("integer_decode", |b| {
        let mut values = Vec::with_capacity(1_080);
        b.iter(|| {
            let mut total = 0;
            for block in &encoded {
                values.clear();
                integer::decode(block, &mut values).unwrap();
                total += values.len();
            }
            assert_eq!(total, points);
            total
        });
    });
    // Two blocks at a time, as storage decodes a series' consecutive chunks.
    group.bench_function("integer_decode_two", |b| {
        let mut values = Vec::with_capacity(2 * 1_080);
        b.iter(|| {
            let mut total = 0;
            for pair in encoded.chunks(2) {
                values.clear();
                match pair {
                    [first, second] => {
                        integer::decode_two(first, second, &mut values).unwrap();
                    }
                    _ => {
                        integer::decode(&pair[0], &mut values).unwrap();
                    }
                }
                total += values.len();
            }
            assert_eq!(total, points);
            total
        });
    });
    group.finish();

    let time_points: usize = data.times.iter().map(Vec::len).sum();
    let time_blocks: Vec<Vec<u8>> = data
        .times
        .iter()
        .map(|t| {
            let mut block = Vec::new();
            timestamp::encode(t, &mut block);
            block
        })
        .collect();
    let mut group = c.benchmark_group("codec_tsbs_timestamps");
    group.throughput(Throughput::Elements(time_points as u64));
    group.bench_function("timestamp_encode", |b| {
        let mut block = Vec::new();
        b.iter(|| {
            let mut total = 0;
            for times in &data.times {
                block.clear();
                timestamp::encode(times, &mut block);
                total += block.len();
            }
            total
        });
    });
    group.bench_function("timestamp_decode", |b| {
        let mut values = Vec::with_capacity(1_080);
        b.iter(|| {
            let mut total = 0;
            for block in &time_blocks {
                values.clear();
                timestamp::decode(block, &mut values).unwrap();
                total += values.len();
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, codecs);
criterion_main!(benches);
