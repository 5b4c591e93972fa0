//! How a part finds a series: which series of which tables it holds (its members, kept for
//! the part's whole life) and where each series' index entries and blocks start (its
//! directory, held with the index within the budget of index memory).
//!
//! Parts grow with history (shards × days × parts), so what a part keeps for its whole life
//! must not grow with its series. The directory did: 24 bytes a series a part, 330 MB for 90
//! days of 100,000 series (`docs/benchmarks.md`, "Series a part keeps"). Now it goes with the
//! index, whose entries it points into, and is walked again from the index when that is read
//! again. What stays are the members: a bitmap of series ids per table, a few bytes for a
//! part whose series ids are mostly consecutive, which answers "does this part hold the
//! series?" without the index (a read of one series over many parts skips the parts that do
//! not hold it without reading their indexes).

use roaring::RoaringBitmap;

use crate::model::{SeriesId, TableId};

use super::chunk::{ChunkHead, ChunkMeta};
use super::format::{HEADER_LEN, IndexCursor};

/// Where one series' entries are: 16 bytes a series.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DirEntry {
    pub series: SeriesId,
    /// Offset in the decompressed index of the series' chunk count (indexes are at most
    /// `MAX_INDEX_RAW_BYTES`, 1 GiB).
    pub index_offset: u32,
    /// File offset of the series' first block.
    pub data_offset: u64,
}

/// A part's decompressed index with its directory: what the budget of index memory holds.
/// Or some series' entries of it (`PartIndex::extract`).
#[derive(Debug, Default)]
pub(crate) struct PartIndex {
    pub bytes: Vec<u8>,
    /// Sorted by series id.
    pub directory: Vec<DirEntry>,
}

impl PartIndex {
    /// What it costs the budget: the bytes of both.
    pub(crate) fn cost(&self) -> usize {
        self.bytes.len() + size_of_val(self.directory.as_slice())
    }

    pub(crate) fn entry(&self, series: SeriesId) -> Option<&DirEntry> {
        self.directory
            .binary_search_by_key(&series, |d| d.series)
            .ok()
            .map(|i| &self.directory[i])
    }

    /// The entries of `series` (sorted; ids the index lacks are left out), copied into an
    /// index of their own: each series' bytes from its chunk count to the next series'
    /// (whose id and table trail them, unread), its data offset kept.
    pub(crate) fn extract(&self, series: &[SeriesId]) -> Result<PartIndex, String> {
        let mut out = PartIndex::default();
        for &id in series {
            let Ok(i) = self.directory.binary_search_by_key(&id, |d| d.series) else {
                continue;
            };
            let entry = self.directory[i];
            let end = self
                .directory
                .get(i + 1)
                .map_or(self.bytes.len(), |next| next.index_offset as usize);
            let bytes = self
                .bytes
                .get(entry.index_offset as usize..end)
                .ok_or_else(|| format!("series {id}: directory points past the index"))?;
            out.directory.push(DirEntry {
                series: id,
                index_offset: index_offset(out.bytes.len())?,
                data_offset: entry.data_offset,
            });
            out.bytes.extend_from_slice(bytes);
        }
        Ok(out)
    }
}

/// The directory of an index already checked (at the part's open): each series' entry
/// positions, skipping chunk entries by their lengths (format 2 and later) or parsing them
/// (format 1). An index that no longer walks is an error for the caller to report.
pub(crate) fn walk_directory(index: &[u8], version: u32) -> Result<Vec<DirEntry>, String> {
    let mut c = IndexCursor::new(index, 0);
    let mut directory = Vec::new();
    let mut data_offset = HEADER_LEN;
    while !c.at_end() {
        let series = c.u32()?;
        let _table = c.u32()?;
        directory.push(DirEntry {
            series,
            index_offset: index_offset(c.pos)?,
            data_offset,
        });
        let chunks = c.u64()?;
        for _ in 0..chunks {
            let head = ChunkHead::parse(&mut c, version)?;
            match head.lens {
                Some(lens) => {
                    c.skip(lens.entry)?;
                    data_offset = data_offset
                        .checked_add(lens.data)
                        .ok_or("block lengths overflow")?;
                }
                None => {
                    ChunkMeta::parse_after_head(&mut c, &mut data_offset, (version, None), &head)?;
                }
            }
        }
    }
    Ok(directory)
}

/// `pos` as a directory's index offset.
pub(crate) fn index_offset(pos: usize) -> Result<u32, String> {
    u32::try_from(pos).map_err(|_| format!("index offset {pos} over 4 GiB"))
}

/// The series a part holds, by table: kept for the part's whole life.
#[derive(Debug, Default)]
pub(crate) struct PartMembers {
    /// By increasing table id; each table's series ids.
    tables: Vec<(TableId, RoaringBitmap)>,
}

impl PartMembers {
    /// From `(series, table)` pairs by increasing series id.
    pub(crate) fn new(pairs: impl IntoIterator<Item = (SeriesId, TableId)>) -> Self {
        let mut by_table = std::collections::BTreeMap::<TableId, Vec<SeriesId>>::new();
        for (series, table) in pairs {
            by_table.entry(table).or_default().push(series);
        }
        let tables = by_table
            .into_iter()
            .map(|(table, ids)| {
                // Ids come sorted, so this cannot fail; collecting is the fallback anyway.
                let mut bitmap = RoaringBitmap::from_sorted_iter(ids.iter().copied())
                    .unwrap_or_else(|_| ids.iter().copied().collect());
                // Runs of consecutive ids (the usual case: a shard numbers its series as
                // they come) shrink to a few bytes.
                bitmap.optimize();
                (table, bitmap)
            })
            .collect();
        Self { tables }
    }

    pub(crate) fn contains(&self, series: SeriesId) -> bool {
        self.tables.iter().any(|(_, ids)| ids.contains(series))
    }

    /// Every series with its table, by increasing series id.
    pub(crate) fn series_ids(&self) -> impl Iterator<Item = (SeriesId, TableId)> + use<> {
        let mut pairs: Vec<_> = self
            .tables
            .iter()
            .flat_map(|(table, ids)| ids.iter().map(move |series| (series, *table)))
            .collect();
        if self.tables.len() > 1 {
            pairs.sort_unstable();
        }
        pairs.into_iter()
    }

    /// The tables the part holds rows of, by increasing id.
    pub(crate) fn tables(&self) -> impl Iterator<Item = TableId> + '_ {
        self.tables.iter().map(|(table, _)| *table)
    }

    /// Bytes the bitmaps take, as stored (about what they take in memory).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.tables
            .iter()
            .map(|(_, ids)| ids.serialized_size())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_answer_by_series_and_by_table() {
        // Series 0..1000 of table 1 with a gap, 1000..1010 of table 7, 5000 of table 1.
        let pairs: Vec<(SeriesId, TableId)> = (0..1000)
            .filter(|s| !(400..410).contains(s))
            .map(|s| (s, 1))
            .chain((1000..1010).map(|s| (s, 7)))
            .chain([(5000, 1)])
            .collect();
        let members = PartMembers::new(pairs.iter().copied());
        for series in 0..6000 {
            let want = pairs.iter().any(|(s, _)| *s == series);
            assert_eq!(members.contains(series), want, "series {series}");
        }
        assert_eq!(members.series_ids().collect::<Vec<_>>(), pairs);
        assert_eq!(members.tables().collect::<Vec<_>>(), vec![1, 7]);
        // Runs of ids take a few bytes, not a few per series.
        assert!(members.bytes() < 100, "{} bytes", members.bytes());
    }
}
