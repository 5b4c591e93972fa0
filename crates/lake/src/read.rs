//! Reading copies back: the lake as the engine's [`ColdSource`].
//!
//! A read of a released partition names the copy (shard, partition, order, tombstone) and
//! the series it wants, by canonical tags, in order. The reader finds the copy's files in
//! the table's Delta log (one per UTC day of the partition), keeps only the days the
//! range meets, and, per file, looks the series up in the file's series directory
//! (`directory.rs`, from the footer, cached with the Parquet metadata): their row ranges
//! become a Parquet row selection, so only the pages holding them are fetched and decoded,
//! and only the time columns and the fields asked for. Each file is read by a task on the
//! reader's runtime that hands the series, one at a time, through a small channel: a read
//! holds a few series in memory whatever its range, and one that stops early (a `LIMIT`,
//! a client gone) stops the tasks.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float64Type, Int16Type, Int64Type, TimestampMicrosecondType,
};
use arrow_array::{Array, RecordBatch};
use deltalake_core::DeltaTable;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, RowSelection, RowSelector,
};
use parquet::arrow::async_reader::{AsyncFileReader, ParquetRecordBatchStream};
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use strata_storage::StorageError;
use strata_storage::catalog::TableSchema;
use strata_storage::cold::{ColdCursor, ColdRead, ColdSource};
use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::manifest::TieredCopy;
use strata_storage::model::{FieldId, FieldType, Timestamp};
use tokio::sync::mpsc;
use url::Url;

use crate::directory::{DIRECTORY_KEY, SeriesDirectory};
use crate::error::LakeError;
use crate::file::{FileOrigin, day_of, day_start, path_day};
use crate::footer_cache::FooterCache;
use crate::schema::{NANOS_COLUMN, TIME_COLUMN};
use crate::table::{LakeFile, live_files};

/// Rows decoded per batch.
const BATCH_ROWS: usize = 8192;
/// Memory the cached footers (each a file's Parquet metadata and series directory) may
/// take: a footer is fetched and parsed again only once it left.
const FOOTER_CACHE_BYTES: usize = 512 << 20;

/// One file's footer: its Parquet metadata and its series directory, indexed by tags.
pub(crate) struct Footer {
    metadata: ArrowReaderMetadata,
    pub(crate) directory: SeriesDirectory,
    by_tags: HashMap<Vec<(String, String)>, usize>,
}

/// One Delta table as last loaded.
struct ReadTable {
    delta: DeltaTable,
    /// Live files by the copy they hold.
    files: HashMap<FileOrigin, Vec<LakeFile>>,
}

impl ReadTable {
    fn index(delta: DeltaTable) -> Result<Self, LakeError> {
        let mut read = Self {
            delta,
            files: HashMap::new(),
        };
        read.add_live_files()?;
        Ok(read)
    }

    /// Adds the loaded version's files. Files of copies replaced since are kept: a read
    /// that started before the replacement still names them, and they stay in the store
    /// until a vacuum, days later.
    fn add_live_files(&mut self) -> Result<(), LakeError> {
        let mut live: HashMap<FileOrigin, Vec<LakeFile>> = HashMap::new();
        for file in live_files(&self.delta)? {
            live.entry(file.origin).or_default().push(file);
        }
        self.files.extend(live);
        Ok(())
    }
}

/// A lake table as its latest version has it (for the mirror).
pub(crate) struct TableView {
    /// The store rooted at the table.
    pub store: Arc<dyn ObjectStore>,
    /// Its columns and their Delta types, in schema order.
    pub columns: Vec<(String, deltalake_core::kernel::DataType)>,
    /// Its table properties.
    pub properties: HashMap<String, String>,
    /// Its live files that Strata wrote.
    pub files: Vec<LakeFile>,
}

/// What the reader's tasks share.
pub(crate) struct Shared {
    pub(crate) root: Url,
    pub(crate) storage_options: HashMap<String, String>,
    tables: tokio::sync::Mutex<HashMap<(String, String), ReadTable>>,
    footers: parking_lot::Mutex<FooterCache<Footer>>,
}

