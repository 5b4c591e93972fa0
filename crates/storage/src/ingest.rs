//! Turning line protocol into per-shard batches, on the writer's own thread.
//!
//! Each line is parsed, its table, tags and fields resolved through a per-request
//! [`SchemaCache`], and its row appended to the batch of the shard that owns its series. No
//! shard lock is taken here; the shards only see finished batches. A bad line (syntax,
//! type conflict, reserved name) is reported and skipped; the other lines go in.

use std::borrow::Cow;
use std::ops::Range;

use strata_lineproto::{FieldValue, Line, ParseOptions, parse_lines};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::catalog::{Catalog, SchemaCache};
use crate::model::{FieldId, TableId, Timestamp, Value};

/// A rejected line of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number in the request body.
    pub line: usize,
    /// 1-based byte column, when the problem has a position (syntax errors do; a type
    /// conflict names its field in the message instead).
    pub column: Option<usize>,
    /// What was wrong.
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.column {
            Some(column) => write!(f, "line {}, column {}: {}", self.line, column, self.message),
            None => write!(f, "line {}: {}", self.line, self.message),
        }
    }
}

/// One row bound for a shard; tags and fields live in the batch's flat vectors.
#[derive(Debug, Clone)]
pub(crate) struct BatchRow<'a> {
    pub table: TableId,
    /// Measurement and tags exactly as written: the series index's allocation-free key.
    pub raw_key: &'a [u8],
    pub tags: Range<usize>,
    pub fields: Range<usize>,
    pub time: Timestamp,
    /// Line number in the request, for errors found later (in the shard).
    pub line: usize,
}

/// The rows of one write that belong to one shard.
#[derive(Debug, Default)]
pub(crate) struct ShardBatch<'a> {
    pub rows: Vec<BatchRow<'a>>,
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub fields: Vec<(FieldId, Value)>,
}

impl<'a> ShardBatch<'a> {
    /// Tags of `row`.
    pub fn tags_of(&self, row: &BatchRow<'a>) -> &[(Cow<'a, str>, Cow<'a, str>)] {
        &self.tags[row.tags.clone()]
    }

