//! Writes a part: series in id order, each cut into chunks, each chunk's blocks back to back,
//! the index kept in memory and written at the end with the footer.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use strata_codec as codec;

use crate::column::{SeriesData, Values};
use crate::error::StorageError;
use crate::model::{SeriesId, TableId, Timestamp};

use super::cut::chunk_ranges;
use super::format::{
    FOOTER_LEN, FORMAT_VERSION, Footer, INDEX_ZSTD_LEVEL, OLDEST_READABLE_VERSION, encode_header,
    put_i64, put_u64,
};
use super::open_files::{OpenFileTicket, PartFiles};
use super::preagg::PreAgg;
use super::recovery::{Provenance, RecoveryBuilder, TableNames};

/// What a finished part holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartSummary {
    /// The part file.
    pub path: PathBuf,
    /// Size of the file in bytes.
    pub file_bytes: u64,
    /// Number of series.
    pub series: u32,
    /// Number of rows, all series.
    pub rows: u64,
    /// Number of present field values, all series and columns.
    pub points: u64,
    /// Smallest timestamp (`i64::MAX` for an empty part, so that `min_time > max_time`).
    pub min_time: Timestamp,
    /// Largest timestamp (`i64::MIN` for an empty part).
    pub max_time: Timestamp,
}

/// Writes one part file. Call [`PartWriter::write_series`] in increasing series id order,
/// then [`PartWriter::finish`]; a writer dropped before `finish` leaves a file without a
/// footer, which [`super::PartReader::open`] rejects.
pub struct PartWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// The file counts in the process's budget of open part files while it is written.
    _open: OpenFileTicket,
    /// Bytes written so far = file offset of the next block.
    offset: u64,
    index: Vec<u8>,
    last_series: Option<SeriesId>,
    series: u32,
    rows: u64,
    points: u64,
    min_time: Timestamp,
    max_time: Timestamp,
    /// Set while a series is half written and left set if that fails: the file's blocks
    /// and the index no longer agree, so every later call is refused.
    broken: bool,
    block: Vec<u8>,
    /// The index entry of the chunk being written (format 2 prefixes it with its length).
    entry: Vec<u8>,
    /// The format version written.
    version: u32,
    /// What the recovery section will hold (format 3).
    recovery: RecoveryBuilder,
}

/// Buffer size of the file writer: large enough that blocks of a few KiB go out in few
/// system calls.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

impl PartWriter {
    /// Creates the part file at `path`, which must not exist (parts are immutable: an
    /// existing file is never overwritten), and writes the header.
    pub fn create(path: &Path) -> Result<Self, StorageError> {
        Self::create_with_version(path, FORMAT_VERSION)
    }

