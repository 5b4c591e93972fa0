//! Series keys: the canonical form of a tag set, the hashes the index keys its maps by, and
//! the hasher those maps use (the keys are already hashes, so hashing them again is waste).

use std::hash::{BuildHasherDefault, Hasher};

use xxhash_rust::xxh3::{xxh3_64_with_seed, xxh3_128_with_seed};

use crate::model::TableId;

/// Sorts and dedupes `tags` by key without allocating when there are at most this many
/// tags (the parser's default limit is 256; TSBS writes 10). Longer tag sets use a `Vec`.
const STACK_ORDER_LEN: usize = 64;

/// Fills `order` with the indexes into `tags` of the canonical tag set: sorted by key
/// (bytewise), and for a key written more than once only its last occurrence (InfluxDB's
/// rule: the last one wins). Reuses `order`'s capacity.
pub(crate) fn canonical_order<K: AsRef<str>, V: AsRef<str>>(tags: &[(K, V)], order: &mut Vec<u32>) {
    order.clear();
    order.resize(tags.len(), 0);
    let kept = canonical_order_in(tags, order);
    order.truncate(kept);
}

/// Writes the canonical key of series (`table`, `tags`) into `out` (cleared first; its
/// capacity is reused).
///
/// Tags are sorted by key bytewise, keys written more than once keep their last value
/// (InfluxDB's rule), and every part is length-prefixed so that no two tag sets share a key:
///
/// ```text
/// table id u32 LE | tag count u32 LE | { key len u32 LE | key | value len u32 LE | value }*
/// ```
///
/// Keys and values are the unescaped strings, so two lines that write the same tags in a
/// different order or with different escaping have the same canonical key. Allocates only
/// for tag sets longer than 64 tags (to sort them).
pub fn canonical_key<K: AsRef<str>, V: AsRef<str>>(
    table: TableId,
    tags: &[(K, V)],
    out: &mut Vec<u8>,
) {
    if tags.len() <= STACK_ORDER_LEN {
        let mut order = [0u32; STACK_ORDER_LEN];
        let n = canonical_order_in(tags, &mut order[..tags.len()]);
        write_canonical(table, tags, &order[..n], out);
    } else {
        let mut order = Vec::new();
        canonical_order(tags, &mut order);
        write_canonical(table, tags, &order, out);
    }
}

/// [`canonical_order`] into a slice of exactly `tags.len()` entries; returns how many of
/// them are kept (at the front).
fn canonical_order_in<K: AsRef<str>, V: AsRef<str>>(tags: &[(K, V)], order: &mut [u32]) -> usize {
    for (i, o) in order.iter_mut().enumerate() {
        *o = i as u32;
    }
    // Unstable sort does not allocate; ties (same key) are ordered by position so that
    // the last occurrence of a key comes last in its run, which is the one kept.
    order.sort_unstable_by(|&a, &b| {
        let (ka, kb) = (tags[a as usize].0.as_ref(), tags[b as usize].0.as_ref());
        ka.as_bytes().cmp(kb.as_bytes()).then(a.cmp(&b))
    });
    let mut kept = 0;
    for i in 0..order.len() {
        if i + 1 == order.len()
            || tags[order[i] as usize].0.as_ref() != tags[order[i + 1] as usize].0.as_ref()
        {
            order[kept] = order[i];
            kept += 1;
        }
    }
    kept
}

/// Writes the canonical key of the tags at `order` (already canonical) into `out`.
pub(crate) fn write_canonical<K: AsRef<str>, V: AsRef<str>>(
    table: TableId,
    tags: &[(K, V)],
    order: &[u32],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&table.to_le_bytes());
    out.extend_from_slice(&(order.len() as u32).to_le_bytes());
    for &i in order {
        let (k, v) = &tags[i as usize];
        write_part(out, k.as_ref());
        write_part(out, v.as_ref());
    }
}

