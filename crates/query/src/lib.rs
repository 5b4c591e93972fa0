//! Strata's SQL layer: DataFusion over the storage engine.
//!
//! Module map:
//! - [`engine`]: [`QueryEngine`], the entry point: `sql(database, statement)` → batches.
//! - [`catalog`]: the engine's databases and tables as DataFusion schemas and tables, looked
//!   up at every statement.
//! - [`table`]: [`StrataTable`], one table as a DataFusion `TableProvider`.
//! - `pushdown`: which `WHERE` conjuncts become the engine's time range and tag predicate,
//!   exactly or as a superset.
//! - [`scan`]: [`StrataScanExec`], the physical scan, one partition per shard.
//! - `functions`: `time_bucket` (= `date_bin`).
//! - [`error`]: [`QueryError`], with the position in the statement where known.
//! - `preagg`: aggregates from block pre-aggregates ([`PreAggExec`]), a physical
//!   optimizer rule.
//! - [`nesting`]: the bound on expression depth, checked on a statement's text before it is
//!   parsed (a deep tree would overflow the stack of whatever walks it).
//! - [`sql_lex`]: code versus strings, quoted names and comments in a statement's text.
//! - `guard`: the guard rails — concurrency slots and [`QueryStream`] with its deadline.
//! - `query_runtime`: the threads DataFusion's long plans run on, apart from the server's;
//!   `plan_weight` says which plans are long.
//! - `statements`: what Strata runs itself before DataFusion sees a statement — `SHOW`,
//!   `DESCRIBE`, `CREATE TABLE`, `INSERT … VALUES` (through `Engine::write_lines`),
//!   `DROP TABLE` (reference: `docs/sql.md`).
//!
//! Query path: `SQL → DataFusion parse + plan (catalog → StrataTable) → optimizer pushes
//! filters, projection and limit into the scan → StrataScanExec: per shard, on the blocking
//! pool, Engine::scan_shard(time range, tag predicate, fields) → Arrow batches → DataFusion
//! operators (filter, aggregate, sort, limit) → Vec<RecordBatch>`.
//!
//! When the storage read API changes (`ReadRequest`, `scan_shard`, the Arrow schema of
//! `strata_storage::arrow`), also touch `table.rs` and `scan.rs`; when the tag predicate
//! semantics change, `pushdown.rs` (its exact/inexact rules).

pub mod catalog;
mod coop;
mod data_fault;
mod direct;
mod duplicate_names;
pub mod engine;
pub mod error;
mod fetch_first;
mod functions;
mod guard;
mod minute_times;
pub mod nesting;
mod parameter_types;
pub mod pg_catalog;
mod plan_weight;
mod preagg;
mod pushdown;
mod query_runtime;
mod replan;
pub mod scan;
pub mod sql_lex;
mod statements;
pub mod table;
#[cfg(test)]
mod test_engine;

pub use engine::{Description, MAX_DESCRIBED_PARAMETERS, QueryEngine, QueryOptions, QuerySlot};
pub use error::{DataFault, Position, QueryError};
pub use functions::register_functions;
pub use functions::session::{POSTGRES_VERSION, version_text};
pub use guard::QueryStream;
pub use preagg::PreAggExec;
pub use scan::StrataScanExec;
pub use statements::{
    ColumnType, RowBatch, RowValue, RowWriter, is_read_statement, is_strata_statement,
};
pub use table::StrataTable;
