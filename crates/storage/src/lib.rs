//! Strata's storage engine.
//!
//! Module map:
//! - [`model`]: ids, field types and values shared by every module.
//! - [`wal`]: per-shard write-ahead log: segments of length- and CRC-framed records, group
//!   commit, torn-tail recovery.
//! - [`part`]: immutable columnar part files: checksummed codec blocks, pre-aggregates, index.
//! - [`series`]: per-shard series index: raw series key → id without allocating, tag
//!   postings for filters, persisted as a log of new series.
//!
//! Write path: `line protocol → parse (writer thread) → group by shard → shard: WAL append +
//! memtable → flush → part → merge`.

pub mod catalog;
#[allow(dead_code)] // TEMP: used by the engine, being wired in
mod checked_json;
pub mod column;
pub mod error;
mod fsutil;
#[allow(dead_code)] // TEMP: used by the engine, being wired in
pub mod ingest;
#[allow(dead_code)] // TEMP: used by the engine, being wired in
mod layout;
pub mod manifest;
pub mod memtable;
pub mod model;
pub mod options;
pub mod part;
pub mod series;
#[allow(dead_code)] // TEMP: used by the engine, being wired in
mod varint;
pub mod wal;
#[allow(dead_code)] // TEMP: used by the engine, being wired in
mod wal_record;
