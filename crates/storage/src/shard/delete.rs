//! Deletes in a shard: leaving tombstoned rows out of reads, merges and rewrites, and
//! purging them from parts (see `catalog/tombstones.rs` for when a tombstone applies).
//!
//! A read resolves each tombstone's series under the shard lock once ([`DeleteMark`]);
//! per part and series it then asks [`deleted_ranges`], which is empty (and costs a loop
//! over no marks) unless a delete is in force.

use std::sync::atomic::Ordering;

use roaring::RoaringBitmap;

use super::{Shard, ShardState};
use crate::catalog::Tombstone;
use crate::column::SeriesData;
use crate::error::StorageError;
use crate::manifest::PartEntry;
use crate::model::{SeriesId, Timestamp};

/// A tombstone with the series of this shard it deletes from.
#[derive(Debug, Clone)]
pub(crate) struct DeleteMark {
    pub tombstone: Tombstone,
    pub series: RoaringBitmap,
}

/// The marks of `tombstones` over the series index (the caller holds the shard lock).
pub(super) fn marks_locked(state: &ShardState, tombstones: &[Tombstone]) -> Vec<DeleteMark> {
    tombstones
        .iter()
        .filter_map(|t| {
            let series = match &t.predicate {
                Some(predicate) => state.index.matching(t.table, predicate),
                None => state.index.series_of_table(t.table),
            };
            (!series.is_empty()).then(|| DeleteMark {
                tombstone: t.clone(),
                series,
            })
        })
        .collect()
}

/// The time ranges (start inclusive, end exclusive) of `series` that the marks delete
/// from the part `entry` of shard `shard`, sorted by start.
pub(super) fn deleted_ranges(
    marks: &[DeleteMark],
    shard: usize,
    entry: &PartEntry,
    series: SeriesId,
) -> Vec<(Timestamp, Timestamp)> {
    deleted_ranges_at(
        marks,
        shard,
        (entry.order, entry.tombstones_applied),
        (entry.min_time, entry.max_time),
        series,
    )
}

/// [`deleted_ranges`] for rows of precedence `order` written without the tombstones up to
/// `applied`, with times in `min..=max` (a part, or a copy in the lake).
pub(super) fn deleted_ranges_at(
    marks: &[DeleteMark],
    shard: usize,
    (order, applied): (u64, u64),
    (min, max): (Timestamp, Timestamp),
    series: SeriesId,
) -> Vec<(Timestamp, Timestamp)> {
    if marks.is_empty() {
        return Vec::new();
    }
    let mut ranges: Vec<(Timestamp, Timestamp)> = marks
        .iter()
        .filter(|m| {
            m.tombstone.applies_to(shard, order, applied, min, max) && m.series.contains(series)
        })
        .map(|m| (m.tombstone.start, m.tombstone.end))
        .collect();
    ranges.sort_unstable();
    ranges
}

/// Whether any of `ranges` meets `min..=max`.
pub(super) fn overlaps(ranges: &[(Timestamp, Timestamp)], min: Timestamp, max: Timestamp) -> bool {
    ranges
        .iter()
        .any(|(start, end)| min < *end && max >= *start)
}

/// `data` without the rows whose time falls in one of `ranges` (sorted by start).
pub(super) fn without_ranges(data: SeriesData, ranges: &[(Timestamp, Timestamp)]) -> SeriesData {
    let (Some(&first), Some(&last)) = (data.times.first(), data.times.last()) else {
        return data;
    };
    if !overlaps(ranges, first, last) {
        return data;
    }
    let mut pieces: Vec<SeriesData> = Vec::new();
    let mut from = 0;
    for (start, end) in ranges {
        let cut = data.times.partition_point(|t| t < start).max(from);
        if cut > from {
            pieces.push(data.slice_rows(from, cut));
        }
        from = data.times.partition_point(|t| t < end).max(from);
    }
    if from < data.rows() {
        pieces.push(data.slice_rows(from, data.rows()));
    }
    match pieces.len() {
        0 => SeriesData::default(),
        1 => pieces.pop().unwrap_or_default(),
        _ => SeriesData::merge(&pieces.iter().collect::<Vec<_>>()),
    }
}

