//! `strata repair`, one shard's series log: read what every source says about the shard's
//! series (the old log's records that still check, the series keys in the parts, the series
//! the WAL creates), feed the catalog's facts, and write a new log when the old one is
//! damaged or missing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use roaring::RoaringBitmap;

use super::repair::{FoundPart, RepairReport, set_damaged_aside};
use super::repair_catalog::CatalogFacts;
use crate::error::StorageError;
use crate::fsutil;
use crate::model::{FieldId, FieldType, SeriesId, TableId, Timestamp, Value};
use crate::series::{SERIES_LOG_FILE, SeriesIndex};
use crate::wal_record::{BatchVisitor, decode_batch};

/// Tag key of a series whose rows a part holds but whose tags no source recorded (parts
/// written before format 3): its rows stay queryable under `<key>=<id>`.
pub const UNKNOWN_SERIES_TAG: &str = "__strata_repair_unknown";
/// Tag key of an id no source names and nothing holds rows of: it is written retired, so
/// that ids stay dense.
const GAP_SERIES_TAG: &str = "__strata_repair_gap";

type Tags = Vec<(String, String)>;

/// What the WAL of a shard says.
#[derive(Default)]
struct WalFacts {
    created: BTreeMap<SeriesId, (TableId, Tags)>,
    /// Series with rows, with the fields (and types) of those rows.
    rows: BTreeMap<SeriesId, BTreeMap<FieldId, FieldType>>,
}

impl BatchVisitor for WalFacts {
    fn series(
        &mut self,
        id: SeriesId,
        table: TableId,
        tags: &[(&str, &str)],
    ) -> Result<(), String> {
        let tags = tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.created.insert(id, (table, tags));
        Ok(())
    }

    fn row(
        &mut self,
        series: SeriesId,
        _time: Timestamp,
        fields: Vec<(FieldId, Value)>,
    ) -> Result<(), String> {
        let seen = self.rows.entry(series).or_default();
        for (field, value) in fields {
            seen.entry(field).or_insert(value.field_type());
        }
        Ok(())
    }
}

/// Repairs the series log of the shard at `home` (live `parts` already opened) if it is
/// damaged or missing, and adds what every source says to `facts`.
pub(super) fn repair_shard(
    home: &Path,
    shard: usize,
    parts: &[FoundPart],
    facts: &mut CatalogFacts,
    report: &mut RepairReport,
) -> Result<(), StorageError> {
    let series_dir = home.join("series");
    let log_path = series_dir.join(SERIES_LOG_FILE);
    let damage = if log_path.exists() {
        SeriesIndex::inspect(&series_dir)
            .err()
            .map(|e| e.to_string())
    } else {
        Some("missing".to_owned())
    };
    let salvaged = if log_path.exists() {
        crate::series::salvage(&log_path).unwrap_or_else(|e| {
            report
                .notes
                .push(format!("{}: nothing read ({e})", log_path.display()));
            Default::default()
        })
    } else {
        Default::default()
    };
    let wal = read_wal(&home.join("wal"), report);

    let mut known: BTreeMap<SeriesId, (TableId, Tags)> = BTreeMap::new();
    for key in salvaged.series {
        known.insert(key.id, (key.table, key.tags));
    }
    let mut part_tables: BTreeMap<SeriesId, TableId> = BTreeMap::new();
    for part in parts {
        part_tables.extend(part.reader.series_ids());
        for key in part.recovery.iter().flat_map(|r| &r.series) {
            let from_part = (key.table, key.tags.clone());
            if let Some(old) = known.insert(key.id, from_part)
                && (old.0 != key.table || old.1 != key.tags)
            {
                report.notes.push(format!(
                    "shard {shard}: series {} differs between the series log and a part (the \
                     part's tags are kept)",
                    key.id
                ));
            }
        }
    }
    for (id, created) in &wal.created {
        known.entry(*id).or_insert_with(|| created.clone());
    }
    for (id, (table, tags)) in &known {
        facts.add_series(*table, tags);
        if let Some(fields) = wal.rows.get(id) {
            facts.add_wal_fields(*table, fields);
        }
    }
    let Some(why) = damage else {
        return Ok(());
    };
    if part_tables.is_empty() && wal.rows.is_empty() && known.is_empty() {
        // A shard that never held a series: the engine creates its log at open.
        return Ok(());
    }

    let live: BTreeSet<SeriesId> = part_tables.keys().chain(wal.rows.keys()).copied().collect();
    let highest = known
        .keys()
        .chain(live.iter())
        .chain(salvaged.retired.iter())
        .copied()
        .max()
        .unwrap_or(0);
    let mut entries = Vec::with_capacity(highest as usize + 1);
    let mut retired = RoaringBitmap::new();
    let (mut unknown, mut unknown_lost) = (0u64, 0u64);
    for id in 0..=highest {
        let entry = match known.remove(&id) {
            Some((table, tags)) => (table, tags),
            None => match part_tables.get(&id) {
                Some(table) => {
                    unknown += 1;
                    (
                        *table,
                        vec![(UNKNOWN_SERIES_TAG.to_owned(), id.to_string())],
                    )
                }
                None => {
                    if live.contains(&id) {
                        // Rows in the WAL only, with neither tags nor table anywhere.
                        unknown_lost += 1;
                    }
                    retired.insert(id);
                    (
                        TableId::MAX,
                        vec![(GAP_SERIES_TAG.to_owned(), id.to_string())],
                    )
                }
            },
        };
        if !live.contains(&id) || (salvaged.retired.contains(&id) && !part_tables.contains_key(&id))
        {
            retired.insert(id);
        }
        entries.push(entry);
    }
    let (written, retired_count) = write_log(&series_dir, entries, &retired)?;
    if log_path.exists() {
        set_damaged_aside(&log_path)?;
    }
    install(&series_dir, &log_path)?;
    report.rebuilt.push(format!(
        "{}: {} series ({} live, {retired_count} retired), from the records that checked, the \
         parts and the WAL ({why})",
        log_path.display(),
        written,
        written - retired_count
    ));
    if unknown > 0 {
        report.lost.push(format!(
            "shard {shard}: {unknown} series have rows in parts written before format 3 but \
             no recorded tags; their rows are kept under the tag {UNKNOWN_SERIES_TAG}=<id>"
        ));
    }
    if unknown_lost > 0 {
        report.lost.push(format!(
            "shard {shard}: {unknown_lost} series have rows only in the WAL and no recorded \
             tags or table; those rows are lost"
        ));
    }
    Ok(())
}

