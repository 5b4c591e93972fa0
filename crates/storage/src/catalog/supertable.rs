//! TDengine's data model as the catalog keeps it: super tables, their subtables, and a
//! database's timestamp precision (`catalog.json` version 8).
//!
//! A super table is an ordinary Strata table (its TAGS are tag keys, plus `tbname`, the
//! subtable's name) with a little more recorded about it: the name TDengine gave its
//! timestamp column, its columns in declared order (what `INSERT … VALUES` without a column
//! list fills) and its TAGS with their TDengine types (to check the values of subtables).
//! A subtable is not a table here: it is a name in its super table's database that stands
//! for one series of the super table, with fixed tag values. It is recorded so that
//! `INSERT INTO d1001 VALUES (…)` finds its tags later, across restarts, before any row was
//! written. Changes are written (and fsynced) before they are published, and undone when
//! the write fails, as every catalog change.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use strata_lineproto::Precision;

use super::ddl::{self, CreateOutcome, TableDefinition};
use super::{Catalog, SchemaError, State, file};
use crate::error::StorageError;
use crate::model::TableId;

/// The TDengine type of a super table's tag: what its values are checked against. Every
/// value is stored as text (Strata's tags are strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagType {
    /// `TINYINT`, `SMALLINT`, `INT`, `BIGINT`: a signed integer.
    Integer,
    /// The integer types `UNSIGNED`: a non-negative integer.
    Unsigned,
    /// `FLOAT`, `DOUBLE`.
    Float,
    /// `BOOL`.
    Boolean,
    /// `BINARY(n)`, `VARCHAR(n)`, `NCHAR(n)`.
    String,
    /// `TIMESTAMP`.
    Timestamp,
}

impl TagType {
    const ALL: [TagType; 6] = [
        TagType::Integer,
        TagType::Unsigned,
        TagType::Float,
        TagType::Boolean,
        TagType::String,
        TagType::Timestamp,
    ];

    /// The name the catalog file (and messages) use.
    pub fn name(self) -> &'static str {
        match self {
            TagType::Integer => "integer",
            TagType::Unsigned => "unsigned",
            TagType::Float => "float",
            TagType::Boolean => "boolean",
            TagType::String => "string",
            TagType::Timestamp => "timestamp",
        }
    }

    /// The type a file names.
    pub fn parse(name: &str) -> Option<TagType> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What the catalog knows of a super table beyond its Strata schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuperTable {
    /// The declared name of the timestamp column (`ts`); Strata's column is `time`.
    pub time_name: String,
    /// The other columns (fields), in declared order.
    pub columns: Vec<String>,
    /// The TAGS in declared order, with their types (`tbname` is not among them).
    pub tags: Vec<(String, TagType)>,
}

/// A subtable: one series of a super table, with fixed tag values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subtable {
    /// Its name (the series' `tbname`).
    pub name: String,
    /// Its super table.
    pub super_table: TableId,
    /// The values of the super table's TAGS, in their order, as text; `None` for NULL.
    pub tags: Vec<Option<String>>,
}

/// A super table in the catalog state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SuperTableState {
    pub definition: Arc<SuperTable>,
    /// Subtables by name: their tag values.
    pub subtables: BTreeMap<String, Vec<Option<String>>>,
}

/// A super table in `catalog.json`, under `"super_tables"` by table id.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct SuperTableFile {
    time: String,
    columns: Vec<String>,
    tags: Vec<TagFile>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    subtables: BTreeMap<String, Vec<Option<String>>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct TagFile {
    name: String,
    #[serde(rename = "type")]
    tag_type: String,
}

impl SuperTableFile {
    /// The file form of a super table.
    pub(super) fn encode(state: &SuperTableState) -> Self {
        let definition = &state.definition;
        Self {
            time: definition.time_name.clone(),
            columns: definition.columns.clone(),
            tags: definition
                .tags
                .iter()
                .map(|(name, t)| TagFile {
                    name: name.clone(),
                    tag_type: t.name().to_string(),
                })
                .collect(),
            subtables: state.subtables.clone(),
        }
    }

    /// The state a file entry holds, or why it is malformed.
    pub(super) fn decode(self) -> Result<SuperTableState, String> {
        let mut tags = Vec::with_capacity(self.tags.len());
        for tag in self.tags {
            let tag_type = TagType::parse(&tag.tag_type)
                .ok_or_else(|| format!("tag {} has type {:?}", tag.name, tag.tag_type))?;
            tags.push((tag.name, tag_type));
        }
        if let Some((name, values)) = self.subtables.iter().find(|(_, v)| v.len() != tags.len()) {
            return Err(format!(
                "subtable {name} has {} tag values for {} tags",
                values.len(),
                tags.len()
            ));
        }
        Ok(SuperTableState {
            definition: Arc::new(SuperTable {
                time_name: self.time,
                columns: self.columns,
                tags,
            }),
            subtables: self.subtables,
        })
    }
}

