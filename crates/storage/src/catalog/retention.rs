//! Per-database retention: how long each database keeps its rows, when set apart from the
//! server's default (`EngineOptions::retention`).
//!
//! A database's setting is one of [`Retention`]: the server default, forever, or a
//! duration. Only settings other than the default are stored (`catalog.json` version 4,
//! `"retention"`), so changing the server's `--retention` changes every database that was
//! never given its own.

use std::time::Duration;

use super::{Catalog, State, file};
use crate::error::StorageError;
use crate::model::TableId;

/// How long a database keeps rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Whatever the server's default is (`--retention`).
    ServerDefault,
    /// Rows are never expired.
    Forever,
    /// Rows older than now minus this are expired.
    Keep(Duration),
}

impl Retention {
    /// Reads a setting as users write it: a duration such as `30d`, `12h` or `2w`
    /// (humantime's units); `0`, `inf`, `infinite` or `forever` for no expiry; `default`
    /// for the server's. Case does not matter.
    pub fn parse(text: &str) -> Result<Retention, String> {
        let text = text.trim();
        let lower = text.to_ascii_lowercase();
        match lower.as_str() {
            "0" | "inf" | "infinite" | "forever" => return Ok(Retention::Forever),
            "default" => return Ok(Retention::ServerDefault),
            _ => {}
        }
        match humantime::parse_duration(text) {
            Ok(d) if d.is_zero() => Ok(Retention::Forever),
            Ok(d) => Ok(Retention::Keep(d)),
            Err(e) => Err(format!(
                "retention {text:?}: expected a duration such as 30d, 12h or 2w, or 0/INF for forever ({e})"
            )),
        }
    }

    /// The stored form: nanoseconds, 0 for forever; `None` for the server default.
    pub(super) fn to_stored(self) -> Option<u64> {
        match self {
            Retention::ServerDefault => None,
            Retention::Forever => Some(0),
            Retention::Keep(d) => Some(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)),
        }
    }

    /// The setting a stored value means.
    pub(super) fn from_stored(stored: Option<u64>) -> Self {
        match stored {
            None => Retention::ServerDefault,
            Some(0) => Retention::Forever,
            Some(ns) => Retention::Keep(Duration::from_nanos(ns)),
        }
    }

    /// How long rows are kept, as Strata prints it: in the largest unit that divides it
    /// (`30d`, `12h`, `90m`, `45s`), else as humantime does (`1h 30m 0.5s`); `forever`.
    pub fn text(kept: Option<Duration>) -> String {
        let Some(d) = kept else {
            return "forever".to_string();
        };
        let secs = d.as_secs();
        if d.subsec_nanos() != 0 || secs == 0 {
            return humantime::format_duration(d).to_string();
        }
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
            if secs % size == 0 {
                return format!("{}{unit}", secs / size);
            }
        }
        unreachable!("every whole number of seconds is a multiple of one second")
    }

    /// The duration rows are kept under this setting, with `default` the server's
    /// (`None`: forever).
    pub fn effective(self, default: Option<Duration>) -> Option<Duration> {
        match self {
            Retention::ServerDefault => default.filter(|d| !d.is_zero()),
            Retention::Forever => None,
            Retention::Keep(d) => Some(d),
        }
    }
}

impl Catalog {
    /// `database`'s own retention setting ([`Retention::ServerDefault`] when it has none).
    pub fn retention(&self, database: &str) -> Retention {
        Retention::from_stored(self.state.read().retention.get(database).copied())
    }

    /// The retention setting that applies to table `table`: its own (a downsample
    /// target's), else its database's.
    pub fn table_retention(&self, table: TableId) -> Retention {
        let state = self.state.read();
        let stored = state.table_retention.get(&table).copied().or_else(|| {
            state
                .tables
                .get(table as usize)
                .and_then(|t| state.retention.get(&t.database))
                .copied()
        });
        Retention::from_stored(stored)
    }

    /// Table `table`'s own retention setting ([`Retention::ServerDefault`] when it follows
    /// its database).
    pub fn own_table_retention(&self, table: TableId) -> Retention {
        Retention::from_stored(self.state.read().table_retention.get(&table).copied())
    }

    /// The databases with a retention setting of their own, and the settings.
    pub fn retention_overrides(&self) -> Vec<(String, Retention)> {
        self.state
            .read()
            .retention
            .iter()
            .map(|(db, ns)| (db.clone(), Retention::from_stored(Some(*ns))))
            .collect()
    }

    /// The settings of the tables with a retention of their own.
    pub fn table_retention_overrides(&self) -> Vec<Retention> {
        self.state
            .read()
            .table_retention
            .values()
            .map(|ns| Retention::from_stored(Some(*ns)))
            .collect()
    }

    /// Sets `database`'s retention, durably (written and fsynced before this returns).
    /// The database must exist; setting one also makes it an explicit database, so it
    /// outlives its last table as `CREATE DATABASE` does.
    pub fn set_retention(&self, database: &str, retention: Retention) -> Result<(), StorageError> {
        self.check_writable()?;
        self.set_database_value(
            database,
            |state| &mut state.retention,
            retention.to_stored(),
        )
    }

