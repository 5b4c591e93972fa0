//! A read-only engine's shard as a mirror of the lake: series and copies that the lake
//! holds, registered without rows (see `crate::engine::mirror`).

use std::borrow::Cow;
use std::cmp::Reverse;

use super::Shard;
use crate::error::StorageError;
use crate::ingest_series::{SeriesWrite, structured_key};
use crate::manifest::TieredCopy;
use crate::model::TableId;

impl Shard {
    /// Registers the series of `table` with these canonical tags (a series already known
    /// is found). They have no rows here: reads take them from the lake's copies. Returns
    /// how many were new.
    pub(crate) fn mirror_series(
        &self,
        table: TableId,
        table_name: &str,
        series: &[Vec<(String, String)>],
    ) -> Result<usize, StorageError> {
        let mut state = self.state.lock();
        let mut created = 0;
        let mut key = Vec::new();
        for tags in series {
            // The key a structured write of the series would have: no line's key equals it.
            key.clear();
            structured_key(
                &mut key,
                &SeriesWrite {
                    table: Cow::Borrowed(table_name),
                    tags: tags
                        .iter()
                        .map(|(k, v)| (Cow::Borrowed(k.as_str()), Cow::Borrowed(v.as_str())))
                        .collect(),
                    field: Cow::Borrowed(""),
                    samples: Vec::new(),
                },
            );
            let (_, new) = state.index.get_or_create(table, &key, tags)?;
            created += usize::from(new);
        }
        Ok(created)
    }

    /// Makes `copies` the copies of `table` that reads take rows from (at most one per
    /// partition), in the manifest and for reads. Returns whether anything changed.
    pub(crate) fn mirror_copies(
        &self,
        table: TableId,
        mut copies: Vec<TieredCopy>,
    ) -> Result<bool, StorageError> {
        copies.retain(|c| c.table == table);
        // Two copies of one partition cannot both be live in the lake (a commit replaces
        // one with the next); if a log said so, the later one holds more.
        copies.sort_by_key(|c| (c.partition, Reverse(c.order), Reverse(c.tombstone)));
        copies.dedup_by_key(|c| c.partition);
        let mut manifest = self.manifest.lock();
        let current: Vec<TieredCopy> = manifest
            .tiered
            .iter()
            .filter(|c| c.table == table)
            .copied()
            .collect();
        if current == copies {
            return Ok(false);
        }
        let mut next = manifest.clone();
        next.tiered.retain(|c| c.table != table);
        next.tiered.extend(copies);
        next.tiered.sort_by_key(|c| (c.partition, c.table));
        self.store_manifest(&mut manifest, next)?;
        Ok(true)
    }
}
