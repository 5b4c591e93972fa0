//! [`SeriesIndex`]: its state, series creation (from lines, WAL replay and the log) and
//! persistence.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::path::Path;

use roaring::RoaringBitmap;

use super::error::SeriesError;
use super::intern::{Interner, StrId};
#[cfg(doc)]
use super::key::raw_key_hash;
use super::key::{Hash32, Hash128, KeyMap, Seeds, canonical_order, write_canonical};
use super::log::{self, MAX_BODY_LEN, Record, SeriesLog, TornTail};
use super::postings::TableIndex;
use crate::model::{SeriesId, TableId};

/// Most raw keys cached per series. Four covers a series written by a few clients that
/// order or escape tags differently; past it, lines take the canonical path, so a client
/// cycling through tag orders cannot grow the alias map (bound: 4 × series count).
pub const MAX_ALIASES_PER_SERIES: u8 = 4;

/// Longest tag key or value, in bytes: the log stores lengths as u16.
const MAX_TAG_LEN: usize = u16::MAX as usize;
/// Most tags per series: the log stores the count as u16.
const MAX_TAGS: usize = u16::MAX as usize;

/// What [`SeriesIndex::open`] found in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenReport {
    /// Live series loaded (created and not retired).
    pub series: usize,
    /// The torn last record that was cut off, if there was one.
    pub torn_tail: Option<TornTail>,
}

/// The series of one shard: ids, tags, postings per table, and the log that persists them.
/// The shard holds it under its own lock; methods that change it take `&mut self`.
#[derive(Debug)]
pub struct SeriesIndex {
    pub(super) seeds: Seeds,
    pub(super) strings: Interner,
    /// Shape id → `[table, sorted tag key ids...]`.
    pub(super) shapes: Vec<Box<[u32]>>,
    pub(super) shape_ids: KeyMap<Box<[u32]>, u32>,
    /// Series id → shape id.
    pub(super) series_shape: Vec<u32>,
    /// Series id → offset of its first value id in `values`.
    pub(super) series_values: Vec<u32>,
    /// Value ids of every series, in the order of its shape's keys.
    pub(super) values: Vec<StrId>,
    /// Canonical key hash (32 bits; every hit is checked against the stored tags) → id.
    pub(super) canonical: KeyMap<Hash32, SeriesId>,
    /// Canonical key → id, for series whose 32-bit hash is an earlier series' (~n²/2³³).
    pub(super) canonical_overflow: HashMap<Vec<u8>, SeriesId>,
    /// Raw key hash (table mixed in) → series id: the alias cache.
    pub(super) raw: KeyMap<Hash128, SeriesId>,
    /// Series id → aliases cached for it (≤ [`MAX_ALIASES_PER_SERIES`]).
    pub(super) alias_counts: Vec<u8>,
    pub(super) tables: KeyMap<TableId, TableIndex>,
    /// Series whose every row is gone: out of the maps and postings, their slots (tags
    /// still readable) kept so that ids stay dense and are never reused.
    pub(super) retired: RoaringBitmap,
    /// Scratch: canonical tag order, canonical key, shape being built.
    order: Vec<u32>,
    pub(super) key_buf: Vec<u8>,
    shape_buf: Vec<u32>,
    pub(super) log: Option<SeriesLog>,
    /// Series with ids below this are in the log.
    pub(super) persisted: usize,
    report: OpenReport,
}

impl Default for SeriesIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl SeriesIndex {
    /// An empty index kept in memory only ([`SeriesIndex::persist`] returns
    /// [`SeriesError::NoLog`]).
    pub fn new() -> Self {
        let seeds = Seeds::random();
        Self {
            seeds,
            strings: Interner::new(seeds),
            shapes: Vec::new(),
            shape_ids: KeyMap::default(),
            series_shape: Vec::new(),
            series_values: Vec::new(),
            values: Vec::new(),
            canonical: KeyMap::default(),
            canonical_overflow: HashMap::new(),
            raw: KeyMap::default(),
            alias_counts: Vec::new(),
            tables: KeyMap::default(),
            retired: RoaringBitmap::new(),
            order: Vec::new(),
            key_buf: Vec::new(),
            shape_buf: Vec::new(),
            log: None,
            persisted: 0,
            report: OpenReport::default(),
        }
    }