    /// Sets (`Some`) or clears (`None`) `database`'s entry in the per-database map `map`
    /// picks, durably; the database must exist, and becomes an explicit database. When
    /// the catalog cannot be written, nothing changes.
    pub(super) fn set_database_value(
        &self,
        database: &str,
        map: fn(&mut State) -> &mut std::collections::BTreeMap<String, u64>,
        value: Option<u64>,
    ) -> Result<(), StorageError> {
        if !self.has_database(database) {
            return Err(StorageError::Invalid(format!(
                "database \"{database}\" not found"
            )));
        }
        let mut persisted = self.persisted_version.lock();
        let mut state = self.state.write();
        let set = |state: &mut State, value: Option<u64>| match value {
            Some(v) => map(state).insert(database.to_string(), v),
            None => map(state).remove(database),
        };
        let before = set(&mut state, value);
        let created = state.databases.insert(database.to_string());
        state.version += 1;
        if let Err(e) = file::store(&self.path, &file::encode(&state)) {
            set(&mut state, before);
            if created {
                state.databases.remove(database);
            }
            return Err(e);
        }
        *persisted = state.version;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_users_write_them() {
        let day = Duration::from_secs(86_400);
        assert_eq!(Retention::parse("30d"), Ok(Retention::Keep(30 * day)));
        assert_eq!(Retention::parse(" 2w "), Ok(Retention::Keep(14 * day)));
        assert_eq!(
            Retention::parse("90m"),
            Ok(Retention::Keep(Duration::from_secs(90 * 60)))
        );
        for forever in ["0", "INF", "infinite", "Forever", "0s"] {
            assert_eq!(
                Retention::parse(forever),
                Ok(Retention::Forever),
                "{forever}"
            );
        }
        assert_eq!(Retention::parse("DEFAULT"), Ok(Retention::ServerDefault));
        let err = Retention::parse("7 fortnights").expect_err("unknown unit");
        assert!(err.contains("7 fortnights"), "{err}");
        assert!(Retention::parse("").is_err());
    }

    #[test]
    fn settings_print_in_their_largest_whole_unit() {
        let text = |secs| Retention::text(Some(Duration::from_secs(secs)));
        assert_eq!(text(400 * 86_400), "400d");
        assert_eq!(text(36 * 3_600), "36h");
        assert_eq!(text(90 * 60), "90m");
        assert_eq!(text(61), "61s");
        assert_eq!(
            Retention::text(Some(Duration::from_millis(1500))),
            "1s 500ms"
        );
        assert_eq!(Retention::text(None), "forever");
    }

    #[test]
    fn settings_round_trip_through_the_stored_form() {
        for setting in [
            Retention::ServerDefault,
            Retention::Forever,
            Retention::Keep(Duration::from_secs(3 * 86_400)),
        ] {
            assert_eq!(Retention::from_stored(setting.to_stored()), setting);
        }
        let week = Duration::from_secs(7 * 86_400);
        assert_eq!(Retention::ServerDefault.effective(Some(week)), Some(week));
        assert_eq!(Retention::ServerDefault.effective(None), None);
        assert_eq!(Retention::Forever.effective(Some(week)), None);
        assert_eq!(
            Retention::Keep(Duration::from_secs(60)).effective(Some(week)),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn a_setting_survives_reopening_and_needs_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let err = catalog
            .set_retention("nope", Retention::Forever)
            .expect_err("no such database");
        assert!(err.to_string().contains("not found"), "{err}");
        catalog.create_database("db").unwrap();
        let table = catalog.get_or_create_table("db", "cpu");
        catalog.persist().unwrap();
        let three_days = Retention::Keep(Duration::from_secs(3 * 86_400));
        catalog.set_retention("db", three_days).unwrap();
        drop(catalog);

        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.retention("db"), three_days);
        assert_eq!(catalog.table_retention(table), three_days);
        assert_eq!(catalog.retention("other"), Retention::ServerDefault);
        catalog
            .set_retention("db", Retention::ServerDefault)
            .unwrap();
        assert_eq!(catalog.retention("db"), Retention::ServerDefault);
        catalog.forget_database("db").unwrap();
        catalog.set_retention("db", Retention::Forever).unwrap();
        drop(catalog);
        let catalog = Catalog::open(dir.path()).unwrap();
        assert_eq!(catalog.retention("db"), Retention::Forever);
    }

    #[test]
    fn a_database_exists_while_created_or_holding_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(dir.path()).unwrap();
        let exists = |name| {
            (
                catalog.has_database(name),
                catalog.databases().contains(&name.to_owned()),
            )
        };
        assert_eq!(exists("made"), (false, false));
        catalog.create_database("made").unwrap();
        catalog.get_or_create_table("written", "cpu");
        assert_eq!(exists("made"), (true, true));
        assert_eq!(exists("written"), (true, true));
        catalog.drop_table("written", "cpu").unwrap();
        assert_eq!(exists("written"), (false, false));
        catalog.forget_database("made").unwrap();
        assert_eq!(exists("made"), (false, false));
    }
}
