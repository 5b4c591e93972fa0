//! Synthetic data sets shared by the benches and `examples/ratio.rs`, from a seeded
//! splitmix64 so every run measures the same bytes.

#![allow(dead_code)]

/// Points per block: 3 hours of 10 s samples, the block size storage is expected to cut.
pub const BLOCK_LEN: usize = 1080;
/// Series averaged over for the random-walk data sets.
pub const SERIES: u64 = 400;
/// 2016-01-01T00:00:00Z in ns, TSBS's default start.
pub const START_NS: i64 = 1_451_606_400_000_000_000;
/// 10 s in ns.
pub const STEP_NS: i64 = 10_000_000_000;

/// splitmix64 step.
pub fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform in [0, 1).
pub fn uniform(s: &mut u64) -> f64 {
    (splitmix(s) >> 11) as f64 / (1u64 << 53) as f64
}

/// N(0, 1) by Box-Muller.
pub fn normal(s: &mut u64) -> f64 {
    let u1 = 1.0 - uniform(s);
    let u2 = uniform(s);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// (a) Regular 10 s timestamps.
pub fn regular_timestamps(seed: u64) -> Vec<i64> {
    let start = START_NS + (seed as i64) * BLOCK_LEN as i64 * STEP_NS;
    (0..BLOCK_LEN as i64).map(|i| start + i * STEP_NS).collect()
}

/// 10 s timestamps with up to ±`jitter_ms` of uniform jitter (irregular arrival).
pub fn jittered_timestamps(seed: u64, jitter_ms: i64) -> Vec<i64> {
    let mut s = seed;
    (0..BLOCK_LEN as i64)
        .map(|i| {
            let j = (splitmix(&mut s) % (2 * jitter_ms as u64 + 1)) as i64 - jitter_ms;
            START_NS + i * STEP_NS + j * 1_000_000
        })
        .collect()
}

/// (b) TSBS cpu-only field: float walk with N(0,1) steps clamped to [0, 100], written as
/// integers by truncation.
pub fn int_walk(seed: u64) -> Vec<i64> {
    let mut s = seed;
    let mut x = uniform(&mut s) * 100.0;
    (0..BLOCK_LEN)
        .map(|_| {
            x = (x + normal(&mut s)).clamp(0.0, 100.0);
            x as i64
        })
        .collect()
}

/// (c) Decimal floats with 2 decimals: the same walk kept as a float rounded to 0.01.
pub fn decimal_walk(seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut x = uniform(&mut s) * 100.0;
    (0..BLOCK_LEN)
        .map(|_| {
            x = (x + normal(&mut s)).clamp(0.0, 100.0);
            (x * 100.0).round() / 100.0
        })
        .collect()
}

/// Floats that are not decimals (full-precision walk), for the pco path.
pub fn float_walk(seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut x = uniform(&mut s) * 100.0;
    (0..BLOCK_LEN)
        .map(|_| {
            x += normal(&mut s);
            x
        })
        .collect()
}
