//! Parts whose checksums are all valid but whose contents disagree: what a writer bug or
//! memory corruption before checksumming would produce. Reads must fail with Corrupt (or
//! return data that passes `SeriesData::check`), never panic.

use std::path::Path;

use strata_codec as codec;
use tempfile::TempDir;

use super::format::{FOOTER_LEN, Footer, encode_header, put_i64, put_u64};
use super::{PartReader, PartWriter};
use crate::column::{Column, SeriesData, Values};
use crate::error::StorageError;

/// The next value of a xorshift64 generator (seeded tests of parts).
pub(super) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// A one-series part written by hand: the index claims `rows` rows from 1 to `rows` and
/// integer values 5, 6, ... (one per row); the blocks hold `times` and `values`, plus `extra`
/// bytes after the value block's codec block.
fn forge(rows: u64, times: &[i64], values: &[i64], extra: &[u8]) -> Vec<u8> {
    // Format 1: every chunk has a time block and every column its count.
    let mut file = encode_header(1).to_vec();
    let mut index = Vec::new();
    let block = |bytes: Vec<u8>, index: &mut Vec<u8>, file: &mut Vec<u8>| {
        put_u64(index, bytes.len() as u64);
        index.extend_from_slice(&crc32fast::hash(&bytes).to_le_bytes());
        file.extend_from_slice(&bytes);
    };
    for v in [0, 0, 1, rows] {
        put_u64(&mut index, v); // series, table, chunks, rows
    }
    put_i64(&mut index, 1);
    put_u64(&mut index, rows - 1);
    let mut b = Vec::new();
    codec::timestamp::encode(times, &mut b);
    block(b, &mut index, &mut file);
    for v in [1, 0] {
        put_u64(&mut index, v); // one column, field 0
    }
    index.push(2); // integer
    put_u64(&mut index, 0); // no presence block
    let mut b = Vec::new();
    codec::integer::encode(values, &mut b);
    b.extend_from_slice(extra);
    block(b, &mut index, &mut file);
    // count, min 5, max - min, first - min, last - min, sum
    for v in [rows, 10, rows - 1, 0, rows - 1] {
        put_u64(&mut index, v);
    }
    put_i64(&mut index, (5..5 + rows as i64).sum());
    finish(file, &index, (1, rows), (1, rows as i64), 1)
}

/// Appends `index` (stored raw) and a matching footer.
fn finish(
    mut file: Vec<u8>,
    index: &[u8],
    (series, rows): (u32, u64),
    time: (i64, i64),
    version: u32,
) -> Vec<u8> {
    let footer = Footer {
        index_offset: file.len() as u64,
        index_stored_len: index.len() as u64,
        index_raw_len: index.len() as u64,
        index_crc: crc32fast::hash(index),
        series,
        rows,
        min_time: time.0,
        max_time: time.1,
        version,
    };
    file.extend_from_slice(index);
    file.extend_from_slice(&footer.encode());
    file
}

fn read_everything(path: &Path) -> Result<(), StorageError> {
    let reader = PartReader::open(path)?;
    let ids: Vec<u32> = reader.series_ids().map(|(id, _)| id).collect();
    for id in ids {
        for chunk in reader.chunks(id)? {
            reader
                .read_chunk(&chunk, None)?
                .check()
                .map_err(StorageError::Invalid)?;
        }
        if let Some(data) = reader.read_series(id, i64::MIN, i64::MAX, None)? {
            data.check().map_err(StorageError::Invalid)?;
        }
    }
    Ok(())
}

