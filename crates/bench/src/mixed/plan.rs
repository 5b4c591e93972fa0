//! The SQL of each read and what its answer must be, known from the generator before the
//! query runs: [`plan_read`] turns an operation and a [`ReadTarget`] (devices, sensors,
//! window) into a [`Read`] (statement and [`Expect`]).

use std::collections::BTreeSet;

use super::config::MixedConfig;
use super::mix::Operation;
use super::timestamps::time_literal;
use crate::iot::{MEASUREMENT, device_name, sensor_name};

/// Order of an answer's rows by time (or bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// What an answer must hold, known from the generator before the query runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// One row per device, at `row`, with the generator's values of `sensors`.
    Point {
        /// The devices asked for.
        devices: Vec<u32>,
        /// The sensors asked for.
        sensors: Vec<u32>,
        /// The row asked for.
        row: u64,
    },
    /// One row per device, at a row between the last visible and the last sent (both
    /// included), with the generator's values of every sensor.
    Latest {
        /// (device, lowest acceptable row, highest acceptable row).
        devices: Vec<(u32, u64, u64)>,
    },
    /// Exactly `count` rows, ordered by `time`.
    Rows {
        /// Rows expected.
        count: u64,
        /// Their order.
        order: Order,
    },
    /// One row per device whose every `count(…)` column is the device's count.
    Counts {
        /// (device, count).
        per_device: Vec<(u32, u64)>,
    },
    /// `rows` rows (device, bucket) whose `count(…)` columns each sum to `total`, ordered by
    /// `bucket`.
    Buckets {
        /// Rows expected.
        rows: u64,
        /// Sum of each count column.
        total: u64,
        /// Order of the buckets.
        order: Order,
    },
    /// Not knowable in advance (AGG_VALUE while TCP rows are still on their way).
    Unchecked,
}

/// One read: its statement and its expected answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The operation.
    pub op: Operation,
    /// The SQL sent to `/sql`.
    pub sql: String,
    /// What the answer must be.
    pub expect: Expect,
}

/// What a read is about: devices, sensors and the rows each device has.
#[derive(Debug, Clone)]
pub struct ReadTarget<'a> {
    /// Devices queried (with what the client knows of them).
    pub devices: Vec<&'a DeviceRows>,
    /// Sensors queried; the first is the value filter's.
    pub sensors: Vec<u32>,
    /// First row of the window.
    pub first_row: u64,
    /// Rows in the window.
    pub rows: u64,
    /// The row PRECISE_POINT asks for.
    pub point_row: u64,
}

/// What a client knows of one of its devices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRows {
    /// Device index.
    pub id: u32,
    /// Rows sent (HTTP: acknowledged), prefill included; rows `0..sent` exist or are on
    /// their way.
    pub sent: u64,
    /// Rows known visible to reads: `0..visible`.
    pub visible: u64,
    /// TCP: the `sent` of the previous visibility check, checked at the next one.
    pub pending: u64,
    /// Per sensor: how many of rows `0..sent` are above the value filter's bound.
    pub above: Vec<u64>,
}

