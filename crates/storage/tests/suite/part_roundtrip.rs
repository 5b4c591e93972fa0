//! Parts written from seeded random series read back equal: whole, projected, by time range,
//! chunk by chunk, with pre-aggregates equal to brute force over the values.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::model::{FieldId, FieldType, SeriesId};
use strata_storage::part::{
    CHUNK_ALIGN_NS, FORMAT_VERSION, MAX_ROWS_PER_CHUNK, OLDEST_READABLE_VERSION, PartReader,
    PartWriter, PreAgg, chunk_ranges,
};
use tempfile::TempDir;

/// splitmix64: small, seeded, good enough for test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn row_count(rng: &mut Rng) -> usize {
    match rng.below(8) {
        0 => 1,
        1 => MAX_ROWS_PER_CHUNK,
        2 => MAX_ROWS_PER_CHUNK + 1,
        3 => 8640,
        4 => 2 + rng.below(3 * MAX_ROWS_PER_CHUNK as u64) as usize,
        _ => 1 + rng.below(300) as usize,
    }
}

fn float(rng: &mut Rng) -> f64 {
    match rng.below(10) {
        0 => [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::MIN_POSITIVE / 4.0,
        ][rng.below(6) as usize],
        1 => f64::from_bits(rng.next()),
        _ => (rng.below(20_000) as f64 - 10_000.0) / 100.0,
    }
}

fn values(rng: &mut Rng, field_type: FieldType, n: usize) -> Values {
    let extreme = rng.chance(20);
    let mut walk = rng.next() as i64;
    match field_type {
        FieldType::Float => Values::Float((0..n).map(|_| float(rng)).collect()),
        FieldType::Integer => Values::Integer(
            (0..n)
                .map(|_| {
                    if extreme {
                        i64::MAX - rng.below(1000) as i64
                    } else {
                        walk = walk.wrapping_add(rng.below(201) as i64 - 100);
                        walk
                    }
                })
                .collect(),
        ),
        FieldType::Unsigned => Values::Unsigned(
            (0..n)
                .map(|_| {
                    if extreme {
                        u64::MAX - rng.below(1000)
                    } else {
                        rng.below(1 << 40)
                    }
                })
                .collect(),
        ),
        FieldType::Boolean => {
            let p = rng.below(101);
            Values::Boolean((0..n).map(|_| rng.below(100) < p).collect())
        }
        FieldType::String => Values::String(
            (0..n)
                .map(|_| match rng.below(4) {
                    0 => String::new(),
                    1 => format!("héllo-{}-✓", rng.below(1_000_000)),
                    _ => ["idle", "busy", "down"][rng.below(3) as usize].to_string(),
                })
                .collect(),
        ),
    }
}

/// A canonical random series: every column has a value, `present` only when there are gaps.
fn series(rng: &mut Rng) -> SeriesData {
    let rows = row_count(rng);
    let mut t = (rng.next() >> 4) as i64 - (1 << 59);
    let regular = rng.chance(50);
    let times = (0..rows)
        .map(|_| {
            t += if regular {
                10_000_000_000
            } else {
                1 + rng.below(1_000_000) as i64
            };
            t
        })
        .collect();
    let types = [
        FieldType::Float,
        FieldType::Integer,
        FieldType::Unsigned,
        FieldType::Boolean,
        FieldType::String,
    ];
    let mut columns = Vec::new();
    for field in 0..8u32 {
        if rng.chance(30) {
            continue;
        }
        let field_type = types[rng.below(5) as usize];
        let present = match rng.below(4) {
            0 | 1 => None,
            2 => Some((0..rows).map(|_| rng.chance(50)).collect::<Vec<bool>>()),
            // Sparse: many chunks have no value of this field at all.
            _ => Some((0..rows).map(|_| rng.below(3000) == 0).collect()),
        };
        let count = present
            .as_ref()
            .map_or(rows, |p| p.iter().filter(|x| **x).count());
        if count == 0 {
            continue;
        }
        let present = present.filter(|_| count < rows);
        columns.push(Column {
            field,
            values: values(rng, field_type, count),
            present,
        });
    }
    SeriesData { times, columns }
}

