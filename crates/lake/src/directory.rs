//! A lake file's series directory: which rows each series holds, kept in the file's
//! Parquet footer (key `strata.series`).
//!
//! A file's rows are sorted by series (canonical tags), then time. The directory lists the
//! series in that order with their row counts, so a read of some series selects their
//! rows (Parquet's row selection skips the pages and row groups of the others) without
//! decoding a tag column, and a reader learns a file's series from its footer alone.
//!
//! Each entry also says where each hour of the file's day starts in the series' rows, so
//! that a read of a few hours selects only their rows.
//!
//! JSON (version 2): `{"version": 2, "keys": [tag keys, sorted], "series": [[value or null
//! for each key, …, rows, [rows before 01:00, before 02:00, …, before 23:00]], …]}`.
//! Version 1 (no hours) is still read.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::LakeError;

/// The footer key holding the directory.
pub const DIRECTORY_KEY: &str = "strata.series";
const DIRECTORY_VERSION: u64 = 2;
/// Hours of a day after the first: the hour marks of an entry.
const HOUR_MARKS: usize = 23;
const HOUR_NS: i64 = 3_600_000_000_000;

/// One series of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryEntry {
    /// Canonical tags (sorted by key).
    pub tags: Vec<(String, String)>,
    /// Its first row in the file.
    pub first_row: u64,
    /// How many rows it has.
    pub rows: u64,
    /// For hours 1–23 of the file's day, how many of its rows are earlier (empty: not
    /// known, a version 1 file).
    pub hours: Vec<u64>,
}

impl DirectoryEntry {
    /// The entry's rows (from its first, end exclusive) that can hold times in
    /// `start..end`, for a file of the day starting at `day_start`.
    pub fn rows_between(&self, day_start: i64, start: i64, end: i64) -> (u64, u64) {
        if self.hours.len() != HOUR_MARKS {
            return (0, self.rows);
        }
        // Rows before hour h (h = 0..=24).
        let before = |h: i64| match h {
            ..=0 => 0,
            1..=23 => self.hours[(h - 1) as usize],
            _ => self.rows,
        };
        let first_hour = start.saturating_sub(day_start).div_euclid(HOUR_NS);
        let last_hour = end
            .saturating_sub(day_start)
            .saturating_sub(1)
            .div_euclid(HOUR_NS);
        let (from, to) = (before(first_hour), before(last_hour.saturating_add(1)));
        (from.min(to), to)
    }
}

/// A file's series, in row order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeriesDirectory {
    /// The series, in row order.
    pub entries: Vec<DirectoryEntry>,
}

