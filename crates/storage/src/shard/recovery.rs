//! What a shard writes into a part's recovery section (see `part/recovery.rs`): the names
//! of its tables and fields, and the tags of its series, so that `strata repair` can
//! rebuild the catalog and the series log from the parts.

use super::Shard;
use crate::model::{SeriesId, TableId};
use crate::part::{PartWriter, TableNames};

impl Shard {
    /// The names of `tables` from the catalog (a dropped table has none and is left out).
    pub(super) fn table_names(&self, tables: impl IntoIterator<Item = TableId>) -> Vec<TableNames> {
        tables
            .into_iter()
            .filter_map(|id| self.config.catalog.table(id))
            .map(|schema| TableNames {
                id: schema.id,
                database: schema.database.clone(),
                name: schema.name.clone(),
                fields: schema
                    .fields
                    .iter()
                    .map(|f| (f.id, f.field_type, f.name.clone()))
                    .collect(),
            })
            .collect()
    }

    /// Records the tags of `series` (of `table`) in `writer`'s recovery section. The shard
    /// lock is taken for this one series, so a flush or merge never holds writers back for
    /// long.
    pub(super) fn add_series_key(&self, writer: &mut PartWriter, series: SeriesId, table: TableId) {
        let state = self.state.lock();
        if let Some(tags) = state.index.tags_of(series) {
            writer.add_series_key(series, table, tags);
        }
    }
}
