//! Retiring series whose every row is gone from the shard (see `series/retire.rs`): after
//! a rewrite or drop removed rows, the next maintenance round looks for series that no
//! part and no memtable holds.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use roaring::RoaringBitmap;

use super::Shard;
use crate::error::StorageError;
use crate::model::TableId;
use crate::series::{SeriesIndex, SeriesLimit};

impl Shard {
    /// Notes that some part's rows were removed (a rewrite left series out, or parts were
    /// dropped): the next [`Shard::retire_empty_series`] looks.
    pub(super) fn series_may_be_empty(&self) {
        self.series_sweep_due.store(true, Ordering::Release);
    }

    /// Counts this shard's live series, per table, into `limit` (at open).
    pub fn count_live_series(&self, limit: &SeriesLimit) {
        let state = self.state.lock();
        for (table, n) in per_table(&state.index, &state.index.live_series()) {
            limit.count(table, n);
        }
    }

    /// If rows were removed since the last look (or since open), retires the series that
    /// no live part, no frozen memtable and the active memtable do not hold; returns how
    /// many it retired.
    pub fn retire_empty_series(&self) -> Result<usize, StorageError> {
        if !self.series_sweep_due.swap(false, Ordering::AcqRel) {
            return Ok(0);
        }
        let result = self.retire_unheld();
        if result.is_err() {
            self.series_may_be_empty();
        }
        result
    }

    fn retire_unheld(&self) -> Result<usize, StorageError> {
        // The part set changes only under the manifest lock: held, no flush can publish a
        // part between the look at the parts and the one at the memtables.
        let _manifest = self.manifest.lock();
        let mut held = RoaringBitmap::new();
        for part in self.parts().iter() {
            held.extend(part.reader.series_ids().map(|(series, _)| series));
        }
        // Under the shard lock no write can add rows of a series between this look and the
        // retirement.
        let mut state = self.state.lock();
        let memtables =
            std::iter::once(&state.active).chain(state.frozen.iter().map(|f| &f.memtable));
        for memtable in memtables {
            held.extend(memtable.series().into_iter().map(|(series, _)| series));
        }
        let mut empty = state.index.live_series();
        empty -= &held;
        if !state.tiered.is_empty() {
            // Series of tables the lake holds copies of keep their ids: reads of the
            // copies find their rows by the index's tags (`cold.rs`).
            let tiered: RoaringBitmap = state.tiered.iter().map(|c| c.table).collect();
            let keep: RoaringBitmap = empty
                .iter()
                .filter(|id| {
                    state
                        .index
                        .table_of(*id)
                        .is_some_and(|t| tiered.contains(t))
                })
                .collect();
            empty -= keep;
        }
        if empty.is_empty() {
            return Ok(0);
        }
        // Counted before they leave the index, which then no longer knows their tables.
        let released = match self.config.series_limit {
            Some(_) => per_table(&state.index, &empty),
            None => HashMap::new(),
        };
        let retired = state.index.retire(&empty)?;
        drop(state);
        if let Some(limit) = &self.config.series_limit {
            for (table, n) in released {
                limit.release(table, n);
            }
        }
        if retired > 0 {
            tracing::info!(
                "shard {}: {retired} series with no row left retired from the series index",
                self.config.id
            );
        }
        self.stats
            .series_retired
            .fetch_add(retired as u64, Ordering::Relaxed);
        Ok(retired)
    }
}

/// How many of `ids` each table has.
fn per_table(index: &SeriesIndex, ids: &RoaringBitmap) -> HashMap<TableId, u64> {
    let mut counts = HashMap::new();
    for id in ids {
        if let Some(table) = index.table_of(id) {
            *counts.entry(table).or_default() += 1;
        }
    }
    counts
}
