//! Series index in memory: identity of series, raw aliases, limits, WAL replay.

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::borrow::Cow;

use strata_lineproto::{ParseOptions, parse_lines};
use strata_storage::series::{MAX_ALIASES_PER_SERIES, SeriesError, SeriesIndex, canonical_key};

/// Parses `body` (one line) and gets or creates its series in `table`.
fn write(index: &mut SeriesIndex, table: u32, body: &str) -> (u32, bool) {
    let line = parse_lines(body.as_bytes(), &ParseOptions::default())
        .next()
        .unwrap()
        .unwrap();
    index
        .get_or_create(table, line.series_key, &line.tags)
        .unwrap()
}

fn tags_of(index: &SeriesIndex, id: u32) -> Vec<(String, String)> {
    index
        .tags_of(id)
        .unwrap()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn owned(tags: &[(&str, &str)]) -> Vec<(String, String)> {
    tags.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn same_tags_in_any_order_or_escaping_are_one_series() {
    let mut index = SeriesIndex::new();
    let lines = [
        r"cpu,host=a\\b,region=x\ y v=1",
        r"cpu,region=x\ y,host=a\b v=1",
        r"cpu,host=a\b,region=x\ y v=1 5",
    ];
    let got: Vec<_> = lines.iter().map(|l| write(&mut index, 0, l)).collect();
    assert_eq!(got, vec![(0, true), (0, false), (0, false)]);
    assert_eq!(index.series_count(), 1);
    assert_eq!(
        tags_of(&index, 0),
        owned(&[("host", r"a\b"), ("region", "x y")])
    );
    assert_eq!(index.table_of(0), Some(0));
    // Each spelling of the key is its own alias.
    assert_eq!(index.alias_count(), 3);
    for key in [
        r"cpu,host=a\\b,region=x\ y",
        r"cpu,region=x\ y,host=a\b",
        r"cpu,host=a\b,region=x\ y",
    ] {
        assert_eq!(index.lookup_raw(0, key.as_bytes()), Some(0), "{key}");
    }
}

#[test]
fn different_tags_are_different_series_with_dense_ids() {
    let mut index = SeriesIndex::new();
    let got = vec![
        write(&mut index, 0, "cpu,host=a v=1"),
        write(&mut index, 0, "cpu,host=b v=1"),
        write(&mut index, 0, "cpu,host=a,region=x v=1"),
        write(&mut index, 0, "cpu v=1"),
        write(&mut index, 1, "mem,host=a v=1"),
        write(&mut index, 0, "cpu,host=b v=2"),
        write(&mut index, 0, "cpu,region=a v=1"),
        write(&mut index, 0, "cpu,Host=a v=1"),
    ];
    assert_eq!(
        got,
        vec![
            (0, true),
            (1, true),
            (2, true),
            (3, true),
            (4, true),
            (1, false),
            (5, true),
            (6, true)
        ]
    );
    assert_eq!(index.series_count(), 7);
    assert_eq!(index.table_of(4), Some(1));
    assert_eq!(index.table_of(9), None);
    assert!(index.tags_of(9).is_none());
    assert_eq!(tags_of(&index, 3), Vec::<(String, String)>::new());
}

#[test]
fn duplicate_tag_key_last_one_wins() {
    let mut index = SeriesIndex::new();
    assert_eq!(
        write(&mut index, 0, "cpu,host=a,region=r,host=b v=1"),
        (0, true)
    );
    assert_eq!(write(&mut index, 0, "cpu,region=r,host=b v=1"), (0, false));
    assert_eq!(
        write(&mut index, 0, "cpu,host=b,region=r,host=a v=1"),
        (1, true)
    );
    assert_eq!(tags_of(&index, 0), owned(&[("host", "b"), ("region", "r")]));
    assert_eq!(tags_of(&index, 1), owned(&[("host", "a"), ("region", "r")]));
}

#[test]
fn lookup_raw_hits_after_create_and_misses_otherwise() {
    let mut index = SeriesIndex::new();
    assert_eq!(index.lookup_raw(0, b"cpu,host=a"), None);
    let tags = [("host", "a")];
    assert_eq!(
        index.get_or_create(0, b"cpu,host=a", &tags).unwrap(),
        (0, true)
    );
    assert_eq!(index.lookup_raw(0, b"cpu,host=a"), Some(0));
    assert_eq!(index.lookup_raw(1, b"cpu,host=a"), None, "other table");
    assert_eq!(index.lookup_raw(0, b"cpu,host=b"), None);
    assert_eq!(index.lookup_raw(0, b"cpu,host=a "), None);
    // The same tags in another table are another series.
    assert_eq!(
        index.get_or_create(1, b"cpu,host=a", &tags).unwrap(),
        (1, true)
    );
    assert_eq!(index.lookup_raw(1, b"cpu,host=a"), Some(1));
}

#[test]
fn canonical_key_bytes_are_sorted_deduped_and_length_prefixed() {
    let mut out = vec![0xFF; 3];
    let tags = [
        (Cow::Borrowed("zz"), Cow::Borrowed("1")),
        ("a".into(), "x".into()),
        ("zz".into(), "2".into()),
    ];
    canonical_key(7, &tags, &mut out);
    let mut want = Vec::new();
    want.extend_from_slice(&7u32.to_le_bytes());
    want.extend_from_slice(&2u32.to_le_bytes());
    for part in ["a", "x", "zz", "2"] {
        want.extend_from_slice(&(part.len() as u32).to_le_bytes());
        want.extend_from_slice(part.as_bytes());
    }
    assert_eq!(out, want);
    // Rebuilt from the index, the key is the same bytes.
    let mut index = SeriesIndex::new();
    let (id, _) = index.get_or_create(7, b"m,zz=1,a=x,zz=2", &tags).unwrap();
    let mut rebuilt = Vec::new();
    assert!(index.canonical_key_of(id, &mut rebuilt));
    assert_eq!(rebuilt, want);
    assert!(!index.canonical_key_of(id + 1, &mut rebuilt));
    // Without the prefixes ("a","bc") and ("ab","c") would collide.
    let (mut k1, mut k2) = (Vec::new(), Vec::new());
    canonical_key(0, &[("a", "bc")], &mut k1);
    canonical_key(0, &[("ab", "c")], &mut k2);
    assert_ne!(k1, k2);
}

#[test]
fn canonical_key_sorts_more_than_64_tags() {
    let tags: Vec<(String, String)> = (0..100)
        .rev()
        .map(|i| (format!("k{i:03}"), format!("v{i}")))
        .collect();
    let mut sorted = tags.clone();
    sorted.sort();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    canonical_key(1, &tags, &mut a);
    canonical_key(1, &sorted, &mut b);
    assert_eq!(a, b);
    assert_eq!(
        a.len(),
        8 + 100 * (4 + 4 + 4)
            + (0..100)
                .map(|i: i32| 1 + i.to_string().len())
                .sum::<usize>()
    );
}

#[test]
fn alias_cap_bounds_the_raw_map() {
    let mut index = SeriesIndex::new();
    let keys = ["a", "b", "c", "d", "e"];
    // Every rotation of the five tags is a distinct raw key of one series.
    let mut raws = Vec::new();
    for r in 0..keys.len() {
        let order: Vec<&str> = keys
            .iter()
            .cycle()
            .skip(r)
            .take(keys.len())
            .copied()
            .collect();
        let tags: Vec<(&str, &str)> = order.iter().map(|k| (*k, "1")).collect();
        let raw = format!(
            "m,{}",
            order
                .iter()
                .map(|k| format!("{k}=1"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let got = index.get_or_create(0, raw.as_bytes(), &tags).unwrap();
        assert_eq!(got, (0, r == 0));
        raws.push(raw);
    }
    let cap = usize::from(MAX_ALIASES_PER_SERIES);
    assert_eq!(index.alias_count(), cap);
    let hits: Vec<Option<u32>> = raws
        .iter()
        .map(|r| index.lookup_raw(0, r.as_bytes()))
        .collect();
    let mut want = vec![Some(0); cap];
    want.resize(raws.len(), None);
    assert_eq!(hits, want);
    // Past the cap the series is still found, through the canonical map.
    let tags: Vec<(&str, &str)> = keys.iter().rev().map(|k| (*k, "1")).collect();
    assert_eq!(
        index.get_or_create(0, b"m,reversed", &tags).unwrap(),
        (0, false)
    );
    assert_eq!(index.alias_count(), cap);
    assert_eq!(index.series_count(), 1);
}

#[test]
fn limits_are_errors_not_truncation() {
    let mut index = SeriesIndex::new();
    let long = "x".repeat(65_536);
    let err = index
        .get_or_create(0, b"k", &[("host", long.as_str())])
        .unwrap_err();
    assert!(
        matches!(
            err,
            SeriesError::TagTooLong {
                what: "value",
                len: 65_536,
                max: 65_535
            }
        ),
        "{err}"
    );
    let err = index
        .get_or_create(0, b"k", &[(long.as_str(), "v")])
        .unwrap_err();
    assert!(
        matches!(
            err,
            SeriesError::TagTooLong {
                what: "key",
                len: 65_536,
                ..
            }
        ),
        "{err}"
    );
    let many: Vec<(String, &str)> = (0..65_536).map(|i| (i.to_string(), "v")).collect();
    let err = index.get_or_create(0, b"k", &many).unwrap_err();
    assert!(
        matches!(
            err,
            SeriesError::TooManyTags {
                count: 65_536,
                max: 65_535
            }
        ),
        "{err}"
    );
    let ok = "y".repeat(65_535);
    assert_eq!(
        index
            .get_or_create(0, b"k", &[("host", ok.as_str())])
            .unwrap(),
        (0, true)
    );
    assert_eq!(index.series_count(), 1);
    assert_eq!(index.lookup_raw(0, b"k"), Some(0));
}

#[test]
fn insert_replayed_is_idempotent_and_refuses_skips_and_conflicts() {
    let mut index = SeriesIndex::new();
    index.insert_replayed(0, 0, &[("host", "a")]).unwrap();
    index.insert_replayed(0, 0, &[("host", "a")]).unwrap();
    index
        .insert_replayed(1, 0, &[("region", "r"), ("host", "b")])
        .unwrap();
    index
        .insert_replayed(1, 0, &[("host", "b"), ("region", "r")])
        .unwrap();
    assert_eq!(index.series_count(), 2);
    assert_eq!(tags_of(&index, 1), owned(&[("host", "b"), ("region", "r")]));

    let err = index.insert_replayed(3, 0, &[("host", "c")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot replay series 3: expected id 2 next; ids must not skip"
    );
    let err = index.insert_replayed(1, 0, &[("host", "c")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot replay series 1: id 1 already names another tag set"
    );
    let err = index.insert_replayed(2, 0, &[("host", "a")]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot replay series 2: its tag set is already series 0"
    );
    assert_eq!(index.series_count(), 2);
    // A replayed series is found by a later line.
    assert_eq!(
        index
            .get_or_create(0, b"cpu,host=a", &[("host", "a")])
            .unwrap(),
        (0, false)
    );
}

#[test]
fn memory_bytes_grows_with_series() {
    let mut index = SeriesIndex::new();
    let empty = index.memory_bytes();
    for i in 0..1000 {
        let host = format!("host_{i}");
        let raw = format!("cpu,hostname={host},region=r{}", i % 3);
        let region = format!("r{}", i % 3);
        index
            .get_or_create(
                0,
                raw.as_bytes(),
                &[("hostname", host.as_str()), ("region", region.as_str())],
            )
            .unwrap();
    }
    let full = index.memory_bytes();
    assert!(full > empty + 1000 * 40, "{empty} -> {full}");
    assert!(full < 1000 * 400, "{full}");
}
