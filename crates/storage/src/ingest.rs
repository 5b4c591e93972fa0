//! Turning line protocol into per-shard batches, on the writer's own thread.
//!
//! Each line is parsed, its table, tags and fields resolved through a per-request
//! [`SchemaCache`], and its row appended to the batch of the shard that owns its series. No
//! shard lock is taken here; the shards only see finished batches. A bad line (syntax,
//! type conflict, reserved name) is reported and skipped; the other lines go in.
//!
//! Work per row is kept here, on the writer's thread, while the line's bytes are in cache:
//! the raw series key is hashed once ([`raw_key_hash`], which the shard's index looks the
//! series up by), and a row whose tag keys repeat the previous row's (nearly every row of
//! a request) reuses their catalog check and hashes ([`TagKeys`]). A row's tags are not
//! copied into the batch: the shard reads them back from the raw key in the rare case the
//! row creates a series.

use std::borrow::Cow;
use std::ops::Range;

use strata_lineproto::{FieldValue, Line, ParseOptions, parse_lines};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

use crate::catalog::{Catalog, SchemaCache};
use crate::model::{FieldId, FieldType, TableId, Timestamp, Value};
use crate::series::{Hash128, raw_key_hash};

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
    /// [`raw_key_hash`] of `raw_key` in `table`.
    pub raw_hash: Hash128,
    /// The row's tags in the batch's `tags`; empty when the batch keeps tags in the raw
    /// keys (see [`ShardBatch::tags_in_raw_keys`]).
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
    /// Rows' raw keys are line protocol series keys, and their tags are read back from
    /// them (`strata_lineproto::parse_series_key`) instead of being kept in `tags`.
    pub tags_in_raw_keys: bool,
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
    let mut keys = TagKeys::default();
    let mut fields = FieldKeys::default();
    let rows_per_shard = rows_per_shard(input, batches.len());
    for batch in batches.iter_mut() {
        batch.tags_in_raw_keys = true;
    }
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
        match add_line(
            &mut line,
            catalog,
            cache,
            &mut keys,
            &mut fields,
            times.now,
            rows_per_shard,
            batches,
        ) {
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

/// How many rows each shard's batch makes room for when it takes its first row: the
/// request's lines (the density of newlines in its first 64 KiB, over its length) split
/// over the shards, with an eighth more for an uneven split, and no more than
/// [`ROWS_ROOM_MAX`] in all. Batches that grew by doubling instead cost a copy at each step,
/// and k batches growing side by side cannot grow in place: callgrind counted 3.5 times the
/// copying with 12 shards as with one (`bench/instructions-per-point.sh`).
fn rows_per_shard(input: &[u8], shards: usize) -> usize {
    let sample = &input[..input.len().min(64 << 10)];
    let newlines = sample.iter().filter(|&&b| b == b'\n').count();
    let lines = (newlines + 1) * input.len() / sample.len().max(1);
    let shards = shards.max(1);
    (lines + lines / 8).min(ROWS_ROOM_MAX) / shards + 1
}

/// The most rows a request's batches make room for before they need them; larger requests
/// grow their batches as they fill. With [`FIELDS_ROOM_PER_ROW`] it bounds what an odd
/// request (64 KiB of blank lines, then long ones) can make a write reserve: about 55 MB.
const ROWS_ROOM_MAX: usize = 1 << 16;

/// The most fields per row a batch makes room for ahead.
const FIELDS_ROOM_PER_ROW: usize = 32;

#[allow(clippy::too_many_arguments)] // the write path's context, passed flat as in group_lines
fn add_line<'a>(
    line: &mut Line<'a>,
    catalog: &Catalog,
    cache: &mut SchemaCache,
    keys: &mut TagKeys<'a>,
    fields: &mut FieldKeys<'a>,
    now: Timestamp,
    rows_per_shard: usize,
    batches: &mut [ShardBatch<'a>],
) -> Result<u64, String> {
    let table = cache.table(catalog, &line.measurement);
    if !keys.repeat(table, &line.tags) {
        cache
            .tags(catalog, table, line.tags.iter().map(|(k, _)| k.as_ref()))
            .map_err(|e| e.to_string())?;
        keys.remember(table, &line.tags);
    }
    let shard = keys.shard_of(&line.tags, batches.len());
    let batch = &mut batches[shard];
    if batch.rows.capacity() == 0 {
        batch.rows.reserve(rows_per_shard);
        batch
            .fields
            .reserve(rows_per_shard * line.fields.len().min(FIELDS_ROOM_PER_ROW));
    }
    let fields_start = batch.fields.len();
    if fields.repeat(table, &line.fields) {
        let ids = fields.ids.iter();
        batch.fields.extend(
            ids.zip(&line.fields)
                .map(|(&(id, _), (_, value))| (id, to_value(value))),
        );
    } else {
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
        fields.remember(table, &line.fields, &batch.fields[fields_start..]);
    }
    let points = (batch.fields.len() - fields_start) as u64;
    batch.rows.push(BatchRow {
        table,
        raw_key: line.series_key,
        raw_hash: raw_key_hash(table, line.series_key),
        tags: 0..0,
        fields: fields_start..batch.fields.len(),
        time: line.timestamp_ns.unwrap_or(now),
        line: line.line_number,
    });
    Ok(points)
}

/// The tag keys of the last row whose keys the catalog accepted, with what [`shard_of`]
/// needs of them. The rows of a request nearly always name the same keys in the same order:
/// such a row costs one comparison per key instead of a catalog check (a scan of the
/// table's known keys per key), a hash per key, and a search for repeated keys.
#[derive(Debug, Default)]
pub(crate) struct TagKeys<'a> {
    table: Option<TableId>,
    /// Hash of `table` ([`table_hash`]).
    table_hash: u64,
    keys: Vec<Cow<'a, str>>,
    /// Hash of each key ([`key_hash`]).
    hashes: Vec<u64>,
    /// Whether a later key repeats each key (the later one wins, so this one's value does
    /// not place the series).
    overridden: Vec<bool>,
}

