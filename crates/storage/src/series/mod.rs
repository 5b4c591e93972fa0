//! Per-shard series index: raw series key → series id without allocating, tag postings for
//! filters, persisted as an append-only log of new series.
//!
//! # Data path
//!
//! `Line::series_key` (raw bytes, as written) ─► [`SeriesIndex::lookup_raw`]: seeded
//! xxh3-128 of (table, raw bytes) in the **alias map** ─► hit: id (trusted: a false hit
//! needs a 128-bit coincidence). On a miss, [`SeriesIndex::get_or_create`] builds the
//! [`canonical_key`] (tags sorted by key, unescaped, last duplicate wins), looks its hash up
//! in the **canonical map**, checks a hit against the stored tags (so the 32-bit hash kept
//! there can collide without merging series: colliding keys go to an overflow map keyed
//! by the whole canonical key), creates the next dense id if absent (interned tags,
//! postings), and caches the raw key as an alias. Hash seeds are random (nothing hashed is
//! persisted), so clients cannot aim collisions; the raw-key seed is drawn once per process,
//! so that a writer hashes each row's key once, on its own thread ([`raw_key_hash`]), for
//! whichever shard the row goes to.
//!
//! # Memory
//!
//! Per series: a shape id and a value offset (8 bytes), one interned value id per tag
//! (4 bytes; a series' table and sorted tag key ids are stored once per distinct key set,
//! its "shape"), a canonical map entry (8 bytes + 1 control byte), up to
//! [`MAX_ALIASES_PER_SERIES`] alias entries (20 bytes + 1 each) and an alias counter (1
//! byte). Strings are interned once per index (bytes + 4-byte end offset + 9-byte map
//! entry). A (key, value) posting holding one series is inline (8 bytes); only values shared
//! by several series get a `RoaringBitmap`. Hash maps run between 44% and 87% full
//! (power-of-two growth). Measured at 1,000,000 TSBS cpu-only series (10 tags, one alias
//! each): `memory_bytes()` ≈ 249 B/series, RSS delta ≈ 194 B/series
//! (`cargo run --release -p strata-storage --example series_memory`).
//!
//! **Alias cap**: a series keeps at most [`MAX_ALIASES_PER_SERIES`] raw keys. A client
//! writing one series in endless tag orders or escapings adds nothing past the cap: those
//! lines take the canonical path (no allocation either, just a sort and a second hash).
//!
//! # File layout: `series.log`
//!
//! All integers little-endian. Header, then one record per series in id order, with
//! retire records among them:
//!
//! | offset | size | field                                                   |
//! |-------:|-----:|---------------------------------------------------------|
//! | 0      | 8    | magic `b"STRASER\0"`                                    |
//! | 8      | 4    | version, u32 = 2 (1 is read too: it has no retire records) |
//! | 12     | 4    | CRC32 (IEEE, crc32fast) of bytes 0..12, u32             |
//! | 16     | …    | records                                                 |
//!
//! Series record (`len` = body length, 10 ≤ `len` ≤ 4 MiB):
//!
//! | offset | size | field                                                   |
//! |-------:|-----:|---------------------------------------------------------|
//! | 0      | 4    | `len`, u32 (bit 31 clear)                               |
//! | 4      | 4    | CRC32 of the body, u32                                  |
//! | 8      | 4    | body: series id, u32 (= previous series record's id + 1; first 0) |
//! | 12     | 4    | body: table id, u32                                     |
//! | 16     | 2    | body: tag count `n`, u16                                |
//! | 18     | …    | body: `n` × (key len u16, key UTF-8, value len u16, value UTF-8), keys sorted bytewise, unique |
//!
//! Retire record (version 2; 4 ≤ `len` ≤ 4 MiB): series whose every row is gone leave the
//! index (see `retire.rs`); their ids are never given to another series.
//!
//! | offset | size | field                                                   |
//! |-------:|-----:|---------------------------------------------------------|
//! | 0      | 4    | `len` \| 0x8000_0000, u32 (bit 31 set marks the kind)   |
//! | 4      | 4    | CRC32 of the body, u32                                  |
//! | 8      | 4    | body: id count `c`, u32 (`len` = 4 + 4`c`)              |
//! | 12     | 4`c` | body: `c` series ids, u32, ascending, each an earlier series record's, not retired before |
//!
//! A version 1 log gets its header rewritten as version 2 (in place, fsynced) just before
//! its first retire record is appended.
//!
//! Limits: `n` ≤ 65535 and every key and value ≤ 65535 bytes (checked on create, never
//! truncated). Loading: a last record that is incomplete or fails its CRC, with no valid
//! record after it, is a torn append: the file is cut there and [`OpenReport::torn_tail`]
//! says so. A bad record followed by a valid one, a record with a good CRC that does not
//! decode, ids out of sequence, a duplicate tag set (among series not retired) or a retire
//! record naming a missing or retired series is [`SeriesError::Corrupt`].
//! Known limit: if a crash persists a later page of one append before an earlier one, the
//! result reads as damage in the middle (Corrupt), not as a torn tail.

mod error;
mod index;
mod intern;
mod key;
mod limit;
mod log;
mod postings;
mod query;
mod retire;
#[cfg(test)]
mod tests;

pub use error::SeriesError;
pub use index::{MAX_ALIASES_PER_SERIES, OpenReport, SeriesIndex};
pub use key::canonical_key;
pub(crate) use key::{Hash128, raw_key_hash};
pub use limit::SeriesLimit;
pub use log::{
    FRAME_LEN, HEADER_LEN, MAGIC, MAX_BODY_LEN, SERIES_LOG_FILE, Salvaged, TornTail, VERSION,
    salvage,
};
pub use postings::TagPredicate;
pub use query::InternedStr;
