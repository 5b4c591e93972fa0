//! Points of one instant in several series, put in series order: by the other tags, a
//! missing one first, as influxd merges series (TSBS's `high-cpu-all`: every host at every
//! instant, ten tags each).
//!
//! Tags come as dictionary columns, so each tag value is ranked once among all the values
//! of its tag, and points compare by ranks: reading ten strings per point and comparing
//! them cost `high-cpu-all` a tenth of its answer's time.

use datafusion::arrow::array::{
    Array, ArrayRef, DictionaryArray, RecordBatch, StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::Int32Type;
use smallvec::SmallVec;

use super::tag_text;

/// Puts each run of points at one instant (in `rows`, ordered by time) in the order of the
/// tags in columns `ties` (missing first), as the sort by those tags would have.
pub(super) fn order_ties(batches: &[RecordBatch], ties: &[usize], rows: &mut [(u32, u32)]) {
    if ties.is_empty() {
        return;
    }
    // Each batch's time column, downcast once.
    let times: Vec<Option<&TimestampNanosecondArray>> = batches
        .iter()
        .map(|b| b.column(0).as_any().downcast_ref())
        .collect();
    let time_of = |&(b, r): &(u32, u32)| times[b as usize].map(|t| t.value(r as usize));
    let ranks = Ranks::of(batches, ties);
    let mut start = 0;
    while start < rows.len() {
        let time = time_of(&rows[start]);
        let mut end = start + 1;
        while end < rows.len() && time_of(&rows[end]) == time {
            end += 1;
        }
        if end - start > 1 {
            // Each row's key is built once, not once per comparison.
            match &ranks {
                Some(ranks) => rows[start..end].sort_by_cached_key(|row| ranks.key(row)),
                None => rows[start..end].sort_by_cached_key(|row| text_key(batches, ties, row)),
            }
        }
        start = end;
    }
}

/// A row's tie tags as text: `None` where it has none. (For tags not in dictionary
/// columns.)
fn text_key<'b>(
    batches: &'b [RecordBatch],
    ties: &[usize],
    &(b, r): &(u32, u32),
) -> Vec<Option<&'b str>> {
    let batch = &batches[b as usize];
    ties.iter()
        .map(|&c| {
            let column = batch.column(c);
            (!column.is_null(r as usize)).then(|| tag_text(Some(column), r as usize))
        })
        .collect()
}

/// Per batch and tie tag, its dictionary column and the rank of each dictionary entry
/// among every value of that tag in the batches, from 1 (0 is a row without the tag).
struct Ranks<'b> {
    per_batch: Vec<Vec<(&'b DictionaryArray<Int32Type>, Vec<u32>)>>,
}

