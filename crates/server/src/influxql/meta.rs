//! InfluxQL's metadata and management statements, answered from the catalog and the series
//! indexes (no rows are read): `SHOW DATABASES | MEASUREMENTS | TAG KEYS | TAG VALUES |
//! FIELD KEYS | SERIES | RETENTION POLICIES | … CARDINALITY | DIAGNOSTICS | STATS | USERS`,
//! `CREATE | DROP DATABASE`, `DROP MEASUREMENT`, and the retention-policy statements.

use std::sync::Arc;

use std::time::Duration;

use smallvec::smallvec;
use strata_influxql::{
    BinaryOp, CardinalityKind, Expr, MeasurementName, MeasurementRef, RetentionPolicySpec,
    ShowCardinality, ShowFrom, ShowMeasurements, ShowTagValues, Statement, TagKeyFilter,
};

use strata_storage::catalog::TableSchema;
use strata_storage::model::FieldType;
use strata_storage::{Engine, Retention};

use super::result::{Series, Tags, Value};
use super::select::Regex;
use super::text::{drop_series, quote_ident};

/// The one retention policy every database has: Strata keeps one per database.
pub(crate) const DEFAULT_POLICY: &str = "autogen";

const HOUR_NS: i64 = 3_600_000_000_000;

/// Whether `database` exists (created, or holding a table).
pub(crate) fn database_exists(engine: &Engine, database: &str) -> bool {
    engine.catalog().has_database(database)
}

/// Runs a metadata or management statement; `None` if `statement` is a `SELECT`, a
/// `DELETE` or a `DROP SERIES` (which write to disk: see `delete.rs`).
pub(crate) fn execute(
    engine: &Engine,
    default_db: Option<&str>,
    statement: &Statement,
    started_ns: i64,
) -> Option<Result<Vec<Series>, String>> {
    Some(match statement {
        Statement::Select(_) | Statement::Delete(_) | Statement::DropSeries(_) => return None,
        Statement::ShowDatabases => {
            let mut series = Series::new("databases", &["name"]);
            series.values = engine
                .catalog()
                .databases()
                .into_iter()
                .map(|d| smallvec![Value::text(d)])
                .collect();
            Ok(vec![series])
        }
        Statement::ShowMeasurements(show) => show_measurements(engine, default_db, show),
        Statement::ShowTagKeys(show) => show_tag_keys(engine, default_db, show),
        Statement::ShowTagValues(show) => show_tag_values(engine, default_db, show),
        Statement::ShowFieldKeys(show) => show_field_keys(engine, default_db, show),
        Statement::ShowSeries(show) => show_series(engine, default_db, show),
        Statement::ShowRetentionPolicies { database } => {
            database_of(engine, database.as_deref(), default_db)
                .map(|db| vec![show_retention_policies(engine, &db)])
        }
        Statement::ShowCardinality(show) => show_cardinality(engine, default_db, show),
        Statement::ShowDiagnostics => Ok(diagnostics(started_ns, engine.now_ns())),
        Statement::ShowStats { .. } => Ok(stats(engine)),
        Statement::ShowUsers => Ok(vec![Series::new("", &["user", "admin"])]),
        Statement::CreateDatabase { name, policy } => create_database(engine, name, policy.as_ref()),
        Statement::DropDatabase { name } => engine
            .drop_database(name)
            .map(|_| Vec::new())
            .map_err(|e| e.to_string()),
        // Dropping a measurement that does not exist is not an error (InfluxDB's rule).
        Statement::DropMeasurement { name } => {
            database_of(engine, None, default_db).and_then(|db| {
                engine.drop_table(&db, name).map_err(|e| e.to_string())?;
                Ok(Vec::new())
            })
        }
        Statement::CreateRetentionPolicy { name, database, spec }
        | Statement::AlterRetentionPolicy { name, database, spec } => {
            retention_policy(engine, name, database, spec)
        }
        Statement::DropRetentionPolicy { name, database } => {
            database_of(engine, Some(database), None).and_then(|_| {
                Err(format!(
                    "retention policy {name} cannot be dropped: each Strata database keeps exactly one retention policy ({DEFAULT_POLICY})"
                ))
            })
        }
    })
}

