//! End-to-end: TSBS against `strata serve`, with TSBS's exact requests.
//!
//! `tsbs_load_influx`'s database requests are replayed as it sends them (method, target,
//! headers), on a fresh server and again once `benchmark` exists (drop, then create), and a
//! TSBS-shaped cpu-only data set (100 hosts `host_0`…, ten tags, ten integer fields, 10 s
//! apart, seeded) is written gzipped in 10,000-line batches as the loader does. Then every
//! request of `fixtures/tsbs_influx_queries.txt` is sent as `tsbs_run_queries_influx` sends
//! it (POST, empty body) and its whole answer is compared with InfluxDB 1.x's answer,
//! computed here from the generated rows.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{Map, Value, json};
use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, FIELDS, TAG_KEYS};

use common::{Response, Server, data_dir, gzip};

const NS: i64 = 1_000_000_000;
/// 2016-01-01T00:00:00Z, where the fixture's queries look.
const START_NS: i64 = 1_451_606_400 * NS;
const DAY: &str = "2016-01-01T";
const HOSTS: u32 = 100;
/// Eight hours: every query type of the fixture finds rows in at least one of its queries.
const HOURS: i64 = 8;
/// Lines per write, the loader's default `--batch-size`.
const BATCH: usize = 10_000;

/// Headers Go's `net/http` client adds to every request (the loader and the runner use it).
const GO_HEADERS: [(&str, &str); 2] = [
    ("User-Agent", "Go-http-client/1.1"),
    ("Accept-Encoding", "gzip"),
];

/// The generated data set: rows in time order, and each host's tag values.
struct Data {
    rows: Vec<Row>,
    tags: Vec<[String; 10]>,
}

struct Row {
    host: u32,
    time: i64,
    values: [i64; 10],
}

#[test]
fn tsbs_loader_and_runner_requests() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);

    // The loader on a fresh server: no databases, so no drop; then create.
    assert_eq!(list_databases(&server), Vec::<String>::new());
    create_database(&server);
    assert_eq!(list_databases(&server), ["benchmark"]);
    let (data, batches) = generate();
    let stale = &batches[0];
    assert_eq!(write(&server, stale).status, 204);

    // The loader again: `benchmark` exists, so drop it (its rows go with it), then create.
    assert_eq!(list_databases(&server), ["benchmark"]);
    let dropped = request(
        &server,
        "POST",
        "/query?q=drop+database+benchmark",
        &[("Content-Type", "text/plain")],
        b"",
    );
    assert_eq!(dropped.status, 200, "{}", dropped.text());
    assert_no_error(&dropped.json());
    assert_eq!(list_databases(&server), Vec::<String>::new());
    create_database(&server);
    assert_eq!(list_databases(&server), ["benchmark"]);
    let empty = run_query(
        &server,
        "/query?q=SELECT+count%28usage_user%29+from+cpu&db=benchmark",
    );
    assert_eq!(empty, json!({"results": [{"statement_id": 0}]}));

    for batch in &batches {
        let response = write(&server, batch);
        assert_eq!(response.status, 204, "{}", response.text());
    }

    let fixture = include_str!("fixtures/tsbs_influx_queries.txt");
    let mut checked = BTreeMap::<&str, usize>::new();
    let mut answered = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    let mut kind = None;
    for line in fixture.lines() {
        if let Some(name) = line.strip_prefix("# ") {
            if !name.contains(' ') && !name.contains(':') {
                kind = Some(name);
            }
            continue;
        }
        let kind = kind.expect("a query before its type line");
        let text = query_text(line);
        let actual = run_query(&server, line);
        // Through text, as the answer came: serde_json (without `float_roundtrip`) reads
        // some decimals one ulp off, so the reference must be read the same way.
        let expected: Value =
            serde_json::from_str(&expected(&data, kind, &text).to_string()).unwrap();
        *checked.entry(kind).or_default() += 1;
        if expected["results"][0].get("series").is_some() {
            answered.insert(kind);
        }
        if let Some(difference) = difference(&comparable(&actual), &comparable(&expected), "") {
            failures.push(format!(
                "{kind}: {text}\n  first difference: {difference}\n  expected: {}\n  actual: {}",
                short(&expected),
                short(&actual)
            ));
        }
    }
    assert_eq!(checked.len(), 15, "{checked:?}");
    assert!(checked.values().all(|n| *n == 3), "{checked:?}");
    // The data set covers every type: at least one of its queries finds rows.
    assert_eq!(answered.len(), 15, "types with rows: {answered:?}");
    assert!(
        failures.is_empty(),
        "{} of 45 answers differ from InfluxDB 1.x's:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(server.stop().success());
}

