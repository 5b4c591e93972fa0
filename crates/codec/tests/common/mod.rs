//! Strategies and helpers shared by the integration tests.

#![allow(dead_code)]

use proptest::prelude::*;

/// Edge i64 values every integer strategy mixes in.
pub const EDGE_I64: [i64; 7] = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];

/// i64 vectors of many shapes: arbitrary, edges, constant, constant step, small walks,
/// alternating, huge jumps.
pub fn i64_vec() -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        prop::collection::vec(any::<i64>(), 0..300),
        prop::collection::vec(prop::sample::select(EDGE_I64.to_vec()), 0..50),
        (any::<i64>(), 0usize..300).prop_map(|(v, n)| vec![v; n]),
        (any::<i64>(), any::<i64>(), 0usize..300).prop_map(|(a, s, n)| (0..n as i64)
            .map(|i| a.wrapping_add(s.wrapping_mul(i)))
            .collect()),
        (any::<i64>(), prop::collection::vec(-20i64..20, 0..1500)).prop_map(|(a, ds)| {
            ds.iter()
                .scan(a, |acc, d| {
                    *acc = acc.wrapping_add(*d);
                    Some(*acc)
                })
                .collect()
        }),
        (any::<i64>(), any::<i64>(), 0usize..200)
            .prop_map(|(a, b, n)| (0..n).map(|i| if i % 2 == 0 { a } else { b }).collect()),
        // Small steps, the rANS path.
        (any::<i64>(), prop::collection::vec(-3i64..=3, 0..1500)).prop_map(|(a, ds)| {
            ds.iter()
                .scan(a, |acc, d| {
                    *acc = acc.wrapping_add(*d);
                    Some(*acc)
                })
                .collect()
        }),
    ]
}

/// f64 vectors: arbitrary bit patterns (NaN payloads, subnormals), specials, decimals.
pub fn f64_vec() -> impl Strategy<Value = Vec<f64>> {
    let special = prop::sample::select(vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::from_bits(0xfff8_dead_beef_0001),
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        f64::MAX,
        f64::MIN,
        10.3,
        219.52,
    ]);
    prop_oneof![
        prop::collection::vec(any::<u64>().prop_map(f64::from_bits), 0..300),
        prop::collection::vec(special, 0..100),
        (
            0u32..6,
            prop::collection::vec(-1_000_000i64..1_000_000, 0..1100)
        )
            .prop_map(|(e, ms)| ms
                .iter()
                .map(|&m| m as f64 / 10f64.powi(e as i32))
                .collect()),
        (any::<u64>(), 0usize..200).prop_map(|(b, n)| vec![f64::from_bits(b); n]),
        (
            0u32..4,
            -100_000i64..100_000,
            prop::collection::vec(-2i64..=2, 0..1100)
        )
            .prop_map(|(e, a, ds)| {
                ds.iter()
                    .scan(a, |m, d| {
                        *m += d;
                        Some(*m as f64 / 10f64.powi(e as i32))
                    })
                    .collect()
            }),
    ]
}

/// Bit patterns, so NaN payloads and -0.0 compare exactly.
pub fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
