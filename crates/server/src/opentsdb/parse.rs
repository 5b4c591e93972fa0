//! OpenTSDB's data points, from the telnet `put` line and from `/api/put`'s JSON, and their
//! grouping into [`SeriesWrite`]s.
//!
//! The rules are OpenTSDB 2.x's, so that what OpenTSDB stores Strata stores too:
//! - a timestamp is a positive integer: seconds below 2^32, milliseconds from there up to
//!   13 digits. One with a decimal point is seconds with a fraction (OpenTSDB would drop
//!   the point and read the digits as milliseconds, which only works for exactly three
//!   decimals: Strata reads any fraction down to the nanosecond).
//! - a value is an integer or a float; NaN and the infinities are refused.
//! - a tag is `key=value`, both sides non-empty, with no second `=`; a key given twice
//!   with two values is refused. Unlike OpenTSDB, a point without tags is accepted (as
//!   InfluxDB's and VictoriaMetrics' OpenTSDB listeners do).

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::hash::BuildHasher;

use foldhash::HashMap;

use strata_storage::SeriesWrite;
use strata_storage::model::Value;

use crate::prom::model::VALUE_FIELD;

/// Timestamps below this are seconds, from it up milliseconds (OpenTSDB's rule: a
/// timestamp with any of its upper 32 bits set is in milliseconds).
const FIRST_MILLISECOND_TIMESTAMP: i64 = 1 << 32;
/// The largest millisecond timestamp OpenTSDB takes (13 digits).
const LAST_MILLISECOND_TIMESTAMP: i64 = 9_999_999_999_999;

/// A series' tags: (key, value) pairs.
type Tags<'a> = Vec<(Cow<'a, str>, Cow<'a, str>)>;

/// One data point, validated.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Datapoint<'a> {
    /// The metric: the table it goes to.
    pub metric: Cow<'a, str>,
    /// Tags sorted by key, each key once.
    pub tags: Tags<'a>,
    /// Nanoseconds since the epoch.
    pub time_ns: i64,
    pub value: f64,
}

/// Parses a telnet `put` command's words after `put`: `<metric> <timestamp> <value>
/// <tagk=tagv>...`. Errors name the word at fault.
pub(crate) fn put_words<'a>(
    words: &mut impl Iterator<Item = &'a str>,
) -> Result<Datapoint<'a>, String> {
    let (Some(metric), Some(timestamp), Some(value)) = (words.next(), words.next(), words.next())
    else {
        return Err(
            "not enough arguments: expected put <metric> <timestamp> <value> <tagk=tagv>...".into(),
        );
    };
    let time_ns = timestamp_text(timestamp)?;
    let value = value_text(value)?;
    let mut tags = Vec::new();
    for tag in words {
        let (key, tag_value) = split_tag(tag)?;
        tags.push((Cow::Borrowed(key), Cow::Borrowed(tag_value)));
    }
    Ok(Datapoint {
        metric: Cow::Borrowed(metric),
        tags: sorted_tags(tags)?,
        time_ns,
        value,
    })
}

