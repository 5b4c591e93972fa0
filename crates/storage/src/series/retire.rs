//! Retiring series: a series whose every row is gone (deleted, expired, or of a dropped
//! table) leaves the canonical and alias maps and the postings, so that `SHOW SERIES`, tag
//! values and cardinalities stop counting it, and a later write of the same tags creates a
//! new series. Its slot stays (ids are dense and never reused; its tags stay readable),
//! and a retire record in the log keeps the retirement across restarts.

use roaring::RoaringBitmap;

use super::error::SeriesError;
use super::index::SeriesIndex;
use super::log;
use crate::model::SeriesId;

impl SeriesIndex {
    /// Retires the series of `ids` that exist, are not retired yet, and are in the log
    /// (a series created since the last persist is left for a later call); returns how
    /// many it retired. The retire records are appended and fsynced before the index
    /// changes, so on error nothing changed and the call can be retried. The caller makes
    /// sure no row of these series is left anywhere (parts, memtables).
    pub fn retire(&mut self, ids: &RoaringBitmap) -> Result<usize, SeriesError> {
        let limit = if self.log.is_some() {
            self.persisted
        } else {
            self.series_count()
        };
        let ids: Vec<SeriesId> = ids
            .iter()
            .take_while(|&id| (id as usize) < limit)
            .filter(|&id| !self.retired.contains(id))
            .collect();
        if ids.is_empty() {
            return Ok(0);
        }
        if let Some(file) = self.log.as_mut() {
            let mut buf = Vec::with_capacity(log::FRAME_LEN + 4 + 4 * ids.len());
            log::encode_retire(&mut buf, &ids);
            file.append_retire(&buf)?;
        }
        self.forget(&ids);
        Ok(ids.len())
    }

    /// Applies a retire record read from the log; the reason on error.
    pub(super) fn retire_loaded(&mut self, ids: &[SeriesId]) -> Result<(), String> {
        if let Some(&id) = ids
            .iter()
            .find(|&&id| id as usize >= self.series_count() || self.retired.contains(id))
        {
            return Err(format!(
                "retires series {id}, which does not exist or is retired already"
            ));
        }
        self.forget(ids);
        Ok(())
    }

    /// Whether series `id` was retired.
    pub fn is_retired(&self, id: SeriesId) -> bool {
        self.retired.contains(id)
    }

    /// Series created and not retired.
    pub fn live_series_count(&self) -> usize {
        self.series_count() - self.retired.len() as usize
    }

    /// Series retired so far (their slots stay in memory: a shape and value offset, and
    /// their tag value ids).
    pub fn retired_count(&self) -> usize {
        self.retired.len() as usize
    }

    /// Every series created and not retired.
    pub fn live_series(&self) -> RoaringBitmap {
        let mut all = RoaringBitmap::new();
        if let Ok(end) = u32::try_from(self.series_count()) {
            all.insert_range(0..end);
        }
        all - &self.retired
    }

    /// Takes `ids` (existing, not retired) out of the maps and postings.
    fn forget(&mut self, ids: &[SeriesId]) {
        for &id in ids {
            self.forget_canonical(id);
            let shape = &self.shapes[self.series_shape[id as usize] as usize];
            let start = self.series_values[id as usize] as usize;
            let values = &self.values[start..start + shape.len() - 1];
            if let Some(table) = self.tables.get_mut(&shape[0]) {
                table.remove(id, shape[1..].iter().copied().zip(values.iter().copied()));
            }
            self.alias_counts[id as usize] = 0;
            self.retired.insert(id);
        }
        let gone: RoaringBitmap = ids.iter().copied().collect();
        self.raw.retain(|_, id| !gone.contains(*id));
    }

    /// Removes series `id`'s canonical-map entry (or overflow entry). An overflow entry
    /// whose key hashes like the removed entry moves up into its place: lookups read the
    /// overflow map only after a canonical-map hit on another series.
    fn forget_canonical(&mut self, id: SeriesId) {
        let table = self.table_of_unchecked(id);
        let tags: Vec<(String, String)> = self
            .tags_unchecked(id)
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        // Cannot fail: the same tags passed these checks when the series was created.
        let Ok(hash) = self.canonicalize(table, &tags) else {
            return;
        };
        if self.canonical.get(&hash) == Some(&id) {
            self.canonical.remove(&hash);
            let seeds = self.seeds;
            let twin = self
                .canonical_overflow
                .keys()
                .find(|key| seeds.canonical(key) == hash)
                .cloned();
            if let Some(key) = twin
                && let Some(other) = self.canonical_overflow.remove(&key)
            {
                self.canonical.insert(hash, other);
            }
        } else {
            let key = std::mem::take(&mut self.key_buf);
            self.canonical_overflow.remove(&key);
            self.key_buf = key;
        }
    }
}
