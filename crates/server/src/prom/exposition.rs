//! Prometheus' text exposition format (0.0.4) and OpenMetrics 1.0 text, for
//! `POST /api/v1/import/prometheus`: each sample line becomes one sample of one series.
//!
//! `metric{label="value",…} value [timestamp]`. Text 0.0.4 timestamps are milliseconds,
//! OpenMetrics' are seconds (with a fraction); a sample without one takes the import's
//! time. `# HELP`, `# TYPE`, `# UNIT` and other comments are skipped, as are OpenMetrics
//! exemplars (` # {…} value [timestamp]`) and its `# EOF`. Every bad line is reported with
//! its line and column; the good lines are kept.

use std::borrow::Cow;

use strata_storage::SeriesWrite;
use strata_storage::model::Value;

use super::model::{METRIC_LABEL, VALUE_FIELD, ms_to_ns};

/// Which text format the body is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text 0.0.4: timestamps in milliseconds.
    Text,
    /// OpenMetrics 1.0 text: timestamps in seconds.
    OpenMetrics,
}

/// A bad line: 1-based line and column, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What a body holds.
#[derive(Debug, Default)]
pub struct Parsed<'a> {
    /// One series per sample line.
    pub series: Vec<SeriesWrite<'a>>,
    /// The 1-based line of each of `series`.
    pub lines: Vec<usize>,
    /// The bad lines.
    pub errors: Vec<LineError>,
}

/// The samples of `body`, one series each, and the bad lines.
pub fn parse(body: &str, format: Format, now_ms: i64) -> Parsed<'_> {
    let mut parsed = Parsed::default();
    for (index, raw) in body.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let offset = line.len() - trimmed.len();
        match sample(trimmed, format, now_ms) {
            Ok(one) => {
                parsed.series.push(one);
                parsed.lines.push(index + 1);
            }
            Err((column, message)) => parsed.errors.push(LineError {
                line: index + 1,
                column: offset + column + 1,
                message,
            }),
        }
    }
    parsed
}

/// One sample line; an error carries its 0-based byte column.
fn sample(line: &str, format: Format, now_ms: i64) -> Result<SeriesWrite<'_>, (usize, String)> {
    let bytes = line.as_bytes();
    let name_end = bytes
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_' || *b == b':'))
        .unwrap_or(bytes.len());
    if name_end == 0 || bytes[0].is_ascii_digit() {
        return Err((0, "expected a metric name".into()));
    }
    let name = &line[..name_end];
    let mut at = name_end;
    let mut tags: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    if bytes.get(at) == Some(&b'{') {
        at += 1;
        loop {
            at = skip_spaces(bytes, at);
            if bytes.get(at) == Some(&b'}') {
                at += 1;
                break;
            }
            let label_end = at
                + bytes[at..]
                    .iter()
                    .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
                    .unwrap_or(bytes.len() - at);
            if label_end == at || bytes[at].is_ascii_digit() {
                return Err((at, "expected a label name".into()));
            }
            let label = &line[at..label_end];
            at = skip_spaces(bytes, label_end);
            if bytes.get(at) != Some(&b'=') {
                return Err((at, format!("expected '=' after label name {label:?}")));
            }
            at = skip_spaces(bytes, at + 1);
            let (value, next) = quoted(line, at)?;
            if tags.iter().any(|(k, _)| k == label) {
                return Err((at, format!("label {label:?} is repeated")));
            }
            if label == METRIC_LABEL {
                return Err((
                    at,
                    "__name__ cannot be a label here: the metric name is".into(),
                ));
            }
            if !value.is_empty() {
                tags.push((Cow::Borrowed(label), value));
            }
            at = skip_spaces(bytes, next);
            match bytes.get(at) {
                Some(b',') => at += 1,
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return Err((at, "expected ',' or '}' after a label value".into())),
            }
        }
    }
    if !matches!(bytes.get(at), Some(b' ' | b'\t')) {
        return Err((at, "expected a space before the value".into()));
    }
    at = skip_spaces(bytes, at);
    let value_end = at
        + bytes[at..]
            .iter()
            .position(|b| *b == b' ' || *b == b'\t')
            .unwrap_or(bytes.len() - at);
    let value = parse_float(&line[at..value_end])
        .ok_or_else(|| (at, format!("invalid value {:?}", &line[at..value_end])))?;
    at = skip_spaces(bytes, value_end);
    let mut time_ms = now_ms;
    if at < bytes.len() && bytes[at] != b'#' {
        let time_end = at
            + bytes[at..]
                .iter()
                .position(|b| *b == b' ' || *b == b'\t')
                .unwrap_or(bytes.len() - at);
        let text = &line[at..time_end];
        time_ms = match format {
            Format::Text => text.parse::<i64>().ok(),
            Format::OpenMetrics => text
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && s.abs() < 9.2e15)
                .map(|s| (s * 1000.0).round() as i64),
        }
        .ok_or_else(|| (at, format!("invalid timestamp {text:?}")))?;
        at = skip_spaces(bytes, time_end);
    }
    // Anything left must be an OpenMetrics exemplar, which is skipped.
    if at < bytes.len() && !(format == Format::OpenMetrics && bytes[at] == b'#') {
        return Err((at, "unexpected text after the sample".into()));
    }
    let time =
        ms_to_ns(time_ms).ok_or_else(|| (0, format!("timestamp {time_ms} ms is out of range")))?;
    Ok(SeriesWrite {
        table: Cow::Borrowed(name),
        tags,
        field: Cow::Borrowed(VALUE_FIELD),
        samples: vec![(time, Value::Float(value))],
    })
}