    /// [`PartWriter::create`] writing format `version` (1 to 3): for tests of the readers of
    /// older versions. The cut into chunks is the same for both.
    #[doc(hidden)]
    pub fn create_with_version(path: &Path, version: u32) -> Result<Self, StorageError> {
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err(StorageError::Invalid(format!(
                "part format version {version} cannot be written"
            )));
        }
        let open = PartFiles::global().ticket();
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| StorageError::io("cannot create part", path, e))?;
        let mut writer = Self {
            path: path.to_path_buf(),
            _open: open,
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            offset: 0,
            index: Vec::new(),
            last_series: None,
            series: 0,
            rows: 0,
            points: 0,
            min_time: i64::MAX,
            max_time: i64::MIN,
            broken: false,
            block: Vec::new(),
            entry: Vec::new(),
            version,
            recovery: RecoveryBuilder::default(),
        };
        writer.write(&encode_header(version))?;
        Ok(writer)
    }

    /// Records where the part stands in the manifest, for its recovery section.
    pub fn set_provenance(&mut self, provenance: Provenance) {
        self.recovery.provenance = provenance;
    }

    /// Records the names of the tables it holds, for its recovery section.
    pub fn set_tables(&mut self, tables: Vec<TableNames>) {
        self.recovery.tables = tables;
    }

    /// Records the tags (sorted by key) of `series` of `table`, for the recovery section;
    /// called beside [`PartWriter::write_series`].
    pub fn add_series_key<'a>(
        &mut self,
        series: SeriesId,
        table: TableId,
        tags: impl ExactSizeIterator<Item = (&'a str, &'a str)>,
    ) {
        self.recovery.add_series(series, table, tags);
    }

    /// Appends the rows of `series` (of table `table`). Series ids must be strictly
    /// increasing across calls and `data` must hold at least one row and pass
    /// [`SeriesData::check`]; otherwise [`StorageError::Invalid`] and nothing is written.
    pub fn write_series(
        &mut self,
        series: SeriesId,
        table: TableId,
        data: &SeriesData,
    ) -> Result<(), StorageError> {
        if self.broken {
            return Err(StorageError::Invalid(format!(
                "part \"{}\": an earlier write failed",
                self.path.display()
            )));
        }
        if self.last_series.is_some_and(|last| series <= last) {
            return Err(StorageError::Invalid(format!(
                "part \"{}\": series {series} written after series {:?}: ids must increase",
                self.path.display(),
                self.last_series
            )));
        }
        // Validate right before writing: a bad SeriesData must not become a bad file.
        data.check().map_err(|e| {
            StorageError::Invalid(format!(
                "part \"{}\": series {series}: {e}",
                self.path.display()
            ))
        })?;
        let (Some(&first), Some(&last)) = (data.times.first(), data.times.last()) else {
            return Err(StorageError::Invalid(format!(
                "part \"{}\": series {series} has no rows",
                self.path.display()
            )));
        };
        self.broken = true;
        let rows = data.rows();
        let chunks = chunk_ranges(&data.times);
        put_u64(&mut self.index, u64::from(series));
        put_u64(&mut self.index, u64::from(table));
        put_u64(&mut self.index, chunks.len() as u64);
        // Value index where each column's next chunk starts.
        let mut value_at = vec![0usize; data.columns.len()];
        for chunk in chunks {
            self.write_chunk(data, chunk.start, chunk.end, &mut value_at)?;
        }
        self.last_series = Some(series);
        self.series += 1;
        self.rows += rows as u64;
        self.min_time = self.min_time.min(first);
        self.max_time = self.max_time.max(last);
        self.broken = false;
        Ok(())
    }

    /// Writes the blocks of rows `from..to` and appends their index entry.
    fn write_chunk(
        &mut self,
        data: &SeriesData,
        from: usize,
        to: usize,
        value_at: &mut [usize],
    ) -> Result<(), StorageError> {
        let times = &data.times[from..to];
        let span = times[times.len() - 1].wrapping_sub(times[0]) as u64;
        put_u64(&mut self.index, times.len() as u64);
        put_i64(&mut self.index, times[0]);
        put_u64(&mut self.index, span);
        let data_start = self.offset;
        let mut entry = std::mem::take(&mut self.entry);
        entry.clear();
        let result = self.write_chunk_entry(data, from, to, value_at, &mut entry);
        if result.is_ok() {
            if self.version >= 2 {
                put_u64(&mut self.index, self.offset - data_start);
                put_u64(&mut self.index, entry.len() as u64);
            }
            self.index.extend_from_slice(&entry);
        }
        self.entry = entry;
        result
    }

    /// Writes the blocks of rows `from..to` and puts into `entry` the index entry after
    /// the chunk's rows and time range.
    fn write_chunk_entry(
        &mut self,
        data: &SeriesData,
        from: usize,
        to: usize,
        value_at: &mut [usize],
        entry: &mut Vec<u8>,
    ) -> Result<(), StorageError> {
        let times = &data.times[from..to];
        if self.version >= 2 && evenly_spaced(times) {
            // The index's first time, span and row count give every time.
            put_u64(entry, 0);
        } else {
            self.block.clear();
            codec::timestamp::encode(times, &mut self.block);
            self.write_block(entry)?;
        }

        let present: Vec<usize> = data
            .columns
            .iter()
            .map(|c| {
                c.present
                    .as_ref()
                    .map_or(to - from, |p| p[from..to].iter().filter(|x| **x).count())
            })
            .collect();
        put_u64(entry, present.iter().filter(|n| **n > 0).count() as u64);
        for ((column, &count), at) in data.columns.iter().zip(&present).zip(value_at.iter_mut()) {
            // A column without values in this chunk is left out, as slice_rows does.
            let Some(agg) = PreAgg::compute(&column.values, *at, *at + count) else {
                continue;
            };
            put_u64(entry, u64::from(column.field));
            entry.push(column.values.field_type() as u8);
            self.block.clear();
            let with_presence = count < to - from;
            if let Some(p) = column.present.as_ref().filter(|_| with_presence) {
                codec::boolean::encode(&p[from..to], &mut self.block);
                self.write_block(entry)?;
            } else {
                put_u64(entry, 0);
            }
            self.block.clear();
            let range = *at..*at + count;
            match &column.values {
                Values::Float(v) => codec::float::encode(&v[range], &mut self.block),
                Values::Integer(v) => codec::integer::encode(&v[range], &mut self.block),
                Values::Unsigned(v) => codec::unsigned::encode(&v[range], &mut self.block),
                Values::Boolean(v) => codec::boolean::encode(&v[range], &mut self.block),
                Values::String(v) => codec::string::encode(&v[range], &mut self.block),
            }
            self.write_block(entry)?;
            // Format 2 leaves out the count when every row has the field.
            agg.encode(entry, self.version, self.version < 2 || with_presence);
            *at += count;
            self.points += count as u64;
        }
        Ok(())
    }

    /// Writes `self.block` and appends its length and CRC32 to `entry`.
    fn write_block(&mut self, entry: &mut Vec<u8>) -> Result<(), StorageError> {
        put_u64(entry, self.block.len() as u64);
        entry.extend_from_slice(&crc32fast::hash(&self.block).to_le_bytes());
        let block = std::mem::take(&mut self.block);
        let result = self.write(&block);
        self.block = block;
        result
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), StorageError> {
        self.out
            .write_all(bytes)
            .map_err(|e| StorageError::io("cannot write part", &self.path, e))?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Writes the index (zstd-compressed when that is smaller) and the footer, and fsyncs the
    /// file. Making the part visible (rename, manifest, directory fsync) is the caller's step.
    pub fn finish(mut self) -> Result<PartSummary, StorageError> {
        if self.broken {
            return Err(StorageError::Invalid(format!(
                "part \"{}\": an earlier write failed",
                self.path.display()
            )));
        }
        let index = std::mem::take(&mut self.index);
        let stored = match zstd::bulk::compress(&index, INDEX_ZSTD_LEVEL) {
            // Strictly smaller, so that "stored length == raw length" means "not compressed".
            Ok(compressed) if compressed.len() < index.len() => compressed,
            _ => index.clone(),
        };
        let footer = Footer {
            index_offset: self.offset,
            index_stored_len: stored.len() as u64,
            index_raw_len: index.len() as u64,
            index_crc: crc32fast::hash(&stored),
            series: self.series,
            rows: self.rows,
            min_time: self.min_time,
            max_time: self.max_time,
            version: self.version,
        };
        self.write(&stored)?;
        if self.version >= 3 {
            let recovery = self.recovery.finish();
            self.write(&recovery)?;
        }
        self.write(&footer.encode())?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| StorageError::io("cannot write part", &self.path, e.into_error()))?;
        file.sync_all()
            .map_err(|e| StorageError::io("cannot fsync part", &self.path, e))?;
        debug_assert!(self.offset >= footer.index_offset + footer.index_stored_len + FOOTER_LEN);
        Ok(PartSummary {
            path: self.path,
            file_bytes: self.offset,
            series: self.series,
            rows: self.rows,
            points: self.points,
            min_time: self.min_time,
            max_time: self.max_time,
        })
    }
}

/// Whether ascending `times` are evenly spaced (one row counts as evenly spaced).
fn evenly_spaced(times: &[Timestamp]) -> bool {
    match times {
        [] | [_] => true,
        [a, b, ..] => {
            let step = i128::from(*b) - i128::from(*a);
            times
                .windows(2)
                .all(|w| i128::from(w[1]) - i128::from(w[0]) == step)
        }
    }
}
