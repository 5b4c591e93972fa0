//! Memtable against a reference model: random appends (in and out of order, repeated times,
//! absent fields, strings, type mismatches, a field twice in a row, many series), then every
//! series read back must equal the model's rows.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::collections::BTreeMap;

use strata_storage::column::{Column, SeriesData, Values};
use strata_storage::memtable::Memtable;
use strata_storage::model::{FieldId, FieldType, SeriesId, TableId, Timestamp, Value};

/// splitmix64: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const TYPES: [FieldType; 5] = [
    FieldType::Float,
    FieldType::Integer,
    FieldType::Unsigned,
    FieldType::Boolean,
    FieldType::String,
];

fn random_value(rng: &mut Rng, field_type: FieldType) -> Value {
    match field_type {
        FieldType::Float => Value::Float((rng.below(2_000_001) as f64 - 1_000_000.0) / 8.0),
        FieldType::Integer => Value::Integer(rng.next_u64() as i64 >> rng.below(64)),
        FieldType::Unsigned => Value::Unsigned(rng.next_u64() >> rng.below(64)),
        FieldType::Boolean => Value::Boolean(rng.chance(50)),
        FieldType::String => Value::String(format!("s{}", rng.below(1000))),
    }
}

/// The reference: per series, its table, field types, and rows by time.
#[derive(Default)]
struct Model {
    series: BTreeMap<SeriesId, ModelSeries>,
    rows: u64,
    points: u64,
}

struct ModelSeries {
    table: TableId,
    types: BTreeMap<FieldId, FieldType>,
    rows: BTreeMap<Timestamp, BTreeMap<FieldId, Value>>,
}

impl Model {
    fn append(
        &mut self,
        series: SeriesId,
        table: TableId,
        time: Timestamp,
        fields: &[(FieldId, Value)],
    ) -> usize {
        let s = self.series.entry(series).or_insert_with(|| ModelSeries {
            table,
            types: BTreeMap::new(),
            rows: BTreeMap::new(),
        });
        let mut skipped = 0;
        let row = s.rows.entry(time).or_default();
        for (field, value) in fields {
            let field_type = value.field_type();
            if *s.types.entry(*field).or_insert(field_type) != field_type {
                skipped += 1;
                continue;
            }
            self.points += 1;
            row.insert(*field, value.clone());
        }
        self.rows += 1;
        skipped
    }

    fn series_data(&self, series: SeriesId) -> Option<SeriesData> {
        let s = self.series.get(&series)?;
        let times: Vec<Timestamp> = s.rows.keys().copied().collect();
        let columns = s
            .types
            .iter()
            .map(|(field, field_type)| {
                let mut values = Values::new(*field_type);
                let mut present = Vec::new();
                for row in s.rows.values() {
                    match row.get(field) {
                        Some(value) => {
                            assert!(values.push(value.clone()));
                            present.push(true);
                        }
                        None => present.push(false),
                    }
                }
                Column {
                    field: *field,
                    values,
                    present: present.iter().any(|p| !*p).then_some(present),
                }
            })
            .collect();
        Some(SeriesData { times, columns })
    }
}

/// How a random run writes.
struct Shape {
    series: u64,
    rows: u64,
    fields: u64,
    /// Percent of rows that deviate from their series' usual layout.
    irregular: u64,
    /// Percent of rows at a random (likely earlier or repeated) time.
    disorder: u64,
    /// Percent of values of another type than their field's usual one.
    mismatch: u64,
}