/// Reads copies from the lake at a root URL.
pub struct LakeReader {
    pub(crate) shared: Arc<Shared>,
    /// Taken only when the reader is dropped.
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
}

impl Drop for LakeReader {
    fn drop(&mut self) {
        // Dropped from any thread, an async one included: nothing waits for the tasks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl LakeReader {
    /// A reader of the lake at `root` (see [`crate::parse_url`]) with the object store's
    /// `storage_options`. Starts its runtime (two threads); touches nothing until a read.
    pub fn new(root: Url, storage_options: HashMap<String, String>) -> Result<Self, LakeError> {
        crate::store::register();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("strata-lake-read")
            .enable_all()
            .build()
            .map_err(|e| LakeError::Invalid(format!("cannot start the lake reader: {e}")))?;
        Ok(Self {
            shared: Arc::new(Shared {
                root,
                storage_options,
                tables: tokio::sync::Mutex::new(HashMap::new()),
                footers: parking_lot::Mutex::new(FooterCache::new(FOOTER_CACHE_BYTES)),
            }),
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// Runs `future` on the reader's runtime and waits for it, from any thread (a
    /// runtime's worker included: it only blocks that thread).
    pub(crate) fn run<T: Send + 'static>(
        &self,
        future: impl Future<Output = Result<T, LakeError>> + Send + 'static,
    ) -> Result<T, LakeError> {
        futures::executor::block_on(self.handle.spawn(future))
            .map_err(|e| LakeError::Invalid(format!("a lake read stopped: {e}")))?
    }

    fn open_files(&self, read: &ColdRead<'_>) -> Result<Vec<Box<dyn ColdCursor>>, LakeError> {
        let table = read.table.clone();
        let (shard, copy) = (read.shard, *read.copy);
        let shared = Arc::clone(&self.shared);
        let (store, files) =
            self.run(async move { shared.files_of(&table, shard, &copy).await })?;
        let wanted_days = day_of(read.start)..=day_of(read.end.saturating_sub(1));
        let mut cursors: Vec<Box<dyn ColdCursor>> = Vec::new();
        for file in files {
            let day = path_day(&file.path);
            if day.is_some_and(|day| !wanted_days.contains(&day)) {
                continue;
            }
            let footer = {
                let (shared, store, file) =
                    (Arc::clone(&self.shared), Arc::clone(&store), file.clone());
                self.run(async move { shared.footer(&store, &file).await })?
            };
            if let Some(cursor) = self.open_file(read, &store, &file, day, &footer)? {
                cursors.push(Box::new(cursor));
            }
        }
        Ok(cursors)
    }

    /// A cursor over the series of `read` that `file` (of the UTC day `day`) holds; `None`
    /// when it holds none.
    fn open_file(
        &self,
        read: &ColdRead<'_>,
        store: &Arc<dyn ObjectStore>,
        file: &LakeFile,
        day: Option<i64>,
        footer: &Arc<Footer>,
    ) -> Result<Option<FileCursor>, LakeError> {
        // The series asked for that the file has, with their rows, in row order. For the
        // latest rows, a file of a day that ends by the read's end: each series' last row
        // (a day's rows are sorted by time within a series).
        // Otherwise only the hours the range meets (hour marks in the directory).
        let last_only = read.last_only && day.is_some_and(|day| day_start(day + 1) <= read.end);
        let mut ranges: Vec<(usize, u64, u64)> = Vec::new();
        for (position, tags) in read.series.iter().enumerate() {
            let Some(&entry) = footer.by_tags.get(tags) else {
                continue;
            };
            let entry = &footer.directory.entries[entry];
            let (from, to) = match day {
                _ if last_only => (entry.rows.saturating_sub(1), entry.rows),
                Some(day) => entry.rows_between(day_start(day), read.start, read.end),
                None => (0, entry.rows),
            };
            if to > from {
                ranges.push((position, entry.first_row + from, to - from));
            }
        }
        if ranges.is_empty() {
            return Ok(None);
        }
        if ranges.windows(2).any(|w| w[0].1 >= w[1].1) {
            return Err(LakeError::Invalid(format!(
                "{}: its series are not in the order of their tags",
                file.path
            )));
        }
        let wanted = Wanted::of(read, footer, &file.path)?;
        let mut selectors = Vec::new();
        let mut at = 0;
        for (_, first, rows) in &ranges {
            if *first > at {
                selectors.push(RowSelector::skip((first - at) as usize));
            }
            selectors.push(RowSelector::select(*rows as usize));
            at = first + rows;
        }
        let mut columns: Vec<usize> = vec![wanted.time, wanted.nanos];
        columns.extend(wanted.fields.iter().map(|(_, _, column)| *column));
        let mask = ProjectionMask::roots(footer.metadata.parquet_schema(), columns.iter().copied());
        let reader = StoreFile::new(store, file);
        let stream =
            ParquetRecordBatchStreamBuilder::new_with_metadata(reader, footer.metadata.clone())
                .with_projection(mask)
                .with_row_selection(RowSelection::from(selectors))
                .with_batch_size(BATCH_ROWS)
                .build()?;
        // A few series ahead, so that decoding and the reader's folding overlap without a
        // wake-up per series.
        let (sender, receiver) = mpsc::channel(8);
        let path = file.path.clone();
        let task = self.handle.spawn(async move {
            if let Err(error) = split_series(stream, &ranges, &wanted, &sender).await {
                let _ = sender
                    .send(Err(LakeError::Invalid(format!("{path}: {error}"))))
                    .await;
            }
        });
        Ok(Some(FileCursor { receiver, task }))
    }
}

impl Shared {
    /// The files of `copy` of `table` in shard `shard`, loading the table (or its newer
    /// versions, when the copy is not in the version loaded) as needed.
    async fn files_of(
        &self,
        table: &TableSchema,
        shard: usize,
        copy: &TieredCopy,
    ) -> Result<(Arc<dyn ObjectStore>, Vec<LakeFile>), LakeError> {
        let origin = FileOrigin {
            shard,
            partition: copy.partition,
            order: copy.order,
            tombstone: copy.tombstone,
        };
        let key = (table.database.clone(), table.name.clone());
        let mut tables = self.tables.lock().await;
        let read = match tables.entry(key) {
            std::collections::hash_map::Entry::Occupied(entry) => {
                let read = entry.into_mut();
                if !read.files.contains_key(&origin) {
                    // Committed since the table was loaded.
                    read.delta.update_state().await?;
                    read.add_live_files()?;
                }
                read
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                let url = crate::table_url(&self.root, &table.database, &table.name)?;
                let delta = DeltaTable::try_from_url_with_storage_options(
                    url,
                    self.storage_options.clone(),
                )
                .await?;
                entry.insert(ReadTable::index(delta)?)
            }
        };
        let files = read.files.get(&origin).cloned().ok_or_else(|| {
            LakeError::Invalid(format!(
                "the lake's table {}.{} has no copy of shard {shard}'s partition {} at order \
                 {} and delete {}, where this server's manifest says its rows are (was the \
                 table changed by another writer, or is --lake another lake?)",
                table.database, table.name, copy.partition, copy.order, copy.tombstone
            ))
        })?;
        Ok((read.delta.object_store(), files))
    }

    /// `database.table` of the lake at its latest version (loaded, or brought up to
    /// date); `None` when the lake has no such Delta table.
    pub(crate) async fn view(
        &self,
        database: &str,
        table: &str,
    ) -> Result<Option<TableView>, LakeError> {
        let key = (database.to_string(), table.to_string());
        let mut tables = self.tables.lock().await;
        let read = match tables.entry(key) {
            std::collections::hash_map::Entry::Occupied(entry) => {
                let read = entry.into_mut();
                read.delta.update_state().await?;
                read.add_live_files()?;
                read
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                let url = crate::table_url(&self.root, database, table)?;
                match crate::table::load_existing(url, &self.storage_options).await? {
                    Some(delta) => entry.insert(ReadTable::index(delta)?),
                    None => return Ok(None),
                }
            }
        };
        let snapshot = read.delta.snapshot()?;
        let columns = snapshot
            .schema()
            .fields()
            .map(|f| (f.name().to_string(), f.data_type().clone()))
            .collect();
        let properties = snapshot.metadata().configuration().clone();
        Ok(Some(TableView {
            store: read.delta.object_store(),
            columns,
            properties,
            files: live_files(&read.delta)?,
        }))
    }

    /// `file`'s footer, from the cache or the store.
    pub(crate) async fn footer(
        &self,
        store: &Arc<dyn ObjectStore>,
        file: &LakeFile,
    ) -> Result<Arc<Footer>, LakeError> {
        if let Some(footer) = self.footers.lock().get(&file.path) {
            return Ok(footer);
        }
        // The page index lets a row selection fetch only the pages of the series read.
        let metadata = ArrowReaderMetadata::load_async(
            &mut StoreFile::new(store, file),
            ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional),
        )
        .await?;
        let text = metadata
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|kv| kv.key == DIRECTORY_KEY))
            .and_then(|kv| kv.value.clone())
            .ok_or_else(|| {
                LakeError::Invalid(format!("{}: no series directory in its footer", file.path))
            })?;
        let directory = SeriesDirectory::from_json(&text, &file.path)?;
        let rows = metadata.metadata().file_metadata().num_rows();
        if directory.rows() != rows.max(0) as u64 {
            return Err(LakeError::Invalid(format!(
                "{}: its series directory counts {} rows, the file has {rows}",
                file.path,
                directory.rows()
            )));
        }
        let by_tags = directory
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.tags.clone(), i))
            .collect();
        let footer = Arc::new(Footer {
            metadata,
            directory,
            by_tags,
        });
        let bytes = footer.bytes();
        tracing::debug!(
            target: "strata::lake",
            "footer of {} read: {} series, about {bytes} bytes cached",
            file.path,
            footer.directory.entries.len()
        );
        self.footers
            .lock()
            .insert(&file.path, Arc::clone(&footer), bytes);
        Ok(footer)
    }
}

