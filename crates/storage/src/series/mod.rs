//! Per-shard series index: raw series key → series id without allocating, tag postings for
//! filters, persisted as an append-only log of new series.
//!
//! # Data path
//!
//! `Line::series_key` (raw bytes, as written) ─► [`SeriesIndex::lookup_raw`]: xxh3-128 of
//! (table, raw bytes) in the **alias map** ─► hit: id. On a miss,
//! [`SeriesIndex::get_or_create`] builds the [`canonical_key`] (tags sorted by key,
//! unescaped, last duplicate wins), looks its xxh3-128 up in the **canonical map** (a hit is
//! checked against the stored tags, so a hash collision cannot merge two series), creates
//! the next dense id if absent (interned tags, postings), and caches the raw key as an alias.
//!
//! # Memory
//!
//! Per series: a shape id and a value offset (8 bytes), one interned value id per tag
//! (4 bytes each; the sorted tag keys and the table are stored once per distinct key set,
//! the "shape"), a canonical map entry (24 bytes + control), up to
//! [`MAX_ALIASES_PER_SERIES`] alias entries (24 bytes + control each) and an alias counter
//! (1 byte). Strings are interned once per index. A (key, value) posting holding one series
//! is inline (8 bytes); only shared values get a `RoaringBitmap`.
//!
//! **Alias cap**: a series keeps at most [`MAX_ALIASES_PER_SERIES`] raw keys. A client
//! writing one series in endless tag orders or escapings adds nothing past the cap: those
//! lines take the canonical path (no allocation either, just a sort and a second hash).
//!
//! # File layout: `series.log`
//!
//! All integers little-endian. Header, then one record per series in id order:
//!
//! | offset | size | field                                                   |
//! |-------:|-----:|---------------------------------------------------------|
//! | 0      | 8    | magic `b"STRASER\0"`                                    |
//! | 8      | 4    | version, u32 = 1                                        |
//! | 12     | 4    | CRC32 (IEEE, crc32fast) of bytes 0..12, u32             |
//! | 16     | …    | records                                                 |
//!
//! Record (`len` = body length, 10 ≤ `len` ≤ 4 MiB):
//!
//! | offset | size | field                                                   |
//! |-------:|-----:|---------------------------------------------------------|
//! | 0      | 4    | `len`, u32                                              |
//! | 4      | 4    | CRC32 of the body, u32                                  |
//! | 8      | 4    | body: series id, u32 (= previous record's id + 1; first 0) |
//! | 12     | 4    | body: table id, u32                                     |
//! | 16     | 2    | body: tag count `n`, u16                                |
//! | 18     | …    | body: `n` × (key len u16, key UTF-8, value len u16, value UTF-8), keys sorted bytewise, unique |
//!
//! Limits: `n` ≤ 65535 and every key and value ≤ 65535 bytes (checked on create, never
//! truncated). Loading: a last record that is incomplete or fails its CRC, with no valid
//! record after it, is a torn append: the file is cut there and [`OpenReport::torn_tail`]
//! says so. A bad record followed by a valid one, a record with a good CRC that does not
//! decode, ids out of sequence or a duplicate tag set is [`SeriesError::Corrupt`].
//! Known limit: if a crash persists a later page of one append before an earlier one, the
//! result reads as damage in the middle (Corrupt), not as a torn tail.

mod error;
mod index;
mod intern;
mod key;
mod log;
mod postings;
mod query;
#[cfg(test)]
mod tests;

pub use error::SeriesError;
pub use index::{MAX_ALIASES_PER_SERIES, OpenReport, SeriesIndex};
pub use key::canonical_key;
pub use log::{FRAME_LEN, HEADER_LEN, MAGIC, MAX_BODY_LEN, SERIES_LOG_FILE, TornTail, VERSION};
pub use postings::TagPredicate;
