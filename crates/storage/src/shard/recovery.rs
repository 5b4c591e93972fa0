//! What a shard writes into a part's recovery section (see `part/recovery.rs`): the names
//! of its tables and fields, and the tags of its series, so that `strata repair` can
//! rebuild the catalog and the series log from the parts.

use std::ops::Range;

use super::Shard;
use crate::model::{SeriesId, TableId};
use crate::part::TableNames;

impl Shard {
    /// The names of `tables` from the catalog (a dropped table has none and is left out).
    pub(super) fn table_names(&self, tables: impl IntoIterator<Item = TableId>) -> Vec<TableNames> {
        tables
            .into_iter()
            .filter_map(|id| self.config.catalog.table(id))
            .map(|schema| TableNames {
                id: schema.id,
                database: schema.database.clone(),
                name: schema.name.clone(),
                fields: schema
                    .fields
                    .iter()
                    .map(|f| (f.id, f.field_type, f.name.clone()))
                    .collect(),
            })
            .collect()
    }

    /// The tags of `series`, read under one acquisition of the shard lock: flushes and
    /// merges take them [`TAGS_BATCH`] series at a time, so that writers never queue
    /// behind a lock taken once a series.
    pub(super) fn batch_tags(&self, series: impl Iterator<Item = SeriesId>) -> BatchTags {
        let mut out = BatchTags::default();
        let state = self.state.lock();
        for id in series {
            let from = out.spans.len();
            if let Some(tags) = state.index.tags_of(id) {
                for (k, v) in tags {
                    let key = out.push(k);
                    let value = out.push(v);
                    out.spans.push((key, value));
                }
            }
            out.ranges.push(from..out.spans.len());
        }
        out
    }
}

/// Series a flush or merge looks up per acquisition of the shard lock (a batch of 256
/// TSBS series holds it for some tens of microseconds).
pub(super) const TAGS_BATCH: usize = 256;

/// The tags of a batch of series, copied out of the series index.
#[derive(Debug, Default)]
pub(super) struct BatchTags {
    text: String,
    spans: Vec<(Range<usize>, Range<usize>)>,
    ranges: Vec<Range<usize>>,
}

impl BatchTags {
    fn push(&mut self, s: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(s);
        start..self.text.len()
    }

    /// The tags of the `i`-th series of the batch (none for a series the index lacks).
    pub fn tags(&self, i: usize) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let range = self.ranges.get(i).cloned().unwrap_or(0..0);
        self.spans[range]
            .iter()
            .map(|(k, v)| (&self.text[k.clone()], &self.text[v.clone()]))
    }
}
