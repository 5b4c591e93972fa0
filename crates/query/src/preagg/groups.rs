//! The groups of a fold: each distinct combination of GROUP BY tag values (a tag set) once,
//! and per group its tag set, its time buckets and one state per aggregate, all in flat
//! vectors (nothing allocated per group).
//!
//! A group is found by (tag set, buckets). With no time key, or one fixed-width time key
//! over a bounded range, that is an index into a dense table (tag set × bucket number), so
//! the lookup made for every chunk and run of rows is arithmetic, not a hash of the key;
//! anything else (several time keys, computed buckets, too many slots) goes through a hash
//! map. Both give the same groups.

use foldhash::HashMap;

use super::bucket::{Grid, TimeKey};
use super::plan::{AggSpec, GroupKey, PreAggPlan};
use super::state::State;

/// Most buckets per tag set that the dense table covers.
const DENSE_MAX_BUCKETS: i64 = 1 << 12;
/// Most slots (4 bytes each) of the dense table; tag sets beyond it use the hash map.
const DENSE_MAX_SLOTS: usize = 1 << 22;
/// A dense slot no group has taken yet.
const EMPTY: u32 = u32::MAX;

/// The bucket numbering of the dense table: bucket `first + k × width` is number `k`.
#[derive(Debug, Clone, Copy)]
struct DenseBuckets {
    first: i64,
    width: i64,
    count: usize,
}

impl DenseBuckets {
    /// The numbering for `keys` over times `start..end`, when there is one: no time key (one
    /// bucket), or one grid whose buckets over the range number at most
    /// [`DENSE_MAX_BUCKETS`].
    fn new(keys: &[&TimeKey], start: i64, end: i64) -> Option<Self> {
        match keys {
            [] => Some(Self {
                first: 0,
                width: 1,
                count: 1,
            }),
            [TimeKey::Grid(grid)] if start < end => {
                let Grid { width, .. } = *grid;
                let first = grid.bucket(start)?;
                let last = grid.bucket(end - 1)?;
                let count = last.checked_sub(first)? / width + 1;
                (count <= DENSE_MAX_BUCKETS).then_some(Self {
                    first,
                    width,
                    count: count as usize,
                })
            }
            _ => None,
        }
    }

    /// The number of the bucket `buckets` (the one time key's, or none), if it has one.
    #[inline]
    fn number(&self, buckets: &[i64]) -> Option<usize> {
        let Some(&bucket) = buckets.first() else {
            return Some(0);
        };
        let offset = bucket.checked_sub(self.first)?;
        if offset < 0 || offset % self.width != 0 {
            return None;
        }
        let k = (offset / self.width) as usize;
        (k < self.count).then_some(k)
    }
}

/// Groups with their keys and states.
pub(crate) struct Groups {
    /// States of a new group, one per aggregate.
    template: Vec<State>,
    time_keys: usize,
    /// Tag values of each distinct tag set, by id.
    tag_sets: Vec<Vec<Option<String>>>,
    tag_ids: HashMap<Vec<Option<String>>, u32>,
    dense: Option<DenseBuckets>,
    /// Group of (tag set t, bucket number k) at `t × count + k`, for the first tag sets.
    slots: Vec<u32>,
    /// Groups outside the dense table, by (tag set, buckets); foldhash, since a lookup per
    /// chunk or run of rows makes SipHash a visible cost.
    hashed: HashMap<(u32, Vec<i64>), u32>,
    /// The key being looked up, kept so that a lookup allocates nothing.
    probe: (u32, Vec<i64>),
    /// Per group: its tag set.
    group_tags: Vec<u32>,
    /// Per group, `time_keys` buckets.
    group_buckets: Vec<i64>,
    /// Per group, one state per aggregate.
    states: Vec<State>,
}

impl Groups {
    /// No groups yet, for `plan` over times `start..end`.
    pub(crate) fn new(plan: &PreAggPlan, start: i64, end: i64) -> Self {
        let time_keys: Vec<&TimeKey> = time_keys(plan).collect();
        Self {
            template: plan.aggs.iter().map(State::new).collect(),
            time_keys: time_keys.len(),
            tag_sets: Vec::new(),
            tag_ids: HashMap::default(),
            dense: DenseBuckets::new(&time_keys, start, end),
            slots: Vec::new(),
            hashed: HashMap::default(),
            probe: (0, Vec::new()),
            group_tags: Vec::new(),
            group_buckets: Vec::new(),
            states: Vec::new(),
        }
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.group_tags.len()
    }

    /// Every tag set, by id.
    pub(crate) fn tag_sets(&self) -> &[Vec<Option<String>>] {
        &self.tag_sets
    }

    /// The tag set of group `group`.
    pub(crate) fn tags_of(&self, group: usize) -> u32 {
        self.group_tags[group]
    }

