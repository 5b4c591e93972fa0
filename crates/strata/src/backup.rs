//! `strata backup --to DIR`: asks a running server for a backup (`POST /api/v1/backup`)
//! into a directory on the server's machine; `strata restore --from DIR --data-dir D`:
//! restores one into a new data directory, with no server running on it. The backup's
//! layout: `docs/format.md`, "Backups".

use std::io::Read;
use std::path::PathBuf;

use clap::Args;

use crate::sql_client::{Client, Failure, percent_encode};

/// Flags of `strata backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Directory on the server's machine to write the backup into (created if needed); a
    /// backup already there is brought up to date, copying only new parts
    #[arg(long, value_name = "DIR")]
    to: PathBuf,
    /// Server URL
    #[arg(long, env = "STRATA_URL", default_value = "http://127.0.0.1:8086")]
    url: String,
    /// The server's auth token, when it requires one (the read-only token cannot back up)
    #[arg(long, env = "STRATA_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

/// Flags of `strata restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// A finished backup (a directory `strata backup` wrote)
    #[arg(long, value_name = "DIR")]
    from: PathBuf,
    /// The new data directory (must not exist, or be empty); then `strata serve
    /// --data-dir` it
    #[arg(long = "data-dir", value_name = "DIR")]
    data_dir: PathBuf,
}

/// Runs `strata backup`: prints the server's report.
pub fn backup(args: &BackupArgs) -> Result<(), String> {
    // The server resolves the path on its machine: make a relative one absolute here,
    // where the user typed it (the usual case is a server on this machine).
    let to = std::path::absolute(&args.to)
        .map_err(|e| format!("cannot resolve {}: {e}", args.to.display()))?;
    let client = Client::new(&args.url, "", args.token.clone())?;
    let path = format!(
        "/api/v1/backup?to={}",
        percent_encode(&to.to_string_lossy())
    );
    match client.post(&path, b"") {
        Ok(mut response) => {
            let mut body = String::new();
            response
                .body
                .read_to_string(&mut body)
                .map_err(|e| format!("cannot read the answer: {e}"))?;
            println!("{}", body.trim_end());
            Ok(())
        }
        Err(Failure::Server(failure)) => Err(format!(
            "backup failed ({}): {}",
            failure.status, failure.message
        )),
        Err(failure) => Err(format!("backup failed: {failure}")),
    }
}

/// Runs `strata restore`.
pub fn restore(args: &RestoreArgs) -> Result<(), String> {
    let report = strata_storage::restore(&args.from, &args.data_dir).map_err(|e| e.to_string())?;
    println!(
        "restored {} parts ({} rows, {} bytes) of the backup taken at {} ns into {}",
        report.parts,
        report.rows,
        report.part_bytes,
        report.created_ns,
        args.data_dir.display()
    );
    Ok(())
}
