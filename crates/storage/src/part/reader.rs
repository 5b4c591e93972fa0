//! Reads a part: checks header, footer and index once at open, keeps the series it holds
//! (a bitmap per table, `directory.rs`) and the decompressed index with its directory
//! (within the process's budget of index memory, read again when dropped), and parses chunk
//! entries and reads blocks on demand with positional reads, so one reader serves many
//! threads.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::column::SeriesData;
use crate::error::StorageError;
use crate::model::{FieldId, FieldType, SeriesId, TableId, Timestamp};

use super::budget::{Held, Lease};
use super::chunk::{BlockRef, ChunkHead, ChunkMeta, ColumnMeta, concat};
use super::directory::{DirEntry, PartIndex, PartMembers, index_offset, walk_directory};
use super::format::{
    FOOTER_LEN, Footer, HEADER_LEN, IndexCursor, MAX_INDEX_RAW_BYTES, MAX_ROWS_PER_CHUNK,
    check_header, corrupt, unpack,
};
use super::freed_memory::FreedMemory;
use super::indexes::PartIndexes;
use super::open_files::{PartFile, PartFiles};
use super::recovery::{PartRecovery, RECOVERY_TRAILER_LEN, RecoveryTrailer};
use super::run;
use super::writer::PartSummary;

/// A part's index kept in memory ([`PartReader::lease_index`]).
#[derive(Debug)]
pub struct IndexLease<'a> {
    lease: Lease<'a, PartIndex>,
}

/// Some series' entries of a part's index, copied out of it ([`PartReader::extract`]):
/// held by the read that took them, outside the budget of index memory.
#[derive(Debug, Default)]
pub struct IndexExtract {
    index: PartIndex,
}

impl IndexExtract {
    /// Bytes it holds.
    pub fn bytes(&self) -> usize {
        self.index.cost()
    }
}

/// The leases of a read that goes over many parts series by series, given back together.
/// Past the budget, such a read holds every index it goes over until it ends; what it
/// frees then is returned to the system once reads leave it alone (`freed_memory.rs`).
#[derive(Debug, Default)]
pub struct IndexLeases<'a> {
    leases: Vec<IndexLease<'a>>,
}

impl<'a> IndexLeases<'a> {
    /// Adds a lease to give back with the others.
    pub fn push(&mut self, lease: IndexLease<'a>) {
        if self.leases.is_empty() {
            FreedMemory::global().read_started();
        }
        self.leases.push(lease);
    }
}

impl Drop for IndexLeases<'_> {
    fn drop(&mut self) {
        let Some(budget) = self.leases.first().map(|l| l.lease.budget()) else {
            return;
        };
        let before = budget.held();
        // The last lease given back makes room down to the budget.
        self.leases.clear();
        FreedMemory::global().read_ended(before.saturating_sub(budget.held()));
    }
}

/// A part, checked at open, with the series it holds in memory and its index and
/// directory held within the process's budget of index memory ([`PartIndexes`]).
/// `Send + Sync`: reads go through
/// `read_exact_at` on a shared file, which the process's budget of open part files
/// ([`PartFiles`]) may close between reads and open again.
#[derive(Debug)]
pub struct PartReader {
    path: PathBuf,
    file: PartFile,
    summary: PartSummary,
    /// The decompressed index and its directory, held within the process's budget of
    /// index bytes ([`PartIndexes`]) and read again from the file when the budget dropped
    /// them.
    index: Held<PartIndex>,
    /// File offset of the index: also the end of the data blocks.
    index_offset: u64,
    /// The index as stored: its length, its length decompressed and its CRC32.
    index_stored: (u64, u64, u32),
    /// The series the part holds, by table.
    members: PartMembers,
    /// The file's format version.
    version: u32,
    /// Format 3: where the recovery section is (file offset) and its trailer.
    recovery: Option<(u64, RecoveryTrailer)>,
    /// The file's bytes by table, by increasing table id; they sum to the file's length.
    table_bytes: Vec<(TableId, u64)>,
}

