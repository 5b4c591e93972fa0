//! The series log: exact bytes, round trips, torn tails, corruption.

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use strata_storage::series::{
    HEADER_LEN, SERIES_LOG_FILE, SeriesError, SeriesIndex, TagPredicate, TornTail,
};

/// Everything the index says about its series: (table, tags) per id in id order, and for
/// every table, key and value the matching series.
type Snapshot = (
    Vec<(u32, Vec<(String, String)>)>,
    Vec<(u32, String, String, Vec<u32>)>,
);

fn snapshot(index: &SeriesIndex) -> Snapshot {
    let series = (0..index.series_count() as u32)
        .map(|id| {
            let tags = index
                .tags_of(id)
                .unwrap()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            (index.table_of(id).unwrap(), tags)
        })
        .collect();
    let mut postings = Vec::new();
    for table in 0..4 {
        for key in index.tag_keys(table) {
            for value in index.tag_values(table, &key) {
                let p = TagPredicate::Eq {
                    key: key.clone(),
                    value: value.clone(),
                };
                postings.push((
                    table,
                    key.clone(),
                    value,
                    index.matching(table, &p).iter().collect(),
                ));
            }
        }
    }
    (series, postings)
}

/// Series `i`: table `i % 3`, a unique host, a shared region, and every fifth one an extra tag.
fn tags(i: usize) -> Vec<(String, String)> {
    let mut t = vec![
        ("region".to_owned(), format!("r{}", i % 4)),
        ("hostname".to_owned(), format!("host_{i}")),
    ];
    if i.is_multiple_of(5) {
        t.push(("rack".to_owned(), "é".repeat(i % 7)));
    }
    t
}

fn fill(index: &mut SeriesIndex, range: std::ops::Range<usize>) {
    for i in range {
        let raw = format!("cpu,{i}");
        let (id, created) = index
            .get_or_create((i % 3) as u32, raw.as_bytes(), &tags(i))
            .unwrap();
        assert_eq!((id, created), (i as u32, true));
    }
}

fn log_path(dir: &Path) -> std::path::PathBuf {
    dir.join(SERIES_LOG_FILE)
}

#[test]
fn persist_and_reopen_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = SeriesIndex::open(dir.path()).unwrap();
    assert_eq!(index.series_count(), 0);
    fill(&mut index, 0..300);
    assert_eq!(index.unpersisted(), 300);
    assert_eq!(index.persist().unwrap(), 300);
    assert_eq!(index.persist().unwrap(), 0);
    fill(&mut index, 300..450);
    assert_eq!(index.persist().unwrap(), 150);
    let before = snapshot(&index);
    drop(index);

    let mut reopened = SeriesIndex::open(dir.path()).unwrap();
    assert_eq!(reopened.open_report().series, 450);
    assert_eq!(reopened.open_report().torn_tail, None);
    assert_eq!(reopened.unpersisted(), 0);
    assert_eq!(snapshot(&reopened), before);
    // Known series keep their ids; the next new one gets the next id.
    for i in [0, 7, 449] {
        let got = reopened
            .get_or_create((i % 3) as u32, b"another raw", &tags(i))
            .unwrap();
        assert_eq!(got, (i as u32, false));
    }
    assert_eq!(
        reopened
            .get_or_create(0, b"new", &[("hostname", "new")])
            .unwrap(),
        (450, true)
    );
    reopened
        .insert_replayed(451, 1, &[("hostname", "replayed")])
        .unwrap();
    assert_eq!(reopened.persist().unwrap(), 2);
    let after = snapshot(&reopened);
    drop(reopened);
    assert_eq!(snapshot(&SeriesIndex::open(dir.path()).unwrap()), after);
}