/// The super table of `database` holding subtable `name`, if it is live.
fn find_subtable<'s>(
    state: &'s State,
    database: &str,
    name: &str,
) -> Option<(TableId, &'s Vec<Option<String>>)> {
    state.super_tables.iter().find_map(|(id, st)| {
        let live = !state.dropped.contains(*id) && state.tables[*id as usize].database == database;
        live.then(|| st.subtables.get(name).map(|tags| (*id, tags)))
            .flatten()
    })
}

/// Whether `database` has a live subtable named `name` (table names must not clash).
pub(super) fn is_subtable(state: &State, database: &str, name: &str) -> bool {
    find_subtable(state, database, name).is_some()
}

impl Catalog {
    /// The TDengine precision `database` was created with (`CREATE DATABASE … PRECISION`).
    pub fn database_precision(&self, database: &str) -> Option<Precision> {
        self.state.read().precision.get(database).copied()
    }

    /// Records `database` (as `CREATE DATABASE` does) with TDengine precision `precision`,
    /// durably.
    pub fn set_database_precision(
        &self,
        database: &str,
        precision: Precision,
    ) -> Result<(), StorageError> {
        self.check_writable()?;
        if database.is_empty() {
            return Err(StorageError::Invalid("a database name is needed".into()));
        }
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let before = state.precision.insert(database.to_string(), precision);
        let created = state.databases.insert(database.to_string());
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            match before {
                Some(p) => state.precision.insert(database.to_string(), p),
                None => state.precision.remove(database),
            };
            if created {
                state.databases.remove(database);
            }
            return Err(e);
        }
        *persisted = state.version;
        Ok(())
    }

    /// What is recorded of table `id` as a super table; `None` for an ordinary or dropped
    /// table.
    pub fn super_table(&self, id: TableId) -> Option<Arc<SuperTable>> {
        let state = self.state.read();
        if state.dropped.contains(id) {
            return None;
        }
        state
            .super_tables
            .get(&id)
            .map(|st| Arc::clone(&st.definition))
    }

    /// Subtable `name` of `database`, if there is one.
    pub fn subtable(&self, database: &str, name: &str) -> Option<Subtable> {
        let state = self.state.read();
        find_subtable(&state, database, name).map(|(id, tags)| Subtable {
            name: name.to_string(),
            super_table: id,
            tags: tags.clone(),
        })
    }

    /// Creates super table `database.name`: a table with `definition`'s tags and fields
    /// and `super_table` recorded about it, durably. A taken name is
    /// [`SchemaError::TableExists`], unless `if_not_exists` and the table is a super table
    /// declared the same way.
    pub fn create_super_table(
        &self,
        database: &str,
        name: &str,
        definition: &TableDefinition,
        super_table: SuperTable,
        if_not_exists: bool,
    ) -> Result<CreateOutcome, StorageError> {
        self.check_writable()?;
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        if let Some(&id) = state.by_name.get(&(database.to_string(), name.to_string())) {
            if !if_not_exists {
                return Err(exists(database, name));
            }
            return same_super_table(&state, id, definition, &super_table)
                .map(|()| CreateOutcome::Existed(id));
        }
        let outcome = ddl::create_locked(&mut state, database, name, definition, false)?;
        let id = outcome.id();
        state.super_tables.insert(
            id,
            SuperTableState {
                definition: Arc::new(super_table),
                subtables: BTreeMap::new(),
            },
        );
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            // The table is the last one: nothing else could be created under our lock.
            state.super_tables.remove(&id);
            state.tables.pop();
            state
                .by_name
                .remove(&(database.to_string(), name.to_string()));
            return Err(e);
        }
        *persisted = state.version;
        Ok(outcome)
    }

    /// Registers `subtables` (all in `database`), durably, in one write. A subtable that
    /// exists with the same super table and tags is left as it is; with others, or a name
    /// taken by a table, nothing is registered and the error says why. Returns how many
    /// were new.
    pub fn create_subtables(
        &self,
        database: &str,
        subtables: &[Subtable],
    ) -> Result<usize, StorageError> {
        self.check_writable()?;
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let mut added: Vec<(TableId, String)> = Vec::new();
        let result = add_subtables(&mut state, database, subtables, &mut added);
        let result = result.and_then(|()| {
            if added.is_empty() {
                return Ok(0);
            }
            state.version += 1;
            file::store(&self.path, &file::encode(&state))?;
            *persisted = state.version;
            Ok(added.len())
        });
        if result.is_err() {
            for (id, name) in &added {
                if let Some(st) = state.super_tables.get_mut(id) {
                    st.subtables.remove(name);
                }
            }
        }
        result
    }
}

