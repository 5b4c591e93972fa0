//! Parser throughput on TSBS cpu-only style lines (~250 bytes, 10 tags, 10 fields).
//!
//! Run: `cargo bench -p strata-lineproto --bench parse`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_lineproto::{Line, ParseOptions, parse_lines};

const LINES: usize = 10_000;
const FIELDS: [&str; 10] = [
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

/// SplitMix64: a seeded generator, so every run parses the same bytes.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// TSBS cpu-only lines; `floats` picks TSBS's real float values instead of the
/// `i`-suffixed integers of the brief's example line.
fn cpu_only(floats: bool) -> Vec<u8> {
    let mut rng = Rng(42);
    let mut out = Vec::with_capacity(LINES * 300);
    for n in 0..LINES {
        let host = n % 4000;
        let rack = rng.next() % 100;
        let service = rng.next() % 20;
        out.extend_from_slice(
            format!(
                "cpu,hostname=host_{host},region=eu-central-1,datacenter=eu-central-1a,rack={rack},os=Ubuntu15.10,arch=x86,team=SF,service={service},service_version=1,service_environment=test "
            )
            .as_bytes(),
        );
        for (i, f) in FIELDS.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            let v = rng.next() % 100;
            if floats {
                let frac = rng.next() % 10_000_000_000_000;
                out.extend_from_slice(format!("{sep}{f}={v}.{frac}").as_bytes());
            } else {
                out.extend_from_slice(format!("{sep}{f}={v}i").as_bytes());
            }
        }
        let ts = 1_451_606_400_000_000_000i64 + n as i64 * 10_000_000_000;
        out.extend_from_slice(format!(" {ts}\n").as_bytes());
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let options = ParseOptions::default();
    for (name, floats) in [("cpu_only_int", false), ("cpu_only_float", true)] {
        let input = cpu_only(floats);
        // Sanity check outside the timed loop: every line parses.
        assert_eq!(
            parse_lines(&input, &options).filter(|l| l.is_ok()).count(),
            LINES
        );
        let mut group = c.benchmark_group("parse");
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(format!("{name}/iterator"), |b| {
            b.iter(|| {
                let mut fields = 0usize;
                for line in parse_lines(black_box(&input), &options) {
                    fields += line.unwrap().fields.len();
                }
                fields
            })
        });
        group.bench_function(format!("{name}/next_into"), |b| {
            b.iter(|| {
                let mut fields = 0usize;
                let mut lines = parse_lines(black_box(&input), &options);
                let mut line = Line::default();
                while let Some(r) = lines.next_into(&mut line) {
                    r.unwrap();
                    fields += line.fields.len();
                }
                fields
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