#[test]
fn part_forged_blocks_that_disagree_with_the_index_are_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    std::fs::write(&path, forge(3, &[1, 2, 3], &[5, 6, 7], &[])).unwrap();
    read_everything(&path).unwrap();
    let cases: [(&str, Vec<u8>); 5] = [
        ("fewer times", forge(3, &[1, 3], &[5, 6, 7], &[])),
        ("other times", forge(3, &[1, 2, 4], &[5, 6, 7], &[])),
        ("fewer values", forge(3, &[1, 2, 3], &[5, 6], &[])),
        ("more values", forge(3, &[1, 2, 3], &[5, 6, 7, 8], &[])),
        ("trailing bytes", forge(3, &[1, 2, 3], &[5, 6, 7], &[0])),
    ];
    for (what, bytes) in cases {
        std::fs::write(&path, bytes).unwrap();
        let reader = PartReader::open(&path).unwrap();
        let chunk = &reader.chunks(0).unwrap()[0];
        let err = reader.read_chunk(chunk, None).unwrap_err();
        assert!(matches!(err, StorageError::Corrupt { .. }), "{what}: {err}");
    }
}

/// Mutates bytes of a real index (re-checksummed, stored raw) thousands of times: open and
/// reads may fail or succeed, but never panic, and what they return passes `check`.
#[test]
fn part_mutated_index_with_valid_checksums_never_panics() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    // Format 2: the same index as format 3, and the file is index then footer, which is
    // what `finish` rebuilds (format 3's recovery section is tested on its own).
    let mut writer = PartWriter::create_with_version(&path, 2).unwrap();
    for id in 0..4u32 {
        let rows = [1, 30, 5000, 9][id as usize];
        let times = (0..rows as i64).map(|t| t * 1000 + i64::from(id)).collect();
        let present: Vec<bool> = (0..rows).map(|r| r % 3 != 1 || r == 0).collect();
        let n = present.iter().filter(|p| **p).count();
        let columns = vec![
            Column {
                field: 0,
                values: Values::Float((0..rows).map(|v| v as f64 / 3.0).collect()),
                present: None,
            },
            Column {
                field: 1,
                values: Values::Integer((0..n as i64).collect()),
                present: Some(present.clone()).filter(|_| n < rows),
            },
            Column {
                field: 2,
                values: Values::Unsigned((0..rows as u64).collect()),
                present: None,
            },
            Column {
                field: 3,
                values: Values::Boolean((0..n).map(|v| v % 2 == 0).collect()),
                present: Some(present).filter(|_| n < rows),
            },
            Column {
                field: 4,
                values: Values::String((0..rows).map(|v| format!("{}", v % 4)).collect()),
                present: None,
            },
        ];
        writer
            .write_series(id * 7, id, &SeriesData { times, columns })
            .unwrap();
    }
    writer.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    let at = good.len() - FOOTER_LEN as usize;
    let footer = Footer::decode(&path, at as u64, good[at..].try_into().unwrap()).unwrap();
    let stored = &good[footer.index_offset as usize..at];
    let raw = if footer.index_stored_len == footer.index_raw_len {
        stored.to_vec()
    } else {
        zstd::bulk::decompress(stored, footer.index_raw_len as usize).unwrap()
    };
    let data = &good[..footer.index_offset as usize];
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut next = move || xorshift(&mut state);
    let (mut opened, mut read) = (0, 0);
    for _ in 0..3000 {
        let mut index = raw.clone();
        for _ in 0..1 + next() % 3 {
            let pos = (next() % index.len() as u64) as usize;
            index[pos] = next() as u8;
        }
        let time = (footer.min_time, footer.max_time);
        std::fs::write(
            &path,
            finish(
                data.to_vec(),
                &index,
                (footer.series, footer.rows),
                time,
                footer.version,
            ),
        )
        .unwrap();
        opened += usize::from(PartReader::open(&path).is_ok());
        read += usize::from(read_everything(&path).is_ok());
    }
    // The mutations reach past open (pre-aggregates, CRCs) and sometimes through reads.
    assert!(opened > 100 && read > 10, "opened {opened}, read {read}");
}

