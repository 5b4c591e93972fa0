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
}