impl PartReader {
    /// Opens and checks the part at `path`: header, footer, index checksum, and every entry
    /// of the index (ids, counts, time ranges, block positions) against the footer. A part
    /// that opens has a consistent index; its blocks are checked as they are read.
    pub fn open(path: &Path) -> Result<Self, StorageError> {
        Self::open_in(path, PartFiles::global(), PartIndexes::global())
    }

    /// As [`PartReader::open`], its file and index held within the budgets given.
    pub(crate) fn open_in(
        path: &Path,
        files: &PartFiles,
        indexes: &PartIndexes,
    ) -> Result<Self, StorageError> {
        let file = File::open(path).map_err(|e| StorageError::io("cannot open part", path, e))?;
        let file_len = file
            .metadata()
            .map_err(|e| StorageError::io("cannot stat part", path, e))?
            .len();
        if file_len < HEADER_LEN + FOOTER_LEN {
            return Err(corrupt(
                path,
                0,
                format!("{file_len} bytes is too short for a part"),
            ));
        }
        let read = |offset: u64, buf: &mut [u8]| {
            file.read_exact_at(buf, offset)
                .map_err(|e| StorageError::io("cannot read part", path, e))
        };
        let mut header = [0u8; HEADER_LEN as usize];
        read(0, &mut header)?;
        let version = check_header(path, &header)?;
        let footer_at = file_len - FOOTER_LEN;
        let mut footer = [0u8; FOOTER_LEN as usize];
        read(footer_at, &mut footer)?;
        let footer = Footer::decode(path, footer_at, &footer)?;
        if footer.version != version {
            return Err(corrupt(
                path,
                footer_at + 56,
                format!("footer says format {}, header {version}", footer.version),
            ));
        }
        let index_at = footer.index_offset;
        let index_end = index_at.checked_add(footer.index_stored_len);
        // Format 3 puts the recovery section (with its trailer) between index and footer.
        let region_ok = match index_end {
            Some(end) if version >= 3 => end + RECOVERY_TRAILER_LEN <= footer_at,
            Some(end) => end == footer_at,
            None => false,
        };
        if index_at < HEADER_LEN
            || !region_ok
            || footer.index_raw_len > MAX_INDEX_RAW_BYTES
            || footer.index_stored_len > footer.index_raw_len
        {
            return Err(corrupt(
                path,
                footer_at,
                "footer index position or lengths are impossible",
            ));
        }
        let recovery = match index_end {
            Some(end) if version >= 3 => {
                let trailer_at = footer_at - RECOVERY_TRAILER_LEN;
                let mut trailer = [0u8; RECOVERY_TRAILER_LEN as usize];
                read(trailer_at, &mut trailer)?;
                let trailer = RecoveryTrailer::decode(path, trailer_at, footer_at - end, &trailer)?;
                Some((end, trailer))
            }
            _ => None,
        };
        let mut stored = vec![0u8; footer.index_stored_len as usize];
        read(index_at, &mut stored)?;
        if crc32fast::hash(&stored) != footer.index_crc {
            return Err(corrupt(path, index_at, "index checksum mismatch"));
        }
        let index = unpack(stored, footer.index_raw_len)
            .ok_or_else(|| corrupt(path, index_at, "index does not decompress to its length"))?;
        let mut points = 0;
        let mut cursor = IndexCursor::new(&index, 0);
        let (directory, tables) =
            check_index(&mut cursor, &footer, &mut points).map_err(|reason| {
                corrupt(
                    path,
                    index_at,
                    format!("index byte {}: {reason}", cursor.pos),
                )
            })?;
        let table_bytes = bytes_by_table(
            &directory,
            &tables,
            index_at,
            (footer.index_stored_len, index.len()),
            file_len,
        );
        let members = PartMembers::new(directory.iter().map(|d| d.series).zip(tables));
        let index = PartIndex {
            bytes: index,
            directory,
        };
        let cost = index.cost();
        Ok(Self {
            path: path.to_path_buf(),
            file: files.adopt(path, file),
            summary: PartSummary {
                path: path.to_path_buf(),
                file_bytes: file_len,
                series: footer.series,
                rows: footer.rows,
                points,
                min_time: footer.min_time,
                max_time: footer.max_time,
            },
            index: indexes.indexes.hold(index, cost),
            index_offset: index_at,
            index_stored: (
                footer.index_stored_len,
                footer.index_raw_len,
                footer.index_crc,
            ),
            members,
            version,
            recovery,
            table_bytes,
        })
    }