/// Every record of the WAL in `dir` that reads, up to the first damage (reported).
fn read_wal(dir: &Path, report: &mut RepairReport) -> WalFacts {
    let mut facts = WalFacts::default();
    if dir.is_dir()
        && let Err(e) =
            crate::wal::inspect_records(dir, |_, payload: &[u8]| decode_batch(payload, &mut facts))
    {
        report.notes.push(format!(
            "{}: read up to damage ({e}); the records after it were not used",
            dir.display()
        ));
    }
    facts
}

/// Writes `entries` (series `i` at index `i`) as a new log in `series.repair` beside
/// `series_dir`, with `retired` retired; returns the series written and retired. Where a
/// tag set comes back under a later id, the earlier series was retired before it was
/// created again (the engine never holds two live series with one tag set), and is retired
/// here at that point too.
fn write_log(
    series_dir: &Path,
    entries: Vec<(TableId, Tags)>,
    retired: &RoaringBitmap,
) -> Result<(usize, usize), StorageError> {
    let tmp = series_dir.with_file_name("series.repair");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)
            .map_err(|e| StorageError::io("cannot remove directory", &tmp, e))?;
    }
    let mut index = SeriesIndex::open(&tmp)?;
    let mut by_key: HashMap<(TableId, Tags), SeriesId> = HashMap::new();
    let mut retired_early = RoaringBitmap::new();
    let written = entries.len();
    for (id, (table, tags)) in (0..).zip(entries) {
        let key = (table, tags);
        if let Some(earlier) = by_key.remove(&key) {
            index.persist()?;
            index.retire(&RoaringBitmap::from_iter([earlier]))?;
            retired_early.insert(earlier);
        }
        let pairs: Vec<(&str, &str)> = key
            .1
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        index.insert_replayed(id, table, &pairs)?;
        by_key.insert(key, id);
    }
    index.persist()?;
    let rest = retired - &retired_early;
    index.retire(&rest)?;
    Ok((written, (retired | &retired_early).len() as usize))
}

/// Moves the log written in `series.repair` to `log_path` (the old one set aside already)
/// and removes the temporary directory.
fn install(series_dir: &Path, log_path: &Path) -> Result<(), StorageError> {
    let tmp = series_dir.with_file_name("series.repair");
    fsutil::create_dir_all_durable(series_dir)
        .map_err(|e| StorageError::io("cannot create directory", series_dir, e))?;
    let built = tmp.join(SERIES_LOG_FILE);
    std::fs::rename(&built, log_path).map_err(|e| StorageError::io("cannot move", &built, e))?;
    fsutil::sync_dir(series_dir)
        .map_err(|e| StorageError::io("cannot sync directory", series_dir, e))?;
    std::fs::remove_dir_all(&tmp).map_err(|e| StorageError::io("cannot remove directory", &tmp, e))
}