/// Reads one element of `/api/put`'s body: `{"metric": .., "timestamp": .., "value": ..,
/// "tags": {..}}`. As OpenTSDB (whose JSON reader coerces scalars) does, the timestamp and
/// the value may also be strings holding a number, and a tag value a number or a boolean.
pub(crate) fn json_datapoint(point: &serde_json::Value) -> Result<Datapoint<'_>, String> {
    let serde_json::Value::Object(object) = point else {
        return Err("a data point must be a JSON object".into());
    };
    let metric = match object.get("metric") {
        Some(serde_json::Value::String(metric)) if !metric.is_empty() => metric.as_str(),
        Some(serde_json::Value::String(_)) | None | Some(serde_json::Value::Null) => {
            return Err("Metric name was empty".into());
        }
        Some(_) => return Err("the metric name must be a string".into()),
    };
    let time_ns = match object.get("timestamp") {
        Some(serde_json::Value::Number(number)) => json_timestamp(number)?,
        Some(serde_json::Value::String(text)) => timestamp_text(text)?,
        None | Some(serde_json::Value::Null) => return Err("Invalid timestamp: missing".into()),
        Some(_) => return Err("Invalid timestamp: must be a number".into()),
    };
    let value = match object.get("value") {
        Some(serde_json::Value::Number(number)) => finite(number.as_f64().unwrap_or(f64::NAN))?,
        Some(serde_json::Value::String(text)) if text.is_empty() => {
            return Err("Empty value".into());
        }
        Some(serde_json::Value::String(text)) => value_text(text)?,
        None | Some(serde_json::Value::Null) => return Err("Empty value".into()),
        Some(_) => return Err("Unable to parse value to a number".into()),
    };
    let mut tags = Vec::new();
    match object.get("tags") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(map)) => {
            for (key, tag_value) in map {
                let tag_value = match tag_value {
                    serde_json::Value::String(text) => Cow::Borrowed(text.as_str()),
                    serde_json::Value::Number(number) => Cow::Owned(number.to_string()),
                    serde_json::Value::Bool(flag) => Cow::Owned(flag.to_string()),
                    _ => return Err(format!("the value of tag {key:?} must be a string")),
                };
                if key.is_empty() || tag_value.is_empty() {
                    return Err(format!(
                        "invalid tag: {key}={tag_value} (empty key or value)"
                    ));
                }
                tags.push((Cow::Borrowed(key.as_str()), tag_value));
            }
        }
        Some(_) => return Err("tags must be a JSON object of key: value".into()),
    }
    Ok(Datapoint {
        metric: Cow::Borrowed(metric),
        tags: sorted_tags(tags)?,
        time_ns,
        value,
    })
}

/// A JSON number as a timestamp: an integer by [`integer_timestamp`]'s rule, or seconds
/// with a fraction.
fn json_timestamp(number: &serde_json::Number) -> Result<i64, String> {
    if let Some(integer) = number.as_i64() {
        return integer_timestamp(integer);
    }
    if number.is_u64() {
        return Err(format!("Invalid timestamp: {number} is too large"));
    }
    // A float: seconds with a fraction. Through the decimal text, so that 1.1 is not read as
    // 1.0999999999.
    timestamp_text(&number.to_string())
}

/// A timestamp as OpenTSDB writes it: integer seconds or milliseconds, or decimal seconds.
pub(crate) fn timestamp_text(text: &str) -> Result<i64, String> {
    let bad = || format!("Invalid timestamp: {text:?} is not a positive integer");
    match text.split_once('.') {
        None => integer_timestamp(text.parse::<i64>().map_err(|_| bad())?),
        Some((seconds, fraction)) => {
            let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
            if !digits(seconds) || !digits(fraction) || fraction.len() > 9 {
                return Err(format!(
                    "Invalid timestamp: {text:?} is not seconds with at most 9 decimals"
                ));
            }
            let seconds: i64 = seconds.parse().map_err(|_| bad())?;
            let fraction_ns: i64 = format!("{fraction:0<9}").parse().map_err(|_| bad())?;
            seconds
                .checked_mul(1_000_000_000)
                .and_then(|ns| ns.checked_add(fraction_ns))
                .filter(|ns| *ns > 0)
                .ok_or_else(|| format!("Invalid timestamp: {text:?} is out of range"))
        }
    }
}

/// An integer timestamp: seconds below 2^32, milliseconds from there up to 13 digits.
fn integer_timestamp(timestamp: i64) -> Result<i64, String> {
    if timestamp <= 0 {
        Err(format!("Invalid timestamp: {timestamp} (must be positive)"))
    } else if timestamp < FIRST_MILLISECOND_TIMESTAMP {
        Ok(timestamp * 1_000_000_000)
    } else if timestamp <= LAST_MILLISECOND_TIMESTAMP {
        timestamp.checked_mul(1_000_000).ok_or_else(|| {
            format!(
                "Invalid timestamp: {timestamp} ms is past the year 2262, the last Strata stores"
            )
        })
    } else {
        Err(format!(
            "Invalid timestamp: {timestamp} is too large (milliseconds have at most 13 digits)"
        ))
    }
}

