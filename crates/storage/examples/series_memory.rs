//! Memory and speed of the series index at TSBS cpu-only scale.
//!
//! `cargo run --release -p strata-storage --example series_memory [-- SERIES]` (default
//! 1,000,000): builds an index of SERIES hosts with TSBS cpu-only's ten tags (hostname unique,
//! the rest from TSBS's small lists), prints bytes per series from
//! `SeriesIndex::memory_bytes` and from the process RSS delta (`/proc/self/statm`), the
//! insert rate, the `lookup_raw` rate (insert order and a scattered order), and the time to
//! persist and reopen the log.

// A measurement program: a failure is a crash with its message.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use strata_storage::series::SeriesIndex;

/// TSBS's regions and their datacenters.
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

/// Resident set size in bytes (statm's second field is in pages; Linux x86-64 pages are 4 KiB).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    statm
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<usize>()
        .unwrap()
        * 4096
}

/// CPU seconds this thread has used (user + system, from `/proc/thread-self/stat`, in
/// clock ticks of 10 ms): on a busy machine wall time overstates the cost, CPU time does not.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

/// Wall and CPU seconds of `f`.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (wall, cpu) = (Instant::now(), cpu_s());
    let out = f();
    (out, wall.elapsed().as_secs_f64(), cpu_s() - cpu)
}

/// `what: rate/s (ns each)` for wall and CPU time (CPU time only when it spans enough
/// 10 ms ticks to mean something).
fn rate(what: &str, n: usize, wall_s: f64, cpu_s: f64) {
    let cpu = if cpu_s >= 0.2 {
        format!(
            "{:.0}/s CPU ({:.0} ns each)",
            n as f64 / cpu_s,
            cpu_s * 1e9 / n as f64
        )
    } else {
        "CPU time too short to measure".to_owned()
    };
    println!(
        "{what}: {:.0}/s wall ({:.0} ns each), {cpu}",
        n as f64 / wall_s,
        wall_s * 1e9 / n as f64
    );
}

/// splitmix64, seeded: the tags of host `i` are a pure function of `i`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The raw series key TSBS writes for host `i` (no escapes needed), appended to `out`.
fn write_key(i: u64, out: &mut String) {
    use std::fmt::Write;
    let r = mix(i);
    let (region, dcs) = REGIONS[(r % 9) as usize];
    write!(
        out,
        "cpu,hostname=host_{i},region={region},datacenter={},rack={},os={},arch={},team={},service={},service_version={},service_environment={}",
        dcs[((r >> 8) % dcs.len() as u64) as usize],
        (r >> 16) % 100,
        OSES[((r >> 24) % 3) as usize],
        ARCHES[((r >> 28) % 2) as usize],
        TEAMS[((r >> 32) % 4) as usize],
        (r >> 36) % 20,
        (r >> 44) % 2,
        ENVIRONMENTS[((r >> 48) % 3) as usize],
    )
    .unwrap();
}

/// Splits a raw key without escapes into its tags.
fn split_tags<'a>(key: &'a str, tags: &mut Vec<(&'a str, &'a str)>) {
    tags.clear();
    tags.extend(key.split(',').skip(1).map(|kv| kv.split_once('=').unwrap()));
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(1_000_000);
    // Inputs first, so the RSS delta below is the index alone.
    let mut keys = String::new();
    let mut ends = Vec::with_capacity(n);
    for i in 0..n as u64 {
        write_key(i, &mut keys);
        ends.push(keys.len());
    }
    let key = |i: usize| &keys[if i == 0 { 0 } else { ends[i - 1] }..ends[i]];
    println!(
        "series: {n}, raw key bytes: {:.1} avg",
        keys.len() as f64 / n as f64
    );

    let rss_before = rss_bytes();
    let mut index = SeriesIndex::new();
    let mut tags = Vec::with_capacity(16);
    let ((), wall, cpu) = timed(|| {
        for i in 0..n {
            let k = key(i);
            split_tags(k, &mut tags);
            let (id, created) = index.get_or_create(0, k.as_bytes(), &tags).unwrap();
            assert!(created && id as usize == i);
        }
    });
    let rss_after = rss_bytes();
    let estimate = index.memory_bytes();
    rate(
        "get_or_create, new series (incl. splitting the key)",
        n,
        wall,
        cpu,
    );
    println!(
        "memory_bytes(): {estimate} B = {:.1} B/series",
        estimate as f64 / n as f64
    );
    println!(
        "RSS delta: {} B = {:.1} B/series",
        rss_after - rss_before,
        (rss_after - rss_before) as f64 / n as f64
    );

    for (name, stride) in [("insert order", 1usize), ("scattered order", 7919)] {
        let (sum, wall, cpu) = timed(|| {
            (0..n)
                .map(|j| {
                    u64::from(
                        index
                            .lookup_raw(0, key((j * stride) % n).as_bytes())
                            .unwrap(),
                    )
                })
                .sum::<u64>()
        });
        assert_eq!(sum, (n as u64) * (n as u64 - 1) / 2);
        rate(&format!("lookup_raw, {name}"), n, wall, cpu);
    }

    let dir = tempfile::tempdir().unwrap();
    let mut logged = SeriesIndex::open(dir.path()).unwrap();
    for i in 0..n {
        let k = key(i);
        split_tags(k, &mut tags);
        logged.get_or_create(0, k.as_bytes(), &tags).unwrap();
    }
    let (persisted, wall, cpu) = timed(|| logged.persist().unwrap());
    drop(logged);
    let log_bytes = std::fs::metadata(dir.path().join("series.log"))
        .unwrap()
        .len();
    println!(
        "series.log: {persisted} series, {log_bytes} B ({:.1} B/series)",
        log_bytes as f64 / n as f64
    );
    rate("persist (encode, write, fsync)", n, wall, cpu);
    let (reopened, wall, cpu) = timed(|| SeriesIndex::open(dir.path()).unwrap());
    assert_eq!(reopened.series_count(), n);
    rate("open (read, check, rebuild)", n, wall, cpu);
}
