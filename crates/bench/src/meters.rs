//! TDengine smart meters (`meters`, docs/workloads.md): one series per meter, three columns.
//!
//! Table `meters`; tag `tbname` names the meter (`d0 … d{N-1}`, TDengine's sub-table name),
//! tags `groupid` (1..=10) and `location` (a California city, 24 characters at most); fields
//! `current` (float, two decimals, 8.00..11.99 A), `voltage` (integer, 215..=225 V) and
//! `phase` (float, three decimals, 0.280..0.359). Timestamps are milliseconds, starting at
//! 1500000000000 with a 1 ms step per row of a meter, so lines must be parsed with
//! millisecond precision.
//!
//! Each meter's rows come from its own seeded stream, so a meter's data is the same whatever
//! the order the meters are written in ("progressive" or "interlace") and however the
//! meters are split between workers.

use std::ops::Range;

use crate::rng::Rng;
use crate::write_int;

/// Table name.
pub const TABLE: &str = "meters";
/// The ten locations (TDengine's example data).
const LOCATIONS: [&str; 10] = [
    "California.SanFrancisco",
    "California.LosAngeles",
    "California.SanDiego",
    "California.SanJose",
    "California.PaloAlto",
    "California.Campbell",
    "California.MountainView",
    "California.Sunnyvale",
    "California.SantaClara",
    "California.Cupertino",
];

/// What to generate. Defaults are seed 002's run: 10,000 meters x 10,000 rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetersConfig {
    /// Number of meters (series, TDengine sub-tables).
    pub meters: u32,
    /// Rows per meter.
    pub rows_per_meter: u64,
    /// First timestamp, milliseconds since the epoch.
    pub start_ms: i64,
    /// Step between two rows of one meter, milliseconds.
    pub step_ms: i64,
    /// Seed of every random value.
    pub seed: u64,
}

impl Default for MetersConfig {
    fn default() -> Self {
        Self {
            meters: 10_000,
            rows_per_meter: 10_000,
            start_ms: 1_500_000_000_000,
            step_ms: 1,
            seed: 2,
        }
    }
}

impl MetersConfig {
    /// Rows in the whole run.
    pub fn rows_total(&self) -> u64 {
        u64::from(self.meters) * self.rows_per_meter
    }

    /// Data points (field values) in the whole run: three a row.
    pub fn points_total(&self) -> u64 {
        self.rows_total() * 3
    }
}

/// The order in which a worker writes the rows of its meters (taosBenchmark's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetersOrder {
    /// All rows of one meter, then all rows of the next.
    Progressive,
    /// Round-robin over the meters, this many rows of each per turn.
    Interlace {
        /// Rows of one meter written before moving to the next.
        rows_per_turn: u64,
    },
}

/// One generated row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeterRow {
    /// Meter index (`d{meter}`).
    pub meter: u32,
    /// Timestamp, milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// Current in hundredths of an ampere (written as a two-decimal float).
    pub current_centi: i64,
    /// Voltage.
    pub voltage: i64,
    /// Phase in thousandths (written as a three-decimal float).
    pub phase_milli: i64,
}

impl MeterRow {
    /// `current` as the float that is written.
    pub fn current(&self) -> f64 {
        self.current_centi as f64 / 100.0
    }

    /// `phase` as the float that is written.
    pub fn phase(&self) -> f64 {
        self.phase_milli as f64 / 1000.0
    }
}

#[derive(Debug, Clone)]
struct Meter {
    line_prefix: Vec<u8>,
    rng: Rng,
    next_row: u64,
}

/// Streaming generator over a range of meters, in a chosen order.
#[derive(Debug, Clone)]
pub struct Meters {
    config: MetersConfig,
    first_meter: u32,
    meters: Vec<Meter>,
    order: MetersOrder,
    /// Position in the round: which meter, and rows left in its current turn.
    cursor: usize,
    turn_left: u64,
}

impl Meters {
    /// A generator for the meters in `meters` (for a worker's share), in `order`.
    pub fn new(config: MetersConfig, meters: Range<u32>, order: MetersOrder) -> Self {
        let first_meter = meters.start;
        let meters: Vec<Meter> = meters.map(|m| Meter::new(&config, m)).collect();
        let turn_left = match order {
            MetersOrder::Progressive => config.rows_per_meter,
            MetersOrder::Interlace { rows_per_turn } => rows_per_turn.max(1),
        };
        Self {
            config,
            first_meter,
            meters,
            order,
            cursor: 0,
            turn_left,
        }
    }

