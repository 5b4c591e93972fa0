//! A read-only query server's view of the lake (`strata serve --lake URL --lake-read-only`).
//!
//! Such a server holds no rows. At start, then every refresh, the mirror lists the lake's
//! tables (`ROOT/DATABASE/TABLE`), reads each one's latest Delta version, and registers in
//! the read-only engine (`strata_storage::Engine::mirror_table` and the calls beside it)
//! what its reads need:
//!
//! - the table, with its tags (the [`TAGS_PROPERTY`] the tierer records, and the keys of
//!   every file's series directory) and its typed fields (the other columns of the Delta
//!   schema, in schema order);
//! - the series of each file it has not seen, from the file's series directory, in the
//!   shard that wrote the file;
//! - each shard's copies: the origins of the table's live files, one per partition.
//!
//! Reads then take every row from the lake through the engine's cold source
//! ([`crate::LakeReader`]), as the server that tiered them reads its released partitions:
//! one engine, the same answers. A lake table with no live file left (its table was
//! dropped, or every day expired) is dropped; one that another Strata table took over
//! (another [`TABLE_ID_PROPERTY`]) is dropped and mirrored again.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use deltalake_core::kernel::DataType;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use parking_lot::Mutex;
use strata_storage::Engine;
use strata_storage::manifest::TieredCopy;
use strata_storage::model::{FieldType, TableId};

use crate::LakeReader;
use crate::error::LakeError;
use crate::read::{Footer, Shared, TableView};
use crate::schema::{DAY_COLUMN, NANOS_COLUMN, TIME_COLUMN, strata_name};
use crate::table::{LakeFile, TABLE_ID_PROPERTY, TAGS_PROPERTY};

/// Footers a refresh fetches at once.
const FOOTER_FETCHES: usize = 16;

/// What one refresh found and registered.
#[derive(Debug, Default, Clone)]
pub struct MirrorReport {
    /// Lake tables mirrored.
    pub tables: usize,
    /// Their live files.
    pub files: usize,
    /// Series registered for the first time.
    pub series_added: usize,
    /// Shard tables whose copies changed.
    pub copies_changed: usize,
    /// Tables dropped because the lake no longer holds them.
    pub tables_dropped: usize,
    /// What failed (each names its table); the rest was mirrored.
    pub failures: Vec<String>,
}

/// What the mirror remembers of a lake table between refreshes.
#[derive(Default)]
struct Known {
    /// The Strata table id the lake table records ([`TABLE_ID_PROPERTY`]).
    lake_id: Option<String>,
    /// Files whose series are registered, by path (shared with the refresh's reading task,
    /// not copied for it).
    registered: Arc<HashSet<String>>,
}

/// A lake table as one refresh gathered it: its latest version, and what the footers of
/// the files not registered yet say (each footer is dropped once read: one of a file of
/// 4,000 series takes megabytes, and a lake may hold thousands of files).
struct Gathered {
    view: TableView,
    /// Those files' paths.
    new_files: Vec<String>,
    /// Their series by the shard that wrote them (each once, however many days hold it).
    series: BTreeMap<usize, BTreeSet<Vec<(String, String)>>>,
    /// Their series directories' tag keys.
    keys: BTreeSet<String>,
}

/// The lake as a read-only engine sees it.
pub struct LakeMirror {
    reader: Arc<LakeReader>,
    known: Mutex<HashMap<(String, String), Known>>,
}

impl LakeMirror {
    /// A mirror reading through `reader` (the engine's cold source too, so that both share
    /// loaded tables and footers).
    pub fn new(reader: Arc<LakeReader>) -> Self {
        Self {
            reader,
            known: Mutex::new(HashMap::new()),
        }
    }

    /// The reader the mirror reads through: the read-only engine's cold source.
    pub fn reader(&self) -> Arc<LakeReader> {
        Arc::clone(&self.reader)
    }

    /// How many shards wrote the lake's live files (the highest shard plus one); `None`
    /// when the lake holds none. A read-only engine needs at least as many.
    pub fn lake_shards(&self) -> Result<Option<usize>, LakeError> {
        let shared = Arc::clone(&self.reader.shared);
        self.reader.run(async move {
            let mut shards: Option<usize> = None;
            for (database, table) in list_tables(&shared).await? {
                if let Some(view) = shared.view(&database, &table).await? {
                    for file in &view.files {
                        shards = Some(shards.unwrap_or(0).max(file.origin.shard + 1));
                    }
                }
            }
            Ok(shards)
        })
    }

