//! The index's string interner: every distinct tag key and tag value is stored once, in one
//! arena, and named by a dense `u32` id.

use super::key::{Hash32, KeyMap, Seeds, map_bytes};

/// Id of an interned string, dense from 0.
pub(crate) type StrId = u32;

/// Strings stored back to back in one `String`; string `i` is `arena[ends[i-1]..ends[i]]`.
/// A string costs its bytes, 4 bytes of end offset and one map entry (8 bytes + control).
#[derive(Debug)]
pub(crate) struct Interner {
    arena: String,
    ends: Vec<u32>,
    /// String hash → id of the first string interned with that hash.
    by_hash: KeyMap<Hash32, StrId>,
    /// Further strings whose 32-bit hash equals an earlier, different string's (about
    /// n²/2³³ of them: ~116 at a million strings).
    collisions: KeyMap<Hash32, Vec<StrId>>,
    seeds: Seeds,
}

impl Interner {
    pub(crate) fn new(seeds: Seeds) -> Self {
        Self {
            arena: String::new(),
            ends: Vec::new(),
            by_hash: KeyMap::default(),
            collisions: KeyMap::default(),
            seeds,
        }
    }

    /// The string with id `id`. Panics if `id` was not handed out by this interner.
    #[inline]
    pub(crate) fn get(&self, id: StrId) -> &str {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    /// The id of `s` if it is interned.
    pub(crate) fn find(&self, s: &str) -> Option<StrId> {
        self.find_hashed(self.seeds.string(s), s)
    }

    fn find_hashed(&self, h: Hash32, s: &str) -> Option<StrId> {
        let first = *self.by_hash.get(&h)?;
        if self.get(first) == s {
            return Some(first);
        }
        self.collisions
            .get(&h)?
            .iter()
            .copied()
            .find(|&id| self.get(id) == s)
    }

    /// The id of `s`, interning it first if needed. `None` when the arena would pass
    /// 4 GiB or the ids `u32::MAX` (the offsets and ids are `u32`).
    pub(crate) fn intern(&mut self, s: &str) -> Option<StrId> {
        let h = self.seeds.string(s);
        if let Some(id) = self.find_hashed(h, s) {
            return Some(id);
        }
        let end = u32::try_from(self.arena.len() + s.len()).ok()?;
        let id = StrId::try_from(self.ends.len()).ok()?;
        self.arena.push_str(s);
        self.ends.push(end);
        match self.by_hash.entry(h) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(id);
            }
            std::collections::hash_map::Entry::Occupied(_) => {
                self.collisions.entry(h).or_default().push(id);
            }
        }
        Some(id)
    }

    /// Strings stored in the collision lists (their hash was an earlier string's).
    #[cfg(test)]
    pub(crate) fn collision_count(&self) -> usize {
        self.collisions.values().map(Vec::len).sum()
    }

    /// Estimated heap bytes, from capacities.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.arena.capacity()
            + self.ends.capacity() * 4
            + map_bytes::<Hash32, StrId>(self.by_hash.capacity())
            + map_bytes::<Hash32, Vec<StrId>>(self.collisions.capacity())
            + self
                .collisions
                .values()
                .map(|v| v.capacity() * 4)
                .sum::<usize>()
    }
}