#[test]
fn log_bytes_are_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let mut index = SeriesIndex::open(dir.path()).unwrap();
    let mut want = b"STRASER\0\x02\x00\x00\x00".to_vec();
    let crc = crc32fast::hash(&want);
    want.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(fs::read(log_path(dir.path())).unwrap(), want);

    index
        .get_or_create(9, b"m,b=2,a=1", &[("b", "22"), ("a", "1")])
        .unwrap();
    index.persist().unwrap();
    let body: Vec<u8> = [
        &[0, 0, 0, 0][..], // series id 0
        &[9, 0, 0, 0],     // table 9
        &[2, 0],           // 2 tags, sorted by key
        &[1, 0],
        b"a",
        &[1, 0],
        b"1",
        &[1, 0],
        b"b",
        &[2, 0],
        b"22",
    ]
    .concat();
    want.extend_from_slice(&(body.len() as u32).to_le_bytes());
    want.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    want.extend_from_slice(&body);
    assert_eq!(fs::read(log_path(dir.path())).unwrap(), want);
}

/// A log of three series; returns the offsets where each record starts and the file length.
fn three_series(dir: &Path) -> (Vec<usize>, usize) {
    let mut index = SeriesIndex::open(dir).unwrap();
    let mut starts = Vec::new();
    for i in 0..3 {
        starts.push(fs::metadata(log_path(dir)).unwrap().len() as usize);
        fill(&mut index, i..i + 1);
        index.persist().unwrap();
    }
    (starts, fs::metadata(log_path(dir)).unwrap().len() as usize)
}

#[test]
fn torn_tail_at_every_offset_of_the_last_record_is_cut_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, len) = three_series(dir.path());
    let full = fs::read(log_path(dir.path())).unwrap();
    let last = starts[2];
    let mut cases: Vec<Vec<u8>> = (last + 1..len).map(|cut| full[..cut].to_vec()).collect();
    // A whole last record with a bad CRC (a flipped body byte) is torn as well.
    let mut flipped = full.clone();
    flipped[len - 1] ^= 0x40;
    cases.push(flipped);
    for bytes in cases {
        fs::write(log_path(dir.path()), &bytes).unwrap();
        let index = SeriesIndex::open(dir.path()).unwrap();
        let report = index.open_report();
        let want = TornTail {
            offset: last as u64,
            bytes_cut: (bytes.len() - last) as u64,
        };
        assert_eq!(
            (report.series, report.torn_tail),
            (2, Some(want)),
            "{} bytes",
            bytes.len()
        );
        assert_eq!(
            fs::read(log_path(dir.path())).unwrap(),
            full[..last],
            "file cut"
        );
        drop(index);
        // Cut once: the next open is clean.
        let again = SeriesIndex::open(dir.path()).unwrap().open_report();
        assert_eq!((again.series, again.torn_tail), (2, None));
    }
}

#[test]
fn flipped_byte_in_a_middle_record_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (starts, _) = three_series(dir.path());
    let full = fs::read(log_path(dir.path())).unwrap();
    for at in starts[1]..starts[2] {
        let mut bytes = full.clone();
        bytes[at] ^= 0x01;
        fs::write(log_path(dir.path()), &bytes).unwrap();
        match SeriesIndex::open(dir.path()) {
            Err(SeriesError::Corrupt {
                path,
                offset,
                reason,
            }) => {
                assert_eq!(
                    (path, offset),
                    (log_path(dir.path()), starts[1] as u64),
                    "byte {at}"
                );
                assert_eq!(
                    reason,
                    format!(
                        "bad record (length or CRC) followed by a valid record at offset {}",
                        starts[2]
                    )
                );
            }
            other => panic!("byte {at}: {other:?}"),
        }
        // Nothing was cut.
        assert_eq!(fs::read(log_path(dir.path())).unwrap(), bytes);
    }
}

/// Frames `body` as a record.
fn record(body: &[u8]) -> Vec<u8> {
    let mut r = (body.len() as u32).to_le_bytes().to_vec();
    r.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    r.extend_from_slice(body);
    r
}

/// Body of a record: id, table, tags.
fn body(id: u32, table: u32, tags: &[(&str, &str)]) -> Vec<u8> {
    let mut b = id.to_le_bytes().to_vec();
    b.extend_from_slice(&table.to_le_bytes());
    b.extend_from_slice(&(tags.len() as u16).to_le_bytes());
    for (k, v) in tags {
        b.extend_from_slice(&(k.len() as u16).to_le_bytes());
        b.extend_from_slice(k.as_bytes());
        b.extend_from_slice(&(v.len() as u16).to_le_bytes());
        b.extend_from_slice(v.as_bytes());
    }
    b
}

