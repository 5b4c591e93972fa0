//! What changed in a shard since a point in its history, for the downsamples: the time
//! spans of one table's rows in the parts of a given precedence order or above.
//!
//! Only flushes bring rows into parts (merges, purges and expiry rewrite rows already
//! there), so each flush records which hours of which tables it wrote in a [`FlushLog`].
//! Asked for the changes since an order the log still covers, the answer is those hours:
//! exact to the hour whatever merges did since. For older orders (after a restart, or a
//! log that overflowed) the spans of the parts' chunks stand in: correct, but a merged
//! part counts all its rows as new.

use std::collections::VecDeque;

use super::Shard;
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};
use crate::part::CHUNK_ALIGN_NS;

/// Per table, the hours (`time.div_euclid(CHUNK_ALIGN_NS)`, sorted, distinct) a flush
/// wrote rows into.
pub(crate) type TableHours = Vec<(TableId, Vec<i64>)>;

/// Flushes remembered; older ones fall back to the parts' chunk spans.
const FLUSH_LOG_ENTRIES: usize = 256;

/// The hours each recent flush wrote rows into, per table.
#[derive(Debug)]
pub(crate) struct FlushLog {
    /// The lowest part order the log answers for: every flush of this order or above is
    /// in `entries`.
    first_order: u64,
    /// (flush order, the hours it wrote), by increasing order.
    entries: VecDeque<(u64, TableHours)>,
}

impl FlushLog {
    /// A log that answers from part order `next_order` on (a shard's next flush).
    pub(crate) fn new(next_order: u64) -> Self {
        Self {
            first_order: next_order,
            entries: VecDeque::new(),
        }
    }

    /// Records flush `order`, which wrote `hours` per table.
    pub(crate) fn record(&mut self, order: u64, hours: TableHours) {
        if self.entries.len() == FLUSH_LOG_ENTRIES
            && let Some((dropped, _)) = self.entries.pop_front()
        {
            self.first_order = dropped + 1;
        }
        self.entries.push_back((order, hours));
    }
}

/// Adds the hours `times` (ascending) fall in to `hours` (kept sorted and distinct).
pub(crate) fn add_hours(hours: &mut Vec<i64>, times: &[Timestamp]) {
    let mut at = 0;
    while at < times.len() {
        let hour = times[at].div_euclid(CHUNK_ALIGN_NS);
        if let Err(index) = hours.binary_search(&hour) {
            hours.insert(index, hour);
        }
        let next = hour.saturating_add(1).saturating_mul(CHUNK_ALIGN_NS);
        at += times[at..].partition_point(|t| *t < next);
    }
}

/// The spans of a table's rows in parts from some order on.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// `(first, last)` time (both inclusive) of each chunk of the table in those parts.
    pub spans: Vec<(Timestamp, Timestamp)>,
    /// One above the highest part order seen (at least the order asked from): every row
    /// of a part below it is covered by `spans` or was before.
    pub next_order: u64,
}

impl Shard {
    /// The spans of `table`'s chunks in the parts of order `from` or above. Flushes take
    /// increasing orders under the manifest lock and merges keep their run's highest, so a
    /// part that is not in this answer has an order of at least `next_order`, and the rows
    /// of a part below `next_order` that a merge rewrote are in a part below it too.
    pub(crate) fn changes_since(&self, table: TableId, from: u64) -> Result<Changes, StorageError> {
        let parts = {
            let manifest = self.manifest.lock();
            let log = self.flush_log.lock();
            if from >= log.first_order {
                let mut spans = Vec::new();
                for (_, tables) in log.entries.iter().filter(|(order, _)| *order >= from) {
                    for (_, hours) in tables.iter().filter(|(t, _)| *t == table) {
                        spans.extend(hours.iter().map(|h| {
                            let start = h.saturating_mul(CHUNK_ALIGN_NS);
                            (start, start.saturating_add(CHUNK_ALIGN_NS - 1))
                        }));
                    }
                }
                return Ok(Changes {
                    spans,
                    next_order: manifest.next_order.max(from),
                });
            }
            self.parts()
        };
        let mut changes = Changes {
            spans: Vec::new(),
            next_order: from,
        };
        for part in parts.iter().filter(|p| p.entry.order >= from) {
            changes.next_order = changes.next_order.max(part.entry.order + 1);
            for (series, _) in part.reader.series_ids().filter(|(_, t)| *t == table) {
                let chunks =
                    part.reader
                        .chunks_in(series, Timestamp::MIN, Timestamp::MAX, Some(&[]))?;
                changes
                    .spans
                    .extend(chunks.iter().map(|c| (c.min_time, c.max_time)));
            }
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_are_collected_sorted_and_distinct() {
        let h = CHUNK_ALIGN_NS;
        let mut hours = vec![5];
        add_hours(&mut hours, &[-1, 0, 1, h - 1, 3 * h, 3 * h + 7, 5 * h]);
        assert_eq!(hours, vec![-1, 0, 3, 5]);
    }

    #[test]
    fn the_log_forgets_its_oldest_flushes_and_says_so() {
        let mut log = FlushLog::new(3);
        for order in 3..3 + FLUSH_LOG_ENTRIES as u64 + 2 {
            log.record(order, vec![(0, vec![order as i64])]);
        }
        assert_eq!(log.first_order, 5);
        assert_eq!(log.entries.len(), FLUSH_LOG_ENTRIES);
    }
}
