//! [`QueryEngine`]: SQL over an [`Engine`] through DataFusion.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::execution::context::SessionState;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::{SessionStateBuilder, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{DataFrame, SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Query, Statement as SqlStatement};
use strata_storage::Engine;
use strata_storage::options::available_cores;

use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{ExecutionPlan, SendableRecordBatchStream, execute_stream};

use crate::catalog::{CATALOG_NAME, StrataCatalog, in_statement};
use crate::coop::CooperativeJoins;
use crate::direct;
use crate::duplicate_names::Renames;
use crate::error::QueryError;
use crate::functions;
use crate::guard::{Admission, QueryStream};
use crate::minute_times::MinuteTimes;
use crate::nesting;
use crate::parameter_types::parameter_types;
use crate::plan_weight;
use crate::preagg::PreAggregateRule;
use crate::query_runtime::QueryRuntime;
use crate::replan;
use crate::statements::{self, is_read_statement};

/// A statement as [`QueryEngine`] runs it: SQL text, or a `SELECT` already in sqlparser's
/// tree ([`QueryEngine::query_stream`]).
pub(crate) enum Statement<'a> {
    Text(&'a str),
    Tree(Box<Query>),
}

/// Statement timeout unless configured: long enough for any benchmark query, short enough
/// that a runaway query does not hold a slot for long.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How queries run.
#[derive(Debug, Clone)]
pub struct QueryOptions {
    /// Threads a query may use (DataFusion's `target_partitions`): joins, aggregates and
    /// sorts repartition to this many streams. Default: the cores this process may use.
    pub target_partitions: usize,
    /// Longest a statement may run, from admission to its last batch (streams included);
    /// past it the statement is cancelled with [`QueryError::Timeout`]. Default
    /// [`DEFAULT_TIMEOUT`]; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Bytes that the sorts, aggregates and joins of all running statements may hold
    /// together (DataFusion's memory pool); a statement that needs more fails with
    /// [`QueryError::ResourcesExhausted`]. Scans stream and are not counted. Default: a
    /// quarter of physical memory; `None`: unlimited.
    pub memory_limit: Option<usize>,
    /// Statements running at once (default: twice the cores). More wait for a slot within
    /// their timeout; when `max_queued` already wait, a statement fails at once with
    /// [`QueryError::Busy`].
    pub max_concurrent: usize,
    /// Statements that may wait for a slot (`None`, the default: four per slot). A deep
    /// queue suits many clients with short statements (they wait instead of failing); a
    /// shallow one sheds load sooner.
    pub max_queued: Option<usize>,
    /// Answer aggregates from block pre-aggregates where blocks allow (the `preagg`
    /// module). Default on; off only to compare results or timings with DataFusion's own
    /// aggregation.
    pub pre_aggregate: bool,
    /// Answer the common time-series shapes (aggregates by tags and time buckets, latest
    /// row per tag group) without DataFusion's planner (the `direct` module), from block
    /// pre-aggregates, so only together with `pre_aggregate`. Default on; off only to
    /// compare results or timings with the planned path.
    pub direct: bool,
}

/// Statements that wait for a slot, per slot, unless [`QueryOptions::max_queued`] says.
pub const QUEUED_PER_SLOT: usize = 4;

impl QueryOptions {
    /// How many statements may wait for a slot.
    pub fn queue_length(&self) -> usize {
        self.max_queued
            .unwrap_or(QUEUED_PER_SLOT * self.max_concurrent.max(1))
    }
}

impl Default for QueryOptions {
    fn default() -> Self {
        let cores = available_cores();
        Self {
            target_partitions: cores,
            timeout: Some(DEFAULT_TIMEOUT),
            memory_limit: Some(physical_memory() / 4),
            max_concurrent: 2 * cores,
            max_queued: None,
            pre_aggregate: true,
            direct: true,
        }
    }
}

