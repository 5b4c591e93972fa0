//! One Strata table's Delta table: created on first use, its columns kept in step with the
//! catalog, its files listed by origin, and commits of adds and removes.

use std::collections::HashMap;

use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake_core::kernel::{Action, Add, Remove};
use deltalake_core::operations::vacuum::VacuumMode;
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, ObjectStore};
use serde_json::Value;
use std::sync::Arc;
use strata_storage::catalog::TableSchema;
use strata_storage::model::TableId;
use url::Url;

use crate::error::LakeError;
use crate::file::FileOrigin;
use crate::schema::{DAY_COLUMN, LakeSchema};

/// The Delta table property naming the Strata table (its id) whose rows the Delta table
/// holds. A table dropped and created again under the same name gets a new id: the lake
/// table's files of the dropped one are removed before the new one's are added, so that
/// other engines never read both.
pub const TABLE_ID_PROPERTY: &str = "strata.tableId";

/// The Delta table property listing the Strata table's tags, a JSON array of column names:
/// tags and string fields are both Delta strings, and a reader of the lake alone (a
/// read-only query server, `mirror.rs`) tells them apart by it.
pub const TAGS_PROPERTY: &str = "strata.tags";

/// A live file of the table that Strata wrote.
#[derive(Debug, Clone)]
pub struct LakeFile {
    /// Where its rows came from.
    pub origin: FileOrigin,
    /// Its path in the table.
    pub path: String,
    /// Its size in bytes.
    pub size: i64,
    /// Its rows, from the file's statistics.
    pub rows: u64,
    /// The `remove` action that takes it out of the table.
    pub remove: Remove,
}

/// A Strata table's Delta table.
pub struct LakeTable {
    table: DeltaTable,
    /// `database.table`, for messages.
    name: String,
    /// When this process last vacuumed it.
    last_vacuum: Option<std::time::Instant>,
}

impl LakeTable {
    /// Opens the Delta table at `url`; when there is none, creates it with `schema`'s
    /// columns if `create`, else `None`. Its columns are brought in step with `schema`
    /// by [`LakeTable::keep_in_step`].
    pub async fn open(
        url: Url,
        storage_options: &HashMap<String, String>,
        table: &TableSchema,
        schema: &LakeSchema,
        create: bool,
    ) -> Result<Option<Self>, LakeError> {
        let name = format!("{}.{}", table.database, table.name);
        let delta = if create {
            DeltaTable::try_from_url_with_storage_options(url, storage_options.clone()).await?
        } else {
            match load_existing(url, storage_options).await? {
                Some(delta) => delta,
                None => return Ok(None),
            }
        };
        let mut this = if delta.version().is_none() {
            let created = delta
                .create()
                .with_table_name(&table.name)
                .with_comment(format!(
                    "Strata table {name}: cold partitions tiered from Strata (see docs/lake.md)"
                ))
                .with_columns(schema.delta_fields()?)
                .with_partition_columns([DAY_COLUMN])
                .with_configuration([
                    (TABLE_ID_PROPERTY, Some(table.id.to_string())),
                    (
                        TAGS_PROPERTY,
                        Some(
                            serde_json::to_string(&schema.tags())
                                .map_err(|e| LakeError::Invalid(format!("tags of {name}: {e}")))?,
                        ),
                    ),
                ])
                .with_raise_if_key_not_exists(false)
                .await?;
            Self {
                table: created,
                name,
                last_vacuum: None,
            }
        } else {
            Self {
                table: delta,
                name,
                last_vacuum: None,
            }
        };
        this.keep_in_step(schema).await?;
        Ok(Some(this))
    }

    /// Opens the Delta table at `url` as it is (no column added); `None` when there is
    /// none. `name` (`database.table`) is for messages.
    pub async fn open_existing(
        url: Url,
        storage_options: &HashMap<String, String>,
        name: String,
    ) -> Result<Option<Self>, LakeError> {
        Ok(load_existing(url, storage_options)
            .await?
            .map(|delta| Self {
                table: delta,
                name,
                last_vacuum: None,
            }))
    }

    /// The id of the Strata table whose rows the Delta table holds ([`TABLE_ID_PROPERTY`]);
    /// `None` for a table written before Strata recorded it.
    pub fn strata_table_id(&self) -> Result<Option<TableId>, LakeError> {
        let snapshot = self.table.snapshot()?;
        Ok(snapshot
            .metadata()
            .configuration()
            .get(TABLE_ID_PROPERTY)
            .and_then(|id| id.parse().ok()))
    }

    /// Records that the Delta table holds the rows of Strata table `id` (one commit).
    pub async fn set_strata_table_id(&mut self, id: TableId) -> Result<(), LakeError> {
        self.set_properties(HashMap::from([(
            TABLE_ID_PROPERTY.to_string(),
            id.to_string(),
        )]))
        .await
    }

    /// Adds the columns the Strata table has gained since the Delta table was written
    /// (each a commit only when something is missing), and records its tags
    /// ([`TAGS_PROPERTY`]) when they changed. Called before every copy, so that a field or
    /// tag added while the server runs is in the Delta schema before a file holds it.
    pub async fn keep_in_step(&mut self, schema: &LakeSchema) -> Result<(), LakeError> {
        self.add_missing_columns(schema).await?;
        let tags = serde_json::to_string(&schema.tags())
            .map_err(|e| LakeError::Invalid(format!("tags of {}: {e}", self.name)))?;
        let recorded = self
            .table
            .snapshot()?
            .metadata()
            .configuration()
            .get(TAGS_PROPERTY)
            .cloned();
        if recorded.as_deref() != Some(tags.as_str()) {
            self.set_properties(HashMap::from([(TAGS_PROPERTY.to_string(), tags)]))
                .await?;
        }
        Ok(())
    }

