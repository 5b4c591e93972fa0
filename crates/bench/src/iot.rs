//! IoTDB-benchmark's wind farm (seed 004): groups of devices, each with `s_0 … s_{n-1}`
//! double sensors, as a seeded, deterministic, *stateless* generator of line protocol.
//!
//! Schema. IoTDB writes `root.<group>.<device>.<sensor>`; here every device is one series
//! of one table: measurement `root`, tags `device` (`d_0`, `d_1`, …) and `group`
//! (`group_0`, …; device `d` is in group `d mod groups`, IoTDB-benchmark's `SG_STRATEGY=mod`),
//! one float field per sensor. A fixed table (rather than one per group) lets every query
//! name its devices alone, as IoTDB-benchmark's `… where device in ?` does. Timestamps are
//! milliseconds (`precision=ms`): row `r` of every device is at `start_ms + r * step_ms`.
//!
//! Defaults follow seed 004 (200 devices, 10 sensors, 20 rows per write) and, where the
//! seed is silent, IoTDB-benchmark's configuration: `POINT_STEP` 1000 ms, 20 groups, start
//! at `2022-01-01T00:00:00+08:00`.
//!
//! Values. Each (device, sensor) draws one of IoTDB-benchmark's value shapes from the seed —
//! LINE (a saw-tooth), SQUARE, RANDOM, CONSTANT — and its value at row `r` is a pure
//! function of (seed, device, sensor, r), in hundredths (IoTDB's `DOUBLE_LENGTH=2`) between
//! -100.00 and 100.00. Being a pure function is the point: the mixed benchmark checks a
//! query's answer (a point, the latest row, a count above a value) against the generator
//! without keeping what it wrote. IoTDB's SIN shape is left out: `sin` is not bit-identical
//! on every platform's libm, and answers are compared exactly.

use crate::write_int;

/// The table every device is written to.
pub const MEASUREMENT: &str = "root";
/// `2022-01-01T00:00:00+08:00`, IoTDB-benchmark's default `START_TIME`, in ms.
pub const DEFAULT_START_MS: i64 = 1_640_966_400_000;
/// Largest magnitude of a value, hundredths (100.00).
const VALUE_LIMIT_CENTI: i64 = 10_000;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IotConfig {
    /// Storage groups (the `group` tag's values).
    pub groups: u32,
    /// Devices (series).
    pub devices: u32,
    /// Sensors (float fields) per device.
    pub sensors: u32,
    /// Rows of one device per write (IoTDB's `BATCH_SIZE_PER_WRITE`).
    pub batch_rows: u32,
    /// Timestamp of row 0, ms since the epoch.
    pub start_ms: i64,
    /// Time between two rows of a device, ms (IoTDB's `POINT_STEP`).
    pub step_ms: i64,
    /// Seed of every value.
    pub seed: u64,
}

impl Default for IotConfig {
    fn default() -> Self {
        Self {
            groups: 20,
            devices: 200,
            sensors: 10,
            batch_rows: 20,
            start_ms: DEFAULT_START_MS,
            step_ms: 1000,
            seed: 4,
        }
    }
}

/// The shape of one sensor's values over time (IoTDB-benchmark's function types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// Rises linearly from -100 to 100 over a period, then starts again.
    Line,
    /// Alternates between two levels every half period.
    Square,
    /// Uniform noise, a fresh draw per row.
    Random,
    /// One level for ever.
    Constant,
}

/// A sensor's fixed parameters, drawn once from the seed.
#[derive(Debug, Clone, Copy)]
struct Params {
    shape: Shape,
    /// Rows per period (LINE, SQUARE), 60..=599.
    period: u64,
    /// Rows the period is shifted by, so sensors do not move in lock-step.
    phase: u64,
    /// First level (SQUARE high, CONSTANT), hundredths.
    level_a: i64,
    /// Second level (SQUARE low), hundredths.
    level_b: i64,
}

