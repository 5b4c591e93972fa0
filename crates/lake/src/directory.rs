//! A lake file's series directory: which rows each series holds, kept in the file's
//! Parquet footer (key `strata.series`).
//!
//! A file's rows are sorted by series (canonical tags), then time. The directory lists the
//! series in that order with their row counts, so a read of some series selects their
//! rows (Parquet's row selection skips the pages and row groups of the others) without
//! decoding a tag column, and a reader learns a file's series from its footer alone.
//!
//! JSON: `{"version": 1, "keys": [tag keys, sorted], "series": [[value or null for each
//! key, …, rows], …]}`.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::LakeError;

/// The footer key holding the directory.
pub const DIRECTORY_KEY: &str = "strata.series";
const DIRECTORY_VERSION: u64 = 1;

/// One series of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryEntry {
    /// Canonical tags (sorted by key).
    pub tags: Vec<(String, String)>,
    /// Its first row in the file.
    pub first_row: u64,
    /// How many rows it has.
    pub rows: u64,
}

/// A file's series, in row order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeriesDirectory {
    /// The series, in row order.
    pub entries: Vec<DirectoryEntry>,
}

impl SeriesDirectory {
    /// Appends `rows` rows of the series `tags` (they follow the rows listed so far; a
    /// series continued from the entry before is counted there).
    pub fn push(&mut self, tags: &[(String, String)], rows: u64) {
        let first_row = self.entries.last().map_or(0, |e| e.first_row + e.rows);
        match self.entries.last_mut() {
            Some(last) if last.tags == tags => last.rows += rows,
            _ => self.entries.push(DirectoryEntry {
                tags: tags.to_vec(),
                first_row,
                rows,
            }),
        }
    }

    /// The directory as the footer keeps it.
    pub fn to_json(&self) -> String {
        let keys: BTreeSet<&str> = self
            .entries
            .iter()
            .flat_map(|e| e.tags.iter().map(|(k, _)| k.as_str()))
            .collect();
        let keys: Vec<&str> = keys.into_iter().collect();
        let series: Vec<Value> = self
            .entries
            .iter()
            .map(|e| {
                let mut row: Vec<Value> = keys
                    .iter()
                    .map(|key| {
                        e.tags
                            .iter()
                            .find(|(k, _)| k == key)
                            .map_or(Value::Null, |(_, v)| json!(v))
                    })
                    .collect();
                row.push(json!(e.rows));
                Value::Array(row)
            })
            .collect();
        json!({ "version": DIRECTORY_VERSION, "keys": keys, "series": series }).to_string()
    }

    /// Reads a footer's directory (`path` names the file in errors).
    pub fn from_json(text: &str, path: &str) -> Result<Self, LakeError> {
        let bad = |why: &str| LakeError::Invalid(format!("{path}: series directory {why}"));
        let value: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        if value["version"].as_u64() != Some(DIRECTORY_VERSION) {
            return Err(bad(&format!(
                "has version {}, this Strata reads {DIRECTORY_VERSION}",
                value["version"]
            )));
        }
        let keys: Vec<&str> = value["keys"]
            .as_array()
            .ok_or_else(|| bad("has no keys"))?
            .iter()
            .map(|k| k.as_str().ok_or_else(|| bad("has a key that is not text")))
            .collect::<Result<_, _>>()?;
        let mut directory = SeriesDirectory::default();
        for row in value["series"]
            .as_array()
            .ok_or_else(|| bad("has no series"))?
        {
            let row = row
                .as_array()
                .filter(|r| r.len() == keys.len() + 1)
                .ok_or_else(|| bad("has a series of the wrong length"))?;
            let mut tags = Vec::new();
            for (key, value) in keys.iter().zip(row) {
                match value {
                    Value::Null => {}
                    Value::String(v) => tags.push(((*key).to_string(), v.clone())),
                    _ => return Err(bad("has a tag value that is not text")),
                }
            }
            let rows = row[keys.len()]
                .as_u64()
                .ok_or_else(|| bad("has a row count that is not a number"))?;
            let first_row = directory.entries.last().map_or(0, |e| e.first_row + e.rows);
            directory.entries.push(DirectoryEntry {
                tags,
                first_row,
                rows,
            });
        }
        Ok(directory)
    }

    /// Rows in the file.
    pub fn rows(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.first_row + e.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn round_trips_with_missing_tags_and_continued_series() {
        let mut d = SeriesDirectory::default();
        d.push(&tags(&[("host", "a")]), 3);
        d.push(&tags(&[("host", "a")]), 2);
        d.push(&tags(&[("host", "b"), ("rack", "1")]), 4);
        d.push(&tags(&[]), 1);
        assert_eq!(d.entries.len(), 3);
        assert_eq!(d.entries[1].first_row, 5);
        assert_eq!(d.rows(), 10);
        let back = SeriesDirectory::from_json(&d.to_json(), "f").unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        for text in [
            "{}",
            r#"{"version":2,"keys":[],"series":[]}"#,
            r#"{"version":1,"keys":["a"],"series":[[1,2]]}"#,
            r#"{"version":1,"keys":["a"],"series":[["x"]]}"#,
        ] {
            assert!(SeriesDirectory::from_json(text, "f").is_err(), "{text}");
        }
    }
}
