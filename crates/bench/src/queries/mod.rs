//! The query half of the seeds' benchmarks: seeded generators of SQL statements.
//!
//! - [`tsbs`]: the TSBS devops query types on `cpu` (docs/workloads.md), with TSBS's
//!   semantics: random hosts (distinct) and random windows inside the data's time span.
//! - [`tsbs_influxql`]: the same queries (same hosts and windows) worded in InfluxQL exactly
//!   as TSBS's influx generator words them, for `/query`.
//! - [`tsbs_promql`]: the same queries in PromQL as TSBS's VictoriaMetrics generator words
//!   them (single-groupby, cpu-max-all, double-groupby), for `/api/v1/query_range`.
//! - [`meters`]: taosBenchmark's queries after insert on `meters` (docs/workloads.md):
//!   whole-table aggregates of each column and `select *`.
//!
//! A [`QueryType`] is named as the seeds name it (`single-groupby-5-8-1`, `lastpoint`,
//! `avg-current`, …); [`generate`] draws `count` queries of one type from a generator seeded
//! with the run's seed and the type's name, so a type's queries do not depend on which
//! other types run.

pub mod meters;
pub mod tsbs;
pub mod tsbs_influxql;
pub mod tsbs_promql;

use crate::rng::Rng;

/// Which data set a query type reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryWorkload {
    /// TSBS cpu-only: table `cpu`.
    CpuOnly,
    /// TDengine smart meters: table `meters`.
    Meters,
}

/// What the generators must know about the loaded data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dataset {
    /// TSBS cpu-only: hosts `host_0 … host_{hosts-1}`, rows in `[start_ns, end_ns)`.
    CpuOnly {
        /// First timestamp of the data, nanoseconds (inclusive).
        start_ns: i64,
        /// End of the data, nanoseconds (exclusive).
        end_ns: i64,
        /// Number of hosts.
        hosts: u32,
    },
    /// TDengine meters (the whole-table queries need nothing more than the table).
    Meters,
}

impl Dataset {
    /// The workload this data set belongs to.
    pub fn workload(&self) -> QueryWorkload {
        match self {
            Dataset::CpuOnly { .. } => QueryWorkload::CpuOnly,
            Dataset::Meters => QueryWorkload::Meters,
        }
    }
}

/// One kind of query of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    /// `single-groupby-M-H-T`: max of the first M cpu fields, per minute, for H random
    /// hosts, over a random T-hour window.
    SingleGroupby {
        /// Fields (M).
        metrics: usize,
        /// Random hosts (H).
        hosts: u32,
        /// Window in hours (T).
        hours: u32,
    },
    /// `cpu-max-all-H`: max of all ten fields, per hour, for H random hosts, over 8 hours.
    CpuMaxAll {
        /// Random hosts (H).
        hosts: u32,
    },
    /// `double-groupby-M`: mean of the first M fields per hour and host, all hosts, 12 hours.
    DoubleGroupby {
        /// Fields (1, 5 or all ten).
        metrics: usize,
    },
    /// `high-cpu-H`: every row with `usage_user > 90.0` over 12 hours, for H random hosts
    /// (`None`: all hosts).
    HighCpu {
        /// Random hosts; `None` is `high-cpu-all`.
        hosts: Option<u32>,
    },
    /// `lastpoint`: the latest row of every host.
    Lastpoint,
    /// `groupby-orderby-limit`: max `usage_user` per minute for the last 5 minutes before a
    /// random end.
    GroupbyOrderbyLimit,
    /// `count`: `count(*)` of `meters`.
    MetersCount,
    /// `<aggregate>-<column>`: one aggregate of one `meters` column over the whole table.
    MetersAggregate {
        /// The aggregate.
        aggregate: meters::Aggregate,
        /// The column.
        column: meters::Column,
    },
    /// `select-all`: every row of `meters`, streamed.
    MetersSelectAll,
}

impl QueryType {
    /// The workload whose table this type reads.
    pub fn workload(&self) -> QueryWorkload {
        match self {
            QueryType::MetersCount
            | QueryType::MetersAggregate { .. }
            | QueryType::MetersSelectAll => QueryWorkload::Meters,
            _ => QueryWorkload::CpuOnly,
        }
    }