/// Equality with floats compared by bits (NaN, -0.0).
fn assert_same(got: &SeriesData, want: &SeriesData, what: &str) {
    assert_eq!(got.times, want.times, "{what}: times");
    let fields = |d: &SeriesData| d.columns.iter().map(|c| c.field).collect::<Vec<_>>();
    assert_eq!(fields(got), fields(want), "{what}: fields");
    for (g, w) in got.columns.iter().zip(&want.columns) {
        assert_eq!(
            g.present, w.present,
            "{what}: presence of field {}",
            g.field
        );
        match (&g.values, &w.values) {
            (Values::Float(a), Values::Float(b)) => {
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(a), bits(b), "{what}: field {}", g.field);
            }
            (a, b) => assert_eq!(a, b, "{what}: field {}", g.field),
        }
    }
}

fn project(data: &SeriesData, fields: &[FieldId]) -> SeriesData {
    let mut out = data.clone();
    out.columns.retain(|c| fields.contains(&c.field));
    out
}

fn write_part(path: &Path, all: &[(SeriesId, SeriesData)]) {
    write_part_version(path, all, FORMAT_VERSION);
}

fn write_part_version(path: &Path, all: &[(SeriesId, SeriesData)], version: u32) {
    let mut writer = PartWriter::create_with_version(path, version).unwrap();
    for (id, data) in all {
        writer.write_series(*id, id % 3, data).unwrap();
    }
    let summary = writer.finish().unwrap();
    assert_eq!(summary.series as usize, all.len());
    assert_eq!(summary.file_bytes, std::fs::metadata(path).unwrap().len());
}

fn random_part(seed: u64, series_count: usize) -> Vec<(SeriesId, SeriesData)> {
    let mut rng = Rng(seed);
    let mut id = 0;
    (0..series_count)
        .map(|_| {
            id += 1 + rng.below(1000) as u32;
            (id, series(&mut rng))
        })
        .collect()
}

#[test]
fn part_random_parts_read_back_whole_projected_and_by_range() {
    // Every readable format version, each written from the same series.
    let versions = OLDEST_READABLE_VERSION..=FORMAT_VERSION;
    for (seed, version) in (1..=6u64).flat_map(|s| versions.clone().map(move |v| (s, v))) {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("p");
        let all = random_part(seed, 25);
        write_part_version(&path, &all, version);
        let reader = PartReader::open(&path).unwrap();
        assert_eq!(reader.version(), version);
        let s = reader.summary();
        assert_eq!(
            s.rows,
            all.iter().map(|(_, d)| d.rows() as u64).sum::<u64>()
        );
        let points: usize = all
            .iter()
            .flat_map(|(_, d)| d.columns.iter().map(|c| c.values.len()))
            .sum();
        assert_eq!(s.points, points as u64);
        assert_eq!(
            s.min_time,
            all.iter().map(|(_, d)| d.times[0]).min().unwrap()
        );
        assert_eq!(
            s.max_time,
            all.iter()
                .map(|(_, d)| *d.times.last().unwrap())
                .max()
                .unwrap()
        );
        let ids: Vec<_> = reader.series_ids().collect();
        assert_eq!(
            ids,
            all.iter().map(|(id, _)| (*id, id % 3)).collect::<Vec<_>>()
        );
        assert!(
            !reader.has_series(0)
                && reader
                    .read_series(0, i64::MIN, i64::MAX, None)
                    .unwrap()
                    .is_none()
        );
        let mut rng = Rng(seed ^ 0xabc);
        for (id, data) in &all {
            assert!(reader.has_series(*id));
            let what = format!("seed {seed} version {version} series {id}");
            let got = reader
                .read_series(*id, i64::MIN, i64::MAX, None)
                .unwrap()
                .unwrap();
            assert_same(&got, data, &what);
            let fields: Vec<FieldId> = (0..8).filter(|_| rng.chance(50)).collect();
            let fields_all = fields.clone();
            let got = reader
                .read_series(*id, i64::MIN, i64::MAX, Some(&fields))
                .unwrap()
                .unwrap();
            assert_same(
                &got,
                &project(data, &fields),
                &format!("{what} fields {fields:?}"),
            );
            for _ in 0..6 {
                // Ranges around real timestamps, so chunk edges and exact bounds are hit.
                let pick = |rng: &mut Rng| {
                    let t = data.times[rng.below(data.rows() as u64) as usize];
                    t + rng.below(3) as i64 - 1
                };
                let (a, b) = (pick(&mut rng), pick(&mut rng));
                let (start, end) = (a.min(b), a.max(b));
                let fields = if rng.chance(50) {
                    None
                } else {
                    Some(&fields[..])
                };
                let want = fields
                    .map_or(data.clone(), |f| project(data, f))
                    .slice_time(start, end);
                let got = reader.read_series(*id, start, end, fields).unwrap();
                let what = format!("{what} range {start}..{end} fields {fields:?}");
                // Chunks in an inclusive range: exactly the overlapping ones, skipped or not.
                let all_chunks = reader.chunks(*id).unwrap();
                let overlapping: Vec<_> = all_chunks
                    .into_iter()
                    .filter(|c| c.max_time >= start && c.min_time <= end)
                    .collect();
                // (Debug text, since pre-aggregate sums may be NaN.)
                assert_eq!(
                    format!("{:?}", reader.chunks_in(*id, start, end, None).unwrap()),
                    format!("{overlapping:?}"),
                    "{what}"
                );
                // With fields, the same chunks with those columns only.
                let mut narrowed = overlapping.clone();
                for chunk in &mut narrowed {
                    chunk.columns.retain(|c| fields_all.contains(&c.field));
                }
                assert_eq!(
                    format!("{narrowed:?}"),
                    format!(
                        "{:?}",
                        reader
                            .chunks_in(*id, start, end, Some(&fields_all))
                            .unwrap()
                    ),
                    "{what}"
                );
                match got {
                    None => assert_eq!(want.rows(), 0, "{what}"),
                    Some(got) => assert_same(&got, &want, &what),
                }
            }
        }
    }
}

