//! The order of a direct statement's groups: the statement's ORDER BY, then every other
//! group key (tags ascending with nulls first, buckets ascending), a total order.
//!
//! Each group's place is encoded as a few `u64`s compared as a slice: a tag becomes its rank
//! among the tag's distinct values (the strings are sorted once per distinct value, not
//! compared per pair of groups), a bucket its bits with the sign flipped; descending keys
//! are reversed numerically and nulls take the lowest or highest code.

use std::cmp::Ordering;

use super::DirectPlan;
use super::shape::SortKey;
use crate::preagg::groups::{Groups, tag_keys};
use crate::preagg::plan::GroupKey;

/// The distinct values of one GROUP BY tag over every tag set, and each set's rank.
pub(super) struct TagRanks<'g> {
    /// Distinct values, ascending.
    pub values: Vec<&'g str>,
    /// Per tag set: the index of its value in `values` (`None`: the set lacks the tag).
    pub ranks: Vec<Option<u32>>,
}

impl<'g> TagRanks<'g> {
    /// The ranks of tag slot `slot` (its place among the GROUP BY tags) of `groups`.
    pub(super) fn new(groups: &'g Groups, slot: usize) -> Self {
        let sets = groups.tag_sets();
        let mut order: Vec<u32> = (0..sets.len() as u32)
            .filter(|t| sets[*t as usize][slot].is_some())
            .collect();
        order.sort_unstable_by(|a, b| sets[*a as usize][slot].cmp(&sets[*b as usize][slot]));
        let mut values: Vec<&str> = Vec::new();
        let mut ranks = vec![None; sets.len()];
        for t in order {
            let Some(value) = sets[t as usize][slot].as_deref() else {
                continue;
            };
            if values.last() != Some(&value) {
                values.push(value);
            }
            ranks[t as usize] = Some(values.len() as u32 - 1);
        }
        Self { values, ranks }
    }

    /// The code of tag set `tags` under `key`.
    fn code(&self, tags: u32, key: &SortKey) -> u64 {
        match self.ranks[tags as usize] {
            None if key.nulls_first => 0,
            None => u64::MAX,
            // Values take 1..=n, so both null codes stay free.
            Some(rank) if key.descending => (self.values.len() - rank as usize) as u64,
            Some(rank) => u64::from(rank) + 1,
        }
    }
}

/// The code of a bucket under `key`: order-preserving from i64 to u64, reversed descending.
fn bucket_code(bucket: i64, key: &SortKey) -> u64 {
    let code = (bucket as u64) ^ (1 << 63);
    if key.descending { !code } else { code }
}

/// Where group key `group` of the plan sits in a group: the index among its tags (`true`)
/// or among its buckets (`false`).
pub(super) fn key_slot(plan: &DirectPlan, group: usize) -> (bool, usize) {
    let groups = &plan.preagg.groups;
    let is_tag = matches!(groups[group], GroupKey::Tag(_));
    let slot = groups[..group]
        .iter()
        .filter(|g| matches!(g, GroupKey::Tag(_)) == is_tag)
        .count();
    (is_tag, slot)
}

