//! TSBS `cpu-only`: one `cpu` row per host every interval, ten integer random-walk fields.
//!
//! Shape as docs/workloads.md describes it (and as TSBS's devops generator builds it): hosts
//! `host_0 … host_{N-1}` with ten tags drawn once per host from fixed lists, and ten fields
//! `usage_*`, each a random walk clamped to [0, 100] with N(0, 1) steps started uniformly in
//! [0, 100), written as integers by truncation (`usage_user=58i`). Rows come in time order,
//! all hosts at one instant before the next instant, exactly `interval` apart.

use crate::rng::Rng;
use crate::write_int;

/// The ten field names, in the order TSBS writes them.
pub const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// The ten tag keys, in the order TSBS writes them.
pub const TAG_KEYS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// Regions and their datacenters (TSBS's list).
const REGIONS: [(&str, &[&str]); 9] = [
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: [&str; 2] = ["x64", "x86"];
const ENVIRONMENTS: [&str; 3] = ["production", "staging", "test"];
/// Racks per datacenter, services and service versions: TSBS draws these as integers.
const RACKS: u64 = 100;
const SERVICES: u64 = 20;
const SERVICE_VERSIONS: u64 = 2;

/// 2019-04-01T00:00:00Z in nanoseconds: the start of seed 001's run.
pub const SEED_001_START_NS: i64 = 1_554_076_800_000_000_000;
const NS_PER_S: i64 = 1_000_000_000;

/// What to generate. Defaults are seed 001's run: 4,000 hosts, three days, 10 s interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuOnlyConfig {
    /// Number of hosts (series); TSBS's `-scale`.
    pub hosts: u32,
    /// First timestamp, nanoseconds since the epoch (inclusive).
    pub start_ns: i64,
    /// End of the run, nanoseconds since the epoch (exclusive).
    pub end_ns: i64,
    /// Distance between two rows of one host, nanoseconds.
    pub interval_ns: i64,
    /// Seed of every random choice; the same seed gives the same bytes.
    pub seed: u64,
}

impl Default for CpuOnlyConfig {
    fn default() -> Self {
        Self {
            hosts: 4_000,
            start_ns: SEED_001_START_NS,
            end_ns: SEED_001_START_NS + 3 * 24 * 3600 * NS_PER_S,
            interval_ns: 10 * NS_PER_S,
            seed: 123,
        }
    }
}

impl CpuOnlyConfig {
    /// Instants in the run (rows per host).
    pub fn rows_per_host(&self) -> u64 {
        if self.end_ns <= self.start_ns || self.interval_ns <= 0 {
            return 0;
        }
        let span = i128::from(self.end_ns) - i128::from(self.start_ns);
        let interval = i128::from(self.interval_ns);
        ((span + interval - 1) / interval) as u64
    }

    /// Rows in the whole run.
    pub fn rows_total(&self) -> u64 {
        self.rows_per_host() * u64::from(self.hosts)
    }

    /// Data points (field values) in the whole run.
    pub fn points_total(&self) -> u64 {
        self.rows_total() * FIELDS.len() as u64
    }
}

/// One generated row: which host, when, and the ten field values in [`FIELDS`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuRow {
    /// Host index (`host_{host}`).
    pub host: u32,
    /// Timestamp, nanoseconds since the epoch.
    pub timestamp_ns: i64,
    /// Field values, [`FIELDS`] order.
    pub values: [i64; 10],
}

/// One host: its tag values and the state of its ten random walks.
#[derive(Debug, Clone)]
struct Host {
    tag_values: [String; 10],
    /// `cpu,hostname=…,service_environment=… ` — the line prefix, built once.
    line_prefix: Vec<u8>,
    walks: [f64; 10],
}

/// The streaming generator: yields rows in time order, holding only per-host state.
#[derive(Debug, Clone)]
pub struct CpuOnly {
    config: CpuOnlyConfig,
    hosts: Vec<Host>,
    rng: Rng,
    rows_per_host: u64,
    /// Index of the next instant and the next host within it.
    instant: u64,
    next_host: u32,
}

impl CpuOnly {
    /// A generator for `config`; hosts' tags and starting values are drawn here.
    pub fn new(config: CpuOnlyConfig) -> Self {
        let mut rng = Rng::new(config.seed);
        let hosts = (0..config.hosts).map(|i| Host::new(i, &mut rng)).collect();
        let rows_per_host = config.rows_per_host();
        Self {
            config,
            hosts,
            rng,
            rows_per_host,
            instant: 0,
            next_host: 0,
        }
    }

    /// The configuration this generator runs.
    pub fn config(&self) -> &CpuOnlyConfig {
        &self.config
    }

    /// Tag values of `host` in [`TAG_KEYS`] order.
    pub fn host_tags(&self, host: u32) -> &[String; 10] {
        &self.hosts[host as usize].tag_values
    }

    /// The next row, or `None` at the end of the run.
    pub fn next_row(&mut self) -> Option<CpuRow> {
        if self.config.hosts == 0 || self.instant >= self.rows_per_host {
            return None;
        }
        let host_index = self.next_host;
        let timestamp_ns = self.config.start_ns + self.instant as i64 * self.config.interval_ns;
        let host = &mut self.hosts[host_index as usize];
        // TSBS writes the current state, then advances the walk for the next instant.
        let values = host.walks.map(|w| w as i64);
        for walk in &mut host.walks {
            *walk = (*walk + self.rng.normal()).clamp(0.0, 100.0);
        }
        self.next_host += 1;
        if self.next_host == self.config.hosts {
            self.next_host = 0;
            self.instant += 1;
        }
        Some(CpuRow {
            host: host_index,
            timestamp_ns,
            values,
        })
    }

    /// Appends `row` as one line of line protocol (nanosecond timestamp) and a newline.
    pub fn write_line(&self, row: &CpuRow, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hosts[row.host as usize].line_prefix);
        for (i, (name, value)) in FIELDS.iter().zip(row.values).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            write_int(out, value);
            out.push(b'i');
        }
        out.push(b' ');
        write_int(out, row.timestamp_ns);
        out.push(b'\n');
    }

    /// Appends up to `max_rows` lines; returns how many were written (0 at the end).
    pub fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        let mut written = 0;
        while written < max_rows {
            let Some(row) = self.next_row() else { break };
            self.write_line(&row, out);
            written += 1;
        }
        written
    }
}

impl Host {
    fn new(index: u32, rng: &mut Rng) -> Self {
        let (region, datacenters) = rng.choose(&REGIONS);
        let tag_values = [
            format!("host_{index}"),
            region.to_string(),
            rng.choose(datacenters).to_string(),
            rng.below(RACKS).to_string(),
            rng.choose(&OSES).to_string(),
            rng.choose(&ARCHES).to_string(),
            rng.choose(&TEAMS).to_string(),
            rng.below(SERVICES).to_string(),
            rng.below(SERVICE_VERSIONS).to_string(),
            rng.choose(&ENVIRONMENTS).to_string(),
        ];
        let mut line_prefix = b"cpu".to_vec();
        for (key, value) in TAG_KEYS.iter().zip(&tag_values) {
            // Tag values here never need escaping: they come from the fixed lists above.
            line_prefix.push(b',');
            line_prefix.extend_from_slice(key.as_bytes());
            line_prefix.push(b'=');
            line_prefix.extend_from_slice(value.as_bytes());
        }
        line_prefix.push(b' ');
        let walks = std::array::from_fn(|_| rng.next_f64() * 100.0);
        Self {
            tag_values,
            line_prefix,
            walks,
        }
    }
}
