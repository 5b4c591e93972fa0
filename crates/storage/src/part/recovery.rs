//! The recovery section of a format 3 part: what `strata repair` needs to rebuild the
//! manifest, the series log and the catalog from the parts alone, should one of those be
//! lost. Reads never look at it; `strata check` verifies it and `strata repair` decodes it.
//!
//! ```text
//! ... index | recovery (stored: zstd frame or raw) | trailer (24) | footer (72)
//! trailer  := u64 stored length, u64 raw length, u32 CRC32 of the stored bytes,
//!             u32 CRC32 of the trailer's first 20 bytes
//! recovery := uvar order, uvar level, uvar tombstones_applied,
//!             uvar replaced_count, replaced_count × uvar part id,
//!             uvar table_count, table*, series
//! table    := uvar table id, str database, str name,
//!             uvar field_count, field_count × (uvar field id, u8 field type, str name)
//! series   := uvar n, n × uvar id gap (the first id, then id − previous id − 1),
//!             n × uvar table id,
//!             uvar key_count, key_count × str key,
//!             n × (uvar tag_count, tag_count × uvar key index),   (tags sorted by key)
//!             per key index in order: one str value for each series having that key,
//!             in series order
//! str      := uvar length, UTF-8 bytes
//! ```
//!
//! Stored this way, a part names the rows it holds (series tags, table and field names) and
//! its place in the manifest (precedence order, level, the tombstones already applied, and
//! the parts its merge or purge replaced), like InfluxDB's TSM files carry their series keys
//! so that the index can be rebuilt from them. Tag values are stored a key at a time, so
//! that zstd sees like values together: on TSBS cpu-only series (10 tags) the section takes
//! 8.5 bytes a series, against 21 for the tags written series by series.

use std::collections::HashMap;
use std::path::Path;

use crate::error::StorageError;
use crate::model::{FieldId, FieldType, SeriesId, TableId};

use super::format::{IndexCursor, corrupt, put_u64, unpack};

/// Bytes of the trailer after the stored section.
pub const RECOVERY_TRAILER_LEN: u64 = 24;
/// Largest decompressed section a reader accepts (a bound against corrupt lengths).
pub const MAX_RECOVERY_RAW_BYTES: u64 = 1 << 31;
/// zstd level of the section, the index's. The value columns of a TSBS cpu-only part
/// (the zstd tool on 4,000 series) took 10.8 / 8.7 / 8.2 bytes a series at levels 3 / 6 /
/// 9, level 9 twice level 6's time.
const RECOVERY_ZSTD_LEVEL: i32 = super::format::INDEX_ZSTD_LEVEL;

/// Where a part stands in its shard's manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// Precedence order (the manifest entry's `order`).
    pub order: u64,
    /// Merges behind it (0 = flushed).
    pub level: u32,
    /// Highest tombstone id already applied to its rows.
    pub tombstones_applied: u64,
    /// Ids of the parts (same shard and partition) it replaced: a merge's or purge's inputs.
    pub replaces: Vec<u64>,
}

/// The names of one table that has rows in the part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableNames {
    /// Table id.
    pub id: TableId,
    /// Its database.
    pub database: String,
    /// Its name.
    pub name: String,
    /// Its fields, by id: (id, type, name).
    pub fields: Vec<(FieldId, FieldType, String)>,
}

/// The tags of one series of the part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesKey {
    /// Series id.
    pub id: SeriesId,
    /// Its table.
    pub table: TableId,
    /// Tags, sorted by key.
    pub tags: Vec<(String, String)>,
}

/// A decoded recovery section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartRecovery {
    /// The part's manifest facts.
    pub provenance: Provenance,
    /// The tables with rows in the part.
    pub tables: Vec<TableNames>,
    /// The series of the part that the writer was given tags for, by increasing id.
    pub series: Vec<SeriesKey>,
}

/// Collects a section while a part is written: series keys are encoded as they come, so
/// the writer holds bytes, not strings.
#[derive(Debug, Default)]
pub(super) struct RecoveryBuilder {
    pub provenance: Provenance,
    pub tables: Vec<TableNames>,
    ids: Vec<SeriesId>,
    series_tables: Vec<TableId>,
    keys: HashMap<String, u32>,
    key_list: Vec<String>,
    /// Per series: tag count, then the key index of each tag.
    shapes: Vec<u8>,
    /// Per key index: the values of the series having the key, in series order.
    values: Vec<Vec<u8>>,
}