/// A format 3 part gives back the recovery section it was written with; formats 1 and 2
/// have none.
#[test]
fn recovery_section_round_trips() {
    use super::{PartRecovery, Provenance, SeriesKey, TableNames};
    use crate::model::FieldType;
    let dir = TempDir::new().unwrap();
    let data = SeriesData {
        times: vec![10, 20, 30],
        columns: vec![Column {
            field: 0,
            values: Values::Float(vec![1.0, 2.0, 3.0]),
            present: None,
        }],
    };
    let want = PartRecovery {
        provenance: Provenance {
            order: 41,
            level: 3,
            tombstones_applied: 7,
            replaces: vec![5, 9, 12],
        },
        tables: vec![TableNames {
            id: 2,
            database: "db".into(),
            name: "cpu".into(),
            fields: vec![(0, FieldType::Float, "usage_user".into())],
        }],
        series: (0..3)
            .map(|id| SeriesKey {
                id,
                table: 2,
                tags: vec![
                    ("host".into(), format!("h{id}")),
                    ("region".into(), "é".into()),
                ],
            })
            .collect(),
    };
    let path = dir.path().join("v3");
    let mut writer = PartWriter::create(&path).unwrap();
    writer.set_provenance(want.provenance.clone());
    writer.set_tables(want.tables.clone());
    for key in &want.series {
        writer.write_series(key.id, key.table, &data).unwrap();
        let tags = key.tags.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        writer.add_series_key(key.id, key.table, tags.collect::<Vec<_>>().into_iter());
    }
    writer.finish().unwrap();
    let reader = PartReader::open(&path).unwrap();
    assert_eq!(reader.read_recovery().unwrap(), Some(want));
    assert_eq!(
        reader
            .read_series(1, i64::MIN, i64::MAX, None)
            .unwrap()
            .unwrap(),
        data
    );

    let old = dir.path().join("v2");
    let mut writer = PartWriter::create_with_version(&old, 2).unwrap();
    writer.write_series(0, 2, &data).unwrap();
    writer.finish().unwrap();
    assert_eq!(
        PartReader::open(&old).unwrap().read_recovery().unwrap(),
        None
    );
}

/// Damage in the recovery section is reported by `read_recovery` (the rows still read);
/// damage in its trailer makes the part fail to open, like any other damaged length.
#[test]
fn damaged_recovery_section_is_reported() {
    use super::recovery::RECOVERY_TRAILER_LEN;
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let data = SeriesData {
        times: vec![1, 2],
        columns: vec![Column {
            field: 0,
            values: Values::Integer(vec![4, 5]),
            present: None,
        }],
    };
    let mut writer = PartWriter::create(&path).unwrap();
    writer.write_series(3, 0, &data).unwrap();
    writer.add_series_key(3, 0, [("host", "a")].into_iter());
    writer.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    let trailer_at = good.len() - FOOTER_LEN as usize - RECOVERY_TRAILER_LEN as usize;

    let mut bad = good.clone();
    bad[trailer_at - 1] ^= 0x40;
    std::fs::write(&path, &bad).unwrap();
    let reader = PartReader::open(&path).unwrap();
    assert!(
        reader
            .read_series(3, i64::MIN, i64::MAX, None)
            .unwrap()
            .is_some()
    );
    let err = reader.read_recovery().unwrap_err();
    assert!(
        err.to_string().contains("recovery section checksum"),
        "{err}"
    );

    let mut bad = good;
    bad[trailer_at + 2] ^= 0x01;
    std::fs::write(&path, &bad).unwrap();
    let err = PartReader::open(&path).unwrap_err();
    assert!(
        err.to_string().contains("recovery trailer checksum"),
        "{err}"
    );
}

