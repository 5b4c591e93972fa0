//! The lake's read tests' data and reads: a seeded data set over `DAYS` days, seeded
//! random reads of it, and answers printed for comparison (`read.rs`, `mirror.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_lake::{Lake, LakeOptions, TierReport, parse_url};
use strata_lineproto::Precision;
use strata_storage::series::TagPredicate;
use strata_storage::{Engine, ReadRequest};

pub const DAY_NS: i64 = 86_400_000_000_000;
pub const START_NS: i64 = 1_700_000_000_000_000_000 / DAY_NS * DAY_NS;
pub const DAYS: i64 = 4;

/// A tiny seeded generator (xorshift), so that a failure replays.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rows over `DAYS` days: 12 hosts of `cpu` in 3 racks (some rows lack `idle`, host h11
/// lacks the rack tag), every 5 min + 7 ns, and host `gone` on all days but the last; `mem`
/// for host h11 (the tags of a cpu series) every 25 min.
pub fn body() -> String {
    let mut body = String::new();
    let step = 5 * 60_000_000_000 + 7;
    let mut i = 0i64;
    while START_NS + i * step < START_NS + DAYS * DAY_NS {
        let time = START_NS + i * step;
        for host in 0..12 {
            let tags = if host == 11 {
                format!("host=h{host}")
            } else {
                format!("host=h{host},rack=r{}", host % 3)
            };
            if (i + host) % 4 == 0 {
                body.push_str(&format!("cpu,{tags} usage={}.5 {time}\n", i + host));
            } else {
                body.push_str(&format!(
                    "cpu,{tags} usage={}.25,idle={}i {time}\n",
                    i * host,
                    i - host
                ));
            }
        }
        // Another table with a series of the same tags as cpu's h11, less often.
        if i % 5 == 0 {
            body.push_str(&format!("mem,host=h11 free={i}i {time}\n"));
        }
        // A host that stopped reporting before the last day: once tiered, all its rows
        // are in the lake.
        if time < START_NS + (DAYS - 1) * DAY_NS {
            body.push_str(&format!("cpu,host=gone usage={}.75 {time}\n", i % 40));
        }
        i += 1;
    }
    body
}

pub fn write(engines: &[&Arc<Engine>], lines: &str) {
    for engine in engines {
        let report = engine
            .write_lines("db", lines.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors.first());
        engine.flush().unwrap();
    }
}

/// A random read of `cpu`.
pub fn request(engine: &Engine, rng: &mut Rng) -> ReadRequest {
    let table = engine.table("db", "cpu").unwrap().id;
    let span = DAYS * DAY_NS;
    let a = START_NS - DAY_NS / 2 + (rng.next() % (span as u64 + DAY_NS as u64)) as i64;
    let b = a + (rng.next() % (2 * DAY_NS as u64)) as i64 + 1;
    let predicate = match rng.below(5) {
        0 => None,
        1 => Some(TagPredicate::Eq {
            key: "host".into(),
            value: format!("h{}", rng.below(13)),
        }),
        2 => Some(TagPredicate::NotEq {
            key: "rack".into(),
            value: format!("r{}", rng.below(3)),
        }),
        3 => Some(TagPredicate::In {
            key: "host".into(),
            values: vec![format!("h{}", rng.below(12)), "h11".into()],
        }),
        _ => Some(TagPredicate::Eq {
            key: "rack".into(),
            value: "r1".into(),
        }),
    };
    let fields = match rng.below(3) {
        0 => None,
        1 => Some(vec![0]),
        _ => Some(vec![1]),
    };
    ReadRequest {
        table,
        predicate,
        start: a,
        end: b,
        fields,
    }
}

/// A series' tags and its rows, printed.
pub type Series = (Vec<(String, String)>, String);

/// Every series' rows (sorted by tags, so that shard and series order do not matter).
pub fn rows(engine: &Engine, request: &ReadRequest) -> Vec<Series> {
    printed(engine.read(request).unwrap())
}

/// Every series' latest row in the range, as [`rows`].
pub fn latest(engine: &Engine, request: &ReadRequest) -> Vec<Series> {
    printed(engine.latest(request).unwrap())
}

pub fn printed(series: Vec<strata_storage::SeriesRows>) -> Vec<Series> {
    let mut out: Vec<Series> = series
        .into_iter()
        .map(|s| (s.tags, format!("{:?}", s.data)))
        .collect();
    out.sort();
    out
}

/// Fails naming the first series that differs (whole answers are too long to print).
pub fn assert_same(found: &[Series], expected: &[Series], what: &str) {
    for (f, e) in found.iter().zip(expected) {
        assert_eq!(f.0, e.0, "{what}: series");
        assert!(
            f.1 == e.1,
            "{what}: {:?}: {} vs {}",
            f.0,
            f.1.len(),
            e.1.len()
        );
    }
    assert_eq!(found.len(), expected.len(), "{what}: series count");
}

pub fn tier(runtime: &tokio::runtime::Runtime, root: &Path, engine: &Arc<Engine>) -> TierReport {
    let mut options = LakeOptions::new(parse_url(root.to_str().unwrap()).unwrap());
    options.tier_after = Duration::from_secs(86_400);
    let report = runtime.block_on(Lake::new(options).tier(engine));
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    report
}