/// Builds the statement and the expected answer of `op` over `target`.
pub fn plan_read(op: Operation, target: &ReadTarget, config: &MixedConfig) -> Read {
    let iot = &config.iot;
    let ids: Vec<u32> = target.devices.iter().map(|d| d.id).collect();
    let devices = device_condition(&ids);
    let sensors = target
        .sensors
        .iter()
        .map(|s| sensor_name(*s))
        .collect::<Vec<_>>()
        .join(", ");
    let counts = target
        .sensors
        .iter()
        .map(|s| format!("count({})", sensor_name(*s)))
        .collect::<Vec<_>>()
        .join(", ");
    let window = format!(
        "time >= {} AND time < {}",
        time_literal(iot.timestamp_ms(target.first_row)),
        time_literal(iot.timestamp_ms(target.first_row + target.rows))
    );
    let filter_sensor = target.sensors[0];
    let value = format!(
        "{} > {}",
        sensor_name(filter_sensor),
        centi_text(config.lower_value_centi)
    );
    let above_in_window = |id: u32| -> u64 {
        (target.first_row..target.first_row + target.rows)
            .filter(|r| iot.value_centi(id, filter_sensor, *r) > config.lower_value_centi)
            .count() as u64
    };
    let n_devices = ids.len() as u64;
    let select = format!("SELECT time, device, {sensors} FROM {MEASUREMENT} WHERE {devices}");
    let (sql, expect) = match op {
        // INGESTION is never planned as a read; it shares the cheapest read's arm so the
        // match stays total without a panic.
        Operation::PrecisePoint | Operation::Ingestion => (
            format!(
                "{select} AND time = {}",
                time_literal(iot.timestamp_ms(target.point_row))
            ),
            Expect::Point {
                devices: ids.clone(),
                sensors: target.sensors.clone(),
                row: target.point_row,
            },
        ),
        Operation::TimeRange | Operation::RangeQueryDesc => {
            let order = time_order(op == Operation::RangeQueryDesc);
            (
                format!("{select} AND {window} ORDER BY time{}", order_sql(order)),
                Expect::Rows {
                    count: n_devices * target.rows,
                    order,
                },
            )
        }
        Operation::ValueRange | Operation::ValueRangeQueryDesc => {
            let order = time_order(op == Operation::ValueRangeQueryDesc);
            (
                format!(
                    "{select} AND {window} AND {value} ORDER BY time{}",
                    order_sql(order)
                ),
                Expect::Rows {
                    count: ids.iter().map(|id| above_in_window(*id)).sum(),
                    order,
                },
            )
        }
        Operation::AggRange => (
            format!(
                "SELECT device, {counts} FROM {MEASUREMENT} WHERE {devices} AND {window} \
                 GROUP BY device"
            ),
            Expect::Counts {
                per_device: ids.iter().map(|id| (*id, target.rows)).collect(),
            },
        ),
        Operation::AggValue => {
            let known = target.devices.iter().all(|d| d.visible == d.sent);
            (
                format!(
                    "SELECT device, {counts} FROM {MEASUREMENT} WHERE {devices} AND {value} \
                     GROUP BY device"
                ),
                if known {
                    Expect::Counts {
                        per_device: target
                            .devices
                            .iter()
                            .map(|d| (d.id, d.above[filter_sensor as usize]))
                            .collect(),
                    }
                } else {
                    Expect::Unchecked
                },
            )
        }
        Operation::AggRangeValue => (
            format!(
                "SELECT device, {counts} FROM {MEASUREMENT} WHERE {devices} AND {window} AND \
                 {value} GROUP BY device"
            ),
            Expect::Counts {
                per_device: ids.iter().map(|id| (*id, above_in_window(*id))).collect(),
            },
        ),
        Operation::GroupBy | Operation::GroupByDesc => {
            let order = time_order(op == Operation::GroupByDesc);
            let buckets: BTreeSet<i64> = (target.first_row..target.first_row + target.rows)
                .map(|r| {
                    let ms = iot.timestamp_ms(r);
                    ms - ms.rem_euclid(config.group_by_ms)
                })
                .collect();
            (
                format!(
                    "SELECT date_bin({}, time) AS bucket, device, {counts} FROM {MEASUREMENT} \
                     WHERE {devices} AND {window} GROUP BY bucket, device ORDER BY bucket{}",
                    interval_literal(config.group_by_ms),
                    order_sql(order)
                ),
                Expect::Buckets {
                    rows: n_devices * buckets.len() as u64,
                    total: n_devices * target.rows,
                    order,
                },
            )
        }
        Operation::LatestPoint => (
            format!(
                "SELECT DISTINCT ON (device) * FROM {MEASUREMENT} WHERE {devices} \
                 ORDER BY device, time DESC"
            ),
            Expect::Latest {
                devices: target
                    .devices
                    .iter()
                    .map(|d| (d.id, d.visible.saturating_sub(1), d.sent.saturating_sub(1)))
                    .collect(),
            },
        ),
    };
    Read { op, sql, expect }
}

fn time_order(descending: bool) -> Order {
    if descending {
        Order::Descending
    } else {
        Order::Ascending
    }
}

fn order_sql(order: Order) -> &'static str {
    match order {
        Order::Ascending => "",
        Order::Descending => " DESC",
    }
}

/// `device = 'd_3'`, or `device IN ('d_1', 'd_5')`.
fn device_condition(devices: &[u32]) -> String {
    let quoted: Vec<String> = devices
        .iter()
        .map(|d| format!("'{}'", device_name(*d)))
        .collect();
    match quoted.as_slice() {
        [one] => format!("device = {one}"),
        many => format!("device IN ({})", many.join(", ")),
    }
}

/// `INTERVAL '20 seconds'` (or milliseconds when not whole seconds).
fn interval_literal(ms: i64) -> String {
    if ms % 1000 == 0 {
        format!("INTERVAL '{} seconds'", ms / 1000)
    } else {
        format!("INTERVAL '{ms} milliseconds'")
    }
}

