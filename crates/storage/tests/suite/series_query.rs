//! Tag predicates, tag keys and values, checked against a brute-force model over seeded
//! random series (some series lack some tags).

// Helpers outside #[test] fns unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use roaring::RoaringBitmap;
use strata_storage::series::{SeriesIndex, TagPredicate};

/// xorshift64*: seeded, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KEYS: [&str; 4] = ["dc", "host", "os", "rack"];

type Model = Vec<(u32, BTreeMap<String, String>)>;

fn random_value(rng: &mut Rng, key: &str) -> String {
    match key {
        // Nearly unique per series, like TSBS's hostname.
        "host" => format!("h{}", rng.below(200)),
        _ => format!("{key}{}", rng.below(3)),
    }
}

fn random_predicate(rng: &mut Rng, depth: u32) -> TagPredicate {
    let key = KEYS[rng.below(4) as usize].to_owned();
    let value = |rng: &mut Rng| {
        if rng.below(10) == 0 {
            "absent".to_owned()
        } else {
            random_value(rng, &key)
        }
    };
    match if depth == 0 {
        rng.below(3)
    } else {
        rng.below(5)
    } {
        0 => TagPredicate::Eq {
            key: key.clone(),
            value: value(rng),
        },
        1 => TagPredicate::NotEq {
            key: key.clone(),
            value: value(rng),
        },
        2 => {
            let n = rng.below(4);
            TagPredicate::In {
                key: key.clone(),
                values: (0..n).map(|_| value(rng)).collect(),
            }
        }
        3 => TagPredicate::And(
            (0..rng.below(4))
                .map(|_| random_predicate(rng, depth - 1))
                .collect(),
        ),
        _ => TagPredicate::Or(
            (0..rng.below(4))
                .map(|_| random_predicate(rng, depth - 1))
                .collect(),
        ),
    }
}

fn model_matches(tags: &BTreeMap<String, String>, p: &TagPredicate) -> bool {
    match p {
        TagPredicate::Eq { key, value } => tags.get(key) == Some(value),
        TagPredicate::NotEq { key, value } => tags.get(key) != Some(value),
        TagPredicate::In { key, values } => tags.get(key).is_some_and(|v| values.contains(v)),
        TagPredicate::And(ps) => ps.iter().all(|p| model_matches(tags, p)),
        TagPredicate::Or(ps) => ps.iter().any(|p| model_matches(tags, p)),
    }
}

/// Builds an index and its model: series in tables 0 and 1, each key present with
/// probability 3/4, tags written in a random order.
fn build(rng: &mut Rng, series: usize) -> (SeriesIndex, Model) {
    let mut index = SeriesIndex::new();
    let mut model: Model = Vec::new();
    for _ in 0..series {
        let table = rng.below(2) as u32;
        let mut tags: Vec<(String, String)> = Vec::new();
        for k in KEYS {
            if rng.below(4) != 0 {
                tags.push((k.to_owned(), random_value(rng, k)));
            }
        }
        let shift = rng.below(tags.len() as u64 + 1) as usize % tags.len().max(1);
        tags.rotate_left(shift);
        let raw = format!("m{table},{tags:?}");
        let (id, created) = index.get_or_create(table, raw.as_bytes(), &tags).unwrap();
        let map: BTreeMap<String, String> = tags.into_iter().collect();
        match model.iter().position(|(t, m)| *t == table && *m == map) {
            Some(existing) => assert_eq!((id, created), (existing as u32, false)),
            None => {
                assert_eq!((id, created), (model.len() as u32, true));
                model.push((table, map));
            }
        }
    }
    (index, model)
}

#[test]
fn predicates_match_a_brute_force_model() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let (index, model) = build(&mut rng, 300);
        for table in 0..3u32 {
            let all: RoaringBitmap = model
                .iter()
                .enumerate()
                .filter(|(_, (t, _))| *t == table)
                .map(|(i, _)| i as u32)
                .collect();
            assert_eq!(
                index.series_of_table(table),
                all,
                "seed {seed} table {table}"
            );
            for _ in 0..50 {
                let p = random_predicate(&mut rng, 3);
                let want: RoaringBitmap = model
                    .iter()
                    .enumerate()
                    .filter(|(_, (t, tags))| *t == table && model_matches(tags, &p))
                    .map(|(i, _)| i as u32)
                    .collect();
                assert_eq!(
                    index.matching(table, &p),
                    want,
                    "seed {seed} table {table} {p:?}"
                );
            }
        }
    }
}

#[test]
fn not_eq_includes_series_lacking_the_tag() {
    let mut index = SeriesIndex::new();
    index
        .get_or_create(0, b"a", &[("host", "a"), ("os", "linux")])
        .unwrap();
    index.get_or_create(0, b"b", &[("host", "b")]).unwrap();
    index
        .get_or_create(0, b"c", &[("host", "c"), ("os", "bsd")])
        .unwrap();
    index.get_or_create(1, b"d", &[("host", "d")]).unwrap();
    let ne = TagPredicate::NotEq {
        key: "os".into(),
        value: "linux".into(),
    };
    assert_eq!(
        index.matching(0, &ne).iter().collect::<Vec<_>>(),
        vec![1, 2]
    );
    let ne_unknown = TagPredicate::NotEq {
        key: "zone".into(),
        value: "z".into(),
    };
    assert_eq!(
        index.matching(0, &ne_unknown).iter().collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(
        index
            .matching(0, &TagPredicate::And(vec![]))
            .iter()
            .collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert!(index.matching(0, &TagPredicate::Or(vec![])).is_empty());
    assert!(index.matching(5, &ne).is_empty(), "unknown table");
}

#[test]
fn tag_keys_and_values_are_sorted_and_complete() {
    let mut rng = Rng(7);
    let (index, model) = build(&mut rng, 500);
    for table in 0..2u32 {
        let mut keys: Vec<String> = model
            .iter()
            .filter(|(t, _)| *t == table)
            .flat_map(|(_, m)| m.keys().cloned())
            .collect();
        keys.sort();
        keys.dedup();
        assert_eq!(index.tag_keys(table), keys);
        for key in KEYS {
            let mut values: Vec<String> = model
                .iter()
                .filter(|(t, _)| *t == table)
                .filter_map(|(_, m)| m.get(key).cloned())
                .collect();
            values.sort();
            values.dedup();
            assert_eq!(
                index.tag_values(table, key),
                values,
                "table {table} key {key}"
            );
        }
    }
    assert_eq!(index.tag_keys(9), Vec::<String>::new());
    assert_eq!(index.tag_values(0, "nope"), Vec::<String>::new());
}
