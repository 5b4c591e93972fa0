//! The queries: TSBS's types drawn once for every target (SQL wording), then worded and
//! run in each language a target speaks, InfluxQL over `/query` and PromQL over
//! `/api/v1/query_range`, one client, a median latency per type.

use std::time::{Duration, Instant};

use strata_bench::compare::{
    Language, LanguageRun, TargetKind, TargetSpec, TypeResult, prometheus_rows,
};
use strata_bench::http::HttpClient;
use strata_bench::queries::{
    self, Dataset, Query, QueryType, QueryWorkload, tsbs_influxql, tsbs_promql,
};
use strata_bench::query_run::{Answer, HttpProtocol, HttpQueryClient, QueryClient};
use strata_bench::stats::Latencies;

use super::{CompareArgs, DEFAULT_TYPES, Plan, QUERY_TIMEOUT, percent_encode};
use crate::generate::Workload;

/// The queries of every type asked for, drawn once (SQL wording; each language words the
/// same hosts and windows); none, with a note, unless the workload is the generated
/// cpu-only one.
pub(super) fn draw_queries(
    args: &CompareArgs,
    notes: &mut Vec<String>,
) -> Result<Vec<(QueryType, Vec<Query>)>, String> {
    let skipped = if args.file.is_some() {
        Some("--file: the file's hosts and time span are unknown")
    } else if args.workload.workload != Workload::CpuOnly {
        Some("the workload is not cpu-only")
    } else {
        None
    };
    if let Some(why) = skipped {
        if !args.types.is_empty() {
            return Err(format!(
                "--types: the queries run on the generated cpu-only workload only ({why})"
            ));
        }
        notes.push(format!(
            "queries: none ran: TSBS's query types read the generated cpu-only data ({why})"
        ));
        return Ok(Vec::new());
    }
    let config = args.workload.cpu_only_config()?;
    if config.hosts == 0 || config.rows_per_host() == 0 {
        return Err("the workload has no rows (--hosts or --duration is 0)".into());
    }
    let dataset = Dataset::CpuOnly {
        start_ns: config.start_ns,
        end_ns: config.end_ns,
        hosts: config.hosts,
    };
    let names: Vec<String> = if args.types.is_empty() {
        DEFAULT_TYPES.iter().map(|s| s.to_string()).collect()
    } else {
        args.types.clone()
    };
    let seed = args.query_seed.unwrap_or(args.workload.seed());
    let mut drawn: Vec<(QueryType, Vec<Query>)> = Vec::with_capacity(names.len());
    for name in &names {
        let query_type = QueryType::parse(name.trim(), QueryWorkload::CpuOnly)?;
        if drawn.iter().any(|(t, _)| *t == query_type) {
            continue;
        }
        let generated = queries::generate(&dataset, query_type, args.queries, seed)?;
        if generated.iter().any(|q| q.clamped) {
            notes.push(format!(
                "{}: its window is longer than the data, so each query reads the whole span \
                 (load a longer --duration for its real shape)",
                query_type.name()
            ));
        }
        drawn.push((query_type, generated));
    }
    Ok(drawn)
}

/// Runs every drawn type in every language the target speaks.
pub(super) fn run_queries(
    args: &CompareArgs,
    plan: &Plan,
    spec: &TargetSpec,
) -> Result<Vec<LanguageRun>, String> {
    let mut runs = Vec::new();
    if plan.queries.is_empty() {
        return Ok(runs);
    }
    for language in spec.kind.languages(plan.promql_on_strata) {
        let mut client = connect_query_client(args, spec, language)?;
        let mut types = Vec::with_capacity(plan.queries.len());
        for (query_type, drawn) in &plan.queries {
            types.push(run_type(
                *query_type,
                drawn,
                language,
                client.as_mut(),
                plan.max_duration,
            )?);
        }
        runs.push(LanguageRun { language, types });
    }
    Ok(runs)
}