impl<'a> TagKeys<'a> {
    /// Whether `tags` name the remembered keys, in the same order, in the same table.
    #[inline]
    fn repeat(&self, table: TableId, tags: &[(Cow<'a, str>, Cow<'a, str>)]) -> bool {
        self.table == Some(table)
            && self.keys.len() == tags.len()
            && self
                .keys
                .iter()
                .zip(tags)
                .all(|(known, (key, _))| known == key)
    }

    /// Remembers the keys of `tags`, which the catalog accepted for `table`.
    fn remember(&mut self, table: TableId, tags: &[(Cow<'a, str>, Cow<'a, str>)]) {
        self.table = Some(table);
        self.table_hash = table_hash(table);
        self.keys.clear();
        self.hashes.clear();
        self.overridden.clear();
        for (i, (key, _)) in tags.iter().enumerate() {
            self.keys.push(key.clone());
            self.hashes.push(key_hash(key));
            self.overridden
                .push(tags[i + 1..].iter().any(|(later, _)| later == key));
        }
    }

    /// [`shard_of`] of a row with the remembered keys. Equal to it by construction: the
    /// same sum of the same hashes over the keys no later key overrides. [`shard_of`] finds
    /// repeated keys per row, and with 10 keys the cheap test it tries first (one bit per key
    /// of 64) passes about half the key sets, TSBS's among them, to a second pass that
    /// hashes every value again; here that is settled once per key set.
    #[inline]
    fn shard_of(&self, tags: &[(Cow<'_, str>, Cow<'_, str>)], shards: usize) -> usize {
        if shards <= 1 {
            return 0;
        }
        let mut hash = self.table_hash;
        for (((_, value), &key_hash), &overridden) in
            tags.iter().zip(&self.hashes).zip(&self.overridden)
        {
            if !overridden {
                hash = hash.wrapping_add(xxh3_64_with_seed(value.as_bytes(), key_hash));
            }
        }
        spread(hash, shards)
    }
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
/// summed; a repeated tag key (last one wins) is resolved first. The placement of every
/// series already stored depends on this function: it must never change.
pub(crate) fn shard_of(
    table: TableId,
    tags: &[(Cow<'_, str>, Cow<'_, str>)],
    shards: usize,
) -> usize {
    if shards <= 1 {
        return 0;
    }
    let table_hash = table_hash(table);
    let mut hash = table_hash;
    let mut seen_bits = 0u64;
    let mut maybe_repeated = false;
    for (key, value) in tags {
        let key_hash = key_hash(key);
        let bit = 1u64 << (key_hash % 64);
        maybe_repeated |= seen_bits & bit != 0;
        seen_bits |= bit;
        hash = hash.wrapping_add(xxh3_64_with_seed(value.as_bytes(), key_hash));
    }
    if maybe_repeated {
        hash = table_hash;
        for (i, (key, value)) in tags.iter().enumerate() {
            let overridden = tags[i + 1..].iter().any(|(later, _)| later == key);
            if !overridden {
                hash = hash.wrapping_add(xxh3_64_with_seed(value.as_bytes(), key_hash(key)));
            }
        }
    }
    spread(hash, shards)
}

/// Maps a series' hash onto 0..shards by multiply-shift, without modulo bias worth noticing.
#[inline]
fn spread(hash: u64, shards: usize) -> usize {
    ((u128::from(hash) * shards as u128) >> 64) as usize
}

/// The field keys and value types of the last row whose fields the catalog accepted, with
/// their ids: a row that repeats them (nearly every row of a request) takes its ids from
/// here instead of the schema cache's map.
#[derive(Debug, Default)]
pub(crate) struct FieldKeys<'a> {
    table: Option<TableId>,
    names: Vec<Cow<'a, str>>,
    ids: Vec<(FieldId, FieldType)>,
}