impl Footer {
    /// About how much memory the footer takes: the Parquet metadata's own estimate, and
    /// each series' tags (in the directory and again as the key of `by_tags`) and hour
    /// marks.
    fn bytes(&self) -> usize {
        let string = size_of::<String>();
        let series: usize = self
            .directory
            .entries
            .iter()
            .map(|entry| {
                let tags: usize = entry
                    .tags
                    .iter()
                    .map(|(key, value)| key.len() + value.len() + 2 * string)
                    .sum();
                2 * tags + entry.hours.len() * 8 + 96
            })
            .sum();
        self.metadata.metadata().memory_size() + series
    }
}

impl ColdSource for LakeReader {
    fn open(&self, read: &ColdRead<'_>) -> Result<Vec<Box<dyn ColdCursor>>, StorageError> {
        self.open_files(read).map_err(|e| {
            StorageError::Unavailable(format!(
                "reading {}.{} from the lake: {e}",
                read.table.database, read.table.name
            ))
        })
    }
}

/// What a file task decodes.
struct Wanted {
    /// The fields asked for that the file has: (id, type, root column), by id.
    fields: Vec<(FieldId, FieldType, usize)>,
    time: usize,
    nanos: usize,
    start: Timestamp,
    end: Timestamp,
}

impl Wanted {
    fn of(read: &ColdRead<'_>, footer: &Footer, path: &str) -> Result<Self, LakeError> {
        let schema = footer.metadata.schema();
        let column = |name: &str| schema.index_of(name).ok();
        let missing = |name: &str| LakeError::Invalid(format!("{path}: no column {name:?}"));
        let time = column(TIME_COLUMN).ok_or_else(|| missing(TIME_COLUMN))?;
        let nanos = column(NANOS_COLUMN).ok_or_else(|| missing(NANOS_COLUMN))?;
        let mut fields: Vec<(FieldId, FieldType, usize)> = Vec::new();
        for (id, field) in read.table.fields.iter().enumerate() {
            let id = id as FieldId;
            if read.fields.is_some_and(|wanted| !wanted.contains(&id)) {
                continue;
            }
            // A field added to the table after the file was written has no column there.
            // Each column is decoded once (the projection holds it once): one named like
            // the lake's own, or like another field, in a file Strata did not write this
            // way, is not this field's.
            if let Some(index) = column(&crate::schema::delta_name(&field.name))
                && index != time
                && index != nanos
                && !fields.iter().any(|(_, _, taken)| *taken == index)
            {
                fields.push((id, field.field_type, index));
            }
        }
        Ok(Self {
            fields,
            time,
            nanos,
            start: read.start,
            end: read.end,
        })
    }
}

