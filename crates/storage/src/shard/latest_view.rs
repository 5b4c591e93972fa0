//! Reading the latest-row cache without building a result per series: [`Shard::latest_each`]
//! hands each matching series' latest row to a visitor as a [`LatestView`] that borrows the
//! cached row and the series index's interned tags, under the shard lock. `latest` (owned
//! [`SeriesRows`]) is built on it.
//!
//! Series whose cached row lies at or after the end of the request's range, and every
//! series when the cache cannot serve the request (a dropped table's id, or another call's
//! build still running), take the scanning path outside the lock; their rows are then
//! visited the same way, under the lock again, with tags from the index (a series' tags
//! never change and its id is never reused, so they are the ones the scan saw).

use super::latest::LatestRow;
use super::read::{SeriesRows, ShardReadRequest, TagCopy};
use super::{Shard, ShardState};
use crate::error::StorageError;
use crate::model::{FieldId, SeriesId, Timestamp, Value};
use crate::series::SeriesIndex;

/// A tag key or value as a shard's series index stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagStr<'a> {
    /// The string's interned id in its shard: within one shard, equal ids name equal strings
    /// for as long as the engine is open (ids are never reused nor renumbered). Other shards
    /// number their strings independently.
    pub id: u32,
    /// The string.
    pub text: &'a str,
}

/// One series' latest row, borrowed from the cache (or from a scan) while the shard lock is
/// held: no allocation per series.
#[derive(Debug, Clone, Copy)]
pub struct LatestView<'a> {
    shard: usize,
    series: SeriesId,
    index: &'a SeriesIndex,
    row: &'a LatestRow,
    /// The request's projection; all fields when `None`.
    fields: Option<&'a [FieldId]>,
}

impl<'a> LatestView<'a> {
    /// The position of the series' shard in the engine (series ids are per shard).
    pub fn shard(&self) -> usize {
        self.shard
    }

    /// The series id within its shard.
    pub fn series(&self) -> SeriesId {
        self.series
    }

    /// The time of the latest row (within the request's range).
    pub fn time(&self) -> Timestamp {
        self.row.time
    }

    /// The series' tags in canonical order (sorted by key), with their interned ids.
    pub fn tags(&self) -> impl Iterator<Item = (TagStr<'a>, TagStr<'a>)> + 'a {
        let index: &'a SeriesIndex = self.index;
        index.tag_ids_of(self.series).into_iter().flatten().map(
            |((key_id, key), (value_id, value))| {
                (
                    TagStr {
                        id: key_id,
                        text: key,
                    },
                    TagStr {
                        id: value_id,
                        text: value,
                    },
                )
            },
        )
    }

    /// The fields the row has among the requested ones, sorted by field id.
    pub fn fields(&self) -> impl Iterator<Item = (FieldId, &'a Value)> + 'a {
        let wanted = self.fields;
        let row: &'a LatestRow = self.row;
        row.fields
            .iter()
            .filter(move |(f, _)| wanted.is_none_or(|w| w.contains(f)))
            .map(|(f, v)| (*f, v))
    }

    /// The value of `field` in the row; `None` when the row lacks it or it was not
    /// requested.
    pub fn field(&self, field: FieldId) -> Option<&'a Value> {
        if self.fields.is_some_and(|w| !w.contains(&field)) {
            return None;
        }
        let row: &'a LatestRow = self.row;
        let i = row.fields.binary_search_by_key(&field, |(f, _)| *f).ok()?;
        row.fields.get(i).map(|(_, v)| v)
    }

    /// The row as an owned [`SeriesRows`] (what `latest` returns).
    pub fn to_series_rows(&self) -> SeriesRows {
        SeriesRows {
            series: self.series,
            tags: self
                .tags()
                .map(|(k, v)| (k.text.to_string(), v.text.to_string()))
                .collect(),
            data: self.row.to_data(self.fields),
        }
    }
}