impl<'a> FieldKeys<'a> {
    /// Whether `fields` name the remembered fields, in the same order, with values of the
    /// same types, in the same table.
    #[inline]
    fn repeat(&self, table: TableId, fields: &[(Cow<'a, str>, FieldValue<'a>)]) -> bool {
        self.table == Some(table)
            && self.names.len() == fields.len()
            && self.names.iter().zip(&self.ids).zip(fields).all(
                |((known, &(_, field_type)), (name, value))| {
                    known == name && field_type == type_of(value)
                },
            )
    }

    /// Remembers `fields` of `table`, which the catalog gave `ids`.
    fn remember(
        &mut self,
        table: TableId,
        fields: &[(Cow<'a, str>, FieldValue<'a>)],
        ids: &[(FieldId, Value)],
    ) {
        self.table = Some(table);
        self.names.clear();
        self.ids.clear();
        for ((name, _), (id, value)) in fields.iter().zip(ids) {
            self.names.push(name.clone());
            self.ids.push((*id, value.field_type()));
        }
    }
}

/// The stored type of a line protocol value.
#[inline]
fn type_of(value: &FieldValue<'_>) -> FieldType {
    match value {
        FieldValue::Float(_) => FieldType::Float,
        FieldValue::Integer(_) => FieldType::Integer,
        FieldValue::UInteger(_) => FieldType::Unsigned,
        FieldValue::Boolean(_) => FieldType::Boolean,
        FieldValue::String(_) => FieldType::String,
    }
}

/// A table's share of [`shard_of`]'s hash.
#[inline]
fn table_hash(table: TableId) -> u64 {
    xxh3_64(&table.to_le_bytes())
}

