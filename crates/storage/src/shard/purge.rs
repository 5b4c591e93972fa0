//! Purging the rows of dropped tables from a shard's parts.
//!
//! `DROP TABLE` only marks the table dropped in the catalog; from then on flushes and
//! merges leave its rows out of the parts they write. A purge finishes the job for parts
//! that no merge would touch soon: every live part holding a series of a dropped table is
//! rewritten without it (or removed, when nothing else is in it), one part at a time, with
//! the same crash safety as a merge (new part fsynced, manifest swapped, old file deleted).
//! Each shard remembers the [`crate::catalog::DroppedTables::generation`] it last purged, so
//! a maintenance round with no new drop costs one atomic load.

use std::sync::atomic::Ordering;

use super::Shard;
use crate::error::StorageError;

impl Shard {
    /// Rewrites every live part that holds rows of a dropped table, unless that was done
    /// for every drop so far; returns how many parts were rewritten or removed.
    pub fn purge_dropped(&self) -> Result<usize, StorageError> {
        let generation = self.config.dropped.generation();
        if self.purged_generation.load(Ordering::Acquire) == generation {
            return Ok(0);
        }
        // Under the manifest lock no flush is writing a part from an older snapshot of
        // the dropped tables: every part flushes wrote is in the list below. A merge may
        // be writing one: if its run holds rows of a dropped table, the run is rewritten
        // here, and the merge, finding its run gone, throws its part away.
        let mut manifest = self.manifest.lock();
        let generation = self.config.dropped.generation();
        let dropped = self.config.dropped.snapshot();
        let mut rewritten = 0;
        if !dropped.is_empty() {
            // Their copies in the lake are read no more (the lake's table stays: docs/lake.md).
            self.forget_tiered(&mut manifest, &mut |c| !dropped.contains(c.table))?;
            let parts = self.parts();
            for part in parts.iter() {
                if part.reader.tables().any(|table| dropped.contains(table)) {
                    self.rewrite_run(
                        &mut manifest,
                        std::slice::from_ref(part),
                        0,
                        &roaring::RoaringBitmap::new(),
                    )?;
                    rewritten += 1;
                }
            }
        }
        self.purged_generation.store(generation, Ordering::Release);
        Ok(rewritten)
    }
}