    /// Sets table properties (one commit).
    async fn set_properties(
        &mut self,
        properties: HashMap<String, String>,
    ) -> Result<(), LakeError> {
        let table = std::mem::replace(&mut self.table, DeltaTable::new_in_memory());
        match table
            .clone()
            .set_tbl_properties()
            .with_properties(properties)
            .with_raise_if_not_exists(false)
            .await
        {
            Ok(updated) => {
                self.table = updated;
                Ok(())
            }
            Err(error) => {
                self.table = table;
                Err(error.into())
            }
        }
    }

    /// Adds the columns of `schema` the Delta table lacks; a column whose type differs
    /// from the one in the table is an error.
    async fn add_missing_columns(&mut self, schema: &LakeSchema) -> Result<(), LakeError> {
        let existing = self.table.snapshot()?.schema();
        let mut missing = Vec::new();
        for field in schema.delta_fields()? {
            match existing.field(field.name()) {
                Some(found) if found.data_type() == field.data_type() => {}
                Some(found) => {
                    return Err(LakeError::Table {
                        table: self.name.clone(),
                        reason: format!(
                            "column {:?} is {:?} in the lake but {:?} in Strata",
                            field.name(),
                            found.data_type(),
                            field.data_type()
                        ),
                    });
                }
                None => missing.push(field),
            }
        }
        if !missing.is_empty() {
            let table = std::mem::replace(&mut self.table, DeltaTable::new_in_memory());
            self.table = table.add_columns().with_fields(missing).await?;
        }
        Ok(())
    }

    /// The store rooted at the table.
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        self.table.object_store()
    }

    /// The table's live files that Strata wrote (others are left alone).
    pub fn files(&self) -> Result<Vec<LakeFile>, LakeError> {
        live_files(&self.table)
    }

    /// Commits `adds` and `removes` as one Delta version, with `info` in its commit
    /// information; returns the version.
    pub async fn commit(
        &mut self,
        adds: Vec<Add>,
        removes: Vec<Remove>,
        info: HashMap<String, Value>,
    ) -> Result<u64, LakeError> {
        let actions: Vec<Action> = adds
            .into_iter()
            .map(Action::Add)
            .chain(removes.into_iter().map(Action::Remove))
            .collect();
        let operation = DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by: Some(vec![DAY_COLUMN.to_string()]),
            predicate: None,
        };
        // The properties' defaults write a checkpoint every 100 versions (the table's
        // `delta.checkpointInterval`), so that opening the table stays quick.
        let committed = CommitBuilder::from(CommitProperties::default().with_metadata(info))
            .with_actions(actions)
            .build(
                Some(self.table.snapshot()?),
                self.table.log_store(),
                operation,
            )
            .await?;
        let version = committed.version();
        self.table.update_state().await?;
        Ok(version)
    }

    /// Deletes the files no version still being kept names — replaced and expired copies,
    /// and copies a crash left uncommitted — once they are older than `retention` (the
    /// table's `delta.deletedFileRetentionDuration`, 7 days, when `None`, so that a reader
    /// still on an older version finds its files), at most once per `interval`. Returns the
    /// files deleted.
    pub async fn vacuum_if_due(
        &mut self,
        interval: std::time::Duration,
        retention: Option<std::time::Duration>,
    ) -> Result<u64, LakeError> {
        if self.last_vacuum.is_some_and(|at| at.elapsed() < interval) {
            return Ok(0);
        }
        self.last_vacuum = Some(std::time::Instant::now());
        let table = std::mem::replace(&mut self.table, DeltaTable::new_in_memory());
        let mut vacuum = table.clone().vacuum().with_mode(VacuumMode::Full);
        if let Some(retention) = retention {
            let retention = chrono::Duration::from_std(retention)
                .map_err(|e| LakeError::Invalid(format!("vacuum retention: {e}")))?;
            vacuum = vacuum
                .with_retention_period(retention)
                .with_enforce_retention_duration(false);
        }
        match vacuum.await {
            Ok((vacuumed, metrics)) => {
                self.table = vacuumed;
                Ok(metrics.files_deleted.len() as u64)
            }
            Err(error) => {
                self.table = table;
                Err(error.into())
            }
        }
    }
}

/// The Delta table at `url`, loaded; `None` when there is none (a local directory that
/// does not exist, or no Delta log).
pub(crate) async fn load_existing(
    url: Url,
    storage_options: &HashMap<String, String>,
) -> Result<Option<DeltaTable>, LakeError> {
    if crate::store::missing_local_dir(&url) {
        return Ok(None);
    }
    let delta = DeltaTable::try_from_url_with_storage_options(url, storage_options.clone()).await?;
    Ok(delta.version().is_some().then_some(delta))
}

/// The live files of the Delta table `table` (as loaded) that Strata wrote.
pub fn live_files(table: &DeltaTable) -> Result<Vec<LakeFile>, LakeError> {
    let snapshot = table.snapshot()?;
    Ok(snapshot
        .log_data()
        .iter()
        .filter_map(|file| {
            let path = file.path().to_string();
            Some(LakeFile {
                origin: FileOrigin::parse(&path)?,
                size: file.size(),
                rows: file.num_records().unwrap_or(0) as u64,
                remove: file.remove_action(true),
                path,
            })
        })
        .collect())
}
