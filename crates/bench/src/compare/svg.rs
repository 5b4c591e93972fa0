//! `compare.svg`: a hand-written bar chart, one panel for the load rate and one per query
//! type.

use super::render::{rate, rows};
use super::{Comparison, TargetResult};
use crate::scale::grouped;

/// Text safe inside SVG.
fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One bar of a panel: its label and value (or the words shown instead of a bar).
struct Bar {
    label: String,
    value: Result<f64, String>,
    color: &'static str,
}

/// Colours of the targets' bars, in target order (repeating past six).
const PALETTE: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];
const SVG_WIDTH: f64 = 900.0;
const LABEL_WIDTH: f64 = 230.0;
const BAR_SPACE: f64 = 520.0;
const BAR_HEIGHT: f64 = 18.0;
const BAR_GAP: f64 = 6.0;
const TITLE_HEIGHT: f64 = 30.0;
const PANEL_GAP: f64 = 16.0;

/// Appends one panel at `y`; returns the `y` below it.
fn panel(svg: &mut String, y: f64, title: &str, bars: &[Bar], unit: &str) -> f64 {
    svg.push_str(&format!(
        "<text x=\"10\" y=\"{:.1}\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
        y + 20.0,
        xml_escape(title)
    ));
    let top = bars
        .iter()
        .filter_map(|b| b.value.as_ref().ok().copied())
        .fold(0.0f64, f64::max);
    let mut y = y + TITLE_HEIGHT;
    for bar in bars {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n",
            LABEL_WIDTH - 8.0,
            y + 13.0,
            xml_escape(&bar.label)
        ));
        match &bar.value {
            Ok(value) => {
                let width = if top > 0.0 {
                    (value / top * BAR_SPACE).max(1.0)
                } else {
                    1.0
                };
                svg.push_str(&format!(
                    "<rect x=\"{LABEL_WIDTH:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" \
                     height=\"{BAR_HEIGHT:.1}\" fill=\"{}\"/>\n",
                    bar.color
                ));
                let shown = if *value >= 1000.0 {
                    grouped(*value)
                } else {
                    format!("{value:.2}")
                };
                svg.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\">{shown} {unit}</text>\n",
                    LABEL_WIDTH + width + 6.0,
                    y + 13.0
                ));
            }
            Err(words) => svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#777\">{}</text>\n",
                LABEL_WIDTH + 6.0,
                y + 13.0,
                xml_escape(words)
            )),
        }
        y += BAR_HEIGHT + BAR_GAP;
    }
    y + PANEL_GAP
}

/// `compare.svg`: a panel of load rates (one bar per target) and one panel per query type
/// (one bar per target and language); a missing figure is written instead of its bar.
pub fn render_svg(comparison: &Comparison) -> String {
    let color = |t: &TargetResult| {
        let index = comparison
            .targets
            .iter()
            .position(|x| std::ptr::eq(x, t))
            .unwrap_or(0);
        PALETTE[index % PALETTE.len()]
    };
    let mut panels: Vec<(String, Vec<Bar>, &str)> = Vec::new();
    let load_bars = comparison
        .targets
        .iter()
        .map(|t| Bar {
            label: t.name.clone(),
            value: rate(t).ok_or_else(|| "no rate: load under 10 s".to_string()),
            color: color(t),
        })
        .collect();
    panels.push((
        "Load rate, points/s (higher is better)".into(),
        load_bars,
        "points/s",
    ));
    let all_rows = rows(comparison);
    for name in &comparison.query_types {
        let bars = all_rows
            .iter()
            .filter_map(|row| {
                let run = row.language?;
                let result = run.types.iter().find(|r| &r.query_type == name)?;
                let value = match (&result.unsupported, result.median_ms) {
                    (Some(_), _) => Err("n/a: no PromQL for this type in TSBS".to_string()),
                    (None, Some(ms)) => Ok(ms),
                    (None, None) => Err(format!("failed ({})", result.failures)),
                };
                Some(Bar {
                    label: format!("{} ({})", row.target.name, run.language.name()),
                    value,
                    color: color(row.target),
                })
            })
            .collect();
        panels.push((
            format!("{name}: median latency, ms (lower is better)"),
            bars,
            "ms",
        ));
    }
    let height: f64 = panels
        .iter()
        .map(|(_, bars, _)| TITLE_HEIGHT + bars.len() as f64 * (BAR_HEIGHT + BAR_GAP) + PANEL_GAP)
        .sum::<f64>()
        + 20.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{SVG_WIDTH:.0}\" \
         height=\"{height:.0}\" viewBox=\"0 0 {SVG_WIDTH:.0} {height:.0}\" \
         font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let mut y = 10.0;
    for (title, bars, unit) in &panels {
        y = panel(&mut svg, y, title, bars, unit);
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::fixtures::sample;

    #[test]
    fn svg_has_a_bar_per_figure_and_words_for_the_missing() {
        let mut c = sample();
        c.targets[0].name = "a<b".into();
        let svg = render_svg(&c);
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{svg}"
        );
        assert!(svg.ends_with("</svg>\n"));
        // Bars: influxdb's rate; single-groupby: 3; lastpoint: strata influxql only.
        assert_eq!(svg.matches("<rect x=").count(), 5, "{svg}");
        assert!(svg.contains("Load rate, points/s"));
        assert!(svg.contains("no rate: load under 10 s"));
        assert!(svg.contains("lastpoint: median latency, ms"));
        assert!(svg.contains("n/a: no PromQL"));
        assert!(svg.contains("failed (3)"));
        assert!(svg.contains("a&lt;b (promql)"));
        assert!(!svg.contains("a<b"));
        // The longest bar of a panel spans the bar space; others in proportion.
        assert!(svg.contains(&format!("width=\"{BAR_SPACE:.1}\"")));
        assert!(
            svg.contains(&format!("width=\"{:.1}\"", BAR_SPACE / 4.0)),
            "0.75 of 3.0"
        );
    }
}
