//! Reading a shard: the rows of chosen series over a time range, memtables included, and
//! the latest row of each series.
//!
//! A read takes a consistent snapshot under the shard lock (series ids, the part list, the
//! frozen memtables, and a copy of the active memtable's rows for those series), releases
//! the lock, and does all decoding outside it. Where the same (series, time) is in several
//! places, parts (by order), then frozen memtables (oldest first), then the active memtable
//! are applied in that order: the last write wins.

use std::sync::Arc;

use super::cold::{copies_in, partition_range};
use super::delete::{DeleteMark, deleted_ranges, overlaps, without_ranges};
use super::latest::tags_of;
use super::part_entries::PartEntries;
use super::{Frozen, LivePart, Shard, ShardState};
use crate::column::SeriesData;
use crate::error::StorageError;
use crate::manifest::TieredCopy;
use crate::model::{FieldId, SeriesId, TableId, Timestamp};
use crate::series::TagPredicate;

/// What to read from one shard.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShardReadRequest<'a> {
    pub table: TableId,
    /// Series filter; all series of the table when `None`.
    pub predicate: Option<&'a TagPredicate>,
    /// Inclusive start.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// Columns to decode; all when `None`.
    pub fields: Option<&'a [FieldId]>,
    /// Read the parts only, leaving out rows still in memtables (downsamples fold rows once
    /// flushed, and copying a memtable's rows holds the shard's lock).
    pub parts_only: bool,
}

/// The rows of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRows {
    /// Series id within its shard.
    pub series: SeriesId,
    /// Tags in canonical order (sorted by key).
    pub tags: Vec<(String, String)>,
    /// The rows.
    pub data: SeriesData,
}

/// A series to read: id, canonical tags, and its rows in the active memtable.
type SnapshotSeries = (SeriesId, Vec<(String, String)>, Option<SeriesData>);

pub(super) struct Snapshot {
    series: Vec<SnapshotSeries>,
    parts: Arc<Vec<LivePart>>,
    frozen: Vec<Arc<Frozen>>,
    /// Deletes in force over these parts (empty when there are none).
    pub(super) marks: Vec<DeleteMark>,
    /// The table's copies in the lake that meet the range (`cold.rs`); when there are
    /// some, `series` is sorted by canonical tags, and `cold_tags` holds them.
    pub(super) cold: Vec<TieredCopy>,
    pub(super) cold_tags: Vec<Vec<(String, String)>>,
}

impl Snapshot {
    /// The snapshot without the copies in the lake: reads of it see local rows only.
    pub(super) fn without_cold(mut self) -> Self {
        self.cold.clear();
        self.cold_tags.clear();
        self
    }
}

/// The parts whose time range meets the request's, in precedence order (oldest first).
fn parts_in_range<'p>(parts: &'p [LivePart], request: &ShardReadRequest<'_>) -> Vec<&'p LivePart> {
    let mut parts: Vec<&LivePart> = parts
        .iter()
        .filter(|p| p.entry.max_time >= request.start && p.entry.min_time < request.end)
        .collect();
    parts.sort_by_key(|p| p.entry.order);
    parts
}

impl Shard {
    /// Where a read of `snapshot`'s series over `parts`, series by series, takes their
    /// index entries from (`part_entries.rs`).
    fn part_entries<'p>(
        &self,
        parts: &[&'p LivePart],
        snapshot: &Snapshot,
    ) -> Result<PartEntries<'p>, StorageError> {
        let series = snapshot.series.iter().map(|(series, _, _)| *series);
        PartEntries::new(parts, series, self.config.read_index_bytes_max)
    }
}

/// Which tags a snapshot copies for each series (copying all of them costs two strings
/// per tag per series).
#[derive(Debug, Clone, Copy)]
pub(super) enum TagCopy<'a> {
    /// None.
    Nothing,
    /// Every tag.
    All,
    /// The tags of these keys the series has, in canonical order.
    Keys(&'a [String]),
}