impl IotConfig {
    /// Refuses a configuration the generator cannot run, naming the bad setting.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("groups", u64::from(self.groups)),
            ("devices", u64::from(self.devices)),
            ("sensors", u64::from(self.sensors)),
            ("batch rows", u64::from(self.batch_rows)),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be at least 1"));
        }
        if self.step_ms <= 0 {
            return Err(format!(
                "the step between rows must be positive, not {} ms",
                self.step_ms
            ));
        }
        Ok(())
    }

    /// The group of `device` (`device mod groups`).
    pub fn group_of(&self, device: u32) -> u32 {
        device % self.groups.max(1)
    }

    /// Timestamp of row `row`, ms.
    pub fn timestamp_ms(&self, row: u64) -> i64 {
        self.start_ms + row as i64 * self.step_ms
    }

    /// The row at timestamp `ms`, if a row is there.
    pub fn row_at(&self, ms: i64) -> Option<u64> {
        let offset = ms.checked_sub(self.start_ms)?;
        if offset < 0 || offset % self.step_ms != 0 {
            return None;
        }
        Some((offset / self.step_ms) as u64)
    }

    /// Points (field values) in one write: rows x sensors.
    pub fn points_per_batch(&self) -> u64 {
        u64::from(self.batch_rows) * u64::from(self.sensors)
    }

    /// The shape of `sensor` of `device`.
    pub fn shape(&self, device: u32, sensor: u32) -> Shape {
        self.params(device, sensor).shape
    }

    /// Value of `sensor` of `device` at row `row`, hundredths (-10000..=10000).
    pub fn value_centi(&self, device: u32, sensor: u32, row: u64) -> i64 {
        let p = self.params(device, sensor);
        let at = row.wrapping_add(p.phase);
        match p.shape {
            Shape::Line => {
                let step = (at % p.period) as i64;
                -VALUE_LIMIT_CENTI + 2 * VALUE_LIMIT_CENTI * step / (p.period as i64 - 1)
            }
            Shape::Square if (at / (p.period / 2)).is_multiple_of(2) => p.level_a,
            Shape::Square => p.level_b,
            Shape::Random => {
                let bits = mix(self.seed ^ series_key(device, sensor) ^ mix(row));
                (bits % (2 * VALUE_LIMIT_CENTI as u64 + 1)) as i64 - VALUE_LIMIT_CENTI
            }
            Shape::Constant => p.level_a,
        }
    }

    /// Value of `sensor` of `device` at row `row`, as the float a query returns.
    pub fn value(&self, device: u32, sensor: u32, row: u64) -> f64 {
        // Both integers are exact, and IEEE division rounds once: this is the float that
        // parsing the written decimal gives.
        self.value_centi(device, sensor, row) as f64 / 100.0
    }

    /// Appends rows `first_row .. first_row + rows` of `device` as line protocol, one line
    /// per row, millisecond timestamps.
    pub fn write_rows(&self, device: u32, first_row: u64, rows: u64, out: &mut Vec<u8>) {
        let prefix = format!(
            "{MEASUREMENT},device={},group={} ",
            device_name(device),
            group_name(self.group_of(device))
        );
        for row in first_row..first_row + rows {
            out.extend_from_slice(prefix.as_bytes());
            for sensor in 0..self.sensors {
                if sensor > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"s_");
                write_int(out, i64::from(sensor));
                out.push(b'=');
                write_centi(out, self.value_centi(device, sensor, row));
            }
            out.push(b' ');
            write_int(out, self.timestamp_ms(row));
            out.push(b'\n');
        }
    }

    fn params(&self, device: u32, sensor: u32) -> Params {
        let key = mix(self.seed.wrapping_add(series_key(device, sensor)));
        let shape = match key % 4 {
            0 => Shape::Line,
            1 => Shape::Square,
            2 => Shape::Random,
            _ => Shape::Constant,
        };
        let second = mix(key);
        let third = mix(second);
        let span = 2 * VALUE_LIMIT_CENTI as u64 + 1;
        Params {
            shape,
            period: 60 + (second >> 32) % 540,
            phase: second & 0xFFFF_FFFF,
            level_a: (third % span) as i64 - VALUE_LIMIT_CENTI,
            level_b: ((third >> 32) % span) as i64 - VALUE_LIMIT_CENTI,
        }
    }
}

/// `d_<device>`.
pub fn device_name(device: u32) -> String {
    format!("d_{device}")
}

/// `group_<group>`.
pub fn group_name(group: u32) -> String {
    format!("group_{group}")
}

/// `s_<sensor>`.
pub fn sensor_name(sensor: u32) -> String {
    format!("s_{sensor}")
}

