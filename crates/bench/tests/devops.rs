//! The TSBS devops generator: TSBS's names, the line format, value ranges, sizes, order,
//! determinism and memory.

// The counting allocator below is the only unsafe code: it forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;

use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, SEED_001_START_NS, TAG_KEYS};
use strata_bench::devops::{Devops, DevopsConfig, FIELDS_TOTAL, MEASUREMENTS, extra_tags, fields};
use strata_lineproto::{FieldValue, ParseOptions, parse_lines};

/// Counts the allocations (and reallocations) made by the current thread, so a test can
/// check that generating lines allocates nothing.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_allocation() {
    // During thread teardown the counter may be gone; those allocations do not matter.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the contract.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: the caller's guarantees are passed on as they are.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_allocation();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

const INTERVAL_NS: i64 = 10_000_000_000;
const GIB: i64 = 1 << 30;

fn small(hosts: u32, instants: i64, seed: u64) -> DevopsConfig {
    DevopsConfig {
        hosts,
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + instants * INTERVAL_NS,
        interval_ns: INTERVAL_NS,
        seed,
    }
}

fn all_lines(config: DevopsConfig, chunk: usize) -> Vec<u8> {
    let mut generator = Devops::new(config);
    let mut out = Vec::new();
    while generator.write_lines(chunk, &mut out) > 0 {}
    out
}

/// One parsed line, owned.
#[derive(Debug, Clone)]
struct Row {
    measurement: String,
    tags: Vec<(String, String)>,
    fields: Vec<(String, Value)>,
    timestamp_ns: i64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(i64),
    Float(f64),
}

impl Row {
    fn tag(&self, key: &str) -> &str {
        let found = self.tags.iter().find(|(k, _)| k == key);
        &found
            .unwrap_or_else(|| panic!("no tag {key} in {self:?}"))
            .1
    }

    fn int(&self, key: &str) -> i64 {
        match self.fields.iter().find(|(k, _)| k == key) {
            Some((_, Value::Int(v))) => *v,
            other => panic!("{key} is not an integer field: {other:?} in {self:?}"),
        }
    }

    fn float(&self, key: &str) -> f64 {
        match self.fields.iter().find(|(k, _)| k == key) {
            Some((_, Value::Float(v))) => *v,
            other => panic!("{key} is not a float field: {other:?} in {self:?}"),
        }
    }

    fn ints(&self) -> Vec<i64> {
        self.fields
            .iter()
            .map(|(k, v)| match v {
                Value::Int(v) => *v,
                Value::Float(_) => panic!("{k} is a float in {self:?}"),
            })
            .collect()
    }
}

fn parse(bytes: &[u8]) -> Vec<Row> {
    parse_lines(bytes, &ParseOptions::default())
        .map(|line| {
            let line = line.expect("every generated line parses");
            Row {
                measurement: line.measurement.to_string(),
                tags: line
                    .tags
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                fields: line
                    .fields
                    .iter()
                    .map(|(k, v)| {
                        let value = match v {
                            FieldValue::Integer(i) => Value::Int(*i),
                            FieldValue::Float(f) => Value::Float(*f),
                            other => panic!("unexpected value type {other:?}"),
                        };
                        (k.to_string(), value)
                    })
                    .collect(),
                timestamp_ns: line.timestamp_ns.expect("every line has a timestamp"),
            }
        })
        .collect()
}

/// TSBS's field names, in order, as its Go source (`pkg/data/usecases/devops/*.go`) appends
/// them to a point.
const TSBS_FIELDS: [(&str, &[&str]); 9] = [
    (
        "cpu",
        &[
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
        ],
    ),
    (
        "diskio",
        &[
            "reads",
            "writes",
            "read_bytes",
            "write_bytes",
            "read_time",
            "write_time",
            "io_time",
        ],
    ),
    (
        "disk",
        &[
            "total",
            "free",
            "used",
            "used_percent",
            "inodes_total",
            "inodes_free",
            "inodes_used",
        ],
    ),
    (
        "kernel",
        &[
            "boot_time",
            "interrupts",
            "context_switches",
            "processes_forked",
            "disk_pages_in",
            "disk_pages_out",
        ],
    ),
    (
        "mem",
        &[
            "total",
            "available",
            "used",
            "free",
            "cached",
            "buffered",
            "used_percent",
            "available_percent",
            "buffered_percent",
        ],
    ),
    (
        "net",
        &[
            "bytes_sent",
            "bytes_recv",
            "packets_sent",
            "packets_recv",
            "err_in",
            "err_out",
            "drop_in",
            "drop_out",
        ],
    ),
    (
        "nginx",
        &[
            "accepts", "active", "handled", "reading", "requests", "waiting", "writing",
        ],
    ),
    (
        "postgresl",
        &[
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
        ],
    ),
    (
        "redis",
        &[
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
        ],
    ),
];

