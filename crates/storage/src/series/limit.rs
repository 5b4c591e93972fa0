//! The limit on live series per database (`strata serve --max-series`): one count per
//! table, so that a shard can give back what it retires without the catalog, and a
//! database's count is the sum over its tables (a dropped table's series stop counting at
//! once). Admission checks and counts under one lock, so concurrent writers to different
//! shards cannot overshoot the limit together.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::model::TableId;

/// Live series per table, and the most a database may hold.
#[derive(Debug)]
pub struct SeriesLimit {
    max: u64,
    per_table: Mutex<HashMap<TableId, u64>>,
}

impl SeriesLimit {
    /// A limit of `max` live series per database, nothing counted yet.
    pub fn new(max: u64) -> Self {
        Self {
            max,
            per_table: Mutex::new(HashMap::new()),
        }
    }

    /// The limit.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Counts `n` live series of `table` (at open, from the series index).
    pub fn count(&self, table: TableId, n: u64) {
        *self.per_table.lock().entry(table).or_default() += n;
    }

    /// Admits one new series of `table`, whose database has the tables
    /// `database_tables`: counts it and returns true if the database holds fewer than the
    /// limit, else returns false and counts nothing.
    pub fn admit(&self, table: TableId, database_tables: &[TableId]) -> bool {
        let mut per_table = self.per_table.lock();
        let live: u64 = database_tables
            .iter()
            .filter_map(|t| per_table.get(t))
            .sum();
        if live >= self.max {
            return false;
        }
        *per_table.entry(table).or_default() += 1;
        true
    }

    /// Gives back `n` series of `table` that left the index.
    pub fn release(&self, table: TableId, n: u64) {
        if let Some(count) = self.per_table.lock().get_mut(&table) {
            *count = count.saturating_sub(n);
        }
    }

    /// Live series counted for the database with `database_tables`.
    pub fn live(&self, database_tables: &[TableId]) -> u64 {
        let per_table = self.per_table.lock();
        database_tables
            .iter()
            .filter_map(|t| per_table.get(t))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_holds_at_most_max_and_retired_series_make_room() {
        let limit = SeriesLimit::new(3);
        let (a, b, other) = (1, 2, 9);
        limit.count(a, 2);
        assert!(limit.admit(b, &[a, b]));
        assert!(
            !limit.admit(b, &[a, b]),
            "the fourth series of the database"
        );
        assert!(
            limit.admit(other, &[other]),
            "another database has its own limit"
        );
        assert_eq!(limit.live(&[a, b]), 3);
        limit.release(a, 1);
        assert!(limit.admit(a, &[a, b]));
        // A dropped table is no longer one of the database's: its series stop counting.
        assert!(limit.admit(b, &[b]));
    }
}