impl RecoveryBuilder {
    /// Adds the tags (sorted by key) of series `id` of `table`; ids must increase.
    pub fn add_series<'a>(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        self.ids.push(id);
        self.series_tables.push(table);
        put_u64(&mut self.shapes, tags.len() as u64);
        for (k, v) in tags {
            let index = match self.keys.get(k) {
                Some(&index) => index,
                None => {
                    let index = self.key_list.len() as u32;
                    self.keys.insert(k.to_owned(), index);
                    self.key_list.push(k.to_owned());
                    self.values.push(Vec::new());
                    index
                }
            };
            put_u64(&mut self.shapes, u64::from(index));
            put_str(&mut self.values[index as usize], v);
        }
    }

    /// The stored section and its trailer.
    pub fn finish(&self) -> Vec<u8> {
        let p = &self.provenance;
        let values: usize = self.values.iter().map(Vec::len).sum();
        let mut raw = Vec::with_capacity(self.shapes.len() + values + 8 * self.ids.len() + 64);
        put_u64(&mut raw, p.order);
        put_u64(&mut raw, u64::from(p.level));
        put_u64(&mut raw, p.tombstones_applied);
        put_u64(&mut raw, p.replaces.len() as u64);
        for id in &p.replaces {
            put_u64(&mut raw, *id);
        }
        put_u64(&mut raw, self.tables.len() as u64);
        for t in &self.tables {
            put_u64(&mut raw, u64::from(t.id));
            put_str(&mut raw, &t.database);
            put_str(&mut raw, &t.name);
            put_u64(&mut raw, t.fields.len() as u64);
            for (id, ty, name) in &t.fields {
                put_u64(&mut raw, u64::from(*id));
                raw.push(*ty as u8);
                put_str(&mut raw, name);
            }
        }
        put_u64(&mut raw, self.ids.len() as u64);
        let mut next = 0u64;
        for &id in &self.ids {
            put_u64(&mut raw, u64::from(id).saturating_sub(next));
            next = u64::from(id) + 1;
        }
        for &table in &self.series_tables {
            put_u64(&mut raw, u64::from(table));
        }
        put_u64(&mut raw, self.key_list.len() as u64);
        for key in &self.key_list {
            put_str(&mut raw, key);
        }
        raw.extend_from_slice(&self.shapes);
        for values in &self.values {
            raw.extend_from_slice(values);
        }
        let mut out = match zstd::bulk::compress(&raw, RECOVERY_ZSTD_LEVEL) {
            // Strictly smaller, so that "stored length == raw length" means "not compressed".
            Ok(compressed) if compressed.len() < raw.len() => compressed,
            _ => raw.clone(),
        };
        let stored_len = out.len() as u64;
        let crc = crc32fast::hash(&out);
        let trailer_at = out.len();
        out.extend_from_slice(&stored_len.to_le_bytes());
        out.extend_from_slice(&(raw.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc.to_le_bytes());
        let trailer_crc = crc32fast::hash(&out[trailer_at..]);
        out.extend_from_slice(&trailer_crc.to_le_bytes());
        out
    }
}

/// Where the stored section is, from the trailer read at `trailer_at`; `region` is the
/// number of bytes between the index and the footer (section and trailer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecoveryTrailer {
    pub stored_len: u64,
    pub raw_len: u64,
    pub crc: u32,
}

impl RecoveryTrailer {
    /// Parses and checks the trailer against the room it has (`region` bytes).
    pub fn decode(
        path: &Path,
        trailer_at: u64,
        region: u64,
        b: &[u8; RECOVERY_TRAILER_LEN as usize],
    ) -> Result<Self, StorageError> {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
        let crc_of = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
        if crc32fast::hash(&b[..20]) != crc_of(20) {
            return Err(corrupt(
                path,
                trailer_at + 20,
                "recovery trailer checksum mismatch",
            ));
        }
        let trailer = Self {
            stored_len: word(0),
            raw_len: word(8),
            crc: crc_of(16),
        };
        if trailer.stored_len + RECOVERY_TRAILER_LEN != region
            || trailer.raw_len > MAX_RECOVERY_RAW_BYTES
            || trailer.stored_len > trailer.raw_len
        {
            return Err(corrupt(
                path,
                trailer_at,
                "recovery section lengths are impossible",
            ));
        }
        Ok(trailer)
    }