const TSBS_EXTRA_TAGS: [(&str, &[&str]); 9] = [
    ("cpu", &[]),
    ("diskio", &["serial"]),
    ("disk", &["path", "fstype"]),
    ("kernel", &[]),
    ("mem", &[]),
    ("net", &["interface"]),
    ("nginx", &["port", "server"]),
    ("postgresl", &[]),
    ("redis", &["port", "server"]),
];

#[test]
fn field_names_are_tsbs_and_total_101() {
    let names: Vec<&str> = TSBS_FIELDS.iter().map(|(m, _)| *m).collect();
    assert_eq!(names, MEASUREMENTS);
    for (measurement, expected) in TSBS_FIELDS {
        assert_eq!(fields(measurement), expected, "{measurement}");
    }
    let counts: Vec<usize> = MEASUREMENTS.iter().map(|m| fields(m).len()).collect();
    assert_eq!(counts, [10, 7, 7, 6, 9, 8, 7, 16, 31]);
    assert_eq!(counts.iter().sum::<usize>(), 101);
    assert_eq!(FIELDS_TOTAL, 101);
    assert!(fields("postgresql").is_empty());
}

#[test]
fn extra_tag_keys_are_tsbs() {
    for (measurement, expected) in TSBS_EXTRA_TAGS {
        assert_eq!(extra_tags(measurement), expected, "{measurement}");
    }
    assert!(extra_tags("nope").is_empty());
}

#[test]
fn default_is_seed_001_run() {
    let config = DevopsConfig::default();
    let cpu = CpuOnlyConfig::default();
    assert_eq!(
        (
            config.hosts,
            config.start_ns,
            config.end_ns,
            config.interval_ns,
            config.seed
        ),
        (
            cpu.hosts,
            cpu.start_ns,
            cpu.end_ns,
            cpu.interval_ns,
            cpu.seed
        )
    );
    assert_eq!(config.hosts, 4_000);
    assert_eq!(config.instants(), 25_920);
    assert_eq!(config.rows_total(), 4_000 * 25_920 * 9);
    assert_eq!(config.points_total(), 4_000 * 25_920 * 101);
}

#[test]
fn rows_total_counts_the_lines_in_time_order() {
    // 3 hosts, one hour at 10 s: 360 instants.
    let config = small(3, 360, 4);
    assert_eq!(config.instants(), 360);
    assert_eq!(config.rows_total(), 3 * 360 * 9);
    let rows = parse(&all_lines(config.clone(), 100));
    assert_eq!(rows.len() as u64, config.rows_total());
    for (k, row) in rows.iter().enumerate() {
        let instant = (k / 27) as i64;
        let host = (k / 9) % 3;
        assert_eq!(row.measurement, MEASUREMENTS[k % 9], "line {k}");
        assert_eq!(row.tag("hostname"), format!("host_{host}"), "line {k}");
        assert_eq!(
            row.timestamp_ns,
            SEED_001_START_NS + instant * INTERVAL_NS,
            "line {k}"
        );
    }
    // Consecutive instants are exactly one interval apart.
    let instants: Vec<i64> = rows.iter().step_by(27).map(|r| r.timestamp_ns).collect();
    assert!(instants.windows(2).all(|w| w[1] - w[0] == INTERVAL_NS));

    // A span that is not a whole number of intervals ends with a partial one, as cpu-only.
    let mut ragged = small(2, 2, 4);
    ragged.end_ns += INTERVAL_NS / 2;
    assert_eq!(ragged.instants(), 3);
    let lines = all_lines(ragged.clone(), 5);
    assert_eq!(
        lines.iter().filter(|b| **b == b'\n').count() as u64,
        ragged.rows_total()
    );
}