    /// The index read again from the file, checked as at open (its CRC32 and length; its
    /// entries were checked then, and a part's file never changes), with its directory
    /// walked again, and what it costs the budget.
    fn load_index(&self) -> Result<(PartIndex, usize), StorageError> {
        let (stored_len, raw_len, crc) = self.index_stored;
        let mut stored = vec![0u8; stored_len as usize];
        self.file
            .read_exact_at(&mut stored, self.index_offset)
            .map_err(|e| StorageError::io("cannot read part", &self.path, e))?;
        if crc32fast::hash(&stored) != crc {
            return Err(corrupt(
                &self.path,
                self.index_offset,
                "index checksum mismatch",
            ));
        }
        let index = unpack(stored, raw_len).ok_or_else(|| {
            corrupt(
                &self.path,
                self.index_offset,
                "index does not decompress to its length",
            )
        })?;
        let directory = walk_directory(&index, self.version).map_err(|reason| {
            corrupt(
                &self.path,
                self.index_offset,
                format!("index read again does not walk: {reason}"),
            )
        })?;
        let index = PartIndex {
            bytes: index,
            directory,
        };
        let cost = index.cost();
        Ok((index, cost))
    }

    /// Reads, checks and decodes the recovery section; `None` for parts of formats 1 and 2,
    /// which have none.
    pub fn read_recovery(&self) -> Result<Option<PartRecovery>, StorageError> {
        let Some((at, trailer)) = self.recovery else {
            return Ok(None);
        };
        let mut stored = vec![0u8; trailer.stored_len as usize];
        self.file
            .read_exact_at(&mut stored, at)
            .map_err(|e| StorageError::io("cannot read part", &self.path, e))?;
        trailer.decode_section(&self.path, at, stored).map(Some)
    }