/// The groups in output order, at most `plan.limit` of them, with the ranks of every tag
/// slot (by slot), which the tag columns are built from.
pub(super) fn sorted<'g>(groups: &'g Groups, plan: &DirectPlan) -> (Vec<u32>, Vec<TagRanks<'g>>) {
    let tag_slots = tag_keys(&plan.preagg).count();
    let ranks: Vec<TagRanks<'g>> = (0..tag_slots).map(|s| TagRanks::new(groups, s)).collect();
    // The statement's keys, then each key it leaves out, tags before buckets: (is tag,
    // slot, how).
    let mut keys: Vec<(bool, usize, SortKey)> = plan
        .order
        .iter()
        .map(|key| {
            let (is_tag, slot) = key_slot(plan, key.group);
            (is_tag, slot, *key)
        })
        .collect();
    let mut rest: Vec<(bool, usize, usize)> = (0..plan.preagg.groups.len())
        .filter(|group| !plan.order.iter().any(|k| k.group == *group))
        .map(|group| {
            let (is_tag, slot) = key_slot(plan, group);
            (is_tag, slot, group)
        })
        .collect();
    rest.sort_by_key(|(is_tag, slot, _)| (!is_tag, *slot));
    for (is_tag, slot, group) in rest {
        let tie = SortKey {
            group,
            descending: false,
            nulls_first: true,
        };
        keys.push((is_tag, slot, tie));
    }
    let width = keys.len();
    let count = groups.len();
    let code = |group: usize, (is_tag, slot, key): &(bool, usize, SortKey)| {
        if *is_tag {
            ranks[*slot].code(groups.tags_of(group), key)
        } else {
            bucket_code(groups.buckets_of(group)[*slot], key)
        }
    };
    // Every group key is part of the code, so no two groups tie: unstable sorts give the
    // one order there is.
    let order: Vec<u32> = if width <= 2 {
        // The common shapes (a bucket, a bucket and a tag): codes inline in the sorted
        // items, compared without going through a code table.
        let mut items: Vec<(u64, u64, u32)> = (0..count)
            .map(|g| {
                let first = keys.first().map_or(0, |k| code(g, k));
                let second = keys.get(1).map_or(0, |k| code(g, k));
                (first, second, g as u32)
            })
            .collect();
        sort_top(&mut items, plan.limit, Ord::cmp);
        items.into_iter().map(|(_, _, g)| g).collect()
    } else {
        let codes: Vec<u64> = (0..count)
            .flat_map(|g| keys.iter().map(move |k| (g, k)))
            .map(|(g, k)| code(g, k))
            .collect();
        let mut order: Vec<u32> = (0..count as u32).collect();
        let codes_of = |g: &u32| &codes[*g as usize * width..][..width];
        sort_top(&mut order, plan.limit, |a, b| codes_of(a).cmp(codes_of(b)));
        order
    };
    (order, ranks)
}

/// Sorts `items`, keeping the first `limit` (only those fully sorted when fewer than all).
fn sort_top<T>(items: &mut Vec<T>, limit: Option<usize>, compare: impl Fn(&T, &T) -> Ordering) {
    match limit {
        Some(limit) if limit < items.len() => {
            items.select_nth_unstable_by(limit, &compare);
            items.truncate(limit);
            items.sort_unstable_by(compare);
        }
        _ => items.sort_unstable_by(compare),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(descending: bool, nulls_first: bool) -> SortKey {
        SortKey {
            group: 0,
            descending,
            nulls_first,
        }
    }

    #[test]
    fn bucket_codes_keep_the_order_of_times() {
        let times = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for pair in times.windows(2) {
            let asc = key(false, false);
            let desc = key(true, true);
            assert!(bucket_code(pair[0], &asc) < bucket_code(pair[1], &asc));
            assert!(bucket_code(pair[0], &desc) > bucket_code(pair[1], &desc));
        }
    }

    #[test]
    fn tag_codes_order_values_and_place_nulls() {
        let ranks = TagRanks {
            values: vec!["a", "b", "c"],
            ranks: vec![Some(2), None, Some(0), Some(1)],
        };
        let codes = |k: SortKey| -> Vec<u64> { (0..4).map(|t| ranks.code(t, &k)).collect() };
        // Ascending, nulls last: a < b < c < null.
        let asc = codes(key(false, false));
        assert!(asc[2] < asc[3] && asc[3] < asc[0] && asc[0] < asc[1]);
        // Descending, nulls first: null < c < b < a.
        let desc = codes(key(true, true));
        assert!(desc[1] < desc[0] && desc[0] < desc[3] && desc[3] < desc[2]);
        // Ascending, nulls first; descending, nulls last.
        let asc_first = codes(key(false, true));
        assert!(asc_first[1] < asc_first[2]);
        let desc_last = codes(key(true, false));
        assert!(desc_last[2] < desc_last[1]);
    }
}