#[test]
fn part_chunks_follow_the_cut_and_reassemble() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let mut rng = Rng(7);
    let cases = [1usize, 2, 4095, 4096, 4097, 8640, 3 * 4096 + 1];
    let mut all = Vec::new();
    for (i, &rows) in cases.iter().enumerate() {
        let mut data = series(&mut rng);
        while data.rows() < rows {
            data = series(&mut rng);
        }
        all.push((i as u32, data.slice_rows(0, rows)));
    }
    // A day of 10 s rows from midnight 2019-04-01 UTC.
    let mut day = series(&mut rng);
    while day.rows() < 8640 {
        day = series(&mut rng);
    }
    let mut day = day.slice_rows(0, 8640);
    day.times = (0..8640)
        .map(|i| 1_554_076_800_000_000_000 + i * 10_000_000_000)
        .collect();
    all.push((cases.len() as u32, day));
    write_part(&path, &all);
    let reader = PartReader::open(&path).unwrap();
    for (id, data) in &all {
        let chunks = reader.chunks(*id).unwrap();
        let sizes: Vec<usize> = chunks.iter().map(|c| c.rows as usize).collect();
        let want: Vec<usize> = chunk_ranges(&data.times).iter().map(|r| r.len()).collect();
        assert_eq!(sizes, want, "{} rows", data.rows());
        assert!(sizes.iter().all(|&s| s <= MAX_ROWS_PER_CHUNK));
        if *id as usize == cases.len() {
            // The hour-aligned day: one chunk an hour, each starting on the hour, and
            // evenly spaced rows need no time block.
            assert_eq!(sizes, [360; 24]);
            assert!(chunks.iter().all(|c| c.min_time % CHUNK_ALIGN_NS == 0));
            assert!(chunks.iter().all(|c| c.time_block.is_none()));
        }
        let mut from = 0;
        for chunk in &chunks {
            let got = reader.read_chunk(chunk, None).unwrap();
            let want = data.slice_rows(from, from + chunk.rows as usize);
            assert_same(&got, &want, "chunk");
            assert_eq!(
                (chunk.min_time, chunk.max_time),
                (want.times[0], *want.times.last().unwrap())
            );
            check_preaggs(chunk, &want);
            let fields = [1, 5];
            assert_same(
                &reader.read_chunk(chunk, Some(&fields)).unwrap(),
                &project(&want, &fields),
                "projected chunk",
            );
            from += chunk.rows as usize;
        }
        assert_eq!(from, data.rows());
    }
}

