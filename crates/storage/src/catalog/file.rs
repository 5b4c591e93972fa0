//! `catalog.json`: the catalog's on-disk form, kept apart from the in-memory types so a
//! refactor cannot silently change the file.
//!
//! Version 2 (written): `{"tables": [{"id", "database", "name", "tags", "fields",
//! "dropped"}]}`; `dropped` is present (and `true`) only on tables removed by
//! `DROP TABLE`, which keep their entry, with no tags or fields, so that their id is never
//! given again. Version 3 adds `"databases"`: the databases made by `CREATE DATABASE`, which
//! exist before (and after) they hold a table; versions 1 and 2 (read only) lack it, and
//! version 1 also lacks `dropped`. Version 4 adds `"retention"`: `{"<database>": ns}` for
//! the databases given a retention of their own (nanoseconds; 0 keeps rows forever); a
//! database not in it follows the server's default. Version 5 adds `"tombstones"` (the
//! deletes in force, see `tombstones.rs`) and `"next_tombstone_id"`. Version 6 adds
//! `"table_retention"` (`{"<table id>": ns}` for tables with a retention of their own,
//! which overrides their database's), `"downsamples"` (see `downsample.rs`) and
//! `"next_downsample_id"`. Version 7 adds a table's `"time_unit"` (`"ns"`, `"us"`, `"ms"` or
//! `"s"`) for tables declared with `time BIGINT`: the unit of integer times in `INSERT`
//! (and for TDengine super tables, their database's precision). Version 8 adds
//! `"precision"` (`{"<database>": "ms"}`, TDengine's `CREATE DATABASE … PRECISION`) and
//! `"super_tables"` (`{"<table id>": {"time", "columns", "tags", "subtables"}}`, see
//! `supertable.rs`). Version 9 adds `"tier_after"` (`{"<database>": ns}`: how long after a
//! partition ends the lake copies it, for the databases given their own, see `tier.rs`).

use std::path::Path;
use std::sync::Arc;

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::supertable::SuperTableFile;
use super::{FieldDef, State, TableSchema};
use crate::checked_json;
use crate::error::StorageError;
use crate::model::TableId;
use strata_lineproto::Precision;

/// Kind named in the file header.
const CATALOG_KIND: &str = "catalog";
/// Format version written; bump on any incompatible change.
const CATALOG_FORMAT_VERSION: u32 = 9;
/// Oldest version still read.
const OLDEST_READABLE_VERSION: u32 = 1;

/// The file's body.
#[derive(Serialize, Deserialize)]
pub(super) struct CatalogFile {
    tables: Vec<TableFile>,
    /// Version 3: databases created explicitly, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    databases: Vec<String>,
    /// Version 4: retention in nanoseconds of the databases that have their own.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    retention: std::collections::BTreeMap<String, u64>,
    /// Version 5: deletes whose rows may still be in parts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tombstones: Vec<super::Tombstone>,
    /// Version 5: the id the next tombstone gets (0 when none was ever made).
    #[serde(default, skip_serializing_if = "is_zero")]
    next_tombstone_id: u64,
    /// Version 6: retention in nanoseconds of the tables that have their own.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    table_retention: std::collections::BTreeMap<TableId, u64>,
    /// Version 6: continuous aggregates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    downsamples: Vec<super::Downsample>,
    /// Version 6: the id the next downsample gets (0 when none was ever made).
    #[serde(default, skip_serializing_if = "is_zero")]
    next_downsample_id: u64,
    /// Version 8: the TDengine precision of databases created with one.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    precision: std::collections::BTreeMap<String, String>,
    /// Version 9: the lake's `tier after`, in nanoseconds, of the databases that have
    /// their own.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    tier_after: std::collections::BTreeMap<String, u64>,
    /// Version 8: TDengine super tables and their subtables, by table id.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    super_tables: std::collections::BTreeMap<TableId, SuperTableFile>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Serialize, Deserialize)]
struct TableFile {
    id: TableId,
    database: String,
    name: String,
    tags: Vec<String>,
    fields: Vec<FieldDef>,
    /// Version 2: the table was dropped; its id stays taken.
    #[serde(default, skip_serializing_if = "is_false")]
    dropped: bool,
    /// Version 7: `time BIGINT`'s unit (`ns`, `us`, `ms`, `s`); absent for TIMESTAMP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    time_unit: Option<String>,
}

/// The file's name of a time unit.
fn unit_name(unit: Precision) -> &'static str {
    match unit {
        Precision::Nanoseconds => "ns",
        Precision::Microseconds => "us",
        Precision::Milliseconds => "ms",
        Precision::Seconds => "s",
    }
}

