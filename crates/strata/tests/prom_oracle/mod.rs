//! The real Prometheus as an oracle for PromQL tests: data turned into TSDB blocks by
//! `promtool`, Prometheus started on them, and answers compared the way Prometheus'
//! clients read them.

#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::sql_common::send;

pub const PROMETHEUS: &str = "/usr/bin/prometheus";
pub const PROMTOOL: &str = "/usr/bin/promtool";

pub fn seconds(ms: i64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

pub fn cut(text: &str) -> String {
    text.chars().take(600).collect()
}

pub fn get(addr: SocketAddr, path: &str) -> (u16, serde_json::Value) {
    let answer = send(addr, "GET", path, &[], b"");
    (answer.status, answer.json())
}

/// Whether two answers agree: same status and error type; same result type; the same
/// series with the same points (values to a relative 1e-9, NaN equal to NaN). Series are
/// compared in label order except where the query sorts.
pub fn same(
    expected: &(u16, serde_json::Value),
    actual: &(u16, serde_json::Value),
) -> Result<(), String> {
    let (e, a) = (&expected.1, &actual.1);
    if expected.0 != actual.0 {
        return Err(format!("status {} vs {}", expected.0, actual.0));
    }
    if e["status"] != a["status"] || e["errorType"] != a["errorType"] {
        return Err("status or error type differ".into());
    }
    if e["status"] == "error" {
        return Ok(());
    }
    let (ed, ad) = (&e["data"], &a["data"]);
    if ed["resultType"] != ad["resultType"] {
        return Err("result types differ".into());
    }
    match ed["resultType"].as_str().unwrap() {
        "scalar" | "string" => point(&ed["result"], &ad["result"]),
        _ => {
            let key = |v: &serde_json::Value| -> BTreeMap<String, serde_json::Value> {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|item| (item["metric"].to_string(), item.clone()))
                    .collect()
            };
            let (em, am) = (key(&ed["result"]), key(&ad["result"]));
            if em.len() != ed["result"].as_array().unwrap().len() {
                return Err("Prometheus answered duplicate series".into());
            }
            if em.keys().collect::<Vec<_>>() != am.keys().collect::<Vec<_>>() {
                return Err(format!(
                    "series differ: {:?} vs {:?}",
                    em.keys().collect::<Vec<_>>(),
                    am.keys().collect::<Vec<_>>()
                ));
            }
            for (metric, item) in &em {
                let other = &am[metric];
                if let Some(values) = item.get("values") {
                    let (ev, av) = (
                        values.as_array().unwrap(),
                        other["values"].as_array().unwrap(),
                    );
                    if ev.len() != av.len() {
                        return Err(format!("{metric}: {} points vs {}", ev.len(), av.len()));
                    }
                    for (x, y) in ev.iter().zip(av) {
                        point(x, y).map_err(|e| format!("{metric}: {e}"))?;
                    }
                } else {
                    point(&item["value"], &other["value"]).map_err(|e| format!("{metric}: {e}"))?;
                }
            }
            Ok(())
        }
    }
}

pub fn point(e: &serde_json::Value, a: &serde_json::Value) -> Result<(), String> {
    if e[0] != a[0] {
        return Err(format!("time {} vs {}", e[0], a[0]));
    }
    let (es, as_) = (e[1].as_str().unwrap_or(""), a[1].as_str().unwrap_or(""));
    if es == as_ {
        return Ok(());
    }
    match (es.parse::<f64>(), as_.parse::<f64>()) {
        (Ok(x), Ok(y)) if (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) => Ok(()),
        _ => Err(format!("value {es} vs {as_}")),
    }
}

pub struct Prometheus {
    child: Child,
    /// Its HTTP address.
    pub web: SocketAddr,
}

impl Prometheus {
    /// Turns `openmetrics` (text ending in `# EOF`) into TSDB blocks with promtool under
    /// `work`, and starts Prometheus on them.
    pub fn with_data(work: &std::path::Path, openmetrics: &str) -> Prometheus {
        for tool in [PROMETHEUS, PROMTOOL] {
            assert!(
                std::path::Path::new(tool).exists(),
                "{tool} is missing: install Debian's `prometheus` package (.ci/run does)"
            );
        }
        let om = work.join("data.om");
        std::fs::write(&om, openmetrics).unwrap();
        let tsdb = work.join("tsdb");
        let created = Command::new(PROMTOOL)
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&om)
            .arg(&tsdb)
            .output()
            .unwrap();
        assert!(
            created.status.success(),
            "promtool failed: {}",
            String::from_utf8_lossy(&created.stderr)
        );
        Self::start(work, "global:\n  scrape_interval: 1m\n")
    }

    /// Starts Prometheus with `config` (YAML) and its TSDB in `work/tsdb`, on a free
    /// loopback port; returns once it is ready, or fails with its log.
    pub fn start(work: &std::path::Path, config: &str) -> Prometheus {
        assert!(
            std::path::Path::new(PROMETHEUS).exists(),
            "{PROMETHEUS} is missing: install Debian's `prometheus` package (.ci/run does)"
        );
        let tsdb = work.join("tsdb");
        let web = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap()
        };
        let config_path = work.join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let log_path = work.join("prometheus.log");
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", tsdb.display()))
            .arg("--storage.tsdb.retention.time=100y")
            .arg(format!("--web.listen-address={web}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log_path).unwrap())
            .spawn()
            .unwrap();
        let mut prometheus = Prometheus { child, web };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(std::net::TcpStream::connect(web).is_ok()
            && send(web, "GET", "/-/ready", &[], b"").status == 200)
        {
            let exited = prometheus.child.try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "Prometheus is not ready ({exited:?}); its log:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
