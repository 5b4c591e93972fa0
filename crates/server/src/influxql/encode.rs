//! Answers in InfluxDB 1.x's formats: its JSON (`{"results":[{"statement_id":0,"series":[…]}]}`,
//! whole or `chunked`) and its CSV (`Accept: application/csv`).
//!
//! Numbers are written as Go's `encoding/json` writes them, because clients compare the
//! text: a float that is whole is `12` (not `12.0`), large and tiny ones use an exponent
//! (`1e+21`, `1e-7`). Times are RFC 3339 with the fraction's trailing zeros cut (Go's
//! `RFC3339Nano`), or integers in the `epoch` unit.

use std::io::Write;

use super::result::{Series, StatementResult, Value};
use super::select::Resolved;
use crate::sql_cells::{csv_field, json_string, write_int, write_rfc3339};

/// How timestamps are written: RFC 3339, or an integer count of a unit since the epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Epoch {
    /// `2016-01-01T00:00:00Z` (no `epoch` parameter).
    Rfc3339,
    /// Integer units of this many nanoseconds (`epoch=ns|u|µ|ms|s|m|h`).
    Units(i64),
}

impl Epoch {
    /// The `epoch` query parameter; `None` for an unknown unit.
    pub(crate) fn parse(text: Option<&str>) -> Option<Epoch> {
        let nanos = match text {
            None | Some("") => return Some(Epoch::Rfc3339),
            Some("ns" | "n") => 1,
            Some("u" | "µ" | "us") => 1_000,
            Some("ms") => 1_000_000,
            Some("s") => 1_000_000_000,
            Some("m") => 60_000_000_000,
            Some("h") => 3_600_000_000_000,
            Some(_) => return None,
        };
        Some(Epoch::Units(nanos))
    }
}

/// Writes `{"results":[…]}` for the statements' results.
pub(crate) fn json_results(results: &[StatementResult], epoch: Epoch, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"results\":[");
    for (i, result) in results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_result(result, epoch, false, out);
    }
    // Go's JSON encoder ends what it writes with a line break; clients see the same bytes.
    out.extend_from_slice(b"]}\n");
}

/// About how many bytes [`json_results`] writes for `results`, so that writing a large
/// answer does not copy it again each time its buffer doubles: a dozen bytes a cell, a
/// few dozen a column name and a series. Capped: a guess must not reserve gigabytes.
pub(crate) fn json_size_hint(results: &[StatementResult]) -> usize {
    const CAP: usize = 64 << 20;
    let series = results.iter().flat_map(|r| &r.series);
    let bytes = series.fold(64usize, |bytes, s| {
        let cells = s.columns.len().saturating_mul(s.row_count());
        bytes
            .saturating_add(64 + 24 * s.columns.len())
            .saturating_add(cells.saturating_mul(12))
    });
    bytes.min(CAP)
}

/// One `{"results":[…]}` line of a chunked answer: `result` with `"partial":true` unless it
/// is the statement's last chunk.
pub(crate) fn json_chunk(result: &StatementResult, epoch: Epoch, partial: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"results\":[");
    json_result(result, epoch, partial, out);
    out.extend_from_slice(b"]}\n");
}

/// One chunk holding a piece of one series: `series_partial` when that series goes on in
/// the next chunk, `partial` unless this is the statement's last chunk.
pub(crate) fn json_series_chunk(
    statement_id: usize,
    series: &Series,
    epoch: Epoch,
    series_partial: bool,
    partial: bool,
    out: &mut Vec<u8>,
) {
    let _ = write!(
        out,
        "{{\"results\":[{{\"statement_id\":{statement_id},\"series\":["
    );
    json_series_part(series, epoch, series_partial, &mut Resolved::default(), out);
    out.push(b']');
    if partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    out.extend_from_slice(b"}]}\n");
}

