//! Tombstones: the deletes (`DELETE FROM t WHERE …`) whose rows may still be in parts.
//!
//! A delete removes the rows of one table in a time range, of the series a tag predicate
//! matches (all when none), that were written before it. The engine first flushes every
//! memtable, so all those rows are in parts, then records the tombstone with each shard's
//! next part order: parts of a lower order hold rows written before the delete, later
//! flushes never do. Reads leave out the rows a tombstone covers in the parts it applies
//! to; merges and the shards' purges rewrite those parts without them, marking the new
//! part with the highest tombstone id it has applied; once no part anywhere is subject
//! to a tombstone, it is retired. Tombstones live in `catalog.json` (version 5), so they
//! survive restarts and crashes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use super::{Catalog, file};
use crate::error::StorageError;
use crate::model::{TableId, Timestamp};
use crate::series::TagPredicate;

/// One delete still in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// Unique, increasing with each delete (from 1).
    pub id: u64,
    /// The table.
    pub table: TableId,
    /// Inclusive start of the deleted time range.
    pub start: Timestamp,
    /// Exclusive end of the deleted time range.
    pub end: Timestamp,
    /// The series deleted from; every series of the table when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<TagPredicate>,
    /// Per shard: the part order the shard's next flush would have taken when the delete
    /// was made. Parts of a lower order may hold deleted rows.
    pub before_order: Vec<u64>,
    /// When the delete was made (engine clock); purges wait a little to take several
    /// deletes in one rewrite. 0 (absent) purges at once.
    #[serde(default)]
    pub created_ns: i64,
}

impl Tombstone {
    /// Whether this tombstone may remove rows from a part of shard `shard` with precedence
    /// `order` that has applied every tombstone up to id `applied`, spanning `min..=max`.
    pub fn applies_to(
        &self,
        shard: usize,
        order: u64,
        applied: u64,
        min: Timestamp,
        max: Timestamp,
    ) -> bool {
        self.id > applied
            && self.before_order.get(shard).is_some_and(|b| order < *b)
            && min < self.end
            && max >= self.start
    }
}

/// The tombstones in force, shared by the catalog and the shards; replaced as a whole on
/// each change so readers take a cheap snapshot.
#[derive(Debug, Default)]
pub struct Tombstones {
    list: RwLock<Arc<Vec<Tombstone>>>,
    /// Bumped on every new tombstone, so shards know when to purge again.
    generation: AtomicU64,
}

impl Tombstones {
    pub(super) fn new(list: Vec<Tombstone>) -> Self {
        Self {
            list: RwLock::new(Arc::new(list)),
            generation: AtomicU64::new(1),
        }
    }

    /// The tombstones in force.
    pub fn snapshot(&self) -> Arc<Vec<Tombstone>> {
        Arc::clone(&self.list.read())
    }

    /// Changes with every new tombstone.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The highest tombstone id given so far in force (0 if none): what a part written now,
    /// with every tombstone applied, records.
    pub fn highest_id(&self) -> u64 {
        self.list.read().iter().map(|t| t.id).max().unwrap_or(0)
    }

    fn publish(&self, list: Vec<Tombstone>, new: bool) {
        *self.list.write() = Arc::new(list);
        if new {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Catalog {
    /// The tombstones in force, shared with the shards.
    pub fn tombstones(&self) -> &Arc<Tombstones> {
        &self.tombstones
    }

    /// Records a delete of `table`'s rows in `start..end` of the series `predicate` matches,
    /// with each shard's next part order (`before_order`); durable (written and fsynced)
    /// before it takes effect and this returns.
    #[allow(clippy::too_many_arguments)] // one delete's fields, passed flat
    pub fn add_tombstone(
        &self,
        table: TableId,
        start: Timestamp,
        end: Timestamp,
        predicate: Option<TagPredicate>,
        before_order: Vec<u64>,
        created_ns: i64,
    ) -> Result<Tombstone, StorageError> {
        self.check_writable()?;
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let tombstone = Tombstone {
            id: state.next_tombstone_id.max(1),
            table,
            start,
            end,
            predicate,
            before_order,
            created_ns,
        };
        let previous_next = state.next_tombstone_id;
        state.next_tombstone_id = tombstone.id + 1;
        state.tombstones.push(tombstone.clone());
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            state.tombstones.pop();
            state.next_tombstone_id = previous_next;
            return Err(e);
        }
        *persisted = state.version;
        self.tombstones.publish(state.tombstones.clone(), true);
        Ok(tombstone)
    }

    /// Forgets the tombstones `ids` (no part is subject to them any more), durably.
    pub fn retire_tombstones(&self, ids: &[u64]) -> Result<(), StorageError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let before = state.tombstones.clone();
        state.tombstones.retain(|t| !ids.contains(&t.id));
        if state.tombstones.len() == before.len() {
            return Ok(());
        }
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            state.tombstones = before;
            return Err(e);
        }
        *persisted = state.version;
        self.tombstones.publish(state.tombstones.clone(), false);
        Ok(())
    }
}
