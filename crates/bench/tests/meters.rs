//! The TDengine meters generator: orders, determinism, value ranges and the line format.

use strata_bench::meters::{MeterRow, Meters, MetersConfig, MetersOrder};

fn config(meters: u32, rows_per_meter: u64) -> MetersConfig {
    MetersConfig {
        meters,
        rows_per_meter,
        ..MetersConfig::default()
    }
}

fn rows(generator: &mut Meters) -> Vec<MeterRow> {
    std::iter::from_fn(|| generator.next_row()).collect()
}

#[test]
fn defaults_are_seed_002_size() {
    let c = MetersConfig::default();
    assert_eq!(c.rows_total(), 100_000_000);
    assert_eq!(c.start_ms, 1_500_000_000_000);
    assert_eq!(c.step_ms, 1);
}

#[test]
fn progressive_writes_one_meter_after_another() {
    let mut g = Meters::new(config(3, 4), 0..3, MetersOrder::Progressive);
    let order: Vec<(u32, i64)> = rows(&mut g)
        .iter()
        .map(|r| (r.meter, r.timestamp_ms))
        .collect();
    let expected: Vec<(u32, i64)> = (0..3)
        .flat_map(|m| (0..4).map(move |i| (m, 1_500_000_000_000 + i)))
        .collect();
    assert_eq!(order, expected);
}

#[test]
fn interlace_round_robins_in_turns() {
    let mut g = Meters::new(
        config(3, 5),
        10..13,
        MetersOrder::Interlace { rows_per_turn: 2 },
    );
    let order: Vec<u32> = rows(&mut g).iter().map(|r| r.meter).collect();
    assert_eq!(
        order,
        vec![10, 10, 11, 11, 12, 12, 10, 10, 11, 11, 12, 12, 10, 11, 12]
    );
}

#[test]
fn a_meters_rows_do_not_depend_on_order_or_split() {
    let c = config(4, 50);
    let mut progressive = rows(&mut Meters::new(c.clone(), 0..4, MetersOrder::Progressive));
    let mut interlaced = rows(&mut Meters::new(
        c.clone(),
        0..4,
        MetersOrder::Interlace { rows_per_turn: 3 },
    ));
    let mut split = rows(&mut Meters::new(c.clone(), 0..2, MetersOrder::Progressive));
    split.extend(rows(&mut Meters::new(c, 2..4, MetersOrder::Progressive)));
    let key = |r: &MeterRow| (r.meter, r.timestamp_ms);
    progressive.sort_by_key(key);
    interlaced.sort_by_key(key);
    split.sort_by_key(key);
    assert_eq!(progressive.len(), 200);
    assert_eq!(progressive, interlaced);
    assert_eq!(progressive, split);
}

#[test]
fn values_are_in_range_and_vary() {
    let all = rows(&mut Meters::new(
        config(5, 400),
        0..5,
        MetersOrder::Progressive,
    ));
    assert!(all.iter().all(|r| (800..1200).contains(&r.current_centi)));
    assert!(all.iter().all(|r| (215..=225).contains(&r.voltage)));
    assert!(all.iter().all(|r| (280..360).contains(&r.phase_milli)));
    let distinct_voltages: std::collections::BTreeSet<i64> =
        all.iter().map(|r| r.voltage).collect();
    assert_eq!(distinct_voltages.len(), 11);
}

#[test]
fn lines_have_meters_shape() {
    let c = config(2, 1);
    let mut g = Meters::new(c.clone(), 1..2, MetersOrder::Progressive);
    let row = MeterRow {
        meter: 1,
        timestamp_ms: 1_500_000_000_000,
        current_centi: 1003,
        voltage: 219,
        phase_milli: 305,
    };
    let mut out = Vec::new();
    g.write_line(&row, &mut out);
    let (groupid, location) = Meters::tags_of(&c, 1);
    assert!((1..=10).contains(&groupid));
    assert!(location.len() <= 24);
    let expected = format!(
        "meters,tbname=d1,groupid={groupid},location={location} \
         current=10.03,voltage=219i,phase=0.305 1500000000000\n"
    );
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    assert_eq!(g.write_lines(10, &mut Vec::new()), 1);
    assert_eq!(row.current(), 10.03);
    assert_eq!(row.phase(), 0.305);
}

#[test]
fn split_meters_gives_every_meter_once_in_contiguous_ranges() {
    use strata_bench::meters::split_meters;
    // Seed 002 with 48 threads: 10,000 tables, the first 16 threads get 209, the rest 208.
    let ranges = split_meters(10_000, 48);
    assert_eq!(ranges.len(), 48);
    assert_eq!(ranges[0], 0..209);
    assert_eq!(ranges[15], 3135..3344);
    assert_eq!(ranges[16], 3344..3552);
    assert_eq!(ranges[47], 9792..10_000);
    for (meters, workers) in [(10_000, 48), (100, 8), (7, 3), (3, 8), (1, 1), (5, 0)] {
        let ranges = split_meters(meters, workers);
        assert!(ranges.len() <= workers.max(1));
        assert!(ranges.iter().all(|r| !r.is_empty()));
        let all: Vec<u32> = ranges.iter().flat_map(|r| r.clone()).collect();
        assert_eq!(all, (0..meters).collect::<Vec<_>>(), "{meters}/{workers}");
        let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    }
    assert!(split_meters(0, 4).is_empty());
}