    /// Keeps the index in memory, loading it if the budget dropped it, until the lease is
    /// dropped: for reads that visit many parts series by series.
    pub fn lease_index(&self) -> Result<IndexLease<'_>, StorageError> {
        let lease = self.index.lease(|| self.load_index())?;
        Ok(IndexLease { lease })
    }

    /// Keeps the file open until the reader is dropped, opening it if it was closed: for a
    /// part about to be unlinked while readers may still hold it (an open file outlives its
    /// unlink).
    pub fn pin_open(&self) -> Result<(), StorageError> {
        self.file
            .pin_open()
            .map_err(|e| StorageError::io("cannot open part", &self.path, e))
    }

    /// What the part holds.
    pub fn summary(&self) -> &PartSummary {
        &self.summary
    }

    /// Every series with its table, by increasing series id.
    pub fn series_ids(&self) -> impl Iterator<Item = (SeriesId, TableId)> + use<> {
        self.members.series_ids()
    }

    /// The tables the part holds rows of, by increasing id.
    pub fn tables(&self) -> impl Iterator<Item = TableId> + '_ {
        self.members.tables()
    }

    /// The file's bytes by table, by increasing table id, summing to the file's length:
    /// each table's data blocks, plus its share of the header, index and footer in
    /// proportion to them. For disk use per database.
    pub fn table_bytes(&self) -> &[(TableId, u64)] {
        &self.table_bytes
    }

    /// Whether the part holds rows of `series` (without its index).
    pub fn has_series(&self, series: SeriesId) -> bool {
        self.members.contains(series)
    }

    /// The format version of the file.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The chunks of `series` in time order (empty when the part does not hold it).
    pub fn chunks(&self, series: SeriesId) -> Result<Vec<ChunkMeta>, StorageError> {
        self.chunks_in(series, Timestamp::MIN, Timestamp::MAX, None)
    }

    /// The chunks of `series` with rows in `start..=end` (both inclusive, so that the
    /// whole range of times can be asked for), in time order, with the columns of `fields`
    /// only (`None` = all). In format 2 the index entries of the other chunks are skipped
    /// unparsed, which is what makes a narrow window over a long series cheap.
    pub fn chunks_in(
        &self,
        series: SeriesId,
        start: Timestamp,
        end: Timestamp,
        fields: Option<&[FieldId]>,
    ) -> Result<Vec<ChunkMeta>, StorageError> {
        self.chunks_from(None, series, start, end, fields)
    }

    /// As [`PartReader::chunks_in`], from `extract` (taken from this part's index and
    /// holding `series`) when given, else from the index.
    pub fn chunks_from(
        &self,
        extract: Option<&IndexExtract>,
        series: SeriesId,
        start: Timestamp,
        end: Timestamp,
        fields: Option<&[FieldId]>,
    ) -> Result<Vec<ChunkMeta>, StorageError> {
        if !self.members.contains(series) {
            return Ok(Vec::new());
        }
        let parse = |index: &PartIndex| match index.entry(series) {
            Some(entry) => self.parse_chunks(&index.bytes, entry, (start, end), fields),
            None => Err(corrupt(
                &self.path,
                self.index_offset,
                format!("series {series} is in the part but not in its directory or extract"),
            )),
        };
        match extract {
            Some(extract) => parse(&extract.index),
            None => self.index.with(|| self.load_index(), parse)?,
        }
    }

    /// What this part's index costs the budget of index memory when held.
    pub fn index_cost(&self) -> usize {
        let (_, raw_len, _) = self.index_stored;
        raw_len as usize + self.summary.series as usize * size_of::<DirEntry>()
    }

    /// The index entries of `series` (those the part holds), copied out of its index (read
    /// again if the budget dropped it): for a read that goes over more parts series by
    /// series than their indexes can be held for, a block of series at a time.
    pub fn extract(&self, series: &[SeriesId]) -> Result<IndexExtract, StorageError> {
        let mut wanted: Vec<SeriesId> = series
            .iter()
            .copied()
            .filter(|s| self.members.contains(*s))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Ok(IndexExtract::default());
        }
        let index = self.index.with(
            || self.load_index(),
            |index| {
                index
                    .extract(&wanted)
                    .map_err(|reason| corrupt(&self.path, self.index_offset, reason))
            },
        )??;
        Ok(IndexExtract { index })
    }

    /// The chunks of `entry`'s series with rows in `start..=end` (see
    /// [`PartReader::chunks_in`]), parsed from `index`.
    fn parse_chunks(
        &self,
        index: &[u8],
        entry: &DirEntry,
        (start, end): (Timestamp, Timestamp),
        fields: Option<&[FieldId]>,
    ) -> Result<Vec<ChunkMeta>, StorageError> {
        let mut c = IndexCursor::new(index, entry.index_offset as usize);
        let mut data_offset = entry.data_offset;
        let version = self.version;
        let parse = |c: &mut IndexCursor<'_>, data_offset: &mut u64| {
            let n = c.u64()?;
            let mut out = Vec::new();
            for _ in 0..n {
                let head = ChunkHead::parse(c, version)?;
                if head.min_time > end {
                    break; // chunks are in time order
                }
                match head.lens {
                    Some(lens) if head.max_time < start => {
                        c.skip(lens.entry)?;
                        *data_offset = data_offset
                            .checked_add(lens.data)
                            .ok_or("block lengths overflow")?;
                    }
                    _ => {
                        let chunk =
                            ChunkMeta::parse_after_head(c, data_offset, (version, fields), &head)?;
                        if chunk.max_time >= start {
                            out.push(chunk);
                        }
                    }
                }
            }
            Ok::<_, String>(out)
        };
        parse(&mut c, &mut data_offset).map_err(|reason| {
            corrupt(
                &self.path,
                self.index_offset,
                format!("index byte {}: {reason}", c.pos),
            )
        })
    }

    /// Decodes `fields` of `chunk` (`None` = every column; fields the chunk lacks are
    /// skipped), checking each block's CRC32 right after reading it.
    pub fn read_chunk(
        &self,
        chunk: &ChunkMeta,
        fields: Option<&[FieldId]>,
    ) -> Result<SeriesData, StorageError> {
        self.read_chunk_in(chunk, fields, None)
    }

    /// As [`PartReader::read_chunk`], the blocks taken from `span` (bytes already read
    /// from the file at an offset) when it holds them all.
    fn read_chunk_in(
        &self,
        chunk: &ChunkMeta,
        fields: Option<&[FieldId]>,
        span: Option<&Span>,
    ) -> Result<SeriesData, StorageError> {
        // Chunk metas come from `chunks`, but their fields are public: bound what a
        // hand-edited one can make us allocate.
        if chunk.rows == 0 || chunk.rows as usize > MAX_ROWS_PER_CHUNK {
            return Err(StorageError::Invalid(format!(
                "chunk of {} rows: not from this part's index",
                chunk.rows
            )));
        }
        let columns = chunk.columns_of(fields);
        let blocks = self.read_blocks(chunk, &columns, span)?;
        let data = chunk
            .decode(&columns, |b| blocks.get(b))
            .map_err(|(offset, reason)| corrupt(&self.path, offset, reason))?;
        // Validate right after reading.
        data.check()
            .map_err(|e| corrupt(&self.path, chunk.first_block_offset(), e))?;
        Ok(data)
    }

    /// The rows of `chunk` with `start <= time < end`, `fields` only (`None` = every
    /// column): exactly `read_chunk(chunk, fields)?.slice_time(start, end)`, but only those
    /// rows are decoded. The row range comes from the time block (by arithmetic when its
    /// times are regular), then each field's value block is decoded over that range only
    /// (its presence block says which values the rows hold). Every block read is still
    /// checked against its CRC32. An empty range (`start >= end`) or a chunk outside it
    /// gives no rows without reading.
    pub fn read_chunk_window(
        &self,
        chunk: &ChunkMeta,
        fields: Option<&[FieldId]>,
        start: Timestamp,
        end: Timestamp,
    ) -> Result<SeriesData, StorageError> {
        if start >= end || chunk.max_time < start || chunk.min_time >= end {
            return Ok(SeriesData::default());
        }
        if chunk.min_time >= start && chunk.max_time < end {
            return self.read_chunk(chunk, fields);
        }
        if chunk.rows == 0 || chunk.rows as usize > MAX_ROWS_PER_CHUNK {
            return Err(StorageError::Invalid(format!(
                "chunk of {} rows: not from this part's index",
                chunk.rows
            )));
        }
        let columns = chunk.columns_of(fields);
        let blocks = self.read_blocks(chunk, &columns, None)?;
        let data = chunk
            .decode_window(&columns, |b| blocks.get(b), start, end)
            .map_err(|(offset, reason)| corrupt(&self.path, offset, reason))?;
        data.check()
            .map_err(|e| corrupt(&self.path, chunk.first_block_offset(), e))?;
        Ok(data)
    }

    /// Reads the time block and the presence and value blocks of `columns` of `chunk`
    /// (adjacent blocks with one system call; none when `span` holds them all) and checks
    /// each block's CRC32.
    fn read_blocks<'s>(
        &self,
        chunk: &ChunkMeta,
        columns: &[&ColumnMeta],
        span: Option<&'s Span>,
    ) -> Result<ChunkBytes<'s>, StorageError> {
        let blocks = chunk_blocks(chunk, columns);
        if let Some(span) = span
            && blocks.iter().all(|b| span.holds(b))
        {
            let bytes = ChunkBytes {
                runs: vec![(span.offset, Cow::Borrowed(&span.bytes[..]))],
            };
            return check_blocks(&self.path, &blocks, bytes);
        }
        let mut runs: Vec<(u64, Cow<'s, [u8]>)> = Vec::new();
        let mut start = 0;
        for i in 0..blocks.len() {
            if i + 1 == blocks.len() || blocks[i + 1].offset != blocks[i].end() {
                let (from, to) = (blocks[start].offset, blocks[i].end());
                runs.push((from, Cow::Owned(self.read_data(from, to)?)));
                start = i + 1;
            }
        }
        check_blocks(&self.path, &blocks, ChunkBytes { runs })
    }

    /// File bytes `from..to` of the data region (blocks), with one system call; a range
    /// outside the region (a hand-edited chunk meta) is corrupt.
    fn read_data(&self, from: u64, to: u64) -> Result<Vec<u8>, StorageError> {
        if to > self.index_offset || from > to {
            return Err(corrupt(
                &self.path,
                from,
                "block lies outside the data region",
            ));
        }
        let mut bytes = vec![0u8; (to - from) as usize];
        self.file
            .read_exact_at(&mut bytes, from)
            .map_err(|e| StorageError::io("cannot read part", &self.path, e))?;
        Ok(bytes)
    }

    /// The file bytes from the first to the last block `chunks` need (with `fields`), read
    /// with one system call — a series' chunks lie next to each other — when that reads
    /// at most four times the bytes needed plus [`SPAN_SLACK_BYTES`]: in between lie the
    /// blocks of the fields not asked for. `None` (each chunk read on its own) otherwise,
    /// or for a single chunk whose blocks are adjacent anyway.
    fn read_span(
        &self,
        chunks: &[ChunkMeta],
        fields: Option<&[FieldId]>,
    ) -> Result<Option<Span>, StorageError> {
        let mut needed = 0u64;
        let mut from = u64::MAX;
        let mut to = 0u64;
        let mut adjacent = true;
        for chunk in chunks {
            let blocks = chunk_blocks(chunk, &chunk.columns_of(fields));
            for (i, b) in blocks.iter().enumerate() {
                needed += b.len;
                from = from.min(b.offset);
                to = to.max(b.end());
                adjacent &= i == 0 || blocks[i - 1].end() == b.offset;
            }
        }
        if from >= to || (chunks.len() == 1 && adjacent) {
            return Ok(None);
        }
        if to - from > needed.saturating_mul(4).saturating_add(SPAN_SLACK_BYTES) {
            return Ok(None);
        }
        Ok(Some(Span {
            offset: from,
            bytes: self.read_data(from, to)?,
        }))
    }

    /// The rows of `series` with `start <= time < end`, `fields` only (`None` = all);
    /// `None` when the part has no such rows. Chunks outside the range are not read.
    pub fn read_series(
        &self,
        series: SeriesId,
        start: Timestamp,
        end: Timestamp,
        fields: Option<&[FieldId]>,
    ) -> Result<Option<SeriesData>, StorageError> {
        self.read_series_from(None, series, start, end, fields)
    }

    /// As [`PartReader::read_series`], the chunks found in `extract` when given (see
    /// [`PartReader::chunks_from`]).
    pub fn read_series_from(
        &self,
        extract: Option<&IndexExtract>,
        series: SeriesId,
        start: Timestamp,
        end: Timestamp,
        fields: Option<&[FieldId]>,
    ) -> Result<Option<SeriesData>, StorageError> {
        if start >= end {
            return Ok(None); // empty range (and slice_time needs start <= end)
        }
        let chunks = self.chunks_from(extract, series, start, end - 1, fields)?;
        let span = self.read_span(&chunks, fields)?;
        if run::is_run(&chunks, fields, start, end) {
            let blocks = chunks
                .iter()
                .map(|c| self.read_blocks(c, &c.columns_of(fields), span.as_ref()))
                .collect::<Result<Vec<_>, _>>()?;
            let data = run::decode_run(&chunks, fields, |i, b| blocks[i].get(b), start, end)
                .map_err(|(offset, reason)| corrupt(&self.path, offset, reason))?;
            if let Some(data) = data {
                // One check of the joined rows stands for each chunk's and each join's.
                data.check()
                    .map_err(|e| corrupt(&self.path, chunks[0].first_block_offset(), e))?;
                return Ok((data.rows() > 0).then_some(data));
            }
        }
        let mut parts = Vec::new();
        for chunk in &chunks {
            let data = self.read_chunk_in(chunk, fields, span.as_ref())?;
            if chunk.min_time >= start && chunk.max_time < end {
                parts.push(data);
            } else {
                parts.push(data.slice_time(start, end));
            }
        }
        parts.retain(|p| p.rows() > 0);
        if parts.is_empty() {
            return Ok(None);
        }
        // Each chunk was checked when it was decoded, so the joined rows only need checking
        // where two chunks meet (the index, checked at open, already orders them).
        if parts
            .windows(2)
            .any(|w| w[0].times.last() >= w[1].times.first())
        {
            return Err(corrupt(
                &self.path,
                self.index_offset,
                "chunks of a series overlap in time",
            ));
        }
        let data = concat(parts)
            .ok_or_else(|| corrupt(&self.path, self.index_offset, "field changes type"))?;
        Ok(Some(data))
    }
}

