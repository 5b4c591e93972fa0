//! The latest series of each tag group, collected from [`Engine::latest_each`] views
//! without allocating per series: tag values become small ids (one per distinct string,
//! across shards), found from each shard's interned string ids through a vector, so a
//! series costs a few vector lookups, one hash lookup of its group key, and, when it is
//! its group's latest so far, copying its time, tag ids and field values over the group's.
//!
//! [`Engine::latest_each`]: strata_storage::Engine::latest_each

use std::rc::Rc;

use foldhash::HashMap;
use strata_storage::LatestView;
use strata_storage::model::{FieldId, SeriesId, Value};

/// No id: a tag the series lacks, or a string not looked at yet.
pub(super) const NONE: usize = usize::MAX;
/// A tag key the statement does not read.
const NOT_READ: usize = usize::MAX - 1;

/// What a shard's interned string ids stand for here.
#[derive(Default)]
struct ShardIds {
    /// Key string id → the slot of the tag in [`Groups::tags`] (or `NOT_READ`, `NONE`).
    slot: Vec<usize>,
    /// Value string id → the string's id in [`Groups::strings`] (or `NONE`).
    string: Vec<usize>,
}

/// The entry for `id` in `ids`, grown with `NONE` as needed.
fn entry(ids: &mut Vec<usize>, id: u32) -> &mut usize {
    let i = id as usize;
    if ids.len() <= i {
        ids.resize(i + 1, NONE);
    }
    &mut ids[i]
}

/// The latest series of each group seen so far, in the order groups were first seen.
pub(super) struct Groups<'p> {
    /// Tags the statement reads: the group keys first, then output tags (no repeats).
    names: Vec<&'p str>,
    /// For each group key, its slot in `names`.
    key_slots: Vec<usize>,
    /// Fields whose values are kept, by slot.
    fields: Vec<FieldId>,
    /// Distinct tag values by id, and the other way round.
    strings: Vec<Rc<str>>,
    ids: HashMap<Rc<str>, usize>,
    shards: Vec<ShardIds>,
    /// Group key (value ids of the keys) → group index.
    index: HashMap<Box<[usize]>, usize>,
    /// Per group: the latest series' time, shard and series id.
    latest: Vec<(i64, usize, SeriesId)>,
    /// Per group, `names.len()` value ids of its latest series (`NONE`: no such tag).
    tags: Vec<usize>,
    /// Per group, `fields.len()` values of its latest series.
    values: Vec<Option<Value>>,
    /// Scratch: the tag ids and the group key of the series being added.
    row: Vec<usize>,
    key: Vec<usize>,
    /// More than `max` groups: the caller gives up, so adding stops.
    max: usize,
    over: bool,
}

impl<'p> Groups<'p> {
    /// Groups by the tags `keys`; `tags` are further tags to keep, `fields` the values to
    /// keep; past `max` groups, [`Groups::over`] says so and nothing more is kept.
    pub(super) fn new(
        keys: &[&'p str],
        tags: &[&'p str],
        fields: Vec<FieldId>,
        max: usize,
    ) -> Self {
        let mut names: Vec<&'p str> = Vec::new();
        let mut slot = |name: &'p str| match names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                names.push(name);
                names.len() - 1
            }
        };
        let key_slots = keys.iter().map(|k| slot(k)).collect();
        for tag in tags {
            slot(tag);
        }
        Groups {
            row: vec![NONE; names.len()],
            key: Vec::with_capacity(keys.len()),
            names,
            key_slots,
            fields,
            strings: Vec::new(),
            ids: HashMap::default(),
            shards: Vec::new(),
            index: HashMap::default(),
            latest: Vec::new(),
            tags: Vec::new(),
            values: Vec::new(),
            max,
            over: false,
        }
    }