type Sent = Result<(usize, SeriesData), LakeError>;

/// Reads the selected rows of `stream` (the series `ranges`, in row order, back to back)
/// and sends each series' rows in the range as it completes.
async fn split_series(
    mut stream: ParquetRecordBatchStream<StoreFile>,
    ranges: &[(usize, u64, u64)],
    wanted: &Wanted,
    sender: &mpsc::Sender<Sent>,
) -> Result<(), LakeError> {
    let mut series = ranges.iter();
    let mut current = series
        .next()
        .map(|(position, _, rows)| (*position, *rows as usize));
    let mut data = SeriesBuilder::new(wanted, current.map_or(0, |(_, rows)| rows));
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let mut offset = 0;
        while offset < batch.num_rows() {
            let Some((position, rows)) = current else {
                return Err(LakeError::Invalid(
                    "more rows than its series directory says".into(),
                ));
            };
            let take = (rows - data.rows).min(batch.num_rows() - offset);
            data.append(&batch.slice(offset, take), wanted)?;
            offset += take;
            if data.rows == rows {
                current = series
                    .next()
                    .map(|(position, _, rows)| (*position, *rows as usize));
                let next = SeriesBuilder::new(wanted, current.map_or(0, |(_, rows)| rows));
                let built = std::mem::replace(&mut data, next).finish(wanted);
                if built.rows() > 0 && sender.send(Ok((position, built))).await.is_err() {
                    // The read stopped.
                    return Ok(());
                }
            }
        }
    }
    if current.is_some() {
        return Err(LakeError::Invalid(
            "fewer rows than its series directory says".into(),
        ));
    }
    Ok(())
}

