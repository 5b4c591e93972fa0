//! The TSBS cpu-only generator: sizes, order, determinism, value ranges and the line format.

use strata_bench::cpu_only::{CpuOnly, CpuOnlyConfig, FIELDS, SEED_001_START_NS};

fn small(hosts: u32, rows_per_host: i64, seed: u64) -> CpuOnlyConfig {
    let interval_ns = 10_000_000_000;
    CpuOnlyConfig {
        hosts,
        start_ns: SEED_001_START_NS,
        end_ns: SEED_001_START_NS + rows_per_host * interval_ns,
        interval_ns,
        seed,
    }
}

fn all_lines(config: CpuOnlyConfig) -> Vec<u8> {
    let mut generator = CpuOnly::new(config);
    let mut out = Vec::new();
    while generator.write_lines(7, &mut out) > 0 {}
    out
}

#[test]
fn default_is_seed_001_run() {
    let config = CpuOnlyConfig::default();
    assert_eq!(config.hosts, 4_000);
    assert_eq!(config.rows_per_host(), 25_920);
    assert_eq!(config.points_total(), 1_036_800_000);
}

#[test]
fn rows_come_in_time_order_all_hosts_per_instant() {
    let mut generator = CpuOnly::new(small(3, 4, 1));
    let mut seen = Vec::new();
    while let Some(row) = generator.next_row() {
        seen.push((row.timestamp_ns, row.host));
    }
    let expected: Vec<(i64, u32)> = (0..4)
        .flat_map(|i| (0..3).map(move |h| (SEED_001_START_NS + i * 10_000_000_000, h)))
        .collect();
    assert_eq!(seen, expected);
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = all_lines(small(5, 20, 9));
    let b = all_lines(small(5, 20, 9));
    let c = all_lines(small(5, 20, 10));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.iter().filter(|b| **b == b'\n').count(), 100);
}

#[test]
fn values_are_clamped_integer_random_walks() {
    let config = small(20, 500, 3);
    let mut generator = CpuOnly::new(config);
    let mut previous: Vec<Option<[i64; 10]>> = vec![None; 20];
    let (mut steps, mut small_steps) = (0u64, 0u64);
    while let Some(row) = generator.next_row() {
        assert!(row.values.iter().all(|v| (0..=100).contains(v)), "{row:?}");
        if let Some(before) = previous[row.host as usize] {
            for (a, b) in before.iter().zip(row.values) {
                let step = (b - a).abs();
                // N(0,1) steps: a truncated value can move by more than 4 only in a 1e-5 tail.
                assert!(step <= 6, "step {step} in {row:?}");
                steps += 1;
                small_steps += u64::from(step <= 1);
            }
        }
        previous[row.host as usize] = Some(row.values);
    }
    // Most consecutive values differ by -1, 0 or +1, as docs/workloads.md says.
    assert!(small_steps * 100 / steps >= 75, "{small_steps} of {steps}");
}

#[test]
fn lines_have_tsbs_shape() {
    let mut generator = CpuOnly::new(small(2, 1, 5));
    let row = generator.next_row().unwrap();
    let mut line = Vec::new();
    generator.write_line(&row, &mut line);
    let text = String::from_utf8(line).unwrap();
    let tags = generator.host_tags(0);
    let prefix = format!(
        "cpu,hostname=host_0,region={},datacenter={},rack={},os={},arch={},team={},service={},\
         service_version={},service_environment={} ",
        tags[1], tags[2], tags[3], tags[4], tags[5], tags[6], tags[7], tags[8], tags[9]
    );
    assert!(text.starts_with(&prefix), "{text}");
    assert!(
        tags[2].starts_with(tags[1].as_str()),
        "datacenter in region: {tags:?}"
    );
    let fields: Vec<String> = FIELDS
        .iter()
        .zip(row.values)
        .map(|(name, value)| format!("{name}={value}i"))
        .collect();
    let expected = format!("{prefix}{} {}\n", fields.join(","), SEED_001_START_NS);
    assert_eq!(text, expected);
}

#[test]
fn empty_runs_yield_nothing() {
    assert!(all_lines(small(0, 10, 1)).is_empty());
    assert!(all_lines(small(10, 0, 1)).is_empty());
}
