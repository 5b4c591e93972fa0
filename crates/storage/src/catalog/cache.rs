//! [`SchemaCache`]: a write request's private copy of the ids it has resolved.

use foldhash::HashMap;

use super::{Catalog, SchemaError};
use crate::model::{FieldId, FieldType, TableId};

/// Per-request cache of one database's table and field ids, so the hot path takes no catalog
/// lock and allocates nothing per row. Valid as long as ids are never reused (they are not:
/// a dropped table keeps its id, so a request that raced with `DROP TABLE` writes rows no
/// table shows, which the next flush or merge discards).
#[derive(Debug)]
pub struct SchemaCache {
    database: String,
    tables: HashMap<String, TableId>,
    /// Per table: field name → id and type.
    fields: HashMap<TableId, HashMap<String, (FieldId, FieldType)>>,
    /// Per table: tag keys known to the catalog.
    tags_known: HashMap<TableId, Vec<String>>,
    /// The last table looked up, for runs of lines of one measurement.
    last_table: Option<(String, TableId)>,
}

impl SchemaCache {
    /// An empty cache for `database`.
    pub fn new(database: &str) -> Self {
        Self {
            database: database.to_string(),
            tables: HashMap::default(),
            fields: HashMap::default(),
            tags_known: HashMap::default(),
            last_table: None,
        }
    }

    /// The id of `table`, created in `catalog` if needed.
    pub fn table(&mut self, catalog: &Catalog, table: &str) -> TableId {
        if let Some((name, id)) = &self.last_table
            && name == table
        {
            return *id;
        }
        let id = match self.tables.get(table) {
            Some(id) => *id,
            None => {
                let id = catalog.get_or_create_table(&self.database, table);
                self.tables.insert(table.to_string(), id);
                id
            }
        };
        self.last_table = Some((table.to_string(), id));
        id
    }

    /// The field id for a value of `field_type`, created if needed.
    pub fn field(
        &mut self,
        catalog: &Catalog,
        table: TableId,
        name: &str,
        field_type: FieldType,
    ) -> Result<FieldId, SchemaError> {
        let fields = self.fields.entry(table).or_default();
        if let Some((id, known_type)) = fields.get(name)
            && *known_type == field_type
        {
            return Ok(*id);
        }
        let id = catalog.get_or_create_field(table, name, field_type)?;
        fields.insert(name.to_string(), (id, field_type));
        Ok(id)
    }

    /// Makes sure every key is a tag key of `table`.
    pub fn tags<'k>(
        &mut self,
        catalog: &Catalog,
        table: TableId,
        keys: impl Iterator<Item = &'k str> + Clone,
    ) -> Result<(), SchemaError> {
        let known = self.tags_known.entry(table).or_default();
        if keys.clone().all(|k| known.iter().any(|t| t == k)) {
            return Ok(());
        }
        catalog.ensure_tags(table, keys.clone())?;
        for key in keys {
            if !known.iter().any(|t| t == key) {
                known.push(key.to_string());
            }
        }
        Ok(())
    }
}
