//! Where a series' rows are cut into chunks.
//!
//! Chunks hold whole Unix-epoch hours: a chunk starts where an hour starts (or where the
//! series' rows in the part start) and takes hour after hour until it holds at least
//! [`MIN_ROWS_PER_CHUNK`] rows; an hour of more than [`MAX_ROWS_PER_CHUNK`] rows is split
//! evenly into the fewest chunks that fit. Why hours: a chunk that lies inside one bucket of
//! an hourly (or daily, or any whole-hour) `date_bin`/`date_trunc` is answered from its
//! pre-aggregates without decoding, and a window that starts or ends mid-hour decodes at most
//! that hour's rows at each edge. With the earlier even split of up to 4,096 rows, 10 s data
//! made 8-hour chunks of 2,880 rows, so every hourly bucket decoded whole chunks. The cost is
//! a block header and an index entry per column and hour (about 0.03 bytes a point more on
//! TSBS data, measured when this rule came with part format 2: `git log -p
//! docs/benchmarks.md`).
//!
//! How rows are cut is not part of the file format: a reader takes chunks as the index lists
//! them, so parts written with either rule read the same.

use std::ops::Range;

use crate::model::Timestamp;

use super::format::MAX_ROWS_PER_CHUNK;

/// Chunks are cut at multiples of this many nanoseconds since the epoch: one hour.
pub const CHUNK_ALIGN_NS: i64 = 3_600_000_000_000;

/// A chunk takes further whole hours while it holds fewer rows than this (unless that would
/// pass [`MAX_ROWS_PER_CHUNK`]). 200 keeps 15 s series (240 rows an hour) at one chunk an
/// hour, while sparser series get chunks of several hours, since a block of a few dozen
/// values would spend most of its bytes on headers.
pub const MIN_ROWS_PER_CHUNK: usize = 200;

/// The row ranges of the chunks that rows at `times` (ascending) are cut into; together they
/// cover `0..times.len()` in order, and none is empty or longer than [`MAX_ROWS_PER_CHUNK`].
pub fn chunk_ranges(times: &[Timestamp]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    // Rows `start..at` are taken into the chunk being formed.
    let mut start = 0;
    let mut at = 0;
    while at < times.len() {
        let hour = times[at].div_euclid(CHUNK_ALIGN_NS);
        let hour_end = at + times[at..].partition_point(|t| t.div_euclid(CHUNK_ALIGN_NS) == hour);
        if at > start && hour_end - start > MAX_ROWS_PER_CHUNK {
            push_even(&mut out, start..at);
            start = at;
        }
        at = hour_end;
        if at - start >= MIN_ROWS_PER_CHUNK {
            push_even(&mut out, start..at);
            start = at;
        }
    }
    if start < at {
        push_even(&mut out, start..at);
    }
    out
}

