//! Prints bytes/point of every data set of the benches, for our encoders and for pco alone
//! (the alternative we measured against). Run: `cargo run --release -p strata-codec --example ratio`.

#[path = "../benches/common/mod.rs"]
mod common;

use common::{BLOCK_LEN, SERIES};
use strata_codec::{float, integer, peek_header, timestamp};

fn report<T>(
    name: &str,
    series: &[Vec<T>],
    enc: impl Fn(&[T], &mut Vec<u8>),
    pco: impl Fn(&[T]) -> usize,
) {
    let mut ours = 0;
    let mut theirs = 0;
    let mut tags = std::collections::BTreeMap::new();
    for s in series {
        let mut out = Vec::new();
        enc(s, &mut out);
        ours += out.len();
        theirs += pco(s);
        if let Ok((e, _)) = peek_header(&out) {
            *tags.entry(format!("{e:?}")).or_insert(0) += 1;
        }
    }
    let points = (series.len() * BLOCK_LEN) as f64;
    println!(
        "{name:<28} strata {:>7.4} B/pt   pco-alone {:>7.4} B/pt   blocks by encoding {tags:?}",
        ours as f64 / points,
        theirs as f64 / points
    );
}

fn pco_len<T: pco::data_types::Number>(v: &[T]) -> usize {
    pco::standalone::simple_compress(v, &pco::ChunkConfig::default()).map_or(0, |c| c.len())
}

fn main() {
    let ts: Vec<_> = (0..SERIES).map(common::regular_timestamps).collect();
    report(
        "(a) regular 10 s timestamps",
        &ts,
        timestamp::encode,
        pco_len,
    );
    let jt: Vec<_> = (0..SERIES)
        .map(|s| common::jittered_timestamps(s, 50))
        .collect();
    report(
        "    10 s ± 50 ms timestamps",
        &jt,
        timestamp::encode,
        pco_len,
    );
    let iw: Vec<_> = (0..SERIES).map(common::int_walk).collect();
    report("(b) int walk [0,100]", &iw, integer::encode, pco_len);
    let dw: Vec<_> = (0..SERIES).map(common::decimal_walk).collect();
    report("(c) 2-decimal float walk", &dw, float::encode, pco_len);
    let fw: Vec<_> = (0..SERIES).map(common::float_walk).collect();
    report("    full-precision float walk", &fw, float::encode, pco_len);
    zstd_levels();
}

/// Size and time of zstd levels on the raw payload of log-like strings (what `StringZstd`
/// compresses when a dictionary does not pay), to pick `string::ZSTD_LEVEL`.
fn zstd_levels() {
    let mut s = 7u64;
    let words = [
        "GET",
        "POST",
        "/api/v2/write",
        "/query",
        "200",
        "404",
        "ok",
        "timeout",
        "host_",
    ];
    let blocks: Vec<Vec<String>> = (0..100)
        .map(|_| {
            (0..BLOCK_LEN)
                .map(|_| {
                    let n = 3 + common::splitmix(&mut s) % 5;
                    (0..n)
                        .map(|_| {
                            let w = words[(common::splitmix(&mut s) % words.len() as u64) as usize];
                            format!("{w}{}", common::splitmix(&mut s) % 1000)
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .collect();
    let raw: Vec<Vec<u8>> = blocks
        .iter()
        .map(|b| {
            let mut out = Vec::new();
            strata_codec::string::encode(b, &mut out);
            out
        })
        .collect();
    let payloads: Vec<Vec<u8>> = blocks
        .iter()
        .map(|b| {
            let mut p = Vec::new();
            for v in b {
                p.push(v.len() as u8);
                p.extend_from_slice(v.as_bytes());
            }
            p
        })
        .collect();
    let input: usize = payloads.iter().map(Vec::len).sum();
    println!(
        "zstd on {} strings, {input} raw payload bytes:",
        blocks.len() * BLOCK_LEN
    );
    for level in [1, 3, 6, 9, 19] {
        let t = std::time::Instant::now();
        let out: usize = payloads
            .iter()
            .map(|p| zstd::bulk::compress(p, level).map_or(p.len(), |z| z.len()))
            .sum();
        let el = t.elapsed().as_secs_f64();
        println!(
            "    level {level:>2}: ratio {:.3}, {:.0} MB/s",
            out as f64 / input as f64,
            input as f64 / el / 1e6
        );
    }
    let ours: usize = raw.iter().map(Vec::len).sum();
    println!(
        "    string::encode (level {}): ratio {:.3}",
        strata_codec::string::ZSTD_LEVEL,
        ours as f64 / input as f64
    );
}