#[test]
fn lines_parse_with_every_tag_and_field_typed() {
    let config = small(6, 30, 11);
    let rows = parse(&all_lines(config, 64));
    assert_eq!(rows.len(), 6 * 30 * 9);
    let mut host_tags: HashMap<String, Vec<(String, String)>> = HashMap::new();
    let mut extras: HashMap<(String, String), Vec<(String, String)>> = HashMap::new();
    for row in &rows {
        let keys: Vec<&str> = row.tags.iter().map(|(k, _)| k.as_str()).collect();
        let mut expected: Vec<&str> = TAG_KEYS.to_vec();
        expected.extend_from_slice(extra_tags(&row.measurement));
        assert_eq!(keys, expected, "{row:?}");
        let names: Vec<&str> = row.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, fields(&row.measurement), "{row:?}");
        for (name, value) in &row.fields {
            let float = row.measurement == "mem" && name.ends_with("_percent");
            assert_eq!(matches!(value, Value::Float(_)), float, "{name} in {row:?}");
        }
        // A host's tags are the same on all its measurements and instants, and so are the
        // measurement's own tags.
        let hostname = row.tag("hostname").to_string();
        let tags = row.tags[..10].to_vec();
        assert_eq!(
            host_tags.entry(hostname.clone()).or_insert(tags.clone()),
            &tags
        );
        let own = row.tags[10..].to_vec();
        assert_eq!(
            extras
                .entry((hostname, row.measurement.clone()))
                .or_insert(own.clone()),
            &own
        );
    }
    assert_eq!(host_tags.len(), 6);
}

#[test]
fn extra_tag_values_have_tsbs_forms() {
    let rows = parse(&all_lines(small(40, 1, 12), 1000));
    let number_below = |text: &str, prefix: &str, bound: u64| {
        let n: u64 = text.strip_prefix(prefix).unwrap().parse().unwrap();
        assert!(n < bound, "{text}");
    };
    for row in &rows {
        match row.measurement.as_str() {
            "diskio" => {
                let serial = row.tag("serial");
                let parts: Vec<&str> = serial.split('-').collect();
                assert_eq!(parts.len(), 3, "{serial}");
                assert!(
                    parts
                        .iter()
                        .all(|p| p.len() == 3 && p.parse::<u32>().is_ok())
                );
            }
            "disk" => {
                number_below(row.tag("path"), "/dev/sda", 10);
                assert!(["ext3", "ext4", "btrfs"].contains(&row.tag("fstype")));
            }
            "net" => number_below(row.tag("interface"), "eth", 4),
            "nginx" | "redis" => {
                let port: u64 = row.tag("port").parse().unwrap();
                assert!((1024..21_024).contains(&port), "{port}");
                let prefix = format!("{}_", row.measurement);
                number_below(row.tag("server"), &prefix, 100_000);
            }
            _ => assert_eq!(row.tags.len(), 10),
        }
    }
}

/// Integer fields that TSBS models as rising walks starting at 0.
fn rising(measurement: &str, field: &str) -> bool {
    match measurement {
        "diskio" | "net" => true,
        "kernel" => field != "boot_time",
        "nginx" => ["accepts", "handled", "requests"].contains(&field),
        "redis" => [
            "total_connections_received",
            "expired_keys",
            "evicted_keys",
            "keyspace_hits",
            "keyspace_misses",
        ]
        .contains(&field),
        _ => false,
    }
}