/// A tag key's hash, the seed of its value's hash in [`shard_of`].
#[inline]
fn key_hash(key: &str) -> u64 {
    xxh3_64(key.as_bytes())
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

    /// Where every stored series lives depends on `shard_of`: a change would put new rows of
    /// old series in other shards. These placements were computed by the first version.
    #[test]
    fn placement_never_changes() {
        type Case<'a> = (&'a [(&'a str, &'a str)], usize, usize);
        let cases: [Case<'_>; 4] = [
            (
                &[("hostname", "host_0"), ("region", "eu-west-1")],
                12,
                PINNED[0],
            ),
            (
                &[("region", "eu-west-1"), ("hostname", "host_0")],
                12,
                PINNED[0],
            ),
            (&[("a", "1"), ("b", "2"), ("a", "3")], 16, PINNED[1]),
            (&[], 7, PINNED[2]),
        ];
        for (pairs, shards, want) in cases {
            assert_eq!(shard_of(3, &tags(pairs), shards), want, "{pairs:?}");
        }
    }

    // Computed independently from the formula with the reference xxh3 (Python `xxhash`).
    const PINNED: [usize; 3] = [2, 0, 5];

    /// Each shard's batch makes room once for its share of the request's rows and fields,
    /// so that k batches do not grow side by side by doubling; the rows still go where
    /// `shard_of` says.
    #[test]
    fn batches_make_room_once_for_their_share_of_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let mut cache = SchemaCache::new("db");
        let mut body = String::new();
        for i in 0..1000 {
            body.push_str(&format!(
                "cpu,hostname=host_{i:04},region=eu usage_user=7i,usage_system=2.5 {}\n",
                1_000_000_000 + i
            ));
        }
        let times = WriteTimes {
            now: 0,
            horizon: i64::MIN,
            retention: None,
        };
        for shards in [1usize, 4, 12] {
            let mut batches: Vec<ShardBatch<'_>> =
                (0..shards).map(|_| ShardBatch::default()).collect();
            let mut errors = Vec::new();
            let grouped = group_lines(
                body.as_bytes(),
                &ParseOptions::default(),
                &catalog,
                &mut cache,
                times,
                &mut batches,
                &mut errors,
            );
            assert!(errors.is_empty(), "{errors:?}");
            assert_eq!(grouped.rows, 1000);
            let room = rows_per_shard(body.as_bytes(), shards);
            // Lines of one length: the estimate is the share plus an eighth.
            assert!(
                room > 1000 / shards && room <= 1001 * 9 / 8 / shards + 1,
                "{room}"
            );
            // A request that starts with 64 KiB of blank lines does not make a write
            // reserve room for a line per byte.
            let odd = [vec![b'\n'; 64 << 10], vec![b'x'; 1 << 20]].concat();
            assert_eq!(rows_per_shard(&odd, shards), ROWS_ROOM_MAX / shards + 1);
            for (shard, batch) in batches.iter().enumerate() {
                if batch.rows.len() <= room {
                    assert_eq!(batch.rows.capacity(), room, "{shards} shards");
                    assert_eq!(batch.fields.capacity(), 2 * room, "{shards} shards");
                }
                for row in &batch.rows {
                    let line = std::str::from_utf8(row.raw_key).unwrap();
                    let host = line.split(['=', ',']).nth(2).unwrap();
                    let tags = tags(&[("hostname", host), ("region", "eu")]);
                    assert_eq!(shard, shard_of(row.table, &tags, shards));
                }
            }
        }
    }

    /// The row path's shortcut (key hashes remembered from the previous row) places every
    /// row where `shard_of` does, repeated keys included.
    #[test]
    fn remembered_key_hashes_place_rows_as_shard_of_does() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let names = ["host", "dc", "rack", "os", "a"];
        let mut keys = TagKeys::default();
        for _ in 0..2000 {
            let table = next(3) as TableId;
            let count = next(5) as usize;
            let owned: Vec<(String, String)> = (0..count)
                .map(|_| {
                    let key = names[next(names.len() as u64) as usize].to_string();
                    (key, format!("v{}", next(50)))
                })
                .collect();
            let row: Vec<(Cow<'static, str>, Cow<'static, str>)> = owned
                .iter()
                .map(|(k, v)| (Cow::Owned(k.clone()), Cow::Owned(v.clone())))
                .collect();
            if !keys.repeat(table, &row) {
                keys.remember(table, &row);
            }
            for shards in [2, 5, 12] {
                assert_eq!(
                    keys.shard_of(&row, shards),
                    shard_of(table, &row, shards),
                    "{owned:?}"
                );
            }
        }
    }
}
