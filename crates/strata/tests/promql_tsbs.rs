//! TSBS's PromQL (the requests `tsbs_run_queries_victoriametrics` sends, captured in
//! `fixtures/tsbs_victoriametrics_queries.txt`) against Strata and against the real
//! Prometheus 2.42 holding the same data; every answer must agree. Strata takes the data as
//! TSBS's loader sends it, line protocol (`cpu,hostname=… usage_user=…`), and answers for
//! the metrics `cpu_usage_user`, … that VictoriaMetrics would make of it; Prometheus gets
//! those metrics as TSDB blocks. The runner names no database: Strata's default,
//! `prometheus`, holds the data.

#![allow(clippy::unwrap_used)]

mod common;
mod prom_oracle;
mod sql_common;

use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, FIELDS, TAG_KEYS};

use common::{Server, data_dir};
use prom_oracle::{Prometheus, cut, get, same};
use sql_common::encode;

const NS: i64 = 1_000_000_000;
/// 2016-01-01T00:00:00Z, where the fixture's queries look.
const START_NS: i64 = 1_451_606_400 * NS;

#[test]
fn tsbs_promql_queries_match_prometheus() {
    // A day of 100 hosts (the queries' hosts and span), every 5 minutes: 288,000 samples.
    let config = CpuOnlyConfig {
        hosts: 100,
        start_ns: START_NS,
        end_ns: START_NS + 24 * 3600 * NS,
        interval_ns: 300 * NS,
        seed: 123,
    };
    let mut generator = CpuOnly::new(config.clone());
    let mut lines = Vec::new();
    let mut openmetrics = String::new();
    while let Some(row) = generator.next_row() {
        generator.write_line(&row, &mut lines);
        lines.push(b'\n');
        let tags: Vec<String> = TAG_KEYS
            .iter()
            .zip(generator.host_tags(row.host))
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect();
        let tags = tags.join(",");
        let ms = row.timestamp_ns / 1_000_000;
        for (field, value) in FIELDS.iter().zip(row.values) {
            openmetrics.push_str(&format!(
                "cpu_{field}{{{tags}}} {value} {}.{:03}\n",
                ms / 1000,
                ms % 1000
            ));
        }
    }
    openmetrics.push_str("# EOF\n");
    let work = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::with_data(work.path(), &openmetrics);

    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    for chunk in lines
        .split_inclusive(|b| *b == b'\n')
        .collect::<Vec<_>>()
        .chunks(10_000)
    {
        let body: Vec<u8> = chunk.concat();
        let response = server.request("POST", "/write?db=prometheus", &[], &body);
        assert_eq!(response.status, 204, "{}", response.text());
    }

    let fixture = include_str!("fixtures/tsbs_victoriametrics_queries.txt");
    let mut kinds = Vec::new();
    let mut with_series = 0;
    let mut failures = Vec::new();
    for line in fixture.lines() {
        if let Some(name) = line.strip_prefix("# ") {
            if !name.contains(' ') && !name.contains(':') {
                kinds.push(name);
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let expected = get(prometheus.web, line);
        let actual = get(server.http, line);
        assert_eq!(actual.0, 200, "{line}: {}", cut(&actual.1.to_string()));
        let expected = if expected.0 == 422 {
            // Prometheus refuses a function over several metrics: with the names removed,
            // the series collide. Strata keeps the names (as VictoriaMetrics does), so its
            // answer must be Prometheus' answer for each metric alone, named.
            assert!(
                expected.1["error"]
                    .as_str()
                    .unwrap()
                    .contains("same labelset"),
                "{line}: {}",
                expected.1
            );
            metric_by_metric(&prometheus, line)
        } else {
            expected
        };
        assert_eq!(expected.0, 200, "Prometheus: {line}: {}", expected.1);
        if expected.1["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            with_series += 1;
        }
        if let Err(why) = same(&expected, &actual) {
            failures.push(format!(
                "{line}\n  {why}\n  prometheus: {}\n  strata:     {}",
                cut(&expected.1.to_string()),
                cut(&actual.1.to_string())
            ));
        }
    }
    assert_eq!(kinds.len(), 11, "{kinds:?}");
    assert_eq!(with_series, 33, "every query should find series");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Prometheus' answer to a TSBS query over `{__name__=~'cpu_(a|b|…)', …}`, asked one metric
/// at a time (`{__name__='cpu_a', …}`), each answer's series given that metric's name.
fn metric_by_metric(prometheus: &Prometheus, target: &str) -> (u16, serde_json::Value) {
    let (path, params) = target.split_once('?').unwrap();
    let pairs: Vec<(String, String)> = params
        .split('&')
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_string(), decode(v))
        })
        .collect();
    let query = &pairs.iter().find(|(k, _)| k == "query").unwrap().1;
    let start = query.find("__name__=~'cpu_(").unwrap();
    let list_start = start + "__name__=~'cpu_(".len();
    let list_end = list_start + query[list_start..].find(")'").unwrap();
    let mut result = Vec::new();
    let mut kind = serde_json::Value::Null;
    for field in query[list_start..list_end].split('|') {
        let one = format!(
            "{}__name__='cpu_{field}'{}",
            &query[..start],
            &query[list_end + 2..]
        );
        let rest: Vec<String> = pairs
            .iter()
            .map(|(k, v)| {
                let v = if k == "query" { &one } else { v };
                format!("{k}={}", encode(v))
            })
            .collect();
        let (status, answer) = get(prometheus.web, &format!("{path}?{}", rest.join("&")));
        assert_eq!(status, 200, "{one}: {answer}");
        kind = answer["data"]["resultType"].clone();
        for mut series in answer["data"]["result"].as_array().unwrap().clone() {
            series["metric"]["__name__"] = serde_json::Value::String(format!("cpu_{field}"));
            result.push(series);
        }
    }
    (
        200,
        serde_json::json!({"status": "success", "data": {"resultType": kind, "result": result}}),
    )
}

/// A form value: `+` is a space, `%XX` a byte.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}