/// One series' rows being decoded.
struct SeriesBuilder {
    rows: usize,
    times: Vec<Timestamp>,
    columns: Vec<(Values, Vec<bool>)>,
}

impl SeriesBuilder {
    /// A series of `rows` rows to come.
    fn new(wanted: &Wanted, rows: usize) -> Self {
        Self {
            rows: 0,
            times: Vec::with_capacity(rows),
            columns: wanted
                .fields
                .iter()
                .map(|(_, field_type, _)| {
                    (
                        Values::with_capacity(*field_type, rows),
                        Vec::with_capacity(rows),
                    )
                })
                .collect(),
        }
    }

    /// Appends `batch`'s rows (the projected columns: time, nanos, then the fields).
    fn append(&mut self, batch: &RecordBatch, wanted: &Wanted) -> Result<(), LakeError> {
        let bad = |what: &str| LakeError::Invalid(format!("column {what} has an unexpected type"));
        let micros = batch
            .column(0)
            .as_primitive_opt::<TimestampMicrosecondType>()
            .ok_or_else(|| bad(TIME_COLUMN))?;
        let nanos = batch
            .column(1)
            .as_primitive_opt::<Int16Type>()
            .ok_or_else(|| bad(NANOS_COLUMN))?;
        // Both columns are written without nulls.
        self.times.extend(
            micros
                .values()
                .iter()
                .zip(nanos.values().iter())
                .map(|(us, ns)| us.saturating_mul(1000).saturating_add(i64::from(*ns))),
        );
        for (index, ((values, present), (_, field_type, _))) in
            self.columns.iter_mut().zip(&wanted.fields).enumerate()
        {
            let array = batch.column(2 + index);
            push_values(values, present, array.as_ref(), *field_type)
                .ok_or_else(|| bad(&format!("of field {index}")))?;
        }
        self.rows += batch.num_rows();
        Ok(())
    }