/// Bytes read from a part file at once for several chunks (see [`PartReader::read_span`]).
struct Span {
    offset: u64,
    bytes: Vec<u8>,
}

impl Span {
    fn holds(&self, b: &BlockRef) -> bool {
        self.offset <= b.offset && b.end() <= self.offset + self.bytes.len() as u64
    }
}

/// A span may read this many bytes more than four times what its chunks need: a few
/// kilobytes cost less to read than a second system call.
const SPAN_SLACK_BYTES: u64 = 64 << 10;

/// The blocks a chunk's `columns` are decoded from, in file order: its time block, then
/// each column's presence and value blocks.
fn chunk_blocks(chunk: &ChunkMeta, columns: &[&ColumnMeta]) -> Vec<BlockRef> {
    let mut blocks: Vec<BlockRef> = chunk.time_block.into_iter().collect();
    for c in columns {
        blocks.extend(c.presence);
        blocks.push(c.values);
    }
    blocks
}

/// `bytes` once every block's CRC32 matches.
fn check_blocks<'s>(
    path: &Path,
    blocks: &[BlockRef],
    bytes: ChunkBytes<'s>,
) -> Result<ChunkBytes<'s>, StorageError> {
    for b in blocks {
        if crc32fast::hash(bytes.get(b)) != b.crc {
            return Err(corrupt(path, b.offset, "block checksum mismatch"));
        }
    }
    Ok(bytes)
}