fn skip_spaces(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    at
}

/// A double-quoted label value from `at` (the opening quote): the value (escapes `\\`,
/// `\"` and `\n` resolved) and the position after the closing quote.
fn quoted(line: &str, at: usize) -> Result<(Cow<'_, str>, usize), (usize, String)> {
    let bytes = line.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return Err((at, "expected '\"' to open a label value".into()));
    }
    let start = at + 1;
    let mut i = start;
    let mut owned: Option<String> = None;
    let mut run = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let value = match owned {
                    Some(mut s) => {
                        s.push_str(&line[run..i]);
                        Cow::Owned(s)
                    }
                    None => Cow::Borrowed(&line[start..i]),
                };
                return Ok((value, i + 1));
            }
            b'\\' => {
                let s = owned.get_or_insert_with(String::new);
                s.push_str(&line[run..i]);
                match bytes.get(i + 1) {
                    Some(b'\\') => s.push('\\'),
                    Some(b'"') => s.push('"'),
                    Some(b'n') => s.push('\n'),
                    _ => {
                        return Err((
                            i,
                            "invalid escape in a label value: use \\\\, \\\" or \\n".into(),
                        ));
                    }
                }
                i += 2;
                run = i;
            }
            _ => i += 1,
        }
    }
    Err((at, "label value not closed by '\"'".into()))
}

/// A value as Go's `ParseFloat` reads it, plus Prometheus' `+Inf`/`-Inf`/`NaN` spellings.
fn parse_float(text: &str) -> Option<f64> {
    match text {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ => text.parse::<f64>().ok().filter(|_| !text.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str, format: Format) -> (String, Vec<(String, String)>, i64, f64) {
        let parsed = parse(line, format, 7);
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
        let s = &parsed.series[0];
        let Value::Float(v) = s.samples[0].1 else {
            unreachable!()
        };
        (
            s.table.to_string(),
            s.tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            s.samples[0].0,
            v,
        )
    }

    #[test]
    fn samples_labels_escapes_and_timestamps() {
        assert_eq!(
            one("up 1", Format::Text),
            ("up".into(), vec![], 7_000_000, 1.0)
        );
        assert_eq!(
            one(
                "http_requests_total{method=\"post\",code=\"200\",} 1027 1395066363000",
                Format::Text
            ),
            (
                "http_requests_total".into(),
                vec![
                    ("method".into(), "post".into()),
                    ("code".into(), "200".into())
                ],
                1_395_066_363_000_000_000,
                1027.0
            )
        );
        let (_, tags, _, _) = one(r#"m{path="C:\\dir\"x\"\n", empty=""} 1"#, Format::Text);
        assert_eq!(tags, vec![("path".into(), "C:\\dir\"x\"\n".into())]);
        assert!(one("m +Inf", Format::Text).3.is_infinite());
        assert!(one("m NaN", Format::Text).3.is_nan());
        assert_eq!(one("m -1.5e-3", Format::Text).3, -0.0015);
        // OpenMetrics: seconds, and exemplars skipped.
        let om = one(
            "foo_bucket{le=\"0.1\"} 8 1520879607.789 # {trace_id=\"KOO5S4vxi0o\"} 0.67",
            Format::OpenMetrics,
        );
        assert_eq!((om.2, om.3), (1_520_879_607_789_000_000, 8.0));
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let body = "# HELP x The x.\n# TYPE x counter\n\nx 1\r\n  # EOF\n";
        let parsed = parse(body, Format::OpenMetrics, 0);
        assert!(parsed.errors.is_empty());
        assert_eq!(parsed.series.len(), 1);
        assert_eq!(parsed.lines, [4]);
    }

    #[test]
    fn bad_lines_have_positions_and_the_rest_is_kept() {
        let body = "ok 1\n9bad 1\nm{a=\"x} 1\nm{a=\"x\"} one\nm{a=\"x\" b=\"y\"} 1\nm 1 12x\nm{a=\"\\q\"} 1\nm{a=\"1\",a=\"2\"} 1\nm1\nok 2";
        let Parsed {
            series,
            lines,
            errors,
        } = parse(body, Format::Text, 0);
        assert_eq!(series.len(), 2);
        assert_eq!(lines, [1, 10]);
        let positions: Vec<(usize, usize)> = errors.iter().map(|e| (e.line, e.column)).collect();
        assert_eq!(
            positions,
            [
                (2, 1),
                (3, 5),
                (4, 10),
                (5, 9),
                (6, 5),
                (7, 6),
                (8, 11),
                (9, 3)
            ],
            "{errors:#?}"
        );
        assert!(errors[2].message.contains("invalid value"));
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let alphabet = b"ab_{}=\",# \\n1.e+-Inf\n\tx";
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..(state % 40) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(alphabet[(state % alphabet.len() as u64) as usize] as char);
            }
            let _ = parse(&text, Format::Text, 0);
            let _ = parse(&text, Format::OpenMetrics, 0);
        }
    }
}
