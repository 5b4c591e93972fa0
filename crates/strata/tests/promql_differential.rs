//! PromQL against the real Prometheus (Debian's `prometheus` 2.42; `.ci/run` installs it):
//! the same seeded data goes into Prometheus (as TSDB blocks made by `promtool tsdb
//! create-blocks-from openmetrics`) and into Strata (remote write), then a few hundred
//! generated instant and range queries are compared answer by answer — status, error type,
//! result type, series and points, floats to a relative 1e-9. A missing Prometheus fails
//! the test; it never skips.
//!
//! `STRATA_PROMQL_SEED=N` picks another data set and query mix.

#![allow(clippy::unwrap_used)]

mod common;
mod prom_oracle;
mod sql_common;

use bytes::Bytes;
use prost::Message;
use strata_server::prom::remote_write::{Label, Sample, TimeSeries, WriteRequest};

use common::{Server, data_dir};
use prom_oracle::{Prometheus, cut, get, same, seconds};
use sql_common::{encode, send};
/// 2023-11-14T22:00:00Z: the data's first sample.
const BASE_MS: i64 = 1_699_999_200_000;
const SCRAPE_MS: i64 = 15_000;
/// One hour of samples.
const SAMPLES: i64 = 240;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

struct Generated {
    name: String,
    labels: Vec<(String, String)>,
    samples: Vec<(i64, f64)>,
}

/// Counters with resets and gaps longer than the lookback, gauges, and histogram buckets.
fn generate(seed: u64) -> Vec<Generated> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut out = Vec::new();
    for job in ["api", "db"] {
        for instance in 0..3 {
            for code in ["200", "500"] {
                let mut value = rng.below(100) as f64;
                let mut samples = Vec::new();
                // One series has a 10-minute gap (longer than the 5-minute lookback).
                let gap = job == "db" && instance == 1 && code == "200";
                for i in 0..SAMPLES {
                    if gap && (100..140).contains(&i) {
                        continue;
                    }
                    if rng.below(60) == 0 {
                        value = rng.below(5) as f64; // a counter reset
                    } else {
                        value += rng.below(if code == "200" { 50 } else { 5 }) as f64;
                    }
                    samples.push((BASE_MS + i * SCRAPE_MS, value));
                }
                out.push(Generated {
                    name: "http_requests_total".into(),
                    labels: vec![
                        ("job".into(), job.into()),
                        ("instance".into(), format!("host-{instance}")),
                        ("code".into(), code.into()),
                    ],
                    samples,
                });
            }
        }
    }
    for room in ["kitchen", "hall", "cellar", "attic"] {
        let mut value = 15.0 + rng.unit() * 10.0;
        let samples = (0..SAMPLES)
            .map(|i| {
                value += rng.unit() - 0.5;
                (BASE_MS + i * SCRAPE_MS, (value * 1000.0).round() / 1000.0)
            })
            .collect();
        out.push(Generated {
            name: "temperature_celsius".into(),
            labels: vec![
                ("room".into(), room.into()),
                (
                    "floor".into(),
                    if room == "attic" { "2" } else { "1" }.into(),
                ),
            ],
            samples,
        });
    }
    // Label values a text format must escape, and one a line-protocol key would.
    out.push(Generated {
        name: "odd_labels".into(),
        labels: vec![
            ("path".into(), "a\"b\\c\nd, e=f".into()),
            ("name".into(), "température ☃".into()),
        ],
        samples: (0..SAMPLES)
            .map(|i| (BASE_MS + i * SCRAPE_MS, (i % 7) as f64 - 3.5))
            .collect(),
    });
    for handler in ["/a", "/b"] {
        let bounds = ["0.1", "0.5", "1", "+Inf"];
        let mut counts = [0.0f64; 4];
        let mut per_bucket: Vec<Vec<(i64, f64)>> = vec![Vec::new(); 4];
        for i in 0..SAMPLES {
            let observations = rng.below(20);
            for _ in 0..observations {
                let x = rng.unit() * 1.5;
                for (b, bound) in [0.1, 0.5, 1.0, f64::INFINITY].iter().enumerate() {
                    if x <= *bound {
                        counts[b] += 1.0;
                    }
                }
            }
            for b in 0..4 {
                per_bucket[b].push((BASE_MS + i * SCRAPE_MS, counts[b]));
            }
        }
        for (b, samples) in per_bucket.into_iter().enumerate() {
            out.push(Generated {
                name: "request_duration_seconds_bucket".into(),
                labels: vec![
                    ("handler".into(), handler.into()),
                    ("le".into(), bounds[b].into()),
                ],
                samples,
            });
        }
    }
    out
}