/// The unit a file names; `None` for a name it cannot hold.
fn unit_of(name: &str) -> Option<Precision> {
    [
        Precision::Nanoseconds,
        Precision::Microseconds,
        Precision::Milliseconds,
        Precision::Seconds,
    ]
    .into_iter()
    .find(|u| unit_name(*u) == name)
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Reads the catalog file at `path`; `Ok(None)` if there is none.
pub(super) fn load(path: &Path) -> Result<Option<State>, StorageError> {
    let found = checked_json::read_versions::<CatalogFile>(
        path,
        CATALOG_KIND,
        OLDEST_READABLE_VERSION..=CATALOG_FORMAT_VERSION,
    )?;
    let Some((version, file)) = found else {
        return Ok(None);
    };
    decode(path, version, file).map(Some)
}

/// Writes `file` to `path` atomically and durably, in the current version.
pub(super) fn store(path: &Path, file: &CatalogFile) -> Result<(), StorageError> {
    checked_json::write(path, CATALOG_KIND, CATALOG_FORMAT_VERSION, file)
}

/// The file form of `state` (a snapshot: the caller writes it outside the state lock).
pub(super) fn encode(state: &State) -> CatalogFile {
    CatalogFile {
        tables: state
            .tables
            .iter()
            .map(|t| {
                let dropped = state.dropped.contains(t.id);
                TableFile {
                    id: t.id,
                    database: t.database.clone(),
                    name: t.name.clone(),
                    // A dropped table's columns mean nothing any more (a writer that raced
                    // with the drop may even have added some): only its id matters.
                    tags: if dropped { Vec::new() } else { t.tags.clone() },
                    fields: if dropped {
                        Vec::new()
                    } else {
                        t.fields.clone()
                    },
                    dropped,
                    time_unit: t
                        .time_unit
                        .filter(|_| !dropped)
                        .map(|u| unit_name(u).into()),
                }
            })
            .collect(),
        databases: state.databases.iter().cloned().collect(),
        retention: state.retention.clone(),
        tier_after: state.tier_after.clone(),
        tombstones: state.tombstones.clone(),
        next_tombstone_id: state.next_tombstone_id,
        table_retention: state.table_retention.clone(),
        downsamples: state.downsamples.clone(),
        next_downsample_id: state.next_downsample_id,
        precision: state
            .precision
            .iter()
            .map(|(db, p)| (db.clone(), unit_name(*p).to_string()))
            .collect(),
        // A dropped super table's subtables are gone with it.
        super_tables: state
            .super_tables
            .iter()
            .filter(|(id, _)| !state.dropped.contains(**id))
            .map(|(id, st)| (*id, SuperTableFile::encode(st)))
            .collect(),
    }
}

fn decode(path: &Path, version: u32, file: CatalogFile) -> Result<State, StorageError> {
    let corrupt = |reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        offset: 0,
        reason,
    };
    let mut state = State::default();
    let mut dropped = RoaringBitmap::new();
    for (index, table) in file.tables.into_iter().enumerate() {
        if table.id as usize != index {
            return Err(corrupt(format!("table ids out of order at {}", table.name)));
        }
        if table
            .fields
            .iter()
            .enumerate()
            .any(|(i, f)| f.id as usize != i)
        {
            return Err(corrupt(format!("field ids out of order in {}", table.name)));
        }
        if table.dropped && version < 2 {
            return Err(corrupt(format!(
                "table {} is marked dropped in a version {version} file",
                table.name
            )));
        }
        if table.dropped {
            dropped.insert(table.id);
        } else {
            let key = (table.database.clone(), table.name.clone());
            if state.by_name.insert(key, table.id).is_some() {
                return Err(corrupt(format!(
                    "two live tables named {}.{}",
                    table.database, table.name
                )));
            }
        }
        let time_unit =
            match table.time_unit.as_deref() {
                None => None,
                Some(_) if version < 7 => {
                    return Err(corrupt(format!(
                        "table {} has a time unit in a version {version} file",
                        table.name
                    )));
                }
                Some(name) => Some(unit_of(name).ok_or_else(|| {
                    corrupt(format!("table {} has time unit {name:?}", table.name))
                })?),
            };
        state.tables.push(Arc::new(TableSchema {
            id: table.id,
            database: table.database,
            name: table.name,
            tags: table.tags,
            fields: table.fields,
            time_unit,
        }));
    }
    if !file.databases.is_empty() && version < 3 {
        return Err(corrupt(format!("a version {version} file lists databases")));
    }
    if !file.retention.is_empty() && version < 4 {
        return Err(corrupt(format!("a version {version} file sets retention")));
    }
    if !file.tier_after.is_empty() && version < 9 {
        return Err(corrupt(format!("a version {version} file sets tier after")));
    }
    if let Some((database, _)) = file.tier_after.iter().find(|(_, ns)| **ns == 0) {
        return Err(corrupt(format!(
            "database {database} has a tier after of 0"
        )));
    }
    if (!file.tombstones.is_empty() || file.next_tombstone_id != 0) && version < 5 {
        return Err(corrupt(format!(
            "a version {version} file holds tombstones"
        )));
    }
    if let Some(t) = file
        .tombstones
        .iter()
        .find(|t| t.id == 0 || t.id >= file.next_tombstone_id || t.start >= t.end)
    {
        return Err(corrupt(format!("tombstone {} is malformed", t.id)));
    }
    if (!file.table_retention.is_empty()
        || !file.downsamples.is_empty()
        || file.next_downsample_id != 0)
        && version < 6
    {
        return Err(corrupt(format!(
            "a version {version} file holds downsamples or table retention"
        )));
    }
    let table_count = state.tables.len() as u64;
    if let Some(d) = file.downsamples.iter().find(|d| {
        d.id == 0
            || d.id >= file.next_downsample_id
            || d.interval_ns <= 0
            || u64::from(d.source) >= table_count
            || u64::from(d.target) >= table_count
    }) {
        return Err(corrupt(format!("downsample {} is malformed", d.name)));
    }
    state.table_retention = file.table_retention;
    state.downsamples = file.downsamples;
    state.next_downsample_id = file.next_downsample_id;
    state.tombstones = file.tombstones;
    state.next_tombstone_id = file.next_tombstone_id;
    state.databases = file.databases.into_iter().collect();
    state.retention = file.retention;
    state.tier_after = file.tier_after;
    state.dropped = dropped;
    decode_tdengine(&mut state, version, file.precision, file.super_tables).map_err(corrupt)?;
    Ok(state)
}

