//! The catalog: databases, tables, their tag keys and typed fields; persisted as
//! `catalog.json`.
//!
//! Tables, tags and fields are created on first write (schemaless) and never renumbered:
//! ids go into WAL records and parts, so an id once given keeps its meaning. The catalog is
//! read-mostly; writers keep a per-request [`SchemaCache`] so the hot path takes no lock
//! per row. A change is made durable (written and fsynced) before the write that caused it
//! is acknowledged.
//!
//! Per-database retention settings are in `retention.rs`, deletes in `tombstones.rs`,
//! downsamples in `downsample.rs`, TDengine's super tables, subtables and database
//! precisions in `supertable.rs`. `CREATE TABLE` and `DROP TABLE` are in `ddl.rs`: a
//! dropped table keeps its id (marked dropped, its name forgotten), so rows stored under it
//! are never seen by a table created later under the same name; [`DroppedTables`] tells
//! the shards which rows to discard.
//! Files: `file.rs` (the on-disk form), `cache.rs` ([`SchemaCache`]).

mod cache;
mod ddl;
mod downsample;
mod file;
mod retention;
mod supertable;
mod tier;
mod tombstones;

use foldhash::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use crate::error::StorageError;
use crate::model::{FieldId, FieldType, TableId};
use strata_lineproto::Precision;

pub use cache::SchemaCache;
pub use ddl::{CreateOutcome, DroppedTables, TableDefinition};
pub use downsample::{Aggregate, DirtyRange, Downsample};
pub(crate) use file::{RebuiltTable, store_rebuilt};
pub use retention::Retention;
pub use supertable::{Subtable, SuperTable, TagType};
pub use tombstones::{Tombstone, Tombstones};

/// File name of the catalog inside the first data directory.
pub const CATALOG_FILE: &str = "catalog.json";
/// Column name reserved for the timestamp.
pub const TIME_COLUMN: &str = "time";

/// Schema of one table, as a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    /// The table's id.
    pub id: TableId,
    /// Database holding the table.
    pub database: String,
    /// Table name (line protocol: measurement).
    pub name: String,
    /// Tag keys in the order first seen.
    pub tags: Vec<String>,
    /// Fields, indexed by [`FieldId`].
    pub fields: Vec<FieldDef>,
    /// The unit of an integer `time` in `INSERT`: `Some` for a table declared with
    /// `time BIGINT` (integer counts of this unit since the epoch, Lindorm's way), `None`
    /// for `time TIMESTAMP` and for tables made by writes (integers are nanoseconds).
    pub time_unit: Option<Precision>,
}

