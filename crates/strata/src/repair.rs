//! `strata repair`: rebuilds the damaged or missing metadata files of a stopped server's
//! data directories from its parts and WAL.

use std::path::PathBuf;

use clap::Args;

/// Flags of `strata repair`.
#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Data directory of a stopped server; repeat for one per disk, in the order given to
    /// `strata serve`
    #[arg(long = "data-dir", value_name = "DIR", default_value = "strata-data")]
    data_dirs: Vec<PathBuf>,
}

/// Runs `strata repair`: prints what it rebuilt, what is lost and its notes; `Ok(true)`
/// whether or not there was anything to rebuild (an error is the failure).
pub fn run(args: &RepairArgs) -> Result<bool, String> {
    let report = strata_storage::repair(&args.data_dirs).map_err(|e| e.to_string())?;
    for line in &report.rebuilt {
        println!("rebuilt: {line}");
    }
    for line in &report.lost {
        println!("lost: {line}");
    }
    for line in &report.notes {
        println!("note: {line}");
    }
    if report.rebuilt.is_empty() && report.lost.is_empty() {
        println!("nothing to repair: every metadata file loads");
    } else {
        println!(
            "{} files rebuilt; run `strata check` to verify, then start the server",
            report.rebuilt.len()
        );
    }
    Ok(true)
}
