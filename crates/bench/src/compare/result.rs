//! What the comparison measured: per query type ([`TypeResult`]), per language
//! ([`LanguageRun`]), per target ([`TargetResult`]) and the whole ([`Comparison`], the
//! `--json` file), with the checks of equal bodies and of failures.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Language, TargetKind};
use crate::report::WriteReport;

/// One query type's run on one target in one language.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TypeResult {
    /// The type's name (`single-groupby-1-1-1`).
    pub query_type: String,
    /// Queries sent.
    pub queries: usize,
    /// Queries answered with a 2xx and a non-error body.
    pub answered: usize,
    /// Queries that failed (status, error body, I/O).
    pub failures: usize,
    /// The first failure: the statement and what the server said.
    pub first_failure: Option<String>,
    /// Median latency of the answered queries, ms.
    pub median_ms: Option<f64>,
    /// Rows (values) of every answer, summed: 0 means the target answered nothing.
    pub rows: u64,
    /// Why the type did not run in this language (TSBS has no PromQL for it).
    pub unsupported: Option<String>,
}

/// The query types' runs on one target in one language.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LanguageRun {
    /// The language.
    pub language: Language,
    /// One entry per type, in the comparison's type order.
    pub types: Vec<TypeResult>,
}

/// Everything measured of one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetResult {
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: TargetKind,
    /// Its URL.
    pub url: String,
    /// Its process id, when given.
    pub pid: Option<u32>,
    /// The cores it may run on (`Cpus_allowed_list`), when its pid was given.
    pub cores: Option<String>,
    /// FNV-1a 64 of the request bodies sent to it, in order (`0x…`).
    pub checksum: String,
    /// Request bodies sent to it.
    pub batches: u64,
    /// Bytes of those bodies.
    pub body_bytes: u64,
    /// The load: rows, points, rates (withheld when too short), latency, peak RSS,
    /// bytes per point and how they were measured.
    pub load: WriteReport,
    /// CPU time the server used during the load, seconds.
    pub server_cpu_s: Option<f64>,
    /// The query runs, one per language it speaks (empty: no queries ran).
    pub queries: Vec<LanguageRun>,
}

/// The whole comparison (the `--json` file).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Comparison {
    /// Workload and size, one line.
    pub workload: String,
    /// Database written to and queried.
    pub database: String,
    /// Writers per load.
    pub workers: usize,
    /// Rows per request.
    pub batch_rows: usize,
    /// The query types, in column order (empty: no queries).
    pub query_types: Vec<String>,
    /// Queries per type.
    pub queries_per_type: usize,
    /// The targets, in load order.
    pub targets: Vec<TargetResult>,
    /// Notes for the reader (affinity, skipped queries, windows clamped).
    pub notes: Vec<String>,
}

impl Comparison {
    /// Whether every target got the same bytes: `Ok(checksum)` or the error listing them.
    pub fn same_bodies(&self) -> Result<String, String> {
        let distinct: BTreeSet<(&str, u64, u64)> = self
            .targets
            .iter()
            .map(|t| (t.checksum.as_str(), t.batches, t.body_bytes))
            .collect();
        match distinct.len() {
            0 => Err("no target was loaded".into()),
            1 => Ok(self.targets[0].checksum.clone()),
            _ => {
                let each: Vec<String> = self
                    .targets
                    .iter()
                    .map(|t| {
                        format!(
                            "{}: {} ({} bodies, {} bytes)",
                            t.name, t.checksum, t.batches, t.body_bytes
                        )
                    })
                    .collect();
                Err(format!(
                    "the targets were sent different request bodies ({}): the comparison \
                     is void",
                    each.join("; ")
                ))
            }
        }
    }

    /// Whether anything failed: a load request, a rejected line, a query.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.targets {
            let l = &t.load;
            if l.errors > 0 || l.bad_lines > 0 || l.rows != l.rows_generated {
                out.push(format!(
                    "{}: stored {} of {} rows ({} failed requests, {} bad lines){}",
                    t.name,
                    l.rows,
                    l.rows_generated,
                    l.errors,
                    l.bad_lines,
                    l.error_messages
                        .first()
                        .map(|m| format!("; first error: {m}"))
                        .unwrap_or_default()
                ));
            }
            for run in &t.queries {
                for r in run.types.iter().filter(|r| r.failures > 0) {
                    out.push(format!(
                        "{} ({}): {} of {} {} queries failed; first: {}",
                        t.name,
                        run.language.name(),
                        r.failures,
                        r.queries,
                        r.query_type,
                        r.first_failure.as_deref().unwrap_or("?")
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::compare::fixtures::sample;
    use crate::compare::render_table;

    #[test]
    fn different_bodies_void_the_comparison() {
        let mut c = sample();
        assert_eq!(c.same_bodies(), Ok("0x00000000000000ff".into()));
        c.targets[1].checksum = "0x00000000000000fe".into();
        let err = c.same_bodies().unwrap_err();
        assert!(err.contains("strata: 0x00000000000000ff"), "{err}");
        assert!(err.contains("influxdb: 0x00000000000000fe"), "{err}");
        assert!(render_table(&c).contains("ERROR: the targets were sent different"));
        c.targets[1].load.rows = 90;
        c.targets[1].load.errors = 1;
        let failures = c.failures();
        assert!(
            failures[1].starts_with("influxdb: stored 90 of 100 rows (1 failed requests"),
            "{failures:?}"
        );
    }
}
