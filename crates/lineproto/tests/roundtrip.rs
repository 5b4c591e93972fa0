//! Property: whatever the writer writes, the parser reads back equal, bit for bit.

use std::borrow::Cow;

use proptest::prelude::*;
use strata_lineproto::writer::{write_line, write_measurement, write_tag_key, write_tag_value};
use strata_lineproto::{FieldValue, Line, ParseOptions, parse_lines, parse_series_key};

/// Names drawn from plain letters plus every character with a meaning somewhere
/// in the grammar, and some non-ASCII.
fn name() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        'a', 'b', 'z', 'A', '0', '9', '_', '-', '.', ',', '=', ' ', '\\', '"', '#', '\t', '\r',
        'é', '日', '🦀',
    ]);
    prop::collection::vec(chars, 1..8).prop_map(|v| v.into_iter().collect())
}

fn measurement() -> impl Strategy<Value = String> {
    name().prop_filter("writer refuses a leading # or tab", |m| {
        !m.starts_with(['#', '\t'])
    })
}

fn field_value() -> impl Strategy<Value = FieldValue<'static>> {
    prop_oneof![
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(FieldValue::Float),
        (-1000i64..1000).prop_map(|f| FieldValue::Float(f as f64 / 8.0)),
        any::<i64>().prop_map(FieldValue::Integer),
        any::<u64>().prop_map(FieldValue::UInteger),
        any::<bool>().prop_map(FieldValue::Boolean),
        prop::collection::vec(
            prop::sample::select(vec!['x', ' ', ',', '=', '"', '\\', '\r', 'ü']),
            0..8
        )
        .prop_map(|v| FieldValue::String(Cow::Owned(v.into_iter().collect()))),
    ]
}

#[derive(Debug, Clone)]
struct Row {
    measurement: String,
    tags: Vec<(String, String)>,
    fields: Vec<(String, FieldValue<'static>)>,
    timestamp: Option<i64>,
}

fn row() -> impl Strategy<Value = Row> {
    (
        measurement(),
        prop::collection::vec((name(), name()), 0..4),
        prop::collection::vec((name(), field_value()), 1..5),
        prop::option::of(any::<i64>()),
    )
        .prop_map(|(measurement, tags, fields, timestamp)| Row {
            measurement,
            tags,
            fields,
            timestamp,
        })
}

fn write_row(out: &mut Vec<u8>, row: &Row) {
    let tags: Vec<(&str, &str)> = row
        .tags
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let fields: Vec<(&str, FieldValue<'_>)> = row
        .fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    write_line(out, &row.measurement, &tags, &fields, row.timestamp)
        .expect("generated rows are representable");
}

/// Writes an already parsed line back, to compare bytes (catches -0.0 vs 0.0).
fn rewrite(line: &Line<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    let tags: Vec<(&str, &str)> = line
        .tags
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    let fields: Vec<(&str, FieldValue<'_>)> = line
        .fields
        .iter()
        .map(|(k, v)| (k.as_ref(), v.clone()))
        .collect();
    write_line(
        &mut out,
        &line.measurement,
        &tags,
        &fields,
        line.timestamp_ns,
    )
    .expect("a parsed line is representable");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn written_rows_parse_back_equal(rows in prop::collection::vec(row(), 1..4), crlf in any::<bool>()) {
        let mut input = Vec::new();
        let mut expected_bytes = Vec::new();
        for row in &rows {
            let mut one = Vec::new();
            write_row(&mut one, row);
            expected_bytes.push(one.clone());
            if crlf {
                one.pop();
                one.extend_from_slice(b"\r\n");
            }
            input.extend_from_slice(&one);
        }
        let parsed: Vec<_> = parse_lines(&input, &ParseOptions::default()).collect();
        prop_assert_eq!(parsed.len(), rows.len());
        for (n, ((row, got), bytes)) in rows.iter().zip(&parsed).zip(&expected_bytes).enumerate() {
            let got = got.as_ref().map_err(|e| TestCaseError::fail(format!("{e} in {:?}", String::from_utf8_lossy(&input))))?;
            let mut series_key = Vec::new();
            write_measurement(&mut series_key, &row.measurement);
            for (k, v) in &row.tags {
                series_key.push(b',');
                write_tag_key(&mut series_key, k);
                series_key.push(b'=');
                write_tag_value(&mut series_key, v);
            }
            let want = Line {
                line_number: n + 1,
                series_key: &series_key,
                measurement: Cow::Borrowed(row.measurement.as_str()),
                tags: row.tags.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), Cow::Borrowed(v.as_str()))).collect(),
                fields: row.fields.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), v.clone())).collect(),
                timestamp_ns: row.timestamp,
            };
            prop_assert_eq!(got, &want);
            prop_assert_eq!(&rewrite(got), bytes);
            // Storage reads a new series' tags back from its raw key.
            let key = std::str::from_utf8(got.series_key).expect("keys are UTF-8");
            let series = parse_series_key(key)
                .map_err(|e| TestCaseError::fail(format!("{e} in {key:?}")))?;
            prop_assert_eq!(&series.measurement, &want.measurement);
            prop_assert_eq!(&series.tags, &want.tags);
            prop_assert_eq!(series.series_key, got.series_key);
        }
    }
}
