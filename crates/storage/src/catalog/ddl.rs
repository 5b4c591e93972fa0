//! `CREATE TABLE` and `DROP TABLE` in the catalog, and the set of dropped tables the
//! shards consult to discard their rows.
//!
//! A dropped table keeps its entry and its id (ids go into WAL records, series and parts,
//! and are never reused); its name is forgotten, so a later table of the same name gets a
//! new id and never sees the old rows. The drop is written to `catalog.json` before it is
//! published in [`DroppedTables`]: rows are discarded from disk only once the drop itself
//! is durable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use roaring::RoaringBitmap;

use super::{Catalog, FieldDef, SchemaError, State, TIME_COLUMN, TableSchema, file};
use crate::error::StorageError;
use crate::model::{FieldId, FieldType, TableId};
use strata_lineproto::Precision;

/// The columns of a table declared by `CREATE TABLE` (the time column is implicit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableDefinition {
    /// Tag keys, in declaration order.
    pub tags: Vec<String>,
    /// Fields and their types, in declaration order.
    pub fields: Vec<(String, FieldType)>,
    /// `time BIGINT`: the unit of integer times (see [`TableSchema::time_unit`]).
    pub time_unit: Option<Precision>,
}

/// What [`Catalog::create_table`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateOutcome {
    /// The table is new.
    Created(TableId),
    /// The table existed (`if_not_exists`) and agrees with the definition; declared
    /// columns it lacked were added.
    Existed(TableId),
}

impl CreateOutcome {
    /// The table's id.
    pub fn id(self) -> TableId {
        match self {
            Self::Created(id) | Self::Existed(id) => id,
        }
    }
}

/// Tables whose drop is durable; shared by the catalog and every shard. Flushes, merges
/// and purges leave these tables' rows out of the parts they write.
#[derive(Debug, Default)]
pub struct DroppedTables {
    tables: RwLock<Arc<RoaringBitmap>>,
    /// Bumped by every drop, so a shard can tell cheaply whether it has purged them all.
    generation: AtomicU64,
}

impl DroppedTables {
    /// The set holding `tables`.
    pub(super) fn new(tables: RoaringBitmap) -> Self {
        Self {
            tables: RwLock::new(Arc::new(tables)),
            generation: AtomicU64::new(0),
        }
    }

    /// A snapshot of the dropped table ids (cheap: shared, copied only on a drop).
    pub fn snapshot(&self) -> Arc<RoaringBitmap> {
        Arc::clone(&self.tables.read())
    }

    /// Whether table `id` is dropped.
    pub fn contains(&self, id: TableId) -> bool {
        self.tables.read().contains(id)
    }

    /// Changes with every drop (starts at 0 at open).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn insert(&self, id: TableId) {
        let mut tables = self.tables.write();
        let mut next = tables.as_ref().clone();
        next.insert(id);
        *tables = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

impl Catalog {
    /// The dropped tables, shared (the shards hold a clone).
    pub fn dropped_tables(&self) -> &Arc<DroppedTables> {
        &self.dropped
    }

    /// Creates table `database.name` with `definition`'s tags and fields. If the name is
    /// taken, that is [`SchemaError::TableExists`], unless `if_not_exists`: then the
    /// existing table must agree (no declared tag is a field, no declared field is a tag or
    /// has another type) and the declared columns it lacks are added, as a write would add
    /// them. Call [`Catalog::persist`] to make the change durable.
    pub fn create_table(
        &self,
        database: &str,
        name: &str,
        definition: &TableDefinition,
        if_not_exists: bool,
    ) -> Result<CreateOutcome, SchemaError> {
        let mut state = self.state.write();
        create_locked(&mut state, database, name, definition, if_not_exists)
    }
}

/// [`Catalog::create_table`] with the state locked (also used for super tables).
pub(super) fn create_locked(
    state: &mut State,
    database: &str,
    name: &str,
    definition: &TableDefinition,
    if_not_exists: bool,
) -> Result<CreateOutcome, SchemaError> {
    check_definition(name, definition)?;
    let key = (database.to_string(), name.to_string());
    if super::supertable::is_subtable(state, database, name) {
        return Err(SchemaError::TableExists {
            database: database.to_string(),
            table: name.to_string(),
        });
    }
    if let Some(&id) = state.by_name.get(&key) {
        if !if_not_exists {
            return Err(SchemaError::TableExists {
                database: database.to_string(),
                table: name.to_string(),
            });
        }
        check_agrees(&state.tables[id as usize], definition)?;
        let changed = add_missing(Arc::make_mut(&mut state.tables[id as usize]), definition);
        if changed {
            state.version += 1;
        }
        return Ok(CreateOutcome::Existed(id));
    }
    let id = TableId::try_from(state.tables.len()).map_err(|_| SchemaError::ColumnName {
        table: name.to_string(),
        name: name.to_string(),
        reason: "cannot be created: every table id is taken",
    })?;
    let mut schema = TableSchema {
        id,
        database: database.to_string(),
        name: name.to_string(),
        tags: Vec::new(),
        fields: Vec::new(),
        time_unit: definition.time_unit,
    };
    add_missing(&mut schema, definition);
    state.tables.push(Arc::new(schema));
    state.by_name.insert(key, id);
    state.version += 1;
    Ok(CreateOutcome::Created(id))
}

impl Catalog {
    /// Drops table `database.name`: its name is forgotten and its id marked dropped, durably
    /// (the catalog file is rewritten before this returns), then published to the shards,
    /// which discard its rows as they flush, merge and purge. Returns the dropped id, or
    /// `None` if there is no such table.
    pub fn drop_table(&self, database: &str, name: &str) -> Result<Option<TableId>, StorageError> {
        self.check_writable()?;
        self.drop_table_unchecked(database, name)
    }

