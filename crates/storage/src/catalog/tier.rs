//! Per-database `tier after`: how long after a partition ends the lake copies it
//! (`CREATE DATABASE … WITH TIER AFTER 7d`, `ALTER DATABASE … SET TIER AFTER 7d`), when set
//! apart from the server's `--tier-after`. Only settings of their own are stored
//! (`catalog.json` version 9, `"tier_after"`), as retention's are.

use std::time::Duration;

use super::Catalog;
use crate::error::StorageError;

impl Catalog {
    /// `database`'s own `tier after` (`None`: the server's).
    pub fn tier_after(&self, database: &str) -> Option<Duration> {
        self.state
            .read()
            .tier_after
            .get(database)
            .map(|ns| Duration::from_nanos(*ns))
    }

    /// Every database's own `tier after`.
    pub fn tier_after_overrides(&self) -> Vec<(String, Duration)> {
        self.state
            .read()
            .tier_after
            .iter()
            .map(|(db, ns)| (db.clone(), Duration::from_nanos(*ns)))
            .collect()
    }

    /// Sets `database`'s `tier after` (`None`: back to the server's), durably. The database
    /// must exist, and a setting must be positive; setting one makes it an explicit
    /// database, as a retention does.
    pub fn set_tier_after(
        &self,
        database: &str,
        tier_after: Option<Duration>,
    ) -> Result<(), StorageError> {
        self.check_writable()?;
        if tier_after.is_some_and(|d| d.is_zero()) {
            return Err(StorageError::Invalid(
                "a tier after must be positive".to_string(),
            ));
        }
        let ns = tier_after.map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        self.set_database_value(database, |state| &mut state.tier_after, ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tier_after_is_kept_across_reopens_and_can_go_back_to_the_default() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path();
        let catalog = Catalog::open(path).expect("open");
        assert!(
            catalog
                .set_tier_after("nowhere", Some(Duration::from_secs(60)))
                .is_err()
        );
        catalog.create_database("db").expect("create");
        let err = catalog
            .set_tier_after("db", Some(Duration::ZERO))
            .expect_err("zero");
        assert!(err.to_string().contains("positive"), "{err}");
        catalog
            .set_tier_after("db", Some(Duration::from_secs(7 * 86_400)))
            .expect("set");
        drop(catalog);
        let catalog = Catalog::open(path).expect("reopen");
        assert_eq!(
            catalog.tier_after("db"),
            Some(Duration::from_secs(7 * 86_400))
        );
        assert_eq!(catalog.tier_after("other"), None);
        catalog.set_tier_after("db", None).expect("default");
        drop(catalog);
        let catalog = Catalog::open(path).expect("reopen");
        assert_eq!(catalog.tier_after("db"), None);
        assert!(catalog.tier_after_overrides().is_empty());
    }
}
