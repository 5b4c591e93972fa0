//! One target measured end to end: the database created, the bodies generated before the
//! clock, the load, the server's CPU time and RSS, the flush, bytes per point, and the
//! queries.

use strata_bench::compare::{
    TargetKind, TargetResult, TargetSpec, allowed_cores, disk_usage, parse_cpu_list,
};
use strata_bench::report::WriteReport;
use strata_bench::stats::Process;

use super::flush::{Flushed, flush};
use super::load::{create_database, generate_bodies, load};
use super::queries::run_queries;
use super::{CompareArgs, Plan};

/// Loads, flushes, measures and queries one target; returns its figures, the workload's
/// description and the writers used.
pub(super) fn measure_target(
    args: &CompareArgs,
    plan: &Plan,
    spec: &TargetSpec,
) -> Result<(TargetResult, String, usize), String> {
    if spec.kind != TargetKind::VictoriaMetrics {
        create_database(spec, &args.db)?;
    }
    // What the directory held before (an empty database's preallocated files, earlier
    // runs' data) is not this load's: bytes per point count the growth.
    let disk_before = spec.data.as_deref().map(disk_usage);
    let bodies = generate_bodies(args, plan)?;
    eprintln!(
        "generated {} bodies ({:.1} MB, checksum {}) before the clock",
        bodies.checksum.batches,
        bodies.checksum.bytes as f64 / 1e6,
        bodies.checksum.hex()
    );
    let process = spec.pid.map(Process::Pid);
    let cpu_before = process.and_then(Process::cpu_time);
    let load = load(spec, &args.db, &bodies)?;
    let cpu_after = process.and_then(Process::cpu_time);
    let mut report = WriteReport {
        target: spec.url.clone(),
        acknowledged: true,
        workload: bodies.workload.clone(),
        database: args.db.clone(),
        workers: bodies.workers,
        batch_rows: plan.batch_rows,
        rows_generated: bodies.rows_generated,
        bytes_sent: bodies.checksum.bytes,
        ..WriteReport::default()
    }
    .with_load(&load);
    let cores = spec.pid.and_then(|pid| allowed_cores(Some(pid)));
    report.server_cores = cores
        .as_deref()
        .and_then(|c| parse_cpu_list(c).ok())
        .map(|set| set.len());
    let server_cpu_s = match (cpu_before, cpu_after) {
        (Some(before), Some(after)) => Some(after.saturating_sub(before).as_secs_f64()),
        _ => None,
    };
    report.server_cpu_percent =
        server_cpu_s.map(|s| s / load.elapsed.as_secs_f64().max(1e-9) * 100.0);
    let flushed = flush(args, spec);
    measure_disk(spec, disk_before, &flushed, &mut report);
    let queries = run_queries(args, plan, spec)?;
    report.rss_mb = process.and_then(Process::rss_bytes).map(mb);
    report.peak_rss_mb = process.and_then(Process::peak_rss_bytes).map(mb);
    let result = TargetResult {
        name: spec.name.clone(),
        kind: spec.kind,
        url: spec.url.clone(),
        pid: spec.pid,
        cores,
        checksum: bodies.checksum.hex(),
        batches: bodies.checksum.batches,
        body_bytes: bodies.checksum.bytes,
        load: report,
        server_cpu_s,
        queries,
    };
    Ok((result, bodies.workload, bodies.workers))
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// Bytes the target's data directory grew by during the load, per point stored, when
/// `data=` was given.
fn measure_disk(
    spec: &TargetSpec,
    before: Option<u64>,
    flushed: &Flushed,
    report: &mut WriteReport,
) {
    let (Some(dir), Some(before)) = (&spec.data, before) else {
        report.disk_bytes_note = "— (give data=DIR to measure)".into();
        return;
    };
    if !dir.is_dir() {
        report.disk_bytes_note = format!("— ({} is not a directory here)", dir.display());
        return;
    }
    let after = disk_usage(dir);
    let grown = after.saturating_sub(before);
    report.disk_bytes = Some(grown);
    report.bytes_per_point = Some(grown as f64 / report.points.max(1) as f64);
    report.disk_bytes_note = format!(
        "{} grew by {:.2} MB on disk (allocated blocks, as du counts) during the load \
         ({:.2} MB before it), measured {}",
        dir.display(),
        mb(grown),
        mb(before),
        flushed.how
    );
}
