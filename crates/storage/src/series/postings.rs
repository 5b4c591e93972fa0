//! The inverted index of one table: (tag key, tag value) → series ids, and the tag
//! predicates it answers.

use roaring::RoaringBitmap;

use super::intern::{Interner, StrId};
use super::key::{KeyMap, map_bytes};
use crate::model::SeriesId;

/// A filter on the tags of a table's series, resolved by [`super::SeriesIndex::matching`].
/// Stored in the catalog with the deletes that name one (`docs/format.md`): externally
/// tagged JSON, `{"Eq": {"key", "value"}}`, `{"In": {"key", "values"}}`, `{"And": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TagPredicate {
    /// Series whose tag `key` equals `value`.
    Eq {
        /// Tag key.
        key: String,
        /// Tag value.
        value: String,
    },
    /// Series whose tag `key` is not `value`, **including series that lack tag `key`**
    /// (InfluxDB's `!=`; SQL's `tag <> 'v'` would drop them, as `NULL <> 'v'` is unknown).
    /// It is the complement of [`TagPredicate::Eq`] within the table.
    NotEq {
        /// Tag key.
        key: String,
        /// Tag value.
        value: String,
    },
    /// Series whose tag `key` is one of `values` (an empty list matches nothing).
    In {
        /// Tag key.
        key: String,
        /// Accepted values.
        values: Vec<String>,
    },
    /// Series matching every predicate (an empty list matches every series of the table).
    And(Vec<TagPredicate>),
    /// Series matching at least one predicate (an empty list matches nothing).
    Or(Vec<TagPredicate>),
}

/// The series holding one (key, value) pair. Most pairs of a high-cardinality tag
/// (`hostname`) hold a single series: it is kept inline (8 bytes) instead of in a bitmap
/// (a `RoaringBitmap` is 24 bytes before its first container).
#[derive(Debug, Clone, Copy)]
enum Posting {
    /// Exactly this series.
    One(SeriesId),
    /// Two or more series: the bitmap at this slot of [`TableIndex::bitmaps`].
    Many(u32),
}

/// Inverted index and series set of one table.
#[derive(Debug, Default)]
pub(crate) struct TableIndex {
    /// Every series of the table.
    series: RoaringBitmap,
    /// Tag key → tag value → posting.
    keys: KeyMap<StrId, KeyMap<StrId, Posting>>,
    /// Bitmaps of the postings that hold more than one series.
    bitmaps: Vec<RoaringBitmap>,
}

impl TableIndex {
    /// Adds series `id`, whose canonical tags are `tags` (interned key, value ids).
    pub(crate) fn add(&mut self, id: SeriesId, tags: impl Iterator<Item = (StrId, StrId)>) {
        // `insert`, not `try_push`: roaring's push on a bitmap container scans the container
        // for its maximum (1024 words), which cost 15% of loading a log.
        self.series.insert(id);
        for (k, v) in tags {
            let values = self.keys.entry(k).or_default();
            match values.get_mut(&v) {
                None => {
                    values.insert(v, Posting::One(id));
                }
                Some(Posting::One(first)) => {
                    let mut bitmap = RoaringBitmap::new();
                    bitmap.insert(*first);
                    bitmap.insert(id);
                    // A table cannot hold more postings than u32 series ids × tags; the
                    // slot count stays far below u32::MAX for any index that fits in memory.
                    let slot = u32::try_from(self.bitmaps.len()).unwrap_or(u32::MAX);
                    self.bitmaps.push(bitmap);
                    values.insert(v, Posting::Many(slot));
                }
                Some(Posting::Many(slot)) => {
                    self.bitmaps[*slot as usize].insert(id);
                }
            }
        }
    }

    /// Removes series `id`, whose canonical tags are `tags`, from the series set and its
    /// postings; a value left with no series is removed, and so is a key left with no value.
    pub(crate) fn remove(&mut self, id: SeriesId, tags: impl Iterator<Item = (StrId, StrId)>) {
        self.series.remove(id);
        for (k, v) in tags {
            let Some(values) = self.keys.get_mut(&k) else {
                continue;
            };
            let emptied = match values.get(&v) {
                Some(Posting::One(only)) => *only == id,
                Some(Posting::Many(slot)) => {
                    let bitmap = &mut self.bitmaps[*slot as usize];
                    bitmap.remove(id);
                    bitmap.is_empty()
                }
                None => false,
            };
            if emptied {
                values.remove(&v);
                if values.is_empty() {
                    self.keys.remove(&k);
                }
            }
        }
    }

    /// Every series of the table.
    pub(crate) fn series(&self) -> &RoaringBitmap {
        &self.series
    }

    /// Series ids of the table matching `pred`.
    pub(crate) fn matching(&self, strings: &Interner, pred: &TagPredicate) -> RoaringBitmap {
        match pred {
            TagPredicate::Eq { key, value } => self.eq(strings, key, value),
            TagPredicate::NotEq { key, value } => &self.series - self.eq(strings, key, value),
            TagPredicate::In { key, values } => {
                let mut out = RoaringBitmap::new();
                for value in values {
                    out |= self.eq(strings, key, value);
                }
                out
            }
            TagPredicate::And(preds) => {
                let mut out = self.series.clone();
                for p in preds {
                    if out.is_empty() {
                        break;
                    }
                    out &= self.matching(strings, p);
                }
                out
            }
            TagPredicate::Or(preds) => {
                let mut out = RoaringBitmap::new();
                for p in preds {
                    out |= self.matching(strings, p);
                }
                out
            }
        }
    }

    fn eq(&self, strings: &Interner, key: &str, value: &str) -> RoaringBitmap {
        let posting = strings
            .find(key)
            .zip(strings.find(value))
            .and_then(|(k, v)| self.keys.get(&k)?.get(&v));
        match posting {
            None => RoaringBitmap::new(),
            Some(Posting::One(id)) => std::iter::once(*id).collect(),
            Some(Posting::Many(slot)) => self.bitmaps[*slot as usize].clone(),
        }
    }

    /// Interned ids of the table's tag keys, unordered.
    pub(crate) fn keys(&self) -> impl Iterator<Item = StrId> + '_ {
        self.keys.keys().copied()
    }

    /// Interned ids of the values of tag `key`, unordered.
    pub(crate) fn values(&self, key: StrId) -> impl Iterator<Item = StrId> + '_ {
        self.keys
            .get(&key)
            .into_iter()
            .flat_map(|m| m.keys().copied())
    }

    /// Estimated heap bytes, from capacities.
    pub(crate) fn memory_bytes(&self) -> usize {
        let inner: usize = self
            .keys
            .values()
            .map(|m| map_bytes::<StrId, Posting>(m.capacity()))
            .sum();
        let bitmaps: usize = self.bitmaps.iter().map(bitmap_bytes).sum();
        bitmap_bytes(&self.series)
            + map_bytes::<StrId, KeyMap<StrId, Posting>>(self.keys.capacity())
            + inner
            + self.bitmaps.capacity() * size_of::<RoaringBitmap>()
            + bitmaps
    }
}

/// Heap bytes of a bitmap's containers (roaring's own statistics, plus each container's
/// header).
pub(crate) fn bitmap_bytes(b: &RoaringBitmap) -> usize {
    let s = b.statistics();
    let containers =
        s.n_bytes_array_containers + s.n_bytes_run_containers + s.n_bytes_bitset_containers;
    containers as usize + s.n_containers as usize * 32
}