/// The bytes of a chunk's blocks, as read: runs of adjacent blocks by file offset (or one
/// span borrowed from a read of several chunks).
struct ChunkBytes<'s> {
    runs: Vec<(u64, Cow<'s, [u8]>)>,
}

impl ChunkBytes<'_> {
    /// The bytes of block `b` (empty if it was not read).
    fn get(&self, b: &BlockRef) -> &[u8] {
        self.runs
            .iter()
            .find(|(from, buf)| *from <= b.offset && b.end() <= from + buf.len() as u64)
            .map_or(&[][..], |(from, buf)| {
                &buf[(b.offset - from) as usize..(b.end() - from) as usize]
            })
    }
}

/// Walks the whole index once: every entry must parse, ids increase, chunks of a series
/// increase in time and keep each field's type, blocks tile the data region exactly, and
/// the totals match the footer. Returns the directory and each series' table; adds the
/// value count to `points`.
/// Each table's data bytes (a series' blocks run from its data offset to the next series'
/// or the index, as `check_index` verified); its share of the stored index, by the raw
/// index bytes of its series' entries (per-chunk metadata and pre-aggregates, which can
/// outweigh the data of a small series); then its share of the rest (header, recovery
/// section, footer) by data. Rounding goes to the largest table, so the bytes add up to
/// the file's length.
fn bytes_by_table(
    directory: &[DirEntry],
    tables: &[TableId],
    index_at: u64,
    index: (u64, usize),
    file_len: u64,
) -> Vec<(TableId, u64)> {
    let (index_stored, index_raw) = index;
    let mut by_table = std::collections::BTreeMap::<TableId, (u64, u64)>::new();
    for (i, (entry, table)) in directory.iter().zip(tables).enumerate() {
        let next = directory.get(i + 1);
        let data_end = next.map_or(index_at, |n| n.data_offset);
        let index_end = next.map_or(index_raw, |n| n.index_offset as usize);
        let sums = by_table.entry(*table).or_default();
        sums.0 += data_end - entry.data_offset;
        sums.1 += (index_end - entry.index_offset as usize) as u64;
    }
    let data: u64 = by_table.values().map(|s| s.0).sum();
    let raw: u64 = by_table.values().map(|s| s.1).sum();
    let rest = file_len.saturating_sub(data + index_stored);
    let share = |of: u64, part: u64, whole: u64| {
        (u128::from(of) * u128::from(part))
            .checked_div(u128::from(whole))
            .unwrap_or(0) as u64
    };
    let mut bytes: Vec<(TableId, u64)> = by_table
        .into_iter()
        .map(|(table, (d, r))| {
            (
                table,
                d + share(index_stored, r, raw) + share(rest, d, data),
            )
        })
        .collect();
    let counted: u64 = bytes.iter().map(|(_, b)| b).sum();
    if let Some(largest) = bytes.iter_mut().max_by_key(|(_, b)| *b) {
        largest.1 += file_len.saturating_sub(counted);
    }
    bytes
}

