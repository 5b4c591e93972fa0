//! One lake file: a Parquet file of one table's rows from one shard's partition and one
//! day, named after what it holds, and the Delta `add` action that commits it.
//!
//! The name says where the rows came from and which state of the partition they are:
//! `day=YYYY-MM-DD/s{shard}_p{partition}_o{order}_t{tombstone}_{nonce}.parquet`. The lake
//! reads it back from the Delta log to decide whether a partition is copied already
//! (`tier.rs`), so no state outside the table is needed and a retried copy after a crash
//! replaces, never duplicates. The nonce keeps a retry from overwriting a file an earlier,
//! uncommitted attempt left (Delta's vacuum removes those).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use deltalake_core::kernel::Add;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::AsyncArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use serde_json::{Map, Value, json};
use strata_storage::SeriesRows;
use strata_storage::model::FieldType;

use crate::directory::{DIRECTORY_KEY, SeriesDirectory};
use crate::error::LakeError;
use crate::schema::{DAY_COLUMN, LakeColumn, LakeSchema, TIME_COLUMN};

/// Where a file's rows came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileOrigin {
    /// The shard.
    pub shard: usize,
    /// The shard's partition.
    pub partition: i64,
    /// The partition's highest part order when copied.
    pub order: u64,
    /// The highest delete over the table and partition when copied.
    pub tombstone: u64,
}

impl FileOrigin {
    /// The file name (without directory) for this origin and `nonce`.
    fn file_name(&self, nonce: &str) -> String {
        format!(
            "s{}_p{}_o{}_t{}_{nonce}.parquet",
            self.shard, self.partition, self.order, self.tombstone
        )
    }

    /// The origin a lake file's path names; `None` for a file Strata did not write.
    pub fn parse(path: &str) -> Option<Self> {
        let name = path.rsplit('/').next()?.strip_suffix(".parquet")?;
        let mut parts = name.splitn(5, '_');
        let mut next = |prefix: char| parts.next()?.strip_prefix(prefix);
        let shard = next('s')?.parse().ok()?;
        let partition = next('p')?.parse().ok()?;
        let order = next('o')?.parse().ok()?;
        let tombstone = next('t')?.parse().ok()?;
        Some(Self {
            shard,
            partition,
            order,
            tombstone,
        })
    }
}

/// Nanoseconds in a UTC day (a file holds one).
const DAY_NS: i64 = 86_400_000_000_000;

/// Days are UTC dates: `day` of a time in nanoseconds.
pub fn day_of(time_ns: i64) -> i64 {
    time_ns.div_euclid(DAY_NS)
}

/// The first nanosecond of `day`.
pub fn day_start(day: i64) -> i64 {
    day.saturating_mul(DAY_NS)
}

/// The day a lake file's path names (`…/day=YYYY-MM-DD/…`); `None` when it names none.
pub fn path_day(path: &str) -> Option<i64> {
    let text = path.split('/').find_map(|p| p.strip_prefix("day="))?;
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?;
    Some((date - epoch).num_days())
}

/// The `YYYY-MM-DD` of a day number (days since 1970-01-01).
pub fn day_text(day: i64) -> String {
    utc(day.saturating_mul(86_400_000))
        .format("%Y-%m-%d")
        .to_string()
}

/// Milliseconds since the epoch as a UTC time (clamped to chrono's range, some 262,000
/// years either way, which no row reaches).
fn utc(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or(if ms < 0 {
        chrono::DateTime::<chrono::Utc>::MIN_UTC
    } else {
        chrono::DateTime::<chrono::Utc>::MAX_UTC
    })
}