/// InfluxDB's `pretty=true`: the compact JSON `compact` (as this module writes it)
/// re-indented by four spaces, keys in their order, one element a line.
pub(crate) fn pretty(compact: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 4));
    };
    let mut i = 0;
    while i < compact.len() {
        let c = compact[i];
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                out.push(c);
            }
            b'{' | b'[' => {
                let close = if c == b'{' { b'}' } else { b']' };
                if compact.get(i + 1) == Some(&close) {
                    out.extend_from_slice(&[c, close]);
                    i += 2;
                    continue;
                }
                out.push(c);
                depth += 1;
                newline(&mut out, depth);
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// A top-level error, `{"error":"…"}` (InfluxDB's shape for a query that did not parse).
pub(crate) fn json_error(message: &str) -> Vec<u8> {
    let mut out = b"{\"error\":".to_vec();
    json_string(message, &mut out);
    out.extend_from_slice(b"}\n");
    out
}

fn json_result(result: &StatementResult, epoch: Epoch, partial: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"statement_id\":");
    let _ = write!(out, "{}", result.statement_id);
    if !result.messages.is_empty() {
        out.extend_from_slice(b",\"messages\":[");
        for (i, (level, text)) in result.messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"level\":");
            json_string(level, out);
            out.extend_from_slice(b",\"text\":");
            json_string(text, out);
            out.push(b'}');
        }
        out.push(b']');
    }
    if let Some(error) = &result.error {
        out.extend_from_slice(b",\"error\":");
        json_string(error, out);
    } else if !result.series.is_empty() {
        out.extend_from_slice(b",\"series\":[");
        let mut resolved = Resolved::default();
        for (i, series) in result.series.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_series_part(series, epoch, false, &mut resolved, out);
        }
        out.push(b']');
    }
    if partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    out.push(b'}');
}

/// A series; `partial` when the rest of its rows come in the next chunk. `resolved` is
/// shared by the series of one statement.
fn json_series_part<'a>(
    series: &'a Series,
    epoch: Epoch,
    partial: bool,
    resolved: &mut Resolved<'a>,
    out: &mut Vec<u8>,
) {
    out.push(b'{');
    if !series.name.is_empty() {
        out.extend_from_slice(b"\"name\":");
        json_string(&series.name, out);
        out.push(b',');
    }
    if !series.tags.is_empty() {
        out.extend_from_slice(b"\"tags\":{");
        for (i, (key, value)) in series.tags.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_string(key, out);
            out.push(b':');
            json_string(value, out);
        }
        out.extend_from_slice(b"},");
    }
    out.extend_from_slice(resolved.columns_json(&series.columns));
    if let Some(rows) = series.arrow.as_ref().filter(|rows| rows.len() > 0) {
        out.extend_from_slice(b",\"values\":[");
        rows.write_json(epoch, resolved, out);
        out.push(b']');
    } else if !series.values.is_empty() {
        out.extend_from_slice(b",\"values\":[");
        for (i, row) in series.values.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'[');
            for (j, value) in row.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                json_value(value, epoch, out);
            }
            out.push(b']');
        }
        out.push(b']');
    }
    if partial {
        out.extend_from_slice(b",\"partial\":true");
    }
    out.push(b'}');
}

fn json_value(value: &Value, epoch: Epoch, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Float(v) => go_float(*v, out),
        Value::Integer(v) => write_int(*v, out),
        Value::Unsigned(v) => write_int(*v, out),
        Value::String(s) => json_string(s, out),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Time(t) => json_time(*t, epoch, out),
    }
}

/// A time as JSON: an RFC 3339 string, or an integer in the `epoch` unit.
pub(crate) fn json_time(nanos: i64, epoch: Epoch, out: &mut Vec<u8>) {
    match epoch {
        Epoch::Rfc3339 => {
            out.push(b'"');
            rfc3339_nano(nanos, out);
            out.push(b'"');
        }
        Epoch::Units(unit) => write_int(nanos.div_euclid(unit), out),
    }
}

