//! The latest-row cache: each series' newest row, so that `latest` costs a lookup per
//! series instead of decoding the newest chunk of every part.
//!
//! Built lazily: the first [`Shard::latest`] on a shard computes the latest row of every
//! series (of tables not dropped) with the scanning path over a snapshot and stores them.
//! While that computation runs outside the shard lock, writes are recorded in a pending
//! table and applied on top when the build is stored. Writes keep the cache current (see
//! [`LatestRow::apply`]); anything that removes rows of live tables (retention) or of
//! dropped ones (drop, purge, merges leaving dropped rows out) invalidates it, and the next
//! `latest` rebuilds it. Flushes and merges do not change what a read returns, so they keep
//! it. Reads of a dropped table's id bypass the cache (flushes drop those rows unseen).
//!
//! Memory: one row per series (time plus the values of the fields present in it): a 32-byte
//! slot per series id plus 40 bytes per field (strings add their length), about 430 bytes
//! per series of the TSBS cpu table (10 fields), 1.7 MB for 4,000 series.

use super::read::{ShardReadRequest, TagCopy};
use super::{Shard, ShardState};
use crate::column::{Column, SeriesData, Values};
use crate::error::StorageError;
use crate::model::{FieldId, SeriesId, Timestamp, Value};

/// A series' latest row: its time and the fields present at that time, sorted by field id.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatestRow {
    pub time: Timestamp,
    pub fields: Vec<(FieldId, Value)>,
}

impl LatestRow {
    fn new(time: Timestamp, fields: &[(FieldId, Value)]) -> Self {
        let mut row = LatestRow {
            time,
            fields: Vec::with_capacity(fields.len()),
        };
        row.overwrite(fields);
        row
    }

    /// Applies a written row: a later time replaces the row, the same time overwrites field
    /// by field (last write wins, as reads merge duplicates), an earlier time changes
    /// nothing.
    fn apply(&mut self, time: Timestamp, fields: &[(FieldId, Value)]) {
        if time > self.time {
            self.time = time;
            self.fields.clear();
            self.overwrite(fields);
        } else if time == self.time {
            self.overwrite(fields);
        }
    }

    fn overwrite(&mut self, fields: &[(FieldId, Value)]) {
        for (field, value) in fields {
            match self.fields.binary_search_by_key(field, |(f, _)| *f) {
                Ok(i) => self.fields[i].1 = value.clone(),
                Err(i) => self.fields.insert(i, (*field, value.clone())),
            }
        }
    }

    /// The last row of `data`.
    pub(super) fn from_data(data: &SeriesData) -> Option<Self> {
        let rows = data.rows();
        let time = *data.times.last()?;
        let fields = data
            .columns
            .iter()
            .filter(|c| c.is_present(rows - 1))
            .map(|c| (c.field, c.values.get(c.values.len() - 1)))
            .collect();
        Some(LatestRow { time, fields })
    }

    /// The row as one-row data with the columns of `fields` (all when `None`) that it has,
    /// as the scanning path returns it.
    pub(super) fn to_data(&self, fields: Option<&[FieldId]>) -> SeriesData {
        let wanted = |f: &FieldId| fields.is_none_or(|fields| fields.contains(f));
        // Sized up front: this runs once per series per call, and allocations dominate it.
        let mut columns = Vec::with_capacity(self.fields.iter().filter(|(f, _)| wanted(f)).count());
        for (field, value) in self.fields.iter().filter(|(f, _)| wanted(f)) {
            let values = match value {
                Value::Float(v) => Values::Float(vec![*v]),
                Value::Integer(v) => Values::Integer(vec![*v]),
                Value::Unsigned(v) => Values::Unsigned(vec![*v]),
                Value::Boolean(v) => Values::Boolean(vec![*v]),
                Value::String(v) => Values::String(vec![v.clone()]),
            };
            columns.push(Column {
                field: *field,
                values,
                present: None,
            });
        }
        SeriesData {
            times: vec![self.time],
            columns,
        }
    }
}

/// Latest rows by series id.
type Rows = Vec<Option<LatestRow>>;

fn apply_at(rows: &mut Rows, series: SeriesId, time: Timestamp, fields: &[(FieldId, Value)]) {
    let index = series as usize;
    if rows.len() <= index {
        rows.resize_with(index + 1, || None);
    }
    match &mut rows[index] {
        Some(row) => row.apply(time, fields),
        slot => *slot = Some(LatestRow::new(time, fields)),
    }
}

/// The cache, inside the shard state (guarded by the shard lock).
#[derive(Debug, Default)]
pub(crate) struct LatestCache {
    /// The latest row of every series with rows; `None` until built or after invalidation.
    rows: Option<Rows>,
    /// While a build runs: the writes since its snapshot, folded the same way.
    pending: Option<Rows>,
    /// Bumped by each invalidation: a build whose epoch changed is discarded.
    epoch: u64,
}

