//! `decode_range` of every column type equals `decode` then slicing, for ranges cutting at
//! the first, last and middle values, empty ranges and the whole block; `timestamp::regular`
//! describes exactly the regular blocks; ranges past the count are errors.

mod common;

use common::{bits, f64_vec, i64_vec};
use proptest::prelude::*;
use strata_codec::{CodecError, boolean, float, integer, string, timestamp, unsigned};

/// Ranges to try over `n` values: edges plus two picked by the strategy.
fn ranges(n: usize, a: prop::sample::Index, b: prop::sample::Index) -> Vec<(usize, usize)> {
    let mut r = vec![(0, n), (0, 0), (n, n)];
    if n > 0 {
        r.extend([(0, 1), (n - 1, n), (1.min(n), n), (0, n - 1)]);
        let (x, y) = (a.index(n + 1), b.index(n + 1));
        r.push((x.min(y), x.max(y)));
        r.push((x.min(y), n));
        r.push((0, x.max(y)));
    }
    r
}

/// A column's `decode_range`.
type DecodeRange<T> = fn(&[u8], usize, usize, &mut Vec<T>) -> Result<usize, CodecError>;

/// Checks `decode_range` against `decode` for every range, on a non-empty `out` (appends).
fn check<T: Clone + std::fmt::Debug + PartialEq>(
    block: &[u8],
    ranges: &[(usize, usize)],
    decode: fn(&[u8], &mut Vec<T>) -> Result<usize, CodecError>,
    decode_range: DecodeRange<T>,
    key: impl Fn(&[T]) -> Vec<u64>,
) -> Result<(), TestCaseError> {
    let mut all = Vec::new();
    prop_assert_eq!(decode(block, &mut all), Ok(block.len()));
    let n = all.len();
    for &(from, to) in ranges {
        let mut out = all[..1.min(n)].to_vec();
        let before = out.len();
        prop_assert_eq!(decode_range(block, from, to, &mut out), Ok(n));
        prop_assert_eq!(
            key(&out[before..]),
            key(&all[from..to]),
            "range {}..{}",
            from,
            to
        );
    }
    let mut out = Vec::new();
    prop_assert_eq!(
        decode_range(block, 0, n + 1, &mut out),
        Err(CodecError::RangeOutOfBounds {
            from: 0,
            to: n + 1,
            count: n
        })
    );
    if n > 0 {
        prop_assert_eq!(
            decode_range(block, 1, 0, &mut out),
            Err(CodecError::RangeOutOfBounds {
                from: 1,
                to: 0,
                count: n
            })
        );
    }
    prop_assert!(out.is_empty());
    Ok(())
}

