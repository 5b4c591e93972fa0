//! Parts: immutable columnar files holding the rows of many series of one shard and one time
//! partition, sorted by (series id, time).
//!
//! ```text
//! SeriesData ─► PartWriter: cut into chunks ─► codec blocks + CRC32 ─► file ─► index + footer
//! file ─► PartReader::open: header, footer, index CRC, whole index checked ─► directory
//!      ─► chunks(series): ChunkMeta (time range, pre-aggregates) ─► read_chunk: CRC, decode
//! ```
//!
//! A series' rows are cut into chunks of whole Unix-epoch hours, of at most
//! [`MAX_ROWS_PER_CHUNK`] rows (see [`chunk_ranges`]: a day at 10 s becomes 24 × 360). A chunk is one timestamp block, then per column that has values
//! in the chunk, by increasing field id: a presence block (codec boolean, one value per row)
//! only if some row lacks the field, and a value block (one value per present row). Every
//! block is exactly one `strata_codec` block. Block positions are not stored: blocks are
//! written in index order, so a block's offset is the sum of the lengths before it.
//!
//! # File layout (format version 3, all fixed-width integers little-endian)
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `b"STRAPART"` |
//! | 8 | 4 | format version u32 = 3 (1 and 2 are still read) |
//! | 12 | 4 | CRC32 (crc32fast, IEEE) of bytes 0..12 |
//! | 16 | D | data blocks, back to back, in index order |
//! | 16 + D | S | index, stored (zstd frame, or raw; see below) |
//! | 16 + D + S | R + 24 | format 3: recovery section and its trailer (`recovery.rs`) |
//! | end - 72 | 72 | footer |
//!
//! Footer (72 bytes, at file length - 72):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | index offset u64 (= 16 + D) |
//! | 8 | 8 | index stored length u64 (= S) |
//! | 16 | 8 | index raw length u64; equal to S when the index is stored raw |
//! | 24 | 4 | CRC32 of the S stored index bytes |
//! | 28 | 4 | series count u32 |
//! | 32 | 8 | rows u64 (all series) |
//! | 40 | 8 | min time i64 (`i64::MAX` when there are no series) |
//! | 48 | 8 | max time i64 (`i64::MIN` when there are no series) |
//! | 56 | 4 | format version u32, equal to the header's |
//! | 60 | 4 | CRC32 of footer bytes 0..60 |
//! | 64 | 8 | magic `b"STRAPEND"` |
//!
//! The index is compressed with zstd (level 6) only when that makes it strictly smaller, so
//! stored length == raw length means raw. Raw index, with `uvar` an LEB128 varint (7 bits a
//! byte, low group first, high bit = more), `svar` a zig-zag varint (0, -1, 1, -2 → 0, 1, 2,
//! 3), `u32` 4 bytes LE, `f64` 8 bytes LE IEEE bits:
//!
//! ```text
//! index   := series*                       (by strictly increasing series id)
//! series  := uvar series_id, uvar table_id, uvar chunk_count (>= 1), chunk*
//! chunk   := uvar rows (1..=4096), svar min_time, uvar (max_time - min_time),
//!            [version 2: uvar data_len (bytes of the chunk's blocks),
//!                        uvar entry_len (index bytes from here to the entry's end)]
//!            time_block, uvar column_count, column*         (by increasing field id)
//! time_block := block (version 1)
//!            | block_opt (version 2: uvar 0 when the rows are evenly spaced, row i at
//!              min_time + i * (max_time - min_time) / (rows - 1))
//! column  := uvar field_id, u8 field_type (model::FieldType: 1 float, 2 integer,
//!            3 unsigned, 4 boolean, 5 string), block_opt presence, block values, preagg
//! block   := uvar length (>= 1), u32 crc32 of the block's bytes
//! block_opt := uvar 0 (no presence block: every row has the field) | block
//! preagg  := uvar count (1..=rows, present values; version 2 leaves it out when there is
//!            no presence block: count = rows), then by type:
//!   float    u8 flags (bit 0: has_nan), f64 min, f64 max, f64 sum, f64 first, f64 last
//!   integer  svar min, uvar (max-min), uvar (first-min), uvar (last-min)  [u64 wrapping],
//!            svar sum (i128)
//!   unsigned uvar min, uvar (max-min), uvar (first-min), uvar (last-min), uvar sum (u128)
//!            (version 2 stores both sums as uvar (sum - count * min))
//!   boolean  uvar trues, u8 flags (bit 0: first, bit 1: last)
//!   string   (nothing more)
//! ```
//!
//! Float pre-aggregate semantics (NaN, ±0, infinities) are documented on [`PreAgg`].
//! Integrity: the header, footer and index each carry a CRC32, every block carries one in
//! the index; the reader verifies the index at open and each block right after reading it.
//! Version 1 (no lengths, a time block in every chunk, every count stored) and version 2
//! (no recovery section; the same index as 3) are still read; `docs/format.md` has the
//! version history.

mod budget;
mod chunk;
mod cut;
mod directory;
mod format;
mod freed_memory;
mod indexes;
mod open_files;
mod preagg;
mod reader;
mod recovery;
mod run;
mod writer;

pub use chunk::{BlockRef, ChunkMeta, ColumnMeta};
pub use cut::{CHUNK_ALIGN_NS, MIN_ROWS_PER_CHUNK, chunk_ranges};
pub use format::{FORMAT_VERSION, MAX_ROWS_PER_CHUNK, OLDEST_READABLE_VERSION};
pub use freed_memory::{FreedMemory, IDLE_BEFORE_RETURN};
pub use indexes::{PartIndexes, PartIndexesStats};
pub use open_files::{OpenFileTicket, PartFile, PartFiles, PartFilesStats};
pub use preagg::PreAgg;
pub use reader::{IndexExtract, IndexLease, IndexLeases, PartReader};
pub use recovery::{PartRecovery, Provenance, SeriesKey, TableNames};
pub use writer::{PartSummary, PartWriter};

#[cfg(test)]
mod tests;
