//! The query half of `bench scale` (`--queries TYPE,…`): after a run's load, each type is
//! run by k clients (k = the server's cores), each with its own keep-alive connection, for
//! `--query-seconds`, through `bench query`'s generators and runner (`run_type`,
//! `HttpQueryClient`). The types' queries are generated once, before any clock, from the
//! workload flags (as `bench query` does: the flags must describe the loaded data); a pool
//! of them is run over and over until the time is up.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use strata_bench::queries::{self, Query, QueryType, tsbs_influxql};
use strata_bench::query_run::{
    Answer, HttpProtocol, HttpQueryClient, QueryClient, ResultFormat, RunLimits, run_type,
};
use strata_bench::scale::queries::{QueryRunFigures, QueryScaleRow};
use strata_bench::stats::{Latencies, Process};

use crate::bench_query::{ProtocolArg, dataset, query_types};
use crate::generate::WorkloadArgs;

/// Queries generated per type: the pool the clients go through, again and again.
const QUERY_POOL: usize = 10_000;
/// How long one query may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Between two looks at the server's CPU while it settles after the load.
const SETTLE_POLL: Duration = Duration::from_millis(500);
/// The longest wait for the server to settle after the load.
const SETTLE_MAX: Duration = Duration::from_secs(30);
/// The server counts as settled once it uses less than this share of one core.
const SETTLE_IDLE: f64 = 0.10;

/// The query sweep's settings and its generated queries.
pub(super) struct QuerySweep {
    generated: Vec<(QueryType, Vec<Query>)>,
    protocol: HttpProtocol,
    language: &'static str,
    seconds: f64,
    database: String,
}