/// Hundredths as a decimal literal: `-500` is `-5.00`.
fn centi_text(centi: i64) -> String {
    let sign = if centi < 0 { "-" } else { "" };
    let magnitude = centi.unsigned_abs();
    format!("{sign}{}.{:02}", magnitude / 100, magnitude % 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixed::test_support::config;

    fn device(config: &MixedConfig, id: u32, sent: u64, visible: u64) -> DeviceRows {
        let mut above = vec![0; config.iot.sensors as usize];
        for row in 0..sent {
            for (sensor, count) in above.iter_mut().enumerate() {
                if config.iot.value_centi(id, sensor as u32, row) > config.lower_value_centi {
                    *count += 1;
                }
            }
        }
        DeviceRows {
            id,
            sent,
            visible,
            pending: visible,
            above,
        }
    }

    #[test]
    fn reads_become_iotdb_shaped_sql() {
        let c = config();
        let (d1, d4) = (device(&c, 1, 100, 100), device(&c, 4, 100, 100));
        let target = ReadTarget {
            devices: vec![&d1, &d4],
            sensors: vec![2, 0],
            first_row: 10,
            rows: 30,
            point_row: 7,
        };
        let sql = |op| plan_read(op, &target, &c).sql;
        let window = "time >= '2021-12-31T16:00:10.000Z' AND time < '2021-12-31T16:00:40.000Z'";
        let devices = "device IN ('d_1', 'd_4')";
        assert_eq!(
            sql(Operation::PrecisePoint),
            format!(
                "SELECT time, device, s_2, s_0 FROM root WHERE {devices} AND \
                 time = '2021-12-31T16:00:07.000Z'"
            )
        );
        assert_eq!(
            sql(Operation::RangeQueryDesc),
            format!(
                "SELECT time, device, s_2, s_0 FROM root WHERE {devices} AND {window} ORDER BY time DESC"
            )
        );
        assert_eq!(
            sql(Operation::ValueRange),
            format!(
                "SELECT time, device, s_2, s_0 FROM root WHERE {devices} AND {window} AND \
                 s_2 > -5.00 ORDER BY time"
            )
        );
        assert_eq!(
            sql(Operation::AggRangeValue),
            format!(
                "SELECT device, count(s_2), count(s_0) FROM root WHERE {devices} AND {window} \
                 AND s_2 > -5.00 GROUP BY device"
            )
        );
        assert_eq!(
            sql(Operation::AggValue),
            format!(
                "SELECT device, count(s_2), count(s_0) FROM root WHERE {devices} AND \
                 s_2 > -5.00 GROUP BY device"
            )
        );
        assert_eq!(
            sql(Operation::GroupByDesc),
            format!(
                "SELECT date_bin(INTERVAL '20 seconds', time) AS bucket, device, count(s_2), \
                 count(s_0) FROM root WHERE {devices} AND {window} GROUP BY bucket, device \
                 ORDER BY bucket DESC"
            )
        );
        assert_eq!(
            sql(Operation::LatestPoint),
            format!(
                "SELECT DISTINCT ON (device) * FROM root WHERE {devices} ORDER BY device, \
                 time DESC"
            )
        );
        assert_eq!(device_condition(&[3]), "device = 'd_3'");
        assert_eq!(interval_literal(1500), "INTERVAL '1500 milliseconds'");
        assert_eq!(centi_text(-5), "-0.05");
        assert_eq!(centi_text(1234), "12.34");
    }

    #[test]
    fn expected_answers_follow_the_generator() {
        let c = config();
        let d1 = device(&c, 1, 120, 100);
        let d4 = device(&c, 4, 100, 100);
        let target = ReadTarget {
            devices: vec![&d1, &d4],
            sensors: vec![2],
            first_row: 10,
            rows: 30,
            point_row: 7,
        };
        let expect = |op| plan_read(op, &target, &c).expect;
        let above = |id: u32| {
            (10..40)
                .filter(|r| c.iot.value_centi(id, 2, *r) > -500)
                .count() as u64
        };
        assert_eq!(
            expect(Operation::TimeRange),
            Expect::Rows {
                count: 60,
                order: Order::Ascending
            }
        );
        assert_eq!(
            expect(Operation::ValueRangeQueryDesc),
            Expect::Rows {
                count: above(1) + above(4),
                order: Order::Descending
            }
        );
        assert_eq!(
            expect(Operation::AggRangeValue),
            Expect::Counts {
                per_device: vec![(1, above(1)), (4, above(4))]
            }
        );
        // Rows 10..40 are seconds 10..39 of a minute: buckets :00, :20 (and none past).
        assert_eq!(
            expect(Operation::GroupBy),
            Expect::Buckets {
                rows: 4,
                total: 60,
                order: Order::Ascending
            }
        );
        assert_eq!(
            expect(Operation::LatestPoint),
            Expect::Latest {
                devices: vec![(1, 99, 119), (4, 99, 99)]
            }
        );
        // d_1 still has rows on their way: AGG_VALUE over all time cannot be known.
        assert_eq!(expect(Operation::AggValue), Expect::Unchecked);
        let d1_done = device(&c, 1, 120, 120);
        let done = ReadTarget {
            devices: vec![&d1_done, &d4],
            ..target.clone()
        };
        assert_eq!(
            plan_read(Operation::AggValue, &done, &c).expect,
            Expect::Counts {
                per_device: vec![(1, d1_done.above[2]), (4, d4.above[2])]
            }
        );
    }
}