/// Adds each of `subtables` that is new to `state`, noting it in `added`; stops at the
/// first that cannot be added.
fn add_subtables(
    state: &mut State,
    database: &str,
    subtables: &[Subtable],
    added: &mut Vec<(TableId, String)>,
) -> Result<(), StorageError> {
    for subtable in subtables {
        let name = &subtable.name;
        if state
            .by_name
            .contains_key(&(database.to_string(), name.clone()))
        {
            return Err(exists(database, name));
        }
        let id = subtable.super_table;
        let live = !state.dropped.contains(id)
            && state
                .tables
                .get(id as usize)
                .is_some_and(|t| t.database == database);
        let Some(st) = state.super_tables.get(&id).filter(|_| live) else {
            return Err(StorageError::Invalid(format!(
                "table {id} of database \"{database}\" is not a super table"
            )));
        };
        if subtable.tags.len() != st.definition.tags.len() {
            return Err(StorageError::Invalid(format!(
                "subtable \"{name}\" has {} tag values; its super table has {} tags",
                subtable.tags.len(),
                st.definition.tags.len()
            )));
        }
        match find_subtable(state, database, name) {
            Some((other, tags)) if other == id && *tags == subtable.tags => continue,
            Some(_) => {
                return Err(StorageError::Invalid(format!(
                    "subtable \"{name}\" already exists in database \"{database}\" with \
                     other tags or another super table"
                )));
            }
            None => {}
        }
        if let Some(st) = state.super_tables.get_mut(&id) {
            st.subtables.insert(name.clone(), subtable.tags.clone());
            added.push((id, name.clone()));
        }
    }
    Ok(())
}

fn exists(database: &str, name: &str) -> StorageError {
    StorageError::Schema(SchemaError::TableExists {
        database: database.to_string(),
        table: name.to_string(),
    })
}

/// Whether table `id` is a super table declared as `definition` and `super_table` say.
fn same_super_table(
    state: &State,
    id: TableId,
    definition: &TableDefinition,
    super_table: &SuperTable,
) -> Result<(), StorageError> {
    let schema = &state.tables[id as usize];
    let differs = |what: &str| {
        StorageError::Invalid(format!(
            "table \"{}\" already exists in database \"{}\" {what}",
            schema.name, schema.database
        ))
    };
    let Some(st) = state.super_tables.get(&id) else {
        return Err(differs("and is not a super table"));
    };
    let same_fields = definition
        .fields
        .iter()
        .all(|(name, t)| schema.field(name).is_some_and(|f| f.field_type == *t));
    if *st.definition != *super_table || !same_fields || schema.time_unit != definition.time_unit {
        return Err(differs(
            "as a super table with other columns, tags or precision",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FieldType;

    fn meters() -> (TableDefinition, SuperTable) {
        let definition = TableDefinition {
            tags: vec!["groupid".into(), "tbname".into()],
            fields: vec![("current".into(), FieldType::Float)],
            time_unit: Some(Precision::Milliseconds),
        };
        let super_table = SuperTable {
            time_name: "ts".into(),
            columns: vec!["current".into()],
            tags: vec![("groupid".into(), TagType::Integer)],
        };
        (definition, super_table)
    }

    fn subtable(name: &str, id: TableId, group: &str) -> Subtable {
        Subtable {
            name: name.into(),
            super_table: id,
            tags: vec![Some(group.into())],
        }
    }

    #[test]
    fn subtables_survive_reopening_and_refuse_other_tags() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let (definition, super_table) = meters();
        let id = catalog
            .create_super_table("db", "meters", &definition, super_table.clone(), false)
            .unwrap()
            .id();
        let new = [subtable("d1", id, "2"), subtable("d2", id, "3")];
        assert_eq!(catalog.create_subtables("db", &new).unwrap(), 2);
        // The same again is no change; other tags are refused and nothing is added.
        assert_eq!(catalog.create_subtables("db", &new[..1]).unwrap(), 0);
        let clash = [subtable("d3", id, "1"), subtable("d1", id, "9")];
        let err = catalog.create_subtables("db", &clash).unwrap_err();
        assert!(err.to_string().contains("other tags"), "{err}");
        assert!(catalog.subtable("db", "d3").is_none());
        // A subtable's name is taken for tables too, and a table's for subtables.
        let err = catalog
            .create_table("db", "d1", &TableDefinition::default(), false)
            .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        let err = catalog
            .create_subtables("db", &[subtable("meters", id, "1")])
            .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        catalog
            .set_database_precision("db", Precision::Microseconds)
            .unwrap();
        drop(catalog);

        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.subtable("db", "d2"), Some(subtable("d2", id, "3")));
        assert_eq!(catalog.subtable("other", "d2"), None);
        assert_eq!(catalog.subtable("db", "d1"), Some(subtable("d1", id, "2")));
        assert_eq!(catalog.super_table(id).as_deref(), Some(&super_table));
        assert_eq!(
            catalog.database_precision("db"),
            Some(Precision::Microseconds)
        );
        // Declared again the same way, it exists; declared otherwise, it is refused.
        let again = catalog.create_super_table("db", "meters", &definition, super_table, true);
        assert_eq!(again.unwrap(), CreateOutcome::Existed(id));
        let (definition, mut other) = meters();
        other.time_name = "t".into();
        let err = catalog
            .create_super_table("db", "meters", &definition, other, true)
            .unwrap_err();
        assert!(err.to_string().contains("other columns"), "{err}");

        // Dropping the super table forgets its subtables.
        catalog.drop_table("db", "meters").unwrap();
        assert!(catalog.subtable("db", "d1").is_none());
        assert!(catalog.super_table(id).is_none());
        drop(catalog);
        let catalog = Catalog::open(dir.path()).unwrap();
        assert!(catalog.subtable("db", "d1").is_none());
    }
}
