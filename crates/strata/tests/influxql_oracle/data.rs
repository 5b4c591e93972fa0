//! The differential test's data: a fixed schema (four measurements, tags missing on some
//! series, a field absent on some rows, every field type but unsigned, which influxd 1.6
//! lacks) and seeded rows over two hours from 2023-11-14T22:00:00Z at irregular intervals,
//! with gaps, as line protocol with millisecond timestamps.

use std::collections::{BTreeMap, HashSet};

use strata_bench::rng::Rng;

/// 2023-11-14T22:00:00Z in seconds: the start of the data.
pub const T0_S: i64 = 1_699_999_200;
/// The data spans two hours.
pub const SPAN_S: i64 = 2 * 3600;

/// A field's type, as influxd names it in `SHOW FIELD KEYS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `float`.
    Float,
    /// `integer`.
    Integer,
    /// `string`.
    Str,
    /// `boolean`.
    Bool,
}

impl Kind {
    /// Numeric (float or integer).
    pub fn numeric(self) -> bool {
        matches!(self, Kind::Float | Kind::Integer)
    }

    /// The name of the cast `field::type` to this kind.
    pub fn cast(self) -> &'static str {
        match self {
            Kind::Float => "float",
            Kind::Integer => "integer",
            Kind::Str => "string",
            Kind::Bool => "boolean",
        }
    }
}

/// How a field's values move from row to row.
#[derive(Clone, Copy, Debug)]
pub enum Values {
    /// A random walk within `[lo, hi]` (rounded to whole numbers for integers).
    Walk(f64, f64),
    /// A counter that grows and now and then resets (for `non_negative_*`).
    Counter,
    /// One of these strings.
    Strings(&'static [&'static str]),
    /// true or false.
    Bool,
}

/// One field of a measurement.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// How its values move.
    pub values: Values,
    /// The share of rows that have it (1.0: every row).
    pub presence: f64,
}

/// One measurement: its tag keys, its series (tag sets; a key may be missing), its fields.
#[derive(Debug)]
pub struct Measurement {
    /// Its name.
    pub name: &'static str,
    /// Every tag key any of its series has, sorted.
    pub tag_keys: &'static [&'static str],
    /// Its series, as (key, value) pairs.
    pub series: &'static [&'static [(&'static str, &'static str)]],
    /// Its fields.
    pub fields: &'static [Field],
    /// The step between rows of a series, seconds, lowest and highest.
    pub step_s: (i64, i64),
    /// Timestamps with milliseconds (else whole seconds).
    pub millis: bool,
}

impl Measurement {
    /// Every value tag `key` has in this measurement, sorted, without duplicates.
    pub fn tag_values(&self, key: &str) -> Vec<&'static str> {
        let mut values: Vec<&'static str> = self
            .series
            .iter()
            .flat_map(|tags| tags.iter().filter(|(k, _)| *k == key).map(|(_, v)| *v))
            .collect();
        values.sort_unstable();
        values.dedup();
        values
    }

    /// Its fields of a numeric type.
    pub fn numeric_fields(&self) -> Vec<&'static Field> {
        self.fields.iter().filter(|f| f.kind.numeric()).collect()
    }
}

const fn field(name: &'static str, kind: Kind, values: Values, presence: f64) -> Field {
    Field {
        name,
        kind,
        values,
        presence,
    }
}

/// The schema. `cpu`: float and integer fields, millisecond timestamps, `region` missing
/// on one host. `disk`: integer, string and boolean fields. `net`: counters, `dc` missing on
/// some series, `err` on about 40% of rows. `temp`: negative floats, a tag value with a
/// space, `battery` on about 30% of rows.
pub static MEASUREMENTS: &[Measurement] = &[
    Measurement {
        name: "cpu",
        tag_keys: &["host", "region"],
        series: &[
            &[("host", "alpha"), ("region", "eu")],
            &[("host", "beta"), ("region", "eu")],
            &[("host", "gamma"), ("region", "us")],
            &[("host", "delta")],
        ],
        fields: &[
            field("usage_user", Kind::Float, Values::Walk(0.0, 100.0), 1.0),
            field("usage_system", Kind::Float, Values::Walk(0.0, 40.0), 1.0),
            field("load", Kind::Integer, Values::Walk(0.0, 16.0), 1.0),
        ],
        step_s: (20, 75),
        millis: true,
    },
    Measurement {
        name: "disk",
        tag_keys: &["host", "path"],
        series: &[
            &[("host", "alpha"), ("path", "/")],
            &[("host", "alpha"), ("path", "/var")],
            &[("host", "beta"), ("path", "/")],
            &[("host", "gamma"), ("path", "/")],
            &[("host", "gamma"), ("path", "/data")],
        ],
        fields: &[
            field("used", Kind::Integer, Values::Walk(1e9, 9e9), 1.0),
            field("free", Kind::Integer, Values::Walk(1e8, 5e9), 1.0),
            field(
                "fstype",
                Kind::Str,
                Values::Strings(&["ext4", "xfs", "zfs pool, \"tank\""]),
                1.0,
            ),
            field("healthy", Kind::Bool, Values::Bool, 1.0),
        ],
        step_s: (60, 240),
        millis: false,
    },
    Measurement {
        name: "net",
        tag_keys: &["dc", "host", "iface"],
        series: &[
            &[("dc", "dc1"), ("host", "alpha"), ("iface", "eth0")],
            &[("dc", "dc1"), ("host", "alpha"), ("iface", "eth1")],
            &[("host", "beta"), ("iface", "eth0")],
            &[("dc", "dc2"), ("host", "gamma"), ("iface", "eth0")],
            &[("host", "delta"), ("iface", "eth1")],
        ],
        fields: &[
            field("rx", Kind::Integer, Values::Counter, 1.0),
            field("tx", Kind::Integer, Values::Counter, 1.0),
            field("err", Kind::Float, Values::Walk(0.0, 5.0), 0.4),
        ],
        step_s: (30, 120),
        millis: false,
    },
    Measurement {
        name: "temp",
        tag_keys: &["floor", "room"],
        series: &[
            &[("floor", "1"), ("room", "kitchen")],
            &[("floor", "1"), ("room", "hall")],
            &[("room", "living room")],
        ],
        fields: &[
            field("value", Kind::Float, Values::Walk(-10.0, 30.0), 1.0),
            field("battery", Kind::Integer, Values::Walk(0.0, 100.0), 0.3),
        ],
        step_s: (45, 300),
        millis: false,
    },
];