impl Shard {
    /// Hands the latest row of each series of the request (its time in the range) to
    /// `visit`, as [`Shard::latest`] finds them, without building them: from the cache
    /// (built on first use) in series id order, then the series that needed the scanning
    /// path, in series id order. `visit` runs under the shard lock: it must not call into
    /// the engine, and should be quick (writes to this shard wait for it).
    pub(crate) fn latest_each(
        &self,
        request: &ShardReadRequest<'_>,
        shard: usize,
        visit: &mut dyn FnMut(LatestView<'_>),
    ) -> Result<(), StorageError> {
        if self.config.dropped.contains(request.table) {
            return self.latest_each_uncached(request, shard, visit);
        }
        self.build_latest()?;
        let fallback = {
            let state = self.state.lock();
            let Some(rows) = state.latest.rows() else {
                // Another call is building it, or it was invalidated since.
                drop(state);
                return self.latest_each_uncached(request, shard, visit);
            };
            // The cache knows only local rows: where the request meets copies in the lake,
            // a cached row answers only if it is later than any row of those copies.
            let copies_end = self.copies_end(&state, request);
            let ids = series_of(&state, request);
            let mut fallback = Vec::new();
            for id in &ids {
                let row = rows.get(id as usize).and_then(Option::as_ref);
                let Some(row) = row.filter(|r| copies_end.is_none_or(|end| r.time >= end)) else {
                    if copies_end.is_some() {
                        fallback.push(id);
                    }
                    continue;
                };
                if row.time < request.start {
                    continue;
                }
                if row.time >= request.end {
                    fallback.push(id);
                    continue;
                }
                visit(LatestView {
                    shard,
                    series: id,
                    index: &state.index,
                    row,
                    fields: request.fields,
                });
            }
            (!fallback.is_empty()).then(|| {
                self.snapshot_locked(&state, fallback.into_iter(), request, TagCopy::Nothing)
            })
        };
        if let Some(snapshot) = fallback {
            let computed = self.latest_from_snapshot(snapshot, request)?;
            self.visit_computed(&computed, request, shard, visit);
        }
        Ok(())
    }

    /// [`Shard::latest_each`] by the scanning path alone.
    fn latest_each_uncached(
        &self,
        request: &ShardReadRequest<'_>,
        shard: usize,
        visit: &mut dyn FnMut(LatestView<'_>),
    ) -> Result<(), StorageError> {
        let snapshot = {
            let state = self.state.lock();
            let ids = series_of(&state, request);
            self.snapshot_locked(&state, ids.iter(), request, TagCopy::Nothing)
        };
        let computed = self.latest_from_snapshot(snapshot, request)?;
        self.visit_computed(&computed, request, shard, visit);
        Ok(())
    }

    /// Visits rows the scanning path computed (one row each, in series id order), with
    /// their tags from the index.
    fn visit_computed(
        &self,
        computed: &[SeriesRows],
        request: &ShardReadRequest<'_>,
        shard: usize,
        visit: &mut dyn FnMut(LatestView<'_>),
    ) {
        let rows: Vec<(SeriesId, LatestRow)> = computed
            .iter()
            .filter_map(|s| Some((s.series, LatestRow::from_data(&s.data)?)))
            .collect();
        if rows.is_empty() {
            return;
        }
        let state = self.state.lock();
        for (series, row) in &rows {
            visit(LatestView {
                shard,
                series: *series,
                index: &state.index,
                row,
                fields: request.fields,
            });
        }
    }

    /// The latest row of each series of the request (time range applies), in series id
    /// order, as owned rows: [`Shard::latest_each`] collected.
    pub(crate) fn latest(
        &self,
        request: &ShardReadRequest<'_>,
    ) -> Result<Vec<SeriesRows>, StorageError> {
        let mut out = Vec::new();
        self.latest_each(request, 0, &mut |view| out.push(view.to_series_rows()))?;
        // Cached rows come in id order, then those of the scanning path: one stable sort
        // (linear when there were none of the latter) restores id order.
        out.sort_by_key(|s| s.series);
        Ok(out)
    }
}

/// The series of the request's table that match its tag predicate.
fn series_of(state: &ShardState, request: &ShardReadRequest<'_>) -> roaring::RoaringBitmap {
    match request.predicate {
        Some(predicate) => state.index.matching(request.table, predicate),
        None => state.index.series_of_table(request.table),
    }
}
