//! `DROP TABLE [IF EXISTS] t`: the table disappears at once and for good (see
//! `Engine::drop_table`: its rows are never read again and leave the disk as the shards
//! purge them).

use std::sync::Arc;

use strata_storage::Engine;

use super::tokens::{Cursor, TableRef, plan};
use super::{Output, blocking};
use crate::error::QueryError;

/// A parsed `DROP TABLE`.
#[derive(Debug)]
pub(super) struct DropTable {
    table: TableRef,
    if_exists: bool,
}

/// Parses the rest of `DROP TABLE …` after `DROP`.
pub(super) fn parse(database: &str, cursor: &mut Cursor) -> Result<DropTable, QueryError> {
    cursor.expect_keyword("TABLE")?;
    let if_exists = cursor.eat_if_exists()?;
    let table = cursor.table_name(database)?;
    cursor.expect_end()?;
    Ok(DropTable { table, if_exists })
}

/// Drops the table (durably); a missing table is an error unless `IF EXISTS`.
pub(super) async fn execute(engine: &Arc<Engine>, drop: DropTable) -> Result<Output, QueryError> {
    let engine = Arc::clone(engine);
    let DropTable { table, if_exists } = drop;
    blocking(move || {
        let dropped = engine
            .drop_table(&table.database, &table.table)
            .map_err(QueryError::Storage)?;
        if dropped.is_none() && !if_exists {
            return Err(plan(
                format!(
                    "table \"{}\" not found in database \"{}\"",
                    table.table, table.database
                ),
                table.position,
            ));
        }
        Ok(Output::empty())
    })
    .await
}
