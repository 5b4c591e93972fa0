//! Helpers shared by the query tests: a seeded generator, a seeded data set written to a
//! real engine (memtable, several parts, several shards) with its last-write-wins copy as
//! a DataFusion `MemTable`, and result comparison.

#![allow(dead_code)] // each test file uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, RecordBatch,
    StringArray, TimestampNanosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use strata_lineproto::Precision;
use strata_query::QueryEngine;
use strata_storage::{Engine, EngineOptions, ManualClock, WalSync};

pub const HOUR_NS: i64 = 3_600_000_000_000;
/// 2023-11-14T22:00:00Z.
pub const START_NS: i64 = 1_700_000_000_000_000_000 / HOUR_NS * HOUR_NS;
/// Rows span this many hours (one partition per hour).
pub const HOURS: i64 = 4;
pub const DB: &str = "db";
pub const TABLE: &str = "cpu";

/// SplitMix64: tiny, seeded, good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A series: host, region, and dc (absent for some series: a NULL tag in SQL).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Series {
    pub host: String,
    pub region: String,
    pub dc: Option<String>,
}

/// One stored value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    I(i64),
    F(f64),
    B(bool),
    S(String),
}

/// (series index, time) → field name → value, after last-write-wins field by field.
pub type Rows = BTreeMap<(usize, i64), Fields>;

/// Field name → value of one row.
pub type Fields = BTreeMap<&'static str, Val>;

/// What was written: the series and the rows the engine must hold.
pub struct Data {
    pub series: Vec<Series>,
    pub rows: Rows,
}

pub const FIELDS: [&str; 4] = ["i", "f", "b", "s"];
pub const HOSTS: [&str; 10] = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9"];
pub const REGIONS: [&str; 3] = ["r0", "r1", "r2"];
pub const DCS: [&str; 3] = ["d0", "d1", "d2"];
pub const STRINGS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "eps"];

/// An engine over a temporary directory: 3 shards, hour partitions, no background threads.
pub fn open_engine(dir: &std::path::Path) -> Arc<Engine> {
    let options = EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 3,
        wal_sync: WalSync::None,
        partition_duration: Duration::from_secs(3600),
        background: false,
        clock: Arc::new(ManualClock::new(START_NS + HOURS * HOUR_NS)),
        ..EngineOptions::default()
    };
    Arc::new(Engine::open(options).unwrap().0)
}

