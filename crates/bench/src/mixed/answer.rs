//! `/sql` answers and their checks: [`parse_answer`] reads the JSON, [`check`] compares it
//! with what the plan expects ([`Expect`]): points and latest rows value by value, row
//! counts, orders and `count` aggregates exactly.

use std::collections::BTreeSet;

use super::plan::{Expect, Order};
use super::timestamps::parse_rfc3339_ns;
use crate::iot::{IotConfig, device_name, sensor_name};

/// A `/sql` JSON answer: column names and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// Rows of JSON values.
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Parses `{"columns":[{"name":…},…],"rows":[[…]],"row_count":N}`; an `error` after the
/// rows, or a `row_count` that disagrees with the rows, is an error.
pub fn parse_answer(body: &[u8]) -> Result<Answer, String> {
    #[derive(serde::Deserialize)]
    struct Column {
        name: String,
    }
    #[derive(serde::Deserialize)]
    struct Raw {
        columns: Vec<Column>,
        rows: Vec<Vec<serde_json::Value>>,
        row_count: Option<u64>,
        error: Option<serde_json::Value>,
    }
    let raw: Raw =
        serde_json::from_slice(body).map_err(|e| format!("the JSON answer does not parse: {e}"))?;
    if let Some(error) = raw.error {
        return Err(format!("the answer failed part-way: {error}"));
    }
    if raw.row_count.is_some_and(|n| n != raw.rows.len() as u64) {
        return Err(format!(
            "row_count {:?} but {} rows",
            raw.row_count,
            raw.rows.len()
        ));
    }
    Ok(Answer {
        columns: raw.columns.into_iter().map(|c| c.name).collect(),
        rows: raw.rows,
    })
}

/// The outcome of checking an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Checked and right.
    Right,
    /// Nothing to check it against.
    Unchecked,
    /// Checked and wrong: why.
    Wrong(String),
}

/// Checks `answer` against `expect` (values from `iot`).
pub fn check(expect: &Expect, answer: &Answer, iot: &IotConfig) -> Verdict {
    let result = match expect {
        Expect::Unchecked => return Verdict::Unchecked,
        Expect::Point {
            devices,
            sensors,
            row,
        } => check_point(answer, iot, devices, sensors, *row),
        Expect::Latest { devices } => check_latest(answer, iot, devices),
        Expect::Rows { count, order } => check_rows(answer, *count, "time", *order),
        Expect::Counts { per_device } => check_counts(answer, per_device),
        Expect::Buckets { rows, total, order } => check_rows(answer, *rows, "bucket", *order)
            .and_then(|()| check_count_sums(answer, *total)),
    };
    match result {
        Ok(()) => Verdict::Right,
        Err(why) => Verdict::Wrong(why),
    }
}

fn column(answer: &Answer, name: &str) -> Result<usize, String> {
    answer
        .columns
        .iter()
        .position(|c| c == name)
        .ok_or_else(|| format!("no column `{name}` in {:?}", answer.columns))
}

fn cell(row: &[serde_json::Value], at: usize) -> Result<&serde_json::Value, String> {
    row.get(at)
        .ok_or_else(|| format!("a row has {} cells, column {at} missing", row.len()))
}

fn cell_device(row: &[serde_json::Value], at: usize) -> Result<u32, String> {
    let value = cell(row, at)?;
    value
        .as_str()
        .and_then(|s| s.strip_prefix("d_"))
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("device {value} is not d_<n>"))
}

fn cell_time_ms(row: &[serde_json::Value], at: usize) -> Result<i64, String> {
    let value = cell(row, at)?;
    let ns = value
        .as_str()
        .and_then(parse_rfc3339_ns)
        .ok_or_else(|| format!("time {value} is not an RFC 3339 timestamp"))?;
    if ns % 1_000_000 != 0 {
        return Err(format!("time {value} is not a whole millisecond"));
    }
    Ok(ns / 1_000_000)
}

fn expect_row_count(answer: &Answer, count: u64) -> Result<(), String> {
    if answer.rows.len() as u64 != count {
        return Err(format!("{} rows, expected {count}", answer.rows.len()));
    }
    Ok(())
}