/// A value: an integer or a decimal float (`1`, `-2.5`, `1e3`), finite.
pub(crate) fn value_text(text: &str) -> Result<f64, String> {
    // Rust's float parser also takes "inf", "nan" and "infinity": refused below as OpenTSDB
    // refuses them.
    let value = text
        .parse::<f64>()
        .map_err(|_| format!("Unable to parse value to a number: {text:?}"))?;
    finite(value)
}

fn finite(value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("value is NaN or infinite: {value}"))
    }
}

/// `key=value`, both sides non-empty, one `=`.
fn split_tag(tag: &str) -> Result<(&str, &str), String> {
    match tag.split_once('=') {
        Some((key, value)) if !key.is_empty() && !value.is_empty() && !value.contains('=') => {
            Ok((key, value))
        }
        _ => Err(format!(
            "invalid tag: {tag:?} (expected key=value, both non-empty)"
        )),
    }
}

/// Sorts tags by key; a key given twice must have one value.
fn sorted_tags(mut tags: Tags<'_>) -> Result<Tags<'_>, String> {
    tags.sort();
    for pair in tags.windows(2) {
        if pair[0].0 == pair[1].0 && pair[0].1 != pair[1].1 {
            return Err(format!(
                "duplicate tag: {}={}, tags already contain {}={}",
                pair[1].0, pair[1].1, pair[0].0, pair[0].1
            ));
        }
    }
    tags.dedup();
    Ok(tags)
}

/// Data points grouped by series, ready for [`strata_storage::Engine::write_series`].
#[derive(Debug, Default)]
pub(crate) struct Grouped<'a> {
    pub series: Vec<SeriesWrite<'a>>,
    /// For each series, the place (line number, or index in the JSON array) of its first
    /// data point: the engine reports a refused series by its place in `series`.
    pub first: Vec<usize>,
    /// Data points added.
    pub points: u64,
}

/// Groups data points by series as they come; each series' samples keep their order.
///
/// Series are found by a 64-bit hash of their metric and tags, checked against the series
/// itself, so no key is stored twice (most points of a telnet batch are each a series of
/// their own: the lookup is on the hot path).
#[derive(Debug, Default)]
pub(crate) struct Grouper<'a> {
    grouped: Grouped<'a>,
    /// Hash of (metric, tags) → the first series with that hash.
    by_hash: HashMap<u64, usize>,
    /// Series whose hash an earlier, different series holds (64-bit collisions).
    collided: Vec<usize>,
    hasher: foldhash::fast::FixedState,
}