    /// Checks and decodes the stored section read from file offset `at`.
    pub fn decode_section(
        &self,
        path: &Path,
        at: u64,
        stored: Vec<u8>,
    ) -> Result<PartRecovery, StorageError> {
        if crc32fast::hash(&stored) != self.crc {
            return Err(corrupt(path, at, "recovery section checksum mismatch"));
        }
        let raw = unpack(stored, self.raw_len).ok_or_else(|| {
            corrupt(
                path,
                at,
                "recovery section does not decompress to its length",
            )
        })?;
        let mut cursor = IndexCursor::new(&raw, 0);
        decode_raw(&mut cursor).map_err(|reason| {
            corrupt(
                path,
                at,
                format!("recovery section byte {}: {reason}", cursor.pos),
            )
        })
    }
}

fn decode_raw(c: &mut IndexCursor<'_>) -> Result<PartRecovery, String> {
    let order = c.u64()?;
    let level = c.u32()?;
    let tombstones_applied = c.u64()?;
    let replaced = count(c)?;
    let mut replaces = Vec::with_capacity(replaced);
    for _ in 0..replaced {
        replaces.push(c.u64()?);
    }
    let table_count = count(c)?;
    let mut tables = Vec::with_capacity(table_count);
    for _ in 0..table_count {
        let id = c.u32()?;
        let database = get_str(c)?;
        let name = get_str(c)?;
        let field_count = count(c)?;
        let mut fields = Vec::with_capacity(field_count);
        for _ in 0..field_count {
            let field = c.u32()?;
            let tag = c.byte()?;
            let ty = FieldType::from_tag(tag).ok_or_else(|| format!("field type {tag}"))?;
            fields.push((field, ty, get_str(c)?));
        }
        tables.push(TableNames {
            id,
            database,
            name,
            fields,
        });
    }
    let series = decode_series(c)?;
    if !c.at_end() {
        return Err("bytes after the last series".to_owned());
    }
    Ok(PartRecovery {
        provenance: Provenance {
            order,
            level,
            tombstones_applied,
            replaces,
        },
        tables,
        series,
    })
}

/// The series part of a section (see the module docs): ids, tables, keys, shapes, then
/// the values a key at a time.
fn decode_series(c: &mut IndexCursor<'_>) -> Result<Vec<SeriesKey>, String> {
    let n = count(c)?;
    let mut series = Vec::with_capacity(n);
    let mut next = 0u64;
    for _ in 0..n {
        let id = next
            .checked_add(c.u64()?)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or("series id over u32")?;
        next = u64::from(id) + 1;
        series.push(SeriesKey {
            id,
            table: 0,
            tags: Vec::new(),
        });
    }
    for key in &mut series {
        key.table = c.u32()?;
    }
    let key_count = count(c)?;
    let mut keys = Vec::with_capacity(key_count);
    for _ in 0..key_count {
        keys.push(get_str(c)?);
    }
    // Per key: the (series, tag position) slots its values fill, in series order.
    let mut slots: Vec<Vec<(usize, usize)>> = vec![Vec::new(); key_count];
    for (at, key) in series.iter_mut().enumerate() {
        let tag_count = count(c)?;
        for position in 0..tag_count {
            let index = c.u64()?;
            let name = keys
                .get(index as usize)
                .ok_or_else(|| format!("key index {index} of {key_count}"))?;
            key.tags.push((name.clone(), String::new()));
            slots[index as usize].push((at, position));
        }
    }
    for slots in slots {
        for (at, position) in slots {
            series[at].tags[position].1 = get_str(c)?;
        }
    }
    Ok(series)
}

/// A count, bounded by the bytes left (each counted item takes at least one byte), so a
/// corrupt count cannot make the decoder reserve without bound.
fn count(c: &mut IndexCursor<'_>) -> Result<usize, String> {
    let n = c.u64()?;
    let left = c.remaining() as u64;
    if n > left {
        return Err(format!("count {n} is more than the {left} bytes left"));
    }
    Ok(n as usize)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn get_str(c: &mut IndexCursor<'_>) -> Result<String, String> {
    let len = count(c)?;
    let start = c.pos;
    c.skip(len as u64)?;
    String::from_utf8(c.slice(start, c.pos).to_vec()).map_err(|_| "string is not UTF-8".to_owned())
}
