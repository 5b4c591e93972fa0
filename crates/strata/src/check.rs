//! `strata check`: verifies every file of a stopped server's data directories.

use std::path::PathBuf;

use clap::Args;

/// Flags of `strata check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Data directory of a stopped server; repeat for one per disk, in the order given to
    /// `strata serve`
    #[arg(long = "data-dir", value_name = "DIR", default_value = "strata-data")]
    data_dirs: Vec<PathBuf>,
}

/// Runs `strata check`: prints each problem and note, then a summary; `Ok(false)` (exit
/// status 1) when there is damage.
pub fn run(args: &CheckArgs) -> Result<bool, String> {
    let report = strata_storage::check(&args.data_dirs).map_err(|e| e.to_string())?;
    for problem in &report.problems {
        println!("damaged: {problem}");
    }
    for note in &report.notes {
        println!("note: {note}");
    }
    let verdict = match report.problems.len() {
        0 => "no damage found".to_string(),
        1 => "1 damaged file".to_string(),
        n => format!("{n} damaged files"),
    };
    println!(
        "checked {} files ({} bytes): {} parts holding {} rows (every block), {} series, {} WAL \
         records; {verdict}",
        report.files, report.bytes, report.parts, report.rows, report.series, report.wal_records
    );
    Ok(report.is_clean())
}
