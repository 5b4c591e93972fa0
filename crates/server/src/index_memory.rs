//! The memory parts' indexes may hold (`--index-memory`), set before the engine opens a
//! part, and logged (`strata_storage::part::PartIndexes`).

use strata_storage::part::PartIndexes;

use crate::config::parse_byte_size;
use crate::error::ServerError;

/// Sets the budget from `text` (bytes with an optional K/M/G/T suffix), or keeps the
/// default (a sixteenth of the memory the process may use) when `None`; logs it.
pub fn set(text: Option<&str>) -> Result<(), ServerError> {
    if let Some(text) = text {
        let bytes = parse_byte_size("index memory", text, "")?;
        if !PartIndexes::set_global_budget(bytes) {
            return Err(ServerError::Config(
                "index memory: parts were opened before it was set".into(),
            ));
        }
    }
    let budget = PartIndexes::global().stats().budget_bytes;
    tracing::info!("part indexes: up to {} MiB held in memory", budget >> 20);
    Ok(())
}