fn open_err(dir: &Path, records: &[Vec<u8>]) -> (u64, String) {
    let header = fs::read(log_path(dir)).unwrap()[..HEADER_LEN].to_vec();
    fs::write(log_path(dir), [header, records.concat()].concat()).unwrap();
    match SeriesIndex::open(dir) {
        Err(SeriesError::Corrupt {
            path,
            offset,
            reason,
        }) => {
            assert_eq!(path, log_path(dir));
            (offset, reason)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn well_framed_but_invalid_records_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    drop(SeriesIndex::open(dir.path()).unwrap());
    let r0 = record(&body(0, 0, &[("h", "a")]));
    let second = (HEADER_LEN + r0.len()) as u64;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            record(&body(2, 0, &[("h", "b")])),
            "expected id 1 next; ids must not skip",
        ),
        (
            record(&body(0, 0, &[("h", "b")])),
            "id 0 already names another tag set",
        ),
        (
            record(&body(1, 0, &[("h", "a")])),
            "its tag set is already series 0",
        ),
        (
            record(&body(1, 0, &[("z", "1"), ("a", "2")])),
            "tags not sorted by key or not unique",
        ),
        (
            record(&body(1, 0, &[("a", "1"), ("a", "2")])),
            "tags not sorted by key or not unique",
        ),
        (
            record(&[body(1, 0, &[("h", "b")]), vec![0]].concat()),
            "record body has 1 bytes after its 1 tags",
        ),
    ];
    for (r1, reason) in cases {
        assert_eq!(
            open_err(dir.path(), &[r0.clone(), r1]),
            (second, reason.to_owned())
        );
    }
    let mut bad_utf8 = body(1, 0, &[("h", "b")]);
    *bad_utf8.last_mut().unwrap() = 0xFF;
    let (offset, reason) = open_err(dir.path(), &[r0.clone(), record(&bad_utf8)]);
    assert_eq!(offset, second);
    assert!(reason.contains("is not UTF-8"), "{reason}");
}

#[test]
fn bad_header_is_corrupt_at_offset_zero() {
    let dir = tempfile::tempdir().unwrap();
    drop(SeriesIndex::open(dir.path()).unwrap());
    let good = fs::read(log_path(dir.path())).unwrap();
    for bytes in [
        good[..10].to_vec(),
        [&good[..8], &[3, 0, 0, 0], &good[12..]].concat(),
        [&good[..8], &[1, 0, 0, 0], &good[12..]].concat(),
        {
            let mut b = good.clone();
            b[13] ^= 1;
            b
        },
    ] {
        fs::write(log_path(dir.path()), &bytes).unwrap();
        match SeriesIndex::open(dir.path()) {
            Err(SeriesError::Corrupt {
                path, offset: 0, ..
            }) => assert_eq!(path, log_path(dir.path())),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn in_memory_index_has_no_log() {
    let mut index = SeriesIndex::new();
    index.get_or_create(0, b"k", &[("a", "b")]).unwrap();
    assert!(matches!(index.persist(), Err(SeriesError::NoLog)));
    assert_eq!(index.unpersisted(), 1);
}

#[test]
fn garbage_tail_is_cut_without_sizing_tables_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, len) = three_series(dir.path());
    let mut bytes = fs::read(log_path(dir.path())).unwrap();
    // 64 KiB of frames that each claim 65535 tags in a 12-byte body, with bad CRCs.
    for _ in 0..(64 << 10) / 20 {
        bytes.extend_from_slice(&12u32.to_le_bytes());
        bytes.extend_from_slice(&[0xAB; 4]);
        bytes.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0, 0]);
    }
    fs::write(log_path(dir.path()), &bytes).unwrap();
    let index = SeriesIndex::open(dir.path()).unwrap();
    let want = TornTail {
        offset: len as u64,
        bytes_cut: (bytes.len() - len) as u64,
    };
    assert_eq!(
        (index.series_count(), index.open_report().torn_tail),
        (3, Some(want))
    );
    assert!(index.memory_bytes() < 1 << 20, "{}", index.memory_bytes());
    assert_eq!(
        fs::metadata(log_path(dir.path())).unwrap().len(),
        len as u64
    );
}