impl QuerySweep {
    /// Generates `types`' queries over the data set `workload` describes; `seconds` per
    /// type and core count.
    pub(super) fn new(
        workload: &WorkloadArgs,
        types: &[String],
        seconds: f64,
        protocol: ProtocolArg,
        database: &str,
    ) -> Result<Self, String> {
        if !(seconds > 0.0 && seconds.is_finite()) {
            return Err(format!(
                "--query-seconds {seconds} must be a positive number of seconds"
            ));
        }
        let (dataset, query_workload, _) = dataset(workload)?;
        let types = query_types(types, query_workload)?;
        let seed = workload.seed();
        let mut generated = Vec::with_capacity(types.len());
        for query_type in types {
            let mut queries = queries::generate(&dataset, query_type, QUERY_POOL, seed)?;
            if protocol == ProtocolArg::InfluxQl {
                queries = queries
                    .iter()
                    .map(|q| tsbs_influxql::translate(query_type, q))
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("--query-protocol influxql: {e}"))?;
            }
            generated.push((query_type, queries));
        }
        Ok(Self {
            generated,
            protocol: match protocol {
                ProtocolArg::Sql => HttpProtocol::Sql(ResultFormat::Json),
                ProtocolArg::InfluxQl => HttpProtocol::InfluxQl,
            },
            language: protocol.language(),
            seconds,
            database: database.to_string(),
        })
    }

    /// The statements' language and where they go, in words.
    pub(super) fn describe(&self) -> String {
        match self.protocol {
            HttpProtocol::InfluxQl => "InfluxQL (TSBS's wording) on /query".into(),
            HttpProtocol::Sql(_) => "SQL on /sql, answers as JSON".into(),
        }
    }

    /// Runs every type with `cores` clients against the server (`addr`, process `pid`)
    /// on `cores` cores; `shares` says whether the loader shares the server's cores.
    pub(super) fn run(
        &self,
        addr: &str,
        pid: u32,
        cores: usize,
        shares: bool,
    ) -> Result<Vec<QueryScaleRow>, String> {
        settle(pid);
        let mut rows = Vec::with_capacity(self.generated.len());
        for (query_type, pool) in &self.generated {
            let name = query_type.name();
            let logs: Vec<Arc<Mutex<Log>>> = (0..cores).map(|_| Arc::default()).collect();
            let mut clients = Vec::with_capacity(cores);
            for log in &logs {
                let client = HttpQueryClient::connect(
                    addr,
                    "",
                    &self.database,
                    self.protocol,
                    REQUEST_TIMEOUT,
                )?;
                clients.push(Box::new(Recorded {
                    client,
                    log: Arc::clone(log),
                }) as Box<dyn QueryClient>);
            }
            eprintln!(
                "running {name} with {cores} client(s) for {:.1} s ...",
                self.seconds
            );
            let figures = self.timed(&name, pool, &mut clients, &logs, pid)?;
            let row = QueryScaleRow::from_run(&name, cores, cores, shares, &figures);
            if row.queries > 0 && figures.rows == 0 {
                eprintln!(
                    "note: every {name} query answered no rows: do the workload flags describe \
                     the loaded data?"
                );
            }
            rows.push(row);
        }
        Ok(rows)
    }

    /// Runs `pool` with `clients` until `seconds` are up, going through the pool again
    /// when it runs out; CPU sampled right around the clock.
    fn timed(
        &self,
        name: &str,
        pool: &[Query],
        clients: &mut [Box<dyn QueryClient>],
        logs: &[Arc<Mutex<Log>>],
        pid: u32,
    ) -> Result<QueryRunFigures, String> {
        let server = Process::Pid(pid);
        let limit = Duration::from_secs_f64(self.seconds);
        let (server_before, loader_before) = (server.cpu_time(), Process::Current.cpu_time());
        let started = Instant::now();
        while let Some(left) = limit
            .checked_sub(started.elapsed())
            .filter(|d| !d.is_zero())
        {
            run_type(name, pool, clients, RunLimits { max_duration: left })
                .map_err(|f| f.describe(self.language))?;
        }
        let elapsed = started.elapsed();
        let (loader_after, server_after) = (Process::Current.cpu_time(), server.cpu_time());
        let delta =
            |b: Option<Duration>, a: Option<Duration>| Some(a?.saturating_sub(b?).as_secs_f64());
        let mut latencies = Vec::new();
        let mut rows = 0;
        for log in logs {
            let mut log = log.lock().unwrap_or_else(PoisonError::into_inner);
            latencies.append(&mut log.latencies);
            rows += log.rows;
        }
        Ok(QueryRunFigures {
            latencies: Latencies::new(latencies),
            rows,
            elapsed_s: elapsed.as_secs_f64(),
            server_cpu_s: delta(server_before, server_after),
            loader_cpu_s: delta(loader_before, loader_after),
        })
    }
}

/// Waits (up to [`SETTLE_MAX`]) until the server uses under [`SETTLE_IDLE`] of a core:
/// the flushes and merges the load started should not count against the queries.
fn settle(pid: u32) {
    let server = Process::Pid(pid);
    let started = Instant::now();
    let mut last = server.cpu_time();
    while started.elapsed() < SETTLE_MAX {
        std::thread::sleep(SETTLE_POLL);
        let now = server.cpu_time();
        let (Some(before), Some(after)) = (last, now) else {
            return;
        };
        if after.saturating_sub(before).as_secs_f64() < SETTLE_IDLE * SETTLE_POLL.as_secs_f64() {
            return;
        }
        last = now;
    }
    eprintln!(
        "note: the server was still busy {:.0} s after the load (flushes, merges); the queries \
         start anyway",
        SETTLE_MAX.as_secs_f64()
    );
}

/// What one client's answers were.
#[derive(Debug, Default)]
struct Log {
    latencies: Vec<Duration>,
    rows: u64,
}

/// A client that logs each answer's latency and rows (the pool is run several times, so
/// the figures of each `run_type` are gathered here).
struct Recorded {
    client: HttpQueryClient,
    log: Arc<Mutex<Log>>,
}

impl QueryClient for Recorded {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let answer = self.client.run(query)?;
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.latencies.push(answer.latency);
        log.rows += answer.rows;
        Ok(answer)
    }
}