/// The data as OpenMetrics text for promtool, samples in time order.
fn openmetrics(data: &[Generated]) -> String {
    let mut lines: Vec<(i64, String)> = Vec::new();
    for series in data {
        let labels: Vec<String> = series
            .labels
            .iter()
            .map(|(k, v)| {
                let escaped = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                format!("{k}=\"{escaped}\"")
            })
            .collect();
        for (t, v) in &series.samples {
            lines.push((
                *t,
                format!(
                    "{}{{{}}} {} {}.{:03}",
                    series.name,
                    labels.join(","),
                    v,
                    t / 1000,
                    t % 1000
                ),
            ));
        }
    }
    lines.sort_by_key(|(t, _)| *t);
    let mut text: String = lines.into_iter().map(|(_, l)| l + "\n").collect();
    text.push_str("# EOF\n");
    text
}

fn remote_write_body(data: &[Generated]) -> Vec<u8> {
    let timeseries = data
        .iter()
        .map(|series| {
            let mut labels: Vec<Label> =
                std::iter::once(("__name__".to_string(), series.name.clone()))
                    .chain(series.labels.iter().cloned())
                    .map(|(k, v)| Label {
                        name: Bytes::from(k),
                        value: Bytes::from(v),
                    })
                    .collect();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            TimeSeries {
                labels,
                samples: series
                    .samples
                    .iter()
                    .map(|(t, v)| Sample {
                        value: *v,
                        timestamp: *t,
                    })
                    .collect(),
                histograms: vec![],
            }
        })
        .collect();
    let plain = WriteRequest { timeseries }.encode_to_vec();
    snap::raw::Encoder::new().compress_vec(&plain).unwrap()
}