/// The measurement named `name`.
pub fn measurement(name: &str) -> &'static Measurement {
    MEASUREMENTS.iter().find(|m| m.name == name).unwrap()
}

/// The generated data set.
pub struct Dataset {
    /// Line protocol, one row a line, timestamps in milliseconds.
    pub lines: Vec<String>,
    /// Rows per measurement.
    pub rows: BTreeMap<&'static str, usize>,
}

/// The data set of `seed`. Timestamps are unique within a measurement (so that the order
/// of rows merged from several series is fixed by time alone).
pub fn generate(seed: u64) -> Dataset {
    let mut rng = Rng::new(seed ^ 0x00da_7a00);
    let mut lines = Vec::new();
    let mut rows = BTreeMap::new();
    for m in MEASUREMENTS {
        let mut used = HashSet::new();
        // A gap in every series of the measurement (empty GROUP BY time buckets), and one
        // more per series.
        let gap_start = T0_S + 50 * 60 + rng.below(40 * 60) as i64;
        let gaps = [(gap_start, gap_start + 12 * 60 + rng.below(8 * 60) as i64)];
        let mut count = 0;
        for tags in m.series {
            let own = T0_S + rng.below(SPAN_S as u64) as i64;
            let own_gap = (own, own + 5 * 60 + rng.below(10 * 60) as i64);
            let mut state: Vec<f64> = m.fields.iter().map(|f| start_value(f, &mut rng)).collect();
            let mut t_ms = (T0_S + rng.below(90) as i64) * 1000;
            while t_ms < (T0_S + SPAN_S) * 1000 {
                let t_s = t_ms.div_euclid(1000);
                let in_gap = gaps
                    .iter()
                    .chain([&own_gap])
                    .any(|(a, b)| (*a..*b).contains(&t_s));
                if !in_gap {
                    let mut t = t_ms;
                    while !used.insert(t) {
                        t += if m.millis { 1 } else { 1000 };
                    }
                    if let Some(line) = line(m, tags, &mut state, &mut rng, t) {
                        lines.push(line);
                        count += 1;
                    }
                }
                let step = m.step_s.0 + rng.below((m.step_s.1 - m.step_s.0 + 1) as u64) as i64;
                t_ms += step * 1000;
                if m.millis {
                    t_ms += rng.below(1000) as i64;
                }
            }
        }
        rows.insert(m.name, count);
    }
    Dataset { lines, rows }
}

fn start_value(field: &Field, rng: &mut Rng) -> f64 {
    match field.values {
        Values::Walk(lo, hi) => lo + (hi - lo) * rng.next_f64(),
        Values::Counter => rng.below(1_000_000) as f64,
        Values::Strings(_) | Values::Bool => 0.0,
    }
}

/// One row (None when it would have no field), moving each field's state on.
fn line(
    m: &Measurement,
    tags: &[(&str, &str)],
    state: &mut [f64],
    rng: &mut Rng,
    t_ms: i64,
) -> Option<String> {
    let mut fields = Vec::new();
    for (f, value) in m.fields.iter().zip(state.iter_mut()) {
        let text = next_value(f, value, rng);
        if f.presence >= 1.0 || rng.next_f64() < f.presence {
            fields.push(format!("{}={text}", f.name));
        }
    }
    if fields.is_empty() {
        return None;
    }
    let mut out = m.name.to_owned();
    for (key, value) in tags {
        out.push_str(&format!(",{key}={}", escape_tag(value)));
    }
    Some(format!("{out} {} {t_ms}", fields.join(",")))
}

/// The next value of `field` in line-protocol form.
fn next_value(field: &Field, state: &mut f64, rng: &mut Rng) -> String {
    match field.values {
        Values::Walk(lo, hi) => {
            let step = (hi - lo) * 0.05 * rng.normal();
            *state = (*state + step).clamp(lo, hi);
            match field.kind {
                Kind::Integer => format!("{}i", state.round() as i64),
                // Now and then a whole number, written without a decimal point.
                _ if rng.below(10) == 0 => format!("{}", state.round() as i64),
                _ => format!("{:.3}", *state),
            }
        }
        Values::Counter => {
            *state = if rng.below(40) == 0 {
                rng.below(1000) as f64
            } else {
                *state + rng.below(50_000) as f64
            };
            format!("{}i", *state as i64)
        }
        Values::Strings(choices) => {
            let s = rng.choose(choices);
            format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
        }
        Values::Bool => (if rng.below(4) == 0 { "false" } else { "true" }).to_owned(),
    }
}

fn escape_tag(value: &str) -> String {
    value
        .replace(',', "\\,")
        .replace('=', "\\=")
        .replace(' ', "\\ ")
}