fn check_preaggs(chunk: &strata_storage::part::ChunkMeta, data: &SeriesData) {
    assert_eq!(chunk.columns.len(), data.columns.len());
    for (meta, column) in chunk.columns.iter().zip(&data.columns) {
        assert_eq!(
            (meta.field, meta.field_type),
            (column.field, column.values.field_type())
        );
        assert_eq!(meta.presence.is_some(), column.present.is_some());
        let want = brute_force(&column.values);
        let same = match (meta.preagg, want) {
            (
                PreAgg::Float {
                    count,
                    min,
                    max,
                    sum,
                    first,
                    last,
                    has_nan,
                },
                PreAgg::Float {
                    count: c,
                    min: mi,
                    max: ma,
                    sum: s,
                    first: f,
                    last: l,
                    has_nan: h,
                },
            ) => {
                let bits = |x: [f64; 5]| x.map(f64::to_bits);
                count == c
                    && has_nan == h
                    && bits([min, max, sum, first, last]) == bits([mi, ma, s, f, l])
            }
            (got, want) => got == want,
        };
        assert!(same, "field {}: {:?} != {want:?}", meta.field, meta.preagg);
    }
}

/// Pre-aggregates computed the slow, obvious way.
fn brute_force(values: &Values) -> PreAgg {
    let count = values.len() as u32;
    match values {
        Values::Float(v) => {
            let mut sorted: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
            sorted.sort_by(f64::total_cmp);
            PreAgg::Float {
                count,
                min: sorted.first().copied().unwrap_or(f64::NAN),
                max: sorted.last().copied().unwrap_or(f64::NAN),
                sum: v.iter().fold(0.0, |a, b| a + b),
                first: v[0],
                last: *v.last().unwrap(),
                has_nan: v.iter().any(|x| x.is_nan()),
            }
        }
        Values::Integer(v) => PreAgg::Integer {
            count,
            min: *v.iter().min().unwrap(),
            max: *v.iter().max().unwrap(),
            sum: v.iter().map(|&x| x as i128).sum(),
            first: v[0],
            last: *v.last().unwrap(),
        },
        Values::Unsigned(v) => PreAgg::Unsigned {
            count,
            min: *v.iter().min().unwrap(),
            max: *v.iter().max().unwrap(),
            sum: v.iter().map(|&x| x as u128).sum(),
            first: v[0],
            last: *v.last().unwrap(),
        },
        Values::Boolean(v) => PreAgg::Boolean {
            count,
            first: v[0],
            last: *v.last().unwrap(),
            trues: v.iter().filter(|b| **b).count() as u32,
        },
        Values::String(_) => PreAgg::String { count },
    }
}

#[test]
fn part_preaggs_of_special_values() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let float_cases: Vec<Vec<f64>> = vec![
        vec![f64::NAN, 1.0, -0.0, 0.0, f64::NAN],
        vec![f64::NAN, f64::NAN],
        vec![f64::INFINITY, f64::NEG_INFINITY, 3.5],
        vec![0.0, -0.0],
        vec![-0.0],
        vec![f64::MAX, f64::MAX],
    ];
    let int_cases: Vec<Vec<i64>> = vec![
        vec![i64::MAX; 4096],
        vec![i64::MIN; 3000],
        vec![i64::MIN, i64::MAX, -1, 0],
    ];
    let mut all = Vec::new();
    for (i, v) in float_cases.into_iter().enumerate() {
        let times = (0..v.len() as i64).collect();
        let columns = vec![Column {
            field: 0,
            values: Values::Float(v),
            present: None,
        }];
        all.push((i as u32, SeriesData { times, columns }));
    }
    for (i, v) in int_cases.into_iter().enumerate() {
        let times = (0..v.len() as i64).collect();
        let u = v.iter().map(|&x| x as u64 | (1 << 63)).collect();
        let columns = vec![
            Column {
                field: 0,
                values: Values::Integer(v),
                present: None,
            },
            Column {
                field: 1,
                values: Values::Unsigned(u),
                present: None,
            },
        ];
        all.push((100 + i as u32, SeriesData { times, columns }));
    }
    write_part(&path, &all);
    let reader = PartReader::open(&path).unwrap();
    for (id, data) in &all {
        let chunks = reader.chunks(*id).unwrap();
        assert_eq!(chunks.len(), 1);
        check_preaggs(&chunks[0], data);
        assert_same(
            &reader.read_chunk(&chunks[0], None).unwrap(),
            data,
            "special values",
        );
    }
    // The i128 sum really is beyond i64.
    let PreAgg::Integer { sum, .. } = reader.chunks(100).unwrap()[0].columns[0].preagg else {
        panic!("integer column expected");
    };
    assert_eq!(sum, i64::MAX as i128 * 4096);
    let PreAgg::Float {
        min, max, has_nan, ..
    } = reader.chunks(0).unwrap()[0].columns[0].preagg
    else {
        panic!("float column expected");
    };
    assert!(has_nan && min.to_bits() == (-0.0f64).to_bits() && max == 1.0);
}

