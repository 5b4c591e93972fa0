//! TSBS `devops`: nine measurements per host every interval, 101 fields in all.
//!
//! The shape follows TSBS's devops use case (`pkg/data/usecases/devops/` in
//! timescale/tsbs): each host reports `cpu`, `diskio`, `disk`, `kernel`, `mem`, `net`,
//! `nginx`, `postgresl` (TSBS's spelling) and `redis` at every instant. Every line carries the
//! host's ten tags ([`TAG_KEYS`], drawn once per host), then the measurement's own tags
//! ([`extra_tags`]), then its fields ([`fields`]) in TSBS's order. Field counts:
//!
//! | measurement | fields | extra tags            | values |
//! |-------------|-------:|-----------------------|--------|
//! | `cpu`       | 10     | —                     | walks clamped to [0, 100], N(0, 1) steps, start U[0, 100) |
//! | `diskio`    | 7      | `serial`              | rising walks from 0, steps \|N(50 or 100 or 5, 1)\| |
//! | `disk`      | 7      | `path`, `fstype`      | `free` walks in [0, 1 TiB] from 512 GiB, N(50, 1) steps; the rest derived |
//! | `kernel`    | 6      | —                     | `boot_time` fixed in [0, 240); five rising walks, \|N(5, 1)\| steps |
//! | `mem`       | 9      | —                     | total 8/12/16 GiB; used, cached, buffered clamped walks; three float percentages |
//! | `net`       | 8      | `interface`           | rising walks from 0, \|N(50, 1)\| or \|N(5, 1)\| steps |
//! | `nginx`     | 7      | `port`, `server`      | rising walks or walks clamped to [0, 100], N(5, 1) steps |
//! | `postgresl` | 16     | —                     | walks clamped to [0, 1000] (N(5, 1)); `temp_bytes` to [0, 1 GiB] (N(1024, 1)) |
//! | `redis`     | 31     | `port`, `server`      | `uptime_in_seconds`; rising, free and clamped walks |
//!
//! 10 + 7 + 7 + 6 + 9 + 8 + 7 + 16 + 31 = 101 ([`FIELDS_TOTAL`]), as TSBS counts. Every field
//! is an integer (TSBS truncates the walk's state toward zero) except `mem`'s three
//! `*_percent` fields, which are floats. A line shows the state of its walks, then the walks
//! step; the first line of every host shows the starting state (rising walks at 0).
//!
//! The `cpu` lines and the hosts' tags come from [`CpuOnly`] run on the same config, so a
//! devops run's `cpu` lines are byte for byte the cpu-only run with the same seed, and its
//! hosts are the same hosts. The other measurements draw from their own stream, seeded from
//! the same seed.
//!
//! Order: instant by instant; within an instant host by host; within a host the nine
//! measurements in [`MEASUREMENTS`] order. (TSBS's own simulator goes measurement by
//! measurement within an instant — every host's `cpu`, then every host's `diskio` … — and
//! draws from Go's `math/rand`, so its bytes are not reproduced, only its shape.)

use std::io::Write as _;

use crate::cpu_only::{self, CpuOnly, CpuOnlyConfig, TAG_KEYS};
use crate::rng::Rng;
use crate::write_int;

/// The nine measurements, in the order a host writes them. TSBS spells PostgreSQL's
/// `postgresl`.
pub const MEASUREMENTS: [&str; 9] = [
    "cpu",
    "diskio",
    "disk",
    "kernel",
    "mem",
    "net",
    "nginx",
    "postgresl",
    "redis",
];

