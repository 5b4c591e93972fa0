//! Line-protocol parsing on TSBS cpu-only lines from the generator, one core.
//!
//! Compares Strata's parser with the `influxdb-line-protocol` crate on the same bytes in one
//! run, so the ratio holds on a noisy machine. Target (issue 2): at least 400 MB/s.
//!
//! Run: `cargo bench -p strata-bench --bench parse_tsbs`

#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, SEED_001_START_NS};
use strata_lineproto::{Line, ParseOptions, parse_lines};

/// 1,000 hosts x 20 instants: 20,000 lines, about 5 MB — bigger than L2, like a request batch.
fn tsbs_lines() -> Vec<u8> {
    let config = CpuOnlyConfig {
        hosts: 1_000,
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + 20 * 10_000_000_000,
        interval_ns: 10_000_000_000,
        seed: 123,
    };
    let mut generator = CpuOnly::new(config);
    let mut out = Vec::new();
    while generator.write_lines(10_000, &mut out) > 0 {}
    out
}

fn parse(c: &mut Criterion) {
    let input = tsbs_lines();
    let options = ParseOptions::default();
    let mut group = c.benchmark_group("parse_tsbs_cpu_only");
    group.throughput(Throughput::Bytes(input.len() as u64));

    group.bench_function("strata_next_into", |b| {
        b.iter(|| {
            let mut lines = parse_lines(&input, &options);
            let mut line = Line::default();
            let mut fields = 0usize;
            while let Some(result) = lines.next_into(&mut line) {
                result.unwrap();
                fields += line.fields.len();
            }
            assert_eq!(fields, 200_000);
            fields
        });
    });

    group.bench_function("strata_iterator", |b| {
        b.iter(|| {
            let fields: usize = parse_lines(&input, &options)
                .map(|line| line.unwrap().fields.len())
                .sum();
            assert_eq!(fields, 200_000);
            fields
        });
    });

    let text = std::str::from_utf8(&input).unwrap();
    group.bench_function("influxdb_line_protocol_crate", |b| {
        b.iter(|| {
            let fields: usize = influxdb_line_protocol::parse_lines(text)
                .map(|line| line.unwrap().field_set.len())
                .sum();
            assert_eq!(fields, 200_000);
            fields
        });
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