/// `request` with Go's default headers; a gzipped answer is decompressed, as Go does.
fn request(
    server: &Server,
    method: &str,
    target: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut headers = GO_HEADERS.to_vec();
    headers.extend_from_slice(extra);
    let mut response = server.request(method, target, &headers, body);
    if response.header("content-encoding") == Some("gzip") {
        let mut plain = Vec::new();
        flate2::read::GzDecoder::new(&response.body[..])
            .read_to_end(&mut plain)
            .unwrap();
        response.body = plain;
    }
    response
}

/// The loader's `listDatabases`: it reads `results[0].series[0].values` and panics if
/// `results` or `series` is empty.
fn list_databases(server: &Server) -> Vec<String> {
    let response = request(server, "GET", "/query?q=show%20databases", &[], b"");
    assert_eq!(response.status, 200, "{}", response.text());
    let body = response.json();
    assert_no_error(&body);
    let series = &body["results"][0]["series"][0];
    assert_eq!(series["name"], "databases", "{body}");
    assert_eq!(series["columns"], json!(["name"]), "{body}");
    match &series["values"] {
        Value::Null => Vec::new(),
        values => values
            .as_array()
            .unwrap()
            .iter()
            .map(|row| row[0].as_str().unwrap().to_owned())
            .collect(),
    }
}

fn create_database(server: &Server) {
    let target = "/query?consistency=all&q=CREATE+DATABASE+benchmark+WITH+REPLICATION+1";
    let response = request(server, "GET", target, &[], b"");
    assert_eq!(response.status, 200, "{}", response.text());
    assert_no_error(&response.json());
}