impl<'a> Grouper<'a> {
    /// Adds a data point found at `place`.
    pub fn add(&mut self, point: Datapoint<'a>, place: usize) {
        let hash = self.hasher.hash_one((&point.metric, &point.tags));
        let sample = (point.time_ns, Value::Float(point.value));
        self.grouped.points += 1;
        let series = &mut self.grouped.series;
        let same = |at: usize| series[at].table == point.metric && series[at].tags == point.tags;
        let found = match self.by_hash.get(&hash) {
            None => None,
            Some(&at) if same(at) => Some(at),
            Some(_) => self.collided.iter().copied().find(|&at| same(at)),
        };
        if let Some(at) = found {
            series[at].samples.push(sample);
            return;
        }
        let at = series.len();
        series.push(SeriesWrite {
            table: point.metric,
            tags: point.tags,
            field: Cow::Borrowed(VALUE_FIELD),
            samples: vec![sample],
        });
        self.grouped.first.push(place);
        match self.by_hash.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(at);
            }
            Entry::Occupied(_) => self.collided.push(at),
        }
    }

    pub fn finish(self) -> Grouped<'a> {
        self.grouped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(line: &str) -> Result<Datapoint<'_>, String> {
        put_words(&mut line.split_ascii_whitespace())
    }

    #[test]
    fn timestamps_follow_opentsdb() {
        assert_eq!(timestamp_text("1700000000"), Ok(1_700_000_000_000_000_000));
        assert_eq!(
            timestamp_text("1700000000123"),
            Ok(1_700_000_000_123_000_000)
        );
        // Seconds up to 2^32 - 1, whatever their number of digits.
        assert_eq!(timestamp_text("17"), Ok(17_000_000_000));
        assert_eq!(timestamp_text("4294967295"), Ok(4_294_967_295_000_000_000));
        assert_eq!(timestamp_text("4294967296"), Ok(4_294_967_296_000_000));
        assert_eq!(
            timestamp_text("9223372036854"),
            Ok(9_223_372_036_854_000_000)
        );
        assert!(
            timestamp_text("9999999999999")
                .unwrap_err()
                .contains("2262")
        );
        assert!(
            timestamp_text("10000000000000")
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(
            timestamp_text("1700000000.25"),
            Ok(1_700_000_000_250_000_000)
        );
        assert_eq!(
            timestamp_text("1700000000.123456789"),
            Ok(1_700_000_000_123_456_789)
        );
        for bad in [
            "0",
            "-5",
            "abc",
            "1.2.3",
            ".5",
            "5.",
            "1.1234567891",
            "1e9",
            "",
        ] {
            assert!(timestamp_text(bad).is_err(), "{bad}");
        }
        assert!(timestamp_text("99999999999999999999.5").is_err());
    }

    #[test]
    fn values_are_finite_numbers() {
        assert_eq!(value_text("42"), Ok(42.0));
        assert_eq!(value_text("-2.5e3"), Ok(-2500.0));
        for bad in ["NaN", "inf", "-Infinity", "", "0x10", "1,5"] {
            assert!(value_text(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn put_lines_parse_and_errors_name_the_word() {
        let point = put("sys.cpu.user 1356998400 42.5 host=web01 cpu=0").unwrap();
        assert_eq!(point.metric, "sys.cpu.user");
        assert_eq!(point.time_ns, 1_356_998_400_000_000_000);
        assert_eq!(point.value, 42.5);
        assert_eq!(
            point.tags,
            vec![
                (Cow::from("cpu"), Cow::from("0")),
                (Cow::from("host"), Cow::from("web01"))
            ]
        );
        // No tags is accepted; the same tag twice with one value too.
        assert!(put("m 1356998400 1").unwrap().tags.is_empty());
        assert_eq!(put("m 1356998400 1 a=1 a=1").unwrap().tags.len(), 1);
        let cases = [
            ("m 1356998400", "not enough arguments"),
            ("m x 1 a=b", "Invalid timestamp"),
            ("m 1356998400 x a=b", "\"x\""),
            ("m 1356998400 1 a", "invalid tag: \"a\""),
            ("m 1356998400 1 =b", "invalid tag"),
            ("m 1356998400 1 a=", "invalid tag"),
            ("m 1356998400 1 a==b", "invalid tag"),
            ("m 1356998400 1 a=1 a=2", "duplicate tag: a=2"),
        ];
        for (line, expected) in cases {
            let err = put(line).unwrap_err();
            assert!(err.contains(expected), "{line}: {err}");
        }
    }

    #[test]
    fn json_points_take_numbers_and_numeric_strings() {
        let body: serde_json::Value = serde_json::from_str(
            r#"{"metric":"sys.mem","timestamp":"1356998400500","value":"7","tags":{"host":"a","port":8080,"up":true}}"#,
        )
        .unwrap();
        let point = json_datapoint(&body).unwrap();
        assert_eq!(point.time_ns, 1_356_998_400_500_000_000);
        assert_eq!(point.value, 7.0);
        assert_eq!(point.tags.len(), 3);
        assert_eq!(point.tags[1], (Cow::from("port"), Cow::from("8080")));
        let cases = [
            (r#"[1]"#, "JSON object"),
            (r#"{"timestamp":1,"value":1}"#, "Metric name was empty"),
            (
                r#"{"metric":"","timestamp":1,"value":1}"#,
                "Metric name was empty",
            ),
            (r#"{"metric":"m","value":1}"#, "Invalid timestamp"),
            (
                r#"{"metric":"m","timestamp":-1,"value":1}"#,
                "Invalid timestamp",
            ),
            (
                r#"{"metric":"m","timestamp":18446744073709551615,"value":1}"#,
                "too large",
            ),
            (r#"{"metric":"m","timestamp":1}"#, "Empty value"),
            (r#"{"metric":"m","timestamp":1,"value":""}"#, "Empty value"),
            (
                r#"{"metric":"m","timestamp":1,"value":[1]}"#,
                "Unable to parse",
            ),
            (r#"{"metric":"m","timestamp":1,"value":"NaN"}"#, "NaN"),
            (
                r#"{"metric":"m","timestamp":1,"value":1,"tags":[]}"#,
                "tags must be",
            ),
            (
                r#"{"metric":"m","timestamp":1,"value":1,"tags":{"a":null}}"#,
                "tag \"a\"",
            ),
            (
                r#"{"metric":"m","timestamp":1,"value":1,"tags":{"a":""}}"#,
                "invalid tag",
            ),
        ];
        for (text, expected) in cases {
            let body: serde_json::Value = serde_json::from_str(text).unwrap();
            let err = json_datapoint(&body).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
        let float_time: serde_json::Value =
            serde_json::from_str(r#"{"metric":"m","timestamp":1356998400.1,"value":1e300}"#)
                .unwrap();
        assert_eq!(
            json_datapoint(&float_time).unwrap().time_ns,
            1_356_998_400_100_000_000
        );
    }

    #[test]
    fn points_group_by_series_in_order() {
        let lines = [
            "a 1356998400 1 host=x",
            "b 1356998400 2 host=x",
            "a 1356998401 3 host=x",
            "a 1356998402 4 host=y",
        ];
        let mut grouper = Grouper::default();
        for (at, line) in lines.iter().enumerate() {
            grouper.add(put(line).unwrap(), at + 1);
        }
        let grouped = grouper.finish();
        assert_eq!(grouped.points, 4);
        assert_eq!(grouped.first, vec![1, 2, 4]);
        assert_eq!(grouped.series[0].table, "a");
        assert_eq!(grouped.series[0].samples.len(), 2);
        assert_eq!(grouped.series[0].field, "value");
        assert_eq!(grouped.series[2].tags[0].1, "y");
    }

    #[test]
    fn a_hash_collision_keeps_series_apart() {
        let mut grouper = Grouper::default();
        let a = put("a 1356998400 1 host=x").unwrap();
        let b = put("b 1356998400 2 host=x").unwrap();
        // Make b's hash point at a's series, as a 64-bit collision would.
        let b_hash = grouper.hasher.hash_one((&b.metric, &b.tags));
        grouper.add(a, 1);
        grouper.by_hash.insert(b_hash, 0);
        grouper.add(b, 2);
        grouper.add(put("b 1356998401 3 host=x").unwrap(), 3);
        grouper.add(put("a 1356998401 4 host=x").unwrap(), 4);
        let grouped = grouper.finish();
        assert_eq!(grouped.series.len(), 2);
        assert_eq!(grouped.series[0].table, "a");
        assert_eq!(grouped.series[1].table, "b");
        assert_eq!(grouped.series[1].samples.len(), 2);
        assert_eq!(grouped.first, vec![1, 2]);
    }
}
