//! Downsamples (continuous aggregates) as the catalog keeps them: the definition, and how
//! far maintenance has got — which parts of each shard are folded in, and which time ranges
//! must be computed again. Kept in `catalog.json` (version 6) so that progress survives
//! restarts and crashes, and changed with the same write-then-publish discipline as every
//! catalog change. What maintenance does with them is in `engine/downsample.rs`.

use serde::{Deserialize, Serialize};

use super::{Catalog, Retention, State, file};
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};
use crate::series::TagPredicate;

/// An aggregate a downsample keeps per series and bucket, for each numeric field `f` of
/// the source, as field `f_<name>` of the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregate {
    /// Mean of the values (a float).
    Avg,
    /// Smallest value (the field's type).
    Min,
    /// Largest value (the field's type).
    Max,
    /// Sum (float for float fields; integer fields keep their type).
    Sum,
    /// Number of values (an integer).
    Count,
    /// Value of the earliest row of the bucket.
    First,
    /// Value of the latest row of the bucket.
    Last,
}

impl Aggregate {
    /// Every aggregate, in the order their columns are listed.
    pub const ALL: [Aggregate; 7] = [
        Aggregate::Avg,
        Aggregate::Min,
        Aggregate::Max,
        Aggregate::Sum,
        Aggregate::Count,
        Aggregate::First,
        Aggregate::Last,
    ];

    /// The name used in statements and as the target's field suffix.
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Avg => "avg",
            Aggregate::Min => "min",
            Aggregate::Max => "max",
            Aggregate::Sum => "sum",
            Aggregate::Count => "count",
            Aggregate::First => "first",
            Aggregate::Last => "last",
        }
    }

    /// The aggregate named `name` (case-insensitive; `mean` is `avg`, as InfluxQL says it).
    pub fn parse(name: &str) -> Option<Aggregate> {
        let lower = name.to_ascii_lowercase();
        if lower == "mean" {
            return Some(Aggregate::Avg);
        }
        Aggregate::ALL.into_iter().find(|a| a.name() == lower)
    }
}

/// A time range (bucket-aligned) whose aggregates must be computed again, for the series a
/// predicate matches (every series when `None`): left by a `DELETE` on the source that cut
/// into a bucket, or by a back-fill not finished yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirtyRange {
    /// Inclusive start.
    pub start: Timestamp,
    /// Exclusive end.
    pub end: Timestamp,
    /// The series; every series of the source when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<TagPredicate>,
}

/// One downsample: `target` holds per-bucket aggregates of `source`'s rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Downsample {
    /// Unique, never reused (from 1).
    pub id: u64,
    /// Database of both tables.
    pub database: String,
    /// The downsample's name, which is also the target table's name.
    pub name: String,
    /// The table aggregated.
    pub source: TableId,
    /// The table holding the aggregates.
    pub target: TableId,
    /// Bucket width in nanoseconds; buckets start at multiples of it since the Unix epoch.
    pub interval_ns: i64,
    /// What is kept per field.
    pub aggregates: Vec<Aggregate>,
    /// Per shard: the parts of a lower order are folded into the target.
    pub folded_order: Vec<u64>,
    /// Ranges to compute again, whatever the parts say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty: Vec<DirtyRange>,
    /// When it was created (engine clock).
    pub created_ns: i64,
}

impl Downsample {
    /// The start of the bucket holding `time`.
    pub fn bucket_start(&self, time: Timestamp) -> Timestamp {
        time.div_euclid(self.interval_ns)
            .saturating_mul(self.interval_ns)
    }

    /// The end of the bucket holding `time` (exclusive).
    pub fn bucket_end(&self, time: Timestamp) -> Timestamp {
        self.bucket_start(time).saturating_add(self.interval_ns)
    }
}

impl Catalog {
    /// Every downsample, in creation order.
    pub fn downsamples(&self) -> Vec<Downsample> {
        self.state.read().downsamples.clone()
    }

    /// The downsamples of which table `table` is the source.
    pub fn downsamples_of(&self, table: TableId) -> Vec<Downsample> {
        let state = self.state.read();
        state
            .downsamples
            .iter()
            .filter(|d| d.source == table)
            .cloned()
            .collect()
    }

    /// Whether table `table` is the target of a downsample.
    pub fn is_downsample_target(&self, table: TableId) -> bool {
        self.state
            .read()
            .downsamples
            .iter()
            .any(|d| d.target == table)
    }

    /// Records `downsample` (its `id` is assigned here), durably. `target_retention`
    /// becomes the target table's own retention in the same write
    /// ([`Retention::ServerDefault`]: it follows its database).
    pub fn add_downsample(
        &self,
        mut downsample: Downsample,
        target_retention: Retention,
    ) -> Result<Downsample, StorageError> {
        self.check_writable()?;
        self.change_downsamples(|state| {
            if state
                .downsamples
                .iter()
                .any(|d| d.database == downsample.database && d.name == downsample.name)
            {
                return Err(StorageError::Invalid(format!(
                    "downsample \"{}\" already exists in database \"{}\"",
                    downsample.name, downsample.database
                )));
            }
            downsample.id = state.next_downsample_id.max(1);
            state.next_downsample_id = downsample.id + 1;
            match target_retention.to_stored() {
                Some(ns) => state.table_retention.insert(downsample.target, ns),
                None => state.table_retention.remove(&downsample.target),
            };
            state.downsamples.push(downsample.clone());
            Ok(downsample)
        })
    }

