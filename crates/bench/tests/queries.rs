//! The query generators: deterministic for a seed, and every type's SQL runs against a small
//! embedded data set (10 hosts x 13 hours of cpu-only, 10 meters x 1,000 rows) and returns
//! the rows TSBS's and taosBenchmark's semantics imply, computed here from the generators'
//! own rows.

// The fixture helpers sit outside #[test] functions, where clippy.toml allows unwrap.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type, TimestampNanosecondType};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, CpuRow, SEED_001_START_NS};
use strata_bench::meters::{MeterRow, Meters, MetersConfig, MetersOrder};
use strata_bench::queries::{self, Dataset, Query, QueryType, QueryWorkload};
use strata_bench::query_run::{EmbeddedQueries, QueryClient};
use strata_lineproto::Precision;
use strata_query::QueryEngine;
use strata_storage::{Engine, EngineOptions};

const DB: &str = "bench";
const NS_PER_MINUTE: i64 = 60_000_000_000;
const NS_PER_HOUR: i64 = 60 * NS_PER_MINUTE;
const HOSTS: u32 = 10;
const HOURS: i64 = 13;
const METERS: u32 = 10;
const ROWS_PER_METER: u64 = 1_000;

fn cpu_config() -> CpuOnlyConfig {
    CpuOnlyConfig {
        hosts: HOSTS,
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + HOURS * NS_PER_HOUR,
        ..CpuOnlyConfig::default()
    }
}

fn cpu_dataset() -> Dataset {
    let c = cpu_config();
    Dataset::CpuOnly {
        start_ns: c.start_ns,
        end_ns: c.end_ns,
        hosts: c.hosts,
    }
}

fn meters_config() -> MetersConfig {
    MetersConfig {
        meters: METERS,
        rows_per_meter: ROWS_PER_METER,
        ..MetersConfig::default()
    }
}

/// The engine with both tables loaded and flushed, and the rows that went in.
struct Fixture {
    engine: Arc<Engine>,
    cpu: Vec<CpuRow>,
    meters: Vec<MeterRow>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench_queries_data");
        let _ = std::fs::remove_dir_all(&dir);
        let options = EngineOptions {
            data_dirs: vec![dir],
            shards: 2,
            background: false,
            ..EngineOptions::default()
        };
        let (engine, _) = Engine::open(options).unwrap();

        let mut generator = CpuOnly::new(cpu_config());
        let half = cpu_config().rows_total() / 2;
        let mut cpu = Vec::new();
        let mut body = Vec::new();
        while let Some(row) = generator.next_row() {
            generator.write_line(&row, &mut body);
            cpu.push(row);
            if cpu.len() as u64 == half {
                // The first half in parts, the rest in memtables: both paths answer.
                write(&engine, &body, Precision::Nanoseconds);
                body.clear();
                engine.flush().unwrap();
            }
        }
        write(&engine, &body, Precision::Nanoseconds);

        let mut generator = Meters::new(meters_config(), 0..METERS, MetersOrder::Progressive);
        let mut meters = Vec::new();
        body.clear();
        while let Some(row) = generator.next_row() {
            generator.write_line(&row, &mut body);
            meters.push(row);
        }
        write(&engine, &body, Precision::Milliseconds);
        Fixture {
            engine: Arc::new(engine),
            cpu,
            meters,
        }
    })
}

fn write(engine: &Engine, body: &[u8], precision: Precision) {
    let report = engine.write_lines(DB, body, precision).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

fn embedded() -> &'static EmbeddedQueries {
    static TARGET: OnceLock<EmbeddedQueries> = OnceLock::new();
    TARGET.get_or_init(|| EmbeddedQueries::new(Arc::clone(&fixture().engine), DB).unwrap())
}

fn batches(sql: &str) -> Vec<RecordBatch> {
    let engine = QueryEngine::new(Arc::clone(&fixture().engine)).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(engine.sql(DB, sql)).unwrap()
}

fn in_query(query: &Query, row: &CpuRow) -> bool {
    query.start_ns.is_none_or(|s| row.timestamp_ns >= s)
        && query.end_ns.is_none_or(|e| row.timestamp_ns < e)
        && (query.hosts.is_empty() || query.hosts.contains(&row.host))
}