impl Shard {
    fn snapshot(&self, request: &ShardReadRequest<'_>, tags: TagCopy<'_>) -> Snapshot {
        let state = self.state.lock();
        let ids = match request.predicate {
            Some(predicate) => state.index.matching(request.table, predicate),
            None => state.index.series_of_table(request.table),
        };
        self.snapshot_locked(&state, ids.iter(), request, tags)
    }

    /// A time no row of `request`'s range in this shard is older than: the oldest part or
    /// memtable overlapping the range (every table's rows, so a bound, not the first row of
    /// `request.table`), never before `request.start`; `None` when nothing overlaps. Reads
    /// only the part list, the memtables' time ranges and the table's copies in the lake
    /// (their partitions' ranges), under the lock, decoding nothing.
    pub(crate) fn earliest_time(&self, request: &ShardReadRequest<'_>) -> Option<Timestamp> {
        let state = self.state.lock();
        let overlaps = |(lo, hi): (Timestamp, Timestamp)| hi >= request.start && lo < request.end;
        let parts = state
            .parts
            .iter()
            .map(|p| (p.entry.min_time, p.entry.max_time));
        let memtables = state
            .frozen
            .iter()
            .filter_map(|f| f.memtable.time_range())
            .chain(state.active.time_range());
        let copies = copies_in(&state, request, self.config.partition_ns)
            .into_iter()
            .map(|c| partition_range(c.partition, self.config.partition_ns))
            .map(|(start, end)| (start, end - 1));
        parts
            .chain(memtables)
            .chain(copies)
            .filter(|range| overlaps(*range))
            .map(|(lo, _)| lo.max(request.start))
            .min()
    }