/// Compares the sensor values of one answer row with the generator's at `row`.
fn check_values(
    answer: &Answer,
    cells: &[serde_json::Value],
    iot: &IotConfig,
    device: u32,
    sensors: &[u32],
    row: u64,
) -> Result<(), String> {
    for sensor in sensors {
        let at = column(answer, &sensor_name(*sensor))?;
        let got = cell(cells, at)?.as_f64();
        let expected = iot.value(device, *sensor, row);
        if got != Some(expected) {
            return Err(format!(
                "{}.{} at row {row}: {got:?}, expected {expected}",
                device_name(device),
                sensor_name(*sensor)
            ));
        }
    }
    Ok(())
}

fn check_point(
    answer: &Answer,
    iot: &IotConfig,
    devices: &[u32],
    sensors: &[u32],
    row: u64,
) -> Result<(), String> {
    expect_row_count(answer, devices.len() as u64)?;
    let (time_at, device_at) = (column(answer, "time")?, column(answer, "device")?);
    let mut seen = BTreeSet::new();
    for cells in &answer.rows {
        let device = cell_device(cells, device_at)?;
        if !devices.contains(&device) || !seen.insert(device) {
            return Err(format!(
                "device d_{device} not asked for or twice; asked {devices:?}"
            ));
        }
        let time = cell_time_ms(cells, time_at)?;
        if time != iot.timestamp_ms(row) {
            return Err(format!(
                "time {time}, expected {} (row {row})",
                iot.timestamp_ms(row)
            ));
        }
        check_values(answer, cells, iot, device, sensors, row)?;
    }
    Ok(())
}

fn check_latest(
    answer: &Answer,
    iot: &IotConfig,
    devices: &[(u32, u64, u64)],
) -> Result<(), String> {
    expect_row_count(answer, devices.len() as u64)?;
    let (time_at, device_at) = (column(answer, "time")?, column(answer, "device")?);
    let all_sensors: Vec<u32> = (0..iot.sensors).collect();
    let mut seen = BTreeSet::new();
    for cells in &answer.rows {
        let device = cell_device(cells, device_at)?;
        let Some((_, low, high)) = devices.iter().find(|(d, ..)| *d == device) else {
            return Err(format!("device d_{device} not asked for"));
        };
        if !seen.insert(device) {
            return Err(format!("device d_{device} twice"));
        }
        let time = cell_time_ms(cells, time_at)?;
        let row = iot
            .row_at(time)
            .ok_or_else(|| format!("time {time} is not a row's time"))?;
        if row < *low || row > *high {
            return Err(format!(
                "latest row of d_{device} is {row}, expected between {low} and {high}"
            ));
        }
        check_values(answer, cells, iot, device, &all_sensors, row)?;
    }
    Ok(())
}

fn check_rows(answer: &Answer, count: u64, time_column: &str, order: Order) -> Result<(), String> {
    expect_row_count(answer, count)?;
    if answer.rows.is_empty() {
        return Ok(());
    }
    let at = column(answer, time_column)?;
    let times = answer
        .rows
        .iter()
        .map(|cells| cell_time_ms(cells, at))
        .collect::<Result<Vec<_>, _>>()?;
    let sorted = times.windows(2).all(|w| match order {
        Order::Ascending => w[0] <= w[1],
        Order::Descending => w[0] >= w[1],
    });
    if !sorted {
        return Err(format!("rows are not in {order:?} order of {time_column}"));
    }
    Ok(())
}

/// Indexes of the `count(…)` columns.
fn count_columns(answer: &Answer) -> Vec<usize> {
    answer
        .columns
        .iter()
        .enumerate()
        .filter(|(_, name)| name.starts_with("count("))
        .map(|(i, _)| i)
        .collect()
}

pub(super) fn cell_count(cells: &[serde_json::Value], at: usize) -> Result<u64, String> {
    let value = cell(cells, at)?;
    value
        .as_u64()
        .ok_or_else(|| format!("count {value} is not a whole number"))
}

