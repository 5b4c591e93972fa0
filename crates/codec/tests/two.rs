//! `decode_two` of the integer, unsigned and float columns is two `decode` calls: same
//! values, same bytes used, for every pair of block kinds (two rANS streams take the
//! interleaved loop, any other pair the plain one). Damaged blocks give an error naming a
//! block that fails alone, and leave `out` as it was.

mod common;

use common::{bits, f64_vec, i64_vec};
use proptest::prelude::*;
use strata_codec::{CodecError, float, integer, unsigned};

type Decode<T> = fn(&[u8], &mut Vec<T>) -> Result<usize, CodecError>;
type DecodeTwo<T> = fn(&[u8], &[u8], &mut Vec<T>) -> strata_codec::DecodedTwo;

/// `decode_two(a, b)` against `decode(a)` then `decode(b)`, appending to a non-empty `out`.
fn check<T: Clone + Default>(
    a: &[u8],
    b: &[u8],
    decode: Decode<T>,
    decode_two: DecodeTwo<T>,
    key: impl Fn(&[T]) -> Vec<u64>,
) -> Result<(), TestCaseError> {
    let mut want = vec![T::default()];
    let used_a = decode(a, &mut want);
    let used_b = decode(b, &mut want);
    let mut got = vec![T::default()];
    match (used_a, used_b, decode_two(a, b, &mut got)) {
        (Ok(ua), Ok(ub), Ok(used)) => {
            prop_assert_eq!(used, (ua, ub));
            prop_assert_eq!(key(&got), key(&want));
        }
        (ua, ub, Err((which, e))) => {
            prop_assert!(which < 2);
            prop_assert!(
                [&ua, &ub][which].is_err(),
                "block {} decodes alone: {:?}",
                which,
                e
            );
            prop_assert_eq!(got.len(), 1, "a failed decode must leave `out` as it was");
        }
        (ua, ub, Ok(_)) => prop_assert!(false, "decoded where alone: {:?} {:?}", ua, ub),
    }
    Ok(())
}

fn int_key(v: &[i64]) -> Vec<u64> {
    v.iter().map(|x| *x as u64).collect()
}

fn encoded<T>(values: &[T], encode: fn(&[T], &mut Vec<u8>)) -> Vec<u8> {
    let mut b = Vec::new();
    encode(values, &mut b);
    b
}

/// `block` with byte `at` (an index into it) xor-ed with `x`.
fn damaged(mut block: Vec<u8>, at: prop::sample::Index, x: u8) -> Vec<u8> {
    if !block.is_empty() {
        let i = at.index(block.len());
        block[i] ^= x;
    }
    block
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn integer_pairs(a in i64_vec(), b in i64_vec()) {
        let (a, b) = (encoded(&a, integer::encode), encoded(&b, integer::encode));
        check(&a, &b, integer::decode, integer::decode_two, int_key)?;
    }

    #[test]
    fn unsigned_pairs(a in i64_vec(), b in i64_vec()) {
        let u = |v: Vec<i64>| v.into_iter().map(|x| x as u64).collect::<Vec<_>>();
        let (a, b) = (encoded(&u(a), unsigned::encode), encoded(&u(b), unsigned::encode));
        check(&a, &b, unsigned::decode, unsigned::decode_two, <[u64]>::to_vec)?;
    }

    #[test]
    fn float_pairs(a in f64_vec(), b in f64_vec()) {
        let (a, b) = (encoded(&a, float::encode), encoded(&b, float::encode));
        check(&a, &b, float::decode, float::decode_two, bits)?;
    }

    #[test]
    fn damaged_pairs(a in i64_vec(), b in f64_vec(), at in any::<prop::sample::Index>(), x in 1u8.., cut in any::<prop::sample::Index>(), which in 0usize..2) {
        let mut ints = [encoded(&a, integer::encode), encoded(&a, integer::encode)];
        ints[which] = damaged(ints[which].clone(), at, x);
        check(&ints[0], &ints[1], integer::decode, integer::decode_two, int_key)?;
        let mut floats = [encoded(&b, float::encode), encoded(&b, float::encode)];
        let len = floats[which].len();
        floats[which].truncate(cut.index(len.max(1)));
        check(&floats[0], &floats[1], float::decode, float::decode_two, bits)?;
    }
}

#[test]
fn two_rans_streams_of_different_lengths_and_tables() {
    // Seeded walks with small steps make rANS blocks; 2 values (no coded pair) and a
    // bit-packed block take the plain path; rANS blocks of 120, 361 and 1,500 values,
    // narrow and wide (another table), meet in either order, so each loop's end is hit.
    let walk = |n: usize, spread: u64, seed: u64| -> Vec<i64> {
        let mut x = seed;
        (0..n)
            .scan(0i64, |acc, _| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                // Two uniform draws: a peaked step, as the rANS tables expect.
                let (u, v) = ((x >> 40) % (spread + 1), (x >> 20) % (spread + 1));
                *acc += (u + v) as i64 - spread as i64;
                Some(*acc)
            })
            .collect()
    };
    let shapes = [
        (2, 1),
        (300, 1 << 20),
        (120, 2),
        (361, 2),
        (361, 6),
        (1500, 3),
    ];
    let mut rans_pairs = 0;
    for (i, &(n1, s1)) in shapes.iter().enumerate() {
        for (j, &(n2, s2)) in shapes.iter().enumerate() {
            let (a, b) = (walk(n1, s1, i as u64), walk(n2, s2, 100 + j as u64));
            let (ba, bb) = (encoded(&a, integer::encode), encoded(&b, integer::encode));
            let rans = |b: &[u8]| {
                strata_codec::peek_header(b).unwrap().0 == strata_codec::Encoding::IntegerDeltaRans
            };
            rans_pairs += usize::from(rans(&ba) && rans(&bb));
            let mut out = Vec::new();
            assert_eq!(
                integer::decode_two(&ba, &bb, &mut out),
                Ok((ba.len(), bb.len()))
            );
            assert_eq!(out, [a, b].concat(), "{n1}/{s1} then {n2}/{s2}");
        }
    }
    assert_eq!(rans_pairs, 16, "the four rANS shapes, in every order");
}