    /// Fields of `row`.
    pub fn fields_of(&self, row: &BatchRow<'a>) -> &[(FieldId, Value)] {
        &self.fields[row.fields.clone()]
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Counts of a grouped write.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grouped {
    pub rows: u64,
    pub points: u64,
    /// Rows refused because they are older than the database's retention.
    pub expired: u64,
}

/// The times a write is checked against: the time given to rows without a timestamp, and
/// the retention horizon (rows before it are refused; `i64::MIN` when rows are kept
/// forever), with the retention for the error message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteTimes {
    pub now: Timestamp,
    pub horizon: Timestamp,
    pub retention: Option<std::time::Duration>,
}

/// Parses `input` and appends each good row to `batches[shard]`; bad lines go to `errors`.
#[allow(clippy::too_many_arguments)] // the write path's context, passed flat on purpose
pub(crate) fn group_lines<'a>(
    input: &'a [u8],
    options: &ParseOptions,
    catalog: &Catalog,
    cache: &mut SchemaCache,
    times: WriteTimes,
    batches: &mut [ShardBatch<'a>],
    errors: &mut Vec<LineError>,
) -> Grouped {
    let mut grouped = Grouped::default();
    let mut lines = parse_lines(input, options);
    let mut line = Line::default();
    while let Some(result) = lines.next_into(&mut line) {
        if let Err(e) = result {
            errors.push(LineError {
                line: e.line,
                column: Some(e.column),
                message: e.kind.to_string(),
            });
            continue;
        }
        if line.timestamp_ns.unwrap_or(times.now) < times.horizon {
            grouped.expired += 1;
            errors.push(LineError {
                line: line.line_number,
                column: None,
                message: expired_message(times),
            });
            continue;
        }
        match add_line(&mut line, catalog, cache, times.now, batches) {
            Ok(points) => {
                grouped.rows += 1;
                grouped.points += points;
            }
            Err(message) => errors.push(LineError {
                line: line.line_number,
                column: None,
                message,
            }),
        }
    }
    grouped
}

/// Why a row older than the retention is refused; InfluxDB 1.x words it "points beyond
/// retention policy dropped".
pub(crate) fn expired_message(times: WriteTimes) -> String {
    let retention = times
        .retention
        .map(|d| humantime::format_duration(d).to_string())
        .unwrap_or_default();
    format!(
        "point is beyond the retention policy: its time is before {} (now minus the database's retention of {retention}); dropped",
        times.horizon
    )
}

fn add_line<'a>(
    line: &mut Line<'a>,
    catalog: &Catalog,
    cache: &mut SchemaCache,
    now: Timestamp,
    batches: &mut [ShardBatch<'a>],
) -> Result<u64, String> {
    let table = cache.table(catalog, &line.measurement);
    cache
        .tags(catalog, table, line.tags.iter().map(|(k, _)| k.as_ref()))
        .map_err(|e| e.to_string())?;
    let shard = shard_of(table, &line.tags, batches.len());
    let batch = &mut batches[shard];
    let fields_start = batch.fields.len();
    for (name, value) in &line.fields {
        let value = to_value(value);
        match cache.field(catalog, table, name, value.field_type()) {
            Ok(id) => batch.fields.push((id, value)),
            Err(e) => {
                batch.fields.truncate(fields_start);
                return Err(e.to_string());
            }
        }
    }
    let points = (batch.fields.len() - fields_start) as u64;
    let tags_start = batch.tags.len();
    batch.tags.append(&mut line.tags);
    batch.rows.push(BatchRow {
        table,
        raw_key: line.series_key,
        tags: tags_start..batch.tags.len(),
        fields: fields_start..batch.fields.len(),
        time: line.timestamp_ns.unwrap_or(now),
        line: line.line_number,
    });
    Ok(points)
}

fn to_value(value: &FieldValue<'_>) -> Value {
    match value {
        FieldValue::Float(v) => Value::Float(*v),
        FieldValue::Integer(v) => Value::Integer(*v),
        FieldValue::UInteger(v) => Value::Unsigned(*v),
        FieldValue::Boolean(v) => Value::Boolean(*v),
        FieldValue::String(v) => Value::String(v.to_string()),
    }
}

/// The shard owning the series (table, tags). Independent of the order the tags were written
/// in (the same series can be written as `a=1,b=2` or `b=2,a=1`), so the per-tag hashes are
/// summed; a repeated tag key (last one wins) is resolved first.
pub(crate) fn shard_of(
    table: TableId,
    tags: &[(Cow<'_, str>, Cow<'_, str>)],
    shards: usize,
) -> usize {
    if shards <= 1 {
        return 0;
    }
    let mut hash = xxh3_64(&table.to_le_bytes());
    let mut seen_bits = 0u64;
    let mut maybe_repeated = false;
    for (key, value) in tags {
        let key_hash = xxh3_64(key.as_bytes());
        let bit = 1u64 << (key_hash % 64);
        maybe_repeated |= seen_bits & bit != 0;
        seen_bits |= bit;
        hash = hash.wrapping_add(xxh3_64_with_seed(value.as_bytes(), key_hash));
    }
    if maybe_repeated {
        hash = xxh3_64(&table.to_le_bytes());
        for (i, (key, value)) in tags.iter().enumerate() {
            let overridden = tags[i + 1..].iter().any(|(later, _)| later == key);
            if !overridden {
                hash =
                    hash.wrapping_add(xxh3_64_with_seed(value.as_bytes(), xxh3_64(key.as_bytes())));
            }
        }
    }
    // Multiply-shift maps the hash onto 0..shards without modulo bias worth noticing.
    ((u128::from(hash) * shards as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags<'a>(pairs: &[(&'a str, &'a str)]) -> Vec<(Cow<'a, str>, Cow<'a, str>)> {
        pairs
            .iter()
            .map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(*v)))
            .collect()
    }

    #[test]
    fn shard_ignores_tag_order_and_resolves_repeated_keys() {
        for shards in [2, 3, 7, 64] {
            let a = shard_of(1, &tags(&[("host", "a"), ("dc", "x")]), shards);
            let b = shard_of(1, &tags(&[("dc", "x"), ("host", "a")]), shards);
            let c = shard_of(1, &tags(&[("dc", "y"), ("host", "a"), ("dc", "x")]), shards);
            assert_eq!(a, b);
            assert_eq!(a, c);
        }
        // Different series spread over the shards.
        let mut counts = [0usize; 4];
        for i in 0..4000 {
            let host = format!("host_{i}");
            counts[shard_of(0, &tags(&[("hostname", &host)]), 4)] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
        assert_eq!(shard_of(5, &tags(&[("a", "b")]), 1), 0);
    }
}