/// The rows TSBS's semantics give for `query` of `query_type`, from the generator's rows.
fn expected_rows(query_type: QueryType, query: &Query, rows: &[CpuRow]) -> u64 {
    let kept = rows.iter().filter(|r| in_query(query, r));
    let buckets = |width: i64| distinct(kept.clone().map(|r| r.timestamp_ns.div_euclid(width)));
    match query_type {
        QueryType::SingleGroupby { .. } => buckets(NS_PER_MINUTE),
        QueryType::CpuMaxAll { .. } => buckets(NS_PER_HOUR),
        QueryType::DoubleGroupby { .. } => distinct(
            kept.clone()
                .map(|r| (r.timestamp_ns.div_euclid(NS_PER_HOUR), r.host)),
        ),
        QueryType::HighCpu { .. } => kept.clone().filter(|r| r.values[0] > 90).count() as u64,
        QueryType::Lastpoint => u64::from(HOSTS),
        QueryType::GroupbyOrderbyLimit => buckets(NS_PER_MINUTE).min(5),
        other => panic!("{} is not a cpu type", other.name()),
    }
}

fn distinct<T: Ord>(values: impl Iterator<Item = T>) -> u64 {
    values.collect::<BTreeSet<_>>().len() as u64
}

#[test]
fn every_devops_type_returns_the_rows_tsbs_implies() {
    let f = fixture();
    let mut client = embedded().client();
    for query_type in QueryType::all(QueryWorkload::CpuOnly) {
        let queries = queries::generate(&cpu_dataset(), query_type, 5, 123).unwrap();
        for query in &queries {
            assert!(
                !query.clamped,
                "{}: 13 h of data fit every window",
                query.sql
            );
            let answer = client
                .run(query)
                .unwrap_or_else(|e| panic!("{}: {e}", query.sql));
            let expected = expected_rows(query_type, query, &f.cpu);
            assert_eq!(answer.rows, expected, "{}", query.sql);
            // One host over 12 hours may never pass 90%; every other answer has rows.
            if !matches!(query_type, QueryType::HighCpu { hosts: Some(_) }) {
                assert!(expected > 0, "{}: an empty answer checks little", query.sql);
            }
        }
    }
}

#[test]
fn window_sizes_and_hosts_follow_tsbs() {
    let hours = |t: QueryType| {
        let q = &queries::generate(&cpu_dataset(), t, 1, 9).unwrap()[0];
        (q.end_ns.unwrap() - q.start_ns.unwrap()) / NS_PER_HOUR
    };
    let single = |metrics, hosts, hours| QueryType::SingleGroupby {
        metrics,
        hosts,
        hours,
    };
    assert_eq!(hours(single(1, 1, 1)), 1);
    assert_eq!(hours(single(5, 8, 12)), 12);
    assert_eq!(hours(QueryType::CpuMaxAll { hosts: 8 }), 8);
    assert_eq!(hours(QueryType::DoubleGroupby { metrics: 5 }), 12);
    assert_eq!(hours(QueryType::HighCpu { hosts: None }), 12);
    let q = &queries::generate(&cpu_dataset(), single(5, 8, 1), 1, 9).unwrap()[0];
    assert_eq!(q.hosts.iter().collect::<BTreeSet<_>>().len(), 8);
    assert_eq!(q.sql.matches("hostname = 'host_").count(), 8);
    assert_eq!(q.sql.matches("max(usage_").count(), 5);
    let too_many = queries::generate(&cpu_dataset(), QueryType::CpuMaxAll { hosts: 11 }, 1, 9);
    assert!(too_many.unwrap_err().contains("11 random hosts"));
    // A window longer than the data covers all of it, and says so.
    let short = Dataset::CpuOnly {
        start_ns: 0,
        end_ns: 2 * NS_PER_HOUR,
        hosts: 3,
    };
    let q = &queries::generate(&short, QueryType::DoubleGroupby { metrics: 1 }, 1, 9).unwrap()[0];
    assert!(q.clamped);
    assert_eq!((q.start_ns, q.end_ns), (Some(0), Some(2 * NS_PER_HOUR)));
}