    /// The buckets of group `group`.
    pub(crate) fn buckets_of(&self, group: usize) -> &[i64] {
        &self.group_buckets[group * self.time_keys..(group + 1) * self.time_keys]
    }

    /// The states of group `group`.
    pub(crate) fn states_of(&self, group: usize) -> &[State] {
        let n = self.template.len();
        &self.states[group * n..(group + 1) * n]
    }

    /// The states of group `group`, to fold into.
    pub(crate) fn states_mut(&mut self, group: usize) -> &mut [State] {
        let n = self.template.len();
        &mut self.states[group * n..(group + 1) * n]
    }

    /// The id of the tag set `values`, added if new.
    pub(crate) fn tag_set(&mut self, values: Vec<Option<String>>) -> u32 {
        if let Some(id) = self.tag_ids.get(&values) {
            return *id;
        }
        let id = self.tag_sets.len() as u32;
        self.tag_sets.push(values.clone());
        self.tag_ids.insert(values, id);
        if let Some(dense) = self.dense
            && self.slots.len() == id as usize * dense.count
            && self.slots.len() + dense.count <= DENSE_MAX_SLOTS
        {
            self.slots.resize(self.slots.len() + dense.count, EMPTY);
        }
        id
    }

    /// The group of (tag set `tags`, `buckets`), added if new.
    #[inline]
    pub(crate) fn group(&mut self, tags: u32, buckets: &[i64]) -> usize {
        debug_assert_eq!(buckets.len(), self.time_keys);
        let slot = self.dense.and_then(|dense| {
            let slot = tags as usize * dense.count + dense.number(buckets)?;
            (slot < self.slots.len()).then_some(slot)
        });
        if let Some(slot) = slot {
            if self.slots[slot] != EMPTY {
                return self.slots[slot] as usize;
            }
            let group = self.push(tags, buckets);
            self.slots[slot] = group as u32;
            return group;
        }
        self.probe.0 = tags;
        self.probe.1.clear();
        self.probe.1.extend_from_slice(buckets);
        if let Some(group) = self.hashed.get(&self.probe) {
            return *group as usize;
        }
        let group = self.push(tags, buckets);
        self.hashed.insert(self.probe.clone(), group as u32);
        group
    }

    fn push(&mut self, tags: u32, buckets: &[i64]) -> usize {
        let group = self.group_tags.len();
        self.group_tags.push(tags);
        self.group_buckets.extend_from_slice(buckets);
        self.states.extend_from_slice(&self.template);
        group
    }

    /// Folds `other`, the groups of the same plan over other rows (another shard), into
    /// these: its tag sets are mapped onto these by value and its states merged group by
    /// group.
    pub(crate) fn absorb(&mut self, other: Groups, aggs: &[AggSpec]) {
        let tag_map: Vec<u32> = other
            .tag_sets
            .into_iter()
            .map(|values| self.tag_set(values))
            .collect();
        let mut states = other.states.into_iter();
        for group in 0..other.group_tags.len() {
            let tags = tag_map[other.group_tags[group] as usize];
            let buckets = &other.group_buckets[group * self.time_keys..][..self.time_keys];
            let into = self.group(tags, buckets);
            for (state, spec) in self.states_mut(into).iter_mut().zip(aggs) {
                if let Some(from) = states.next() {
                    state.merge(from, spec);
                }
            }
        }
    }
}

/// The tag keys of `plan`'s GROUP BY, in order.
pub(crate) fn tag_keys(plan: &PreAggPlan) -> impl Iterator<Item = &String> {
    plan.groups.iter().filter_map(|key| match key {
        GroupKey::Tag(name) => Some(name),
        GroupKey::Time(_) => None,
    })
}

