//! Helpers shared by the engine's integration tests: a seeded generator, and a plain
//! in-memory model of what the engine should hold.

#![allow(dead_code)] // each test file uses a different subset

use std::collections::BTreeMap;

use strata_storage::model::Value;
use strata_storage::{Engine, ReadRequest};

/// SplitMix64: tiny, seeded, good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Runs `run` for each of `seeds`, or only for the seed in environment variable `env` when
/// it is set; a failing seed is named, with how to rerun it, before the panic goes on.
pub fn for_each_seed(
    env: &str,
    seeds: std::ops::RangeInclusive<u64>,
    run: impl Fn(u64) + std::panic::RefUnwindSafe,
) {
    let seeds: Vec<u64> = match std::env::var(env) {
        Ok(seed) => vec![
            seed.parse()
                .unwrap_or_else(|_| panic!("{env} must be a number")),
        ],
        Err(_) => seeds.collect(),
    };
    for seed in seeds {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed)) {
            eprintln!("failed with seed {seed} (rerun: {env}={seed})");
            std::panic::resume_unwind(panic);
        }
    }
}

/// (table, sorted tags) → time → field → value.
pub type Model = BTreeMap<(String, Vec<(String, String)>), BTreeMap<i64, BTreeMap<String, Value>>>;

/// Everything the engine holds for `database`, in model form.
pub fn engine_contents(engine: &Engine, database: &str) -> Model {
    let mut out = Model::new();
    for schema in engine.catalog().tables(database) {
        for series in engine.read(&ReadRequest::all(schema.id)).expect("read") {
            let rows = out
                .entry((schema.name.clone(), series.tags.clone()))
                .or_default();
            let data = &series.data;
            for column in &data.columns {
                let name = schema.fields[column.field as usize].name.clone();
                for (row, value_index) in column.value_indexes(data.rows()).into_iter().enumerate()
                {
                    if let Some(i) = value_index {
                        rows.entry(data.times[row])
                            .or_default()
                            .insert(name.clone(), column.values.get(i));
                    }
                }
            }
            for time in &data.times {
                rows.entry(*time).or_default();
            }
        }
    }
    out
}

/// Renders a model difference compactly for a failure message.
pub fn first_difference(expected: &Model, actual: &Model) -> String {
    for (key, rows) in expected {
        match actual.get(key) {
            None => return format!("series {key:?} missing ({} rows expected)", rows.len()),
            Some(actual_rows) => {
                for (time, fields) in rows {
                    match actual_rows.get(time) {
                        None => {
                            return format!(
                                "series {key:?} time {time} missing; expected {fields:?}"
                            );
                        }
                        Some(got) if got != fields => {
                            return format!(
                                "series {key:?} time {time}: expected {fields:?}, got {got:?}"
                            );
                        }
                        _ => {}
                    }
                }
                if let Some(extra) = actual_rows.keys().find(|t| !rows.contains_key(t)) {
                    return format!("series {key:?} has unexpected time {extra}");
                }
            }
        }
    }
    if let Some(extra) = actual.keys().find(|k| !expected.contains_key(*k)) {
        return format!("unexpected series {extra:?}");
    }
    "no difference".into()
}

/// Files under `dir` (recursively) whose name ends in `.{suffix}`.
pub fn count_files(dir: &std::path::Path, suffix: &str) -> usize {
    files_with_suffix(dir, suffix).len()
}

/// The paths of the files under `dir` (recursively) whose name ends in `.{suffix}`.
pub fn files_with_suffix(dir: &std::path::Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_with_suffix(&path, suffix));
        } else if path.extension().is_some_and(|x| x == suffix) {
            found.push(path);
        }
    }
    found
}

/// What `Engine::latest` returns, rebuilt from `Engine::latest_each` through the view's
/// accessors alone (not its `to_series_rows`), in `latest`'s order (shard, then series id).
/// Checks on the way that within a shard equal tag ids mean equal strings, that
/// `LatestView::field` agrees with `LatestView::fields`, and that projected-out fields
/// are absent.
pub fn latest_each_rows(engine: &Engine, request: &ReadRequest) -> Vec<strata_storage::SeriesRows> {
    use strata_storage::column::{Column, SeriesData, Values};
    let mut seen: BTreeMap<(usize, u32), String> = BTreeMap::new();
    let mut out: Vec<(usize, strata_storage::SeriesRows)> = Vec::new();
    engine
        .latest_each(request, |view| {
            let mut tags = Vec::new();
            for (key, value) in view.tags() {
                for s in [key, value] {
                    let known = seen
                        .entry((view.shard(), s.id))
                        .or_insert(s.text.to_string());
                    assert_eq!(known, s.text, "shard {} string id {}", view.shard(), s.id);
                }
                tags.push((key.text.to_string(), value.text.to_string()));
            }
            let mut columns = Vec::new();
            for (field, value) in view.fields() {
                assert_eq!(view.field(field), Some(value));
                if let Some(wanted) = &request.fields {
                    assert!(wanted.contains(&field));
                }
                let mut values = Values::new(value.field_type());
                assert!(values.push(value.clone()));
                columns.push(Column {
                    field,
                    values,
                    present: None,
                });
            }
            for field in 0..64 {
                if !columns.iter().any(|c| c.field == field) {
                    assert_eq!(view.field(field), None);
                }
            }
            let data = SeriesData {
                times: vec![view.time()],
                columns,
            };
            let rows = strata_storage::SeriesRows {
                series: view.series(),
                tags,
                data,
            };
            out.push((view.shard(), rows));
        })
        .expect("latest_each");
    out.sort_by_key(|(shard, rows)| (*shard, rows.series));
    out.into_iter().map(|(_, rows)| rows).collect()
}
