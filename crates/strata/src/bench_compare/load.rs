//! One target's request bodies, generated (or read from `--file`) into memory before its
//! clock and checksummed; `CREATE DATABASE`; and the load that sends the bodies to the
//! target's `/write` with the plan's writers.

use std::sync::Arc;

use strata_bench::compare::{Checksum, TargetSpec};
use strata_bench::http::BodyEncoding;
use strata_bench::load::{HttpTarget, LoadResult, Target, Work, run_load};
use strata_bench::progress::Progress;
use strata_bench::queries::Query;
use strata_bench::query_run::{HttpProtocol, HttpQueryClient, QueryClient};
use strata_bench::report::WriteReport;
use strata_lineproto::Precision;

use super::{CompareArgs, Plan, QUERY_TIMEOUT, WRITE_TIMEOUT};
use crate::bench_batches::{self, Batches};
use crate::generate::Generator;

/// One target's bodies, generated before its clock.
pub(super) struct Bodies {
    work: Arc<Work>,
    pub(super) checksum: Checksum,
    precision: Precision,
    pub(super) workers: usize,
    pub(super) workload: String,
    pub(super) rows_generated: u64,
}

/// Generates the workload (or reads `--file`) into memory through `bench write`'s batch
/// path and checksums the bodies in queue order.
pub(super) fn generate_bodies(args: &CompareArgs, plan: &Plan) -> Result<Bodies, String> {
    let (batches, precision, workers, workload) = match &args.file {
        Some(path) => (
            bench_batches::from_file(
                path,
                plan.batch_rows,
                BodyEncoding::Text,
                args.precision,
                plan.workers,
                false,
            )?,
            args.precision,
            plan.workers,
            format!("file {}", path.display()),
        ),
        None => {
            let generators = Generator::for_workers(&args.workload, plan.workers)?;
            let Some(first) = generators.first() else {
                return Err("the workload has no series (--hosts or --meters is 0)".into());
            };
            let (precision, mut workload) = (first.precision(), first.describe());
            if args.workload.out_of_order_ratio_set() {
                workload.push_str(&format!(
                    "; out-of-order share {}",
                    args.workload.out_of_order_share()
                ));
            }
            // Meters: one generator (and queue) per worker, each owning its meters.
            let workers = if generators.len() > 1 {
                generators.len()
            } else {
                plan.workers
            };
            let batches = bench_batches::from_generators(
                generators,
                plan.batch_rows,
                BodyEncoding::Text,
                workers,
                false,
            )?;
            (batches, precision, workers, workload)
        }
    };
    let (work, checksum) = drain(&batches);
    let mut generated = WriteReport::default();
    batches.finish(&mut generated)?;
    Ok(Bodies {
        work: Arc::new(work),
        checksum,
        precision,
        workers,
        workload,
        rows_generated: generated.rows_generated,
    })
}

/// Every batch of `batches`, queue by queue, and the checksum of their bodies.
fn drain(batches: &Batches) -> (Work, Checksum) {
    let feed = batches.feed();
    let mut work = Work::default();
    let mut checksum = Checksum::default();
    for queue in 0..feed.queue_count() {
        let mut bodies = Vec::new();
        // Bounded by the generator's rows: `next` is `None` once the queue is done.
        while let Some(batch) = feed.next(queue) {
            checksum.add(&batch.body);
            bodies.push(batch.into_owned());
        }
        work.queues.push(bodies);
    }
    (work, checksum)
}

/// `CREATE DATABASE "db"` over `/query` (Strata and InfluxDB 1.x; an existing database is
/// not an error to either).
pub(super) fn create_database(spec: &TargetSpec, database: &str) -> Result<(), String> {
    let mut client = HttpQueryClient::connect(
        &spec.http.authority,
        &spec.http.base_path,
        database,
        HttpProtocol::InfluxQl,
        QUERY_TIMEOUT,
    )
    .map_err(|e| format!("{}: {e}", spec.name))?;
    let statement = Query {
        sql: format!("CREATE DATABASE \"{}\"", database.replace('"', "\\\"")),
        start_ns: None,
        end_ns: None,
        hosts: Vec::new(),
        clamped: false,
        streamed: false,
    };
    client
        .run(&statement)
        .map(|_| ())
        .map_err(|e| format!("{}: cannot create database {database}: {e}", spec.name))
}

/// Sends every body to the target's `/write` with the plan's writers, a progress bar on
/// stderr.
pub(super) fn load(
    spec: &TargetSpec,
    database: &str,
    bodies: &Bodies,
) -> Result<LoadResult, String> {
    let path = HttpTarget::write_path(&spec.http.base_path, database, bodies.precision);
    let mut targets: Vec<Box<dyn Target>> = Vec::with_capacity(bodies.workers);
    for _ in 0..bodies.workers {
        let target = HttpTarget::connect(
            &spec.http.authority,
            &path,
            BodyEncoding::Text,
            WRITE_TIMEOUT,
        )
        .map_err(|e| format!("{}: {e}", spec.name))?;
        targets.push(Box::new(target));
    }
    eprintln!("loading with {} writers ...", targets.len());
    let progress = Progress::start(bodies.work.rows());
    let load = run_load(&bodies.work, targets, Some(progress.counter()));
    progress.finish();
    Ok(load)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench_compare::plan;
    use crate::bench_compare::tests::parse;

    #[test]
    fn bodies_are_the_same_each_time_they_are_generated() {
        let args = parse(&[
            "--target",
            "strata=http://h:1",
            "--hosts",
            "3",
            "--duration",
            "10min",
            "--batch-rows",
            "40",
            "--workers",
            "2",
            "--types",
            "lastpoint",
        ])
        .unwrap();
        let plan = plan(&args).unwrap();
        let a = generate_bodies(&args, &plan).unwrap();
        let b = generate_bodies(&args, &plan).unwrap();
        assert_eq!(a.checksum, b.checksum);
        assert_eq!(a.rows_generated, 180);
        assert_eq!(a.work.rows(), 180);
        assert_eq!(a.checksum.batches, 5);
        assert_eq!(a.checksum.bytes, a.work.bytes());
        let other = parse(&[
            "--target",
            "strata=http://h:1",
            "--hosts",
            "3",
            "--duration",
            "10min",
            "--batch-rows",
            "40",
            "--seed",
            "7",
        ])
        .unwrap();
        let c = generate_bodies(&other, &plan).unwrap();
        assert_ne!(a.checksum.hex(), c.checksum.hex());
    }
}
