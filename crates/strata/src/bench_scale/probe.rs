//! What `bench scale` reads right around a load's clock (through `bench write`'s
//! [`LoadProbe`]): the server's `/metrics`, the server's CPU time and the loader's (this
//! process's) CPU time, before the clock starts and after it stops. The scrapes are made
//! outside the CPU samples, so the server's work answering them is not counted.

use std::time::Duration;

use strata_bench::http::HttpClient;
use strata_bench::scale::stages::{StageCosts, parse_write_metrics, stage_costs};
use strata_bench::stats::Process;

use crate::bench_write::LoadProbe;

/// How long a scrape of `/metrics` may take.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(30);

/// `GET /metrics` of the server at `addr` (`host:port`), as text.
pub(super) fn scrape_metrics(addr: &str) -> Result<String, String> {
    let response = HttpClient::new(addr, SCRAPE_TIMEOUT)
        .get("/metrics")
        .map_err(|e| format!("GET /metrics of {addr} failed: {e}"))?;
    if response.status != 200 {
        return Err(format!(
            "GET /metrics of {addr} answered {}: {}",
            response.status,
            String::from_utf8_lossy(&response.body).trim()
        ));
    }
    String::from_utf8(response.body).map_err(|e| format!("/metrics of {addr} is not UTF-8: {e}"))
}

/// One side of the clock.
struct Sample {
    metrics: Result<String, String>,
    server_cpu: Option<Duration>,
    loader_cpu: Option<Duration>,
}

/// Samples the server (by pid and HTTP address) and this process around a load.
pub(super) struct LoadSampler {
    server: Process,
    addr: String,
    before: Option<Sample>,
    after: Option<Sample>,
}

/// What the samples give.
pub(super) struct LoadFigures {
    /// The server's CPU time over the load's clock, seconds.
    pub server_cpu_s: Option<f64>,
    /// This process's CPU time over the load's clock, seconds.
    pub loader_cpu_s: Option<f64>,
    /// Where the server's write time went: `Ok(None)` when its `/metrics` has no
    /// `strata_write_stage_seconds_total` (an older server); an error when a scrape failed
    /// or a counter went backwards.
    pub stages: Result<Option<StageCosts>, String>,
}

impl LoadSampler {
    /// A sampler of the server with process id `pid`, HTTP on `addr` (`host:port`).
    pub(super) fn new(pid: u32, addr: &str) -> Self {
        Self {
            server: Process::Pid(pid),
            addr: addr.to_string(),
            before: None,
            after: None,
        }
    }

    /// The figures of the load, `loader_points` the points the loader had acknowledged
    /// (used for the stages when the server does not count points).
    pub(super) fn figures(&self, loader_points: u64) -> LoadFigures {
        let (Some(before), Some(after)) = (&self.before, &self.after) else {
            return LoadFigures {
                server_cpu_s: None,
                loader_cpu_s: None,
                stages: Err("the load was not sampled".into()),
            };
        };
        let delta =
            |b: Option<Duration>, a: Option<Duration>| Some(a?.saturating_sub(b?).as_secs_f64());
        let stages = match (&before.metrics, &after.metrics) {
            (Ok(b), Ok(a)) => parse_write_metrics(b).and_then(|b| {
                let a = parse_write_metrics(a)?;
                stage_costs(&b, &a, loader_points)
            }),
            (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        };
        LoadFigures {
            server_cpu_s: delta(before.server_cpu, after.server_cpu),
            loader_cpu_s: delta(before.loader_cpu, after.loader_cpu),
            stages,
        }
    }
}

impl LoadProbe for LoadSampler {
    fn before_load(&mut self) {
        let metrics = scrape_metrics(&self.addr);
        let server_cpu = self.server.cpu_time();
        let loader_cpu = Process::Current.cpu_time();
        self.before = Some(Sample {
            metrics,
            server_cpu,
            loader_cpu,
        });
    }

    fn after_load(&mut self) {
        let loader_cpu = Process::Current.cpu_time();
        let server_cpu = self.server.cpu_time();
        let metrics = scrape_metrics(&self.addr);
        self.after = Some(Sample {
            metrics,
            server_cpu,
            loader_cpu,
        });
    }
}