    /// Brings `engine` (read-only) in step with the lake's latest versions.
    pub fn refresh(&self, engine: &Engine) -> MirrorReport {
        let mut report = MirrorReport::default();
        let shared = Arc::clone(&self.reader.shared);
        let names = match self.reader.run(async move { list_tables(&shared).await }) {
            Ok(names) => names,
            Err(error) => {
                report
                    .failures
                    .push(format!("listing the lake's tables: {error}"));
                return report;
            }
        };
        let mut known = self.known.lock();
        let listed: HashSet<(String, String)> = names.iter().cloned().collect();
        for name in names {
            let label = format!("{}.{}", name.0, name.1);
            if let Err(error) = self.refresh_table(engine, &name, &mut known, &mut report) {
                report.failures.push(format!("{label}: {error}"));
            }
        }
        // Tables whose lake table is gone altogether.
        let gone: Vec<(String, String)> = known
            .keys()
            .filter(|name| !listed.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            known.remove(&name);
            match engine.mirror_drop_table(&name.0, &name.1) {
                Ok(dropped) => report.tables_dropped += usize::from(dropped),
                Err(error) => report
                    .failures
                    .push(format!("{}.{}: {error}", name.0, name.1)),
            }
        }
        report
    }

    fn refresh_table(
        &self,
        engine: &Engine,
        name: &(String, String),
        known: &mut HashMap<(String, String), Known>,
        report: &mut MirrorReport,
    ) -> Result<(), LakeError> {
        let registered = known
            .get(name)
            .map(|k| Arc::clone(&k.registered))
            .unwrap_or_default();
        let Some(mut gathered) = self.gather(name, registered)? else {
            return Ok(()); // not a Delta table: something else under the lake's root
        };
        let lake_id = gathered.view.properties.get(TABLE_ID_PROPERTY).cloned();
        if gathered.view.files.is_empty() {
            // Dropped by the server that tiered it, or every day expired.
            if known.remove(name).is_some() || engine.table(&name.0, &name.1).is_some() {
                report.tables_dropped += usize::from(engine.mirror_drop_table(&name.0, &name.1)?);
            }
            return Ok(());
        }
        let entry = known.entry(name.clone()).or_default();
        if !entry.registered.is_empty() && entry.lake_id != lake_id {
            // Another Strata table under the same name: its series are not the old ones'.
            engine.mirror_drop_table(&name.0, &name.1)?;
            *entry = Known::default();
            gathered = self
                .gather(name, Arc::default())?
                .ok_or_else(|| LakeError::Invalid("the table left the lake".into()))?;
        }
        entry.lake_id = lake_id;
        // Tags mirrored before count too: a lake table written before `strata.tags` names
        // its tags only in the directories of files registered then.
        let mirrored_tags = engine
            .table(&name.0, &name.1)
            .map(|t| t.tags.clone())
            .unwrap_or_default();
        let columns = columns(&gathered, mirrored_tags)?;
        let table = engine.mirror_table(&name.0, &name.1, &columns.tags, &columns.fields)?;
        let shards = engine.shard_count();
        let beyond = |file: &LakeFile| file.origin.shard >= shards;
        if let Some(file) = gathered.view.files.iter().find(|f| beyond(f)) {
            report.failures.push(format!(
                "{}.{}: {} comes from shard {}, and this server has {shards} shards: restart \
                 it to take the lake's shard count (those rows are not read meanwhile)",
                name.0, name.1, file.path, file.origin.shard
            ));
        }
        // Series first, then copies: a copy is read only once its series are known.
        for (shard, tags) in std::mem::take(&mut gathered.series) {
            if shard < shards {
                let tags: Vec<Vec<(String, String)>> = tags.into_iter().collect();
                report.series_added += engine.mirror_series(shard, table, &tags)?;
            }
        }
        Arc::make_mut(&mut entry.registered).extend(gathered.new_files.drain(..));
        let mut copies: Vec<Vec<TieredCopy>> = vec![Vec::new(); shards];
        for file in gathered.view.files.iter().filter(|f| !beyond(f)) {
            let copy = copy_of(file, table);
            if !copies[file.origin.shard].contains(&copy) {
                copies[file.origin.shard].push(copy);
            }
        }
        for (shard, copies) in copies.into_iter().enumerate() {
            report.copies_changed += usize::from(engine.mirror_copies(shard, table, copies)?);
        }
        report.tables += 1;
        report.files += gathered.view.files.len();
        Ok(())
    }