/// Physical memory in bytes (`MemTotal` of /proc/meminfo); 8 GiB where it cannot be read.
fn physical_memory() -> usize {
    const FALLBACK: usize = 8 << 30;
    let Ok(meminfo) = std::fs::read_to_string("/proc/meminfo") else {
        return FALLBACK;
    };
    meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<usize>()
                .ok()
        })
        .map_or(FALLBACK, |kib| kib.saturating_mul(1024))
}

/// Runs SQL statements against the engine's tables.
///
/// Tables are named `table` (in the statement's database), `database.table`, or
/// `strata.database.table`. Unquoted identifiers are lower-cased (standard SQL); quote
/// names with capitals: `"CPU"`. Strata runs `SHOW`, `DESCRIBE`, `CREATE TABLE`, `INSERT`
/// and `DROP TABLE` itself (the `statements` module, outside the guard rails); DataFusion's
/// own DDL, DML and `SET` are refused with [`QueryError::NotSupported`] or
/// [`QueryError::Plan`].
///
/// One of the query engine's concurrency slots, held by a query that runs outside SQL
/// ([`QueryEngine::admit`]); dropping it frees the slot.
#[derive(Debug)]
pub struct QuerySlot {
    _slot: tokio::sync::OwnedSemaphorePermit,
}

/// Guard rails ([`QueryOptions`]): a timeout per statement, a memory pool shared by all
/// statements, and a limit on statements running at once.
pub struct QueryEngine {
    engine: Arc<Engine>,
    /// The session every statement starts from (functions, catalog, configuration).
    state: SessionState,
    options: QueryOptions,
    admission: Admission,
    /// Where DataFusion's long plans run (see `query_runtime` and `plan_weight`).
    runtime: QueryRuntime,
    /// What every statement's plan executes with (configuration, functions, memory pool),
    /// built once: building it copies the session's function registries, 6.6% of a point
    /// lookup's instructions. Only the default schema differs between statements, and
    /// execution does not read it (functions get the planner's copy of the configuration).
    task: Arc<TaskContext>,
}

impl std::fmt::Debug for QueryEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryEngine")
            .field("engine", &self.engine)
            .finish()
    }
}

impl QueryEngine {
    /// A query engine over `engine` with default options.
    ///
    /// # Errors
    /// As [`QueryEngine::with_options`].
    pub fn new(engine: Arc<Engine>) -> Result<Self, QueryError> {
        Self::with_options(engine, QueryOptions::default())
    }