#[test]
fn values_stay_in_tsbs_ranges() {
    let config = small(8, 400, 13);
    let rows = parse(&all_lines(config, 500));
    let mut previous: HashMap<(String, String), Vec<i64>> = HashMap::new();
    for row in &rows {
        let first_instant = row.timestamp_ns == SEED_001_START_NS;
        let key = (row.tag("hostname").to_string(), row.measurement.clone());
        match row.measurement.as_str() {
            "cpu" => assert!(row.ints().iter().all(|v| (0..=100).contains(v)), "{row:?}"),
            "disk" => {
                let (total, free, used) = (row.int("total"), row.int("free"), row.int("used"));
                assert_eq!(total, 1 << 40);
                assert!(((1 << 39)..=(1 << 40)).contains(&free), "{row:?}");
                assert_eq!(free + used, total);
                assert_eq!(row.int("used_percent"), 100 * used / total);
                assert_eq!(row.int("inodes_total"), total / 4096);
                assert_eq!(row.int("inodes_free"), free / 4096);
                assert_eq!(
                    row.int("inodes_used"),
                    row.int("inodes_total") - row.int("inodes_free")
                );
            }
            "kernel" => assert!((0..240).contains(&row.int("boot_time")), "{row:?}"),
            "mem" => {
                let total = row.int("total");
                assert!([8 * GIB, 12 * GIB, 16 * GIB].contains(&total), "{row:?}");
                for field in ["used", "cached", "buffered"] {
                    assert!((0..=total).contains(&row.int(field)), "{row:?}");
                }
                assert_eq!(row.int("available"), total - row.int("used"));
                assert_eq!(row.int("free"), row.int("available"));
                for field in ["used_percent", "available_percent", "buffered_percent"] {
                    assert!((0.0..=100.0).contains(&row.float(field)), "{row:?}");
                }
                let sum = row.float("used_percent") + row.float("available_percent");
                assert!((sum - 100.0).abs() < 1e-9, "{row:?}");
            }
            "nginx" => {
                for field in ["active", "reading", "waiting", "writing"] {
                    assert!((0..=100).contains(&row.int(field)), "{row:?}");
                }
            }
            "postgresl" => {
                for (name, value) in fields("postgresl").iter().zip(row.ints()) {
                    let max = if *name == "temp_bytes" { GIB } else { 1000 };
                    assert!((0..=max).contains(&value), "{name} in {row:?}");
                }
            }
            "redis" => {
                let uptime = (row.timestamp_ns - SEED_001_START_NS) / 1_000_000_000;
                assert_eq!(row.int("uptime_in_seconds"), uptime);
                for (name, value) in fields("redis").iter().zip(row.ints()).skip(9) {
                    let max = match *name {
                        "connected_clients" | "rdb_changes_since_last_save" => 10_000,
                        n if n.starts_with("used_memory") => 16 * GIB,
                        "mem_fragmentation_ratio" => 100,
                        _ => 1000,
                    };
                    assert!((0..=max).contains(&value), "{name} in {row:?}");
                }
                if first_instant {
                    assert_eq!(row.int("used_memory"), 8 * GIB);
                }
            }
            _ => {}
        }
        // Rising walks start at 0 and never go down.
        let values = row.ints_or_zero();
        if let Some(before) = previous.get(&key) {
            for (((name, _), value), old) in row.fields.iter().zip(&values).zip(before) {
                if rising(&row.measurement, name) {
                    assert!(value >= old, "{name} fell from {old} in {row:?}");
                }
            }
        }
        for ((name, _), value) in row.fields.iter().zip(&values) {
            if first_instant && rising(&row.measurement, name) {
                assert_eq!(*value, 0, "{name} in {row:?}");
            }
        }
        previous.insert(key, values);
    }
}

impl Row {
    /// Integer values, floats as 0 (for comparisons between instants of integer fields).
    fn ints_or_zero(&self) -> Vec<i64> {
        self.fields
            .iter()
            .map(|(_, v)| match v {
                Value::Int(v) => *v,
                Value::Float(_) => 0,
            })
            .collect()
    }
}

#[test]
fn walks_step_like_tsbs() {
    // After n steps a rising walk with N(mean, 1) steps is near n × mean.
    let instants = 301;
    let steps = (instants - 1) as f64;
    let rows = parse(&all_lines(small(4, instants, 14), 1000));
    let last = SEED_001_START_NS + (instants - 1) * INTERVAL_NS;
    let near = |value: i64, mean: f64| {
        let expected = steps * mean;
        // Standard deviation of the sum is sqrt(steps) ≈ 17; truncation costs < 1.
        (value as f64 - expected).abs() < 100.0
    };
    let mut checked = 0;
    for row in rows.iter().filter(|r| r.timestamp_ns == last) {
        match row.measurement.as_str() {
            "diskio" => {
                assert!(near(row.int("reads"), 50.0), "{row:?}");
                assert!(near(row.int("read_bytes"), 100.0), "{row:?}");
                assert!(near(row.int("io_time"), 5.0), "{row:?}");
            }
            "disk" => assert!(near(row.int("free") - (1 << 39), 50.0), "{row:?}"),
            "net" => {
                assert!(near(row.int("bytes_sent"), 50.0), "{row:?}");
                assert!(near(row.int("drop_out"), 5.0), "{row:?}");
            }
            "postgresl" => assert!(near(row.int("temp_bytes"), 1024.0), "{row:?}"),
            "redis" => {
                assert!(near(row.int("instantaneous_ops_per_sec"), 1.0), "{row:?}");
                assert!(near(row.int("keyspace_hits"), 50.0), "{row:?}");
            }
            _ => continue,
        }
        checked += 1;
    }
    assert_eq!(checked, 4 * 5);
}