const DISKIO_FIELDS: [&str; 7] = [
    "reads",
    "writes",
    "read_bytes",
    "write_bytes",
    "read_time",
    "write_time",
    "io_time",
];
const DISK_FIELDS: [&str; 7] = [
    "total",
    "free",
    "used",
    "used_percent",
    "inodes_total",
    "inodes_free",
    "inodes_used",
];
const KERNEL_FIELDS: [&str; 6] = [
    "boot_time",
    "interrupts",
    "context_switches",
    "processes_forked",
    "disk_pages_in",
    "disk_pages_out",
];
const MEM_FIELDS: [&str; 9] = [
    "total",
    "available",
    "used",
    "free",
    "cached",
    "buffered",
    "used_percent",
    "available_percent",
    "buffered_percent",
];
const NET_FIELDS: [&str; 8] = [
    "bytes_sent",
    "bytes_recv",
    "packets_sent",
    "packets_recv",
    "err_in",
    "err_out",
    "drop_in",
    "drop_out",
];
const NGINX_FIELDS: [&str; 7] = [
    "accepts", "active", "handled", "reading", "requests", "waiting", "writing",
];
const POSTGRESL_FIELDS: [&str; 16] = [
    "numbackends",
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "conflicts",
    "temp_files",
    "temp_bytes",
    "deadlocks",
    "blk_read_time",
    "blk_write_time",
];
const REDIS_FIELDS: [&str; 31] = [
    "uptime_in_seconds",
    "total_connections_received",
    "expired_keys",
    "evicted_keys",
    "keyspace_hits",
    "keyspace_misses",
    "instantaneous_ops_per_sec",
    "instantaneous_input_kbps",
    "instantaneous_output_kbps",
    "connected_clients",
    "used_memory",
    "used_memory_rss",
    "used_memory_peak",
    "used_memory_lua",
    "rdb_changes_since_last_save",
    "sync_full",
    "sync_partial_ok",
    "sync_partial_err",
    "pubsub_channels",
    "pubsub_patterns",
    "latest_fork_usec",
    "connected_slaves",
    "master_repl_offset",
    "repl_backlog_active",
    "repl_backlog_size",
    "repl_backlog_histlen",
    "mem_fragmentation_ratio",
    "used_cpu_sys",
    "used_cpu_user",
    "used_cpu_sys_children",
    "used_cpu_user_children",
];

/// Fields over the nine measurements: 101, as in TSBS.
pub const FIELDS_TOTAL: usize = cpu_only::FIELDS.len()
    + DISKIO_FIELDS.len()
    + DISK_FIELDS.len()
    + KERNEL_FIELDS.len()
    + MEM_FIELDS.len()
    + NET_FIELDS.len()
    + NGINX_FIELDS.len()
    + POSTGRESL_FIELDS.len()
    + REDIS_FIELDS.len();
const _: () = assert!(FIELDS_TOTAL == 101);

/// Field names of `measurement` in TSBS's order; empty for a name not in [`MEASUREMENTS`].
pub fn fields(measurement: &str) -> &'static [&'static str] {
    match measurement {
        "cpu" => &cpu_only::FIELDS,
        "diskio" => &DISKIO_FIELDS,
        "disk" => &DISK_FIELDS,
        "kernel" => &KERNEL_FIELDS,
        "mem" => &MEM_FIELDS,
        "net" => &NET_FIELDS,
        "nginx" => &NGINX_FIELDS,
        "postgresl" => &POSTGRESL_FIELDS,
        "redis" => &REDIS_FIELDS,
        _ => &[],
    }
}

/// Tag keys of `measurement` beyond the host's ten ([`TAG_KEYS`]), in TSBS's order; empty
/// for a measurement without any and for a name not in [`MEASUREMENTS`].
pub fn extra_tags(measurement: &str) -> &'static [&'static str] {
    match measurement {
        "diskio" => &["serial"],
        "disk" => &["path", "fstype"],
        "net" => &["interface"],
        "nginx" | "redis" => &["port", "server"],
        _ => &[],
    }
}

const NS_PER_S: i64 = 1_000_000_000;
const GIB: f64 = (1u64 << 30) as f64;
/// `disk`'s total bytes (1 TiB) and inode size.
const DISK_TOTAL: i64 = 1 << 40;
const INODE_SIZE: i64 = 4096;
/// `mem`'s total bytes, one per host.
const MEM_TOTALS: [i64; 3] = [8 << 30, 12 << 30, 16 << 30];
const FS_TYPES: [&str; 3] = ["ext3", "ext4", "btrfs"];
/// Mixed into the seed for the non-cpu measurements' stream, so it differs from the stream
/// [`CpuOnly`] draws the hosts and `cpu` values from.
const STREAM_SALT: u64 = 0x6465_766f_7073_0001;

