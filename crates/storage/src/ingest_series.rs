//! Writes that arrive already structured (Prometheus remote write, OpenTSDB, the text
//! exposition format): one series, named by table and tags, with one field's samples.
//!
//! They take the same road as line protocol past the parser: schema resolution through the
//! request's [`SchemaCache`], the retention horizon, one [`ShardBatch`] per shard. The
//! series index caches each line's raw key as an alias of its series; these series have no
//! line, so they get a key of their own ([`structured_key`]) that no line's key can equal.

use std::borrow::Cow;
use std::ops::Range;

use crate::catalog::{Catalog, SchemaCache};
use crate::ingest::{BatchRow, Grouped, LineError, ShardBatch, WriteTimes, shard_of};
use crate::model::{Timestamp, Value};
use crate::series::raw_key_hash;

/// One series of a structured write: its samples of one field.
#[derive(Debug, Clone)]
pub struct SeriesWrite<'a> {
    /// The table (a Prometheus metric name). Created on first write, as with line protocol.
    pub table: Cow<'a, str>,
    /// Tag keys and values; no key may repeat.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The field the samples are written to.
    pub field: Cow<'a, str>,
    /// (time in ns, value) pairs; every value must have the field's type.
    pub samples: Vec<(Timestamp, Value)>,
}

/// The raw series key of a structured series: a newline, then the table and each tag key
/// and value, each as a little-endian `u32` length and its bytes. A line's raw key is a
/// slice of one line and never holds a newline, so the two kinds of key never meet; the
/// lengths make the encoding unambiguous.
pub(crate) fn structured_key(out: &mut Vec<u8>, series: &SeriesWrite<'_>) {
    out.push(b'\n');
    let mut put = |text: &str| {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    };
    put(&series.table);
    for (key, value) in &series.tags {
        put(key);
        put(value);
    }
}

/// Appends each series' samples to the batch of the shard owning the series. A series whose
/// table, tags or field the catalog refuses is reported (its "line" is its 1-based place in
/// `series`) and skipped whole; samples older than the retention are counted as expired and
/// reported once per series.
#[allow(clippy::too_many_arguments)] // the write path's context, passed flat as in group_lines
pub(crate) fn group_series<'a>(
    series: &'a [SeriesWrite<'a>],
    keys: &'a [u8],
    key_ranges: &[Range<usize>],
    catalog: &Catalog,
    cache: &mut SchemaCache,
    times: WriteTimes,
    batches: &mut [ShardBatch<'a>],
    errors: &mut Vec<LineError>,
) -> Grouped {
    let mut grouped = Grouped::default();
    for (index, (one, key_range)) in series.iter().zip(key_ranges).enumerate() {
        let line = index + 1;
        let refuse = |errors: &mut Vec<LineError>, message: String| {
            errors.push(LineError {
                line,
                column: None,
                message,
            })
        };
        if one.table.is_empty() {
            refuse(errors, "a series needs a table (metric) name".into());
            continue;
        }
        if one.samples.is_empty() {
            continue;
        }
        let table = cache.table(catalog, &one.table);
        if let Err(e) = cache.tags(catalog, table, one.tags.iter().map(|(k, _)| k.as_ref())) {
            refuse(errors, e.to_string());
            continue;
        }
        let field_type = one.samples[0].1.field_type();
        if let Some((_, odd)) = one
            .samples
            .iter()
            .find(|(_, v)| v.field_type() != field_type)
        {
            refuse(
                errors,
                format!(
                    "the samples of field {:?} mix the types {field_type:?} and {:?}",
                    one.field,
                    odd.field_type()
                ),
            );
            continue;
        }
        let field = match cache.field(catalog, table, &one.field, field_type) {
            Ok(id) => id,
            Err(e) => {
                refuse(errors, e.to_string());
                continue;
            }
        };
        let batch = &mut batches[shard_of(table, &one.tags, batches.len())];
        let tags_start = batch.tags.len();
        batch.tags.extend(one.tags.iter().cloned());
        let tags = tags_start..batch.tags.len();
        let raw_key = &keys[key_range.clone()];
        let raw_hash = raw_key_hash(table, raw_key);
        let mut expired = 0u64;
        for (time, value) in &one.samples {
            if *time < times.horizon {
                expired += 1;
                continue;
            }
            let fields_start = batch.fields.len();
            batch.fields.push((field, value.clone()));
            batch.rows.push(BatchRow {
                table,
                raw_key,
                raw_hash,
                tags: tags.clone(),
                fields: fields_start..batch.fields.len(),
                time: *time,
                line,
            });
            grouped.rows += 1;
            grouped.points += 1;
        }
        if expired > 0 {
            grouped.expired += expired;
            refuse(
                errors,
                format!(
                    "{expired} samples are beyond the retention policy: {}",
                    crate::ingest::expired_message(times)
                ),
            );
        }
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series<'a>(table: &'a str, tags: &[(&'a str, &'a str)]) -> SeriesWrite<'a> {
        SeriesWrite {
            table: table.into(),
            tags: tags
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            field: "value".into(),
            samples: vec![],
        }
    }

    fn key(one: &SeriesWrite<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        structured_key(&mut out, one);
        out
    }

    #[test]
    fn structured_keys_are_unambiguous_and_never_a_line_key() {
        let a = key(&series("m", &[("a", "b,c=d")]));
        let b = key(&series("m", &[("a", "b"), ("c", "d")]));
        let c = key(&series("m,a=b", &[("c", "d")]));
        assert_ne!(a, b);
        assert_ne!(b, c);
        assert_ne!(a, c);
        assert_eq!(a[0], b'\n');
        assert_eq!(
            key(&series("m", &[("a", "b")])),
            key(&series("m", &[("a", "b")]))
        );
    }
}
