//! What the part writer accepts and refuses, empty parts, canonical forms, shared readers.

// Helpers outside #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::error::StorageError;
use strata_storage::part::{PartReader, PartWriter};
use tempfile::TempDir;

fn ints(times: Vec<i64>, values: Vec<i64>, present: Option<Vec<bool>>) -> SeriesData {
    SeriesData {
        times,
        columns: vec![Column {
            field: 2,
            values: Values::Integer(values),
            present,
        }],
    }
}

#[test]
fn part_empty_part_round_trips() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("empty");
    let summary = PartWriter::create(&path).unwrap().finish().unwrap();
    assert_eq!((summary.series, summary.rows, summary.points), (0, 0, 0));
    assert!(summary.min_time > summary.max_time);
    let reader = PartReader::open(&path).unwrap();
    assert_eq!(reader.summary(), &summary);
    assert_eq!(reader.series_ids().count(), 0);
    assert!(reader.chunks(0).unwrap().is_empty());
    assert!(
        reader
            .read_series(0, i64::MIN, i64::MAX, None)
            .unwrap()
            .is_none()
    );
}

#[test]
fn part_writer_refuses_bad_order_and_bad_data_and_keeps_going() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let good = ints(vec![1, 2, 3], vec![7, 8, 9], None);
    let mut writer = PartWriter::create(&path).unwrap();
    writer.write_series(5, 0, &good).unwrap();
    for id in [5, 4, 0] {
        let err = writer.write_series(id, 0, &good).unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "id {id}: {err}");
    }
    let bad = [
        ints(vec![1, 1], vec![7, 8], None),
        ints(vec![2, 1], vec![7, 8], None),
        ints(vec![1, 2], vec![7], None),
        ints(vec![1, 2], vec![7, 8], Some(vec![true, false])),
        ints(vec![1, 2], vec![7], Some(vec![true])),
        SeriesData::default(),
    ];
    for (i, data) in bad.iter().enumerate() {
        let err = writer.write_series(10 + i as u32, 0, data).unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "case {i}: {err}");
    }
    writer.write_series(6, 1, &good).unwrap();
    let summary = writer.finish().unwrap();
    assert_eq!((summary.series, summary.rows, summary.points), (2, 6, 6));
    let reader = PartReader::open(&path).unwrap();
    assert_eq!(reader.series_ids().collect::<Vec<_>>(), [(5, 0), (6, 1)]);
    assert_eq!(
        reader.read_series(6, 0, 10, None).unwrap(),
        Some(good.clone())
    );
    // Empty and inverted ranges hold no rows.
    for (start, end) in [(2, 2), (3, 1), (10, 0), (i64::MAX, i64::MIN)] {
        assert_eq!(
            reader.read_series(6, start, end, None).unwrap(),
            None,
            "{start}..{end}"
        );
    }
    assert_eq!(
        reader.read_series(6, 2, 3, None).unwrap(),
        Some(good.slice_rows(1, 2))
    );
    // Parts are immutable: an existing file is never overwritten.
    assert!(matches!(
        PartWriter::create(&path),
        Err(StorageError::Io { .. })
    ));
}

#[test]
fn part_non_canonical_columns_read_back_canonical() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let data = SeriesData {
        times: vec![10, 20, 30],
        columns: vec![
            // Presence given but every row present: stored without presence.
            Column {
                field: 0,
                values: Values::Boolean(vec![true, false, true]),
                present: Some(vec![true; 3]),
            },
            // No row present: stored as no column at all.
            Column {
                field: 1,
                values: Values::Float(vec![]),
                present: Some(vec![false; 3]),
            },
            Column {
                field: 2,
                values: Values::String(vec!["a".into()]),
                present: Some(vec![false, true, false]),
            },
        ],
    };
    let mut writer = PartWriter::create(&path).unwrap();
    writer.write_series(0, 0, &data).unwrap();
    writer.finish().unwrap();
    let got = PartReader::open(&path)
        .unwrap()
        .read_series(0, 0, 100, None)
        .unwrap()
        .unwrap();
    let mut want = data.clone();
    want.columns[0].present = None;
    want.columns.remove(1);
    assert_eq!(got, want);
}

#[test]
fn part_one_reader_serves_many_threads() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let mut writer = PartWriter::create(&path).unwrap();
    let series: Vec<SeriesData> = (0..16i64)
        .map(|s| {
            ints(
                (0..5000).map(|t| t * 10).collect(),
                (0..5000).map(|v| v * s).collect(),
                None,
            )
        })
        .collect();
    for (id, data) in series.iter().enumerate() {
        writer.write_series(id as u32, 0, data).unwrap();
    }
    writer.finish().unwrap();
    let reader = Arc::new(PartReader::open(&path).unwrap());
    let series = Arc::new(series);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (reader, series) = (Arc::clone(&reader), Arc::clone(&series));
            std::thread::spawn(move || {
                for id in (t..16).step_by(4) {
                    let got = reader
                        .read_series(id as u32, 100, 40_000, None)
                        .unwrap()
                        .unwrap();
                    assert_eq!(got, series[id].slice_time(100, 40_000));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn part_extreme_timestamps_round_trip() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("p");
    let data = ints(
        vec![i64::MIN, -1, 0, i64::MAX],
        vec![i64::MIN, -1, 0, i64::MAX],
        None,
    );
    let mut writer = PartWriter::create(&path).unwrap();
    writer.write_series(u32::MAX, u32::MAX, &data).unwrap();
    let summary = writer.finish().unwrap();
    assert_eq!((summary.min_time, summary.max_time), (i64::MIN, i64::MAX));
    let reader = PartReader::open(&path).unwrap();
    assert_eq!(
        reader.series_ids().collect::<Vec<_>>(),
        [(u32::MAX, u32::MAX)]
    );
    let chunk = &reader.chunks(u32::MAX).unwrap()[0];
    assert_eq!((chunk.min_time, chunk.max_time), (i64::MIN, i64::MAX));
    assert_eq!(
        reader
            .read_series(u32::MAX, i64::MIN, i64::MAX, None)
            .unwrap(),
        Some(data.slice_rows(0, 3))
    );
    assert_eq!(
        reader.read_series(u32::MAX, -1, 1, None).unwrap(),
        Some(data.slice_rows(1, 3))
    );
}