    /// Adds one series' latest row: it becomes its group's latest when its time is later,
    /// or equal and it comes first in (shard, series id) order, the order
    /// `Engine::latest` returns series in (so the first read stays on ties, as before).
    pub(super) fn add(&mut self, view: LatestView<'_>) {
        if self.over {
            return;
        }
        let shard = view.shard();
        if self.shards.len() <= shard {
            self.shards.resize_with(shard + 1, ShardIds::default);
        }
        self.row.fill(NONE);
        for (key, value) in view.tags() {
            let ids = &mut self.shards[shard];
            let slot = entry(&mut ids.slot, key.id);
            if *slot == NONE {
                *slot = self
                    .names
                    .iter()
                    .position(|n| *n == key.text)
                    .unwrap_or(NOT_READ);
            }
            let slot = *slot;
            if slot == NOT_READ {
                continue;
            }
            let string = entry(&mut ids.string, value.id);
            if *string == NONE {
                *string = match self.ids.get(value.text) {
                    Some(id) => *id,
                    None => {
                        let text: Rc<str> = Rc::from(value.text);
                        self.strings.push(Rc::clone(&text));
                        self.ids.insert(text, self.strings.len() - 1);
                        self.strings.len() - 1
                    }
                };
            }
            if let Some(cell) = self.row.get_mut(slot) {
                *cell = *string;
            }
        }
        self.key.clear();
        self.key.extend(
            self.key_slots
                .iter()
                .map(|s| self.row.get(*s).copied().unwrap_or(NONE)),
        );
        let candidate = (view.time(), shard, view.series());
        let group = match self.index.get(self.key.as_slice()) {
            Some(&group) => {
                let (time, shard, series) = self.latest[group];
                let later = candidate.0 > time
                    || (candidate.0 == time && (candidate.1, candidate.2) < (shard, series));
                if !later {
                    return;
                }
                group
            }
            None => {
                if self.latest.len() >= self.max {
                    self.over = true;
                    return;
                }
                let group = self.latest.len();
                self.index.insert(self.key.as_slice().into(), group);
                self.latest.push(candidate);
                self.tags.resize(self.tags.len() + self.names.len(), NONE);
                self.values
                    .resize(self.values.len() + self.fields.len(), None);
                group
            }
        };
        self.latest[group] = candidate;
        let tags = group * self.names.len();
        self.tags[tags..tags + self.names.len()].copy_from_slice(&self.row);
        let values = group * self.fields.len();
        for (i, field) in self.fields.iter().enumerate() {
            self.values[values + i] = view.field(*field).cloned();
        }
    }

    /// Whether there were more than `max` groups.
    pub(super) fn over(&self) -> bool {
        self.over
    }

    /// Number of groups.
    pub(super) fn len(&self) -> usize {
        self.latest.len()
    }

    /// The latest time of `group`.
    pub(super) fn time(&self, group: usize) -> i64 {
        self.latest.get(group).map_or(0, |l| l.0)
    }

    /// The slot of tag `name` among the tags kept (`None`: not kept, so null in every
    /// group); looked up once per column, not per row.
    pub(super) fn tag_slot(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| *n == name)
    }

    /// The value id in tag slot `slot` of `group`'s latest series (`NONE`: it has none).
    pub(super) fn tag_id(&self, group: usize, slot: usize) -> usize {
        self.tags
            .get(group * self.names.len() + slot)
            .copied()
            .unwrap_or(NONE)
    }

    /// The value of group key `key` (an index into the keys) of `group`.
    pub(super) fn key(&self, group: usize, key: usize) -> Option<&str> {
        let slot = *self.key_slots.get(key)?;
        self.string(self.tag_id(group, slot))
    }

    /// The string of a value id.
    pub(super) fn string(&self, id: usize) -> Option<&str> {
        self.strings.get(id).map(|s| &**s)
    }

    /// Number of distinct tag values (ids are below it).
    pub(super) fn strings(&self) -> usize {
        self.strings.len()
    }

    /// The slot of field `field` among the values kept (`None`: not kept).
    pub(super) fn field_slot(&self, field: FieldId) -> Option<usize> {
        self.fields.iter().position(|f| *f == field)
    }

    /// The value in field slot `slot` of `group`'s latest series.
    pub(super) fn value(&self, group: usize, slot: usize) -> Option<&Value> {
        self.values.get(group * self.fields.len() + slot)?.as_ref()
    }
}
