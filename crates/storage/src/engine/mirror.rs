//! A read-only engine as a mirror of the lake (`strata serve --lake-read-only`).
//!
//! A query server on the lake holds no rows: its lake mirror (`crates/lake`) reads the
//! lake's tables and files and registers here what reads need to find them — each table
//! with its tags and typed fields, each series in the shard that wrote it, and each copy
//! as a tiered copy of that shard — and reads then take every row from the lake, as they
//! take released partitions on the server that tiered them. Only a read-only engine
//! accepts these calls, so that a mirror can never change a server's own data.

use super::Engine;
use crate::error::StorageError;
use crate::manifest::TieredCopy;
use crate::model::{FieldType, TableId};
use crate::shard::Shard;

impl Engine {
    fn mirror_shard(&self, shard: usize) -> Result<&Shard, StorageError> {
        self.mirror_only()?;
        self.inner.shards.get(shard).ok_or_else(|| {
            StorageError::Invalid(format!(
                "the lake holds rows of shard {shard}, and this server has {} shards: \
                 restart it to take the lake's shard count",
                self.inner.shards.len()
            ))
        })
    }

    fn mirror_only(&self) -> Result<(), StorageError> {
        if self.inner.options.read_only {
            Ok(())
        } else {
            Err(StorageError::Invalid(
                "only a read-only engine mirrors the lake".into(),
            ))
        }
    }

    /// Makes table `database.table` exist with `tags` and typed `fields`, adding what it
    /// lacks (nothing is removed; fields keep the order given), durably. Returns its id.
    pub fn mirror_table(
        &self,
        database: &str,
        table: &str,
        tags: &[String],
        fields: &[(String, FieldType)],
    ) -> Result<TableId, StorageError> {
        self.mirror_only()?;
        if database.is_empty() || table.is_empty() {
            return Err(StorageError::Invalid(
                "a database and a table name are needed".into(),
            ));
        }
        let catalog = &self.inner.catalog;
        let id = catalog.get_or_create_table(database, table);
        catalog.ensure_tags(id, tags.iter().map(String::as_str))?;
        for (name, field_type) in fields {
            catalog.get_or_create_field(id, name, *field_type)?;
        }
        catalog.persist()?;
        Ok(id)
    }

    /// Drops `database.table`, which the lake no longer holds (as [`Engine::drop_table`]).
    pub fn mirror_drop_table(&self, database: &str, table: &str) -> Result<bool, StorageError> {
        self.mirror_only()?;
        Ok(self.drop_table_unchecked(database, table)?.is_some())
    }

    /// Registers the series of `table` (canonical tags) whose rows the lake holds from
    /// shard `shard`. Returns how many were new.
    pub fn mirror_series(
        &self,
        shard: usize,
        table: TableId,
        series: &[Vec<(String, String)>],
    ) -> Result<usize, StorageError> {
        let shard = self.mirror_shard(shard)?;
        let schema = self
            .inner
            .catalog
            .table(table)
            .ok_or_else(|| StorageError::Invalid(format!("no table {table}")))?;
        shard.mirror_series(table, &schema.name, series)
    }

    /// Makes `copies` (at most one per partition) the copies of `table` in the lake that
    /// reads of shard `shard` take rows from. Returns whether they changed.
    pub fn mirror_copies(
        &self,
        shard: usize,
        table: TableId,
        copies: Vec<TieredCopy>,
    ) -> Result<bool, StorageError> {
        self.mirror_shard(shard)?.mirror_copies(table, copies)
    }
}

/// Empties the data directories of a read-only engine being opened (their locks held):
/// what a mirror keeps there is rebuilt from the lake, and the lake's shard count may have
/// changed since. A directory holding anything but a mirror's files is refused and left
/// alone: a server's own data is never removed.
pub(super) fn clear_dirs(dirs: &[std::path::PathBuf]) -> Result<(), StorageError> {
    use crate::layout::{LOCK_FILE, MIRROR_FILE};
    for dir in dirs {
        let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
            .and_then(|entries| entries.collect())
            .map_err(|e| StorageError::io("cannot list data directory", dir, e))?;
        let others: Vec<&std::fs::DirEntry> = entries
            .iter()
            .filter(|e| e.file_name() != LOCK_FILE)
            .collect();
        let marked = others.iter().any(|e| e.file_name() == MIRROR_FILE);
        if !marked && !others.is_empty() {
            return Err(StorageError::Invalid(format!(
                "data directory \"{}\" holds data, and a read-only query server on the lake \
                 needs an empty directory of its own (it rebuilds what it keeps there from \
                 the lake at every start)",
                dir.display()
            )));
        }
        for entry in others {
            let path = entry.path();
            let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            removed.map_err(|e| StorageError::io("cannot empty mirror directory", &path, e))?;
        }
        let marker = dir.join(MIRROR_FILE);
        std::fs::write(
            &marker,
            "A read-only Strata query server's mirror of a lake: emptied at every start.\n",
        )
        .map_err(|e| StorageError::io("cannot write", &marker, e))?;
    }
    Ok(())
}