fn check_counts(answer: &Answer, per_device: &[(u32, u64)]) -> Result<(), String> {
    // A device without a matching row has no group, so it has no row either.
    let expected_rows: Vec<&(u32, u64)> = per_device.iter().filter(|(_, n)| *n > 0).collect();
    expect_row_count(answer, expected_rows.len() as u64)?;
    let device_at = column(answer, "device")?;
    let counts = count_columns(answer);
    if counts.is_empty() {
        return Err(format!("no count column in {:?}", answer.columns));
    }
    for cells in &answer.rows {
        let device = cell_device(cells, device_at)?;
        let Some((_, expected)) = expected_rows.iter().find(|(d, _)| *d == device) else {
            return Err(format!("device d_{device} not expected"));
        };
        for at in &counts {
            let got = cell_count(cells, *at)?;
            if got != *expected {
                return Err(format!(
                    "{} of d_{device} is {got}, expected {expected}",
                    answer.columns[*at]
                ));
            }
        }
    }
    Ok(())
}

fn check_count_sums(answer: &Answer, total: u64) -> Result<(), String> {
    let counts = count_columns(answer);
    if counts.is_empty() {
        return Err(format!("no count column in {:?}", answer.columns));
    }
    for at in counts {
        let mut sum = 0u64;
        for cells in &answer.rows {
            sum += cell_count(cells, at)?;
        }
        if sum != total {
            return Err(format!(
                "{} sums to {sum}, expected {total}",
                answer.columns[at]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mixed::test_support::config;
    use crate::mixed::{MixedConfig, rfc3339_ms};

    fn answer(json: &str) -> Answer {
        parse_answer(json.as_bytes()).unwrap()
    }

    fn time_json(config: &MixedConfig, row: u64) -> String {
        // As the server writes it: nine fraction digits.
        let text = rfc3339_ms(config.iot.timestamp_ms(row));
        format!("\"{}000000Z\"", &text[..23])
    }

    #[test]
    fn points_and_latest_rows_are_compared_value_by_value() {
        let c = config();
        let iot = &c.iot;
        let point = Expect::Point {
            devices: vec![1, 4],
            sensors: vec![2],
            row: 7,
        };
        let row = |device: u32, at: u64, value: f64| {
            format!("[{},\"d_{device}\",{value:?}]", time_json(&c, at))
        };
        let json = |rows: &[String]| {
            format!(
                "{{\"columns\":[{{\"name\":\"time\"}},{{\"name\":\"device\"}},{{\"name\":\"s_2\"}}],\
                 \"rows\":[{}],\"row_count\":{}}}",
                rows.join(","),
                rows.len()
            )
        };
        let right = json(&[row(4, 7, iot.value(4, 2, 7)), row(1, 7, iot.value(1, 2, 7))]);
        assert_eq!(check(&point, &answer(&right), iot), Verdict::Right);
        let off = json(&[
            row(4, 7, iot.value(4, 2, 7) + 0.01),
            row(1, 7, iot.value(1, 2, 7)),
        ]);
        assert!(
            matches!(check(&point, &answer(&off), iot), Verdict::Wrong(w) if w.contains("d_4.s_2"))
        );
        let late = json(&[row(4, 8, iot.value(4, 2, 8)), row(1, 7, iot.value(1, 2, 7))]);
        assert!(matches!(
            check(&point, &answer(&late), iot),
            Verdict::Wrong(_)
        ));
        let short = json(&[row(1, 7, iot.value(1, 2, 7))]);
        assert!(
            matches!(check(&point, &answer(&short), iot), Verdict::Wrong(w) if w.contains("1 rows"))
        );
        let twice = json(&[row(1, 7, iot.value(1, 2, 7)), row(1, 7, iot.value(1, 2, 7))]);
        assert!(matches!(
            check(&point, &answer(&twice), iot),
            Verdict::Wrong(_)
        ));

        // LATEST_POINT: `*` gives every sensor; any row between the bounds is right.
        let latest = Expect::Latest {
            devices: vec![(1, 99, 119)],
        };
        let star = |at: u64, bump: f64| {
            format!(
                "{{\"columns\":[{{\"name\":\"device\"}},{{\"name\":\"group\"}},{{\"name\":\"s_0\"}},\
                 {{\"name\":\"s_1\"}},{{\"name\":\"s_2\"}},{{\"name\":\"time\"}}],\"rows\":[[\"d_1\",\
                 \"group_1\",{:?},{:?},{:?},{}]]}}",
                iot.value(1, 0, at),
                iot.value(1, 1, at) + bump,
                iot.value(1, 2, at),
                time_json(&c, at)
            )
        };
        assert_eq!(
            check(&latest, &answer(&star(110, 0.0)), iot),
            Verdict::Right
        );
        assert_eq!(check(&latest, &answer(&star(99, 0.0)), iot), Verdict::Right);
        assert!(
            matches!(check(&latest, &answer(&star(98, 0.0)), iot), Verdict::Wrong(w) if w.contains("between"))
        );
        assert!(
            matches!(check(&latest, &answer(&star(119, 0.5)), iot), Verdict::Wrong(w) if w.contains("s_1"))
        );
    }

    #[test]
    fn counts_orders_and_buckets_are_checked() {
        let c = config();
        let iot = &c.iot;
        let times = |rows: &[u64]| {
            let cells: Vec<String> = rows
                .iter()
                .map(|r| format!("[{}]", time_json(&c, *r)))
                .collect();
            answer(&format!(
                "{{\"columns\":[{{\"name\":\"time\"}}],\"rows\":[{}]}}",
                cells.join(",")
            ))
        };
        let asc = Expect::Rows {
            count: 3,
            order: Order::Ascending,
        };
        let desc = Expect::Rows {
            count: 3,
            order: Order::Descending,
        };
        assert_eq!(check(&asc, &times(&[1, 2, 2]), iot), Verdict::Right);
        assert!(matches!(
            check(&asc, &times(&[2, 1, 3]), iot),
            Verdict::Wrong(_)
        ));
        assert_eq!(check(&desc, &times(&[3, 2, 1]), iot), Verdict::Right);
        assert!(matches!(
            check(&desc, &times(&[3, 2]), iot),
            Verdict::Wrong(_)
        ));

        let counts = Expect::Counts {
            per_device: vec![(1, 5), (4, 0)],
        };
        let one = |n: u64| {
            answer(&format!(
                "{{\"columns\":[{{\"name\":\"device\"}},{{\"name\":\"count(root.s_2)\"}}],\
                 \"rows\":[[\"d_1\",{n}]]}}"
            ))
        };
        // d_4 has nothing above the bound: no group, no row.
        assert_eq!(check(&counts, &one(5), iot), Verdict::Right);
        assert!(
            matches!(check(&counts, &one(4), iot), Verdict::Wrong(w) if w.contains("expected 5"))
        );

        let buckets = Expect::Buckets {
            rows: 2,
            total: 30,
            order: Order::Descending,
        };
        let grouped = |first: u64, second: u64, a: u64, b: u64| {
            answer(&format!(
                "{{\"columns\":[{{\"name\":\"bucket\"}},{{\"name\":\"device\"}},{{\"name\":\"count(root.s_0)\"}}],\
                 \"rows\":[[{},\"d_1\",{a}],[{},\"d_1\",{b}]]}}",
                time_json(&c, first),
                time_json(&c, second)
            ))
        };
        assert_eq!(
            check(&buckets, &grouped(20, 0, 10, 20), iot),
            Verdict::Right
        );
        assert!(matches!(
            check(&buckets, &grouped(0, 20, 10, 20), iot),
            Verdict::Wrong(_)
        ));
        assert!(
            matches!(check(&buckets, &grouped(20, 0, 10, 19), iot), Verdict::Wrong(w) if w.contains("sums"))
        );
        assert_eq!(check(&Expect::Unchecked, &one(1), iot), Verdict::Unchecked);
    }

    #[test]
    fn answers_that_failed_part_way_are_errors() {
        assert!(parse_answer(b"not json").is_err());
        assert!(parse_answer(br#"{"columns":[],"rows":[[1]],"row_count":2}"#).is_err());
        assert!(
            parse_answer(
                br#"{"columns":[{"name":"a"}],"rows":[[1]],"row_count":1,"error":{"message":"x"}}"#
            )
            .is_err()
        );
        let ok =
            parse_answer(br#"{"columns":[{"name":"a","type":"int"}],"rows":[[1]],"row_count":1}"#)
                .unwrap();
        assert_eq!(ok.columns, ["a"]);
    }
}
