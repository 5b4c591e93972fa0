//! Read-only questions to a [`SeriesIndex`]: tags of a series, series of a table, tag
//! predicates, tag keys and values, memory.

use roaring::RoaringBitmap;

use super::index::SeriesIndex;
use super::key::{Hash32, Hash128, map_bytes, write_part};
use super::postings::{TableIndex, TagPredicate, bitmap_bytes};
use crate::model::{SeriesId, TableId};

/// A string of the index with its interned id (see [`SeriesIndex::tag_ids_of`]).
pub type InternedStr<'a> = (u32, &'a str);

impl SeriesIndex {
    /// Number of series (ids are `0..series_count()`).
    pub fn series_count(&self) -> usize {
        self.series_shape.len()
    }

    /// The table of series `id`, `None` if there is no such series.
    pub fn table_of(&self, id: SeriesId) -> Option<TableId> {
        ((id as usize) < self.series_count()).then(|| self.table_of_unchecked(id))
    }

    /// The tags of series `id` in canonical order (sorted by key), `None` if there is no
    /// such series.
    pub fn tags_of(
        &self,
        id: SeriesId,
    ) -> Option<impl ExactSizeIterator<Item = (&str, &str)> + '_> {
        ((id as usize) < self.series_count()).then(|| self.tags_unchecked(id))
    }

    /// The tags of series `id` in canonical order, each key and value with its interned
    /// id, `None` if there is no such series. Ids are dense per index and never reused nor
    /// renumbered while the index lives (the interner only appends), so equal ids name
    /// equal strings: a caller can key a cache on them instead of hashing the text.
    pub fn tag_ids_of(
        &self,
        id: SeriesId,
    ) -> Option<impl ExactSizeIterator<Item = (InternedStr<'_>, InternedStr<'_>)> + '_> {
        ((id as usize) < self.series_count()).then(|| self.tag_ids_unchecked(id))
    }

    /// Writes the [`super::canonical_key`] of series `id` into `out`; `false` (and `out`
    /// untouched) if there is no such series.
    pub fn canonical_key_of(&self, id: SeriesId, out: &mut Vec<u8>) -> bool {
        let Some(tags) = self.tags_of(id) else {
            return false;
        };
        out.clear();
        out.extend_from_slice(&self.table_of_unchecked(id).to_le_bytes());
        out.extend_from_slice(&(tags.len() as u32).to_le_bytes());
        for (k, v) in tags {
            write_part(out, k);
            write_part(out, v);
        }
        true
    }

    /// Every series of `table`.
    pub fn series_of_table(&self, table: TableId) -> RoaringBitmap {
        self.tables
            .get(&table)
            .map(|t| t.series().clone())
            .unwrap_or_default()
    }

    /// The series of `table` matching `predicate` (see [`TagPredicate`] for the meaning of
    /// each case, `NotEq` included).
    pub fn matching(&self, table: TableId, predicate: &TagPredicate) -> RoaringBitmap {
        self.tables
            .get(&table)
            .map(|t| t.matching(&self.strings, predicate))
            .unwrap_or_default()
    }

    /// The tag keys used by series of `table`, sorted bytewise.
    pub fn tag_keys(&self, table: TableId) -> Vec<String> {
        self.sorted_strings(
            self.tables
                .get(&table)
                .into_iter()
                .flat_map(TableIndex::keys),
        )
    }

    /// The values tag `key` takes in `table`, sorted bytewise.
    pub fn tag_values(&self, table: TableId, key: &str) -> Vec<String> {
        let (Some(t), Some(k)) = (self.tables.get(&table), self.strings.find(key)) else {
            return Vec::new();
        };
        self.sorted_strings(t.values(k))
    }

    fn sorted_strings(&self, ids: impl Iterator<Item = u32>) -> Vec<String> {
        let mut out: Vec<String> = ids.map(|id| self.strings.get(id).to_owned()).collect();
        out.sort_unstable();
        out
    }

    /// Estimated heap bytes of the index, from the capacities of its vectors and maps
    /// (hashbrown's bucket layout), roaring's container statistics and the interned bytes.
    /// Allocator overhead is not counted; measure RSS for that.
    pub fn memory_bytes(&self) -> usize {
        let shapes: usize = self.shapes.iter().map(|s| s.len() * 4 * 2).sum();
        let overflow: usize = self.canonical_overflow.keys().map(Vec::capacity).sum();
        self.strings.memory_bytes()
            + self.shapes.capacity() * size_of::<Box<[u32]>>()
            + map_bytes::<Box<[u32]>, u32>(self.shape_ids.capacity())
            + shapes
            + self.series_shape.capacity() * 4
            + self.series_values.capacity() * 4
            + self.values.capacity() * 4
            + map_bytes::<Hash32, SeriesId>(self.canonical.capacity())
            + map_bytes::<Vec<u8>, SeriesId>(self.canonical_overflow.capacity())
            + overflow
            + map_bytes::<Hash128, SeriesId>(self.raw.capacity())
            + self.alias_counts.capacity()
            + map_bytes::<TableId, TableIndex>(self.tables.capacity())
            + self
                .tables
                .values()
                .map(TableIndex::memory_bytes)
                .sum::<usize>()
            + bitmap_bytes(&RoaringBitmap::new())
    }

    /// Number of raw keys cached (bounded by [`super::MAX_ALIASES_PER_SERIES`] per series).
    pub fn alias_count(&self) -> usize {
        self.raw.len()
    }

    pub(super) fn table_of_unchecked(&self, id: SeriesId) -> TableId {
        self.shapes[self.series_shape[id as usize] as usize][0]
    }

    pub(super) fn tags_unchecked(
        &self,
        id: SeriesId,
    ) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.tag_ids_unchecked(id).map(|((_, k), (_, v))| (k, v))
    }

    fn tag_ids_unchecked(
        &self,
        id: SeriesId,
    ) -> impl ExactSizeIterator<Item = (InternedStr<'_>, InternedStr<'_>)> + '_ {
        let keys = &self.shapes[self.series_shape[id as usize] as usize][1..];
        let start = self.series_values[id as usize] as usize;
        let values = &self.values[start..start + keys.len()];
        keys.iter()
            .zip(values)
            .map(|(&k, &v)| ((k, self.strings.get(k)), (v, self.strings.get(v))))
    }
}
