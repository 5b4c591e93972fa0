//! End to end: the real Prometheus (Debian's `prometheus` 2.42; `.ci/run` installs it)
//! scrapes Strata's own `/metrics` and a second target, and remote-writes to Strata's
//! `/api/v1/write`. Every sample Prometheus holds up to a cut-off must then be in Strata,
//! bit for bit (NaN and infinities included). A missing `prometheus` fails the test; it
//! never skips.

#![allow(clippy::unwrap_used)]

mod common;
mod prom_oracle;
mod sql_common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{Server, data_dir, open_engine};
use prom_oracle::Prometheus;
use sql_common::{encode, post_sql, send};
use strata_storage::ReadRequest;
use strata_storage::model::Value;

/// A series: metric name and its labels (sorted, `job` and `instance` included).
type SeriesKey = (String, BTreeMap<String, String>);
/// Its samples: (milliseconds, value bits; every NaN as one pattern).
type Samples = Vec<(i64, u64)>;

#[test]
fn prometheus_remote_writes_every_sample_it_scrapes() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let target = Target::start();
    let work = tempfile::tempdir().unwrap();
    let config = format!(
        "global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
- job_name: strata
  static_configs: [{{targets: ['{strata}']}}]
- job_name: app
  static_configs: [{{targets: ['{app}']}}]
remote_write:
- url: http://{strata}/api/v1/write
  queue_config:
    min_shards: 1
    max_shards: 1
    batch_send_deadline: 500ms
    max_samples_per_send: 200
",
        strata = server.http,
        app = target.addr,
    );
    let prometheus = Prometheus::start(work.path(), &config);

    // Some scrapes of both targets, then a cut-off: the last scrape of the app Prometheus
    // has. With one remote-write shard, samples leave in the order they were appended.
    wait_for(
        "six scrapes of the app target",
        Duration::from_secs(60),
        || target.scrapes.load(Ordering::Relaxed) >= 6,
    );
    let cutoff = latest_sample_ms(&prometheus, "app_scrapes_total");
    wait_for(
        "a later app sample in Strata",
        Duration::from_secs(60),
        || strata_count(&server, "app_scrapes_total", None) > strata_count_at(&prometheus, cutoff),
    );
    // Let whatever was appended before the later sample's batch arrive too.
    std::thread::sleep(Duration::from_secs(2));
    let expected = prometheus_samples(&prometheus, cutoff);
    drop(prometheus);
    target.stop();
    assert!(server.stop().success());
    let engine = open_engine(dir.path());
    let stored = strata_samples(&engine, cutoff);
    engine.close().unwrap();

    let app_series = expected
        .keys()
        .filter(|(m, _)| m.starts_with("app_"))
        .count();
    assert_eq!(app_series, 7, "{:#?}", expected.keys().collect::<Vec<_>>());
    assert!(
        expected
            .keys()
            .any(|(m, _)| m == "strata_http_requests_total"),
        "Strata's own metrics were scraped"
    );
    assert!(expected.contains_key(&("up".to_string(), job("app", &target.addr))));
    for (key, samples) in &expected {
        assert_eq!(
            stored.get(key),
            Some(samples),
            "series {key:?}: Prometheus holds {} samples",
            samples.len()
        );
    }
    let extra: Vec<_> = stored
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    assert!(extra.is_empty(), "series only Strata has: {extra:?}");
}

fn job(name: &str, instance: &SocketAddr) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("instance".to_string(), instance.to_string()),
        ("job".to_string(), name.to_string()),
    ])
}