impl LatestCache {
    /// Records a written row (called under the shard lock, with the memtable append).
    pub fn record(&mut self, series: SeriesId, time: Timestamp, fields: &[(FieldId, Value)]) {
        if let Some(rows) = &mut self.rows {
            apply_at(rows, series, time, fields);
        } else if let Some(pending) = &mut self.pending {
            apply_at(pending, series, time, fields);
        }
    }

    /// The built rows by series id; `None` while not built (or invalidated).
    pub fn rows(&self) -> Option<&[Option<LatestRow>]> {
        self.rows.as_deref()
    }

    /// Forgets every row (and any build in progress); the next `latest` rebuilds.
    pub fn invalidate(&mut self) {
        self.rows = None;
        self.pending = None;
        self.epoch += 1;
    }
}

impl Shard {
    /// Forgets the latest-row cache (rows were removed).
    pub(crate) fn invalidate_latest(&self) {
        self.state.lock().latest.invalidate();
    }

    /// Builds the latest-row cache if it is not built and no other build runs.
    pub(super) fn build_latest(&self) -> Result<(), StorageError> {
        let all = ShardReadRequest {
            table: 0,
            predicate: None,
            start: Timestamp::MIN,
            end: Timestamp::MAX,
            fields: None,
            parts_only: false,
        };
        let (epoch, snapshot) = {
            let mut state = self.state.lock();
            if state.latest.rows.is_some() || state.latest.pending.is_some() {
                return Ok(());
            }
            let dropped = self.config.dropped.snapshot();
            let ids: Vec<SeriesId> = (0..state.index.series_count())
                .filter_map(|id| SeriesId::try_from(id).ok())
                .filter(|id| {
                    !state.index.is_retired(*id)
                        && state
                            .index
                            .table_of(*id)
                            .is_some_and(|t| !dropped.contains(t))
                })
                .collect();
            state.latest.pending = Some(Vec::new());
            // Local rows only: the series of every table are read at once here, and a
            // copy in the lake belongs to one table (`latest_each` decides per request
            // whether a cached row can answer).
            let snapshot = self
                .snapshot_locked(&state, ids.into_iter(), &all, TagCopy::Nothing)
                .without_cold();
            (state.latest.epoch, snapshot)
        };
        let computed = self.latest_from_snapshot(snapshot, &all);
        let mut state = self.state.lock();
        if state.latest.epoch != epoch {
            return Ok(()); // invalidated meanwhile: the build may hold removed rows
        }
        let pending = state.latest.pending.take().unwrap_or_default();
        let computed = computed?;
        let mut rows: Rows = Vec::new();
        for series in computed {
            if let Some(row) = LatestRow::from_data(&series.data) {
                let index = series.series as usize;
                if rows.len() <= index {
                    rows.resize_with(index + 1, || None);
                }
                rows[index] = Some(row);
            }
        }
        for (series, row) in pending.into_iter().enumerate() {
            if let (Some(row), Ok(series)) = (row, SeriesId::try_from(series)) {
                apply_at(&mut rows, series, row.time, &row.fields);
            }
        }
        state.latest.rows = Some(rows);
        Ok(())
    }
}

/// Canonical tags of `id`.
pub(super) fn tags_of(state: &ShardState, id: SeriesId) -> Vec<(String, String)> {
    state
        .index
        .tags_of(id)
        .map(|t| t.map(|(k, v)| (k.to_string(), v.to_string())).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> Value {
        Value::Float(v)
    }

    #[test]
    fn apply_follows_last_write_wins() {
        let mut row = LatestRow::new(10, &[(1, f(1.0)), (0, f(0.0))]);
        assert_eq!(row.fields, vec![(0, f(0.0)), (1, f(1.0))]);
        row.apply(9, &[(2, f(9.0))]);
        assert_eq!(row.time, 10);
        assert_eq!(row.fields.len(), 2);
        row.apply(10, &[(1, f(11.0)), (2, f(12.0))]);
        assert_eq!(row.fields, vec![(0, f(0.0)), (1, f(11.0)), (2, f(12.0))]);
        row.apply(11, &[(2, f(22.0)), (2, f(23.0))]);
        assert_eq!(row.time, 11);
        assert_eq!(row.fields, vec![(2, f(23.0))]);
        let data = row.to_data(None);
        assert_eq!(LatestRow::from_data(&data), Some(row.clone()));
        assert!(row.to_data(Some(&[0])).columns.is_empty());
        assert_eq!(row.to_data(Some(&[0])).times, vec![11]);
    }
}
