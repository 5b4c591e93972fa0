//! Retiring series: they leave postings and lookups, keep their ids to themselves, and the
//! retirement survives reopening, torn appends and version 1 logs.

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use roaring::RoaringBitmap;
use strata_storage::series::{SERIES_LOG_FILE, SeriesError, SeriesIndex, TagPredicate};

/// Series `i`: table `i % 2`, a unique host, one of three regions.
fn tags(i: u32) -> Vec<(String, String)> {
    vec![
        ("region".to_owned(), format!("r{}", i % 3)),
        ("host".to_owned(), format!("h{i}")),
    ]
}

/// Creates series `range` (each new, in order).
fn fill(index: &mut SeriesIndex, range: std::ops::Range<u32>) {
    for i in range {
        let raw = format!("m,host=h{i},region=r{}", i % 3);
        assert_eq!(
            index
                .get_or_create(i % 2, raw.as_bytes(), &tags(i))
                .unwrap(),
            (i, true)
        );
    }
}

/// An index on `dir` holding series 0..`n`, every one in the log.
fn persisted(dir: &Path, n: u32) -> SeriesIndex {
    let mut index = SeriesIndex::open(dir).unwrap();
    fill(&mut index, 0..n);
    index.persist().unwrap();
    index
}

fn log_path(dir: &Path) -> std::path::PathBuf {
    dir.join(SERIES_LOG_FILE)
}

/// What the index answers for tables 0 and 1: per table, its series, and per (key, value)
/// the matching series.
fn answers(index: &SeriesIndex) -> BTreeMap<(u32, String, String), BTreeSet<u32>> {
    let mut out = BTreeMap::new();
    for table in 0..2 {
        let all: BTreeSet<u32> = index.series_of_table(table).iter().collect();
        out.insert((table, String::new(), String::new()), all);
        for key in index.tag_keys(table) {
            for value in index.tag_values(table, &key) {
                let predicate = TagPredicate::Eq {
                    key: key.clone(),
                    value: value.clone(),
                };
                let ids = index.matching(table, &predicate).iter().collect();
                out.insert((table, key.clone(), value), ids);
            }
        }
    }
    out
}

/// A series made after the fill: id, table, tags.
type Made = (u32, u32, Vec<(String, String)>);

/// The same answers computed from the live ids' tags.
fn expected(
    live: &BTreeSet<u32>,
    extra: &[Made],
) -> BTreeMap<(u32, String, String), BTreeSet<u32>> {
    let mut out: BTreeMap<(u32, String, String), BTreeSet<u32>> = BTreeMap::new();
    for table in 0..2 {
        out.insert((table, String::new(), String::new()), BTreeSet::new());
    }
    let series = live
        .iter()
        .map(|&i| (i, i % 2, tags(i)))
        .chain(extra.iter().cloned());
    for (id, table, tags) in series {
        out.entry((table, String::new(), String::new()))
            .or_default()
            .insert(id);
        for (k, v) in tags {
            out.entry((table, k, v)).or_default().insert(id);
        }
    }
    out
}

#[test]
fn retired_series_leave_every_answer_and_stay_retired_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 300);
    // Every 7th series, and all of region r1 in table 1 (so that tag value leaves table 1).
    let gone: RoaringBitmap = (0..300u32)
        .filter(|i| i % 7 == 0 || (i % 2 == 1 && i % 3 == 1))
        .collect();
    assert_eq!(index.retire(&gone).unwrap(), gone.len() as usize);
    assert_eq!(index.retire(&gone).unwrap(), 0, "retired once only");
    let live: BTreeSet<u32> = (0..300).filter(|i| !gone.contains(*i)).collect();
    assert_eq!(answers(&index), expected(&live, &[]));
    assert!(!index.tag_values(1, "region").contains(&"r1".to_owned()));
    assert_eq!(index.live_series_count(), live.len());
    assert_eq!(index.series_count(), 300, "ids stay dense");
    assert!(index.is_retired(7) && !index.is_retired(8));

    // A retired series' tags make a new series, whatever spelling of its key comes.
    let raw7 = "m,host=h7,region=r1";
    let (new7, created) = index.get_or_create(1, raw7.as_bytes(), &tags(7)).unwrap();
    assert_eq!((new7, created), (300, true));
    assert_eq!(
        index.get_or_create(1, b"other spelling", &tags(7)).unwrap(),
        (300, false)
    );
    // Live series are still found, through the aliases and the canonical map.
    assert_eq!(
        index
            .get_or_create(0, b"m,host=h8,region=r2", &tags(8))
            .unwrap(),
        (8, false)
    );
    assert_eq!(
        index.get_or_create(0, b"new raw", &tags(10)).unwrap(),
        (10, false)
    );
    index.persist().unwrap();
    let extra = [(300, 1, tags(7))];
    let before = answers(&index);
    assert_eq!(before, expected(&live, &extra));
    drop(index);

    let mut reopened = SeriesIndex::open(dir.path()).unwrap();
    assert_eq!(reopened.open_report().series, live.len() + 1);
    assert_eq!(answers(&reopened), before);
    assert!(reopened.is_retired(7));
    assert_eq!(
        reopened.get_or_create(1, b"again", &tags(7)).unwrap(),
        (300, false)
    );
    assert_eq!(
        reopened.get_or_create(0, b"again", &tags(14)).unwrap(),
        (301, true)
    );
}

#[test]
fn only_persisted_series_can_be_retired() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 4);
    index
        .get_or_create(0, b"late", &[("host", "late")])
        .unwrap();
    let all: RoaringBitmap = (0..5).collect();
    assert_eq!(
        index.retire(&all).unwrap(),
        4,
        "series 4 is not in the log yet"
    );
    assert!(!index.is_retired(4));
    index.persist().unwrap();
    assert_eq!(index.retire(&all).unwrap(), 1);
    drop(index);
    assert_eq!(
        SeriesIndex::open(dir.path()).unwrap().live_series_count(),
        0
    );
}

