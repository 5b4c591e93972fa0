//! `strata repair`, the catalog: tables and fields as the parts name them, tag keys as the
//! series hold them, and field types the WAL holds for fields no part names yet.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use super::repair::{RepairReport, set_damaged_aside};
use crate::catalog::{CATALOG_FILE, Catalog, FieldDef, RebuiltTable, store_rebuilt};
use crate::error::StorageError;
use crate::model::{FieldId, FieldType, TableId};
use crate::part::PartRecovery;

/// Database of the tables whose rows survive but whose names no part recorded.
pub const RECOVERED_DATABASE: &str = "recovered";

/// What the shards say about the catalog's tables.
#[derive(Debug, Default)]
pub(super) struct CatalogFacts {
    /// Database and name of each table a part names.
    names: BTreeMap<TableId, (String, String)>,
    /// Fields by table: name (if a part names it) and type.
    fields: BTreeMap<TableId, BTreeMap<FieldId, (Option<String>, FieldType)>>,
    /// Tag keys by table, in the order first met (shards, then series ids).
    tag_keys: BTreeMap<TableId, Vec<String>>,
    tag_seen: HashSet<(TableId, String)>,
    /// Highest tombstone id a part has applied.
    tombstones_applied: u64,
}

impl CatalogFacts {
    /// What a part's recovery section names.
    pub fn add_part(&mut self, recovery: &PartRecovery) {
        self.tombstones_applied = self
            .tombstones_applied
            .max(recovery.provenance.tombstones_applied);
        for table in &recovery.tables {
            self.names
                .entry(table.id)
                .or_insert_with(|| (table.database.clone(), table.name.clone()));
            let fields = self.fields.entry(table.id).or_default();
            for (id, ty, name) in &table.fields {
                fields.insert(*id, (Some(name.clone()), *ty));
            }
        }
    }

    /// A series of `table` with `tags`.
    pub fn add_series(&mut self, table: TableId, tags: &[(String, String)]) {
        if table == TableId::MAX {
            return;
        }
        let keys = self.tag_keys.entry(table).or_default();
        for (key, _) in tags {
            if self.tag_seen.insert((table, key.clone())) {
                keys.push(key.clone());
            }
        }
    }

    /// Fields of `table` that rows in a WAL have: named only if a part names them.
    pub fn add_wal_fields(&mut self, table: TableId, found: &BTreeMap<FieldId, FieldType>) {
        let fields = self.fields.entry(table).or_default();
        for (id, ty) in found {
            fields.entry(*id).or_insert((None, *ty));
        }
    }

    fn highest_table(&self) -> Option<TableId> {
        let ids = self
            .names
            .keys()
            .chain(self.fields.keys())
            .chain(self.tag_keys.keys());
        ids.copied().max()
    }
}

/// Rebuilds `catalog.json` in `first` from `facts` if it is damaged, or missing while the
/// shards hold tables.
pub(super) fn repair(
    first: &Path,
    facts: &CatalogFacts,
    report: &mut RepairReport,
) -> Result<(), StorageError> {
    let path = first.join(CATALOG_FILE);
    let why = if path.exists() {
        match Catalog::open(first) {
            Ok(_) => return Ok(()),
            Err(e) => e.to_string(),
        }
    } else {
        "missing".to_owned()
    };
    let Some(highest) = facts.highest_table() else {
        if path.exists() {
            report.lost.push(format!(
                "{}: damaged, and no part, series or WAL record names a table: nothing to \
                 rebuild it from ({why})",
                path.display()
            ));
        }
        return Ok(());
    };
    let mut tables = Vec::with_capacity(highest as usize + 1);
    let mut taken: BTreeMap<(String, String), usize> = BTreeMap::new();
    for id in 0..=highest {
        let table = rebuilt_table(id, facts, report);
        if !table.dropped {
            let key = (table.database.clone(), table.name.clone());
            if let Some(older) = taken.insert(key, tables.len()) {
                // Parts of a dropped table not purged yet: the later table has the name.
                let older: &mut RebuiltTable = &mut tables[older];
                report.lost.push(format!(
                    "table {}.{} (id {}) shares its name with table id {id}: taken as \
                     dropped, the rows its parts still hold are not shown",
                    older.database, older.name, older.id
                ));
                older.dropped = true;
            }
        }
        tables.push(table);
    }
    let live = tables.iter().filter(|t| !t.dropped).count();
    let next_tombstone_id = match facts.tombstones_applied {
        0 => 0,
        n => n + 1,
    };
    if path.exists() {
        set_damaged_aside(&path)?;
    }
    store_rebuilt(first, tables, next_tombstone_id)?;
    Catalog::open(first)?;
    report.rebuilt.push(format!(
        "{}: {live} tables, from the parts, the series and the WAL ({why})",
        path.display()
    ));
    report.lost.push(format!(
        "{}: what only it held is gone: databases' and tables' retention, downsamples, \
         databases without tables, the units of `time BIGINT` tables (integer times in \
         INSERT are nanoseconds again), and deletes not yet purged from the parts (their \
         rows are back: run the DELETE again)",
        path.display()
    ));
    Ok(())
}

/// Table `id` as the facts describe it.
fn rebuilt_table(id: TableId, facts: &CatalogFacts, report: &mut RepairReport) -> RebuiltTable {
    let tags = facts.tag_keys.get(&id).cloned().unwrap_or_default();
    let known_fields = facts.fields.get(&id);
    let (database, name) = match facts.names.get(&id) {
        Some(names) => names.clone(),
        None if known_fields.is_some() || !tags.is_empty() => {
            let name = format!("table_{id}");
            report.lost.push(format!(
                "table id {id}: has series but no part names it (rows only in the WAL): \
                 kept as {RECOVERED_DATABASE}.{name}"
            ));
            (RECOVERED_DATABASE.to_owned(), name)
        }
        None => {
            return RebuiltTable {
                id,
                database: String::new(),
                name: format!("dropped_{id}"),
                tags: Vec::new(),
                fields: Vec::new(),
                dropped: true,
            };
        }
    };
    let mut fields = Vec::new();
    if let Some(known) = known_fields {
        let highest = known.keys().copied().max().unwrap_or(0);
        for field in 0..=highest {
            let (name, ty) = match known.get(&field) {
                Some((Some(name), ty)) => (name.clone(), *ty),
                Some((None, ty)) => {
                    report.lost.push(format!(
                        "{database}.{name}: field id {field} ({ty}) is only in the WAL: kept \
                         as field_{field}"
                    ));
                    (format!("field_{field}"), *ty)
                }
                None => {
                    report.lost.push(format!(
                        "{database}.{name}: field id {field} is named nowhere: kept as an \
                         empty float field_{field}"
                    ));
                    (format!("field_{field}"), FieldType::Float)
                }
            };
            fields.push(FieldDef {
                id: field,
                name,
                field_type: ty,
            });
        }
    }
    RebuiltTable {
        id,
        database,
        name,
        tags,
        fields,
        dropped: false,
    }
}
