//! Damaged part files: every flipped byte and every truncation is an error (Corrupt or Io)
//! from `open` or from a read, never a panic and never different data.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::error::StorageError;
use strata_storage::model::SeriesId;
use strata_storage::part::{PartReader, PartWriter};
use tempfile::TempDir;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Series with every column type, gaps, and (for `rows` over 4,096) several chunks.
fn data(rng: &mut Rng, rows: usize) -> SeriesData {
    let times = (0..rows as i64)
        .map(|i| 1_700_000_000_000_000_000 + i * 10_000_000_000 + (rng.next() % 7) as i64)
        .collect();
    let present: Vec<bool> = (0..rows)
        .map(|i| i == 0 || !rng.next().is_multiple_of(3))
        .collect();
    let n = present.iter().filter(|x| **x).count();
    // Canonical: presence only when some row lacks the field.
    let present = Some(present).filter(|p| p.contains(&false));
    let columns = vec![
        Column {
            field: 0,
            values: Values::Float(
                (0..rows)
                    .map(|_| (rng.next() % 10_000) as f64 / 7.0)
                    .collect(),
            ),
            present: None,
        },
        Column {
            field: 1,
            values: Values::Integer((0..n).map(|_| rng.next() as i64 % 100).collect()),
            present: present.clone(),
        },
        Column {
            field: 2,
            values: Values::Unsigned((0..rows).map(|_| rng.next() % 1000).collect()),
            present: None,
        },
        Column {
            field: 3,
            values: Values::Boolean((0..rows).map(|_| rng.next().is_multiple_of(2)).collect()),
            present: None,
        },
        Column {
            field: 4,
            values: Values::String((0..n).map(|_| format!("s{}", rng.next() % 5)).collect()),
            present,
        },
    ];
    SeriesData { times, columns }
}

fn write(path: &Path, series: &[(SeriesId, SeriesData)]) -> Vec<u8> {
    let mut writer = PartWriter::create(path).unwrap();
    for (id, d) in series {
        writer.write_series(*id, 1, d).unwrap();
    }
    writer.finish().unwrap();
    std::fs::read(path).unwrap()
}

/// Opens and reads everything (the recovery section too, which only `strata check` and
/// `strata repair` read); `Ok` only if it all equals `want`.
fn read_all(path: &Path, want: &[(SeriesId, SeriesData)]) -> Result<(), StorageError> {
    let reader = PartReader::open(path)?;
    reader.read_recovery()?;
    let ids: Vec<SeriesId> = reader.series_ids().map(|(id, _)| id).collect();
    assert_eq!(
        ids,
        want.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        "open succeeded with other series"
    );
    for (id, d) in want {
        let got = reader.read_series(*id, i64::MIN, i64::MAX, None)?;
        assert_eq!(got.as_ref(), Some(d), "read succeeded with other data");
        // One field: its blocks come out of one read spanning the series' chunks.
        reader.read_series(*id, i64::MIN, i64::MAX, Some(&[4]))?;
        for chunk in reader.chunks(*id)? {
            reader.read_chunk(&chunk, Some(&[4]))?;
        }
    }
    Ok(())
}

fn assert_damage_detected(path: &Path, bytes: &[u8], want: &[(SeriesId, SeriesData)], what: &str) {
    std::fs::write(path, bytes).unwrap();
    match read_all(path, want) {
        Ok(()) => panic!("{what}: damage not detected"),
        Err(StorageError::Corrupt { .. } | StorageError::Io { .. }) => {}
        Err(e) => panic!("{what}: unexpected error kind: {e}"),
    }
}

#[test]
fn part_every_flipped_byte_of_a_small_part_is_detected() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let mut rng = Rng(1);
    let want = vec![
        (3, data(&mut rng, 1)),
        (9, data(&mut rng, 40)),
        (10, data(&mut rng, 7)),
    ];
    let good = write(&path, &want);
    read_all(&path, &want).unwrap();
    let damaged = dir.path().join("d");
    for pos in 0..good.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bytes = good.clone();
            bytes[pos] ^= mask;
            assert_damage_detected(&damaged, &bytes, &want, &format!("byte {pos} ^ {mask:#x}"));
        }
    }
}

#[test]
fn part_sampled_flips_of_a_multi_chunk_part_are_detected() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let mut rng = Rng(2);
    let want: Vec<_> = (0..6)
        .map(|i| (i * 2, data(&mut rng, 500 + 3000 * i as usize)))
        .collect();
    let good = write(&path, &want);
    read_all(&path, &want).unwrap();
    let damaged = dir.path().join("d");
    for _ in 0..300 {
        let pos = (rng.next() % good.len() as u64) as usize;
        let mask = (rng.next() % 255 + 1) as u8;
        let mut bytes = good.clone();
        bytes[pos] ^= mask;
        assert_damage_detected(&damaged, &bytes, &want, &format!("byte {pos} ^ {mask:#x}"));
    }
}

#[test]
fn part_truncated_and_extended_parts_are_detected() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let mut rng = Rng(3);
    let want = vec![(0, data(&mut rng, 5000)), (1, data(&mut rng, 3))];
    let good = write(&path, &want);
    let damaged = dir.path().join("d");
    let step = (good.len() / 400).max(1);
    let lengths = (0..good.len())
        .step_by(step)
        .chain(good.len().saturating_sub(100)..good.len());
    for len in lengths {
        assert_damage_detected(
            &damaged,
            &good[..len],
            &want,
            &format!("truncated to {len}"),
        );
    }
    for extra in [1usize, 8, 72, 4096] {
        let mut bytes = good.clone();
        bytes.extend(std::iter::repeat_n(0u8, extra));
        assert_damage_detected(&damaged, &bytes, &want, &format!("{extra} bytes appended"));
    }
    // A missing file is an Io error naming the path.
    let err = PartReader::open(&dir.path().join("missing")).unwrap_err();
    assert!(matches!(err, StorageError::Io { .. }) && err.to_string().contains("missing"));
}

#[test]
fn part_empty_part_damage_is_detected() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let good = write(&path, &[]);
    let damaged = dir.path().join("d");
    for pos in 0..good.len() {
        let mut bytes = good.clone();
        bytes[pos] ^= 0x10;
        assert_damage_detected(&damaged, &bytes, &[], &format!("byte {pos}"));
    }
}