impl TableSchema {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One field column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDef {
    /// Its id within the table.
    pub id: FieldId,
    /// Its name.
    pub name: String,
    /// Its type, fixed by the first write.
    #[serde(with = "field_type_name")]
    pub field_type: FieldType,
}

/// Why a field could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The field exists with another type.
    #[error("field \"{field}\" of table \"{table}\" is {existing}, got {got}")]
    FieldTypeConflict {
        /// Table name.
        table: String,
        /// Field name.
        field: String,
        /// Stored type.
        existing: FieldType,
        /// Type of the rejected value.
        got: FieldType,
    },
    /// The name is used by a tag and a field of the same table, or is reserved.
    #[error("column \"{name}\" of table \"{table}\" {reason}")]
    ColumnName {
        /// Table name.
        table: String,
        /// The clashing name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// `CREATE TABLE` of a name that is taken.
    #[error("table \"{table}\" already exists in database \"{database}\"")]
    TableExists {
        /// Database.
        database: String,
        /// Table name.
        table: String,
    },
}

#[derive(Debug, Default)]
struct State {
    /// Each table's schema, shared: a reader's copy is a reference count, and a change
    /// copies the schema only while a reader still holds it (`Arc::make_mut`).
    tables: Vec<Arc<TableSchema>>,
    /// Live tables by (database, name); dropped tables are not in it.
    by_name: HashMap<(String, String), TableId>,
    /// Ids of dropped tables (their entries stay in `tables`: ids are never reused).
    dropped: RoaringBitmap,
    /// Databases made by `CREATE DATABASE` (a database also exists while it has a table).
    databases: std::collections::BTreeSet<String>,
    /// Retention of the databases that have their own, in nanoseconds (0: forever); see
    /// [`Retention`].
    retention: std::collections::BTreeMap<String, u64>,
    /// The lake's `tier after` of the databases that have their own, in nanoseconds (see
    /// `tier.rs`).
    tier_after: std::collections::BTreeMap<String, u64>,
    /// Deletes whose rows may still be in parts (see `tombstones.rs`).
    tombstones: Vec<Tombstone>,
    /// The id the next tombstone gets (ids are never reused).
    next_tombstone_id: u64,
    /// Retention of the tables that have their own (downsample targets), in nanoseconds
    /// (0: forever); it overrides their database's.
    table_retention: std::collections::BTreeMap<TableId, u64>,
    /// Continuous aggregates (see `downsample.rs`).
    downsamples: Vec<Downsample>,
    /// The id the next downsample gets (ids are never reused).
    next_downsample_id: u64,
    /// TDengine super tables by table id, with their subtables (see `supertable.rs`).
    super_tables: std::collections::BTreeMap<TableId, supertable::SuperTableState>,
    /// The TDengine precision of the databases created with one (`PRECISION 'ms'`).
    precision: std::collections::BTreeMap<String, Precision>,
    /// Bumped on every change; the file holds `persisted_version`.
    version: u64,
}

/// The catalog, shared by all writers and readers.
#[derive(Debug)]
pub struct Catalog {
    path: PathBuf,
    state: RwLock<State>,
    /// Serialises writes of the file, outside the state lock; holds the version on disk.
    persisted_version: Mutex<u64>,
    /// Dropped tables whose drop is durable, shared with the shards.
    dropped: Arc<DroppedTables>,
    /// Tombstones in force, shared with the shards.
    tombstones: Arc<Tombstones>,
    /// Every change is refused (see [`Catalog::set_read_only`]).
    read_only: std::sync::atomic::AtomicBool,
}

/// What a change to a read-only engine is answered.
const READ_ONLY: &str = "this server only answers queries (a read-only query server on the \
     lake, --lake-read-only): send writes, deletes and schema changes to the server that \
     tiers into the lake";

impl Catalog {
    /// Opens the catalog in `dir`, loading `catalog.json` if it exists.
    pub fn open(dir: &Path) -> Result<Self, StorageError> {
        let path = dir.join(CATALOG_FILE);
        let state = file::load(&path)?.unwrap_or_default();
        let dropped = Arc::new(DroppedTables::new(state.dropped.clone()));
        let tombstones = Arc::new(Tombstones::new(state.tombstones.clone()));
        Ok(Self {
            path,
            state: RwLock::new(state),
            persisted_version: Mutex::new(0),
            dropped,
            tombstones,
            read_only: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Refuses every change from now on: DDL, retention and tier settings, deletes (the
    /// engine refuses writes). A read-only engine's catalog is filled by its lake mirror
    /// only (`crate::engine::mirror`), through the methods writes use.
    pub fn set_read_only(&self) {
        self.read_only
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// `Err(StorageError::ReadOnly)` once [`Catalog::set_read_only`] was called.
    pub fn check_writable(&self) -> Result<(), StorageError> {
        if self.read_only.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StorageError::ReadOnly(READ_ONLY.into()));
        }
        Ok(())
    }

    /// The id of `database.table`, if it exists.
    pub fn table_id(&self, database: &str, table: &str) -> Option<TableId> {
        let state = self.state.read();
        state
            .by_name
            .get(&(database.to_string(), table.to_string()))
            .copied()
    }

    /// A snapshot of table `id`'s schema; `None` for a dropped table.
    pub fn table(&self, id: TableId) -> Option<Arc<TableSchema>> {
        let state = self.state.read();
        if state.dropped.contains(id) {
            return None;
        }
        state.tables.get(id as usize).cloned()
    }

    /// The database of table `id`, without copying its schema; `None` for a dropped table.
    pub fn database_of(&self, id: TableId) -> Option<String> {
        let state = self.state.read();
        if state.dropped.contains(id) {
            return None;
        }
        state.tables.get(id as usize).map(|t| t.database.clone())
    }

    /// Every table of `database`, sorted by name.
    pub fn tables(&self, database: &str) -> Vec<Arc<TableSchema>> {
        let state = self.state.read();
        let mut tables: Vec<Arc<TableSchema>> = state
            .tables
            .iter()
            .filter(|t| t.database == database && !state.dropped.contains(t.id))
            .cloned()
            .collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }

    /// Whether `database` exists: created explicitly, or with at least one table. Cheaper
    /// than looking for it in [`Catalog::databases`], which copies and sorts every name.
    pub fn has_database(&self, database: &str) -> bool {
        let state = self.state.read();
        state.databases.contains(database)
            || state
                .tables
                .iter()
                .any(|t| t.database == database && !state.dropped.contains(t.id))
    }

    /// Every database: created explicitly, or with at least one table; sorted.
    pub fn databases(&self) -> Vec<String> {
        let state = self.state.read();
        let mut names: Vec<String> = state
            .tables
            .iter()
            .filter(|t| !state.dropped.contains(t.id))
            .map(|t| t.database.clone())
            .chain(state.databases.iter().cloned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The id of `database.table`, creating the table if needed. Call [`Catalog::persist`]
    /// before acknowledging a write that used a new id.
    pub fn get_or_create_table(&self, database: &str, table: &str) -> TableId {
        if let Some(id) = self.table_id(database, table) {
            return id;
        }
        let mut state = self.state.write();
        let key = (database.to_string(), table.to_string());
        if let Some(id) = state.by_name.get(&key) {
            return *id;
        }
        let id = state.tables.len() as TableId;
        state.tables.push(Arc::new(TableSchema {
            id,
            database: database.to_string(),
            name: table.to_string(),
            tags: Vec::new(),
            fields: Vec::new(),
            time_unit: None,
        }));
        state.by_name.insert(key, id);
        state.version += 1;
        id
    }

    /// Makes sure `keys` are tag keys of `table`; errors if one names a field or `time`.
    pub fn ensure_tags<'k>(
        &self,
        table: TableId,
        keys: impl Iterator<Item = &'k str> + Clone,
    ) -> Result<(), SchemaError> {
        {
            let state = self.state.read();
            let schema = &state.tables[table as usize];
            if keys.clone().all(|k| schema.tags.iter().any(|t| t == k)) {
                return Ok(());
            }
        }
        let mut state = self.state.write();
        let schema = Arc::make_mut(&mut state.tables[table as usize]);
        let mut changed = false;
        for key in keys {
            if schema.tags.iter().any(|t| t == key) {
                continue;
            }
            check_column_name(schema, key, "is a field")?;
            schema.tags.push(key.to_string());
            changed = true;
        }
        if changed {
            state.version += 1;
        }
        Ok(())
    }

    /// The id of field `name` of `table`, creating it with `field_type` if needed; a
    /// different stored type is a [`SchemaError::FieldTypeConflict`].
    pub fn get_or_create_field(
        &self,
        table: TableId,
        name: &str,
        field_type: FieldType,
    ) -> Result<FieldId, SchemaError> {
        {
            let state = self.state.read();
            if let Some(found) = lookup_field(&state.tables[table as usize], name, field_type) {
                return found;
            }
        }
        let mut state = self.state.write();
        if let Some(found) = lookup_field(&state.tables[table as usize], name, field_type) {
            return found;
        }
        let schema = Arc::make_mut(&mut state.tables[table as usize]);
        if schema.tags.iter().any(|t| t == name) {
            return Err(column_error(schema, name, "is a tag"));
        }
        check_column_name(schema, name, "is a tag")?;
        let id = schema.fields.len() as FieldId;
        schema.fields.push(FieldDef {
            id,
            name: name.to_string(),
            field_type,
        });
        state.version += 1;
        Ok(id)
    }

    /// Writes the catalog if it changed since the last write; returns once it is durable.
    pub fn persist(&self) -> Result<(), StorageError> {
        let mut persisted = self.persisted_version.lock();
        let (version, file) = {
            let state = self.state.read();
            if state.version == *persisted {
                return Ok(());
            }
            (state.version, file::encode(&state))
        };
        file::store(&self.path, &file)?;
        *persisted = version;
        Ok(())
    }
}

fn lookup_field(
    schema: &TableSchema,
    name: &str,
    field_type: FieldType,
) -> Option<Result<FieldId, SchemaError>> {
    let field = schema.field(name)?;
    Some(if field.field_type == field_type {
        Ok(field.id)
    } else {
        Err(SchemaError::FieldTypeConflict {
            table: schema.name.clone(),
            field: name.to_string(),
            existing: field.field_type,
            got: field_type,
        })
    })
}

fn check_column_name(
    schema: &TableSchema,
    name: &str,
    other: &'static str,
) -> Result<(), SchemaError> {
    if name == TIME_COLUMN {
        return Err(column_error(schema, name, "is reserved for the timestamp"));
    }
    let clash = match other {
        "is a field" => schema.field(name).is_some(),
        _ => false,
    };
    if clash {
        return Err(column_error(schema, name, other));
    }
    Ok(())
}

fn column_error(schema: &TableSchema, name: &str, reason: &'static str) -> SchemaError {
    SchemaError::ColumnName {
        table: schema.name.clone(),
        name: name.to_string(),
        reason,
    }
}

mod field_type_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::model::FieldType;

    pub fn serialize<S: Serializer>(t: &FieldType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FieldType, D::Error> {
        let name = String::deserialize(d)?;
        [
            FieldType::Float,
            FieldType::Integer,
            FieldType::Unsigned,
            FieldType::Boolean,
            FieldType::String,
        ]
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown field type \"{name}\"")))
    }
}