impl<'b> Ranks<'b> {
    /// `None` when some tie column is not a dictionary of strings.
    fn of(batches: &'b [RecordBatch], ties: &[usize]) -> Option<Self> {
        let dictionary = |batch: &'b RecordBatch, c: usize| {
            let column: &'b ArrayRef = batch.column(c);
            let keys = column
                .as_any()
                .downcast_ref::<DictionaryArray<Int32Type>>()?;
            let values = keys.values().as_any().downcast_ref::<StringArray>()?;
            Some((keys, values))
        };
        let mut per_batch: Vec<Vec<(&DictionaryArray<Int32Type>, Vec<u32>)>> =
            vec![Vec::with_capacity(ties.len()); batches.len()];
        for &c in ties {
            let columns: Vec<(&DictionaryArray<Int32Type>, &StringArray)> = batches
                .iter()
                .map(|batch| dictionary(batch, c))
                .collect::<Option<_>>()?;
            // Every value of the tag, sorted: a value's rank is its place here, plus one.
            // (`StringArray::value` reads a null entry as "", as `tag_text` does.)
            let mut all: Vec<&str> = columns
                .iter()
                .flat_map(|(_, values)| (0..values.len()).map(|i| values.value(i)))
                .collect();
            all.sort_unstable();
            all.dedup();
            for ((keys, values), ranks) in columns.into_iter().zip(&mut per_batch) {
                let of_entry = (0..values.len())
                    .map(|i| {
                        let place = all.binary_search(&values.value(i)).unwrap_or(0);
                        u32::try_from(place + 1).unwrap_or(u32::MAX)
                    })
                    .collect();
                ranks.push((keys, of_entry));
            }
        }
        Some(Ranks { per_batch })
    }

    /// The ranks of a row's tie tags, in order: compared as the tags' text would be, a
    /// missing tag first.
    fn key(&self, &(b, r): &(u32, u32)) -> SmallVec<[u32; 12]> {
        let r = r as usize;
        self.per_batch[b as usize]
            .iter()
            .map(|(keys, ranks)| {
                if keys.is_null(r) {
                    return 0;
                }
                usize::try_from(keys.keys().value(r))
                    .ok()
                    .and_then(|entry| ranks.get(entry))
                    .copied()
                    .unwrap_or(0)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{DictionaryArray, Int32Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    /// A batch of `time` and two tags: the second a dictionary whose entries are in no
    /// sorted order and differ from the other batch's, with a null key and a null entry.
    fn batches() -> Vec<RecordBatch> {
        let time = |ts: Vec<i64>| -> ArrayRef { Arc::new(TimestampNanosecondArray::from(ts)) };
        let tag = |keys: Vec<Option<i32>>, values: Vec<Option<&str>>| -> ArrayRef {
            Arc::new(
                DictionaryArray::<Int32Type>::try_new(
                    Int32Array::from(keys),
                    Arc::new(StringArray::from(values)),
                )
                .unwrap(),
            )
        };
        let one = RecordBatch::try_from_iter([
            ("time", time(vec![5, 5, 5, 5, 7])),
            (
                "a",
                tag(
                    vec![Some(0), Some(1), Some(0), None, Some(1)],
                    vec![Some("y"), Some("x")],
                ),
            ),
            (
                "b",
                tag(
                    vec![Some(2), Some(0), Some(1), Some(0), Some(2)],
                    vec![Some("q"), None, Some("b")],
                ),
            ),
        ])
        .unwrap();
        let two = RecordBatch::try_from_iter([
            ("time", time(vec![5, 7, 7])),
            (
                "a",
                tag(vec![Some(0), Some(0), Some(1)], vec![Some("x"), Some("w")]),
            ),
            (
                "b",
                tag(vec![Some(0), Some(0), None], vec![Some("a"), Some("z")]),
            ),
        ])
        .unwrap();
        vec![one, two]
    }

    /// The ranks order rows as their tags' text does, across batches whose dictionaries
    /// differ; rows of other instants stay where they are.
    #[test]
    fn ranks_order_as_the_text_does() {
        let batches = batches();
        let ties = [1, 2];
        let rows: Vec<(u32, u32)> = vec![
            (0, 0),
            (0, 1),
            (0, 2),
            (0, 3),
            (1, 0),
            (0, 4),
            (1, 1),
            (1, 2),
        ];
        let mut by_text = rows.clone();
        for run in [0..5, 5..8] {
            by_text[run].sort_by_cached_key(|row| text_key(&batches, &ties, row));
        }
        let mut by_rank = rows;
        order_ties(&batches, &ties, &mut by_rank);
        assert_eq!(by_rank, by_text);
        // Instant 5: a missing, then x/a, x/q, y/"" (a null entry), y/b; instant 7: w (b
        // missing), x/a, x/b.
        assert_eq!(
            by_rank,
            [
                (0, 3),
                (1, 0),
                (0, 1),
                (0, 2),
                (0, 0),
                (1, 2),
                (1, 1),
                (0, 4)
            ]
        );
        assert!(Ranks::of(&batches, &ties).is_some());
    }
}