    /// Opens the index persisted in `dir/series.log` (created, with just a header, if
    /// absent) and rebuilds ids, tags and postings from it. A torn last record is cut off
    /// the file and reported in [`SeriesIndex::open_report`].
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, SeriesError> {
        let (mut file, data) = SeriesLog::open(dir.as_ref())?;
        let mut index = Self::new();
        let (valid_len, torn_tail) = index.load(file.path(), &data, file.version())?;
        drop(data);
        if torn_tail.is_some() {
            file.truncate(valid_len)?;
        }
        index.persisted = index.series_count();
        index.report = OpenReport {
            series: index.live_series_count(),
            torn_tail,
        };
        index.log = Some(file);
        Ok(index)
    }

    /// Loads the log in `dir` as [`SeriesIndex::open`] does (every record's checksum, body
    /// and id order), changing nothing: a torn tail is reported, not cut. For `strata check`.
    pub fn inspect(dir: impl AsRef<Path>) -> Result<OpenReport, SeriesError> {
        let path = dir.as_ref().join(log::SERIES_LOG_FILE);
        let (data, version) = SeriesLog::read(&path)?;
        let mut index = Self::new();
        let (_, torn_tail) = index.load(&path, &data, version)?;
        Ok(OpenReport {
            series: index.live_series_count(),
            torn_tail,
        })
    }

    /// Replays a log's bytes into this (new) index: the valid length and any torn tail.
    fn load(
        &mut self,
        path: &Path,
        data: &[u8],
        version: u32,
    ) -> Result<(u64, Option<TornTail>), SeriesError> {
        let (records, tags) = log::count(data);
        self.reserve(records, tags);
        log::replay(path, data, version, |record| match record {
            Record::Series(id, table, tags) => self.insert_loaded(id, table, tags),
            Record::Retire(ids) => self.retire_loaded(ids),
        })
    }

    /// Makes room for `series` more series with `tags` tags in all, so that loading a log
    /// grows no table (each growth rehashes every entry).
    fn reserve(&mut self, series: usize, tags: usize) {
        self.series_shape.reserve(series);
        self.series_values.reserve(series);
        self.alias_counts.reserve(series);
        self.values.reserve(tags);
        self.canonical.reserve(series);
    }

    /// What [`SeriesIndex::open`] found (zeroes for an index made by [`SeriesIndex::new`]).
    pub fn open_report(&self) -> OpenReport {
        self.report
    }

    /// Series created since the last [`SeriesIndex::persist`] (or open).
    pub fn unpersisted(&self) -> usize {
        self.series_count() - self.persisted
    }

    /// Appends every series created since the last persist to the log and fsyncs it.
    /// Returns how many were appended. On error nothing is counted as persisted and the
    /// file is cut back, so the call can be retried.
    pub fn persist(&mut self) -> Result<usize, SeriesError> {
        if self.log.is_none() {
            return Err(SeriesError::NoLog);
        }
        let (from, to) = (self.persisted, self.series_count());
        if from == to {
            return Ok(0);
        }
        let mut buf = Vec::new();
        for id in from..to {
            let id = id as SeriesId;
            let (table, tags) = (self.table_of_unchecked(id), self.tags_unchecked(id));
            log::encode_record(&mut buf, id, table, tags);
        }
        if let Some(file) = self.log.as_mut() {
            file.append(&buf)?;
        }
        self.persisted = to;
        Ok(to - from)
    }

    /// The id of the series whose raw key (measurement and tags as written, escapes intact)
    /// in `table` was seen before, without allocating. `None` means "not cached", not "no
    /// such series": call [`SeriesIndex::get_or_create`]. Raw keys are trusted by their
    /// 128-bit seeded hash (a false hit needs a 2^-128 coincidence).
    #[inline]
    pub fn lookup_raw(&self, table: TableId, raw_key: &[u8]) -> Option<SeriesId> {
        self.lookup_raw_hash(self.seeds.raw(table, raw_key))
    }

    /// [`SeriesIndex::lookup_raw`] by the key's [`raw_key_hash`], computed by the caller.
    #[inline]
    pub(crate) fn lookup_raw_hash(&self, raw_hash: Hash128) -> Option<SeriesId> {
        self.raw.get(&raw_hash).copied()
    }