/// One batch as the loader's HTTP writer sends it.
fn write(server: &Server, gzipped: &[u8]) -> Response {
    let headers = [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")];
    request(
        server,
        "POST",
        "/write?consistency=all&db=benchmark",
        &headers,
        gzipped,
    )
}

/// One query as the runner sends it: POST, the fixture's target, no body, 200 expected.
fn run_query(server: &Server, target: &str) -> Value {
    let response = request(server, "POST", target, &[], b"");
    assert_eq!(response.status, 200, "{target}: {}", response.text());
    let body = response.json();
    assert_no_error(&body);
    let results = body["results"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(results.len(), 1, "{body}");
    body
}

fn assert_no_error(value: &Value) {
    match value {
        Value::Object(map) => {
            assert!(!map.contains_key("error"), "error in answer: {value}");
            map.values().for_each(assert_no_error);
        }
        Value::Array(items) => items.iter().for_each(assert_no_error),
        _ => {}
    }
}

/// The data set and its gzipped line-protocol batches.
fn generate() -> (Data, Vec<Vec<u8>>) {
    let config = CpuOnlyConfig {
        hosts: HOSTS,
        start_ns: START_NS,
        end_ns: START_NS + HOURS * 3600 * NS,
        interval_ns: 10 * NS,
        seed: 123,
    };
    let mut generator = CpuOnly::new(config);
    let tags = (0..HOSTS).map(|h| generator.host_tags(h).clone()).collect();
    let mut rows = Vec::new();
    let mut batches = Vec::new();
    let mut lines = Vec::new();
    let mut in_batch = 0;
    while let Some(row) = generator.next_row() {
        generator.write_line(&row, &mut lines);
        rows.push(Row {
            host: row.host,
            time: row.timestamp_ns,
            values: row.values,
        });
        in_batch += 1;
        if in_batch == BATCH {
            batches.push(gzip(&lines));
            lines.clear();
            in_batch = 0;
        }
    }
    if !lines.is_empty() {
        batches.push(gzip(&lines));
    }
    (Data { rows, tags }, batches)
}

/// InfluxDB 1.x's answer to `text` (a query of type `kind`) over `data`.
fn expected(data: &Data, kind: &str, text: &str) -> Value {
    let hosts = quoted_after_all(text, "hostname = '")
        .iter()
        .map(|h| h.strip_prefix("host_").unwrap().parse().unwrap())
        .collect::<Vec<u32>>();
    let lower = quoted_after_all(text, "time >= '")
        .first()
        .map(|t| parse_time(t));
    let upper = parse_time(
        quoted_after_all(text, "time < '")
            .first()
            .copied()
            .unwrap_or("2016-01-01T23:59:59Z"),
    );
    let in_range = |row: &Row| {
        lower.is_none_or(|lo| row.time >= lo)
            && row.time < upper
            && (hosts.is_empty() || hosts.contains(&row.host))
    };
    let series = if kind.starts_with("high-cpu") {
        let rows: Vec<&Row> = data
            .rows
            .iter()
            .filter(|r| in_range(r) && r.values[0] > 90)
            .collect();
        let columns = star_columns(&[]);
        let mut values: Vec<Value> = rows.iter().map(|r| star_row(data, r, &columns)).collect();
        // Points of one instant in the order of their string columns (tags here), which is
        // InfluxDB's merge order for equal times.
        values.sort_by_key(|v| {
            v.as_array().unwrap()[..=TAG_KEYS.len()]
                .iter()
                .map(|x| x.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        });
        if values.is_empty() {
            vec![]
        } else {
            vec![json!({"name": "cpu", "columns": columns, "values": values})]
        }
    } else if kind == "lastpoint" {
        let mut latest = BTreeMap::<&str, &Row>::new();
        for row in &data.rows {
            latest.insert(&data.tags[row.host as usize][0], row);
        }
        let columns = star_columns(&["hostname"]);
        // ORDER BY time DESC also puts the series in descending key order.
        latest
            .iter()
            .rev()
            .map(|(host, row)| {
                json!({"name": "cpu", "tags": {"hostname": host}, "columns": columns,
                       "values": [star_row(data, row, &columns)]})
            })
            .collect()
    } else {
        let select = &text["SELECT ".len()..text.find(" from cpu").unwrap()];
        let calls: Vec<(&str, usize)> = select
            .split(',')
            .map(|call| {
                let (function, field) = call.trim().trim_end_matches(')').split_once('(').unwrap();
                (function, FIELDS.iter().position(|f| *f == field).unwrap())
            })
            .collect();
        let every = if text.contains("time(1m)") {
            60 * NS
        } else {
            3600 * NS
        };
        let by_host = text.contains(",hostname");
        let limit = text.contains("limit 5").then_some(5);
        let mut groups = BTreeMap::<&str, Vec<&Row>>::new();
        for row in data.rows.iter().filter(|r| in_range(r)) {
            let key = if by_host {
                data.tags[row.host as usize][0].as_str()
            } else {
                ""
            };
            groups.entry(key).or_default().push(row);
        }
        let mut columns = vec!["time".to_owned()];
        for (i, (function, _)) in calls.iter().enumerate() {
            let before = calls[..i].iter().filter(|(f, _)| f == function).count();
            columns.push(if before == 0 {
                (*function).to_owned()
            } else {
                format!("{function}_{before}")
            });
        }
        groups
            .iter()
            .map(|(host, rows)| {
                // No lower bound: the windows start at the first point's.
                let first = lower.unwrap_or(rows[0].time);
                let mut values = Vec::new();
                let mut window = first - first.rem_euclid(every);
                while window < upper && limit.is_none_or(|n| values.len() < n) {
                    let inside: Vec<&&Row> = rows
                        .iter()
                        .filter(|r| r.time >= window && r.time < window + every)
                        .collect();
                    let mut row = vec![json!(format_time(window))];
                    for (function, field) in &calls {
                        let column = inside.iter().map(|r| r.values[*field]);
                        row.push(match (*function, inside.is_empty()) {
                            (_, true) => Value::Null,
                            ("max", false) => json!(column.max().unwrap()),
                            ("mean", false) => {
                                json!(column.sum::<i64>() as f64 / inside.len() as f64)
                            }
                            (other, false) => panic!("no reference for {other}"),
                        });
                    }
                    values.push(Value::Array(row));
                    window += every;
                }
                let mut series = json!({"name": "cpu", "columns": columns, "values": values});
                if by_host {
                    series["tags"] = json!({"hostname": host});
                }
                series
            })
            .collect()
    };
    if series.is_empty() {
        json!({"results": [{"statement_id": 0}]})
    } else {
        json!({"results": [{"statement_id": 0, "series": series}]})
    }
}

/// `SELECT *`'s columns: time, then tags (less `grouped`) and fields, sorted by name.
fn star_columns(grouped: &[&str]) -> Vec<String> {
    let mut names: Vec<&str> = TAG_KEYS
        .iter()
        .filter(|t| !grouped.contains(t))
        .chain(FIELDS.iter())
        .copied()
        .collect();
    names.sort_unstable();
    std::iter::once("time")
        .chain(names)
        .map(str::to_owned)
        .collect()
}

fn star_row(data: &Data, row: &Row, columns: &[String]) -> Value {
    let mut out = vec![json!(format_time(row.time))];
    for column in &columns[1..] {
        out.push(match TAG_KEYS.iter().position(|t| t == column) {
            Some(tag) => json!(data.tags[row.host as usize][tag]),
            None => json!(row.values[FIELDS.iter().position(|f| f == column).unwrap()]),
        });
    }
    Value::Array(out)
}

/// An answer made comparable: every number as a float (Go writes the float 51 as `51`,
/// so InfluxDB's JSON does not tell 51 from 51.0).
fn comparable(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), comparable(v)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// Where `actual` first differs from `expected`, as a JSON path.
fn difference(actual: &Value, expected: &Value, path: &str) -> Option<String> {
    match (actual, expected) {
        (Value::Array(a), Value::Array(e)) => {
            if let Some(d) = a
                .iter()
                .zip(e)
                .enumerate()
                .find_map(|(i, (a, e))| difference(a, e, &format!("{path}[{i}]")))
            {
                return Some(d);
            }
            (a.len() != e.len()).then(|| format!("{path}: {} items, expected {}", a.len(), e.len()))
        }
        (Value::Object(a), Value::Object(e)) => {
            if a.keys().ne(e.keys()) {
                return Some(format!(
                    "{path}: keys {:?}, expected {:?}",
                    a.keys().collect::<Vec<_>>(),
                    e.keys().collect::<Vec<_>>()
                ));
            }
            a.iter()
                .find_map(|(k, v)| difference(v, &e[k], &format!("{path}.{k}")))
        }
        (a, e) => (a != e).then(|| format!("{path}: {a}, expected {e}")),
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 600 {
        format!("{}…", &text[..600])
    } else {
        text
    }
}

/// The decoded `q` of a request target.
fn query_text(target: &str) -> String {
    let q = target
        .split(['?', '&'])
        .find_map(|p| p.strip_prefix("q="))
        .unwrap();
    let mut out = Vec::new();
    let bytes = q.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                out.push(u8::from_str_radix(&q[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

/// Every `'…'` string right after `marker` in `text`.
fn quoted_after_all<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    text.match_indices(marker)
        .map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            &rest[..rest.find('\'').unwrap()]
        })
        .collect()
}

/// `2016-01-01THH:MM:SSZ` (the fixture's day, where the data is) as nanoseconds.
fn parse_time(text: &str) -> i64 {
    let clock = text.strip_prefix(DAY).unwrap().strip_suffix('Z').unwrap();
    let seconds = clock
        .split(':')
        .fold(0, |sum, part| sum * 60 + part.parse::<i64>().unwrap());
    START_NS + seconds * NS
}

/// RFC 3339 as InfluxDB writes a whole second of that day: `2016-01-01T02:17:00Z`.
fn format_time(ns: i64) -> String {
    let seconds = (ns - START_NS) / NS;
    assert!((0..86_400).contains(&seconds) && ns % NS == 0, "{ns}");
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    format!("{DAY}{h:02}:{m:02}:{s:02}Z")
}