#[test]
fn single_groupby_maxima_match_the_rows() {
    let f = fixture();
    let query_type = QueryType::SingleGroupby {
        metrics: 5,
        hosts: 8,
        hours: 1,
    };
    let query = &queries::generate(&cpu_dataset(), query_type, 1, 77).unwrap()[0];
    let mut expected: BTreeMap<i64, [i64; 5]> = BTreeMap::new();
    for row in f.cpu.iter().filter(|r| in_query(query, r)) {
        let bucket = row.timestamp_ns.div_euclid(NS_PER_MINUTE) * NS_PER_MINUTE;
        let maxima = expected.entry(bucket).or_insert([i64::MIN; 5]);
        for (m, v) in maxima.iter_mut().zip(row.values) {
            *m = (*m).max(v);
        }
    }
    let mut got: BTreeMap<i64, [i64; 5]> = BTreeMap::new();
    for batch in batches(&query.sql) {
        let buckets = batch.column(0).as_primitive::<TimestampNanosecondType>();
        for row in 0..batch.num_rows() {
            let values =
                std::array::from_fn(|i| batch.column(i + 1).as_primitive::<Int64Type>().value(row));
            got.insert(buckets.value(row), values);
        }
    }
    assert_eq!(got, expected, "{}", query.sql);
}

#[test]
fn lastpoint_is_the_last_row_of_every_host() {
    let f = fixture();
    let query = &queries::generate(&cpu_dataset(), QueryType::Lastpoint, 1, 1).unwrap()[0];
    let last_instant = f.cpu.iter().map(|r| r.timestamp_ns).max().unwrap();
    let mut hosts = BTreeSet::new();
    for batch in batches(&query.sql) {
        let schema = batch.schema();
        let time = schema.index_of("time").unwrap();
        let times = batch.column(time).as_primitive::<TimestampNanosecondType>();
        for row in 0..batch.num_rows() {
            assert_eq!(times.value(row), last_instant);
        }
        let hostname = batch.column(schema.index_of("hostname").unwrap());
        let hostname = datafusion::arrow::compute::cast(
            hostname,
            &datafusion::arrow::datatypes::DataType::Utf8,
        )
        .unwrap();
        for row in 0..batch.num_rows() {
            hosts.insert(hostname.as_string::<i32>().value(row).to_string());
        }
    }
    assert_eq!(hosts.len(), HOSTS as usize);
}

#[test]
fn meters_aggregates_count_and_select_all() {
    let f = fixture();
    let mut client = embedded().client();
    let rows_loaded = u64::from(METERS) * ROWS_PER_METER;
    for query_type in QueryType::all(QueryWorkload::Meters) {
        if matches!(
            query_type,
            QueryType::MetersAggregate {
                aggregate: queries::meters::Aggregate::First | queries::meters::Aggregate::Last,
                ..
            }
        ) {
            continue; // meters_first_and_last
        }
        let query = &queries::generate(&Dataset::Meters, query_type, 1, 1).unwrap()[0];
        let answer = client
            .run(query)
            .unwrap_or_else(|e| panic!("{}: {e}", query.sql));
        let expected = if query_type.streamed() {
            rows_loaded
        } else {
            1
        };
        assert_eq!(answer.rows, expected, "{}", query.sql);
    }
    let scalar_i64 = |sql: &str| {
        let b = batches(sql);
        b[0].column(0).as_primitive::<Int64Type>().value(0)
    };
    let scalar_f64 = |sql: &str| {
        let b = batches(sql);
        b[0].column(0).as_primitive::<Float64Type>().value(0)
    };
    assert_eq!(
        scalar_i64("SELECT count(*) FROM meters"),
        rows_loaded as i64
    );
    assert_eq!(
        scalar_i64("SELECT count(phase) FROM meters"),
        rows_loaded as i64
    );
    let voltage_sum: i64 = f.meters.iter().map(|r| r.voltage).sum();
    assert_eq!(scalar_i64("SELECT sum(voltage) FROM meters"), voltage_sum);
    let max_current = f
        .meters
        .iter()
        .map(MeterRow::current)
        .fold(f64::MIN, f64::max);
    assert_eq!(scalar_f64("SELECT max(current) FROM meters"), max_current);
    let min_phase = f
        .meters
        .iter()
        .map(MeterRow::phase)
        .fold(f64::MAX, f64::min);
    assert_eq!(scalar_f64("SELECT min(phase) FROM meters"), min_phase);
    let avg_current = f.meters.iter().map(MeterRow::current).sum::<f64>() / f.meters.len() as f64;
    let got = scalar_f64("SELECT avg(current) FROM meters");
    assert!((got - avg_current).abs() < 1e-9, "{got} vs {avg_current}");
}