    /// The configuration this generator runs.
    pub fn config(&self) -> &MetersConfig {
        &self.config
    }

    /// Rows this generator writes in all: its meters' rows.
    pub fn rows_total(&self) -> u64 {
        self.meters.len() as u64 * self.config.rows_per_meter
    }

    /// Tag values (`groupid`, `location`) of meter `meter`, as the generator draws them.
    pub fn tags_of(config: &MetersConfig, meter: u32) -> (u32, &'static str) {
        let mut rng = meter_rng(config.seed, meter);
        let groupid = 1 + rng.below(10) as u32;
        (groupid, rng.choose(&LOCATIONS))
    }

    /// The next row, or `None` when every meter of the range is done.
    pub fn next_row(&mut self) -> Option<MeterRow> {
        let rows_per_meter = self.config.rows_per_meter;
        let count = self.meters.len();
        // Find a meter with rows left, starting at the cursor; at most one full round.
        for _ in 0..=count {
            if count == 0 {
                return None;
            }
            let exhausted = self.meters[self.cursor].next_row >= rows_per_meter;
            if exhausted || self.turn_left == 0 {
                self.cursor = (self.cursor + 1) % count;
                self.turn_left = match self.order {
                    MetersOrder::Progressive => rows_per_meter,
                    MetersOrder::Interlace { rows_per_turn } => rows_per_turn.max(1),
                };
                continue;
            }
            self.turn_left -= 1;
            let meter_index = self.first_meter + self.cursor as u32;
            let meter = &mut self.meters[self.cursor];
            let row_index = meter.next_row;
            meter.next_row += 1;
            return Some(MeterRow {
                meter: meter_index,
                timestamp_ms: self.config.start_ms + row_index as i64 * self.config.step_ms,
                current_centi: 800 + meter.rng.below(400) as i64,
                voltage: 215 + meter.rng.below(11) as i64,
                phase_milli: 280 + meter.rng.below(80) as i64,
            });
        }
        None
    }

    /// Appends `row` as a line of line protocol (millisecond timestamp) and a newline.
    pub fn write_line(&self, row: &MeterRow, out: &mut Vec<u8>) {
        let meter = &self.meters[(row.meter - self.first_meter) as usize];
        out.extend_from_slice(&meter.line_prefix);
        out.extend_from_slice(b"current=");
        write_fixed(out, row.current_centi, 100, 2);
        out.extend_from_slice(b",voltage=");
        write_int(out, row.voltage);
        out.extend_from_slice(b"i,phase=");
        write_fixed(out, row.phase_milli, 1000, 3);
        out.push(b' ');
        write_int(out, row.timestamp_ms);
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

impl Meter {
    fn new(config: &MetersConfig, meter: u32) -> Self {
        let (groupid, location) = Meters::tags_of(config, meter);
        let line_prefix =
            format!("{TABLE},tbname=d{meter},groupid={groupid},location={location} ").into_bytes();
        // The value stream is separate from the tag stream so tags can be looked up alone.
        let rng = meter_rng(config.seed ^ 0x5EED_F00D_DA7A, meter);
        Self {
            line_prefix,
            rng,
            next_row: 0,
        }
    }
}

fn meter_rng(seed: u64, meter: u32) -> Rng {
    Rng::new(seed ^ u64::from(meter).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Writes the non-negative fixed-point number `scaled / divisor` with `decimals` digits.
fn write_fixed(out: &mut Vec<u8>, scaled: i64, divisor: i64, decimals: usize) {
    write_int(out, scaled / divisor);
    out.push(b'.');
    let fraction = (scaled % divisor).to_string();
    out.extend(std::iter::repeat_n(b'0', decimals - fraction.len()));
    out.extend_from_slice(fraction.as_bytes());
}

/// Splits meters `0..meters` into at most `workers` contiguous ranges, as taosBenchmark
/// assigns tables to threads: sizes differ by at most one, the larger ranges first, no
/// empty range (fewer ranges than workers when there are fewer meters).
pub fn split_meters(meters: u32, workers: usize) -> Vec<Range<u32>> {
    let parts = (workers.max(1) as u64).min(u64::from(meters)).max(1);
    let base = u64::from(meters) / parts;
    let extra = u64::from(meters) % parts;
    let mut start = 0u32;
    let mut ranges = Vec::with_capacity(parts as usize);
    for i in 0..parts {
        let len = (base + u64::from(i < extra)) as u32;
        if len == 0 {
            continue;
        }
        ranges.push(start..start + len);
        start += len;
    }
    ranges
}