impl Shard {
    /// The delete marks in force over this shard's index (empty, at no cost, when there is
    /// no tombstone).
    pub(super) fn marks(&self, state: &ShardState) -> Vec<DeleteMark> {
        let tombstones = self.config.tombstones.snapshot();
        if tombstones.is_empty() {
            return Vec::new();
        }
        marks_locked(state, &tombstones)
    }

    /// Rewrites every live part holding rows some tombstone deletes, unless that was done
    /// for every tombstone so far (then `None`); returns how many parts were rewritten or
    /// removed.
    pub fn purge_deleted(&self) -> Result<Option<usize>, StorageError> {
        let generation = self.config.tombstones.generation();
        if self.deleted_generation.load(Ordering::Acquire) == generation {
            return Ok(None);
        }
        let mut manifest = self.manifest.lock();
        let generation = self.config.tombstones.generation();
        let marks = self.marks(&self.state.lock());
        let mut rewritten = 0;
        if !marks.is_empty() {
            for part in self.parts().iter() {
                let holds_deleted = part.reader.series_ids().any(|(series, _)| {
                    !deleted_ranges(&marks, self.config.id, &part.entry, series).is_empty()
                });
                if holds_deleted {
                    self.rewrite_run(
                        &mut manifest,
                        std::slice::from_ref(part),
                        0,
                        &RoaringBitmap::new(),
                    )?;
                    rewritten += 1;
                }
            }
        }
        self.deleted_generation.store(generation, Ordering::Release);
        Ok(Some(rewritten))
    }

    /// Whether some live part of this shard may still hold rows `tombstone` deletes: a
    /// part it applies to holding a series its predicate matches (the purge rewrites
    /// exactly those), or a copy in the lake of the table it applies to.
    pub fn subject_to(&self, tombstone: &Tombstone) -> bool {
        let (marks, tiered) = {
            let state = self.state.lock();
            let marks = marks_locked(&state, std::slice::from_ref(tombstone));
            (marks, std::sync::Arc::clone(&state.tiered))
        };
        if marks.is_empty() {
            return false;
        }
        // A copy in the lake written before the delete keeps the rows until the lake
        // copies the partition again (with the tombstone) and the copy is recorded anew.
        let partition_ns = self.config.partition_ns;
        if tiered.iter().any(|c| {
            let (start, end) = super::cold::partition_range(c.partition, partition_ns);
            c.table == tombstone.table
                && tombstone.applies_to(self.config.id, c.order, c.tombstone, start, end - 1)
        }) {
            return true;
        }
        self.parts().iter().any(|part| {
            part.reader.series_ids().any(|(series, _)| {
                !deleted_ranges(&marks, self.config.id, &part.entry, series).is_empty()
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::without_ranges;
    use crate::column::SeriesData;

    fn data(times: &[i64]) -> SeriesData {
        SeriesData {
            times: times.to_vec(),
            columns: Vec::new(),
        }
    }

    #[test]
    fn ranges_cut_rows_out_at_their_ends_exactly() {
        let all = data(&[1, 2, 3, 5, 8, 13, 21]);
        assert_eq!(without_ranges(all.clone(), &[]).times, all.times);
        assert_eq!(
            without_ranges(all.clone(), &[(2, 5)]).times,
            vec![1, 5, 8, 13, 21]
        );
        assert_eq!(
            without_ranges(all.clone(), &[(0, 2), (4, 9), (21, 22)]).times,
            vec![2, 3, 13]
        );
        assert_eq!(
            without_ranges(all.clone(), &[(1, 3), (2, 6)]).times,
            vec![8, 13, 21]
        );
        assert!(
            without_ranges(all.clone(), &[(i64::MIN, i64::MAX)])
                .times
                .is_empty()
        );
        assert_eq!(without_ranges(all, &[(30, 40)]).times.len(), 7);
    }
}