/// How a walk moves each interval: a step drawn from N(`mean`, `std_dev`), then
/// `rule` applied.
#[derive(Debug, Clone, Copy)]
struct Walk {
    mean: f64,
    std_dev: f64,
    rule: Rule,
    start: f64,
}

#[derive(Debug, Clone, Copy)]
enum Rule {
    /// Adds the step's magnitude: never decreases (TSBS's `MWD`).
    Rising,
    /// Adds the step, then clamps to `[min, max]` (TSBS's `CWD`).
    Clamped { min: f64, max: f64 },
    /// Adds the step, unbounded (TSBS's `WD`).
    Free,
}

const fn rising(mean: f64) -> Walk {
    Walk {
        mean,
        std_dev: 1.0,
        rule: Rule::Rising,
        start: 0.0,
    }
}

const fn clamped(mean: f64, max: f64, start: f64) -> Walk {
    Walk {
        mean,
        std_dev: 1.0,
        rule: Rule::Clamped { min: 0.0, max },
        start,
    }
}

const FREE_1: Walk = Walk {
    mean: 1.0,
    std_dev: 1.0,
    rule: Rule::Free,
    start: 0.0,
};

const DISKIO_WALKS: [Walk; 7] = [
    rising(50.0),
    rising(50.0),
    rising(100.0),
    rising(100.0),
    rising(5.0),
    rising(5.0),
    rising(5.0),
];
/// `kernel`'s walks: every field but `boot_time`.
const KERNEL_WALKS: [Walk; 5] = [rising(5.0); 5];
const NET_WALKS: [Walk; 8] = [
    rising(50.0),
    rising(50.0),
    rising(50.0),
    rising(50.0),
    rising(5.0),
    rising(5.0),
    rising(5.0),
    rising(5.0),
];
const NGINX_WALKS: [Walk; 7] = [
    rising(5.0),
    clamped(5.0, 100.0, 0.0),
    rising(5.0),
    clamped(5.0, 100.0, 0.0),
    rising(5.0),
    clamped(5.0, 100.0, 0.0),
    clamped(5.0, 100.0, 0.0),
];
const PG_LOW: Walk = clamped(5.0, 1000.0, 0.0);
const POSTGRESL_WALKS: [Walk; 16] = [
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    PG_LOW,
    clamped(1024.0, GIB, 0.0),
    PG_LOW,
    PG_LOW,
    PG_LOW,
];
const REDIS_LOW: Walk = clamped(5.0, 1000.0, 0.0);
const REDIS_MEMORY: Walk = clamped(50.0, 16.0 * GIB, 8.0 * GIB);
/// `redis`'s walks: every field but `uptime_in_seconds`.
const REDIS_WALKS: [Walk; 30] = [
    rising(5.0),
    rising(50.0),
    rising(50.0),
    rising(50.0),
    rising(50.0),
    FREE_1,
    FREE_1,
    FREE_1,
    clamped(50.0, 10_000.0, 0.0),
    REDIS_MEMORY,
    REDIS_MEMORY,
    REDIS_MEMORY,
    REDIS_MEMORY,
    clamped(50.0, 10_000.0, 0.0),
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    clamped(5.0, 100.0, 0.0),
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
    REDIS_LOW,
];

/// Starting states of `walks`.
fn starts<const N: usize>(walks: &[Walk; N]) -> [f64; N] {
    walks.map(|w| w.start)
}

/// Moves every walk in `states` one interval.
fn advance(states: &mut [f64], walks: &[Walk], rng: &mut Rng) {
    for (state, walk) in states.iter_mut().zip(walks) {
        let step = rng.normal() * walk.std_dev + walk.mean;
        *state = match walk.rule {
            Rule::Rising => *state + step.abs(),
            Rule::Clamped { min, max } => (*state + step).clamp(min, max),
            Rule::Free => *state + step,
        };
    }
}