/// `time` in nanoseconds as the ISO 8601 text Delta statistics use, in milliseconds:
/// rounded down (`up == false`) for a minimum, up for a maximum, so that the statistics
/// always bound the rows.
fn stats_time(time_ns: i64, up: bool) -> String {
    let ms = if up {
        time_ns.div_euclid(1_000_000) + i64::from(time_ns.rem_euclid(1_000_000) != 0)
    } else {
        time_ns.div_euclid(1_000_000)
    };
    utc(ms).format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// How lake files are written.
#[derive(Debug, Clone, Copy)]
pub struct FileOptions {
    /// Rows per Parquet row group.
    pub row_group_rows: usize,
    /// zstd level.
    pub zstd_level: i32,
}

impl Default for FileOptions {
    fn default() -> Self {
        Self {
            // Large enough that a scan reads long runs, small enough that time and tag
            // statistics prune within a file.
            row_group_rows: 1 << 20,
            zstd_level: 3,
        }
    }
}

/// A lake file being written: batches in, an `add` action out.
pub struct FileWriter {
    writer: AsyncArrowWriter<BufWriter>,
    store: Arc<dyn ObjectStore>,
    path: String,
    day: i64,
    rows: u64,
    min_time: i64,
    max_time: i64,
    null_counts: Vec<u64>,
    schema: LakeSchema,
    origin: FileOrigin,
    /// Which rows each series holds, for the footer.
    directory: SeriesDirectory,
}

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A name part no other file of this process or of an earlier run has: the clock and a
/// counter.
fn nonce() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{now:x}{:x}", NONCE.fetch_add(1, Ordering::Relaxed))
}

