//! Encode/decode throughput on 1,080-point blocks: (a) regular 10 s timestamps, (b) TSBS-like
//! integer random walks over 400 series, (c) 2-decimal float random walks. Bytes/point of the
//! same data sets: `cargo run --release -p strata-codec --example ratio`.

#[path = "common/mod.rs"]
mod common;

use std::hint::black_box;

use common::{BLOCK_LEN, SERIES};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_codec::{float, integer, timestamp};

fn bench_set<T: Clone>(
    c: &mut Criterion,
    name: &str,
    series: &[Vec<T>],
    enc: fn(&[T], &mut Vec<u8>),
    dec: fn(&[u8], &mut Vec<T>) -> Result<usize, strata_codec::CodecError>,
) {
    let blocks: Vec<Vec<u8>> = series
        .iter()
        .map(|s| {
            let mut b = Vec::new();
            enc(s, &mut b);
            b
        })
        .collect();
    let bytes: usize = blocks.iter().map(Vec::len).sum();
    let points = series.len() * BLOCK_LEN;
    println!("{name}: {:.4} bytes/point", bytes as f64 / points as f64);
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(points as u64));
    g.bench_function("encode", |b| {
        let mut out = Vec::with_capacity(64 * 1024);
        b.iter(|| {
            for s in series {
                out.clear();
                enc(black_box(s), &mut out);
                black_box(&out);
            }
        })
    });
    g.bench_function("decode", |b| {
        let mut out = Vec::with_capacity(BLOCK_LEN);
        b.iter(|| {
            for blk in &blocks {
                out.clear();
                let used = dec(black_box(blk), &mut out);
                black_box((&out, used.is_ok()));
            }
        })
    });
    g.finish();
}

fn codec(c: &mut Criterion) {
    let ts: Vec<_> = (0..SERIES).map(common::regular_timestamps).collect();
    bench_set(
        c,
        "a_timestamps_regular_10s",
        &ts,
        timestamp::encode,
        timestamp::decode,
    );
    let iw: Vec<_> = (0..SERIES).map(common::int_walk).collect();
    bench_set(
        c,
        "b_integer_walk_0_100",
        &iw,
        integer::encode,
        integer::decode,
    );
    integer_pairs(c, &iw);
    let dw: Vec<_> = (0..SERIES).map(common::decimal_walk).collect();
    bench_set(
        c,
        "c_float_2_decimals_walk",
        &dw,
        float::encode,
        float::decode,
    );
}

/// Decoding two blocks at a time ([`integer::decode_two`], interleaved rANS streams) against
/// the same blocks one at a time, as storage reads a series' consecutive chunks.
fn integer_pairs(c: &mut Criterion, series: &[Vec<i64>]) {
    let blocks: Vec<Vec<u8>> = series
        .iter()
        .map(|s| {
            let mut b = Vec::new();
            integer::encode(s, &mut b);
            b
        })
        .collect();
    let mut g = c.benchmark_group("b_integer_walk_0_100_pairs");
    g.throughput(Throughput::Elements((series.len() * BLOCK_LEN) as u64));
    g.bench_function("decode_one_by_one", |b| {
        let mut out = Vec::with_capacity(2 * BLOCK_LEN);
        b.iter(|| {
            for pair in blocks.chunks(2) {
                out.clear();
                for blk in pair {
                    black_box(integer::decode(black_box(blk), &mut out).is_ok());
                }
                black_box(&out);
            }
        })
    });
    g.bench_function("decode_two", |b| {
        let mut out = Vec::with_capacity(2 * BLOCK_LEN);
        b.iter(|| {
            for pair in blocks.chunks_exact(2) {
                out.clear();
                let used = integer::decode_two(black_box(&pair[0]), black_box(&pair[1]), &mut out);
                black_box((&out, used.is_ok()));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