/// What to generate. Defaults are seed 001's run (as [`CpuOnlyConfig::default`]): 4,000
/// hosts, three days, 10 s interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevopsConfig {
    /// Number of hosts; TSBS's `-scale`.
    pub hosts: u32,
    /// First timestamp, nanoseconds since the epoch (inclusive).
    pub start_ns: i64,
    /// End of the run, nanoseconds since the epoch (exclusive).
    pub end_ns: i64,
    /// Distance between two instants, nanoseconds.
    pub interval_ns: i64,
    /// Seed of every random choice; the same seed gives the same bytes.
    pub seed: u64,
}

impl Default for DevopsConfig {
    fn default() -> Self {
        let CpuOnlyConfig {
            hosts,
            start_ns,
            end_ns,
            interval_ns,
            seed,
        } = CpuOnlyConfig::default();
        Self {
            hosts,
            start_ns,
            end_ns,
            interval_ns,
            seed,
        }
    }
}

impl DevopsConfig {
    /// The cpu-only config over the same hosts, span and seed.
    fn cpu_only(&self) -> CpuOnlyConfig {
        CpuOnlyConfig {
            hosts: self.hosts,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            interval_ns: self.interval_ns,
            seed: self.seed,
        }
    }

    /// Instants in the run: `⌈(end − start) / interval⌉`, as cpu-only counts them.
    pub fn instants(&self) -> u64 {
        self.cpu_only().rows_per_host()
    }

    /// Lines in the whole run: hosts × instants × 9.
    pub fn rows_total(&self) -> u64 {
        self.instants() * u64::from(self.hosts) * MEASUREMENTS.len() as u64
    }

    /// Data points (field values) in the whole run: hosts × instants × 101.
    pub fn points_total(&self) -> u64 {
        self.instants() * u64::from(self.hosts) * FIELDS_TOTAL as u64
    }
}

/// One host's state for the eight measurements after `cpu`.
#[derive(Debug, Clone)]
struct Host {
    /// The line prefixes (`diskio,hostname=…,serial=… ` …) of `diskio` … `redis`, one after
    /// the other; built once.
    prefixes: Vec<u8>,
    /// End of each prefix in `prefixes`.
    prefix_ends: [usize; 8],
    diskio: [f64; 7],
    disk_free: f64,
    boot_time: i64,
    kernel: [f64; 5],
    mem_total: i64,
    /// `mem`'s used, cached and buffered bytes.
    mem: [f64; 3],
    net: [f64; 8],
    nginx: [f64; 7],
    postgresl: [f64; 16],
    redis: [f64; 30],
}

impl Host {
    /// Draws the host's measurement tags and starting states; `tags` are its ten host tags.
    fn new(tags: &[String; 10], rng: &mut Rng) -> Self {
        let serial = format!(
            "{:03}-{:03}-{:03}",
            rng.below(1000),
            rng.below(1000),
            rng.below(1000)
        );
        let path = format!("/dev/sda{}", rng.below(10));
        let fstype = rng.choose(&FS_TYPES);
        let boot_time = rng.below(240) as i64;
        let mem_total = rng.choose(&MEM_TOTALS);
        let mem = std::array::from_fn(|_| rng.next_f64() * mem_total as f64);
        let interface = format!("eth{}", rng.below(4));
        // TSBS draws the server's number before the port.
        let nginx_server = format!("nginx_{}", rng.below(100_000));
        let nginx_port = (rng.below(20_000) + 1024).to_string();
        let redis_server = format!("redis_{}", rng.below(100_000));
        let redis_port = (rng.below(20_000) + 1024).to_string();

        let extras: [&[(&str, &str)]; 8] = [
            &[("serial", &serial)],
            &[("path", &path), ("fstype", fstype)],
            &[],
            &[],
            &[("interface", &interface)],
            &[("port", &nginx_port), ("server", &nginx_server)],
            &[],
            &[("port", &redis_port), ("server", &redis_server)],
        ];
        let mut prefixes = Vec::new();
        let mut prefix_ends = [0; 8];
        for ((measurement, extra), end) in
            MEASUREMENTS[1..].iter().zip(extras).zip(&mut prefix_ends)
        {
            prefixes.extend_from_slice(measurement.as_bytes());
            let host_tags = TAG_KEYS.into_iter().zip(tags.iter().map(String::as_str));
            // Tag values never need escaping: they come from fixed lists and number formats.
            for (key, value) in host_tags.chain(extra.iter().copied()) {
                prefixes.push(b',');
                prefixes.extend_from_slice(key.as_bytes());
                prefixes.push(b'=');
                prefixes.extend_from_slice(value.as_bytes());
            }
            prefixes.push(b' ');
            *end = prefixes.len();
        }
        prefixes.shrink_to_fit();
        Self {
            prefixes,
            prefix_ends,
            diskio: starts(&DISKIO_WALKS),
            disk_free: (DISK_TOTAL / 2) as f64,
            boot_time,
            kernel: starts(&KERNEL_WALKS),
            mem_total,
            mem,
            net: starts(&NET_WALKS),
            nginx: starts(&NGINX_WALKS),
            postgresl: starts(&POSTGRESL_WALKS),
            redis: starts(&REDIS_WALKS),
        }
    }