impl SeriesDirectory {
    /// Appends the rows of the series `tags` with times `times` (sorted), in a file of
    /// the day starting at `day_start` (they follow the rows listed so far; a series
    /// continued from the entry before is counted there).
    pub fn push(&mut self, tags: &[(String, String)], times: &[i64], day_start: i64) {
        let first_row = self.entries.last().map_or(0, |e| e.first_row + e.rows);
        let marks = (1..=HOUR_MARKS as i64)
            .map(|h| times.partition_point(|t| *t < day_start + h * HOUR_NS) as u64);
        match self.entries.last_mut() {
            Some(last) if last.tags == tags => {
                // The new rows come after the old: each mark grows by the new rows before it.
                for (mark, more) in last.hours.iter_mut().zip(marks) {
                    *mark += more;
                }
                last.rows += times.len() as u64;
            }
            _ => self.entries.push(DirectoryEntry {
                tags: tags.to_vec(),
                first_row,
                rows: times.len() as u64,
                hours: marks.collect(),
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
                row.push(json!(e.hours));
                Value::Array(row)
            })
            .collect();
        json!({ "version": DIRECTORY_VERSION, "keys": keys, "series": series }).to_string()
    }

    /// Reads a footer's directory (`path` names the file in errors).
    pub fn from_json(text: &str, path: &str) -> Result<Self, LakeError> {
        let bad = |why: &str| LakeError::Invalid(format!("{path}: series directory {why}"));
        let value: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
        let version = value["version"].as_u64();
        let extra = match version {
            Some(1) => 1,
            Some(DIRECTORY_VERSION) => 2,
            _ => {
                return Err(bad(&format!(
                    "has version {}, this Strata reads 1 to {DIRECTORY_VERSION}",
                    value["version"]
                )));
            }
        };
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
                .filter(|r| r.len() == keys.len() + extra)
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
            let hours = match row.get(keys.len() + 1) {
                None => Vec::new(),
                Some(marks) => {
                    let marks: Vec<u64> = marks
                        .as_array()
                        .filter(|m| m.len() == HOUR_MARKS)
                        .ok_or_else(|| bad("has hour marks of the wrong length"))?
                        .iter()
                        .map(|m| m.as_u64().filter(|m| *m <= rows))
                        .collect::<Option<_>>()
                        .ok_or_else(|| bad("has an hour mark past its rows"))?;
                    if marks.windows(2).any(|w| w[0] > w[1]) {
                        return Err(bad("has hour marks out of order"));
                    }
                    marks
                }
            };
            let first_row = directory.entries.last().map_or(0, |e| e.first_row + e.rows);
            directory.entries.push(DirectoryEntry {
                tags,
                first_row,
                rows,
                hours,
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

    const DAY: i64 = 19_000 * 86_400_000_000_000;

    /// Times at these hours (and minutes) of the day.
    fn at(hours: &[(i64, i64)]) -> Vec<i64> {
        hours
            .iter()
            .map(|(h, m)| DAY + h * HOUR_NS + m * 60_000_000_000)
            .collect()
    }

    #[test]
    fn round_trips_with_missing_tags_and_continued_series() {
        let mut d = SeriesDirectory::default();
        d.push(&tags(&[("host", "a")]), &at(&[(0, 0), (0, 5), (2, 0)]), DAY);
        d.push(&tags(&[("host", "a")]), &at(&[(2, 30), (23, 59)]), DAY);
        d.push(
            &tags(&[("host", "b"), ("rack", "1")]),
            &at(&[(5, 0); 4]),
            DAY,
        );
        d.push(&tags(&[]), &at(&[(1, 0)]), DAY);
        assert_eq!(d.entries.len(), 3);
        assert_eq!(d.entries[1].first_row, 5);
        assert_eq!(d.rows(), 10);
        // host a: 2 rows before 01:00 and 02:00, 4 before 03:00 … and 4 before 23:00.
        assert_eq!(&d.entries[0].hours[..3], &[2, 2, 4]);
        assert_eq!(d.entries[0].hours[22], 4);
        let back = SeriesDirectory::from_json(&d.to_json(), "f").unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn hour_marks_bound_the_rows_a_time_range_needs() {
        let mut d = SeriesDirectory::default();
        // One row every 30 minutes: two an hour.
        let times: Vec<i64> = (0..48).map(|i| DAY + i * HOUR_NS / 2).collect();
        d.push(&tags(&[("host", "a")]), &times, DAY);
        let e = &d.entries[0];
        for (start, end) in [(0, 48), (3, 5), (0, 1), (47, 48), (10, 11)] {
            let (from, to) = e.rows_between(DAY, times[start], times[end - 1] + 1);
            assert!(
                from as usize <= start && to as usize >= end,
                "{start}..{end}: {from}..{to}"
            );
            assert!(
                to - from <= (end - start) as u64 + 2,
                "{start}..{end}: {from}..{to}"
            );
        }
        // Before and after the day, and around it.
        assert_eq!(e.rows_between(DAY, DAY - 10, DAY), (0, 0));
        assert_eq!(
            e.rows_between(DAY, DAY + 24 * HOUR_NS, DAY + 25 * HOUR_NS),
            (48, 48)
        );
        assert_eq!(e.rows_between(DAY, i64::MIN, i64::MAX), (0, 48));
        // Version 1 has no marks: every row.
        let v1 = r#"{"version":1,"keys":["host"],"series":[["a",48]]}"#;
        let old = SeriesDirectory::from_json(v1, "f").unwrap();
        assert_eq!(old.entries[0].rows_between(DAY, DAY, DAY + 1), (0, 48));
    }

    #[test]
    fn refuses_what_it_does_not_know() {
        for text in [
            "{}",
            r#"{"version":3,"keys":[],"series":[]}"#,
            r#"{"version":1,"keys":["a"],"series":[[1,2]]}"#,
            r#"{"version":1,"keys":["a"],"series":[["x"]]}"#,
            r#"{"version":2,"keys":["a"],"series":[["x",2,[1]]]}"#,
            r#"{"version":2,"keys":["a"],"series":[["x",2,[3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3]]]}"#,
        ] {
            assert!(SeriesDirectory::from_json(text, "f").is_err(), "{text}");
        }
    }
}