impl FileWriter {
    /// Starts a file of `origin`'s rows of `day` in the table whose store (rooted at the
    /// table) is `store`.
    pub fn create(
        store: Arc<dyn ObjectStore>,
        schema: &LakeSchema,
        origin: FileOrigin,
        day: i64,
        options: FileOptions,
    ) -> Result<Self, LakeError> {
        let path = format!(
            "{DAY_COLUMN}={}/{}",
            day_text(day),
            origin.file_name(&nonce())
        );
        let mut properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(options.zstd_level)?))
            .set_max_row_group_row_count(Some(options.row_group_rows.max(1)));
        // Times and integers are written as deltas (DELTA_BINARY_PACKED), not through a
        // dictionary: a series' times step evenly and its counters and gauges move a
        // little from row to row, so the deltas take a few bits where dictionary indexes
        // take as many as the distinct values need (0.885 bytes a TSBS point with the
        // default encodings, see docs/benchmarks.md "The lake").
        for column in &schema.columns {
            let delta = match column {
                LakeColumn::Time => true,
                LakeColumn::Field { field_type, .. } => *field_type == FieldType::Integer,
                LakeColumn::Nanos | LakeColumn::Tag(_) => false,
            };
            if delta {
                let path = ColumnPath::from(column.delta_name().as_ref());
                properties = properties
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
        }
        let properties = properties.build();
        let object = BufWriter::new(Arc::clone(&store), Path::from(path.as_str()));
        let writer =
            AsyncArrowWriter::try_new(object, Arc::clone(&schema.file_schema), Some(properties))?;
        Ok(Self {
            writer,
            store,
            path,
            day,
            rows: 0,
            min_time: i64::MAX,
            max_time: i64::MIN,
            null_counts: vec![0; schema.columns.len()],
            schema: schema.clone(),
            origin,
            directory: SeriesDirectory::default(),
        })
    }

    /// Appends a batch (rows of this file's day, in the file schema); `times` are the rows'
    /// times in nanoseconds, for the statistics; `series` the batch's series in row order,
    /// with their row counts, for the series directory (`directory.rs`).
    pub async fn write(
        &mut self,
        batch: &RecordBatch,
        times: &[i64],
        series: &[(Arc<SeriesRows>, usize)],
    ) -> Result<(), LakeError> {
        let mut at = 0;
        for (rows, count) in series {
            let end = (at + count).min(times.len());
            self.directory
                .push(&rows.tags, &times[at..end], day_start(self.day));
            at = end;
        }
        if self.directory.rows() != self.rows + batch.num_rows() as u64 {
            return Err(LakeError::Invalid(format!(
                "{}: the series of a batch count {} rows, the batch has {}",
                self.path,
                self.directory.rows() - self.rows,
                batch.num_rows()
            )));
        }
        for (count, array) in self.null_counts.iter_mut().zip(batch.columns()) {
            *count += array.null_count() as u64;
        }
        if let (Some(first), Some(last)) = (times.iter().min(), times.iter().max()) {
            self.min_time = self.min_time.min(*first);
            self.max_time = self.max_time.max(*last);
        }
        self.rows += batch.num_rows() as u64;
        self.writer.write(batch).await?;
        Ok(())
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Finishes the file and returns its `add` action (the file is in the store; it is part
    /// of the table once a commit names it). An empty file is deleted and gives `None`.
    pub async fn finish(mut self) -> Result<Option<Add>, LakeError> {
        self.writer.append_key_value_metadata(KeyValue::new(
            DIRECTORY_KEY.to_string(),
            self.directory.to_json(),
        ));
        // `finish` writes the footer and completes the upload.
        self.writer.finish().await?;
        let size = self.writer.bytes_written() as i64;
        if self.rows == 0 {
            self.store.delete(&Path::from(self.path.as_str())).await?;
            return Ok(None);
        }
        let mut null_count = Map::new();
        for (column, count) in self.schema.columns.iter().zip(&self.null_counts) {
            null_count.insert(column.delta_name().into_owned(), json!(count));
        }
        let stats = json!({
            "numRecords": self.rows,
            "minValues": { TIME_COLUMN: stats_time(self.min_time, false) },
            "maxValues": { TIME_COLUMN: stats_time(self.max_time, true) },
            "nullCount": Value::Object(null_count),
        });
        let modification_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0);
        Ok(Some(Add {
            path: self.path,
            partition_values: HashMap::from([(DAY_COLUMN.to_string(), Some(day_text(self.day)))]),
            size,
            modification_time,
            data_change: true,
            stats: Some(stats.to_string()),
            tags: Some(HashMap::from([
                (
                    "strata.shard".to_string(),
                    Some(self.origin.shard.to_string()),
                ),
                (
                    "strata.partition".to_string(),
                    Some(self.origin.partition.to_string()),
                ),
            ])),
            ..Add::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_the_origin() {
        for origin in [
            FileOrigin {
                shard: 3,
                partition: 20_419,
                order: 1234,
                tombstone: 0,
            },
            FileOrigin {
                shard: 0,
                partition: -3,
                order: u64::MAX,
                tombstone: 17,
            },
        ] {
            let name = format!("day=2025-11-27/{}", origin.file_name("abc"));
            assert_eq!(FileOrigin::parse(&name), Some(origin), "{name}");
        }
        assert_eq!(FileOrigin::parse("day=2025-11-27/part-0001.parquet"), None);
        assert_eq!(FileOrigin::parse("s1_p2_o3_t4_x.json"), None);
    }

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_text(0), "1970-01-01");
        assert_eq!(day_text(-1), "1969-12-31");
        assert_eq!(day_text(20_419), "2025-11-27");
        assert_eq!(day_text(11_016), "2000-02-29");
        assert_eq!(day_of(-1), -1);
        assert_eq!(day_of(86_400_000_000_000), 1);
        assert_eq!(day_start(1), 86_400_000_000_000);
        for day in [-1, 0, 20_419] {
            let path = format!("day={}/s0_p1_o2_t3_n.parquet", day_text(day));
            assert_eq!(path_day(&path), Some(day), "{path}");
        }
        assert_eq!(path_day("s0_p1_o2_t3_n.parquet"), None);
    }

    #[test]
    fn statistics_bound_the_times() {
        let t = 1_764_201_600_000_000_000 + 1_500_001; // 2025-11-27T00:00:00.001500001
        assert_eq!(stats_time(t, false), "2025-11-27T00:00:00.001Z");
        assert_eq!(stats_time(t, true), "2025-11-27T00:00:00.002Z");
        assert_eq!(stats_time(-1, false), "1969-12-31T23:59:59.999Z");
        assert_eq!(stats_time(-1, true), "1970-01-01T00:00:00.000Z");
    }
}