    /// The line prefix of measurement `index` (1 = `diskio` … 8 = `redis`).
    fn prefix(&self, index: usize) -> &[u8] {
        let start = if index == 1 {
            0
        } else {
            self.prefix_ends[index - 2]
        };
        &self.prefixes[start..self.prefix_ends[index - 1]]
    }
}

/// Appends `key=<value>i,`.
fn int_field(out: &mut Vec<u8>, key: &str, value: i64) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    write_int(out, value);
    out.extend_from_slice(b"i,");
}

/// Appends `key=<value>,` with the float in its shortest round-trip decimal form (no
/// exponent), as TSBS writes floats.
fn float_field(out: &mut Vec<u8>, key: &str, value: f64) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{value}");
    out.push(b',');
}

/// Appends one integer field per walk, its state truncated toward zero as TSBS does.
fn walk_fields(out: &mut Vec<u8>, keys: &[&str], states: &[f64]) {
    for (key, state) in keys.iter().zip(states) {
        int_field(out, key, *state as i64);
    }
}

/// The streaming generator: lines in time order, holding only per-host state.
#[derive(Debug, Clone)]
pub struct Devops {
    config: DevopsConfig,
    /// Hosts' tags and the `cpu` lines.
    cpu: CpuOnly,
    hosts: Vec<Host>,
    rng: Rng,
    instants: u64,
    /// The next line: instant, host within it, measurement within the host.
    instant: u64,
    next_host: u32,
    next_measurement: usize,
    /// Timestamp of `instant`, and whole seconds since the start (`redis`'s uptime).
    timestamp_ns: i64,
    uptime_s: i64,
}

impl Devops {
    /// A generator for `config`; hosts' tags and starting values are drawn here.
    pub fn new(config: DevopsConfig) -> Self {
        let cpu = CpuOnly::new(config.cpu_only());
        let mut rng = Rng::new(config.seed ^ STREAM_SALT);
        let hosts = (0..config.hosts)
            .map(|i| Host::new(cpu.host_tags(i), &mut rng))
            .collect();
        let instants = config.instants();
        let timestamp_ns = config.start_ns;
        Self {
            config,
            cpu,
            hosts,
            rng,
            instants,
            instant: 0,
            next_host: 0,
            next_measurement: 0,
            timestamp_ns,
            uptime_s: 0,
        }
    }

    /// The configuration this generator runs.
    pub fn config(&self) -> &DevopsConfig {
        &self.config
    }