/// The text InfluxDB quotes when a statement that writes comes by `GET`: the statement as
/// InfluxQL prints it, for the statements Strata carries out.
pub(crate) fn write_statement_text(statement: &Statement) -> Option<String> {
    Some(match statement {
        Statement::CreateDatabase { name, policy } => {
            let mut text = format!("CREATE DATABASE {}", quote_ident(name));
            if let Some(policy) = policy {
                text.push_str(" WITH");
                if let Some(d) = policy.duration_ns {
                    text.push_str(&format!(" DURATION {}", go_duration(d)));
                }
                if let Some(n) = policy.replication {
                    text.push_str(&format!(" REPLICATION {n}"));
                }
                if let Some(d) = policy.shard_duration_ns {
                    text.push_str(&format!(" SHARD DURATION {}", go_duration(d)));
                }
                if let Some(rp) = &policy.name {
                    text.push_str(&format!(" NAME {}", quote_ident(rp)));
                }
            }
            text
        }
        Statement::DropDatabase { name } => format!("DROP DATABASE {}", quote_ident(name)),
        Statement::DropMeasurement { name } => format!("DROP MEASUREMENT {}", quote_ident(name)),
        // influxd 1.6 gives no warning for `DELETE`.
        Statement::DropSeries(spec) => drop_series(spec),
        _ => return None,
    })
}