    /// Forgets downsample `database.name` (its target table stays), durably. Returns it.
    pub fn remove_downsample(
        &self,
        database: &str,
        name: &str,
    ) -> Result<Option<Downsample>, StorageError> {
        self.check_writable()?;
        self.change_downsamples(|state| {
            let found = state
                .downsamples
                .iter()
                .position(|d| d.database == database && d.name == name);
            Ok(found.map(|index| state.downsamples.remove(index)))
        })
    }

    /// Applies `update` to downsample `id` (if it still exists), durably.
    pub fn update_downsample(
        &self,
        id: u64,
        update: impl FnOnce(&mut Downsample),
    ) -> Result<(), StorageError> {
        self.change_downsamples(|state| {
            if let Some(d) = state.downsamples.iter_mut().find(|d| d.id == id) {
                update(d);
            }
            Ok(())
        })
    }

    /// Runs `change` on the state and writes the file; on any error the downsamples and
    /// table retentions are put back as they were, so memory never runs ahead of the disk.
    fn change_downsamples<R>(
        &self,
        change: impl FnOnce(&mut State) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let before = (
            state.downsamples.clone(),
            state.next_downsample_id,
            state.table_retention.clone(),
        );
        let result = change(&mut state).and_then(|r| {
            if (
                &state.downsamples,
                state.next_downsample_id,
                &state.table_retention,
            ) == (&before.0, before.1, &before.2)
            {
                return Ok(r);
            }
            state.version += 1;
            file::store(&self.path, &file::encode(&state))?;
            *persisted = state.version;
            Ok(r)
        });
        if result.is_err() {
            (
                state.downsamples,
                state.next_downsample_id,
                state.table_retention,
            ) = before;
        }
        result
    }
}

/// Drops the downsamples that read or write table `id` (called as it is dropped, under the
/// state lock, before the file is written).
pub(super) fn forget_table(state: &mut State, id: TableId) {
    state
        .downsamples
        .retain(|d| d.source != id && d.target != id);
    state.table_retention.remove(&id);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str, source: TableId, target: TableId) -> Downsample {
        Downsample {
            id: 0,
            database: "db".into(),
            name: name.into(),
            source,
            target,
            interval_ns: 3_600_000_000_000,
            aggregates: vec![Aggregate::Avg, Aggregate::Last],
            folded_order: vec![0, 0],
            dirty: vec![DirtyRange {
                start: 0,
                end: 3_600_000_000_000,
                predicate: None,
            }],
            created_ns: 7,
        }
    }

    #[test]
    fn buckets_start_at_multiples_of_the_interval() {
        let d = sample("x", 0, 1);
        let hour = d.interval_ns;
        assert_eq!(d.bucket_start(hour + 5), hour);
        assert_eq!(d.bucket_end(hour + 5), 2 * hour);
        assert_eq!(d.bucket_start(-1), -hour);
        assert_eq!(d.bucket_start(0), 0);
        assert_eq!(Aggregate::parse("MEAN"), Some(Aggregate::Avg));
        assert_eq!(Aggregate::parse("last"), Some(Aggregate::Last));
        assert_eq!(Aggregate::parse("median"), None);
    }

    #[test]
    fn downsamples_survive_reopening_and_leave_with_their_tables() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let cpu = catalog.get_or_create_table("db", "cpu");
        let cpu_1h = catalog.get_or_create_table("db", "cpu_1h");
        catalog.persist().unwrap();
        let added = catalog
            .add_downsample(
                sample("cpu_1h", cpu, cpu_1h),
                Retention::Keep(std::time::Duration::from_secs(400 * 86_400)),
            )
            .unwrap();
        assert_eq!(added.id, 1);
        let again = catalog.add_downsample(sample("cpu_1h", cpu, cpu_1h), Retention::ServerDefault);
        assert!(again.unwrap_err().to_string().contains("already exists"));
        catalog
            .update_downsample(1, |d| d.folded_order = vec![3, 4])
            .unwrap();
        drop(catalog);

        let catalog = Catalog::open(dir.path()).unwrap();
        let found = catalog.downsamples();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].folded_order, vec![3, 4]);
        assert_eq!(found[0].dirty, sample("", 0, 0).dirty);
        assert!(catalog.is_downsample_target(cpu_1h));
        assert_eq!(catalog.downsamples_of(cpu).len(), 1);
        assert_eq!(
            catalog.table_retention(cpu_1h),
            Retention::Keep(std::time::Duration::from_secs(400 * 86_400))
        );
        catalog.drop_table("db", "cpu").unwrap();
        assert!(catalog.downsamples().is_empty());
        drop(catalog);
        let catalog = Catalog::open(dir.path()).unwrap();
        assert!(catalog.downsamples().is_empty());
        // The next downsample gets a new id.
        let other = catalog.get_or_create_table("db", "mem");
        catalog.persist().unwrap();
        let added = catalog
            .add_downsample(sample("mem_1h", other, cpu_1h), Retention::ServerDefault)
            .unwrap();
        assert_eq!(added.id, 2);
        assert_eq!(catalog.table_retention(cpu_1h), Retention::ServerDefault);
    }
}
