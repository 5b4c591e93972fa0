//! A mixed run's settings: [`MixedConfig`] (IoTDB-benchmark's query settings and seed
//! 004's sizes by default), how clients stop ([`Stop`]), where writes go
//! ([`WriteProtocol`]), and the checks that refuse settings a run cannot honour.

use std::time::Duration;

use super::mix::Mix;
use crate::iot::IotConfig;

/// How the run ends for each client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many operations per client.
    Ops(u64),
    /// After this long (operations under way finish).
    Duration(Duration),
}

/// Where INGESTION sends its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteProtocol {
    /// `POST /write?db=…&precision=ms`; counts on 204.
    Http,
    /// The plain TCP line-protocol listener; counts once visible.
    Tcp,
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct MixedConfig {
    /// The data set.
    pub iot: IotConfig,
    /// Client threads.
    pub clients: usize,
    /// Operation weights.
    pub mix: Mix,
    /// When each client stops.
    pub stop: Stop,
    /// INGESTION over HTTP or TCP.
    pub protocol: WriteProtocol,
    /// `host:port` of the HTTP listener (reads, prefill, HTTP writes, visibility counts).
    pub http: String,
    /// Path prefix of the HTTP endpoints (usually empty).
    pub base_path: String,
    /// `host:port` of the TCP listener (needed for TCP writes); it must write into
    /// `database`.
    pub tcp: Option<String>,
    /// Database written and queried.
    pub database: String,
    /// Rows of history per device written before the clock starts.
    pub prefill_rows: u64,
    /// Devices per read (IoTDB's `QUERY_DEVICE_NUM`).
    pub query_devices: usize,
    /// Sensors per read (IoTDB's `QUERY_SENSOR_NUM`).
    pub query_sensors: usize,
    /// Width of a read's time window, ms (IoTDB's `QUERY_INTERVAL`).
    pub query_interval_ms: i64,
    /// GROUP_BY's bucket, ms (IoTDB's `GROUP_BY_TIME_UNIT`).
    pub group_by_ms: i64,
    /// The value filter's bound, hundredths (IoTDB's `QUERY_LOWER_VALUE`, -5).
    pub lower_value_centi: i64,
    /// How long TCP rows may take to become visible at the end.
    pub visibility_timeout: Duration,
    /// Timeout of one HTTP request.
    pub request_timeout: Duration,
    /// The server's process, for its CPU time and memory (when on this machine).
    pub server_pid: Option<u32>,
    /// The target as the report names it (`http://…`).
    pub target: String,
}

impl MixedConfig {
    /// IoTDB-benchmark's query settings and seed 004's sizes, against `http`
    /// (`host:port`), 100 operations per client over HTTP.
    pub fn new(http: &str) -> Self {
        let iot = IotConfig::default();
        Self {
            clients: iot.devices as usize,
            iot,
            mix: Mix::default(),
            stop: Stop::Ops(100),
            protocol: WriteProtocol::Http,
            http: http.to_string(),
            base_path: String::new(),
            tcp: None,
            database: "bench".into(),
            prefill_rows: 500,
            query_devices: 1,
            query_sensors: 1,
            query_interval_ms: 250_000,
            group_by_ms: 20_000,
            lower_value_centi: -500,
            visibility_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            server_pid: None,
            target: format!("http://{http}"),
        }
    }

    /// Refuses settings the run cannot honour, naming the flag to change.
    pub fn validate(&self) -> Result<(), String> {
        self.iot.validate()?;
        let devices = self.iot.devices as usize;
        if self.clients == 0 {
            return Err("--clients must be at least 1".into());
        }
        if self.clients > devices {
            return Err(format!(
                "--clients {} is more than --devices {devices}: each client is bound to its \
                 own devices (IoTDB-benchmark's IS_CLIENT_BIND)",
                self.clients
            ));
        }
        let per_client = devices / self.clients;
        if self.query_devices == 0 || self.query_devices > per_client {
            return Err(format!(
                "--query-devices must be between 1 and the devices of one client ({per_client} = \
                 {devices} devices / {} clients), not {}",
                self.clients, self.query_devices
            ));
        }
        if self.query_sensors == 0 || self.query_sensors > self.iot.sensors as usize {
            return Err(format!(
                "--query-sensors must be between 1 and --sensors ({}), not {}",
                self.iot.sensors, self.query_sensors
            ));
        }
        if self.mix.has_reads() && self.prefill_rows == 0 {
            return Err(
                "reads need history to query: --prefill-rows must be at least 1 when the mix \
                 has reads"
                    .into(),
            );
        }
        match self.stop {
            Stop::Ops(0) => return Err("--ops must be at least 1".into()),
            Stop::Duration(d) if d.is_zero() => {
                return Err("--duration must be longer than 0".into());
            }
            _ => {}
        }
        if self.query_interval_ms <= 0 || self.group_by_ms <= 0 {
            return Err("the query window and the GROUP_BY bucket must be positive".into());
        }
        Ok(())
    }

    /// Rows in a full query window (at least 1).
    pub(super) fn window_rows(&self) -> u64 {
        (self.query_interval_ms / self.iot.step_ms).max(1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixed::run;
    use crate::mixed::test_support::config;

    #[test]
    fn settings_the_run_cannot_honour_are_refused() {
        assert!(config().validate().is_ok());
        let refused = |change: fn(&mut MixedConfig), needle: &str| {
            let mut c = config();
            change(&mut c);
            let err = c.validate().unwrap_err();
            assert!(err.contains(needle), "{err}");
        };
        refused(|c| c.clients = 7, "IS_CLIENT_BIND");
        refused(|c| c.clients = 0, "--clients");
        refused(|c| c.query_devices = 3, "--query-devices");
        refused(|c| c.query_sensors = 4, "--query-sensors");
        refused(|c| c.prefill_rows = 0, "--prefill-rows");
        refused(|c| c.stop = Stop::Ops(0), "--ops");
        refused(|c| c.stop = Stop::Duration(Duration::ZERO), "--duration");
        refused(|c| c.iot.sensors = 0, "sensors");
        let mut tcp = config();
        tcp.protocol = WriteProtocol::Tcp;
        assert!(tcp.validate().is_ok());
        assert!(run(&tcp).unwrap_err().contains("TCP listener"));
        let mut writes_only = config();
        writes_only.mix = Mix::parse("ingestion=1").unwrap();
        writes_only.prefill_rows = 0;
        assert!(writes_only.validate().is_ok());
    }
}
