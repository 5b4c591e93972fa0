//! Disk use by table and by database, for `/metrics`, the console and Postgres's size
//! functions: each live part's bytes split by table (`PartReader::table_bytes`), summed
//! over the parts, and per database through the catalog.

use std::collections::BTreeMap;

use super::Engine;
use crate::model::TableId;

impl Engine {
    /// Bytes of live part files held by each table. A part holds every table its shard
    /// wrote in its time range, so its header, index and footer are shared among them in
    /// proportion to their data. Rows still only in memtables (and the WAL) are not in a
    /// part yet and count from their flush on.
    pub fn part_bytes_by_table(&self) -> BTreeMap<TableId, u64> {
        let mut by_table = BTreeMap::new();
        for shard in &self.inner.shards {
            for part in shard.parts().iter() {
                for &(table, bytes) in part.reader.table_bytes() {
                    *by_table.entry(table).or_insert(0u64) += bytes;
                }
            }
        }
        by_table
    }

    /// Bytes of live part files held by each database, sorted by name
    /// ([`Engine::part_bytes_by_table`] summed). Bytes of tables already dropped (still in
    /// parts until the next merge or purge rewrites them) are left out, so the sum can be
    /// below `EngineStats::part_bytes`.
    pub fn part_bytes_by_database(&self) -> Vec<(String, u64)> {
        let mut by_database = BTreeMap::<String, u64>::new();
        for (table, bytes) in self.part_bytes_by_table() {
            if let Some(database) = self.inner.catalog.database_of(table) {
                *by_database.entry(database).or_default() += bytes;
            }
        }
        by_database.into_iter().collect()
    }
}