fn as_u64<T: Copy + Into<i128>>(v: &[T]) -> Vec<u64> {
    v.iter().map(|&x| x.into() as u64).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn timestamp_ranges(v in i64_vec(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let mut block = vec![];
        timestamp::encode(&v, &mut block);
        check(&block, &ranges(v.len(), a, b), timestamp::decode, timestamp::decode_range, as_u64)?;
        let regular = timestamp::regular(&block).unwrap();
        let is_regular = !v.is_empty() && block[0] == strata_codec::Encoding::TimestampRegular.tag();
        prop_assert_eq!(regular.is_some(), is_regular);
        if let Some((first, step, count)) = regular {
            prop_assert_eq!(count, v.len());
            let computed: Vec<i64> =
                (0..count as i64).map(|i| first.wrapping_add(step.wrapping_mul(i))).collect();
            prop_assert_eq!(computed, v);
        }
    }

    #[test]
    fn integer_ranges(v in i64_vec(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let mut block = vec![];
        integer::encode(&v, &mut block);
        check(&block, &ranges(v.len(), a, b), integer::decode, integer::decode_range, as_u64)?;
    }

    #[test]
    fn unsigned_ranges(v in i64_vec(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let v: Vec<u64> = v.iter().map(|&x| x as u64).collect();
        let mut block = vec![];
        unsigned::encode(&v, &mut block);
        check(&block, &ranges(v.len(), a, b), unsigned::decode, unsigned::decode_range, |x| x.to_vec())?;
    }

    #[test]
    fn float_ranges_bit_exact(v in f64_vec(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let mut block = vec![];
        float::encode(&v, &mut block);
        check(&block, &ranges(v.len(), a, b), float::decode, float::decode_range, bits)?;
    }

    #[test]
    fn boolean_ranges(v in prop::collection::vec(any::<bool>(), 0..300), all in any::<Option<bool>>(), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let v = match all { Some(x) => vec![x; v.len()], None => v };
        let mut block = vec![];
        boolean::encode(&v, &mut block);
        check(&block, &ranges(v.len(), a, b), boolean::decode, boolean::decode_range, |x| x.iter().map(|&b| u64::from(b)).collect())?;
    }

    #[test]
    fn string_ranges(
        v in prop_oneof![
            prop::collection::vec(".{0,20}", 0..100),
            prop::collection::vec(prop::sample::select(vec!["host_1", "eu-west-1", "", "ünïcødé"]).prop_map(String::from), 0..400),
            prop::collection::vec("[a-c]{0,300}", 0..60),
            prop::collection::vec(prop::sample::select((0..40).map(|i| format!("v{i}")).collect::<Vec<_>>()), 0..400),
        ],
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let mut block = vec![];
        string::encode(&v, &mut block);
        let mut all = vec![];
        prop_assert_eq!(string::decode(&block, &mut all), Ok(block.len()));
        for (from, to) in ranges(v.len(), a, b) {
            let mut out = vec!["x".to_string()];
            prop_assert_eq!(string::decode_range(&block, from, to, &mut out), Ok(v.len()));
            prop_assert_eq!(&out[1..], &all[from..to], "range {}..{}", from, to);
        }
        let mut out = vec![];
        prop_assert_eq!(
            string::decode_range(&block, 0, v.len() + 1, &mut out),
            Err(CodecError::RangeOutOfBounds { from: 0, to: v.len() + 1, count: v.len() })
        );
    }
}

#[test]
fn every_range_of_rans_packed_and_regular_blocks() {
    // Small steps (rANS), larger ones (bit-packed frames over 128 values), constant, step.
    let rans: Vec<i64> = (0..300i64).map(|i| 1000 + (i * 7 % 5) - 2).collect();
    let packed: Vec<i64> = (0..300i64).map(|i| i * i * 31 % 9973).collect();
    let constant = vec![42i64; 300];
    let step: Vec<i64> = (0..300i64).map(|i| -5 + 3 * i).collect();
    for v in [rans, packed, constant, step] {
        let mut block = vec![];
        integer::encode(&v, &mut block);
        let mut tblock = vec![];
        timestamp::encode(&v, &mut tblock);
        let mut fblock = vec![];
        let f: Vec<f64> = v.iter().map(|&x| x as f64 / 100.0).collect();
        float::encode(&f, &mut fblock);
        for from in (0..=v.len())
            .step_by(7)
            .chain([127, 128, 129, 255, 256, 257, 299])
        {
            for to in (from..=v.len()).step_by(13).chain([v.len()]) {
                let mut out = vec![];
                assert_eq!(
                    integer::decode_range(&block, from, to, &mut out),
                    Ok(v.len())
                );
                assert_eq!(out, v[from..to]);
                let mut out = vec![];
                assert_eq!(
                    timestamp::decode_range(&tblock, from, to, &mut out),
                    Ok(v.len())
                );
                assert_eq!(out, v[from..to]);
                let mut out = vec![];
                assert_eq!(
                    float::decode_range(&fblock, from, to, &mut out),
                    Ok(v.len())
                );
                assert_eq!(bits(&out), bits(&f[from..to]));
            }
        }
    }
}