    /// A snapshot of series `ids` with the tags `tags` says, taken under the shard lock the
    /// caller holds.
    pub(super) fn snapshot_locked(
        &self,
        state: &ShardState,
        ids: impl Iterator<Item = SeriesId>,
        request: &ShardReadRequest<'_>,
        tags: TagCopy<'_>,
    ) -> Snapshot {
        let series: Vec<SnapshotSeries> = ids
            .map(|id| {
                let tags = match tags {
                    TagCopy::Nothing => Vec::new(),
                    TagCopy::All => tags_of(state, id),
                    TagCopy::Keys(keys) => state
                        .index
                        .tags_of(id)
                        .map(|t| {
                            t.filter(|(k, _)| keys.iter().any(|key| key == k))
                                .map(|(k, v)| (k.to_string(), v.to_string()))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                let active = (!request.parts_only)
                    .then(|| state.active.series_data_in(id, request.start, request.end))
                    .flatten()
                    .map(|d| d.project(request.fields))
                    .filter(|d| d.rows() > 0);
                (id, tags, active)
            })
            .collect();
        let cold = copies_in(state, request, self.config.partition_ns);
        let (series, cold_tags) = if cold.is_empty() {
            (series, Vec::new())
        } else {
            // The lake's files are sorted by tags: so are the series read from them.
            let mut sorted: Vec<(Vec<(String, String)>, SnapshotSeries)> = series
                .into_iter()
                .map(|s| (tags_of(state, s.0), s))
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            let (tags, series) = sorted.into_iter().unzip();
            (series, tags)
        };
        Snapshot {
            series,
            cold,
            cold_tags,
            parts: Arc::clone(&state.parts),
            frozen: if request.parts_only {
                Vec::new()
            } else {
                state.frozen.clone()
            },
            marks: self.marks(state),
        }
    }

    /// The rows of every series of the request with at least one row in the range.
    pub(crate) fn read(
        &self,
        request: &ShardReadRequest<'_>,
    ) -> Result<Vec<SeriesRows>, StorageError> {
        let mut out = Vec::new();
        self.read_each(request, &mut |rows| {
            out.push(rows);
            Ok(true)
        })?;
        Ok(out)
    }

    /// Hands the rows of each series of the request with at least one row in the range to
    /// `visit`, one series at a time, decoding each only when its turn comes; stops early
    /// when `visit` returns `false`. Memory stays at one series' rows (plus the snapshot),
    /// whatever the size of the shard.
    pub(crate) fn read_each(
        &self,
        request: &ShardReadRequest<'_>,
        visit: &mut dyn FnMut(SeriesRows) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let snapshot = self.snapshot(request, TagCopy::All);
        self.read_snapshot_each(snapshot, request, visit)
    }

    /// As [`Shard::read_each`] over the series `ids`, in that order (ids of other tables
    /// or unknown ones give no rows).
    pub(crate) fn read_series_each(
        &self,
        request: &ShardReadRequest<'_>,
        ids: &[SeriesId],
        visit: &mut dyn FnMut(SeriesRows) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let snapshot = {
            let state = self.state.lock();
            let ids = ids
                .iter()
                .copied()
                .filter(|id| state.index.table_of(*id) == Some(request.table));
            self.snapshot_locked(&state, ids, request, TagCopy::All)
        };
        self.read_snapshot_each(snapshot, request, visit)
    }

    fn read_snapshot_each(
        &self,
        snapshot: Snapshot,
        request: &ShardReadRequest<'_>,
        visit: &mut dyn FnMut(SeriesRows) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let parts = parts_in_range(&snapshot.parts, request);
        let mut entries = self.part_entries(&parts, &snapshot)?;
        let mut cold = self.open_cold(&snapshot, request, false)?;
        for (position, (series, tags, active)) in snapshot.series.into_iter().enumerate() {
            let mut runs: Vec<SeriesData> = cold.take(position, series, &snapshot.marks)?;
            let extracts = entries.at(position)?;
            for (part_index, part) in parts.iter().enumerate() {
                if let Some(data) = part.reader.read_series_from(
                    extracts.map(|e| &e[part_index]),
                    series,
                    request.start,
                    request.end,
                    request.fields,
                )? {
                    let deleted =
                        deleted_ranges(&snapshot.marks, self.config.id, &part.entry, series);
                    let data = without_ranges(data, &deleted);
                    if data.rows() > 0 {
                        runs.push(data);
                    }
                }
            }
            runs.extend(memtable_runs(&snapshot.frozen, series, request, active));
            let data = match runs.len() {
                0 => continue,
                1 => runs.pop().unwrap_or_default(),
                _ => SeriesData::merge(&runs.iter().collect::<Vec<_>>()),
            };
            if !visit(SeriesRows { series, tags, data })? {
                break;
            }
        }
        Ok(())
    }

    /// The latest row of each series of the request (time range applies), without the
    /// latest-row cache. Reads the newest data first and stops per series as soon as the
    /// latest time is known, so it decodes at most the last chunk of a series per part
    /// instead of scanning.
    pub(crate) fn latest_uncached(
        &self,
        request: &ShardReadRequest<'_>,
    ) -> Result<Vec<SeriesRows>, StorageError> {
        self.latest_from_snapshot(self.snapshot(request, TagCopy::All), request)
    }

    /// The latest row in the request's range of each series of `snapshot` that has one
    /// (one row each).
    pub(super) fn latest_from_snapshot(
        &self,
        snapshot: Snapshot,
        request: &ShardReadRequest<'_>,
    ) -> Result<Vec<SeriesRows>, StorageError> {
        let parts = parts_in_range(&snapshot.parts, request);
        let mut entries = self.part_entries(&parts, &snapshot)?;
        let mut cold = self.open_cold(&snapshot, request, true)?;
        let mut out = Vec::new();
        for (position, (series, tags, active)) in snapshot.series.into_iter().enumerate() {
            let extracts = entries.at(position)?;
            let mut runs: Vec<SeriesData> = cold
                .take(position, series, &snapshot.marks)?
                .into_iter()
                .map(|data| {
                    let rows = data.rows();
                    data.slice_rows(rows - 1, rows)
                })
                .collect();
            for (part_index, part) in parts.iter().enumerate() {
                let extract = extracts.map(|e| &e[part_index]);
                let deleted = deleted_ranges(&snapshot.marks, self.config.id, &part.entry, series);
                if !deleted.is_empty() {
                    // Deleted rows may hide the latest: read the part's rows in range whole.
                    if let Some(data) = part.reader.read_series_from(
                        extract,
                        series,
                        request.start,
                        request.end,
                        request.fields,
                    )? {
                        let data = without_ranges(data, &deleted);
                        let rows = data.rows();
                        if rows > 0 {
                            runs.push(data.slice_rows(rows - 1, rows));
                        }
                    }
                    continue;
                }
                // Only the newest chunk within the range can hold the series' latest row in
                // this part.
                let last = request.end.saturating_sub(1);
                let chunks = part.reader.chunks_from(
                    extract,
                    series,
                    request.start,
                    last,
                    request.fields,
                )?;
                let Some(chunk) = chunks
                    .iter()
                    .rev()
                    .find(|c| c.min_time < request.end && c.max_time >= request.start)
                else {
                    continue;
                };
                let data = part.reader.read_chunk(chunk, request.fields)?;
                let data = data.slice_time(request.start, request.end);
                if data.rows() > 0 {
                    let rows = data.rows();
                    runs.push(data.slice_rows(rows - 1, rows));
                }
            }
            for data in memtable_runs(&snapshot.frozen, series, request, active) {
                let rows = data.rows();
                runs.push(data.slice_rows(rows - 1, rows));
            }
            // The latest time wins; among runs with that time, merge applies precedence.
            let Some(latest) = runs.iter().filter_map(|r| r.times.last().copied()).max() else {
                continue;
            };
            let at_latest: Vec<&SeriesData> = runs
                .iter()
                .filter(|r| r.times.last() == Some(&latest))
                .collect();
            let data = SeriesData::merge(&at_latest);
            let rows = data.rows();
            let data = data.slice_rows(rows - 1, rows);
            out.push(SeriesRows { series, tags, data });
        }
        Ok(out)
    }
}

/// A series' rows in a range, split for aggregation: whole chunks whose pre-aggregates can
/// be used as they are, and the rest decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesSummary {
    /// Series id within its shard.
    pub series: SeriesId,
    /// Tags in canonical order (those asked for, when the caller named some).
    pub tags: Vec<(String, String)>,
    /// Chunks lying wholly inside the range that no other data of the series overlaps in
    /// time, so their pre-aggregates are exact for their rows.
    pub chunks: Vec<crate::part::ChunkMeta>,
    /// Every other row of the series in the range (memtables, partial or overlapped
    /// chunks), decoded and merged (last write wins).
    pub rest: SeriesData,
}

impl Shard {
    /// The rows of each series of the request, as whole clean chunks (pre-aggregates) plus
    /// decoded rest. Aggregates computed from `chunks` pre-aggregates and `rest` equal those
    /// computed from [`Shard::read`].
    /// Only chunks that `usable` accepts are kept whole.
    pub(crate) fn summarize(
        &self,
        request: &ShardReadRequest<'_>,
        usable: &dyn Fn(&crate::part::ChunkMeta) -> bool,
    ) -> Result<Vec<SeriesSummary>, StorageError> {
        let mut out = Vec::new();
        self.summarize_each(request, usable, None, &mut |summary| {
            out.push(summary);
            Ok(true)
        })?;
        Ok(out)
    }

    /// What [`Shard::summarize`] returns, handed to `visit` one series at a time as soon as
    /// each is built; stops early when `visit` returns `false`. The caller can fold a series
    /// while its rows are still in cache, and memory stays at one series (plus the
    /// snapshot), whatever the size of the shard. Summaries carry the tags of `tag_keys`
    /// only (all when `None`).
    pub(crate) fn summarize_each(
        &self,
        request: &ShardReadRequest<'_>,
        usable: &dyn Fn(&crate::part::ChunkMeta) -> bool,
        tag_keys: Option<&[String]>,
        visit: &mut dyn FnMut(SeriesSummary) -> Result<bool, StorageError>,
    ) -> Result<(), StorageError> {
        let tags = tag_keys.map_or(TagCopy::All, TagCopy::Keys);
        let snapshot = self.snapshot(request, tags);
        let parts = parts_in_range(&snapshot.parts, request);
        let mut entries = self.part_entries(&parts, &snapshot)?;
        let mut cold = self.open_cold(&snapshot, request, false)?;
        for (position, (series, tags, active)) in snapshot.series.into_iter().enumerate() {
            let extracts = entries.at(position)?;
            let memtable_runs = memtable_runs(&snapshot.frozen, series, request, active);
            // The lake's rows: no pre-aggregates, and under every part.
            let cold_runs = cold.take(position, series, &snapshot.marks)?;
            // Every chunk of the series in range, with its part's precedence.
            let mut chunks: Vec<(usize, crate::part::ChunkMeta)> = Vec::new();
            let deleted: Vec<Vec<(Timestamp, Timestamp)>> = parts
                .iter()
                .map(|p| deleted_ranges(&snapshot.marks, self.config.id, &p.entry, series))
                .collect();
            for (part_index, part) in parts.iter().enumerate() {
                let last = request.end.saturating_sub(1);
                for chunk in part.reader.chunks_from(
                    extracts.map(|e| &e[part_index]),
                    series,
                    request.start,
                    last,
                    request.fields,
                )? {
                    if chunk.max_time >= request.start && chunk.min_time < request.end {
                        chunks.push((part_index, chunk));
                    }
                }
            }
            let mut intervals: Vec<(Timestamp, Timestamp)> = chunks
                .iter()
                .map(|(_, c)| (c.min_time, c.max_time))
                .collect();
            intervals.extend(
                memtable_runs
                    .iter()
                    .chain(&cold_runs)
                    .filter_map(|r| Some((*r.times.first()?, *r.times.last()?))),
            );
            let mut clean = Vec::new();
            let mut runs: Vec<SeriesData> = cold_runs;
            for (index, (part_index, chunk)) in chunks.into_iter().enumerate() {
                let inside = chunk.min_time >= request.start && chunk.max_time < request.end;
                let alone = intervals.iter().enumerate().all(|(other, (lo, hi))| {
                    other == index || *hi < chunk.min_time || *lo > chunk.max_time
                });
                let untouched = !overlaps(&deleted[part_index], chunk.min_time, chunk.max_time);
                if inside && alone && untouched && usable(&chunk) {
                    clean.push(chunk);
                } else {
                    // Only the rows in range are decoded when the chunk straddles an end.
                    let data = parts[part_index].reader.read_chunk_window(
                        &chunk,
                        request.fields,
                        request.start,
                        request.end,
                    )?;
                    let data = without_ranges(data, &deleted[part_index]);
                    if data.rows() > 0 {
                        runs.push(data);
                    }
                }
            }
            // Chunks were collected in precedence order, memtables come after parts.
            runs.extend(memtable_runs);
            let rest = match runs.len() {
                0 => SeriesData::default(),
                1 => runs.pop().unwrap_or_default(),
                _ => SeriesData::merge(&runs.iter().collect::<Vec<_>>()),
            };
            if clean.is_empty() && rest.rows() == 0 {
                continue;
            }
            let summary = SeriesSummary {
                series,
                tags,
                chunks: clean,
                rest,
            };
            if !visit(summary)? {
                break;
            }
        }
        Ok(())
    }
}

/// The rows of `series` in the request's range from the frozen memtables (oldest first),
/// then the active memtable's copy: the memtables' runs in precedence order.
fn memtable_runs(
    frozen: &[Arc<Frozen>],
    series: SeriesId,
    request: &ShardReadRequest<'_>,
    active: Option<SeriesData>,
) -> Vec<SeriesData> {
    let mut runs: Vec<SeriesData> = frozen
        .iter()
        .filter_map(|f| {
            f.memtable
                .series_data_in(series, request.start, request.end)
        })
        .map(|data| data.project(request.fields))
        .filter(|data| data.rows() > 0)
        .collect();
    runs.extend(active);
    runs
}