    /// The rows in the wanted range, as the engine holds them.
    fn finish(self, wanted: &Wanted) -> SeriesData {
        let rows = self.times.len();
        let columns = self
            .columns
            .into_iter()
            .zip(&wanted.fields)
            .filter(|((values, _), _)| !values.is_empty())
            .map(|((values, present), (field, _, _))| Column {
                field: *field,
                present: (values.len() < rows).then_some(present),
                values,
            })
            .collect();
        let data = SeriesData {
            times: self.times,
            columns,
        };
        if data.times.first().is_some_and(|t| *t >= wanted.start)
            && data.times.last().is_some_and(|t| *t < wanted.end)
        {
            data
        } else {
            data.slice_time(wanted.start, wanted.end)
        }
    }
}

/// Appends `array`'s values to `values` and its presence to `present`; `None` when the
/// array is not of `field_type`'s lake type.
fn push_values(
    values: &mut Values,
    present: &mut Vec<bool>,
    array: &dyn Array,
    field_type: FieldType,
) -> Option<()> {
    // Most columns have no null in a batch: their values are copied whole.
    let nulls = array.logical_nulls();
    match &nulls {
        None => present.extend(std::iter::repeat_n(true, array.len())),
        Some(nulls) => present.extend(nulls.iter()),
    }
    let valid = |row: &usize| nulls.as_ref().is_none_or(|n| n.is_valid(*row));
    match (values, field_type) {
        (Values::Float(out), FieldType::Float) => {
            let a = array.as_primitive_opt::<Float64Type>()?;
            match &nulls {
                None => out.extend_from_slice(a.values()),
                Some(_) => out.extend((0..a.len()).filter(valid).map(|r| a.value(r))),
            }
        }
        (Values::Integer(out), FieldType::Integer) => {
            let a = array.as_primitive_opt::<Int64Type>()?;
            match &nulls {
                None => out.extend_from_slice(a.values()),
                Some(_) => out.extend((0..a.len()).filter(valid).map(|r| a.value(r))),
            }
        }
        (Values::Unsigned(out), FieldType::Unsigned) => {
            let a = array.as_primitive_opt::<Decimal128Type>()?;
            for row in (0..a.len()).filter(valid) {
                out.push(u64::try_from(a.value(row)).ok()?);
            }
        }
        (Values::Boolean(out), FieldType::Boolean) => {
            let a = array.as_boolean_opt()?;
            out.extend((0..a.len()).filter(valid).map(|r| a.value(r)));
        }
        (Values::String(out), FieldType::String) => {
            let a = array.as_string_opt::<i32>()?;
            out.extend((0..a.len()).filter(valid).map(|r| a.value(r).to_string()));
        }
        _ => return None,
    }
    Some(())
}

/// A lake file in its object store, for Parquet's async reader.
struct StoreFile {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
}

impl StoreFile {
    fn new(store: &Arc<dyn ObjectStore>, file: &LakeFile) -> Self {
        Self {
            store: Arc::clone(store),
            path: Path::from(file.path.as_str()),
            size: file.size.max(0) as u64,
        }
    }
}

fn store_error(error: object_store::Error) -> parquet::errors::ParquetError {
    parquet::errors::ParquetError::External(Box::new(error))
}

impl AsyncFileReader for StoreFile {
    fn get_bytes(
        &mut self,
        range: std::ops::Range<u64>,
    ) -> BoxFuture<'_, parquet::errors::Result<bytes::Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(store_error)
        }
        .boxed()
    }

    fn get_byte_ranges(
        &mut self,
        ranges: Vec<std::ops::Range<u64>>,
    ) -> BoxFuture<'_, parquet::errors::Result<Vec<bytes::Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(store_error)
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_and_finish(self, size)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// The series of one file, as its task decodes them.
struct FileCursor {
    receiver: mpsc::Receiver<Sent>,
    task: tokio::task::JoinHandle<()>,
}

impl ColdCursor for FileCursor {
    fn next_series(&mut self) -> Result<Option<(usize, SeriesData)>, StorageError> {
        match futures::executor::block_on(self.receiver.recv()) {
            None => Ok(None),
            Some(Ok(series)) => Ok(Some(series)),
            Some(Err(error)) => Err(StorageError::Unavailable(format!(
                "reading from the lake: {error}"
            ))),
        }
    }
}

impl Drop for FileCursor {
    fn drop(&mut self) {
        // A read that stopped early stops the file's task.
        self.task.abort();
    }
}
