//! Hostile input: truncated blocks, flipped bytes, arbitrary bytes, wrong column types and
//! oversized counts give errors (or, for well-formed corruption, values), never a panic.

mod common;

use common::{f64_vec, i64_vec};
use proptest::prelude::*;
use strata_codec::{
    CodecError, Encoding, MAX_BLOCK_VALUES, boolean, float, integer, string, timestamp, unsigned,
};

/// Runs every decoder on `bytes`; each must return, and a success must stay inside the input.
fn decode_all(bytes: &[u8]) {
    fn check<T>(r: Result<usize, CodecError>, out: &[T], len: usize) {
        match r {
            Ok(used) => assert!(used <= len, "used {used} of {len} bytes"),
            Err(_) => assert!(out.is_empty(), "a failed decode must leave `out` as it was"),
        }
    }
    let mut o = vec![];
    check(timestamp::decode(bytes, &mut o), &o, bytes.len());
    let mut o = vec![];
    check(integer::decode(bytes, &mut o), &o, bytes.len());
    let mut o = vec![];
    check(unsigned::decode(bytes, &mut o), &o, bytes.len());
    let mut o = vec![];
    check(float::decode(bytes, &mut o), &o, bytes.len());
    let mut o = vec![];
    check(boolean::decode(bytes, &mut o), &o, bytes.len());
    let mut o = vec![];
    check(string::decode(bytes, &mut o), &o, bytes.len());
    // Range decodes: the count they return is not a byte count, so only check `out`.
    fn check_range<T>(r: Result<usize, CodecError>, out: &[T], want: usize) {
        match r {
            Ok(_) => assert_eq!(out.len(), want, "a range decode appends the range"),
            Err(_) => assert!(out.is_empty(), "a failed decode must leave `out` as it was"),
        }
    }
    let _ = timestamp::regular(bytes);
    for (from, to) in [(0, 1), (1, 3), (2, 2), (5, 200)] {
        let mut o = vec![];
        check_range(
            timestamp::decode_range(bytes, from, to, &mut o),
            &o,
            to - from,
        );
        let mut o = vec![];
        check_range(
            integer::decode_range(bytes, from, to, &mut o),
            &o,
            to - from,
        );
        let mut o = vec![];
        check_range(
            unsigned::decode_range(bytes, from, to, &mut o),
            &o,
            to - from,
        );
        let mut o = vec![];
        check_range(float::decode_range(bytes, from, to, &mut o), &o, to - from);
        let mut o = vec![];
        check_range(
            boolean::decode_range(bytes, from, to, &mut o),
            &o,
            to - from,
        );
        let mut o = vec![];
        check_range(string::decode_range(bytes, from, to, &mut o), &o, to - from);
    }
}

/// One valid block of every column type from the same seed data.
fn blocks(ints: &[i64], floats: &[f64]) -> Vec<Vec<u8>> {
    let mut v = vec![vec![]; 6];
    timestamp::encode(ints, &mut v[0]);
    integer::encode(ints, &mut v[1]);
    let u: Vec<u64> = ints.iter().map(|&x| x as u64).collect();
    unsigned::encode(&u, &mut v[2]);
    float::encode(floats, &mut v[3]);
    let b: Vec<bool> = ints.iter().map(|&x| x % 3 == 0).collect();
    boolean::encode(&b, &mut v[4]);
    let s: Vec<String> = ints.iter().map(|x| format!("v{}", x % 5)).collect();
    string::encode(&s, &mut v[5]);
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_prefix_of_a_block_is_an_error(ints in i64_vec(), floats in f64_vec()) {
        for block in blocks(&ints, &floats) {
            let (enc, _) = strata_codec::peek_header(&block).unwrap();
            // Prefixes are checked with the block's own decoder: they must fail.
            for cut in 0..block.len() {
                let p = &block[..cut];
                let failed = match enc.column_type() {
                    strata_codec::ColumnType::Timestamp => timestamp::decode(p, &mut vec![]).is_err(),
                    strata_codec::ColumnType::Integer => integer::decode(p, &mut vec![]).is_err(),
                    strata_codec::ColumnType::Unsigned => unsigned::decode(p, &mut vec![]).is_err(),
                    strata_codec::ColumnType::Float => float::decode(p, &mut vec![]).is_err(),
                    strata_codec::ColumnType::Boolean => boolean::decode(p, &mut vec![]).is_err(),
                    strata_codec::ColumnType::String => string::decode(p, &mut vec![]).is_err(),
                };
                prop_assert!(failed, "{enc:?}: prefix of {cut} of {} bytes decoded", block.len());
            }
        }
    }

    #[test]
    fn flipped_bytes_never_panic(ints in i64_vec(), floats in f64_vec(), at in any::<prop::sample::Index>(), x in 1u8..) {
        for mut block in blocks(&ints, &floats) {
            let i = at.index(block.len());
            block[i] ^= x;
            decode_all(&block);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(tag in prop::sample::select(Encoding::ALL.to_vec()), body in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = vec![tag.tag()];
        bytes.extend(&body);
        decode_all(&bytes);
        decode_all(&body);
    }
}

#[test]
fn wrong_column_type_is_rejected() {
    let mut b = vec![];
    integer::encode(&[1, 2, 3], &mut b);
    assert_eq!(
        float::decode(&b, &mut vec![]),
        Err(CodecError::WrongColumnType {
            expected: "float",
            found: Encoding::IntegerStep
        })
    );
    assert!(matches!(
        timestamp::decoded_len(&b),
        Err(CodecError::WrongColumnType { .. })
    ));
}

#[test]
fn unknown_tag_and_empty_input_are_rejected() {
    assert_eq!(
        integer::decode(&[0xff, 0], &mut vec![]),
        Err(CodecError::UnknownTag { tag: 0xff })
    );
    assert_eq!(
        integer::decode(&[], &mut vec![]),
        Err(CodecError::Truncated {
            offset: 0,
            needed: 1
        })
    );
}

#[test]
fn count_over_the_limit_is_rejected_before_allocating() {
    // tag IntegerConstant, count 2^20 + 1 = 0x100001 as LEB128
    let b = [10u8, 0x81, 0x80, 0x40, 0];
    assert_eq!(
        integer::decode(&b, &mut vec![]),
        Err(CodecError::CountOverLimit {
            count: MAX_BLOCK_VALUES as u64 + 1,
            max: MAX_BLOCK_VALUES
        })
    );
    // A packed block claiming 2^20 values in 3 bytes is truncated, not allocated.
    let b = [12u8, 0x80, 0x80, 0x40, 0];
    assert!(matches!(
        integer::decode(&b, &mut vec![]),
        Err(CodecError::Truncated { .. })
    ));
}

#[test]
fn overlong_varint_is_rejected() {
    let b = [
        10u8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
    ];
    assert!(matches!(
        integer::decode(&b, &mut vec![]),
        Err(CodecError::InvalidPayload { .. })
    ));
}

#[test]
fn failed_decode_leaves_output_untouched() {
    let mut b = vec![];
    integer::encode(&(0..500).map(|i| i * i).collect::<Vec<i64>>(), &mut b);
    b.truncate(b.len() - 1);
    let mut out = vec![7i64];
    assert!(integer::decode(&b, &mut out).is_err());
    assert_eq!(out, vec![7]);
}
