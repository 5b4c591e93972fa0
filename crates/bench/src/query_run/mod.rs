//! Running generated queries against a target with C client threads, timing each.
//!
//! A [`QueryClient`] runs one statement and says how many rows came back and how long the
//! answer took: in-process through [`strata_query::QueryEngine`] ([`EmbeddedClient`]), or over HTTP
//! (`POST /sql`, or InfluxQL on `POST /query` as TSBS sends it: [`HttpQueryClient`]),
//! reading the whole answer before the clock stops.
//! [`run_type`] runs one type's queries with one thread per client, each taking the next
//! query from a shared counter (as TSBS's workers take queries from one channel), until
//! the queries or the time budget run out. The first failing query stops the run.

mod embedded;
mod http;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

pub use embedded::{EmbeddedClient, EmbeddedQueries};
#[cfg(test)]
pub(crate) use http::influxql_path;
pub use http::{HttpProtocol, HttpQueryClient, ResultFormat};

use crate::queries::Query;
use crate::stats::Latencies;

/// What one query returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Rows in the result.
    pub rows: u64,
    /// From sending the statement to the last byte (or batch) of the answer.
    pub latency: Duration,
}

/// Something that runs statements; one per client thread.
pub trait QueryClient: Send {
    /// Runs `query` and reads its whole answer; an error is the message to show.
    fn run(&mut self, query: &Query) -> Result<Answer, String>;
}

/// Bounds of one type's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunLimits {
    /// No query starts after this much time has passed since the first one started.
    pub max_duration: Duration,
}

/// What one type's run measured.
#[derive(Debug, Clone, Default)]
pub struct TypeRun {
    /// Latency of every completed query.
    pub latencies: Latencies,
    /// Rows of every completed query (in completion order, per client appended).
    pub rows: Vec<u64>,
    /// From the first query's start to the last answer.
    pub elapsed: Duration,
    /// Number of clients that ran it.
    pub clients: usize,
}

/// A query that failed: the run stops with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryFailure {
    /// The type's name.
    pub query_type: String,
    /// The statement.
    pub sql: String,
    /// What the target said.
    pub message: String,
}

impl QueryFailure {
    /// The failure, with the statement labelled `language` (`SQL`, `InfluxQL`).
    pub fn describe(&self, language: &str) -> String {
        format!(
            "a {} query failed: {}\n{language}: {}",
            self.query_type, self.message, self.sql
        )
    }
}

impl std::fmt::Display for QueryFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe("SQL"))
    }
}

/// Runs `queries` of type `query_type` with one thread per client until they are all done
/// or `limits` says stop; the first error stops every client.
pub fn run_type(
    query_type: &str,
    queries: &[Query],
    clients: &mut [Box<dyn QueryClient>],
    limits: RunLimits,
) -> Result<TypeRun, QueryFailure> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<QueryFailure>> = Mutex::new(None);
    let started = Instant::now();
    let per_client: Vec<(Vec<Duration>, Vec<u64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter_mut()
            .map(|client| {
                let (next, stop, failure) = (&next, &stop, &failure);
                scope.spawn(move || {
                    let (mut latencies, mut rows) = (Vec::new(), Vec::new());
                    // Bounded by the number of queries and by the time budget.
                    while !stop.load(Ordering::Relaxed) && started.elapsed() < limits.max_duration {
                        let Some(query) = queries.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            break;
                        };
                        match client.run(query) {
                            Ok(answer) => {
                                latencies.push(answer.latency);
                                rows.push(answer.rows);
                            }
                            Err(message) => {
                                stop.store(true, Ordering::Relaxed);
                                let mut slot =
                                    failure.lock().unwrap_or_else(PoisonError::into_inner);
                                slot.get_or_insert(QueryFailure {
                                    query_type: query_type.to_string(),
                                    sql: query.sql.clone(),
                                    message,
                                });
                                break;
                            }
                        }
                    }
                    (latencies, rows)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let elapsed = started.elapsed();
    if let Some(failure) = failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(failure);
    }
    let mut all_latencies = Vec::new();
    let mut all_rows = Vec::new();
    for (latencies, rows) in per_client {
        all_latencies.extend(latencies);
        all_rows.extend(rows);
    }
    Ok(TypeRun {
        latencies: Latencies::new(all_latencies),
        rows: all_rows,
        elapsed,
        clients: clients.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scripted {
        fail_on: Option<usize>,
    }

    impl QueryClient for Scripted {
        fn run(&mut self, query: &Query) -> Result<Answer, String> {
            let index: usize = query.sql.parse().map_err(|_| "bad sql".to_string())?;
            if Some(index) == self.fail_on {
                return Err("boom".into());
            }
            Ok(Answer {
                rows: index as u64,
                latency: Duration::from_millis(1),
            })
        }
    }

    fn numbered(n: usize) -> Vec<Query> {
        (0..n)
            .map(|i| Query {
                sql: i.to_string(),
                start_ns: None,
                end_ns: None,
                hosts: Vec::new(),
                clamped: false,
                streamed: false,
            })
            .collect()
    }

    #[test]
    fn every_query_runs_once_across_clients() {
        let mut clients: Vec<Box<dyn QueryClient>> = (0..3)
            .map(|_| Box::new(Scripted { fail_on: None }) as Box<dyn QueryClient>)
            .collect();
        let limits = RunLimits {
            max_duration: Duration::from_secs(600),
        };
        let run = run_type("t", &numbered(50), &mut clients, limits).unwrap();
        assert_eq!(run.latencies.count(), 50);
        let mut rows = run.rows.clone();
        rows.sort_unstable();
        assert_eq!(rows, (0..50).collect::<Vec<u64>>());
        assert_eq!(run.clients, 3);
    }

    #[test]
    fn the_first_failure_stops_the_run() {
        let mut clients: Vec<Box<dyn QueryClient>> = vec![Box::new(Scripted { fail_on: Some(7) })];
        let limits = RunLimits {
            max_duration: Duration::from_secs(600),
        };
        let failure = run_type("t", &numbered(50), &mut clients, limits).unwrap_err();
        assert_eq!(failure.sql, "7");
        assert_eq!(failure.message, "boom");
        assert!(failure.to_string().contains("SQL: 7"));
    }
}
