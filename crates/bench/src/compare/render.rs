//! The side-by-side table (Markdown, with the lines a reader needs to trust it) and
//! `compare.csv`: one line per target and language. Also the rows and the load rate the SVG
//! chart draws from.

use super::{Comparison, LanguageRun, TargetResult, TypeResult};
use crate::scale::grouped;

/// One line of the table: a target in one language (or without queries).
pub(super) struct Row<'a> {
    pub(super) target: &'a TargetResult,
    pub(super) language: Option<&'a LanguageRun>,
}

/// The lines of the table and the CSV (and the chart's query bars), in target order: one
/// per language a target ran queries in, or one for a target without queries.
pub(super) fn rows(comparison: &Comparison) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    for target in &comparison.targets {
        if target.queries.is_empty() {
            out.push(Row {
                target,
                language: None,
            });
        }
        for run in &target.queries {
            out.push(Row {
                target,
                language: Some(run),
            });
        }
    }
    out
}

/// The mark of a value not measured.
const ABSENT: &str = "—";

/// The target's load rate, `None` when the report withheld it (a load too short).
pub(super) fn rate(target: &TargetResult) -> Option<f64> {
    target
        .load
        .rate_withheld
        .is_none()
        .then_some(target.load.points_per_s)
}

fn query_cell(result: Option<&TypeResult>) -> String {
    let Some(r) = result else {
        return ABSENT.into();
    };
    if r.unsupported.is_some() {
        return "n/a".into();
    }
    match (r.median_ms, r.failures) {
        (Some(ms), 0) => format!("{ms:.2}"),
        (Some(ms), failed) => format!("{ms:.2} ({failed} failed)"),
        (None, 0) => ABSENT.into(),
        (None, failed) => format!("failed ({failed})"),
    }
}

fn cells(comparison: &Comparison, row: &Row<'_>) -> Vec<String> {
    let t = row.target;
    let mut cells = vec![
        t.name.clone(),
        t.kind.name().to_string(),
        row.language
            .map_or(ABSENT, |l| l.language.name())
            .to_string(),
        t.cores.clone().unwrap_or_else(|| ABSENT.into()),
        rate(t).map_or_else(|| ABSENT.into(), grouped),
        t.load
            .bytes_per_point
            .map_or_else(|| ABSENT.into(), |b| format!("{b:.2}")),
        t.load
            .peak_rss_mb
            .map_or_else(|| ABSENT.into(), |m| format!("{m:.0}")),
        t.server_cpu_s
            .map_or_else(|| ABSENT.into(), |s| format!("{s:.1}")),
    ];
    for name in &comparison.query_types {
        let result = row
            .language
            .and_then(|l| l.types.iter().find(|r| &r.query_type == name));
        cells.push(query_cell(result));
    }
    cells
}