/// A key unique to (device, sensor) for every device and sensor index below 2^32.
fn series_key(device: u32, sensor: u32) -> u64 {
    (u64::from(device) << 32 | u64::from(sensor)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// SplitMix64's finaliser: a stateless, well-mixed hash of 64 bits.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes hundredths as a two-decimal number: `-1234` is `-12.34`, `-5` is `-0.05`.
fn write_centi(out: &mut Vec<u8>, centi: i64) {
    if centi < 0 {
        out.push(b'-');
    }
    let magnitude = centi.unsigned_abs();
    write_int(out, (magnitude / 100) as i64);
    out.push(b'.');
    let fraction = (magnitude % 100) as u8;
    out.push(b'0' + fraction / 10);
    out.push(b'0' + fraction % 10);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> IotConfig {
        IotConfig {
            groups: 3,
            devices: 7,
            sensors: 4,
            batch_rows: 5,
            ..IotConfig::default()
        }
    }

    fn lines(config: &IotConfig, device: u32, first: u64, rows: u64) -> Vec<String> {
        let mut out = Vec::new();
        config.write_rows(device, first, rows, &mut out);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn defaults_are_the_seeds() {
        let c = IotConfig::default();
        assert_eq!((c.devices, c.sensors, c.batch_rows), (200, 10, 20));
        assert_eq!((c.groups, c.step_ms), (20, 1000));
        assert_eq!(c.points_per_batch(), 200);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn names_tags_and_timestamps() {
        let c = small();
        let got = lines(&c, 4, 2, 2);
        assert_eq!(got.len(), 2);
        assert!(
            got[0].starts_with("root,device=d_4,group=group_1 s_0="),
            "{}",
            got[0]
        );
        assert!(got[0].ends_with(&format!(" {}", DEFAULT_START_MS + 2000)));
        assert!(got[1].ends_with(&format!(" {}", DEFAULT_START_MS + 3000)));
        let fields = got[0].split(' ').nth(1).unwrap();
        let names: Vec<&str> = fields
            .split(',')
            .map(|f| f.split('=').next().unwrap())
            .collect();
        assert_eq!(names, ["s_0", "s_1", "s_2", "s_3"]);
        assert_eq!(
            (device_name(12), group_name(3), sensor_name(9)),
            ("d_12".to_string(), "group_3".to_string(), "s_9".to_string())
        );
        assert_eq!(c.row_at(DEFAULT_START_MS + 3000), Some(3));
        assert_eq!(c.row_at(DEFAULT_START_MS + 3001), None);
        assert_eq!(c.row_at(DEFAULT_START_MS - 1000), None);
    }

    #[test]
    fn written_values_parse_to_the_generators_floats_within_range() {
        let c = small();
        for device in 0..c.devices {
            for (row, line) in lines(&c, device, 0, 300).iter().enumerate() {
                let fields = line.split(' ').nth(1).unwrap();
                for (sensor, field) in fields.split(',').enumerate() {
                    let text = field.split('=').nth(1).unwrap();
                    let parsed: f64 = text.parse().unwrap();
                    let expected = c.value(device, sensor as u32, row as u64);
                    assert_eq!(parsed, expected, "{line}");
                    assert!((-100.0..=100.0).contains(&parsed), "{line}");
                    let decimals = text.split('.').nth(1).unwrap();
                    assert_eq!(decimals.len(), 2, "{line}");
                }
            }
        }
        let mut out = Vec::new();
        write_centi(&mut out, -5);
        out.push(b' ');
        write_centi(&mut out, 10_000);
        out.push(b' ');
        write_centi(&mut out, 0);
        assert_eq!(out, b"-0.05 100.00 0.00");
    }

    #[test]
    fn every_shape_appears_and_behaves() {
        let c = IotConfig::default();
        let mut seen = std::collections::HashMap::new();
        for device in 0..50 {
            for sensor in 0..c.sensors {
                seen.entry(c.shape(device, sensor))
                    .or_insert((device, sensor));
            }
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        let values = |(d, s): (u32, u32)| -> Vec<i64> {
            (0..1200).map(|r| c.value_centi(d, s, r)).collect()
        };
        let constant = values(seen[&Shape::Constant]);
        assert!(constant.iter().all(|v| *v == constant[0]));
        let square = values(seen[&Shape::Square]);
        let levels: std::collections::BTreeSet<i64> = square.iter().copied().collect();
        assert!(levels.len() <= 2 && !levels.is_empty());
        let line = values(seen[&Shape::Line]);
        let rises = line.windows(2).filter(|w| w[1] > w[0]).count();
        assert!(rises > 1000, "a saw-tooth mostly rises: {rises}");
        assert!(line.contains(&-10_000) && line.contains(&10_000));
        let random = values(seen[&Shape::Random]);
        let distinct: std::collections::BTreeSet<i64> = random.iter().copied().collect();
        assert!(distinct.len() > 1000, "{}", distinct.len());
        assert!(random.iter().any(|v| *v < 0) && random.iter().any(|v| *v > 0));
    }

    #[test]
    fn same_seed_same_bytes_other_seed_other_values() {
        let a = small();
        let b = small();
        let other = IotConfig { seed: 5, ..small() };
        assert_eq!(lines(&a, 3, 0, 50), lines(&b, 3, 0, 50));
        assert_ne!(lines(&a, 3, 0, 50), lines(&other, 3, 0, 50));
        // Stateless: rows 10..20 are the same whether written alone or after rows 0..10.
        assert_eq!(lines(&a, 3, 0, 20)[10..], lines(&a, 3, 10, 10)[..]);
        // Devices differ from each other.
        let strip = |l: &[String]| -> Vec<String> {
            l.iter()
                .map(|x| x.split(' ').nth(1).unwrap().to_string())
                .collect()
        };
        assert_ne!(strip(&lines(&a, 1, 0, 50)), strip(&lines(&a, 2, 0, 50)));
    }

    #[test]
    fn a_batch_is_batch_rows_lines_of_all_sensors() {
        let c = small();
        let got = lines(&c, 0, 0, u64::from(c.batch_rows));
        assert_eq!(got.len(), 5);
        let points: usize = got
            .iter()
            .map(|l| l.split(' ').nth(1).unwrap().split(',').count())
            .sum();
        assert_eq!(points as u64, c.points_per_batch());
        assert_eq!(c.points_per_batch(), 20);
    }

    #[test]
    fn bad_configurations_are_named() {
        let err = IotConfig {
            sensors: 0,
            ..small()
        }
        .validate()
        .unwrap_err();
        assert!(err.contains("sensors"), "{err}");
        let err = IotConfig {
            step_ms: 0,
            ..small()
        }
        .validate()
        .unwrap_err();
        assert!(err.contains("step"), "{err}");
    }
}