/// Appends `rows` as the fewest chunks of at most [`MAX_ROWS_PER_CHUNK`] rows, split evenly
/// (the first `len % n` chunks get one row more), so no chunk is a tiny tail.
fn push_even(out: &mut Vec<Range<usize>>, rows: Range<usize>) {
    let len = rows.len();
    let n = len.div_ceil(MAX_ROWS_PER_CHUNK);
    let mut from = rows.start;
    for i in 0..n {
        let to = from + len / n + usize::from(i < len % n);
        out.push(from..to);
        from = to;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = CHUNK_ALIGN_NS;
    /// 2019-04-01T00:00:00Z, an hour boundary.
    const T0: i64 = 1_554_076_800_000_000_000;

    fn regular(start: i64, step: i64, rows: usize) -> Vec<Timestamp> {
        (0..rows as i64).map(|i| start + i * step).collect()
    }

    fn lens(ranges: &[Range<usize>]) -> Vec<usize> {
        ranges.iter().map(Range::len).collect()
    }

    /// Checks the rules of the module docs on any input.
    fn check(times: &[Timestamp], ranges: &[Range<usize>]) {
        let hour = |i: usize| times[i].div_euclid(HOUR);
        let mut next = 0;
        for (k, r) in ranges.iter().enumerate() {
            assert_eq!(r.start, next, "ranges cover the rows in order");
            assert!(!r.is_empty() && r.len() <= MAX_ROWS_PER_CHUNK, "{r:?}");
            let cut_mid_hour = r.end < times.len() && hour(r.end - 1) == hour(r.end);
            if cut_mid_hour {
                // Only an hour over the limit is split.
                let h = hour(r.end);
                let in_hour = times.iter().filter(|t| t.div_euclid(HOUR) == h).count();
                assert!(
                    in_hour > MAX_ROWS_PER_CHUNK,
                    "cut inside hour {h} of {in_hour} rows"
                );
            }
            let last = k + 1 == ranges.len();
            let spans_hours = hour(r.start) != hour(r.end - 1);
            if spans_hours && !last {
                // Hours are added only while the chunk is short of the minimum: without its
                // last hour it held fewer rows.
                let last_hour = hour(r.end - 1);
                let without = (r.start..r.end).filter(|&i| hour(i) != last_hour).count();
                assert!(without < MIN_ROWS_PER_CHUNK, "{r:?} kept adding hours");
            }
            next = r.end;
        }
        assert_eq!(next, times.len());
    }

    #[test]
    fn ten_second_data_is_cut_at_every_hour() {
        let times = regular(T0, 10_000_000_000, 8640);
        let ranges = chunk_ranges(&times);
        assert_eq!(lens(&ranges), vec![360; 24]);
        for r in &ranges {
            assert_eq!(times[r.start].rem_euclid(HOUR), 0);
        }
        check(&times, &ranges);
    }

    #[test]
    fn a_short_first_hour_takes_the_next_hour_too() {
        // 00:30 to 03:30 at 10 s: 180, 360, 360, 180 rows.
        let times = regular(T0 + HOUR / 2, 10_000_000_000, 1080);
        let ranges = chunk_ranges(&times);
        // The first half hour is short of the minimum, so it takes the next hour too.
        assert_eq!(lens(&ranges), vec![540, 360, 180]);
        check(&times, &ranges);
    }

    #[test]
    fn sparse_data_takes_several_hours_a_chunk() {
        // One row a minute for a day: 60 rows an hour, chunks of 4 hours (240 rows).
        let times = regular(T0, 60_000_000_000, 1440);
        let ranges = chunk_ranges(&times);
        assert_eq!(lens(&ranges), vec![240; 6]);
        check(&times, &ranges);
    }

    #[test]
    fn dense_hours_are_split_evenly() {
        // One row a millisecond: 10,000 rows inside one hour, as in the meters workload.
        let times = regular(T0, 1_000_000, 10_000);
        assert_eq!(lens(&chunk_ranges(&times)), vec![3334, 3333, 3333]);
        // Two dense hours are split on the hour, then evenly.
        let mut times = regular(T0, 1_000_000, 5000);
        times.extend(regular(T0 + HOUR, 1_000_000, 4097));
        let ranges = chunk_ranges(&times);
        assert_eq!(lens(&ranges), vec![2500, 2500, 2049, 2048]);
        check(&times, &ranges);
    }

    #[test]
    fn a_small_hour_before_a_dense_one_is_not_merged_past_the_limit() {
        let mut times = regular(T0, 10_000_000_000, 100);
        times.extend(regular(T0 + HOUR, 1_000_000, 4000));
        let ranges = chunk_ranges(&times);
        assert_eq!(lens(&ranges), vec![100, 4000]);
        check(&times, &ranges);
    }

    #[test]
    fn one_row_and_negative_times() {
        assert_eq!(chunk_ranges(&[5]), vec![0..1]);
        assert!(chunk_ranges(&[]).is_empty());
        // Before the epoch, hours are still floor-aligned.
        let times = regular(-2 * HOUR, 10_000_000_000, 720);
        let ranges = chunk_ranges(&times);
        assert_eq!(lens(&ranges), vec![360, 360]);
        check(&times, &ranges);
    }

    #[test]
    fn random_series_follow_the_rules() {
        // splitmix64, seeded.
        let mut state = 0x5eed_u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for _ in 0..300 {
            let rows = 1 + (next() % 12_000) as usize;
            // Steps from 1 ms to 2 min, with occasional gaps of hours.
            let step = 1_000_000 * (1 + (next() % 120_000) as i64);
            let mut t = T0 - HOUR * 48 + (next() % (HOUR as u64 * 96)) as i64;
            let mut times = Vec::with_capacity(rows);
            for _ in 0..rows {
                times.push(t);
                t += 1 + (next() % step as u64) as i64;
                if next() % 500 == 0 {
                    t += HOUR * (1 + (next() % 5) as i64);
                }
            }
            check(&times, &chunk_ranges(&times));
        }
    }
}