/// Version 8's TDengine keys into `state` (whose tables are decoded): database precisions
/// and super tables, which must name live tables.
fn decode_tdengine(
    state: &mut State,
    version: u32,
    precision: std::collections::BTreeMap<String, String>,
    super_tables: std::collections::BTreeMap<TableId, SuperTableFile>,
) -> Result<(), String> {
    if (!precision.is_empty() || !super_tables.is_empty()) && version < 8 {
        return Err(format!(
            "a version {version} file holds TDengine precisions or super tables"
        ));
    }
    for (database, name) in precision {
        let unit =
            unit_of(&name).ok_or_else(|| format!("database {database} has precision {name:?}"))?;
        state.precision.insert(database, unit);
    }
    for (id, file) in super_tables {
        if (id as usize) >= state.tables.len() || state.dropped.contains(id) {
            return Err(format!("super table {id} names no live table"));
        }
        let decoded = file
            .decode()
            .map_err(|e| format!("super table {id}: {e}"))?;
        state.super_tables.insert(id, decoded);
    }
    Ok(())
}

/// A table as `strata repair` rebuilds it from the parts (see `engine/repair.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuiltTable {
    /// Its id: ids are dense from 0, so every id below the highest gets an entry.
    pub id: TableId,
    /// Its database.
    pub database: String,
    /// Its name.
    pub name: String,
    /// Tag keys.
    pub tags: Vec<String>,
    /// Fields, by id from 0.
    pub fields: Vec<FieldDef>,
    /// An id no part, series or WAL record names: kept taken, as a dropped table.
    pub dropped: bool,
}