/// A duration as Go's `time.Duration` prints it: `24h0m0s`, `1m30s`, `0s`.
fn go_duration(nanos: i64) -> String {
    let seconds = nanos / 1_000_000_000;
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// The database a statement names (`ON db`, `db.` prefix) or the request's `db`.
fn database_of(
    engine: &Engine,
    on: Option<&str>,
    default_db: Option<&str>,
) -> Result<String, String> {
    let database = on
        .or(default_db)
        .filter(|d| !d.is_empty())
        .ok_or("database name required")?;
    if !database_exists(engine, database) {
        return Err(format!("database not found: {database}"));
    }
    Ok(database.to_owned())
}

fn create_database(
    engine: &Engine,
    name: &str,
    policy: Option<&RetentionPolicySpec>,
) -> Result<Vec<Series>, String> {
    let retention = match policy {
        Some(policy) => check_policy(policy)?,
        None => Retention::ServerDefault,
    };
    engine
        .create_database_with_retention(name, retention)
        .map_err(|e| e.to_string())?;
    Ok(Vec::new())
}

/// What Strata can honour of a retention policy: one policy per database (`autogen`),
/// replicated once; its duration becomes the database's retention (`INF` or 0: forever;
/// otherwise at least an hour, InfluxDB's minimum). Returns the retention to set
/// ([`Retention::ServerDefault`] when no duration is given).
fn check_policy(spec: &RetentionPolicySpec) -> Result<Retention, String> {
    if spec.replication.is_some_and(|n| n != 1) {
        return Err("replication factor must be 1: Strata runs on one node".into());
    }
    if spec.name.as_deref().is_some_and(|n| n != DEFAULT_POLICY) {
        return Err(format!(
            "retention policy must be named {DEFAULT_POLICY}: Strata keeps one policy per database"
        ));
    }
    match spec.duration_ns {
        None => Ok(Retention::ServerDefault),
        Some(0) => Ok(Retention::Forever),
        Some(ns) if ns < HOUR_NS => Err("retention policy duration must be at least 1h0m0s".into()),
        Some(ns) => Ok(Retention::Keep(Duration::from_nanos(ns.unsigned_abs()))),
    }
}

fn retention_policy(
    engine: &Engine,
    name: &str,
    database: &str,
    spec: &RetentionPolicySpec,
) -> Result<Vec<Series>, String> {
    database_of(engine, Some(database), None)?;
    if name != DEFAULT_POLICY {
        return Err(format!(
            "retention policy must be named {DEFAULT_POLICY}: Strata keeps exactly one policy per database"
        ));
    }
    let retention = check_policy(spec)?;
    // A policy statement without a duration (only REPLICATION 1, DEFAULT or a shard
    // duration) leaves the retention as it is.
    if spec.duration_ns.is_some() {
        engine
            .set_retention(database, retention)
            .map_err(|e| e.to_string())?;
    }
    Ok(Vec::new())
}

/// `SHOW RETENTION POLICIES`: the one policy, `autogen`, with the database's retention as
/// its duration (`0s`: forever) and the shard group duration InfluxDB would pick for it
/// (Strata's partitions are the engine's; the column is informational).
fn show_retention_policies(engine: &Engine, database: &str) -> Series {
    let kept = engine
        .retention(database)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let shard_group = match kept {
        0 => 168 * HOUR_NS,
        ns if ns < 2 * 24 * HOUR_NS => HOUR_NS,
        ns if ns <= 180 * 24 * HOUR_NS => 24 * HOUR_NS,
        _ => 168 * HOUR_NS,
    };
    let mut series = Series::new(
        "",
        &[
            "name",
            "duration",
            "shardGroupDuration",
            "replicaN",
            "default",
        ],
    );
    series.values = vec![smallvec![
        Value::text(DEFAULT_POLICY),
        Value::text(go_duration(kept)),
        Value::text(go_duration(shard_group)),
        Value::Integer(1),
        Value::Boolean(true),
    ]];
    series
}

/// The measurements `sources` name in `database` (all when empty), sorted.
pub(super) fn measurements(
    engine: &Engine,
    database: &str,
    sources: &[MeasurementRef],
) -> Result<Vec<Arc<TableSchema>>, String> {
    let tables = engine.catalog().tables(database);
    if sources.is_empty() {
        return Ok(tables);
    }
    let mut out = Vec::new();
    for source in sources {
        match &source.name {
            MeasurementName::Name(name) => {
                out.extend(tables.iter().filter(|t| t.name == *name).cloned())
            }
            MeasurementName::Regex(re) => {
                let re = Regex::new(re)?;
                out.extend(tables.iter().filter(|t| re.is_match(&t.name)).cloned());
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.id == b.id);
    Ok(out)
}

fn page<T>(items: Vec<T>, limit: Option<u64>, offset: Option<u64>) -> Vec<T> {
    let offset = offset.unwrap_or(0) as usize;
    let limit = limit.map_or(usize::MAX, |l| l as usize);
    items.into_iter().skip(offset).take(limit).collect()
}

/// The series (tag sets) of `table` that satisfy a `WHERE` on tags (time terms ignored,
/// as InfluxDB 1.x does in metadata statements).
fn matching_series(
    engine: &Engine,
    table: &TableSchema,
    condition: Option<&Expr>,
) -> Result<Vec<Vec<(String, String)>>, String> {
    let all = engine.series_tags(table.id);
    let Some(condition) = condition else {
        return Ok(all);
    };
    let mut out = Vec::new();
    for tags in all {
        if tag_condition(condition, &tags)?.unwrap_or(true) {
            out.push(tags);
        }
    }
    Ok(out)
}

/// Evaluates a tag condition on one series; `None` for terms that do not concern tags
/// (time), which do not filter.
fn tag_condition(expr: &Expr, tags: &[(String, String)]) -> Result<Option<bool>, String> {
    let tag = |name: &str| {
        tags.iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    Ok(match expr {
        Expr::Paren(inner) => tag_condition(inner, tags)?,
        Expr::Binary {
            op: BinaryOp::And,
            lhs,
            rhs,
        } => match (tag_condition(lhs, tags)?, tag_condition(rhs, tags)?) {
            (Some(a), Some(b)) => Some(a && b),
            (a, b) => a.or(b),
        },
        Expr::Binary {
            op: BinaryOp::Or,
            lhs,
            rhs,
        } => match (tag_condition(lhs, tags)?, tag_condition(rhs, tags)?) {
            (Some(a), Some(b)) => Some(a || b),
            (a, b) => a.or(b),
        },
        Expr::Binary { op, lhs, rhs } => {
            let (name, value) = match (lhs.as_ref(), rhs.as_ref()) {
                (Expr::VarRef { name, .. }, value) | (value, Expr::VarRef { name, .. }) => {
                    (name, value)
                }
                _ => return Err("invalid tag condition".into()),
            };
            if name.eq_ignore_ascii_case("time") {
                return Ok(None);
            }
            let actual = tag(name);
            match (op, value) {
                (BinaryOp::Eq, Expr::String(v)) => Some(actual == v),
                (BinaryOp::NotEq, Expr::String(v)) => Some(actual != v),
                (BinaryOp::RegexMatch, Expr::Regex(re)) => Some(Regex::new(re)?.is_match(actual)),
                (BinaryOp::RegexNotMatch, Expr::Regex(re)) => {
                    Some(!Regex::new(re)?.is_match(actual))
                }
                _ => return Err(format!("invalid tag condition on {name}")),
            }
        }
        _ => return Err("invalid tag condition".into()),
    })
}

fn show_measurements(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowMeasurements,
) -> Result<Vec<Series>, String> {
    // A database that does not exist has no measurements (InfluxDB answers no series).
    let database = show
        .database
        .as_deref()
        .or(default_db)
        .filter(|d| !d.is_empty())
        .ok_or("database name required")?;
    let mut names = Vec::new();
    for table in engine.catalog().tables(database) {
        let keep = match &show.with {
            None => true,
            Some(MeasurementName::Name(n)) => table.name == *n,
            Some(MeasurementName::Regex(re)) => Regex::new(re)?.is_match(&table.name),
        };
        if keep
            && (show.condition.is_none()
                || !matching_series(engine, &table, show.condition.as_ref())?.is_empty())
        {
            names.push(smallvec![Value::text(table.name.clone())]);
        }
    }
    let names = page(names, show.limit, show.offset);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut series = Series::new("measurements", &["name"]);
    series.values = names;
    Ok(vec![series])
}

fn show_tag_keys(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowFrom,
) -> Result<Vec<Series>, String> {
    let database = database_of(engine, show.database.as_deref(), default_db)?;
    let mut out = Vec::new();
    for table in measurements(engine, &database, &show.sources)? {
        let keys: Vec<String> = if show.condition.is_some() {
            let mut keys: Vec<String> = matching_series(engine, &table, show.condition.as_ref())?
                .into_iter()
                .flat_map(|tags| tags.into_iter().map(|(k, _)| k))
                .collect();
            keys.sort();
            keys.dedup();
            keys
        } else {
            engine.tag_keys(table.id)
        };
        let keys = page(keys, show.limit, show.offset);
        if keys.is_empty() {
            continue;
        }
        let mut series = Series::new(&table.name, &["tagKey"]);
        series.values = keys
            .into_iter()
            .map(|k| smallvec![Value::text(k)])
            .collect();
        out.push(series);
    }
    Ok(out)
}

fn key_matches(filter: &TagKeyFilter, key: &str) -> Result<bool, String> {
    Ok(match filter {
        TagKeyFilter::Eq(k) => key == k,
        TagKeyFilter::NotEq(k) => key != k,
        TagKeyFilter::In(keys) => keys.iter().any(|k| k == key),
        TagKeyFilter::Regex(re) => Regex::new(re)?.is_match(key),
        TagKeyFilter::NotRegex(re) => !Regex::new(re)?.is_match(key),
    })
}

/// `(key, value)` pairs of `table` for the keys `filter` selects, sorted and distinct.
fn tag_pairs(
    engine: &Engine,
    table: &TableSchema,
    filter: &TagKeyFilter,
    condition: Option<&Expr>,
) -> Result<Vec<(String, String)>, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if condition.is_some() {
        for tags in matching_series(engine, table, condition)? {
            for (k, v) in tags {
                if key_matches(filter, &k)? {
                    pairs.push((k, v));
                }
            }
        }
    } else {
        for key in engine.tag_keys(table.id) {
            if key_matches(filter, &key)? {
                for value in engine.tag_values(table.id, &key) {
                    pairs.push((key.clone(), value));
                }
            }
        }
    }
    pairs.sort();
    pairs.dedup();
    Ok(pairs)
}

fn show_tag_values(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowTagValues,
) -> Result<Vec<Series>, String> {
    let from = &show.from;
    let database = database_of(engine, from.database.as_deref(), default_db)?;
    let mut out = Vec::new();
    for table in measurements(engine, &database, &from.sources)? {
        let pairs = tag_pairs(engine, &table, &show.key, from.condition.as_ref())?;
        let pairs = page(pairs, from.limit, from.offset);
        if pairs.is_empty() {
            continue;
        }
        let mut series = Series::new(&table.name, &["key", "value"]);
        series.values = pairs
            .into_iter()
            .map(|(k, v)| smallvec![Value::text(k), Value::text(v)])
            .collect();
        out.push(series);
    }
    Ok(out)
}

fn field_type_name(field_type: FieldType) -> &'static str {
    match field_type {
        FieldType::Float => "float",
        FieldType::Integer => "integer",
        FieldType::Unsigned => "unsigned",
        FieldType::Boolean => "boolean",
        FieldType::String => "string",
    }
}

fn show_field_keys(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowFrom,
) -> Result<Vec<Series>, String> {
    let database = database_of(engine, show.database.as_deref(), default_db)?;
    let mut out = Vec::new();
    for table in measurements(engine, &database, &show.sources)? {
        let mut fields: Vec<_> = table.fields.iter().collect();
        fields.sort_by(|a, b| a.name.cmp(&b.name));
        let fields = page(fields, show.limit, show.offset);
        if fields.is_empty() {
            continue;
        }
        let mut series = Series::new(&table.name, &["fieldKey", "fieldType"]);
        series.values = fields
            .into_iter()
            .map(|f| {
                smallvec![
                    Value::text(f.name.clone()),
                    Value::text(field_type_name(f.field_type)),
                ]
            })
            .collect();
        out.push(series);
    }
    Ok(out)
}

/// A series key as InfluxDB prints it: `cpu,host=a,region=x`, with line protocol's escapes.
fn series_key(measurement: &str, tags: &[(String, String)]) -> String {
    let escape = |s: &str, extra: bool| {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if c == ',' || c == ' ' || (extra && c == '=') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    let mut key = escape(measurement, false);
    for (k, v) in tags {
        key.push(',');
        key.push_str(&escape(k, true));
        key.push('=');
        key.push_str(&escape(v, true));
    }
    key
}

fn show_series(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowFrom,
) -> Result<Vec<Series>, String> {
    let database = database_of(engine, show.database.as_deref(), default_db)?;
    let mut keys = Vec::new();
    for table in measurements(engine, &database, &show.sources)? {
        for tags in matching_series(engine, &table, show.condition.as_ref())? {
            keys.push(series_key(&table.name, &tags));
        }
    }
    keys.sort();
    let keys = page(keys, show.limit, show.offset);
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut series = Series::new("", &["key"]);
    series.values = keys
        .into_iter()
        .map(|k| smallvec![Value::text(k)])
        .collect();
    Ok(vec![series])
}

fn show_cardinality(
    engine: &Engine,
    default_db: Option<&str>,
    show: &ShowCardinality,
) -> Result<Vec<Series>, String> {
    let from = &show.from;
    let database = database_of(engine, from.database.as_deref(), default_db)?;
    let tables = measurements(engine, &database, &from.sources)?;
    let count_series = |n: usize, name: &str| {
        let mut series = Series::new(name, &["count"]);
        series.values = vec![smallvec![Value::Integer(n as i64)]];
        series
    };
    // Without EXACT, InfluxDB answers one estimate for the whole database; Strata's
    // counts are exact, under InfluxDB's column name.
    if !show.exact
        && matches!(
            show.kind,
            CardinalityKind::Measurement | CardinalityKind::Series
        )
    {
        let mut n = 0;
        for table in &tables {
            let series = matching_series(engine, table, from.condition.as_ref())?.len();
            n += match show.kind {
                CardinalityKind::Measurement => usize::from(series > 0 || from.condition.is_none()),
                _ => series,
            };
        }
        let mut series = Series::new("", &["cardinality estimation"]);
        series.values = vec![smallvec![Value::Integer(n as i64)]];
        return Ok(vec![series]);
    }
    Ok(match show.kind {
        CardinalityKind::Measurement => {
            let mut n = 0;
            for table in &tables {
                if from.condition.is_none()
                    || !matching_series(engine, table, from.condition.as_ref())?.is_empty()
                {
                    n += 1;
                }
            }
            vec![count_series(n, "")]
        }
        kind => {
            let mut out = Vec::new();
            for table in &tables {
                let n = match kind {
                    CardinalityKind::Series => {
                        matching_series(engine, table, from.condition.as_ref())?.len()
                    }
                    CardinalityKind::TagKey => engine.tag_keys(table.id).len(),
                    CardinalityKind::FieldKey => table.fields.len(),
                    _ => {
                        let filter = show
                            .key
                            .clone()
                            .unwrap_or(TagKeyFilter::Regex(String::new()));
                        let mut values: Vec<String> =
                            tag_pairs(engine, table, &filter, from.condition.as_ref())?
                                .into_iter()
                                .map(|(_, v)| v)
                                .collect();
                        values.sort();
                        values.dedup();
                        values.len()
                    }
                };
                if n > 0 {
                    out.push(count_series(n, &table.name));
                }
            }
            out
        }
    })
}

fn diagnostics(started_ns: i64, now_ns: i64) -> Vec<Series> {
    let mut build = Series::new("build", &["Branch", "Build Time", "Commit", "Version"]);
    build.values = vec![smallvec![
        Value::text(String::new()),
        Value::text(String::new()),
        Value::text(String::new()),
        Value::text(crate::INFLUXDB_VERSION),
    ]];
    let mut system = Series::new("system", &["PID", "currentTime", "started", "uptime"]);
    let uptime = Duration::from_nanos(now_ns.saturating_sub(started_ns).max(0) as u64);
    system.values = vec![smallvec![
        Value::Integer(i64::from(std::process::id())),
        Value::Time(now_ns),
        Value::Time(started_ns),
        Value::text(humantime::format_duration(Duration::from_secs(uptime.as_secs())).to_string()),
    ]];
    vec![build, system]
}

fn stats(engine: &Engine) -> Vec<Series> {
    let mut out = Vec::new();
    for database in engine.catalog().databases() {
        let tables = engine.catalog().tables(&database);
        let series: usize = tables.iter().map(|t| engine.series_tags(t.id).len()).sum();
        let mut s = Series::new("database", &["numMeasurements", "numSeries"]);
        s.tags = Tags::from_pairs([("database", database)]);
        s.values = vec![smallvec![
            Value::Integer(tables.len() as i64),
            Value::Integer(series as i64),
        ]];
        out.push(s);
    }
    out
}
