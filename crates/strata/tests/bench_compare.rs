//! End-to-end: `strata bench compare` against a real Strata server and a real InfluxDB 1.x
//! (Debian's `influxdb` package, influxd 1.6.7; `.ci/run` installs it), both on loopback
//! ports, with a small cpu-only load. A missing influxd fails the test; it never skips.
//!
//! Checked: both servers stored every row (counted through each one's own `/query`), both
//! were sent bodies with the same checksum, every query type has a median and no failure on
//! both (InfluxQL on both, PromQL on Strata with `--promql-on-strata`), and compare.csv and
//! compare.svg hold every target. VictoriaMetrics is not installed in CI: its PromQL is the
//! one Strata answers here, plus the unit tests of `strata_bench::queries::tsbs_promql`.

#![allow(clippy::unwrap_used)]

mod common;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, json, request, scratch, strata, text};
use strata_bench::http::{BodyEncoding, HttpClient};

/// How long influxd may take to answer `/ping`.
const INFLUXD_START_LIMIT: Duration = Duration::from_secs(30);

/// The `influxd` binary: on PATH or at `/usr/bin/influxd`; panics (never skips) when it is
/// missing, naming the step that installs it.
fn influxd_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("influxd"))
            .find(|candidate| candidate.is_file())
    });
    let fallback = PathBuf::from("/usr/bin/influxd");
    match on_path {
        Some(path) => path,
        None if fallback.is_file() => fallback,
        None => panic!(
            "influxd (InfluxDB 1.x) is not installed: the bench compare test loads it beside \
             Strata. `.ci/run` installs Debian's `influxdb` package (as root: \
             `apt-get install -y influxdb`); install it and run the test again"
        ),
    }
}

/// A running influxd (killed on drop): its HTTP address, process id and directory.
struct Influxd {
    child: Child,
    http: SocketAddr,
    dir: PathBuf,
}

impl Drop for Influxd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// influxd with HTTP on a loopback port, everything else off, files under `dir`.
fn start_influxd(dir: &Path) -> Influxd {
    let binary = influxd_binary();
    std::fs::create_dir_all(dir).unwrap();
    let (http, rpc) = (free_port(), free_port());
    let d = dir.display();
    let config = format!(
        "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc}\"\n\
         [meta]\n  dir = \"{d}/meta\"\n\
         [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
         [monitor]\n  store-enabled = false\n\
         [http]\n  bind-address = \"127.0.0.1:{http}\"\n  log-enabled = false\n\
         [logging]\n  level = \"error\"\n"
    );
    std::fs::write(dir.join("influxdb.conf"), config).unwrap();
    let log = std::fs::File::create(dir.join("influxd.log")).unwrap();
    let child = Command::new(&binary)
        .arg("run")
        .arg("-config")
        .arg(dir.join("influxdb.conf"))
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
    let mut server = Influxd {
        child,
        http: SocketAddr::from(([127, 0, 0, 1], http)),
        dir: dir.to_path_buf(),
    };
    let deadline = Instant::now() + INFLUXD_START_LIMIT;
    // Bounded by the deadline.
    while Instant::now() < deadline {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("influxd exited ({status}): {}", server.log());
        }
        if std::net::TcpStream::connect(server.http).is_ok()
            && request(server.http, "GET", "/ping", &[], b"").status == 204
        {
            return server;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "influxd did not answer /ping within {INFLUXD_START_LIMIT:?}: {}",
        server.log()
    );
}

impl Influxd {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("influxd.log")).unwrap_or_default()
    }
}

