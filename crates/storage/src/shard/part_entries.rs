//! How a read that goes over many parts series by series gets their index entries.
//!
//! Such a read (`read.rs`) asks every part for each series in turn. It leases the parts'
//! indexes for its duration, whatever the budget of index memory: past the budget, each
//! index would otherwise be read again for every series. But a read over a long history
//! of many series then holds every index it covers (1.6 GB for 90 days of 100,000 series),
//! however small the budget. So past a limit (by default four times the budget), the read
//! goes over its series a block at a time instead, and copies each part's entries for the
//! block out of its index ([`PartReader::extract`]): it then holds about the limit, and
//! reads each index once a block.
//!
//! [`PartReader::extract`]: crate::part::PartReader::extract

use crate::error::StorageError;
use crate::model::SeriesId;
use crate::part::{FreedMemory, IndexExtract, IndexLeases};

use super::{LivePart, lease_indexes};

/// The index entries a read over `parts` takes its chunks from: the parts' own indexes,
/// leased, or extracts of them for the current block of series.
pub(super) struct PartEntries<'p> {
    parts: Vec<&'p LivePart>,
    _leases: IndexLeases<'p>,
    /// The read's series, in its order, kept only when it goes in blocks.
    ids: Vec<SeriesId>,
    /// Series per block; 0 when the indexes are leased whole.
    block: usize,
    /// Where in the read's series the block of `extracts` starts.
    block_start: Option<usize>,
    /// One per part, in `parts` order.
    extracts: Vec<IndexExtract>,
    /// Bytes of all the extracts taken: what the read frees, block by block, for
    /// `FreedMemory` to return once reads leave it alone.
    extracted: usize,
}

impl<'p> PartEntries<'p> {
    /// For a read of `series` (in its order) over `parts`, holding at most about `limit`
    /// bytes of index entries.
    pub(super) fn new(
        parts: &[&'p LivePart],
        series: impl ExactSizeIterator<Item = SeriesId>,
        limit: usize,
    ) -> Result<Self, StorageError> {
        let total: usize = parts.iter().map(|p| p.reader.index_cost()).sum();
        if total <= limit {
            return Ok(Self {
                parts: parts.to_vec(),
                _leases: lease_indexes(parts.iter().copied())?,
                ids: Vec::new(),
                block: 0,
                block_start: None,
                extracts: Vec::new(),
                extracted: 0,
            });
        }
        // Past the limit even a read of one series goes by extracts: it then reads each
        // index once, as it would leased, but holds one at a time.
        FreedMemory::global().read_started();
        let block = series.len().div_ceil(total.div_ceil(limit.max(1))).max(1);
        Ok(Self {
            parts: parts.to_vec(),
            _leases: IndexLeases::default(),
            ids: series.collect(),
            block,
            block_start: None,
            extracts: Vec::new(),
            extracted: 0,
        })
    }

    /// The extract of each part (in `parts` order) holding the read's series at
    /// `position`, taken when a block begins; `None` when the indexes are leased.
    pub(super) fn at(&mut self, position: usize) -> Result<Option<&[IndexExtract]>, StorageError> {
        if self.block == 0 {
            return Ok(None);
        }
        let start = position - position % self.block;
        if self.block_start != Some(start) {
            let block = &self.ids[start..(start + self.block).min(self.ids.len())];
            // The last block's extracts go before this block's are taken.
            self.extracts.clear();
            for part in &self.parts {
                let extract = part.reader.extract(block)?;
                self.extracted += extract.bytes();
                self.extracts.push(extract);
            }
            self.block_start = Some(start);
        }
        Ok(Some(&self.extracts))
    }
}

impl Drop for PartEntries<'_> {
    fn drop(&mut self) {
        if self.block > 0 {
            self.extracts.clear();
            FreedMemory::global().read_ended(self.extracted);
        }
    }
}