/// Generated queries: (query, instant time or range).
fn queries(seed: u64) -> Vec<String> {
    let mut rng = Rng(seed.wrapping_add(17) | 1);
    let selectors = [
        "http_requests_total",
        "http_requests_total{job=\"api\"}",
        "http_requests_total{code!=\"200\"}",
        "http_requests_total{instance=~\"host-[01]\"}",
        "http_requests_total{instance!~\"host-1\",job=\"db\"}",
        "temperature_celsius",
        "temperature_celsius{floor=\"\"}",
        "{__name__=~\"temp.*\",room!=\"hall\"}",
        "http_requests_total{nolabel=\"\"}",
        "http_requests_total{job=\"nope\"}",
    ];
    let counters = [
        "http_requests_total",
        "http_requests_total{job=\"db\"}",
        "http_requests_total{code=\"500\"}",
    ];
    let ranges = ["1m", "2m", "5m", "10m", "1h"];
    let range_functions = [
        "rate",
        "irate",
        "increase",
        "delta",
        "idelta",
        "resets",
        "changes",
        "deriv",
        "avg_over_time",
        "sum_over_time",
        "count_over_time",
        "min_over_time",
        "max_over_time",
        "last_over_time",
        "present_over_time",
        "stddev_over_time",
        "stdvar_over_time",
    ];
    let aggregations = [
        "sum", "avg", "min", "max", "count", "group", "stddev", "stdvar",
    ];
    let groupings = [
        "",
        " by (job)",
        " by (code, job)",
        " without (instance)",
        " by ()",
    ];
    let mut out: Vec<String> = Vec::new();
    out.extend(selectors.iter().map(|s| s.to_string()));
    for f in range_functions {
        let r = ranges[rng.below(ranges.len() as u64) as usize];
        let s = if ["rate", "irate", "increase", "resets"].contains(&f) {
            counters[rng.below(counters.len() as u64) as usize]
        } else {
            selectors[rng.below(7) as usize]
        };
        out.push(format!("{f}({s}[{r}])"));
    }
    for a in aggregations {
        let g = groupings[rng.below(groupings.len() as u64) as usize];
        let r = ranges[rng.below(4) as usize];
        out.push(format!("{a}{g} (rate(http_requests_total[{r}]))"));
        out.push(format!("{a} by (floor) (temperature_celsius)"));
    }
    out.extend(
        [
            "topk(2, temperature_celsius)",
            "bottomk(3, rate(http_requests_total[5m]))",
            "topk by (job) (1, http_requests_total)",
            "quantile(0.9, temperature_celsius)",
            "quantile by (job) (0.5, rate(http_requests_total[2m]))",
            "count_values(\"value\", floor(temperature_celsius / 5))",
            "quantile_over_time(0.75, temperature_celsius[10m])",
            "predict_linear(temperature_celsius[10m], 600)",
            "histogram_quantile(0.9, rate(request_duration_seconds_bucket[5m]))",
            "histogram_quantile(0.5, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
            "histogram_quantile(0.99, request_duration_seconds_bucket{handler=\"/a\"})",
            "sum(rate(http_requests_total[5m])) / sum(rate(http_requests_total{code=\"200\"}[5m]))",
            "rate(http_requests_total{code=\"500\"}[5m]) / ignoring(code) rate(http_requests_total{code=\"200\"}[5m])",
            "rate(http_requests_total[5m]) / on(job, instance) group_left sum by (job, instance) (rate(http_requests_total[5m]))",
            "sum by (job, instance) (rate(http_requests_total[5m])) / on(job, instance) group_right rate(http_requests_total[5m])",
            "http_requests_total > 1000",
            "http_requests_total > bool 1000",
            "1000 < http_requests_total",
            "temperature_celsius == bool temperature_celsius",
            "temperature_celsius - on(room) temperature_celsius",
            "http_requests_total{job=\"api\"} and http_requests_total{code=\"200\"}",
            "http_requests_total{job=\"api\"} or temperature_celsius",
            "http_requests_total unless http_requests_total{instance=\"host-0\"}",
            "http_requests_total and on(job) http_requests_total{instance=\"host-2\",code=\"500\"}",
            "-temperature_celsius",
            "temperature_celsius * 2 + 1",
            "2 ^ temperature_celsius / 1e6",
            "temperature_celsius % 3",
            "abs(-temperature_celsius)",
            "ceil(temperature_celsius)",
            "floor(temperature_celsius)",
            "round(temperature_celsius, 0.5)",
            "round(temperature_celsius)",
            "sqrt(temperature_celsius)",
            "ln(temperature_celsius)",
            "exp(temperature_celsius / 10)",
            "log2(temperature_celsius)",
            "log10(temperature_celsius)",
            "sgn(temperature_celsius - 20)",
            "clamp(temperature_celsius, 18, 22)",
            "clamp_min(temperature_celsius, 20)",
            "clamp_max(temperature_celsius, 20)",
            "clamp(temperature_celsius, 22, 18)",
            "timestamp(http_requests_total{job=\"db\"})",
            "timestamp(rate(http_requests_total{job=\"db\"}[5m]))",
            "time()",
            "vector(1)",
            "scalar(temperature_celsius{room=\"hall\"})",
            "scalar(temperature_celsius)",
            "temperature_celsius * scalar(temperature_celsius{room=\"hall\"})",
            "sort(temperature_celsius)",
            "sort_desc(temperature_celsius)",
            "label_replace(temperature_celsius, \"where\", \"$1-x\", \"room\", \"(.*)a(.*)\")",
            "label_replace(temperature_celsius, \"room\", \"\", \"room\", \"hall\")",
            "label_join(http_requests_total, \"id\", \"/\", \"job\", \"instance\", \"code\")",
            "absent(nonexistent_metric{job=\"x\"})",
            "absent(http_requests_total)",
            "absent_over_time(nonexistent_metric[5m])",
            "absent_over_time(http_requests_total{job=\"db\",instance=\"host-1\",code=\"200\"}[1m])",
            "max_over_time(rate(http_requests_total[2m])[10m:1m])",
            "avg_over_time(temperature_celsius[15m:])",
            "rate(http_requests_total[5m] offset 10m)",
            "http_requests_total offset 5m",
            "temperature_celsius @ 1700001000",
            "sum_over_time(temperature_celsius[5m] @ 1700000100)",
            "1 + 2 * 3",
            "2 > bool 1",
            "http_requests_total / on(job) http_requests_total",
            "rate(temperature_celsius)",
            "sum(",
            "holt_winters(temperature_celsius[10m], 0.5, 0.5)",
            "holt_winters(temperature_celsius[10m], 0.3, 0.8)",
            "holt_winters(temperature_celsius[10m], 1.5, 0.5)",
            "hour()",
            "minute(timestamp(temperature_celsius))",
            "day_of_week()",
            "days_in_month(vector(1709000000))",
            "month()",
            "year(vector(1700000000))",
            "day_of_month(temperature_celsius * 86400 * 30)",
            "histogram_count(temperature_celsius)",
            "sum without (le) (request_duration_seconds_bucket)",
            "count by (__name__) ({__name__=~\".+\"})",
            "http_requests_total{job=~\"a.*|d.*\", code=~\"5..\"}",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    out
}

#[test]
fn promql_answers_match_prometheus() {
    let seed: u64 = std::env::var("STRATA_PROMQL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let data = generate(seed);
    let work = tempfile::tempdir().unwrap();
    let prometheus = Prometheus::with_data(work.path(), &openmetrics(&data));

    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let written = server.request(
        "POST",
        "/api/v1/write",
        &[("Content-Encoding", "snappy")],
        &remote_write_body(&data),
    );
    assert_eq!(written.status, 204, "{}", written.text());

    // The same OpenMetrics text promtool read, imported: every sample must be there.
    let imported = send(
        server.http,
        "POST",
        "/api/v1/import/prometheus?db=om",
        &[(
            "Content-Type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        openmetrics(&data).as_bytes(),
    );
    assert_eq!(imported.status, 204, "{}", imported.text());

    let mut failures = Vec::new();
    let mut compared = 0;
    let everything = format!(
        "/api/v1/query?query={}&time={}",
        encode("{__name__=~\".+\"}[2h]"),
        seconds(BASE_MS + 3_600_000)
    );
    let raw = get(prometheus.web, &everything);
    assert!(
        raw.1["data"]["result"]
            .as_array()
            .is_some_and(|r| r.len() == 25),
        "{}",
        cut(&raw.1.to_string())
    );
    for path in [
        everything.clone(),
        everything.replace("/api/v1/query?", "/api/v1/query?db=om&"),
    ] {
        if let Err(why) = same(&raw, &get(server.http, &path)) {
            failures.push(format!("{path}: every raw sample: {why}"));
        }
        compared += 1;
    }
    let instants = [BASE_MS + 1_800_000, BASE_MS + 3_599_000, BASE_MS + 10_000];
    for query in queries(seed) {
        let mut requests: Vec<String> = instants
            .iter()
            .map(|t| {
                format!(
                    "/api/v1/query?query={}&time={}",
                    encode(&query),
                    seconds(*t)
                )
            })
            .collect();
        requests.push(format!(
            "/api/v1/query_range?query={}&start={}&end={}&step=60",
            encode(&query),
            seconds(BASE_MS),
            seconds(BASE_MS + 3_600_000)
        ));
        for path in requests {
            let expected = get(prometheus.web, &path);
            let actual = get(server.http, &path);
            compared += 1;
            if let Err(why) = same(&expected, &actual) {
                failures.push(format!(
                    "{path}\n  query: {query}\n  {why}\n  prometheus: {}\n  strata:     {}",
                    cut(&expected.1.to_string()),
                    cut(&actual.1.to_string())
                ));
            }
        }
    }
    // The metadata endpoints over the same data, GET and POST (form body).
    for path in [
        "/api/v1/labels".to_string(),
        "/api/v1/label/__name__/values".to_string(),
        "/api/v1/label/instance/values".to_string(),
        "/api/v1/label/nolabel/values".to_string(),
        format!(
            "/api/v1/series?match[]={}",
            encode("http_requests_total{job=\"api\"}")
        ),
        format!(
            "/api/v1/series?match[]={}&match[]={}",
            encode("temperature_celsius{floor=\"2\"}"),
            encode("{handler=\"/b\",le=\"+Inf\"}")
        ),
        format!("/api/v1/labels?match[]={}", encode("temperature_celsius")),
        format!(
            "/api/v1/label/le/values?match[]={}",
            encode("{handler=\"/a\"}")
        ),
        "/api/v1/series".to_string(),
    ] {
        let expected = get(prometheus.web, &path);
        let actual = get(server.http, &path);
        compared += 1;
        if expected.0 != actual.0
            || expected.1["status"] != actual.1["status"]
            || expected.1["data"] != actual.1["data"]
        {
            failures.push(format!(
                "{path}\n  prometheus: {} {}\n  strata:     {} {}",
                expected.0,
                cut(&expected.1.to_string()),
                actual.0,
                cut(&actual.1.to_string())
            ));
        }
    }
    let form = format!(
        "query={}&time={}",
        encode("sum by (job) (rate(http_requests_total[5m]))"),
        seconds(BASE_MS + 1_800_000)
    );
    let posted = |addr| {
        let answer = send(
            addr,
            "POST",
            "/api/v1/query",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            form.as_bytes(),
        );
        (answer.status, answer.json())
    };
    if let Err(why) = same(&posted(prometheus.web), &posted(server.http)) {
        failures.push(format!("POST /api/v1/query: {why}"));
    }
    assert!(compared > 300, "only {compared} comparisons");
    assert!(
        failures.is_empty(),
        "{} of {compared} answers differ (seed {seed}):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Tables written by line protocol, seen through PromQL: field `f` of `m` is `m_f`.
#[test]
fn line_protocol_fields_are_metrics() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let lines = "cpu,host=a usage_user=12.5,usage_system=3i,ok=true,note=\"x\" 1700000000000000000\n\
                 cpu,host=b usage_user=7.5 1700000000000000000\n\
                 gauge,host=a value=4 1700000000000000000\n";
    assert_eq!(server.post("/write?db=lp", lines).status, 204);
    let query = |q: &str| -> serde_json::Value {
        let answer = send(
            server.http,
            "GET",
            &format!("/api/v1/query?db=lp&time=1700000010&query={}", encode(q)),
            &[],
            b"",
        );
        answer.json()
    };
    let values = |q: &str| -> Vec<(String, String)> {
        let json = query(q);
        assert_eq!(json["status"], "success", "{json}");
        json["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["metric"].to_string(),
                    r["value"][1].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        values("cpu_usage_user"),
        [
            (
                r#"{"__name__":"cpu_usage_user","host":"a"}"#.to_string(),
                "12.5".to_string()
            ),
            (
                r#"{"__name__":"cpu_usage_user","host":"b"}"#.to_string(),
                "7.5".to_string()
            ),
        ]
    );
    assert_eq!(values("cpu_usage_system")[0].1, "3");
    assert_eq!(values("cpu_ok")[0].1, "1");
    assert_eq!(
        values("gauge")[0],
        (
            r#"{"__name__":"gauge","host":"a"}"#.to_string(),
            "4".to_string()
        )
    );
    assert!(values("cpu_note").is_empty());
    assert_eq!(values("sum(cpu_usage_user)")[0].1, "20");
    let names = send(
        server.http,
        "GET",
        "/api/v1/label/__name__/values?db=lp",
        &[],
        b"",
    )
    .json();
    assert_eq!(
        names["data"],
        serde_json::json!(["cpu_ok", "cpu_usage_system", "cpu_usage_user", "gauge"])
    );
    // Errors in Prometheus' shape.
    let bad = query("sum(");
    assert_eq!(
        (bad["status"].as_str(), bad["errorType"].as_str()),
        (Some("error"), Some("bad_data"))
    );
    let unsupported = query("limitk(1, cpu_usage_user)");
    assert_eq!(unsupported["errorType"], "bad_data", "{unsupported}");
    let missing = send(server.http, "GET", "/api/v1/query", &[], b"");
    assert_eq!(missing.status, 400);
    assert!(missing.text().contains("query"), "{}", missing.text());
    // The text exposition format: ms timestamps; a bad line named, the good ones kept.
    let text = "# TYPE jobs gauge\njobs{queue=\"a\"} 3 1700000000000\njobs{queue=\"b\" 4\njobs{queue=\"c\"} 5 1700000000000\n";
    let imported = send(
        server.http,
        "POST",
        "/api/v1/import/prometheus?db=lp",
        &[],
        text.as_bytes(),
    );
    assert_eq!(imported.status, 400, "{}", imported.text());
    let report = imported.json();
    assert_eq!(report["lines"][0]["line"], 3, "{report}");
    assert_eq!(report["lines"][0]["column"], 16, "{report}");
    assert_eq!(report["written"], 2, "{report}");
    assert_eq!(values("sum(jobs)")[0].1, "8");
    // Hostile queries: clear errors (or answers), never a dead server.
    let deep = format!("{}1{}", "(".repeat(30_000), ")".repeat(30_000));
    let long_sum = format!("1{}", "+1".repeat(30_000));
    for q in [
        deep.as_str(),
        long_sum.as_str(),
        "rate(cpu_usage_user[1000000000y])",
        "max_over_time(cpu_usage_user[1000000000y:1ms])",
        "sum_over_time(cpu_usage_user[1d:1ms])",
        "cpu_usage_user offset 1000000000y",
        "cpu_usage_user @ 99999999999999999",
        "label_replace(cpu_usage_user, \"a\", \"$1\", \"host\", \"(\")",
        "topk(1e300, cpu_usage_user)",
        "quantile(NaN, cpu_usage_user)",
        "histogram_quantile(0.5, cpu_usage_user)",
        "rate(cpu_usage_user[1e308])",
        "cpu_usage_user offset -Inf",
        "max_over_time(cpu_usage_user[5m:NaN])",
        "rate(cpu_usage_user[1.5e19])",
    ] {
        // POSTed: the deep ones are longer than a request line may be.
        let body = format!("db=lp&time=1700000010&query={}", encode(q));
        let answer = send(
            server.http,
            "POST",
            "/api/v1/query",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        )
        .json();
        // A panic on the query's thread would answer `internal`.
        assert!(
            answer["status"] == "success"
                || (answer["errorType"].is_string() && answer["errorType"] != "internal"),
            "{}: {answer}",
            &q[..q.len().min(80)]
        );
    }
    // A number where a duration goes that no duration holds: promql-parser panics on it,
    // so Strata refuses it first, with its position.
    let out_of_range = query("rate(cpu_usage_user[1e308])");
    assert_eq!(out_of_range["errorType"], "bad_data", "{out_of_range}");
    assert!(
        out_of_range["error"]
            .as_str()
            .is_some_and(|e| e.contains("1:21: parse error: duration out of range")),
        "{out_of_range}"
    );
    let far = send(
        server.http,
        "GET",
        "/api/v1/query_range?db=lp&query=vector(1)&start=0&end=99999999999999999&step=1e15",
        &[],
        b"",
    );
    assert!(far.status == 400 || far.status == 200, "{}", far.text());
    let build = send(server.http, "GET", "/api/v1/status/buildinfo", &[], b"").json();
    assert_eq!(build["data"]["version"], "2.42.0");
}

/// A client that goes away cancels its query: the evaluation stops, and the server's CPU
/// goes quiet, long before the query would have ended.
#[test]
fn a_client_that_disconnects_cancels_its_query() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--query-timeout", "none"]);
    // 20 counters, a sample a second for three hours.
    let start = 1_700_000_000i64;
    let mut lines = String::new();
    for s in 0..20 {
        for i in 0..10_800i64 {
            lines.push_str(&format!(
                "m,s={s} value={} {}\n",
                i * (s + 1),
                (start + i) * 1_000_000_000
            ));
        }
        let response = server.post("/write?db=c", &lines);
        assert_eq!(response.status, 204, "{}", response.text());
        lines.clear();
    }
    // Minutes of work: a one-second subquery under an hour-long window at every second.
    let query = encode("sum_over_time(rate(m[5m])[1h:1s])");
    let path = format!(
        "/api/v1/query_range?db=c&query={query}&start={}&end={}&step=1",
        start + 3600,
        start + 3 * 3600
    );
    let mut stream = std::net::TcpStream::connect(server.http).unwrap();
    sql_common::write_request(&mut stream, server.http, "GET", &path, &[], b"");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let busy_before = server.cpu_ticks();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        server.cpu_ticks() - busy_before > 20,
        "the query should be running while its client waits"
    );
    drop(stream);
    std::thread::sleep(std::time::Duration::from_millis(700));
    let before = server.cpu_ticks();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let spent = server.cpu_ticks() - before;
    assert!(
        spent < 30,
        "the server used {spent} ticks of CPU in the second after its client left"
    );
    assert!(server.stop().success());
}