fn connect_query_client(
    args: &CompareArgs,
    spec: &TargetSpec,
    language: Language,
) -> Result<Box<dyn QueryClient>, String> {
    let client: Box<dyn QueryClient> = match language {
        Language::InfluxQl => Box::new(
            HttpQueryClient::connect(
                &spec.http.authority,
                &spec.http.base_path,
                &args.db,
                HttpProtocol::InfluxQl,
                QUERY_TIMEOUT,
            )
            .map_err(|e| format!("{}: {e}", spec.name))?,
        ),
        Language::PromQl => Box::new(PromQlClient::connect(spec, &args.db)?),
    };
    Ok(client)
}

/// One type's queries in `language`, one after the other, until they or the time budget
/// run out; a failure is counted and the run goes on.
fn run_type(
    query_type: QueryType,
    drawn: &[Query],
    language: Language,
    client: &mut dyn QueryClient,
    max_duration: Duration,
) -> Result<TypeResult, String> {
    let name = query_type.name();
    let mut result = TypeResult {
        query_type: name.clone(),
        ..TypeResult::default()
    };
    let worded: Vec<Query> = match language {
        Language::PromQl if !tsbs_promql::supports(query_type) => {
            result.unsupported = Some(tsbs_promql::unsupported_reason(query_type));
            return Ok(result);
        }
        Language::PromQl => drawn
            .iter()
            .map(|q| tsbs_promql::translate(query_type, q))
            .collect::<Result<_, _>>()?,
        Language::InfluxQl => drawn
            .iter()
            .map(|q| tsbs_influxql::translate(query_type, q))
            .collect::<Result<_, _>>()?,
    };
    eprintln!(
        "running {name} in {}: {} queries ...",
        language.name(),
        worded.len()
    );
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(worded.len());
    for query in &worded {
        if started.elapsed() >= max_duration {
            break;
        }
        result.queries += 1;
        match client.run(query) {
            Ok(answer) => {
                latencies.push(answer.latency);
                result.rows += answer.rows;
            }
            Err(message) => {
                result.failures += 1;
                result
                    .first_failure
                    .get_or_insert_with(|| format!("{message} (statement: {})", query.sql));
            }
        }
    }
    result.answered = latencies.len();
    if !latencies.is_empty() {
        let median = Latencies::new(latencies).percentile(50.0);
        result.median_ms = Some(median.as_secs_f64() * 1e3);
    }
    Ok(result)
}

/// PromQL as `tsbs_run_queries_victoriametrics` sends it: `GET <base><target>` (the
/// target from [`tsbs_promql::request_target`]), plus `&db=DB` for Strata, whose PromQL
/// reads one database. An answer must be a 2xx whose JSON says `"status":"success"`.
struct PromQlClient {
    client: HttpClient,
    base_path: String,
    database_param: String,
}

impl PromQlClient {
    fn connect(spec: &TargetSpec, database: &str) -> Result<Self, String> {
        let mut client = HttpClient::new(&spec.http.authority, QUERY_TIMEOUT);
        client
            .connect()
            .map_err(|e| format!("{}: {e}", spec.name))?;
        let database_param = match spec.kind {
            TargetKind::Strata => format!("&db={}", percent_encode(database)),
            _ => String::new(),
        };
        Ok(Self {
            client,
            base_path: spec.http.base_path.clone(),
            database_param,
        })
    }
}

impl QueryClient for PromQlClient {
    fn run(&mut self, query: &Query) -> Result<Answer, String> {
        let path = format!("{}{}{}", self.base_path, query.sql, self.database_param);
        let started = Instant::now();
        let response = self.client.get(&path).map_err(|e| e.to_string())?;
        let latency = started.elapsed();
        if !(200..300).contains(&response.status) {
            let body: String = String::from_utf8_lossy(&response.body)
                .chars()
                .take(300)
                .collect();
            return Err(format!("HTTP {}: {}", response.status, body.trim()));
        }
        let rows = prometheus_rows(&response.body)?;
        Ok(Answer { rows, latency })
    }
}