    /// Whether the result is large and read as a stream (rows counted as they arrive).
    pub fn streamed(&self) -> bool {
        matches!(self, QueryType::MetersSelectAll)
    }

    /// The type's name as the seeds (TSBS, taosBenchmark) write it.
    pub fn name(&self) -> String {
        match self {
            QueryType::SingleGroupby {
                metrics,
                hosts,
                hours,
            } => format!("single-groupby-{metrics}-{hosts}-{hours}"),
            QueryType::CpuMaxAll { hosts } => format!("cpu-max-all-{hosts}"),
            QueryType::DoubleGroupby { metrics } if *metrics == tsbs::FIELD_COUNT => {
                "double-groupby-all".into()
            }
            QueryType::DoubleGroupby { metrics } => format!("double-groupby-{metrics}"),
            QueryType::HighCpu { hosts: None } => "high-cpu-all".into(),
            QueryType::HighCpu { hosts: Some(h) } => format!("high-cpu-{h}"),
            QueryType::Lastpoint => "lastpoint".into(),
            QueryType::GroupbyOrderbyLimit => "groupby-orderby-limit".into(),
            QueryType::MetersCount => "count".into(),
            QueryType::MetersAggregate { aggregate, column } => {
                format!("{}-{}", aggregate.name(), column.name())
            }
            QueryType::MetersSelectAll => "select-all".into(),
        }
    }

    /// Parses a type name; the error lists the names of `workload`.
    pub fn parse(name: &str, workload: QueryWorkload) -> Result<Self, String> {
        let parsed = tsbs::parse(name).or_else(|| meters::parse(name));
        match parsed {
            Some(t) if t.workload() == workload => Ok(t),
            Some(_) => Err(format!(
                "query type {name:?} reads the other workload's table; the types of this \
                 workload are: {}",
                names(workload)
            )),
            None => Err(format!(
                "unknown query type {name:?}; the types of this workload are: {}",
                names(workload)
            )),
        }
    }

    /// Every type of `workload`, in the order the report lists them.
    pub fn all(workload: QueryWorkload) -> Vec<Self> {
        match workload {
            QueryWorkload::CpuOnly => tsbs::all_types(),
            QueryWorkload::Meters => meters::all_types(),
        }
    }
}

fn names(workload: QueryWorkload) -> String {
    QueryType::all(workload)
        .iter()
        .map(QueryType::name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One generated statement and what it asks for (the tests check results against it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The statement: SQL, or InfluxQL once [`tsbs_influxql::translate`] has worded it.
    pub sql: String,
    /// Start of the time window, nanoseconds (inclusive); `None` when unbounded.
    pub start_ns: Option<i64>,
    /// End of the time window, nanoseconds (exclusive); `None` when unbounded.
    pub end_ns: Option<i64>,
    /// Host indexes the statement filters on (empty: all hosts).
    pub hosts: Vec<u32>,
    /// True when the type's window is longer than the data, so it covers the whole span
    /// (TSBS refuses such a window; the bench runs it over all the data and says so).
    pub clamped: bool,
    /// Whether the answer is streamed (see [`QueryType::streamed`]).
    pub streamed: bool,
}

/// `count` queries of type `query_type` over `dataset`, drawn from a generator seeded with
/// `seed` and the type's name. Errors when the type does not fit the data (another
/// workload's type, more hosts than the data has).
pub fn generate(
    dataset: &Dataset,
    query_type: QueryType,
    count: usize,
    seed: u64,
) -> Result<Vec<Query>, String> {
    let mut rng = Rng::new(seed ^ name_hash(&query_type.name()));
    match *dataset {
        Dataset::CpuOnly {
            start_ns,
            end_ns,
            hosts,
        } => {
            let data = tsbs::Span {
                start_ns,
                end_ns,
                hosts,
            };
            (0..count)
                .map(|_| tsbs::query(&data, query_type, &mut rng))
                .collect()
        }
        Dataset::Meters => (0..count).map(|_| meters::query(query_type)).collect(),
    }
}

/// FNV-1a of a type's name: mixes the type into the seed so each type has its own stream.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