    /// `name`'s latest version and what the footers of its live files not in `registered`
    /// say.
    fn gather(
        &self,
        name: &(String, String),
        registered: Arc<HashSet<String>>,
    ) -> Result<Option<Gathered>, LakeError> {
        let shared = Arc::clone(&self.reader.shared);
        let (database, table) = name.clone();
        self.reader.run(async move {
            let Some(view) = shared.view(&database, &table).await? else {
                return Ok(None);
            };
            // Several at once: on an object store each is a round trip or two, and a
            // server starting on years of files reads every one.
            let new_files: Vec<LakeFile> = view
                .files
                .iter()
                .filter(|file| !registered.contains(&file.path))
                .cloned()
                .collect();
            let mut gathered = Gathered {
                new_files: new_files.iter().map(|f| f.path.clone()).collect(),
                view,
                series: BTreeMap::new(),
                keys: BTreeSet::new(),
            };
            let store = Arc::clone(&gathered.view.store);
            let mut footers = futures::stream::iter(new_files)
                .map(|file| {
                    let (shared, store) = (Arc::clone(&shared), Arc::clone(&store));
                    async move {
                        let footer = shared.footer(&store, &file).await?;
                        Ok::<_, LakeError>((file.origin.shard, footer))
                    }
                })
                .buffered(FOOTER_FETCHES);
            while let Some((shard, footer)) = footers.try_next().await? {
                gathered.add(shard, &footer);
            }
            drop(footers);
            Ok(Some(gathered))
        })
    }
}

impl Gathered {
    /// Takes in what a new file's footer says (the file written by `shard`).
    fn add(&mut self, shard: usize, footer: &Footer) {
        let series = self.series.entry(shard).or_default();
        for entry in &footer.directory.entries {
            if !series.contains(&entry.tags) {
                series.insert(entry.tags.clone());
            }
            for (key, _) in &entry.tags {
                if !self.keys.contains(key) {
                    self.keys.insert(key.clone());
                }
            }
        }
    }
}

/// The copy a live file belongs to, as a tiered copy of local table `table`.
fn copy_of(file: &LakeFile, table: TableId) -> TieredCopy {
    TieredCopy {
        partition: file.origin.partition,
        table,
        order: file.origin.order,
        tombstone: file.origin.tombstone,
    }
}

/// A lake table's columns as Strata's.
struct Columns {
    /// The recorded tags in order, then those mirrored before, then any other key of a
    /// series directory.
    tags: Vec<String>,
    /// The other columns with their types, in schema order.
    fields: Vec<(String, FieldType)>,
}

/// The table's tags and typed fields; `mirrored_tags` are its tags mirrored so far.
fn columns(gathered: &Gathered, mirrored_tags: Vec<String>) -> Result<Columns, LakeError> {
    let mut tags: Vec<String> = match gathered.view.properties.get(TAGS_PROPERTY) {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            LakeError::Invalid(format!("its {TAGS_PROPERTY} property {text:?}: {e}"))
        })?,
        None => Vec::new(),
    };
    for tag in mirrored_tags {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    for key in &gathered.keys {
        if !tags.contains(key) {
            tags.push(key.clone());
        }
    }
    let unsigned =
        DataType::decimal(20, 0).map_err(|e| LakeError::Invalid(format!("decimal(20,0): {e}")))?;
    let mut fields = Vec::new();
    for (delta_name, data_type) in &gathered.view.columns {
        if [TIME_COLUMN, NANOS_COLUMN, DAY_COLUMN].contains(&delta_name.as_str()) {
            continue;
        }
        let name = strata_name(delta_name).into_owned();
        if tags.contains(&name) {
            continue;
        }
        let field_type = match data_type {
            t if *t == DataType::DOUBLE => FieldType::Float,
            t if *t == DataType::LONG => FieldType::Integer,
            t if *t == DataType::BOOLEAN => FieldType::Boolean,
            t if *t == DataType::STRING => FieldType::String,
            t if *t == unsigned => FieldType::Unsigned,
            other => {
                return Err(LakeError::Invalid(format!(
                    "column {name:?} is {other:?}, a type Strata does not write"
                )));
            }
        };
        fields.push((name, field_type));
    }
    Ok(Columns { tags, fields })
}

/// Every `(database, table)` directory under the lake's root (Delta tables or not: the
/// caller loads each).
async fn list_tables(shared: &Shared) -> Result<Vec<(String, String)>, LakeError> {
    if crate::store::missing_local_dir(&shared.root) {
        return Ok(Vec::new());
    }
    let store = deltalake_core::logstore::store_for(&shared.root, shared.storage_options.clone())?;
    let mut names = Vec::new();
    for database in store.list_with_delimiter(None).await?.common_prefixes {
        let Some(database_name) = segment_name(&database) else {
            continue;
        };
        for table in store
            .list_with_delimiter(Some(&database))
            .await?
            .common_prefixes
        {
            if let Some(table_name) = segment_name(&table) {
                names.push((database_name.clone(), table_name));
            }
        }
    }
    names.sort();
    Ok(names)
}

/// The database or table name a path's last segment holds (percent-decoded, as
/// [`crate::table_url`] encodes it).
fn segment_name(path: &Path) -> Option<String> {
    let segment = path.filename()?;
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(|name| name.into_owned())
}