    /// [`Catalog::drop_table`] in a read-only catalog too: the lake mirror drops the tables
    /// the lake no longer holds.
    pub(crate) fn drop_table_unchecked(
        &self,
        database: &str,
        name: &str,
    ) -> Result<Option<TableId>, StorageError> {
        // The file lock first, then the state lock: the order `persist` takes them in. The
        // state stays locked while the file is written so that a failed write can be undone
        // exactly (a drop is rare; writers wait one fsync).
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let key = (database.to_string(), name.to_string());
        let Some(id) = state.by_name.remove(&key) else {
            return Ok(None);
        };
        state.dropped.insert(id);
        let downsamples = (state.downsamples.clone(), state.table_retention.clone());
        super::downsample::forget_table(&mut state, id);
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            state.dropped.remove(id);
            state.by_name.insert(key, id);
            (state.downsamples, state.table_retention) = downsamples;
            return Err(e);
        }
        *persisted = state.version;
        let schema = Arc::make_mut(&mut state.tables[id as usize]);
        schema.tags = Vec::new();
        schema.fields = Vec::new();
        drop(state);
        self.dropped.insert(id);
        Ok(Some(id))
    }
}

impl Catalog {
    /// The dropped tables, by id: (id, database, name) as they were when dropped.
    pub fn dropped_names(&self) -> Vec<(TableId, String, String)> {
        let state = self.state.read();
        state
            .dropped
            .iter()
            .filter_map(|id| {
                let table = state.tables.get(id as usize)?;
                Some((id, table.database.clone(), table.name.clone()))
            })
            .collect()
    }
}

impl Catalog {
    /// `CREATE DATABASE`: records `database` durably so it exists before it holds a table.
    /// Creating one that exists is not an error (InfluxDB's behaviour). Returns whether it
    /// was new.
    pub fn create_database(&self, database: &str) -> Result<bool, StorageError> {
        self.check_writable()?;
        if database.is_empty() {
            return Err(StorageError::Invalid("a database name is needed".into()));
        }
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        if !state.databases.insert(database.to_string()) {
            return Ok(false);
        }
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            state.databases.remove(database);
            return Err(e);
        }
        *persisted = state.version;
        Ok(true)
    }

    /// `DROP DATABASE`: forgets `database`'s explicit entry; the caller drops its tables
    /// ([`Catalog::drop_table`]) first. Returns whether there was an entry.
    pub fn forget_database(&self, database: &str) -> Result<bool, StorageError> {
        self.check_writable()?;
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        if !state.databases.remove(database) {
            return Ok(false);
        }
        // A database made again later under this name starts with the server default
        // retention and tier after, and TDengine's default precision.
        let retention = state.retention.remove(database);
        let tier_after = state.tier_after.remove(database);
        let precision = state.precision.remove(database);
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            state.databases.insert(database.to_string());
            if let Some(ns) = retention {
                state.retention.insert(database.to_string(), ns);
            }
            if let Some(ns) = tier_after {
                state.tier_after.insert(database.to_string(), ns);
            }
            if let Some(p) = precision {
                state.precision.insert(database.to_string(), p);
            }
            return Err(e);
        }
        *persisted = state.version;
        Ok(true)
    }
}

/// Column names of a definition: not empty, not `time`, each declared once.
fn check_definition(table: &str, definition: &TableDefinition) -> Result<(), SchemaError> {
    let error = |name: &str, reason: &'static str| SchemaError::ColumnName {
        table: table.to_string(),
        name: name.to_string(),
        reason,
    };
    let names: Vec<&str> = definition
        .tags
        .iter()
        .map(String::as_str)
        .chain(definition.fields.iter().map(|(n, _)| n.as_str()))
        .collect();
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(error(name, "is empty: a column needs a name"));
        }
        if *name == TIME_COLUMN {
            return Err(error(name, "is reserved for the timestamp"));
        }
        if names[..i].contains(name) {
            return Err(error(name, "is declared twice"));
        }
    }
    Ok(())
}

/// Whether the existing `schema` can hold `definition`'s columns as declared.
fn check_agrees(schema: &TableSchema, definition: &TableDefinition) -> Result<(), SchemaError> {
    let error = |name: &str, reason: &'static str| SchemaError::ColumnName {
        table: schema.name.clone(),
        name: name.to_string(),
        reason,
    };
    if schema.time_unit != definition.time_unit {
        return Err(error(
            TIME_COLUMN,
            "is declared with another type than the table's (TIMESTAMP, or BIGINT in \
             another unit)",
        ));
    }
    for tag in &definition.tags {
        if schema.field(tag).is_some() {
            return Err(error(tag, "is declared a tag but is a field of the table"));
        }
    }
    for (name, field_type) in &definition.fields {
        if schema.tags.iter().any(|t| t == name) {
            return Err(error(name, "is declared a field but is a tag of the table"));
        }
        if let Some(field) = schema.field(name)
            && field.field_type != *field_type
        {
            return Err(SchemaError::FieldTypeConflict {
                table: schema.name.clone(),
                field: name.clone(),
                existing: field.field_type,
                got: *field_type,
            });
        }
    }
    Ok(())
}

/// Adds the columns of `definition` that `schema` lacks; whether it added any.
fn add_missing(schema: &mut TableSchema, definition: &TableDefinition) -> bool {
    let mut changed = false;
    for tag in &definition.tags {
        if !schema.tags.contains(tag) {
            schema.tags.push(tag.clone());
            changed = true;
        }
    }
    for (name, field_type) in &definition.fields {
        if schema.field(name).is_none() {
            let id = schema.fields.len() as FieldId;
            schema.fields.push(FieldDef {
                id,
                name: name.clone(),
                field_type: *field_type,
            });
            changed = true;
        }
    }
    changed
}