#[test]
fn retire_record_bytes_are_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 3);
    let before = fs::read(log_path(dir.path())).unwrap();
    index.retire(&[0u32, 2].into_iter().collect()).unwrap();
    let body = [
        &2u32.to_le_bytes()[..],
        &0u32.to_le_bytes(),
        &2u32.to_le_bytes(),
    ]
    .concat();
    let mut want = before;
    want.extend_from_slice(&(body.len() as u32 | 0x8000_0000).to_le_bytes());
    want.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    want.extend_from_slice(&body);
    assert_eq!(fs::read(log_path(dir.path())).unwrap(), want);
}

/// Rewrites the log's header as version 1 (what builds before retire records wrote).
fn make_version_1(dir: &Path) {
    let mut bytes = fs::read(log_path(dir)).unwrap();
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    let crc = crc32fast::hash(&bytes[..12]);
    bytes[12..16].copy_from_slice(&crc.to_le_bytes());
    fs::write(log_path(dir), bytes).unwrap();
}

#[test]
fn a_version_1_log_is_read_and_upgraded_at_its_first_retirement() {
    let dir = tempfile::tempdir().unwrap();
    drop(persisted(dir.path(), 10));
    make_version_1(dir.path());

    let mut index = SeriesIndex::open(dir.path()).unwrap();
    assert_eq!(index.live_series_count(), 10);
    fill(&mut index, 10..12);
    index.persist().unwrap();
    assert_eq!(
        &fs::read(log_path(dir.path())).unwrap()[8..12],
        &[1, 0, 0, 0],
        "appending series keeps version 1"
    );
    index.retire(&[3u32].into_iter().collect()).unwrap();
    assert_eq!(
        &fs::read(log_path(dir.path())).unwrap()[8..12],
        &[2, 0, 0, 0]
    );
    drop(index);
    let reopened = SeriesIndex::open(dir.path()).unwrap();
    assert_eq!(reopened.live_series_count(), 11);
    assert!(reopened.is_retired(3));
}

#[test]
fn a_retire_record_in_a_version_1_log_is_not_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 3);
    index.retire(&[1u32].into_iter().collect()).unwrap();
    drop(index);
    make_version_1(dir.path());
    // Version 1 has no retire records: the last frame reads as a torn append.
    let reopened = SeriesIndex::open(dir.path()).unwrap();
    assert!(reopened.open_report().torn_tail.is_some());
    assert_eq!(reopened.live_series_count(), 3);
}

#[test]
fn a_torn_retire_record_is_cut_and_the_series_stay() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 5);
    let start = fs::metadata(log_path(dir.path())).unwrap().len() as usize;
    index.retire(&[1u32, 4].into_iter().collect()).unwrap();
    drop(index);
    let whole = fs::read(log_path(dir.path())).unwrap();
    for end in start + 1..whole.len() {
        fs::write(log_path(dir.path()), &whole[..end]).unwrap();
        let reopened = SeriesIndex::open(dir.path()).unwrap();
        let torn = reopened.open_report().torn_tail.unwrap();
        assert_eq!(torn.offset, start as u64, "cut at {end}");
        assert_eq!(reopened.live_series_count(), 5, "cut at {end}");
        assert_eq!(fs::read(log_path(dir.path())).unwrap(), &whole[..start]);
    }
}

fn corrupt_reason(dir: &Path, tail: &[u8]) -> String {
    let bytes = fs::read(log_path(dir)).unwrap();
    fs::write(log_path(dir), [&bytes[..], tail].concat()).unwrap();
    let reason = match SeriesIndex::open(dir) {
        Err(SeriesError::Corrupt { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    fs::write(log_path(dir), bytes).unwrap();
    reason
}

fn retire_record(ids: &[u32]) -> Vec<u8> {
    let mut body = (ids.len() as u32).to_le_bytes().to_vec();
    for id in ids {
        body.extend_from_slice(&id.to_le_bytes());
    }
    let mut r = (body.len() as u32 | 0x8000_0000).to_le_bytes().to_vec();
    r.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    r.extend_from_slice(&body);
    r
}

#[test]
fn retire_records_naming_no_live_series_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    drop(persisted(dir.path(), 3));
    let reason = corrupt_reason(dir.path(), &retire_record(&[5]));
    assert!(reason.contains("series 5"), "{reason}");
    let twice = [retire_record(&[1]), retire_record(&[1])].concat();
    assert!(corrupt_reason(dir.path(), &twice).contains("series 1"));
    let unsorted = retire_record(&[2, 1]);
    assert!(corrupt_reason(dir.path(), &unsorted).contains("ascending"));
    // A damaged record followed by a good retire record is damage, not a torn tail.
    let mut damaged = retire_record(&[0]);
    damaged[9] ^= 0xff;
    let reason = corrupt_reason(dir.path(), &[damaged, retire_record(&[1])].concat());
    assert!(reason.contains("followed by a valid record"), "{reason}");
}

#[test]
fn wal_replay_accepts_a_retired_series_with_its_own_tags_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = persisted(dir.path(), 3);
    index.retire(&[1u32].into_iter().collect()).unwrap();
    let own: Vec<(&str, &str)> = vec![("host", "h1"), ("region", "r1")];
    index.insert_replayed(1, 1, &own).unwrap();
    assert!(index.is_retired(1), "replay does not revive it");
    assert!(index.insert_replayed(1, 1, &[("host", "other")]).is_err());
    assert!(index.insert_replayed(1, 0, &own).is_err());
}