/// Adds fields 8 (i64) and 9 (2-decimal f64) as small-step walks, which the codec stores
/// rANS-coded, each with gaps half of the time.
fn add_walk_columns(rng: &mut Rng, data: &mut SeriesData) {
    let rows = data.rows();
    for field in [8u32, 9] {
        let present = rng
            .chance(50)
            .then(|| (0..rows).map(|_| rng.chance(70)).collect::<Vec<bool>>());
        let count = present
            .as_ref()
            .map_or(rows, |p| p.iter().filter(|x| **x).count());
        if count == 0 {
            continue;
        }
        let present = present.filter(|_| count < rows);
        let mut walk = rng.below(100_000) as i64;
        let walk: Vec<i64> = (0..count)
            .map(|_| {
                walk += rng.below(7) as i64 - 3;
                walk
            })
            .collect();
        let values = if field == 8 {
            Values::Integer(walk)
        } else {
            Values::Float(walk.iter().map(|&m| m as f64 / 100.0).collect())
        };
        data.columns.push(Column {
            field,
            values,
            present,
        });
    }
}

#[test]
fn part_chunk_windows_equal_decode_then_slice() {
    let mut regular = 0;
    for seed in 21..=26u64 {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join("p");
        let mut all = random_part(seed, 12);
        let mut rng = Rng(seed ^ 0x5eed);
        for (_, data) in &mut all {
            add_walk_columns(&mut rng, data);
        }
        write_part(&path, &all);
        let reader = PartReader::open(&path).unwrap();
        let mut cut = 0;
        for (id, _) in &all {
            for chunk in reader.chunks(*id).unwrap() {
                let whole = reader.read_chunk(&chunk, None).unwrap();
                let t = &whole.times;
                let n = t.len();
                regular += usize::from(n > 2 && t[2] - t[1] == t[1] - t[0]);
                let (lo, hi) = (chunk.min_time, chunk.max_time);
                // Cuts at the first, last and middle rows, between rows, and outside.
                let mut ranges = vec![
                    (i64::MIN, i64::MAX),
                    (lo, hi + 1),
                    (lo, hi),
                    (lo + 1, hi + 1),
                    (lo + 1, hi),
                    (hi, i64::MAX),
                    (i64::MIN, lo + 1),
                    (i64::MIN, lo),
                    (hi + 1, i64::MAX),
                    (t[n / 2], t[n / 2] + 1),
                    (t[n / 3], t[2 * n / 3]),
                    (t[n / 3] + 1, t[2 * n / 3] - 1),
                    (t[n / 2], t[n / 2]),
                ];
                for _ in 0..6 {
                    let pick =
                        |rng: &mut Rng| t[rng.below(n as u64) as usize] + rng.below(3) as i64 - 1;
                    let (a, b) = (pick(&mut rng), pick(&mut rng));
                    ranges.push((a.min(b), a.max(b)));
                }
                let fields: Vec<FieldId> = (0..10).filter(|_| rng.chance(50)).collect();
                for (start, end) in ranges {
                    if start > end {
                        continue;
                    }
                    for fields in [None, Some(&fields[..])] {
                        let want = reader
                            .read_chunk(&chunk, fields)
                            .unwrap()
                            .slice_time(start, end);
                        let got = reader
                            .read_chunk_window(&chunk, fields, start, end)
                            .unwrap();
                        let what =
                            format!("seed {seed} series {id} window {start}..{end} {fields:?}");
                        assert_same(&got, &want, &what);
                        cut += usize::from(want.rows() > 0 && want.rows() < n);
                    }
                }
            }
        }
        assert!(cut > 100, "seed {seed}: only {cut} windows cut a chunk");
    }
    assert!(regular > 10, "only {regular} chunks with regular times");
}