/// Percent-encodes a query-string value.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `SELECT count(usage_user) FROM cpu` in database bench, through the server's `/query`.
fn stored_rows(addr: SocketAddr) -> u64 {
    let q = encode("SELECT count(usage_user) FROM cpu");
    // The workspace's client: influxd chunks its answers.
    let mut client = HttpClient::new(&addr.to_string(), Duration::from_secs(30));
    let reply = client
        .post(&format!("/query?db=bench&q={q}"), b"", BodyEncoding::Text)
        .unwrap();
    let body = String::from_utf8_lossy(&reply.body).into_owned();
    assert_eq!(reply.status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    answer["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("no count in {answer}"))
}

const HOSTS: u64 = 10;
/// Two hours of rows every minute.
const ROWS_PER_HOST: u64 = 120;
const TYPES: [&str; 5] = [
    "single-groupby-1-1-1",
    "single-groupby-5-1-12",
    "cpu-max-all-8",
    "double-groupby-1",
    "lastpoint",
];

#[test]
fn compare_loads_strata_and_influxdb_with_the_same_bytes_and_queries_both() {
    let dir = scratch("bench_compare_e2e");
    let strata_data = dir.join("strata-data");
    let server = Server::start(&strata_data, &[]);
    let influxd = start_influxd(&dir.join("influxd"));
    let out = dir.join("out");
    let report = dir.join("compare.json");
    let strata_target = format!(
        "strata=http://{},pid={},data={}",
        server.http,
        server.pid(),
        strata_data.display()
    );
    let influx_target = format!(
        "influxdb=http://{},pid={},data={}",
        influxd.http,
        influxd.child.id(),
        influxd.dir.display()
    );
    let run = strata(&[
        "bench",
        "compare",
        "--target",
        &strata_target,
        "--target",
        &influx_target,
        "--hosts",
        &HOSTS.to_string(),
        "--duration",
        "2h",
        "--interval",
        "60s",
        "--workers",
        "2",
        "--batch-rows",
        "100",
        "--queries",
        "3",
        "--promql-on-strata",
        "--out-dir",
        out.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    let stdout = text(&run.stdout);
    assert!(
        run.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}\ninfluxd:\n{}",
        text(&run.stderr),
        influxd.log()
    );
    let rows = HOSTS * ROWS_PER_HOST;

    // Every row reached each server, counted by the server itself.
    assert_eq!(stored_rows(server.http), rows);
    assert_eq!(stored_rows(influxd.http), rows);

    let r = json(&report);
    let targets = r["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2, "{r}");
    let (s, i) = (&targets[0], &targets[1]);
    assert_eq!(
        (s["name"].as_str(), s["kind"].as_str()),
        (Some("strata"), Some("strata"))
    );
    assert_eq!(
        (i["name"].as_str(), i["kind"].as_str()),
        (Some("influxdb"), Some("influxdb"))
    );
    // The same bodies, checked by checksum, batch count and bytes.
    let checksum = s["checksum"].as_str().unwrap();
    assert_eq!(checksum.len(), 18, "{checksum}");
    assert_eq!(i["checksum"].as_str(), Some(checksum));
    assert_eq!(s["batches"], 12);
    assert_eq!(i["batches"], 12);
    assert_eq!(s["body_bytes"], i["body_bytes"]);
    assert!(
        stdout.contains(&format!("FNV-1a 64 {checksum}: the same for every target")),
        "{stdout}"
    );
    for t in [s, i] {
        let load = &t["load"];
        assert_eq!(load["rows"], rows, "{t}");
        assert_eq!(load["rows_generated"], rows, "{t}");
        assert_eq!(load["points"], rows * 10, "{t}");
        assert_eq!(load["errors"], 0, "{t}");
        assert!(load["bytes_per_point"].as_f64().unwrap() > 0.0, "{t}");
        assert!(load["peak_rss_mb"].as_f64().unwrap() > 1.0, "{t}");
        assert!(
            load["rate_withheld"]
                .as_str()
                .unwrap()
                .contains("under 10 s")
        );
        assert!(t["cores"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
    }
    assert!(
        s["load"]["disk_bytes_note"]
            .as_str()
            .unwrap()
            .contains("after a flush (POST /api/v1/backup"),
        "{s}"
    );

    // Every type has a median and no failure: InfluxQL on both, PromQL on Strata.
    let runs = |t: &serde_json::Value| -> Vec<(String, Vec<serde_json::Value>)> {
        t["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|run| {
                (
                    run["language"].as_str().unwrap().to_string(),
                    run["types"].as_array().unwrap().clone(),
                )
            })
            .collect()
    };
    let strata_runs = runs(s);
    let influx_runs = runs(i);
    let languages = |runs: &[(String, Vec<serde_json::Value>)]| -> Vec<String> {
        runs.iter().map(|(l, _)| l.clone()).collect()
    };
    assert_eq!(languages(&strata_runs), ["influxql", "promql"]);
    assert_eq!(languages(&influx_runs), ["influxql"]);
    for (language, types) in strata_runs.iter().chain(&influx_runs) {
        let names: Vec<&str> = types
            .iter()
            .map(|t| t["query_type"].as_str().unwrap())
            .collect();
        assert_eq!(names, TYPES, "{language}");
        for t in types {
            if language == "promql" && t["query_type"] == "lastpoint" {
                assert!(
                    t["unsupported"]
                        .as_str()
                        .unwrap()
                        .contains("TSBS has no PromQL"),
                    "{t}"
                );
                continue;
            }
            assert_eq!(t["failures"], 0, "{language}: {t}");
            assert_eq!(t["answered"], 3, "{language}: {t}");
            assert!(t["median_ms"].as_f64().unwrap() > 0.0, "{language}: {t}");
            assert!(
                t["rows"].as_u64().unwrap() > 0,
                "{language}: data answered: {t}"
            );
        }
    }

    // The table, the CSV and the chart.
    assert!(
        stdout.contains("| Target | Kind | Language | Cores | Load (points/s) |"),
        "{stdout}"
    );
    assert!(!stdout.contains("FAILED"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("compare.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[1].starts_with("strata,strata,influxql,"), "{csv}");
    assert!(lines[2].starts_with("strata,strata,promql,"), "{csv}");
    assert!(lines[3].starts_with("influxdb,influxdb,influxql,"), "{csv}");
    assert!(lines.iter().skip(1).all(|l| l.contains(checksum)), "{csv}");
    let svg = std::fs::read_to_string(out.join("compare.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("influxdb (influxql)") && svg.contains("strata (promql)"));
    assert!(
        !out.join("flush-backup-strata").exists(),
        "the flush's backup copy is deleted"
    );

    drop(influxd);
    assert!(server.stop().success());
}

#[test]
fn bad_targets_are_refused_with_a_clear_message() {
    let run = strata(&["bench", "compare", "--target", "peer=http://127.0.0.1:1"]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(stderr.contains("add kind=strata"), "{stderr}");
    let run = strata(&[
        "bench",
        "compare",
        "--target",
        "strata=http://127.0.0.1:1",
        "--target",
        "strata=http://127.0.0.1:2",
    ]);
    assert!(!run.status.success());
    let stderr = text(&run.stderr);
    assert!(stderr.contains("\"strata\" is given twice"), "{stderr}");
}