/// The second scrape target: a counter of its own scrapes, values every float can take,
/// and label values a line-protocol key would have to escape.
struct Target {
    addr: SocketAddr,
    scrapes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Target {
    fn start() -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let scrapes = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, done) = (Arc::clone(&scrapes), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                let mut reader = BufReader::new(stream);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                let n = count.fetch_add(1, Ordering::Relaxed) + 1;
                let body = format!(
                    "# TYPE app_scrapes_total counter\n\
                     app_scrapes_total {n}\n\
                     app_requests_total{{path=\"/a,b=c d\",code=\"200\"}} {}\n\
                     app_requests_total{{path=\"q\\\"uote\\\\back\\nline\",code=\"500\"}} {}\n\
                     app_temperature{{room=\"cuisine ☃\"}} {}\n\
                     app_not_a_number NaN\n\
                     app_infinite{{sign=\"plus\"}} +Inf\n\
                     app_infinite{{sign=\"minus\"}} -Inf\n",
                    n * 3,
                    n * 7 % 5,
                    21.5 + n as f64 / 8.0
                );
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Target {
            addr,
            scrapes,
            stop,
        }
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// `GET /api/v1/query` at `time_ms`; the `data.result` array.
fn query(prometheus: &Prometheus, query: &str, time_ms: Option<i64>) -> Vec<serde_json::Value> {
    let mut path = format!("/api/v1/query?query={}", encode(query));
    if let Some(ms) = time_ms {
        path.push_str(&format!("&time={}.{:03}", ms / 1000, ms % 1000));
    }
    let response = send(prometheus.web, "GET", &path, &[], b"");
    assert_eq!(response.status, 200, "{}", response.text());
    let json = response.json();
    json["data"]["result"].as_array().unwrap().clone()
}

fn latest_sample_ms(prometheus: &Prometheus, metric: &str) -> i64 {
    let result = query(prometheus, &format!("timestamp({metric})"), None);
    let seconds: f64 = result[0]["value"][1].as_str().unwrap().parse().unwrap();
    (seconds * 1000.0).round() as i64
}

/// How many samples of `app_scrapes_total` Prometheus holds up to `cutoff`.
fn strata_count_at(prometheus: &Prometheus, cutoff: i64) -> u64 {
    let result = query(
        prometheus,
        "count_over_time(app_scrapes_total[1h])",
        Some(cutoff),
    );
    result[0]["value"][1].as_str().unwrap().parse().unwrap()
}

/// Rows of `table` in Strata's `prometheus` database (all, or up to `cutoff_ms`).
fn strata_count(server: &Server, table: &str, cutoff_ms: Option<i64>) -> u64 {
    let mut sql = format!("SELECT count(*) FROM \"{table}\"");
    if let Some(ms) = cutoff_ms {
        sql.push_str(&format!(" WHERE time <= {}", ms * 1_000_000));
    }
    let response = post_sql(server, "?db=prometheus&format=csv", &sql);
    if response.status != 200 {
        return 0; // no such table yet
    }
    let text = response.text();
    text.lines().last().unwrap().parse().unwrap()
}

/// Every sample Prometheus holds up to `cutoff_ms`.
fn prometheus_samples(prometheus: &Prometheus, cutoff_ms: i64) -> BTreeMap<SeriesKey, Samples> {
    let mut out = BTreeMap::new();
    for series in query(prometheus, "{__name__=~\".+\"}[1h]", Some(cutoff_ms)) {
        let mut labels: BTreeMap<String, String> =
            serde_json::from_value(series["metric"].clone()).unwrap();
        let name = labels.remove("__name__").unwrap();
        let samples = series["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| {
                let ms = (pair[0].as_f64().unwrap() * 1000.0).round() as i64;
                let value: f64 = pair[1].as_str().unwrap().parse().unwrap();
                (ms, bits(value))
            })
            .collect();
        out.insert((name, labels), samples);
    }
    out
}

/// Every sample in Strata's `prometheus` database up to `cutoff_ms`.
fn strata_samples(engine: &strata_storage::Engine, cutoff_ms: i64) -> BTreeMap<SeriesKey, Samples> {
    let mut out: BTreeMap<SeriesKey, Samples> = BTreeMap::new();
    for table in engine.catalog().tables("prometheus") {
        let field = table.field("value").expect("a value field").id;
        for series in engine.read(&ReadRequest::all(table.id)).unwrap() {
            let labels = series
                .tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let data = &series.data;
            let column = data.columns.iter().find(|c| c.field == field).unwrap();
            let indexes = column.value_indexes(data.rows());
            let samples: Samples = (0..data.rows())
                .filter(|row| data.times[*row] <= cutoff_ms * 1_000_000)
                .map(|row| {
                    let Value::Float(v) = column.values.get(indexes[row].unwrap()) else {
                        panic!("{}: not a float", table.name)
                    };
                    (data.times[row] / 1_000_000, bits(v))
                })
                .collect();
            if !samples.is_empty() {
                out.insert((table.name.clone(), labels), samples);
            }
        }
    }
    out
}

fn bits(value: f64) -> u64 {
    if value.is_nan() {
        f64::NAN.to_bits()
    } else {
        value.to_bits()
    }
}

fn wait_for(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

mod direct {
    //! Remote-write bodies sent by hand: what is refused, with which status, and that the
    //! good series of a request are stored whatever else it holds.

    use bytes::Bytes;
    use prost::Message;
    use strata_server::prom::remote_write::{Label, Sample, TimeSeries, WriteRequest};

    use super::common::{Server, data_dir, stored_rows};

    fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
        TimeSeries {
            labels: labels
                .iter()
                .map(|(n, v)| Label {
                    name: Bytes::copy_from_slice(n.as_bytes()),
                    value: Bytes::copy_from_slice(v.as_bytes()),
                })
                .collect(),
            samples: samples
                .iter()
                .map(|(timestamp, value)| Sample {
                    value: *value,
                    timestamp: *timestamp,
                })
                .collect(),
            histograms: vec![],
        }
    }

    fn body(timeseries: Vec<TimeSeries>) -> Vec<u8> {
        let plain = WriteRequest { timeseries }.encode_to_vec();
        snap::raw::Encoder::new().compress_vec(&plain).unwrap()
    }

    const SNAPPY: [(&str, &str); 2] = [
        ("Content-Encoding", "snappy"),
        ("Content-Type", "application/x-protobuf"),
    ];

    #[test]
    fn bad_series_are_refused_by_name_and_the_good_ones_stored() {
        let dir = data_dir();
        let server = Server::start(dir.path(), &[]);
        // `value` already an integer field of `typed`: a float sample conflicts.
        assert_eq!(
            server.post("/write?db=prom", "typed value=1i 1").status,
            204
        );
        let request = body(vec![
            series(
                &[("__name__", "ok"), ("a", "1")],
                &[(1000, 0.5), (2000, 1.5)],
            ),
            series(&[("__name__", "ok"), ("time", "x")], &[(1000, 1.0)]),
            series(&[("a", "no name")], &[(1000, 1.0)]),
            series(&[("__name__", "typed")], &[(1000, 1.0)]),
            series(&[("__name__", "ok"), ("value", "x")], &[(1000, 1.0)]),
            series(&[("__name__", "ok"), ("a", "2")], &[(3000, -2.5)]),
        ]);
        let response = server.request("POST", "/api/v1/write?db=prom", &SNAPPY, &request);
        assert_eq!(response.status, 400, "{}", response.text());
        let json = response.json();
        assert_eq!(json["errorType"], "bad_data");
        assert_eq!(json["written"], 3);
        let refused: Vec<u64> = json["refused"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["series"].as_u64().unwrap())
            .collect();
        assert_eq!(refused, [2, 3, 4, 5], "{json}");
        let messages = json["refused"].to_string();
        assert!(messages.contains("__name__"), "{messages}");
        assert!(messages.contains("\\\"time\\\""), "{messages}");
        assert!(messages.contains("integer"), "{messages}");

        // A request without a database goes to `prometheus`.
        let plain = body(vec![series(&[("__name__", "up")], &[(5000, 1.0)])]);
        let response = server.request("POST", "/api/v1/write", &SNAPPY, &plain);
        assert_eq!(response.status, 204, "{}", response.text());

        // Bodies that are not remote write: clear 400s, nothing stored.
        for (headers, bad, words) in [
            (&SNAPPY[..], &b"not snappy at all"[..], "snappy"),
            (
                &SNAPPY[..],
                &snap::raw::Encoder::new()
                    .compress_vec(b"\x0a\xff\xff")
                    .unwrap()[..],
                "protobuf",
            ),
            (
                &[("Content-Encoding", "gzip")][..],
                &request[..],
                "Content-Encoding",
            ),
        ] {
            let response = server.request("POST", "/api/v1/write?db=prom", headers, bad);
            assert_eq!(response.status, 400, "{}", response.text());
            assert!(response.text().contains(words), "{}", response.text());
        }
        let too_big = server.request(
            "POST",
            "/api/v1/write?db=prom",
            &SNAPPY,
            &snap::raw::Encoder::new()
                .compress_vec(&vec![0u8; (64 << 20) + 1])
                .unwrap(),
        );
        assert_eq!(too_big.status, 413, "{}", too_big.text());
        assert!(server.stop().success());

        assert_eq!(
            stored_rows(dir.path(), "prom", "ok"),
            [
                "a=1 1000000000 value=Float(0.5)",
                "a=1 2000000000 value=Float(1.5)",
                "a=2 3000000000 value=Float(-2.5)",
            ]
        );
        assert_eq!(
            stored_rows(dir.path(), "prom", "typed"),
            [" 1 value=Integer(1)"]
        );
        assert_eq!(
            stored_rows(dir.path(), "prometheus", "up"),
            [" 5000000000 value=Float(1.0)"]
        );
    }
}