fn check_index(
    c: &mut IndexCursor<'_>,
    footer: &Footer,
    points: &mut u64,
) -> Result<(Vec<DirEntry>, Vec<TableId>), String> {
    let mut directory: Vec<DirEntry> = Vec::new();
    let mut tables: Vec<TableId> = Vec::new();
    let mut data_offset = HEADER_LEN;
    let (mut rows, mut min_time, mut max_time) = (0u64, i64::MAX, i64::MIN);
    let mut types: Vec<(FieldId, FieldType)> = Vec::new();
    while !c.at_end() {
        let series = c.u32()?;
        if directory.last().is_some_and(|d| d.series >= series) {
            return Err(format!("series {series} out of order"));
        }
        tables.push(c.u32()?);
        directory.push(DirEntry {
            series,
            index_offset: index_offset(c.pos)?,
            data_offset,
        });
        let chunks = c.u64()?;
        if chunks == 0 {
            return Err(format!("series {series} has no chunks"));
        }
        let mut last_time: Option<Timestamp> = None;
        types.clear();
        for _ in 0..chunks {
            let chunk = ChunkMeta::parse(c, &mut data_offset, footer.version, None)?;
            if last_time.is_some_and(|t| t >= chunk.min_time) {
                return Err(format!("series {series}: chunks overlap in time"));
            }
            last_time = Some(chunk.max_time);
            rows += u64::from(chunk.rows);
            min_time = min_time.min(chunk.min_time);
            max_time = max_time.max(chunk.max_time);
            for col in &chunk.columns {
                *points += u64::from(col.preagg.count());
                match types.binary_search_by_key(&col.field, |t| t.0) {
                    Ok(i) if types[i].1 != col.field_type => {
                        return Err(format!("series {series}: field {} changes type", col.field));
                    }
                    Ok(_) => {}
                    Err(i) => types.insert(i, (col.field, col.field_type)),
                }
            }
        }
    }
    if directory.len() as u64 != u64::from(footer.series)
        || rows != footer.rows
        || (min_time, max_time) != (footer.min_time, footer.max_time)
    {
        return Err("index totals disagree with the footer".into());
    }
    if data_offset != footer.index_offset {
        return Err(format!(
            "blocks end at {data_offset}, index starts at {}",
            footer.index_offset
        ));
    }
    Ok((directory, tables))
}