#[test]
fn cpu_lines_are_the_cpu_only_run() {
    let config = small(5, 12, 21);
    let devops = all_lines(config.clone(), 33);
    let cpu_lines: Vec<&[u8]> = devops
        .split_inclusive(|b| *b == b'\n')
        .filter(|line| line.starts_with(b"cpu,"))
        .collect();
    let mut cpu_only = CpuOnly::new(CpuOnlyConfig {
        hosts: config.hosts,
        start_ns: config.start_ns,
        end_ns: config.end_ns,
        interval_ns: config.interval_ns,
        seed: config.seed,
    });
    let mut expected = Vec::new();
    while cpu_only.write_lines(7, &mut expected) > 0 {}
    assert_eq!(cpu_lines.concat(), expected);
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = all_lines(small(4, 50, 9), 1);
    let b = all_lines(small(4, 50, 9), 1000);
    let c = all_lines(small(4, 50, 10), 1000);
    assert_eq!(a, b, "the chunk size changes nothing");
    assert_ne!(a, c);
    // The non-cpu measurements' own tags and values depend on the seed too, not only the
    // hosts' tags (which come from the cpu-only generator).
    type Own = (Vec<(String, String)>, Vec<(String, Value)>);
    let own_part = |bytes: &[u8]| -> Vec<Own> {
        parse(bytes)
            .into_iter()
            .filter(|row| row.measurement != "cpu")
            .map(|row| (row.tags[10..].to_vec(), row.fields))
            .collect()
    };
    let (own_a, own_c) = (own_part(&a), own_part(&c));
    assert_eq!(own_a.len(), 4 * 50 * 8);
    assert_ne!(own_a, own_c);
    // The first diskio line: host 0's, its rising walks at their start, 0.
    let text = String::from_utf8(a).unwrap();
    let first_diskio = text.lines().nth(1).unwrap();
    assert!(
        first_diskio.starts_with("diskio,hostname=host_0,"),
        "{first_diskio}"
    );
    assert!(
        first_diskio.ends_with(
            " reads=0i,writes=0i,read_bytes=0i,write_bytes=0i,read_time=0i,write_time=0i,\
             io_time=0i 1554076800000000000"
        ),
        "{first_diskio}"
    );
}

#[test]
fn write_lines_allocates_nothing_and_memory_stays_per_host() {
    // The generator is a handful of words plus per-host vectors.
    assert!(size_of::<Devops>() < 1024);
    // The counter sees this thread's allocations.
    let probe = allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(allocations() > probe);
    for instants in [20, 200] {
        let mut generator = Devops::new(small(30, instants, 15));
        let mut out = Vec::with_capacity(1 << 20);
        let capacity = out.capacity();
        let before = allocations();
        let mut lines = 0;
        loop {
            out.clear();
            let n = generator.write_lines(1000, &mut out);
            if n == 0 {
                break;
            }
            lines += n;
            // 1,000 lines fit comfortably in the buffer (a redis line is under 1.5 KB).
            assert!(out.len() < 1000 * 1536);
        }
        assert_eq!(lines as u64, generator.config().rows_total());
        assert_eq!(out.capacity(), capacity, "the buffer never grew");
        // Ten times the instants, still no allocation: memory does not grow with rows.
        assert_eq!(allocations() - before, 0, "allocations while writing lines");
    }
}

#[test]
fn empty_runs_yield_nothing() {
    assert!(all_lines(small(0, 10, 1), 10).is_empty());
    assert!(all_lines(small(10, 0, 1), 10).is_empty());
    let mut backwards = small(10, 5, 1);
    backwards.end_ns = backwards.start_ns - 1;
    assert_eq!(backwards.rows_total(), 0);
    assert!(all_lines(backwards, 10).is_empty());
    let mut generator = Devops::new(small(2, 1, 1));
    let mut out = Vec::new();
    assert_eq!(generator.write_lines(0, &mut out), 0);
    assert_eq!(generator.write_lines(100, &mut out), 18);
    assert_eq!(generator.write_lines(100, &mut out), 0);
}