/// The side-by-side table (Markdown), then the lines a reader needs to trust it: the
/// bodies' checksum, why a rate or a figure is missing, failures, and the notes.
pub fn render_table(comparison: &Comparison) -> String {
    let mut header = vec![
        "Target".to_string(),
        "Kind".into(),
        "Language".into(),
        "Cores".into(),
        "Load (points/s)".into(),
        "Bytes/point".into(),
        "Peak RSS (MB)".into(),
        "Load CPU (s)".into(),
    ];
    header.extend(comparison.query_types.iter().map(|t| format!("{t} (ms)")));
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows(comparison) {
        out.push_str(&format!("| {} |\n", cells(comparison, &row).join(" | ")));
    }
    for line in explanations(comparison) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The lines under the table.
fn explanations(comparison: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    match comparison.same_bodies() {
        Ok(checksum) => {
            let first = &comparison.targets[0];
            lines.push(format!(
                "request bodies: {} bodies, {:.1} MB, FNV-1a 64 {checksum}: the same for every \
                 target",
                first.batches,
                first.body_bytes as f64 / 1e6
            ));
        }
        Err(why) => lines.push(format!("ERROR: {why}")),
    }
    if !comparison.query_types.is_empty() {
        lines.push(format!(
            "queries: {} per type, 1 client, median latency in ms (2xx with a non-error body; \
             failures counted beside the median); n/a: TSBS has no PromQL for the type",
            comparison.queries_per_type
        ));
    }
    for t in &comparison.targets {
        if let Some(why) = &t.load.rate_withheld {
            lines.push(format!("{}: no load rate: {why}", t.name));
        }
        lines.push(format!(
            "{}: bytes/point: {}",
            t.name, t.load.disk_bytes_note
        ));
        for run in &t.queries {
            for r in &run.types {
                if r.answered > 0 && r.rows == 0 {
                    lines.push(format!(
                        "{} ({}): every {} answer was empty: is the data in this database?",
                        t.name,
                        run.language.name(),
                        r.query_type
                    ));
                }
            }
        }
    }
    lines.extend(
        comparison
            .failures()
            .into_iter()
            .map(|f| format!("FAILED: {f}")),
    );
    lines.extend(comparison.notes.iter().cloned());
    lines
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

/// `compare.csv`: one line per target and language; absent figures are empty fields, and a
/// withheld rate is empty with its reason in `rate_note`.
pub fn render_csv(comparison: &Comparison) -> String {
    let mut header: Vec<String> = [
        "target",
        "kind",
        "language",
        "cores",
        "rows",
        "points",
        "load_s",
        "points_per_s",
        "rate_note",
        "bytes_per_point",
        "peak_rss_mb",
        "server_cpu_s",
        "checksum",
    ]
    .map(String::from)
    .to_vec();
    for name in &comparison.query_types {
        header.push(format!("{name}_median_ms"));
        header.push(format!("{name}_failures"));
    }
    let mut out = header.join(",");
    out.push('\n');
    let number =
        |v: Option<f64>, decimals: usize| v.map_or_else(String::new, |v| format!("{v:.decimals$}"));
    for row in rows(comparison) {
        let t = row.target;
        let mut fields = vec![
            t.name.clone(),
            t.kind.name().into(),
            row.language.map_or("", |l| l.language.name()).to_string(),
            t.cores.clone().unwrap_or_default(),
            t.load.rows.to_string(),
            t.load.points.to_string(),
            format!("{:.3}", t.load.elapsed_s),
            number(rate(t), 1),
            t.load.rate_withheld.clone().unwrap_or_default(),
            number(t.load.bytes_per_point, 4),
            number(t.load.peak_rss_mb, 1),
            number(t.server_cpu_s, 2),
            t.checksum.clone(),
        ];
        for name in &comparison.query_types {
            let result = row
                .language
                .and_then(|l| l.types.iter().find(|r| &r.query_type == name));
            let supported = result.filter(|r| r.unsupported.is_none());
            fields.push(number(supported.and_then(|r| r.median_ms), 3));
            fields.push(supported.map_or_else(String::new, |r| r.failures.to_string()));
        }
        let fields: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::sample;

    #[test]
    fn the_table_puts_targets_side_by_side() {
        let table = render_table(&sample());
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "| Target | Kind | Language | Cores | Load (points/s) | Bytes/point | Peak RSS (MB) \
             | Load CPU (s) | single-groupby-1-1-1 (ms) | lastpoint (ms) |"
        );
        assert_eq!(lines[1], "|---|---|---|---|---|---|---|---|---|---|");
        assert_eq!(
            lines[2],
            "| strata | strata | influxql | 0,1 | — | 1.50 | 123 | 0.5 | 1.50 | 2.25 (1 failed) |"
        );
        assert_eq!(
            lines[3],
            "| strata | strata | promql | 0,1 | — | 1.50 | 123 | 0.5 | 0.75 | n/a |"
        );
        assert_eq!(
            lines[4],
            "| influxdb | influxdb | influxql | 0-3,8 | 50 | — | 123 | 0.5 | 3.00 | failed (3) |"
        );
        assert!(table.contains("the same for every target"), "{table}");
        assert!(
            table.contains("strata: no load rate: the load lasted 2.00 s"),
            "{table}"
        );
        assert!(!table.contains("influxdb: no load rate"), "{table}");
        assert!(table.contains("FAILED: influxdb (influxql): 3 of 3 lastpoint queries failed; first: HTTP 500: boom"), "{table}");
        assert!(
            table.contains("FAILED: strata (influxql): 1 of 3 lastpoint"),
            "{table}"
        );
        assert!(table.ends_with("a note\n"), "{table}");
    }

    #[test]
    fn csv_has_a_line_per_target_and_language() {
        let csv = render_csv(&sample());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines[0],
            "target,kind,language,cores,rows,points,load_s,points_per_s,rate_note,bytes_per_point,\
             peak_rss_mb,server_cpu_s,checksum,single-groupby-1-1-1_median_ms,\
             single-groupby-1-1-1_failures,lastpoint_median_ms,lastpoint_failures"
        );
        assert_eq!(
            lines[1],
            "strata,strata,influxql,\"0,1\",100,1000,0.000,,\"the load lasted 2.00 s, under 10 s\",\
             1.5000,123.4,0.50,0x00000000000000ff,1.500,0,2.250,1"
        );
        assert_eq!(
            lines[2],
            "strata,strata,promql,\"0,1\",100,1000,0.000,,\"the load lasted 2.00 s, under 10 s\",\
             1.5000,123.4,0.50,0x00000000000000ff,0.750,0,,"
        );
        assert_eq!(
            lines[3],
            "influxdb,influxdb,influxql,\"0-3,8\",100,1000,20.000,50.0,,,123.4,0.50,\
             0x00000000000000ff,3.000,0,,3"
        );
        assert_eq!(lines.len(), 4);
    }
}