/// Writes a seeded data set in `batches` writes with a flush after each but the last (so
/// rows lie in several parts per shard and in the memtable); rewrites some (series, time)
/// with other fields. Returns what the engine must hold.
pub fn write_data(engine: &Engine, seed: u64, series_count: usize, batches: usize) -> Data {
    let mut rng = Rng::new(seed);
    let mut series: Vec<Series> = Vec::new();
    while series.len() < series_count {
        let s = Series {
            host: rng.pick(&HOSTS).to_string(),
            region: rng.pick(&REGIONS).to_string(),
            dc: (!rng.chance(25)).then(|| rng.pick(&DCS).to_string()),
        };
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let mut rows = Rows::new();
    let mut written: Vec<(usize, i64)> = Vec::new();
    for batch in 0..batches {
        let mut body = String::new();
        for _ in 0..400 {
            let (index, time) = if !written.is_empty() && rng.chance(10) {
                *rng.pick(&written) // a duplicate: last write wins, field by field
            } else {
                let index = rng.below(series.len() as u64) as usize;
                // Whole seconds, some with milliseconds, over HOURS hours.
                let mut time = START_NS + rng.below((HOURS * 3600) as u64) as i64 * 1_000_000_000;
                if rng.chance(30) {
                    time += rng.below(1000) as i64 * 1_000_000;
                }
                (index, time)
            };
            let mut fields: Vec<(&'static str, Val)> = Vec::new();
            for name in FIELDS {
                if rng.chance(65) {
                    fields.push((name, random_value(&mut rng, name)));
                }
            }
            if fields.is_empty() {
                fields.push(("i", random_value(&mut rng, "i")));
            }
            let s = &series[index];
            let mut line = format!("{TABLE},host={},region={}", s.host, s.region);
            if let Some(dc) = &s.dc {
                line.push_str(&format!(",dc={dc}"));
            }
            let field_text: Vec<String> = fields
                .iter()
                .map(|(name, v)| match v {
                    Val::I(v) => format!("{name}={v}i"),
                    Val::F(v) => format!("{name}={v:?}"),
                    Val::B(v) => format!("{name}={v}"),
                    Val::S(v) => format!("{name}=\"{v}\""),
                })
                .collect();
            body.push_str(&format!("{line} {} {time}\n", field_text.join(",")));
            rows.entry((index, time)).or_default().extend(fields);
            written.push((index, time));
        }
        let report = engine
            .write_lines(DB, body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        if batch + 1 < batches {
            engine.flush().unwrap();
        }
    }
    Data { series, rows }
}

fn random_value(rng: &mut Rng, field: &str) -> Val {
    match field {
        "i" => Val::I(rng.below(2001) as i64 - 1000),
        // Two decimals, some negative, some large: sums are order-dependent in f64.
        "f" => Val::F((rng.below(2_000_001) as f64 - 1_000_000.0) / 100.0),
        "b" => Val::B(rng.chance(50)),
        _ => Val::S(rng.pick(&STRINGS).to_string()),
    }
}

/// The rows as a `MemTable` with the engine's Arrow schema for the table, in `parts`
/// partitions (rows dealt round-robin: a different order than the engine's).
pub fn mem_table(engine: &Engine, data: &Data, parts: usize) -> MemTable {
    let table = engine.table(DB, TABLE).unwrap();
    let schema = strata_storage::arrow::table_schema(&table, None);
    let mut partitions = Vec::new();
    for part in 0..parts {
        let rows: Vec<(&(usize, i64), &Fields)> = data
            .rows
            .iter()
            .enumerate()
            .filter(|(i, _)| i % parts == part)
            .map(|(_, r)| r)
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::new();
        for field in schema.fields() {
            let name = field.name().as_str();
            let column: ArrayRef =
                match name {
                    "time" => Arc::new(TimestampNanosecondArray::from_iter_values(
                        rows.iter().map(|((_, t), _)| *t),
                    )),
                    "host" | "region" | "dc" => {
                        let values: Vec<Option<&str>> = rows
                            .iter()
                            .map(|((s, _), _)| {
                                let s = &data.series[*s];
                                match name {
                                    "host" => Some(s.host.as_str()),
                                    "region" => Some(s.region.as_str()),
                                    _ => s.dc.as_deref(),
                                }
                            })
                            .collect();
                        Arc::new(values.into_iter().collect::<DictionaryArray<Int32Type>>())
                    }
                    _ => {
                        let get = |fields: &Fields| fields.get(name).cloned();
                        match field.data_type() {
                            DataType::Int64 => Arc::new(Int64Array::from_iter(rows.iter().map(
                                |(_, f)| match get(f) {
                                    Some(Val::I(v)) => Some(v),
                                    _ => None,
                                },
                            ))),
                            DataType::Float64 => Arc::new(Float64Array::from_iter(
                                rows.iter().map(|(_, f)| match get(f) {
                                    Some(Val::F(v)) => Some(v),
                                    _ => None,
                                }),
                            )),
                            DataType::Boolean => Arc::new(BooleanArray::from_iter(
                                rows.iter().map(|(_, f)| match get(f) {
                                    Some(Val::B(v)) => Some(v),
                                    _ => None,
                                }),
                            )),
                            DataType::Utf8 => Arc::new(StringArray::from_iter(rows.iter().map(
                                |(_, f)| match get(f) {
                                    Some(Val::S(v)) => Some(v),
                                    _ => None,
                                },
                            ))),
                            other => panic!("unexpected column {name}: {other}"),
                        }
                    }
                };
            columns.push(column);
        }
        partitions.push(vec![
            RecordBatch::try_new(Arc::clone(&schema), columns).unwrap(),
        ]);
    }
    MemTable::try_new(schema, partitions).unwrap()
}

/// `ns` as an RFC 3339 UTC timestamp with nanoseconds.
pub fn rfc3339(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let nanos = ns.rem_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{nanos:09}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// One result cell: exact text, or a float compared with a relative tolerance.
#[derive(Debug, Clone)]
pub enum Cell {
    Exact(String),
    Approx(f64),
}

/// Every row of `batches` as cells; `approx(column name)` says which Float64 columns are
/// compared with a tolerance.
pub fn to_rows(batches: &[RecordBatch], approx: &dyn Fn(&str) -> bool) -> Vec<Vec<Cell>> {
    let mut out = Vec::new();
    let options = FormatOptions::default().with_null("NULL");
    for batch in batches {
        let formatters: Vec<ArrayFormatter<'_>> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            let mut cells = Vec::new();
            for (i, field) in batch.schema().fields().iter().enumerate() {
                let column = batch.column(i);
                if approx(field.name())
                    && column.data_type() == &DataType::Float64
                    && column.is_valid(row)
                {
                    let floats = column.as_any().downcast_ref::<Float64Array>().unwrap();
                    cells.push(Cell::Approx(floats.value(row)));
                } else {
                    cells.push(Cell::Exact(formatters[i].value(row).to_string()));
                }
            }
            out.push(cells);
        }
    }
    out
}

/// Sorts rows by their text (approximate cells by value).
pub fn sort_rows(rows: &mut [Vec<Cell>]) {
    rows.sort_by(|a, b| {
        for (x, y) in a.iter().zip(b) {
            let o = match (x, y) {
                (Cell::Exact(x), Cell::Exact(y)) => x.cmp(y),
                (Cell::Approx(x), Cell::Approx(y)) => x.total_cmp(y),
                (Cell::Exact(_), Cell::Approx(_)) => std::cmp::Ordering::Less,
                (Cell::Approx(_), Cell::Exact(_)) => std::cmp::Ordering::Greater,
            };
            if o.is_ne() {
                return o;
            }
        }
        a.len().cmp(&b.len())
    });
}

/// The first difference between two row lists, if any. Approximate cells match within a
/// relative 1e-9 (absolute 1e-9 near zero).
pub fn difference(expected: &[Vec<Cell>], actual: &[Vec<Cell>]) -> Option<String> {
    if expected.len() != actual.len() {
        return Some(format!(
            "{} rows expected, {} returned",
            expected.len(),
            actual.len()
        ));
    }
    for (n, (e, a)) in expected.iter().zip(actual).enumerate() {
        let same = e.len() == a.len()
            && e.iter().zip(a).all(|(x, y)| match (x, y) {
                (Cell::Exact(x), Cell::Exact(y)) => x == y,
                (Cell::Approx(x), Cell::Approx(y)) => {
                    x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
                }
                _ => false,
            });
        if !same {
            return Some(format!("row {n}: expected {e:?}, got {a:?}"));
        }
    }
    None
}

/// The plan of kind `kind` (`physical_plan`, `Plan with Metrics`, …) in `EXPLAIN`'s answer.
pub fn plan_text(batches: &[RecordBatch], kind: &str) -> String {
    for batch in batches {
        let kinds = batch
            .column(0)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        let plans = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        for row in 0..batch.num_rows() {
            if kinds.value(row) == kind {
                return plans.value(row).to_string();
            }
        }
    }
    panic!("no {kind} in {batches:?}");
}

/// The physical plan of `statement`, from `EXPLAIN`.
pub async fn physical_plan(sql: &QueryEngine, statement: &str) -> String {
    let batches = sql.sql(DB, &format!("EXPLAIN {statement}")).await.unwrap();
    plan_text(&batches, "physical_plan")
}

/// Metric `metric` of the plan line of `operator`, from `EXPLAIN ANALYZE` (summed over
/// the operator's partitions, as DataFusion prints it).
pub async fn analyzed_metric(
    sql: &QueryEngine,
    statement: &str,
    operator: &str,
    metric: &str,
) -> usize {
    let batches = sql
        .sql(DB, &format!("EXPLAIN ANALYZE {statement}"))
        .await
        .unwrap();
    let plan = plan_text(&batches, "Plan with Metrics");
    let line = plan
        .lines()
        .find(|l| l.contains(operator))
        .unwrap_or_else(|| panic!("no {operator} in {plan}"));
    let key = format!("{metric}=");
    let at = line
        .find(&key)
        .unwrap_or_else(|| panic!("no {metric} in {line}"));
    line[at + key.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}