/// `nanos` as Go's `time.RFC3339Nano`: the fraction without trailing zeros, none if zero.
pub(crate) fn rfc3339_nano(nanos: i64, out: &mut Vec<u8>) {
    let start = out.len();
    write_rfc3339(nanos, out);
    if nanos % 1_000_000_000 == 0 {
        // A whole second (every bucket of GROUP BY time(1m)): `.000000000Z` goes at once.
        out.truncate(out.len() - 11);
        out.push(b'Z');
        return;
    }
    // write_rfc3339 ends with `.nnnnnnnnnZ`; drop the fraction's trailing zeros (and the
    // dot when nothing is left).
    let z = out.len() - 1;
    let mut end = z;
    while end > start && out[end - 1] == b'0' {
        end -= 1;
    }
    if out[end - 1] == b'.' {
        end -= 1;
    }
    out.truncate(end);
    out.push(b'Z');
}

/// A float as Go's `encoding/json` writes it: shortest round-trip digits, no `.0` on whole
/// numbers, exponent form (`1e+21`, `1.5e-7`) below 1e-6 and from 1e21 on. Non-finite
/// values (which InfluxDB cannot encode at all) are `null`.
pub(crate) fn go_float(value: f64, out: &mut Vec<u8>) {
    if !value.is_finite() {
        out.extend_from_slice(b"null");
        return;
    }
    let abs = value.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1e21` / `1.5e-7`; Go writes `1e+21` / `1.5e-07`, then encoding/json
        // trims the exponent's leading zero back to `1.5e-7`.
        let text = format!("{value:e}");
        match text.split_once('e') {
            Some((mantissa, exponent)) if !exponent.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exponent}");
            }
            _ => out.extend_from_slice(text.as_bytes()),
        }
    } else {
        // serde_json writes the same shortest round-trip digits several times faster than
        // `Display` (a tenth of a large answer's time went to `Display`), but as `58.0`
        // or with an exponent from 1e16 (and below 1e-5): trim the first, and leave the
        // second (rare in a time series) to `Display`.
        let start = out.len();
        let _ = serde_json::to_writer(&mut *out, &value);
        let written = &out[start..];
        if written.contains(&b'e') {
            out.truncate(start);
            let _ = write!(out, "{value}");
        } else if written.ends_with(b".0") {
            out.truncate(out.len() - 2);
        }
    }
}

/// The answer as InfluxDB's CSV: for each series a `name,tags,<columns>` header when the
/// columns change, then `name,tag=v,…,<values>` rows; times are integers (nanoseconds
/// unless `epoch` says otherwise), as InfluxDB writes them.
pub(crate) fn csv_results(results: &[StatementResult], epoch: Epoch, out: &mut Vec<u8>) {
    let epoch = match epoch {
        Epoch::Rfc3339 => Epoch::Units(1),
        units => units,
    };
    let mut header: Option<&[String]> = None;
    for result in results {
        if result.error.is_some() {
            // InfluxDB's CSV writer stops at a failed statement and says nothing of it.
            break;
        }
        for series in &result.series {
            if header != Some(&series.columns[..]) {
                if header.is_some() {
                    out.push(b'\n');
                }
                out.extend_from_slice(b"name,tags");
                for column in series.columns.iter() {
                    out.push(b',');
                    csv_field(column, out);
                }
                out.push(b'\n');
                header = Some(&series.columns[..]);
            }
            let tags = series
                .tags
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            for row in &series.values {
                csv_field(&series.name, out);
                out.push(b',');
                csv_field(&tags, out);
                for value in row {
                    out.push(b',');
                    csv_value(value, epoch, out);
                }
                out.push(b'\n');
            }
        }
    }
}

fn csv_value(value: &Value, epoch: Epoch, out: &mut Vec<u8>) {
    match value {
        Value::Null => {}
        Value::String(s) => csv_field(s, out),
        other => json_value(other, epoch, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(v: f64) -> String {
        let mut out = Vec::new();
        go_float(v, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    fn time(nanos: i64) -> String {
        let mut out = Vec::new();
        rfc3339_nano(nanos, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn floats_read_as_go_writes_them() {
        assert_eq!(float(12.0), "12");
        assert_eq!(float(12.5), "12.5");
        assert_eq!(float(-0.1), "-0.1");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1.5e-7), "1.5e-7");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(123456789012345680000.0), "123456789012345680000");
        assert_eq!(float(0.0), "0");
        assert_eq!(float(f64::NAN), "null");
        assert_eq!(float(-0.0), "-0");
        assert_eq!(float(1e16), "10000000000000000");
        assert_eq!(float(0.00001), "0.00001");
    }

    /// The fast path writes the shortest digits that read back as the value, as many as
    /// `Display` writes, and the same digits except where the value lies exactly halfway
    /// between two shortest candidates: there Go (and so InfluxDB) rounds to even, as
    /// the fast path does, where `Display` rounds up. Seeded values across every
    /// magnitude and whole numbers near 2^53.
    #[test]
    fn floats_are_shortest_and_round_ties_to_even_as_go_does() {
        // `go run`: json.Marshal(1777989047889653.25) is 1777989047889653.2.
        assert_eq!(float(1_777_989_047_889_653.2), "1777989047889653.2");
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let (mut checked, mut ties) = (0, 0);
        for i in 0..200_000u64 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let value = match i % 3 {
                0 => f64::from_bits(state),
                1 => (state >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((i % 28) as i32 - 6),
                _ => ((1u64 << 53) - (state % 1000)) as f64 * if i % 2 == 0 { 1.0 } else { -1.0 },
            };
            let abs = value.abs();
            if !value.is_finite() || (abs != 0.0 && !(1e-6..1e21).contains(&abs)) {
                continue;
            }
            let (fast, display) = (float(value), format!("{value}"));
            assert_eq!(fast.parse::<f64>().ok(), Some(value), "{fast}");
            assert_eq!(fast.len(), display.len(), "{fast} {display}");
            if fast != display {
                // A tie: the exact value ends in a 5 just past the shortest digits, and the
                // last digit written is even.
                let exact = format!("{value:.30}");
                let exact = exact.trim_end_matches('0');
                assert!(exact.ends_with('5'), "{fast} {display} {exact}");
                let last = fast.as_bytes()[fast.len() - 1] - b'0';
                assert_eq!(last % 2, 0, "{fast} {display}");
                ties += 1;
            }
            checked += 1;
        }
        assert!(checked > 100_000, "{checked}");
        assert!(ties < checked / 100, "{ties} ties of {checked}");
    }

    #[test]
    fn times_are_rfc3339_nano() {
        assert_eq!(time(0), "1970-01-01T00:00:00Z");
        assert_eq!(time(1_451_606_400_000_000_000), "2016-01-01T00:00:00Z");
        assert_eq!(time(1_451_606_400_500_000_000), "2016-01-01T00:00:00.5Z");
        assert_eq!(
            time(1_451_606_400_000_000_001),
            "2016-01-01T00:00:00.000000001Z"
        );
        assert_eq!(time(-1), "1969-12-31T23:59:59.999999999Z");
        assert_eq!(time(-1_000_000_000), "1969-12-31T23:59:59Z");
        assert_eq!(time(i64::MIN), "1677-09-21T00:12:43.145224192Z");
        assert_eq!(time(-9_223_372_036_000_000_000), "1677-09-21T00:12:44Z");
    }

    #[test]
    fn pretty_keeps_key_order_and_indents_by_four() {
        let compact = br#"{"results":[{"statement_id":0,"series":[{"name":"a\"b,{","columns":["x"],"values":[[1,null]]}]},{"statement_id":1,"series":[]}]}"#;
        let expected = "{\n    \"results\": [\n        {\n            \"statement_id\": 0,\n            \"series\": [\n                {\n                    \"name\": \"a\\\"b,{\",\n                    \"columns\": [\n                        \"x\"\n                    ],\n                    \"values\": [\n                        [\n                            1,\n                            null\n                        ]\n                    ]\n                }\n            ]\n        },\n        {\n            \"statement_id\": 1,\n            \"series\": []\n        }\n    ]\n}";
        assert_eq!(
            String::from_utf8(pretty(compact)).unwrap_or_default(),
            expected
        );
    }

    #[test]
    fn epochs() {
        assert_eq!(Epoch::parse(None), Some(Epoch::Rfc3339));
        assert_eq!(Epoch::parse(Some("ms")), Some(Epoch::Units(1_000_000)));
        assert_eq!(Epoch::parse(Some("µ")), Some(Epoch::Units(1_000)));
        assert_eq!(Epoch::parse(Some("x")), None);
    }

    #[test]
    fn json_shape() {
        let mut series = Series::new("cpu", &["time", "mean"]);
        series.tags = super::super::result::Tags::from_pairs([("host", "a")]);
        series.values = vec![smallvec::smallvec![Value::Time(0), Value::Float(1.5)]];
        let results = [
            StatementResult {
                statement_id: 0,
                series: vec![series],
                ..StatementResult::default()
            },
            StatementResult::default(),
            StatementResult::failed(2, "boom"),
        ];
        let mut out = Vec::new();
        json_results(&results, Epoch::Units(1_000_000), &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap_or_default(),
            "{\"results\":[{\"statement_id\":0,\"series\":[{\"name\":\"cpu\",\"tags\":{\"host\":\"a\"},\"columns\":[\"time\",\"mean\"],\"values\":[[0,1.5]]}]},{\"statement_id\":0},{\"statement_id\":2,\"error\":\"boom\"}]}\n"
        );
    }

    /// The columns' JSON is encoded once for series that share their names, and again for
    /// each series whose names are others (or equal names held apart).
    #[test]
    fn each_series_shows_its_own_columns() {
        let shared = Series::new("a", &["time", "x"]).columns;
        let mut series: Vec<Series> = ["a", "b", "c", "d"]
            .into_iter()
            .map(|name| Series {
                columns: std::sync::Arc::clone(&shared),
                ..Series::new(name, &[])
            })
            .collect();
        series[1].columns = Series::new("b", &["time", "y", "z"]).columns;
        series[3].columns = Series::new("d", &["time", "x"]).columns;
        let result = StatementResult {
            series,
            ..StatementResult::default()
        };
        let mut out = Vec::new();
        json_results(std::slice::from_ref(&result), Epoch::Rfc3339, &mut out);
        let columns: Vec<String> = String::from_utf8(out)
            .unwrap_or_default()
            .split("\"columns\":")
            .skip(1)
            .map(|rest| rest[..rest.find(']').unwrap_or(0) + 1].to_string())
            .collect();
        assert_eq!(
            columns,
            [
                "[\"time\",\"x\"]",
                "[\"time\",\"y\",\"z\"]",
                "[\"time\",\"x\"]",
                "[\"time\",\"x\"]"
            ]
        );
    }

    /// A `lastpoint`-like answer (100 series of one row: a time, 10 floats, 9 tags) fits
    /// the size hint, and the hint does not reserve many times what is written.
    #[test]
    fn size_hint_covers_a_typical_answer() {
        let names: Vec<String> = (0..20).map(|i| format!("column_{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let series: Vec<Series> = (0..100)
            .map(|host| {
                let mut series = Series::new("cpu", &names);
                series.tags =
                    super::super::result::Tags::from_pairs([("hostname", format!("host_{host}"))]);
                let mut row: super::super::result::Row = smallvec::smallvec![Value::Time(
                    1_451_606_400_000_000_000 + host * 10_000_000_000
                )];
                row.extend((0..10).map(|i| Value::Float(i as f64 * 7.3 + host as f64 / 3.0)));
                row.extend((0..9).map(|i| Value::text(format!("tag_value_{i}"))));
                series.values = vec![row];
                series
            })
            .collect();
        let results = [StatementResult {
            series,
            ..StatementResult::default()
        }];
        let mut out = Vec::new();
        json_results(&results, Epoch::Rfc3339, &mut out);
        let hint = json_size_hint(&results);
        assert!(
            out.len() <= hint && hint <= 2 * out.len(),
            "{} bytes written, {hint} hinted",
            out.len()
        );
    }
}
