//! The lake's errors.

use thiserror::Error;

/// Why a lake operation failed.
#[derive(Debug, Error)]
pub enum LakeError {
    /// The lake URL or a setting is not usable.
    #[error("lake: {0}")]
    Invalid(String),
    /// A table cannot be tiered as it is (the message says why).
    #[error("lake table {table}: {reason}")]
    Table {
        /// `database.table`.
        table: String,
        /// Why.
        reason: String,
    },
    /// The Delta log or an object store operation failed.
    #[error("delta: {0}")]
    Delta(#[from] deltalake_core::DeltaTableError),
    /// Writing or reading Parquet failed.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// An object store operation failed.
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
    /// Building Arrow arrays failed.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The round was stopped ([`crate::RoundStop`]) before this work was done; nothing of
    /// it was committed.
    #[error("stopped before it was done")]
    Stopped,
    /// Reading the engine failed.
    #[error("storage: {0}")]
    Storage(#[from] strata_storage::StorageError),
}