    /// Appends up to `max_rows` lines (one line is one measurement of one host at one
    /// instant, nanosecond timestamp, trailing newline); returns how many (0 at the end).
    pub fn write_lines(&mut self, max_rows: usize, out: &mut Vec<u8>) -> usize {
        let mut written = 0;
        while written < max_rows && self.config.hosts > 0 && self.instant < self.instants {
            if !self.write_next(out) {
                break;
            }
            written += 1;
            self.next_measurement += 1;
            if self.next_measurement == MEASUREMENTS.len() {
                self.next_measurement = 0;
                self.next_host += 1;
                if self.next_host == self.config.hosts {
                    self.next_host = 0;
                    self.instant += 1;
                    self.timestamp_ns = self.timestamp_ns.wrapping_add(self.config.interval_ns);
                    let elapsed = i128::from(self.instant) * i128::from(self.config.interval_ns);
                    self.uptime_s = (elapsed / i128::from(NS_PER_S)) as i64;
                }
            }
        }
        written
    }

    /// Writes the line at the cursor, then steps that measurement's walks. False only if the
    /// cpu-only generator ran out first, which its shared config rules out.
    fn write_next(&mut self, out: &mut Vec<u8>) -> bool {
        let index = self.next_measurement;
        if index == 0 {
            let Some(row) = self.cpu.next_row() else {
                return false;
            };
            self.cpu.write_line(&row, out);
            return true;
        }
        let rng = &mut self.rng;
        let host = &mut self.hosts[self.next_host as usize];
        out.extend_from_slice(host.prefix(index));
        match index {
            1 => {
                walk_fields(out, &DISKIO_FIELDS, &host.diskio);
                advance(&mut host.diskio, &DISKIO_WALKS, rng);
            }
            2 => {
                let free = host.disk_free as i64;
                let used = DISK_TOTAL - free;
                let used_percent = (100.0 * (used as f64 / DISK_TOTAL as f64)) as i64;
                let inodes_total = DISK_TOTAL / INODE_SIZE;
                let inodes_free = free / INODE_SIZE;
                let values = [
                    DISK_TOTAL,
                    free,
                    used,
                    used_percent,
                    inodes_total,
                    inodes_free,
                    inodes_total - inodes_free,
                ];
                for (key, value) in DISK_FIELDS.iter().zip(values) {
                    int_field(out, key, value);
                }
                let step = rng.normal() + 50.0;
                host.disk_free = (host.disk_free + step).clamp(0.0, DISK_TOTAL as f64);
            }
            3 => {
                int_field(out, KERNEL_FIELDS[0], host.boot_time);
                walk_fields(out, &KERNEL_FIELDS[1..], &host.kernel);
                advance(&mut host.kernel, &KERNEL_WALKS, rng);
            }
            4 => {
                let total = host.mem_total;
                let [used, cached, buffered] = host.mem.map(|v| v as i64);
                let available = total - used;
                let ints = [total, available, used, available, cached, buffered];
                for (key, value) in MEM_FIELDS.iter().zip(ints) {
                    int_field(out, key, value);
                }
                let total = total as f64;
                // TSBS's expressions, so the floats round the same way.
                float_field(out, MEM_FIELDS[6], 100.0 * (used as f64 / total));
                float_field(out, MEM_FIELDS[7], 100.0 * (available as f64 / total));
                float_field(out, MEM_FIELDS[8], 100.0 * buffered as f64 / total);
                for state in &mut host.mem {
                    let step = rng.normal() * (total / 64.0);
                    *state = (*state + step).clamp(0.0, total);
                }
            }
            5 => {
                walk_fields(out, &NET_FIELDS, &host.net);
                advance(&mut host.net, &NET_WALKS, rng);
            }
            6 => {
                walk_fields(out, &NGINX_FIELDS, &host.nginx);
                advance(&mut host.nginx, &NGINX_WALKS, rng);
            }
            7 => {
                walk_fields(out, &POSTGRESL_FIELDS, &host.postgresl);
                advance(&mut host.postgresl, &POSTGRESL_WALKS, rng);
            }
            _ => {
                int_field(out, REDIS_FIELDS[0], self.uptime_s);
                walk_fields(out, &REDIS_FIELDS[1..], &host.redis);
                advance(&mut host.redis, &REDIS_WALKS, rng);
            }
        }
        // The last field's comma becomes the space before the timestamp.
        if let Some(last) = out.last_mut() {
            *last = b' ';
        }
        write_int(out, self.timestamp_ns);
        out.push(b'\n');
        true
    }
}