/// Writes a catalog holding `tables` (by increasing id) and nothing else but the tombstone
/// counter: settings that only `catalog.json` held (retention, pending deletes, downsamples,
/// empty databases, `time BIGINT` units, TDengine precisions, super tables and subtables)
/// are gone with it. `next_tombstone_id` must be above every tombstone id
/// a part has applied, or a new delete would be taken as applied already.
pub fn store_rebuilt(
    dir: &Path,
    tables: Vec<RebuiltTable>,
    next_tombstone_id: u64,
) -> Result<(), StorageError> {
    let mut databases: Vec<String> = tables
        .iter()
        .filter(|t| !t.dropped)
        .map(|t| t.database.clone())
        .collect();
    databases.sort();
    databases.dedup();
    let file = CatalogFile {
        tables: tables
            .into_iter()
            .map(|t| TableFile {
                id: t.id,
                database: t.database,
                name: t.name,
                tags: t.tags,
                fields: t.fields,
                dropped: t.dropped,
                time_unit: None,
            })
            .collect(),
        databases,
        retention: Default::default(),
        tier_after: Default::default(),
        tombstones: Vec::new(),
        next_tombstone_id,
        table_retention: Default::default(),
        downsamples: Vec::new(),
        next_downsample_id: 0,
        precision: Default::default(),
        super_tables: Default::default(),
    };
    store(&dir.join(super::CATALOG_FILE), &file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog written by version 1 (before `DROP TABLE`) still opens.
    #[test]
    fn version_1_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.json");
        let body = r#"{"tables":[{"id":0,"database":"db","name":"cpu","tags":["host"],
            "fields":[{"id":0,"name":"usage","field_type":"float"}]}]}"#;
        let header = format!(
            "STRATA catalog v1 len={} crc32={:08x}\n",
            body.len(),
            crc32fast::hash(body.as_bytes())
        );
        std::fs::write(&path, format!("{header}{body}")).unwrap();
        let state = load(&path).unwrap().unwrap();
        assert_eq!(state.tables.len(), 1);
        assert_eq!(state.tables[0].tags, vec!["host".to_string()]);
        assert_eq!(state.by_name.get(&("db".into(), "cpu".into())), Some(&0));
        assert!(state.dropped.is_empty());

        // Rewritten as the current version, a dropped table keeps its id but loses its columns.
        let mut state = state;
        state.dropped.insert(0);
        state.by_name.clear();
        store(&path, &encode(&state)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("STRATA catalog v9 "), "{text}");
        assert!(
            !text.contains("databases"),
            "no empty list is written: {text}"
        );
        let reread = load(&path).unwrap().unwrap();
        assert!(reread.dropped.contains(0));
        assert!(reread.by_name.is_empty());
        assert!(reread.tables[0].fields.is_empty());
    }

    /// Version 3 keeps databases made by `CREATE DATABASE`; an older file listing them is
    /// corrupt, not silently read.
    #[test]
    fn created_databases_round_trip_and_need_version_3() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.json");
        let mut state = State::default();
        state.databases.insert("empty".into());
        state.databases.insert("alpha".into());
        store(&path, &encode(&state)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("STRATA catalog v9 "), "{text}");
        assert!(text.contains("\"databases\""), "{text}");
        let reread = load(&path).unwrap().unwrap();
        assert_eq!(
            reread.databases.iter().collect::<Vec<_>>(),
            ["alpha", "empty"]
        );

        let body = r#"{"tables":[],"databases":["x"]}"#;
        let header = format!(
            "STRATA catalog v2 len={} crc32={:08x}\n",
            body.len(),
            crc32fast::hash(body.as_bytes())
        );
        std::fs::write(&path, format!("{header}{body}")).unwrap();
        let err = load(&path).expect_err("a v2 file with databases");
        assert!(err.to_string().contains("lists databases"), "{err}");
    }
}