#[test]
fn meters_first_and_last() {
    let f = fixture();
    let mut client = embedded().client();
    for aggregate in [
        queries::meters::Aggregate::First,
        queries::meters::Aggregate::Last,
    ] {
        for column in queries::meters::COLUMNS {
            let query_type = QueryType::MetersAggregate { aggregate, column };
            let query = &queries::generate(&Dataset::Meters, query_type, 1, 1).unwrap()[0];
            let answer = client
                .run(query)
                .unwrap_or_else(|e| panic!("{}: {e}", query.sql));
            assert_eq!(answer.rows, 1, "{}", query.sql);
        }
    }
    // Every meter has a row at the first and the last instant: first/last is one of them.
    let (first_ms, last_ms) = (
        f.meters.iter().map(|r| r.timestamp_ms).min().unwrap(),
        f.meters.iter().map(|r| r.timestamp_ms).max().unwrap(),
    );
    for (sql, at) in [
        ("SELECT first(voltage) FROM meters", first_ms),
        ("SELECT last(voltage) FROM meters", last_ms),
    ] {
        let b = batches(sql);
        let got = b[0].column(0).as_primitive::<Int64Type>();
        assert!(!got.is_null(0), "{sql}");
        let candidates: BTreeSet<i64> = f
            .meters
            .iter()
            .filter(|r| r.timestamp_ms == at)
            .map(|r| r.voltage)
            .collect();
        assert!(
            candidates.contains(&got.value(0)),
            "{sql}: {}",
            got.value(0)
        );
    }
}

#[test]
fn generators_are_deterministic_and_pinned() {
    let seed_001 = Dataset::CpuOnly {
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + 3 * 24 * NS_PER_HOUR,
        hosts: 4_000,
    };
    let first = |t: &str, seed: u64| {
        let query_type = QueryType::parse(t, QueryWorkload::CpuOnly).unwrap();
        queries::generate(&seed_001, query_type, 3, seed).unwrap()
    };
    for t in ["single-groupby-1-1-1", "double-groupby-all", "high-cpu-1"] {
        assert_eq!(first(t, 123), first(t, 123), "{t}");
        assert_ne!(first(t, 123), first(t, 124), "{t}");
        let three = first(t, 123);
        assert_ne!(three[0], three[1], "{t}: successive queries differ");
    }
    assert_eq!(
        first("single-groupby-1-1-1", 123)[0].sql,
        PINNED_SINGLE_GROUPBY
    );
    assert_eq!(first("double-groupby-1", 123)[0].sql, PINNED_DOUBLE_GROUPBY);
    assert_eq!(first("high-cpu-1", 123)[0].sql, PINNED_HIGH_CPU);
    assert_eq!(
        first("groupby-orderby-limit", 123)[0].sql,
        PINNED_ORDERBY_LIMIT
    );
    assert_eq!(first("lastpoint", 123)[0].sql, PINNED_LASTPOINT);
    let meters = queries::generate(&Dataset::Meters, QueryType::MetersCount, 1, 1).unwrap();
    assert_eq!(meters[0].sql, "SELECT count(*) FROM meters");
    assert!(QueryType::parse("avg-current", QueryWorkload::CpuOnly).is_err());
    assert!(QueryType::parse("lastpoint", QueryWorkload::Meters).is_err());
    assert!(
        QueryType::parse("nope", QueryWorkload::CpuOnly)
            .unwrap_err()
            .contains("groupby-orderby-limit")
    );
}

const PINNED_SINGLE_GROUPBY: &str = "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, \
    max(usage_user) AS max_usage_user FROM cpu WHERE (hostname = 'host_1436') AND \
    time >= '2019-04-01T00:37:06Z' AND time < '2019-04-01T01:37:06Z' GROUP BY minute ORDER BY minute";
const PINNED_DOUBLE_GROUPBY: &str = "SELECT time_bucket(INTERVAL '1 hour', time) AS hour, hostname, \
    avg(usage_user) AS mean_usage_user FROM cpu WHERE time >= '2019-04-02T13:22:04Z' AND \
    time < '2019-04-03T01:22:04Z' GROUP BY hour, hostname ORDER BY hour, hostname";
const PINNED_HIGH_CPU: &str = "SELECT * FROM cpu WHERE usage_user > 90.0 AND \
    time >= '2019-04-01T16:07:29Z' AND time < '2019-04-02T04:07:29Z' AND (hostname = 'host_2263')";
const PINNED_ORDERBY_LIMIT: &str = "SELECT time_bucket(INTERVAL '1 minute', time) AS minute, \
    max(usage_user) AS max_usage_user FROM cpu WHERE time < '2019-04-02T05:10:08Z' \
    GROUP BY minute ORDER BY minute DESC LIMIT 5";
const PINNED_LASTPOINT: &str =
    "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC";