    /// The id of series (`table`, `tags`), creating it if new; `true` when created. `tags`
    /// are the line's unescaped tags in input order (duplicates allowed: the last wins);
    /// `raw_key` is the line's raw series key, cached as an alias (up to
    /// [`MAX_ALIASES_PER_SERIES`] per series) so that [`SeriesIndex::lookup_raw`] finds it.
    /// Errors: tag key or value over 65535 bytes, more than 65535 tags, index full.
    pub fn get_or_create<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        table: TableId,
        raw_key: &[u8],
        tags: &[(K, V)],
    ) -> Result<(SeriesId, bool), SeriesError> {
        self.get_or_create_admitted(table, raw_key, tags, &mut |_| Ok(()))
    }

    /// [`SeriesIndex::get_or_create`], asking `admit` before creating a series: its
    /// `Err(reason)` refuses the new series ([`SeriesError::Refused`]); existing series
    /// are found without asking.
    pub fn get_or_create_admitted<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        table: TableId,
        raw_key: &[u8],
        tags: &[(K, V)],
        admit: &mut dyn FnMut(TableId) -> Result<(), String>,
    ) -> Result<(SeriesId, bool), SeriesError> {
        let raw_hash = self.seeds.raw(table, raw_key);
        self.get_or_create_hashed(table, raw_hash, tags, admit)
    }

    /// [`SeriesIndex::get_or_create_admitted`] with the raw key given by its
    /// [`raw_key_hash`].
    pub(crate) fn get_or_create_hashed<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        table: TableId,
        raw_hash: Hash128,
        tags: &[(K, V)],
        admit: &mut dyn FnMut(TableId) -> Result<(), String>,
    ) -> Result<(SeriesId, bool), SeriesError> {
        if let Some(&id) = self.raw.get(&raw_hash) {
            return Ok((id, false));
        }
        let hash = self.canonicalize(table, tags)?;
        let (id, created) = match self.find_canonical(hash, table, tags) {
            Some(id) => (id, false),
            None => {
                admit(table).map_err(SeriesError::Refused)?;
                (self.create(hash, table, tags)?, true)
            }
        };
        let count = &mut self.alias_counts[id as usize];
        if *count < MAX_ALIASES_PER_SERIES {
            *count += 1;
            self.raw.insert(raw_hash, id);
        }
        Ok((id, created))
    }

    /// Re-creates series `id` while replaying the WAL. Idempotent: `Ok` if `id` already
    /// names this tag set; creates it if `id` is the next id. Errors if the tag set has
    /// another id, `id` names another tag set, or `id` skips ids.
    pub fn insert_replayed(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: &[(&str, &str)],
    ) -> Result<(), SeriesError> {
        self.insert_exact(id, table, tags, false)
            .map_err(|e| e.unwrap_or_else(|reason| SeriesError::Replay { id, reason }))
    }

    /// Creates series `id` from a log record; the reason on error (the caller adds the
    /// offset). Records hold canonical tags, each series once, ids in sequence.
    fn insert_loaded(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: &[(&str, &str)],
    ) -> Result<(), String> {
        self.insert_exact(id, table, tags, true)
            .map_err(|e| match e {
                Ok(err) => err.to_string(),
                Err(reason) => reason,
            })
    }

    /// Shared by replay and load: `Err(Ok(error))` for limit errors, `Err(Err(reason))` when
    /// the id or tags do not fit. `strict` (load) also refuses non-canonical tags and
    /// series that already exist.
    fn insert_exact(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: &[(&str, &str)],
        strict: bool,
    ) -> Result<(), Result<SeriesError, String>> {
        let hash = self.canonicalize(table, tags).map_err(Ok)?;
        if strict
            && (self.order.len() != tags.len()
                || self.order.iter().enumerate().any(|(i, &o)| o as usize != i))
        {
            return Err(Err("tags not sorted by key or not unique".to_owned()));
        }
        let next = self.series_count();
        if !strict && self.retired.contains(id) && self.is_series(id, table, tags) {
            // The WAL still holds the creation of a series retired since (its rows are in
            // a segment not yet removed); the shard skips its rows.
            return Ok(());
        }
        match self.find_canonical(hash, table, tags) {
            Some(existing) if existing == id && !strict => Ok(()),
            Some(existing) => Err(Err(format!("its tag set is already series {existing}"))),
            None if id as usize == next => self.create(hash, table, tags).map(drop).map_err(Ok),
            None if (id as usize) < next => {
                Err(Err(format!("id {id} already names another tag set")))
            }
            None => Err(Err(format!("expected id {next} next; ids must not skip"))),
        }
    }

    /// Checks limits and fills `order` and `key_buf` with the canonical form; returns its hash.
    pub(super) fn canonicalize<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        table: TableId,
        tags: &[(K, V)],
    ) -> Result<Hash32, SeriesError> {
        canonical_order(tags, &mut self.order);
        if self.order.len() > MAX_TAGS {
            return Err(SeriesError::TooManyTags {
                count: self.order.len(),
                max: MAX_TAGS,
            });
        }
        for (k, v) in tags {
            for (what, s) in [("key", k.as_ref()), ("value", v.as_ref())] {
                if s.len() > MAX_TAG_LEN {
                    return Err(SeriesError::TagTooLong {
                        what,
                        len: s.len(),
                        max: MAX_TAG_LEN,
                    });
                }
            }
        }
        let pairs = self.order.iter().map(|&i| {
            let (k, v) = &tags[i as usize];
            (k.as_ref().len(), v.as_ref().len())
        });
        if log::body_len(pairs) > MAX_BODY_LEN {
            return Err(SeriesError::Full(
                "series key longer than a log record holds (4 MiB)",
            ));
        }
        write_canonical(table, tags, &self.order, &mut self.key_buf);
        Ok(self.seeds.canonical(&self.key_buf))
    }

    /// The series with canonical hash `hash` whose stored tags equal the canonical `tags`
    /// (at `order`), if any.
    fn find_canonical<K: AsRef<str>, V: AsRef<str>>(
        &self,
        hash: Hash32,
        table: TableId,
        tags: &[(K, V)],
    ) -> Option<SeriesId> {
        let id = *self.canonical.get(&hash)?;
        if self.is_series(id, table, tags) {
            Some(id)
        } else {
            self.canonical_overflow.get(&self.key_buf).copied()
        }
    }

    /// Whether series `id` (which exists) is (`table`, `tags`), `tags` taken in the
    /// canonical order left in `order` by [`SeriesIndex::canonicalize`].
    fn is_series<K: AsRef<str>, V: AsRef<str>>(
        &self,
        id: SeriesId,
        table: TableId,
        tags: &[(K, V)],
    ) -> bool {
        self.table_of_unchecked(id) == table
            && self.tags_unchecked(id).len() == self.order.len()
            && self
                .tags_unchecked(id)
                .zip(&self.order)
                .all(|((k, v), &i)| {
                    let (tk, tv) = &tags[i as usize];
                    k == tk.as_ref() && v == tv.as_ref()
                })
    }

    /// Creates the next series from the canonical form in `order`/`key_buf`.
    fn create<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        hash: Hash32,
        table: TableId,
        tags: &[(K, V)],
    ) -> Result<SeriesId, SeriesError> {
        let id =
            SeriesId::try_from(self.series_count()).map_err(|_| SeriesError::Full("series ids"))?;
        let start =
            u32::try_from(self.values.len()).map_err(|_| SeriesError::Full("tag value slots"))?;
        // Series mostly arrive in runs of one shape (one table, one key set): if the last
        // series' shape has these keys, reuse its key ids instead of interning the keys.
        let last = self.series_shape.last().copied().filter(|&s| {
            let shape = &self.shapes[s as usize];
            shape[0] == table
                && shape.len() == self.order.len() + 1
                && shape[1..]
                    .iter()
                    .zip(&self.order)
                    .all(|(&key, &i)| self.strings.get(key) == tags[i as usize].0.as_ref())
        });
        self.shape_buf.clear();
        self.shape_buf.push(table);
        for (j, &i) in self.order.iter().enumerate() {
            let (k, v) = &tags[i as usize];
            let key = match last {
                Some(s) => Some(self.shapes[s as usize][j + 1]),
                None => self.strings.intern(k.as_ref()),
            };
            let Some((k, v)) = key.zip(self.strings.intern(v.as_ref())) else {
                self.values.truncate(start as usize);
                return Err(SeriesError::Full("interned strings"));
            };
            self.shape_buf.push(k);
            self.values.push(v);
        }
        let shape = match last.or_else(|| self.shape_ids.get(self.shape_buf.as_slice()).copied()) {
            Some(s) => s,
            None => {
                let s = self.shapes.len() as u32;
                self.shapes.push(self.shape_buf.clone().into_boxed_slice());
                self.shape_ids
                    .insert(self.shape_buf.clone().into_boxed_slice(), s);
                s
            }
        };
        self.series_shape.push(shape);
        self.series_values.push(start);
        self.alias_counts.push(0);
        let pairs = self.shape_buf[1..]
            .iter()
            .copied()
            .zip(self.values[start as usize..].iter().copied());
        self.tables.entry(table).or_default().add(id, pairs);
        match self.canonical.entry(hash) {
            Entry::Vacant(e) => {
                e.insert(id);
            }
            Entry::Occupied(_) => {
                self.canonical_overflow.insert(self.key_buf.clone(), id);
            }
        }
        Ok(id)
    }
}
