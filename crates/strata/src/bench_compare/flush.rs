//! The flush before a target's data directory is measured, where the server can be asked:
//! Strata through its backup endpoint, VictoriaMetrics through `/internal/force_flush`;
//! InfluxDB 1.x has none, and the report says so.

use strata_bench::compare::{TargetKind, TargetSpec};
use strata_bench::http::{BodyEncoding, HttpClient};

use super::{CompareArgs, QUERY_TIMEOUT, percent_encode};

/// What the flush before the disk measurement did, in words for the report.
pub(super) struct Flushed {
    pub(super) how: String,
}

/// Asks the server to write what it holds in memory, where it can be asked: Strata through
/// its backup endpoint (only with `data=`: the backup is written on the server's machine,
/// into `--out-dir`, and deleted), VictoriaMetrics through `/internal/force_flush` (always:
/// it also makes the last second's rows visible to the queries). A failed flush is
/// reported, not fatal.
pub(super) fn flush(args: &CompareArgs, spec: &TargetSpec) -> Flushed {
    let how = match spec.kind {
        TargetKind::Strata if spec.data.is_some() => flush_strata(args, spec),
        TargetKind::Strata => "not flushed (no data=)".into(),
        TargetKind::VictoriaMetrics => {
            let mut client = HttpClient::new(&spec.http.authority, QUERY_TIMEOUT);
            match client.get(&format!("{}/internal/force_flush", spec.http.base_path)) {
                Ok(r) if (200..300).contains(&r.status) => {
                    "after GET /internal/force_flush (background merges may shrink it later)".into()
                }
                Ok(r) => format!(
                    "without a flush (/internal/force_flush answered HTTP {})",
                    r.status
                ),
                Err(e) => format!("without a flush (/internal/force_flush failed: {e})"),
            }
        }
        TargetKind::InfluxDb => "right after the load: InfluxDB 1.x has no flush request; \
             it keeps recent writes in its WAL and cache until a snapshot to TSM (by default \
             after 10 min without writes or 25 MB of cache), so this counts the WAL, not \
             compacted TSM"
            .into(),
    };
    Flushed { how }
}

/// `POST /api/v1/backup?to=DIR`: the backup flushes every memtable to parts first; the
/// copy itself is then deleted.
fn flush_strata(args: &CompareArgs, spec: &TargetSpec) -> String {
    let scratch = args.out_dir.join(format!("flush-backup-{}", spec.name));
    let scratch = match std::path::absolute(&scratch) {
        Ok(path) => path,
        Err(e) => {
            return format!(
                "without a flush (no absolute path for {}: {e})",
                scratch.display()
            );
        }
    };
    let _ = std::fs::remove_dir_all(&scratch);
    let path = format!(
        "{}/api/v1/backup?to={}",
        spec.http.base_path,
        percent_encode(&scratch.display().to_string())
    );
    let mut client = HttpClient::new(&spec.http.authority, QUERY_TIMEOUT);
    let answer = client.post(&path, b"", BodyEncoding::Text);
    let removed = std::fs::remove_dir_all(&scratch);
    match answer {
        Ok(r) if r.status == 200 => match removed {
            Ok(()) => "after a flush (POST /api/v1/backup flushes the memtables; its copy \
                       was deleted)"
                .into(),
            Err(e) => format!(
                "after a flush (POST /api/v1/backup); its copy in {} could not be deleted: {e}",
                scratch.display()
            ),
        },
        Ok(r) => format!(
            "without a flush, memtables not counted (POST /api/v1/backup answered HTTP {}: {})",
            r.status,
            String::from_utf8_lossy(&r.body).trim()
        ),
        Err(e) => format!("without a flush, memtables not counted (POST /api/v1/backup: {e})"),
    }
}