    /// A query engine over `engine`.
    ///
    /// # Errors
    /// None in practice: building DataFusion's runtime (memory pool, spill directory) is
    /// reported as [`QueryError::Execution`] should it fail.
    pub fn with_options(engine: Arc<Engine>, options: QueryOptions) -> Result<Self, QueryError> {
        let mut config = SessionConfig::new()
            .with_target_partitions(options.target_partitions.max(1))
            .with_default_catalog_and_schema(CATALOG_NAME, "public")
            .with_create_default_catalog_and_schema(false)
            // `information_schema.tables` / `.columns`: SQL clients list tables from it.
            .with_information_schema(true);
        // Spans let planning errors point at the offending identifier.
        config.options_mut().sql_parser.collect_spans = true;
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(limit) = options.memory_limit {
            runtime = runtime.with_memory_limit(limit, 1.0);
        }
        let mut builder = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime.build_arc()?)
            .with_default_features();
        if options.pre_aggregate {
            builder = builder.with_physical_optimizer_rule(Arc::new(PreAggregateRule));
        }
        // Last, so that no later rule sees (or moves) the yield points it adds.
        let builder = builder.with_physical_optimizer_rule(Arc::new(CooperativeJoins));
        let state = builder.build();
        let context = SessionContext::new_with_state(state);
        context.register_catalog(
            CATALOG_NAME,
            Arc::new(StrataCatalog::new(Arc::clone(&engine))),
        );
        functions::register(&context);
        crate::pg_catalog::register(&context, &engine);
        let mut state = context.state();
        functions::register_rewrites(&mut state)?;
        // After type coercion, which turns a string compared with a time into a cast.
        state.add_analyzer_rule(Arc::new(MinuteTimes));
        let runtime = QueryRuntime::new(options.target_partitions, nesting::PLANNING_STACK_BYTES)
            .map_err(|e| QueryError::Execution {
            message: format!("cannot start the query threads: {e}"),
        })?;
        let task = Arc::new(TaskContext::from(&state));
        Ok(Self {
            engine,
            state,
            runtime,
            task,
            admission: Admission::new(options.max_concurrent, options.queue_length()),
            options,
        })
    }

    /// The options this engine runs statements with.
    pub fn options(&self) -> &QueryOptions {
        &self.options
    }

    /// The storage engine.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// A DataFusion context whose unqualified table names resolve in `database`; for
    /// callers that want DataFusion's own API (data frames, streaming results).
    pub fn context(&self, database: &str) -> SessionContext {
        let mut state = self.state.clone();
        state.config_mut().options_mut().catalog.default_schema = database.to_string();
        SessionContext::new_with_state(state)
    }

    /// A concurrency slot for a query that runs outside SQL (PromQL), taken as a SQL
    /// statement takes one: within the query timeout, or [`QueryError::Busy`] at once when
    /// too many wait. Returns the slot (freed when dropped) and the deadline the query must
    /// end by, if a timeout is set.
    pub async fn admit(
        &self,
    ) -> Result<(QuerySlot, Option<(std::time::Instant, Duration)>), QueryError> {
        let deadline = self
            .options
            .timeout
            .map(|limit| (tokio::time::Instant::now() + limit, limit));
        let slot = self.admission.admit(deadline).await?;
        Ok((
            QuerySlot { _slot: slot },
            deadline.map(|(at, limit)| (at.into_std(), limit)),
        ))
    }

    /// Runs one statement with unqualified table names in `database`; returns every result
    /// batch.
    pub async fn sql(
        &self,
        database: &str,
        statement: &str,
    ) -> Result<Vec<RecordBatch>, QueryError> {
        self.sql_stream(database, statement).await?.collect().await
    }

    /// Runs one statement with unqualified table names in `database`; its result comes as a
    /// stream, so large results need not fit in memory. The statement holds a concurrency
    /// slot and runs under its timeout until the stream ends or is dropped.
    pub async fn sql_stream(
        &self,
        database: &str,
        statement: &str,
    ) -> Result<QueryStream, QueryError> {
        nesting::check(statement)?;
        if let Some(done) = statements::execute(&self.engine, database, statement).await {
            return done.map_err(QueryError::without_empty_position);
        }
        self.run(database, Statement::Text(statement)).await
    }

    /// Runs one `SELECT` given as sqlparser's tree rather than as text, with unqualified
    /// table names in `database`: for a language that plans into SQL (InfluxQL), so that
    /// its statements skip writing and parsing SQL text, about a third of a small
    /// aggregate's work, and run as the same text would through [`Self::sql_stream`]. The
    /// tree's depth is the caller's to bound (InfluxQL's parser bounds its own at
    /// [`nesting::MAX_EXPRESSION_DEPTH`]); errors carry no position.
    pub async fn query_stream(
        &self,
        database: &str,
        query: Box<Query>,
    ) -> Result<QueryStream, QueryError> {
        self.run(database, Statement::Tree(query)).await
    }

    /// Admits `statement` and starts it: the direct path when it answers, else
    /// DataFusion's plan.
    async fn run(
        &self,
        database: &str,
        statement: Statement<'_>,
    ) -> Result<QueryStream, QueryError> {
        let deadline = self
            .options
            .timeout
            .map(|limit| (tokio::time::Instant::now() + limit, limit));
        let slot = self.admission.admit(deadline).await?;
        let direct = match &statement {
            Statement::Text(text) => self.direct_plan(database, text),
            Statement::Tree(query) => self
                .direct_enabled()
                .then(|| direct::plan_query(&self.engine, database, query))
                .flatten(),
        };
        if let Some(plan) = direct {
            let plan = Arc::new(plan);
            let schema = plan.schema();
            let run = plan.execute(Arc::clone(&self.engine));
            let answer = match deadline {
                Some((at, limit)) => tokio::time::timeout_at(at, run)
                    .await
                    .map_err(|_| QueryError::Timeout { limit })??,
                None => run.await?,
            };
            // `None`: too many groups for the direct path; DataFusion answers.
            if let Some(batch) = answer {
                let batches = futures::stream::iter([Ok(batch)]);
                let stream = RecordBatchStreamAdapter::new(schema, batches);
                return Ok(QueryStream::running(Box::pin(stream), slot, deadline));
            }
        }
        let plan = self.plan_stream(database, statement);
        let stream = match deadline {
            Some((at, limit)) => tokio::time::timeout_at(at, plan)
                .await
                .map_err(|_| QueryError::Timeout { limit })??,
            None => plan.await?,
        };
        Ok(QueryStream::running(stream, slot, deadline))
    }

    /// Whether `statement` is answered by the direct path rather than DataFusion's plan.
    pub fn is_direct(&self, database: &str, statement: &str) -> bool {
        nesting::check(statement).is_ok() && self.direct_plan(database, statement).is_some()
    }

    /// Whether `query`, given as sqlparser's tree ([`Self::query_stream`]), is answered by
    /// the direct path.
    pub fn is_direct_query(&self, database: &str, query: &Query) -> bool {
        self.direct_enabled() && direct::plan_query(&self.engine, database, query).is_some()
    }

    fn direct_plan(&self, database: &str, statement: &str) -> Option<direct::DirectPlan> {
        if !self.direct_enabled() {
            return None;
        }
        direct::plan(&self.engine, database, statement)
    }

    fn direct_enabled(&self) -> bool {
        self.options.direct && self.options.pre_aggregate
    }

    /// Plans `statement` with DataFusion and starts it: on the query threads when its plan
    /// may hold a thread for long (`plan_weight`), else where its reader polls it.
    async fn plan_stream(
        &self,
        database: &str,
        statement: Statement<'_>,
    ) -> Result<SendableRecordBatchStream, QueryError> {
        let (plan, task, renames) = self.physical_plan(database, statement).await?;
        let stream = if plan_weight::may_hold_a_thread(&plan) {
            let start = async move { execute_stream(plan, task) };
            self.runtime.stream(start).await?
        } else {
            execute_stream(plan, task)?
        };
        Ok(match renames {
            Some(renames) => renames.stream(stream),
            None => stream,
        })
    }

    /// DataFusion's physical plan of `statement`, the context it runs in, and the names its
    /// result's columns take where the plan's cannot be the statement's ([`Renames`]).
    pub(crate) async fn physical_plan(
        &self,
        database: &str,
        statement: Statement<'_>,
    ) -> Result<(Arc<dyn ExecutionPlan>, Arc<TaskContext>, Option<Renames>), QueryError> {
        let (state, plan, renames) = self.logical_plan(database, statement).await?;
        let plan = DataFrame::new(state, plan).create_physical_plan().await?;
        Ok((plan, Arc::clone(&self.task), renames))
    }

    /// DataFusion's plan of a query, and the session it runs in: unqualified names in
    /// `database`, `now()` the engine's clock (injectable in tests) fixed for the
    /// statement, DDL, DML and `SET` refused (Strata's own statements handle those). SQL
    /// that DataFusion refuses and Strata can rewrite is planned again (`replan`); where
    /// that gives the result other names than the plan's, they come with it.
    async fn logical_plan(
        &self,
        database: &str,
        statement: Statement<'_>,
    ) -> Result<(SessionState, LogicalPlan, Option<Renames>), QueryError> {
        let options = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        // One copy of the session per statement (a context would copy it twice).
        let mut state = self.state.clone();
        state.config_mut().options_mut().catalog.default_schema = database.to_string();
        state.mark_start_execution();
        let now = DateTime::<Utc>::from_timestamp_nanos(self.engine.now_ns());
        state.execution_props_mut().query_execution_start_time = Some(now);
        let planning = async {
            match statement {
                Statement::Text(text) => {
                    let planned = match state.create_logical_plan(text).await {
                        // Boxed: inline, its state would grow every statement's future,
                        // which the HTTP handlers move several times per request (7% more
                        // instructions on a small InfluxQL query, callgrind).
                        Err(e) if replan::is_refusal(&e) => {
                            Box::pin(replan::plan_again(&state, text, e)).await
                        }
                        planned => planned.map(|plan| (plan, None)),
                    };
                    planned
                        .and_then(|(plan, renames)| {
                            options.verify_plan(&plan).map(|()| (plan, renames))
                        })
                        .map_err(|e| QueryError::from(e).at_end_if_unplaced(text))
                }
                Statement::Tree(query) => {
                    let tree = DfStatement::Statement(Box::new(SqlStatement::Query(query)));
                    state
                        .statement_to_plan(tree)
                        .await
                        .and_then(|plan| options.verify_plan(&plan).map(|()| (plan, None)))
                        .map_err(QueryError::from)
                }
            }
        };
        let (plan, renames) = in_statement(&self.engine, database, planning).await?;
        Ok((state, plan, renames))
    }

    /// What `statement` would return and which parameters (`$1`, `$2`, …) it takes,
    /// without running it: for protocols that describe a statement before running it
    /// (the Postgres wire's Describe). Strata's `SHOW` and `DESCRIBE` are run (they read
    /// only the catalog); its statements that change data return no columns.
    pub async fn describe(
        &self,
        database: &str,
        statement: &str,
    ) -> Result<Description, QueryError> {
        nesting::check(statement)?;
        if statements::is_strata_statement(statement) {
            let schema = if is_read_statement(statement) {
                match statements::execute(&self.engine, database, statement).await {
                    Some(done) => done.map_err(QueryError::without_empty_position)?.schema(),
                    None => Arc::new(Schema::empty()),
                }
            } else {
                Arc::new(Schema::empty())
            };
            return Ok(Description {
                schema,
                parameters: statements::parameter_types(&self.engine, database, statement),
            });
        }
        let (_, plan, renames) = self
            .logical_plan(database, Statement::Text(statement))
            .await?;
        let found = parameter_types(&plan)?;
        // `$1` … `$n`: a parameter the statement never names has no type.
        let count = found
            .keys()
            .filter_map(|name| name.strip_prefix('$')?.parse::<usize>().ok())
            .max()
            .unwrap_or(0);
        // A dense list of types: `$2000000000` alone would take 48 GB. The Postgres
        // protocol, the one caller, counts parameters in 16 bits.
        if count > MAX_DESCRIBED_PARAMETERS {
            return Err(QueryError::Plan {
                message: format!(
                    "there is no parameter ${count}: a statement takes at most {MAX_DESCRIBED_PARAMETERS} parameters"
                ),
                position: None,
            });
        }
        let parameters = (1..=count)
            .map(|n| found.get(&format!("${n}")).cloned().flatten())
            .collect();
        let schema = plan.schema().as_arrow();
        Ok(Description {
            schema: match renames {
                Some(renames) => renames.schema(schema),
                None => Arc::new(schema.clone()),
            },
            parameters,
        })
    }
}

/// The highest parameter number [`QueryEngine::describe`] lists types for, and the most
/// parameters a statement may take over the Postgres wire: the protocol counts a Bind
/// message's values and a ParameterDescription's types in 16 bits, as Postgres does.
pub const MAX_DESCRIBED_PARAMETERS: usize = u16::MAX as usize;

/// A statement's result columns and parameter types, found without running it
/// ([`QueryEngine::describe`]).
#[derive(Debug, Clone)]
pub struct Description {
    /// The columns of every result batch; empty for a statement that returns no rows.
    pub schema: SchemaRef,
    /// The type of each parameter, `$1` first, where the plan fixes one.
    pub parameters: Vec<Option<DataType>>,
}

#[cfg(test)]
mod runtime_tests;