/// Appends one length-prefixed part of a canonical key.
pub(crate) fn write_part(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A 128-bit hash as four words, so that a map entry (hash, `u32` id) is 20 bytes with
/// 4-byte alignment instead of 32 bytes for a `(u128, u32)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hash128([u32; 4]);

impl std::hash::Hash for Hash128 {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Already uniformly random: 64 of its bits place it in the map, `Eq` compares all 128.
        state.write_u64(u64::from(self.0[0]) << 32 | u64::from(self.0[1]));
    }
}

/// A 32-bit hash, for maps whose every hit is checked against the stored value (the
/// interner, the canonical map): collisions cost a second look, never a wrong answer.
pub(crate) type Hash32 = u32;

/// The per-index hash seeds. Nothing hashed is ever written to disk, so seeds are drawn at
/// random: a client cannot craft raw keys that collide or that pile into one bucket. The
/// canonical and string seeds are drawn per index; the raw-key seed once per process
/// ([`raw_key_hash`]), so that a writer hashes a row's key once, on its own thread while
/// the bytes are in cache, for whichever shard the row goes to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seeds {
    raw: u64,
    canonical: u64,
    string: u64,
}

/// The process's raw-key seed (see [`Seeds`]).
fn raw_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0u8)
    })
}

/// The hash [`crate::series::SeriesIndex::lookup_raw_hash`] finds a raw series key of
/// `table` by, in every index of this process.
#[inline]
pub(crate) fn raw_key_hash(table: TableId, raw_key: &[u8]) -> Hash128 {
    split(xxh3_128_with_seed(raw_key, raw_seed() ^ mix_table(table)))
}

impl Seeds {
    /// Draws seeds from the standard library's per-process random keys.
    pub(crate) fn random() -> Self {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        Self {
            raw: raw_seed(),
            canonical: state.hash_one(2u8),
            string: state.hash_one(3u8),
        }
    }

    /// Hash of the raw series key of `table`: the table id is mixed into the seed, so the
    /// same bytes in two tables are two keys.
    #[inline]
    pub(crate) fn raw(&self, table: TableId, raw_key: &[u8]) -> Hash128 {
        split(xxh3_128_with_seed(raw_key, self.raw ^ mix_table(table)))
    }

    /// Hash of a canonical key (which starts with the table id).
    #[inline]
    pub(crate) fn canonical(&self, key: &[u8]) -> Hash32 {
        xxh3_64_with_seed(key, self.canonical) as u32
    }

    /// Hash of an interned string.
    #[inline]
    pub(crate) fn string(&self, s: &str) -> Hash32 {
        xxh3_64_with_seed(s.as_bytes(), self.string) as u32
    }
}

#[inline]
fn mix_table(table: TableId) -> u64 {
    u64::from(table).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[inline]
fn split(h: u128) -> Hash128 {
    Hash128([
        (h >> 96) as u32,
        (h >> 64) as u32,
        (h >> 32) as u32,
        h as u32,
    ])
}

/// Hasher for map keys that are already hashes (used as they are) or dense small ids
/// (multiplied by an odd constant: distinct low bits stay distinct, the high bits hashbrown
/// uses for its control bytes get mixed).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }

    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = self.0.rotate_left(29) ^ x;
    }

    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.0 = (self.0 ^ u64::from(x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Builds [`KeyHasher`]s.
pub(crate) type KeyHash = BuildHasherDefault<KeyHasher>;

/// A map keyed by hashes or dense ids.
pub(crate) type KeyMap<K, V> = std::collections::HashMap<K, V, KeyHash>;

/// Estimated heap bytes of a `HashMap<K, V>` (hashbrown) whose `capacity()` is `capacity`:
/// buckets × (entry + 1 control byte) + one group of trailing control bytes.
pub(crate) fn map_bytes<K, V>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 7 {
        capacity + 1
    } else {
        capacity / 7 * 8
    };
    buckets * (size_of::<(K, V)>() + 1) + 16
}