/// Parts whose indexes do not fit the budget read the same chunks and rows as parts whose
/// indexes all fit: dropped indexes are read again from their files, with their directories
/// walked again (in every format: format 1's chunk entries have no lengths to skip by).
#[test]
fn indexes_dropped_for_the_budget_are_read_again() {
    use super::{PartFiles, PartIndexes};
    let dir = TempDir::new().unwrap();
    let paths: Vec<_> = (0..12u32)
        .map(|p| {
            let path = dir.path().join(format!("{p}.part"));
            let mut writer = PartWriter::create_with_version(&path, 1 + p % 3).unwrap();
            for series in 0..20u32 {
                let rows = 50 + (series * 7 + p * 3) % 40;
                let data = SeriesData {
                    times: (0..rows as i64).map(|i| 1_000 + i * 10).collect(),
                    columns: vec![Column {
                        field: 0,
                        values: Values::Integer(
                            (0..rows as i64)
                                .map(|i| i * i + (series + p) as i64)
                                .collect(),
                        ),
                        present: None,
                    }],
                };
                writer.write_series(series, 1 + series % 2, &data).unwrap();
            }
            writer.finish().unwrap();
            path
        })
        .collect();
    let files = PartFiles::new(64);
    let all = PartIndexes::new(usize::MAX);
    let one = PartIndexes::new(1);
    let roomy: Vec<PartReader> = paths
        .iter()
        .map(|p| PartReader::open_in(p, &files, &all).unwrap())
        .collect();
    let tight: Vec<PartReader> = paths
        .iter()
        .map(|p| PartReader::open_in(p, &files, &one).unwrap())
        .collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..500 {
        xorshift(&mut state);
        let part = (state % 12) as usize;
        let series = ((state >> 8) % 21) as u32; // 20 is in no part
        let start = 1_000 + ((state >> 16) % 400) as i64;
        let want = roomy[part]
            .chunks_in(series, start, start + 200, None)
            .unwrap();
        let got = tight[part]
            .chunks_in(series, start, start + 200, None)
            .unwrap();
        assert_eq!(format!("{got:?}"), format!("{want:?}"));
        let want = roomy[part]
            .read_series(series, start, start + 200, None)
            .unwrap();
        let got = tight[part]
            .read_series(series, start, start + 200, None)
            .unwrap();
        assert_eq!(got, want, "part {part} series {series} from {start}");
    }
    // One index held at a time (the budget is one byte): the rest were read again.
    assert!(
        one.stats().bytes <= all.stats().bytes / 6,
        "{:?}",
        one.stats()
    );
    assert!(one.stats().reloads > 300, "{:?}", one.stats());
    assert_eq!(all.stats().reloads, 0);

    // Which series a part holds is known without its index: asking for one it does not
    // hold reads no index.
    let before = one.stats().reloads;
    for reader in &tight {
        assert!(reader.chunks_in(20, 0, i64::MAX, None).unwrap().is_empty());
        assert_eq!(reader.read_series(20, 0, i64::MAX, None).unwrap(), None);
        assert!(!reader.has_series(20) && reader.has_series(19));
        let series: Vec<_> = reader.series_ids().collect();
        assert_eq!(series, (0..20).map(|s| (s, 1 + s % 2)).collect::<Vec<_>>());
        assert_eq!(reader.tables().collect::<Vec<_>>(), vec![1, 2]);
    }
    assert_eq!(one.stats().reloads, before);

    // A read over every part series by series leases their indexes first: each is read
    // at most once, not once per series.
    let leases: Vec<_> = tight.iter().map(|r| r.lease_index().unwrap()).collect();
    let leased = one.stats();
    assert_eq!(leased.bytes, all.stats().bytes);
    for series in 0..20 {
        for (part, reader) in tight.iter().enumerate() {
            let got = reader.read_series(series, 0, i64::MAX, None).unwrap();
            let want = roomy[part].read_series(series, 0, i64::MAX, None).unwrap();
            assert_eq!(got, want);
        }
    }
    assert_eq!(one.stats().reloads, leased.reloads);
    drop(leases);
    tight[0].chunks(0).unwrap();
    assert!(
        one.stats().bytes <= all.stats().bytes / 6,
        "{:?}",
        one.stats()
    );
}