fn run(seed: u64, shape: &Shape) {
    let mut rng = Rng(seed);
    let mut memtable = Memtable::new();
    let mut model = Model::default();
    // Series ids: mostly dense, a few far apart.
    let ids: Vec<SeriesId> = (0..shape.series)
        .map(|i| {
            if rng.chance(5) {
                1000 + rng.below(50_000) as SeriesId
            } else {
                i as SeriesId
            }
        })
        .collect();
    // Usual type of each (series, field) and usual field order of each series.
    let usual_type = |rng: &mut Rng| TYPES[rng.below(5) as usize];
    let types: Vec<Vec<FieldType>> = (0..shape.series)
        .map(|_| (0..shape.fields).map(|_| usual_type(&mut rng)).collect())
        .collect();
    let orders: Vec<Vec<FieldId>> = (0..shape.series)
        .map(|_| {
            let mut order: Vec<FieldId> = (0..shape.fields as FieldId).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            order
        })
        .collect();
    let mut clocks = vec![0i64; shape.series as usize];
    let mut bytes = memtable.bytes();
    for row in 0..shape.rows {
        // Time-major like a real load, with some randomness in which series comes next.
        let index = if rng.chance(80) {
            (row % shape.series) as usize
        } else {
            rng.below(shape.series) as usize
        };
        let series = ids[index];
        let table = if rng.chance(3) {
            rng.below(4) as TableId
        } else {
            (series % 3) as TableId
        };
        let time = if rng.chance(shape.disorder) {
            rng.below(clocks[index] as u64 + 3) as i64 * 10 - 10
        } else {
            clocks[index] += 1;
            clocks[index] * 10
        };
        let mut fields: Vec<FieldId> = orders[index].clone();
        if rng.chance(shape.irregular) {
            match rng.below(4) {
                0 => fields.retain(|_| rng.chance(60)),
                1 => {
                    let extra = fields[rng.below(fields.len() as u64) as usize];
                    let at = rng.below(fields.len() as u64 + 1) as usize;
                    fields.insert(at, extra);
                }
                2 => {
                    let other = rng.below(fields.len() as u64) as usize;
                    fields.swap(0, other);
                }
                _ => fields.truncate(rng.below(fields.len() as u64 + 1) as usize),
            }
        }
        let values: Vec<(FieldId, Value)> = fields
            .into_iter()
            .map(|field| {
                let field_type = if rng.chance(shape.mismatch) {
                    usual_type(&mut rng)
                } else {
                    types[index][field as usize]
                };
                (field, random_value(&mut rng, field_type))
            })
            .collect();
        let expected = model.append(series, table, time, &values);
        let skipped = memtable.append(series, table, time, values);
        assert_eq!(skipped, expected, "seed {seed} row {row}: skipped values");
        assert!(memtable.bytes() >= bytes, "seed {seed}: bytes shrank");
        bytes = memtable.bytes();
        if rng.chance(2) {
            // Reads in the middle must not disturb later appends.
            assert_eq!(
                memtable.series_data(series),
                model.series_data(series),
                "seed {seed} row {row}: series {series} mid-run"
            );
        }
    }
    assert_eq!(memtable.rows(), model.rows, "seed {seed}: rows");
    assert_eq!(memtable.points(), model.points, "seed {seed}: points");
    assert_eq!(memtable.is_empty(), model.rows == 0);
    let expected_series: Vec<(SeriesId, TableId)> =
        model.series.iter().map(|(id, s)| (*id, s.table)).collect();
    assert_eq!(memtable.series(), expected_series, "seed {seed}: series");
    let times = model.series.values().flat_map(|s| s.rows.keys().copied());
    let range = times.clone().min().zip(times.max());
    assert_eq!(memtable.time_range(), range, "seed {seed}: time range");
    for id in ids.iter().copied().chain([999_999, SeriesId::MAX - 1]) {
        let data = memtable.series_data(id);
        if let Some(data) = &data {
            data.check().unwrap();
        }
        assert_eq!(data, model.series_data(id), "seed {seed}: series {id}");
        // A time range gathers only its rows, and equals slicing the whole.
        for _ in 0..4 {
            let start = rng.below(shape.rows * 10 / shape.series.max(1) + 20) as i64 - 15;
            let end = start + rng.below(200) as i64 - 20;
            let ranged = memtable.series_data_in(id, start, end);
            if let Some(ranged) = &ranged {
                ranged.check().unwrap();
            }
            let sliced = model.series_data(id).map(|d| d.slice_time(start, end));
            assert_eq!(
                ranged, sliced,
                "seed {seed}: series {id} in [{start}, {end})"
            );
        }
    }
}

#[test]
fn memtable_matches_model_random() {
    for seed in 0..300 {
        let mut rng = Rng(seed ^ 0x5EED);
        let shape = Shape {
            series: 1 + rng.below(40),
            rows: rng.below(400),
            fields: 1 + rng.below(8),
            irregular: [0, 5, 30, 100][rng.below(4) as usize],
            disorder: [0, 0, 10, 60][rng.below(4) as usize],
            mismatch: [0, 0, 3, 20][rng.below(4) as usize],
        };
        run(seed, &shape);
    }
}

#[test]
fn memtable_matches_model_regular_load() {
    // Many series, every row with the same fields in the same order: the fast paths; the
    // first run writes enough values (600,000) to fill more than one payload chunk.
    for (seed, rows) in [(0, 60_000), (1, 12_000), (2, 12_000)] {
        let shape = Shape {
            series: 500,
            rows,
            fields: 10,
            irregular: 0,
            disorder: 0,
            mismatch: 0,
        };
        run(1000 + seed, &shape);
    }
    let shape = Shape {
        series: 300,
        rows: 10_000,
        fields: 6,
        irregular: 2,
        disorder: 2,
        mismatch: 1,
    };
    run(2000, &shape);
}

#[test]
fn memtable_edge_rows() {
    let mut m = Memtable::new();
    assert!(m.is_empty());
    assert_eq!(m.time_range(), None);
    assert_eq!(m.series_data(0), None);
    // A row without fields still has its time.
    assert_eq!(m.append(7, 1, 50, []), 0);
    // The same field twice: the last wins; a mismatch inside the row is skipped.
    let row = [
        (2, Value::Integer(1)),
        (2, Value::Integer(2)),
        (2, Value::Float(3.0)),
    ];
    assert_eq!(m.append(7, 1, 40, row), 1);
    // Same time again: field 2 kept from before, field 3 added.
    assert_eq!(m.append(7, 1, 40, [(3, Value::String("x".into()))]), 0);
    assert_eq!(m.rows(), 3);
    assert_eq!(m.points(), 3);
    assert_eq!(m.time_range(), Some((40, 50)));
    let data = m.series_data(7).unwrap();
    assert_eq!(data.times, vec![40, 50]);
    assert_eq!(data.columns.len(), 2);
    assert_eq!(data.columns[0].values, Values::Integer(vec![2]));
    assert_eq!(data.columns[0].present, Some(vec![true, false]));
    assert_eq!(data.columns[1].values, Values::String(vec!["x".into()]));
    assert_eq!(m.series(), vec![(7, 1)]);
}

#[test]
fn memtable_bytes_grow_with_data() {
    let mut m = Memtable::new();
    let mut last = m.bytes();
    let mut grew = 0;
    for row in 0..100_000i64 {
        let series = (row % 1000) as SeriesId;
        let fields = (0..10).map(|f| (f, Value::Integer(row * f as i64)));
        m.append(series, 0, row / 1000, fields);
        let bytes = m.bytes();
        assert!(bytes >= last);
        grew += usize::from(bytes > last);
        last = bytes;
    }
    // 1M values of 8 bytes at least, not wildly more (payloads, entries, slack).
    assert!(last >= 8 * 1_000_000, "bytes {last}");
    assert!(last <= 3 * 8 * 1_000_000, "bytes {last}");
    assert!(grew > 100, "bytes grew {grew} times");
}