/// The time keys of `plan`'s GROUP BY, in order.
pub(crate) fn time_keys(plan: &PreAggPlan) -> impl Iterator<Item = &TimeKey> {
    plan.groups.iter().filter_map(|key| match key {
        GroupKey::Time(key) => Some(key),
        GroupKey::Tag(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preagg::plan::AggKind;

    const HOUR: i64 = 3_600_000_000_000;

    fn plan(groups: Vec<GroupKey>) -> PreAggPlan {
        PreAggPlan {
            groups,
            aggs: vec![AggSpec {
                kind: AggKind::CountRows,
                field: None,
                state_types: vec![datafusion::arrow::datatypes::DataType::Int64],
                source: crate::preagg::plan::ValueSource::Field,
                orderings: Vec::new(),
            }],
        }
    }

    fn hourly() -> GroupKey {
        GroupKey::Time(TimeKey::Grid(Grid {
            width: HOUR,
            origin: 0,
        }))
    }

    fn count(groups: &Groups, group: usize) -> i64 {
        match groups.states_of(group)[0] {
            State::Count(n) => n,
            _ => panic!("not a count"),
        }
    }

    /// Adds one row to the group of (tags, bucket).
    fn add(groups: &mut Groups, tags: u32, buckets: &[i64]) -> usize {
        let group = groups.group(tags, buckets);
        if let State::Count(n) = &mut groups.states_mut(group)[0] {
            *n += 1;
        }
        group
    }

    #[test]
    fn dense_numbering_covers_the_range_only() {
        let key = TimeKey::Grid(Grid {
            width: HOUR,
            origin: 0,
        });
        let dense = DenseBuckets::new(&[&key], HOUR / 2, 3 * HOUR).expect("dense");
        assert_eq!((dense.first, dense.count), (0, 3));
        assert_eq!(dense.number(&[0]), Some(0));
        assert_eq!(dense.number(&[2 * HOUR]), Some(2));
        assert_eq!(dense.number(&[3 * HOUR]), None);
        assert_eq!(dense.number(&[-HOUR]), None);
        assert_eq!(dense.number(&[HOUR + 1]), None);
        assert!(DenseBuckets::new(&[&key], 0, i64::MAX).is_none());
        assert!(DenseBuckets::new(&[&key, &key], 0, HOUR).is_none());
        assert_eq!(DenseBuckets::new(&[], 0, 0).map(|d| d.count), Some(1));
    }

    /// The dense table and the hash map give the same groups, whichever a key falls in:
    /// buckets outside the planned range and tag sets past the table go to the map.
    #[test]
    fn dense_and_hashed_lookups_agree() {
        let plan = plan(vec![GroupKey::Tag("host".into()), hourly()]);
        let mut dense = Groups::new(&plan, 0, 4 * HOUR);
        let mut hashed = Groups::new(&plan, 0, i64::MAX);
        assert!(dense.dense.is_some() && hashed.dense.is_none());
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let host = format!("h{}", rng % 7);
            // Mostly inside the range, sometimes before or after it.
            let bucket = ((rng >> 8) % 8) as i64 * HOUR - 2 * HOUR;
            let a = dense.tag_set(vec![Some(host.clone())]);
            let b = hashed.tag_set(vec![Some(host)]);
            let ga = add(&mut dense, a, &[bucket]);
            let gb = add(&mut hashed, b, &[bucket]);
            assert_eq!(ga, gb);
        }
        assert_eq!(dense.len(), hashed.len());
        for g in 0..dense.len() {
            assert_eq!(dense.tags_of(g), hashed.tags_of(g));
            assert_eq!(dense.buckets_of(g), hashed.buckets_of(g));
            assert_eq!(count(&dense, g), count(&hashed, g));
        }
    }

    #[test]
    fn absorb_merges_equal_keys_and_keeps_the_rest() {
        let plan = plan(vec![GroupKey::Tag("host".into()), hourly()]);
        let mut a = Groups::new(&plan, 0, 2 * HOUR);
        let mut b = Groups::new(&plan, 0, 2 * HOUR);
        let x = a.tag_set(vec![Some("x".into())]);
        add(&mut a, x, &[0]);
        add(&mut a, x, &[HOUR]);
        // b numbers its tag sets differently.
        let y = b.tag_set(vec![Some("y".into())]);
        let bx = b.tag_set(vec![Some("x".into())]);
        add(&mut b, y, &[0]);
        add(&mut b, bx, &[HOUR]);
        add(&mut b, bx, &[HOUR]);
        a.absorb(b, &plan.aggs);
        let mut seen: Vec<(Option<String>, i64, i64)> = (0..a.len())
            .map(|g| {
                let tags = &a.tag_sets()[a.tags_of(g) as usize];
                (tags[0].clone(), a.buckets_of(g)[0], count(&a, g))
            })
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            vec![
                (Some("x".into()), 0, 1),
                (Some("x".into()), HOUR, 3),
                (Some("y".into()), 0, 1),
            ]
        );
    }

    #[test]
    fn tag_sets_past_the_dense_table_use_the_map() {
        let plan = plan(vec![GroupKey::Tag("host".into()), hourly()]);
        let mut groups = Groups::new(&plan, 0, DENSE_MAX_BUCKETS * HOUR);
        let sets = DENSE_MAX_SLOTS / DENSE_MAX_BUCKETS as usize + 2;
        for i in 0..sets {
            let t = groups.tag_set(vec![Some(format!("h{i}"))]);
            add(&mut groups, t, &[HOUR]);
            add(&mut groups, t, &[HOUR]);
        }
        assert!(groups.slots.len() <= DENSE_MAX_SLOTS);
        assert!(!groups.hashed.is_empty());
        assert_eq!(groups.len(), sets);
        assert!((0..groups.len()).all(|g| count(&groups, g) == 2));
    }
}
