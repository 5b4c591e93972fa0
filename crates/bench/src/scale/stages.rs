//! Where a scale run's write time went, stage by stage, from the server's `/metrics`.
//!
//! The server counts, since it started, the seconds each stage of its write path took
//! (`strata_write_stage_seconds_total{stage="parse"}`, …, summed over threads), how often a
//! writer found a shard busy (`strata_write_shard_busy_total`) and the points it wrote
//! (`strata_points_written_total`). `bench scale` scrapes `/metrics` right before a load's
//! clock starts and right after it stops; [`parse_write_metrics`] reads the three families
//! from each scrape and [`stage_costs`] turns the two into nanoseconds per point written:
//! Δseconds × 1e9 / Δpoints, one figure per stage, in the order the server lists them (the
//! set of stages is open: whatever labels appear are reported).
//!
//! [`render_stage_table`] prints one run's stages, [`render_stage_sweep`] the whole sweep's
//! (rows = stages, columns = core counts, so 1 core compares with 8 and 12) and
//! [`render_stages_csv`] writes them as `stages.csv`, one line per run and stage.

use serde::Serialize;

use super::{ScaleRow, Sweep};

/// Seconds by stage, summed over the server's threads since it started.
pub const STAGE_FAMILY: &str = "strata_write_stage_seconds_total";
/// Times a write found a shard's lock held and served another shard first.
pub const SHARD_BUSY_FAMILY: &str = "strata_write_shard_busy_total";
/// Points the server wrote since it started.
pub const POINTS_FAMILY: &str = "strata_points_written_total";

/// The write path's counters in one scrape of `/metrics`. `None`: the family is absent
/// (an older server).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteMetrics {
    /// `strata_write_stage_seconds_total` by its `stage` label, in the order of the text.
    pub stages: Option<Vec<(String, f64)>>,
    /// `strata_write_shard_busy_total`.
    pub shard_busy: Option<f64>,
    /// `strata_points_written_total`.
    pub points_written: Option<f64>,
}

/// One stage's share of a load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageCost {
    /// The stage's label (`parse`, `lock_wait`, …).
    pub stage: String,
    /// Seconds the stage took during the load, summed over the server's threads.
    pub seconds: f64,
    /// `seconds` × 1e9 / points: nanoseconds per point written.
    pub ns_per_point: f64,
}

/// Where a load's write time went, from two scrapes of `/metrics`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageCosts {
    /// Points written between the scrapes: Δ`strata_points_written_total`, or the
    /// loader's count when the server has no such counter.
    pub points: u64,
    /// Where `points` comes from: `server` or `loader`.
    pub points_source: String,
    /// Each stage, in the order the server lists them.
    pub stages: Vec<StageCost>,
    /// Δ`strata_write_shard_busy_total`; `None` when the server has no such counter.
    pub shard_busy: Option<f64>,
}

impl StageCosts {
    /// Nanoseconds per point of every stage together (waits included: not CPU).
    pub fn total_ns_per_point(&self) -> f64 {
        self.stages.iter().map(|s| s.ns_per_point).sum()
    }
}

/// One sample line: its metric name, labels and value.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// Parses a sample line of the Prometheus text format: `name{k="v",…} value [timestamp]`;
/// label values may hold `\\`, `\"` and `\n` escapes, commas and braces.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .ok_or_else(|| format!("no value in {line:?}"))?;
    let name = line[..name_end].to_string();
    if name.is_empty() {
        return Err(format!("no metric name in {line:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after_brace) = rest.strip_prefix('{') {
        let mut chars = after_brace.char_indices().peekable();
        loop {
            // Skip blanks and a separating comma; `}` ends the labels.
            while chars
                .next_if(|(_, c)| c.is_whitespace() || *c == ',')
                .is_some()
            {}
            match chars.peek() {
                Some((i, '}')) => {
                    rest = &after_brace[i + 1..];
                    break;
                }
                None => return Err(format!("unterminated labels in {line:?}")),
                _ => {}
            }
            let mut key = String::new();
            while let Some((_, c)) =
                chars.next_if(|(_, c)| !matches!(c, '=' | '}' | ',') && !c.is_whitespace())
            {
                key.push(c);
            }
            while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
            if chars.next().map(|(_, c)| c) != Some('=') {
                return Err(format!("label {key:?} has no `=` in {line:?}"));
            }
            while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
            if chars.next().map(|(_, c)| c) != Some('"') {
                return Err(format!("label {key:?} has no quoted value in {line:?}"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, c)) => value.push(c),
                        None => return Err(format!("unterminated label value in {line:?}")),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err(format!("unterminated label value in {line:?}")),
                }
            }
            labels.push((key, value));
        }
    }
    let value_text = rest
        .split_whitespace()
        .next()
        .ok_or_else(|| format!("no value in {line:?}"))?;
    let value = match value_text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        text => text
            .parse::<f64>()
            .map_err(|e| format!("bad value {text:?} in {line:?}: {e}"))?,
    };
    Ok(Sample {
        name,
        labels,
        value,
    })
}

/// Reads the write path's counters from a `/metrics` answer (Prometheus text format).
/// A family that is absent is `None`; a malformed line of one of these families, a stage
/// sample without a `stage` label or a stage listed twice is an error. Lines of other
/// families are not looked at.
pub fn parse_write_metrics(text: &str) -> Result<WriteMetrics, String> {
    let mut metrics = WriteMetrics::default();
    let ours = [STAGE_FAMILY, SHARD_BUSY_FAMILY, POINTS_FAMILY];
    for line in text.lines() {
        let line = line.trim();
        if let Some(comment) = line.strip_prefix('#') {
            // `# TYPE strata_write_stage_seconds_total counter`: the family is there even
            // before any stage has a sample.
            let words: Vec<&str> = comment.split_whitespace().collect();
            if let ["TYPE" | "HELP", name, ..] = words[..]
                && name == STAGE_FAMILY
            {
                metrics.stages.get_or_insert_with(Vec::new);
            }
            continue;
        }
        let Some(name) = line.split(|c: char| c == '{' || c.is_whitespace()).next() else {
            continue;
        };
        if !ours.contains(&name) {
            continue;
        }
        let sample = parse_sample(line)?;
        match sample.name.as_str() {
            STAGE_FAMILY => {
                let stage = sample
                    .labels
                    .iter()
                    .find(|(k, _)| k == "stage")
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        format!("{STAGE_FAMILY} sample without a stage label: {line}")
                    })?;
                let stages = metrics.stages.get_or_insert_with(Vec::new);
                if stages.iter().any(|(s, _)| *s == stage) {
                    return Err(format!("{STAGE_FAMILY}{{stage={stage:?}}} is listed twice"));
                }
                stages.push((stage, sample.value));
            }
            SHARD_BUSY_FAMILY => metrics.shard_busy = Some(sample.value),
            _ => metrics.points_written = Some(sample.value),
        }
    }
    Ok(metrics)
}

/// A counter's increase from `before` to `after`; an error when it went backwards (the
/// server restarted between the scrapes, or the counter is not one).
fn increase(what: &str, before: f64, after: f64) -> Result<f64, String> {
    if after < before {
        return Err(format!(
            "{what} went backwards from {before} to {after} between the scrapes before and \
             after the load: did the server restart?"
        ));
    }
    Ok(after - before)
}

/// Where the time went between the scrapes `before` and `after`, per point written.
/// `Ok(None)` when either scrape lacks `strata_write_stage_seconds_total` (an older
/// server). Points are Δ`strata_points_written_total` when both scrapes have it, else
/// `loader_points`. A counter that went backwards, a stage that disappeared or no point
/// written between the scrapes is an error.
pub fn stage_costs(
    before: &WriteMetrics,
    after: &WriteMetrics,
    loader_points: u64,
) -> Result<Option<StageCosts>, String> {
    let (Some(stages_before), Some(stages_after)) = (&before.stages, &after.stages) else {
        return Ok(None);
    };
    let (points, points_source) = match (before.points_written, after.points_written) {
        (Some(b), Some(a)) => (
            increase(POINTS_FAMILY, b, a)?.round() as u64,
            "server".to_string(),
        ),
        _ => (loader_points, "loader".to_string()),
    };
    if points == 0 {
        return Err("no point was written between the scrapes before and after the load".into());
    }
    if let Some((gone, _)) = stages_before
        .iter()
        .find(|(stage, _)| !stages_after.iter().any(|(s, _)| s == stage))
    {
        return Err(format!(
            "{STAGE_FAMILY}{{stage={gone:?}}} was there before the load and not after: did \
             the server restart?"
        ));
    }
    let mut stages = Vec::with_capacity(stages_after.len());
    for (stage, after_s) in stages_after {
        // A stage first listed after the load had not been counted yet: it started at 0.
        let before_s = stages_before
            .iter()
            .find(|(s, _)| s == stage)
            .map_or(0.0, |(_, v)| *v);
        let seconds = increase(
            &format!("{STAGE_FAMILY}{{stage={stage:?}}}"),
            before_s,
            *after_s,
        )?;
        stages.push(StageCost {
            stage: stage.clone(),
            seconds,
            ns_per_point: seconds * 1e9 / points as f64,
        });
    }
    let shard_busy = match (before.shard_busy, after.shard_busy) {
        (Some(b), Some(a)) => Some(increase(SHARD_BUSY_FAMILY, b, a)?),
        _ => None,
    };
    Ok(Some(StageCosts {
        points,
        points_source,
        stages,
        shard_busy,
    }))
}

/// One run's stages as a table, with the sum and, when known, the server's CPU per point
/// from /proc to compare with.
pub fn render_stage_table(costs: &StageCosts, server_cpu_ns_per_point: Option<f64>) -> String {
    let mut out = format!(
        "write stages (server /metrics, over the load's clock; {} points, counted by the {}):\n\
         Stage | Seconds | ns/point |\n---|---|---|\n",
        super::grouped(costs.points as f64),
        costs.points_source
    );
    for stage in &costs.stages {
        out.push_str(&format!(
            "{} | {:.3} | {:.1} |\n",
            stage.stage, stage.seconds, stage.ns_per_point
        ));
    }
    let total: f64 = costs.stages.iter().map(|s| s.seconds).sum();
    out.push_str(&format!(
        "sum of stages | {total:.3} | {:.1} |\n",
        costs.total_ns_per_point()
    ));
    if let Some(ns) = server_cpu_ns_per_point {
        out.push_str(&format!("server CPU (/proc) | | {ns:.1} |\n"));
    }
    if let Some(busy) = costs.shard_busy {
        out.push_str(&format!(
            "shard busy: {busy:.0} times ({:.2} per 1,000 points)\n",
            busy * 1e3 / costs.points as f64
        ));
    }
    out
}

/// The stage labels of every run, each once, in the order they first appear.
fn stage_names(rows: &[ScaleRow]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for costs in rows.iter().filter_map(|r| r.stages.as_ref()) {
        for stage in &costs.stages {
            if !names.contains(&stage.stage) {
                names.push(stage.stage.clone());
            }
        }
    }
    names
}

/// The sweep's stages side by side: one row per stage, one column per run (its core count,
/// or its disks in a disk sweep), ns per point; `n/a` where a run has no figure. Empty
/// when no run has stage figures.
pub fn render_stage_sweep(rows: &[ScaleRow], sweep: Sweep) -> String {
    let names = stage_names(rows);
    if names.is_empty() {
        return String::new();
    }
    let unit = match sweep {
        Sweep::Cores => "core",
        Sweep::Disks => "disk",
    };
    let mut out = String::from("Write stage, ns/point |");
    for row in rows {
        let k = sweep.of(row);
        out.push_str(&format!(" {k} {unit}{} |", if k == 1 { "" } else { "s" }));
    }
    out.push('\n');
    out.push_str(&"---|".repeat(rows.len() + 1));
    out.push('\n');
    let cell = |value: Option<f64>| value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
    for name in &names {
        out.push_str(&format!("{name} |"));
        for row in rows {
            let value = row.stages.as_ref().and_then(|c| {
                c.stages
                    .iter()
                    .find(|s| s.stage == *name)
                    .map(|s| s.ns_per_point)
            });
            out.push_str(&format!(" {} |", cell(value)));
        }
        out.push('\n');
    }
    out.push_str("sum of stages |");
    for row in rows {
        let total = row.stages.as_ref().map(StageCosts::total_ns_per_point);
        out.push_str(&format!(" {} |", cell(total)));
    }
    out.push_str("\nserver CPU (/proc) |");
    for row in rows {
        out.push_str(&format!(" {} |", cell(row.server_cpu_ns_per_point)));
    }
    out.push('\n');
    out
}

/// `stages.csv`: a header line, then one line per run and stage (in the order of the
/// runs, then of the stages): `cores,disks,stage,seconds,points,ns_per_point`. Only the
/// header when no run has stage figures.
pub fn render_stages_csv(rows: &[ScaleRow]) -> String {
    let mut out = String::from("cores,disks,stage,seconds,points,ns_per_point\n");
    for row in rows {
        let Some(costs) = &row.stages else { continue };
        for stage in &costs.stages {
            out.push_str(&format!(
                "{},{},{},{:.9},{},{:.3}\n",
                row.cores, row.disks, stage.stage, stage.seconds, costs.points, stage.ns_per_point
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "\
# HELP strata_points_written_total Points written since start.
# TYPE strata_points_written_total counter
strata_points_written_total 1000
# HELP strata_write_stage_seconds_total Time by stage.
# TYPE strata_write_stage_seconds_total counter
strata_write_stage_seconds_total{stage=\"parse\"} 1.5
strata_write_stage_seconds_total{stage=\"lock_wait\"} 0.25
strata_write_stage_seconds_total{stage=\"wal_commit\"} 0
# TYPE strata_write_shard_busy_total counter
strata_write_shard_busy_total 3
strata_http_requests_total{endpoint=\"write\",status=\"204\"} 12
";

    const AFTER: &str = "\
strata_points_written_total 3000
strata_write_stage_seconds_total{stage=\"parse\"} 1.7
strata_write_stage_seconds_total{stage=\"lock_wait\"} 0.25
strata_write_stage_seconds_total{stage=\"wal_commit\"} 0.0004
strata_write_stage_seconds_total{stage=\"flush\"} 0.1
strata_write_shard_busy_total 13
";

    #[test]
    fn the_three_families_are_read_in_order_and_others_ignored() {
        let m = parse_write_metrics(BEFORE).unwrap();
        assert_eq!(
            m.stages,
            Some(vec![
                ("parse".to_string(), 1.5),
                ("lock_wait".to_string(), 0.25),
                ("wal_commit".to_string(), 0.0),
            ])
        );
        assert_eq!(m.shard_busy, Some(3.0));
        assert_eq!(m.points_written, Some(1000.0));
    }

    #[test]
    fn labels_are_parsed_with_escapes_other_labels_and_timestamps() {
        let text = "strata_write_stage_seconds_total{shard=\"a,b}\\\"c\",stage=\"wal_append\"} 2.5e-3 1700000000000\n\
                    strata_write_stage_seconds_total{ stage = \"odd\\\\name\\n\" , } 1\n";
        let m = parse_write_metrics(text).unwrap();
        assert_eq!(
            m.stages,
            Some(vec![
                ("wal_append".to_string(), 0.0025),
                ("odd\\name\n".to_string(), 1.0)
            ])
        );
        let sample = parse_sample("x{a=\"1\",b=\"}\"} +Inf").unwrap();
        assert_eq!(
            sample.labels,
            [("a".into(), "1".into()), ("b".into(), "}".into())]
        );
        assert_eq!(sample.value, f64::INFINITY);
        assert_eq!(parse_sample("plain 7").unwrap().labels, []);
    }

    #[test]
    fn malformed_lines_of_our_families_are_errors() {
        for (text, expect) in [
            (
                "strata_write_stage_seconds_total{stage=\"parse\"",
                "unterminated",
            ),
            (
                "strata_write_stage_seconds_total{stage=\"parse} 1",
                "unterminated",
            ),
            ("strata_write_stage_seconds_total{stage} 1", "no `=`"),
            (
                "strata_write_stage_seconds_total{stage=parse} 1",
                "no quoted value",
            ),
            (
                "strata_write_stage_seconds_total{stage=\"parse\"} x",
                "bad value",
            ),
            (
                "strata_write_stage_seconds_total{stage=\"parse\"}",
                "no value",
            ),
            (
                "strata_write_stage_seconds_total{shard=\"1\"} 1",
                "without a stage label",
            ),
            (
                "strata_write_stage_seconds_total{stage=\"a\"} 1\nstrata_write_stage_seconds_total{stage=\"a\"} 2",
                "listed twice",
            ),
            ("strata_points_written_total", "no value"),
        ] {
            let error = parse_write_metrics(text).unwrap_err();
            assert!(error.contains(expect), "{text:?}: {error}");
        }
        // Someone else's malformed line is not our business.
        assert!(parse_write_metrics("other_metric{oops 1\n").is_ok());
    }

    #[test]
    fn a_missing_family_is_none_and_gives_no_costs() {
        let old = "# TYPE strata_points_written_total counter\nstrata_points_written_total 5\n";
        let m = parse_write_metrics(old).unwrap();
        assert_eq!(m.stages, None);
        assert_eq!(m.shard_busy, None);
        assert_eq!(m.points_written, Some(5.0));
        assert_eq!(parse_write_metrics("").unwrap(), WriteMetrics::default());
        let new = parse_write_metrics(AFTER).unwrap();
        assert_eq!(stage_costs(&m, &new, 10).unwrap(), None);
        assert_eq!(stage_costs(&new, &m, 10).unwrap(), None);
        // Declared with no sample yet: present, no stages.
        let declared =
            parse_write_metrics("# TYPE strata_write_stage_seconds_total counter\n").unwrap();
        assert_eq!(declared.stages, Some(Vec::new()));
    }

    #[test]
    fn costs_are_seconds_per_point_written_in_the_servers_order() {
        let before = parse_write_metrics(BEFORE).unwrap();
        let after = parse_write_metrics(AFTER).unwrap();
        let costs = stage_costs(&before, &after, 999).unwrap().unwrap();
        assert_eq!(costs.points, 2000);
        assert_eq!(costs.points_source, "server");
        let names: Vec<&str> = costs.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(names, ["parse", "lock_wait", "wal_commit", "flush"]);
        let ns: Vec<f64> = costs
            .stages
            .iter()
            .map(|s| (s.ns_per_point * 1e3).round() / 1e3)
            .collect();
        // 0.2 s / 2000 points = 100,000 ns; 0.4 ms / 2000 = 200 ns; flush new: from 0.
        assert_eq!(ns, [100_000.0, 0.0, 200.0, 50_000.0]);
        assert_eq!(costs.shard_busy, Some(10.0));
        assert!((costs.total_ns_per_point() - 150_200.0).abs() < 1e-6);

        // Without the server's point counter, the loader's points.
        let mut no_points = after.clone();
        no_points.points_written = None;
        let costs = stage_costs(&before, &no_points, 4000).unwrap().unwrap();
        assert_eq!(
            (costs.points, costs.points_source.as_str()),
            (4000, "loader")
        );
        assert!((costs.stages[0].ns_per_point - 50_000.0).abs() < 1e-6);
    }

    #[test]
    fn counters_going_backwards_are_an_error_that_says_why() {
        let before = parse_write_metrics(AFTER).unwrap();
        let after = parse_write_metrics(BEFORE).unwrap();
        let error = stage_costs(&before, &after, 10).unwrap_err();
        assert!(error.contains("went backwards"), "{error}");
        assert!(error.contains("restart"), "{error}");

        let mut stage_back = before.clone();
        stage_back.points_written = Some(1e9);
        if let Some(stages) = stage_back.stages.as_mut() {
            stages[0].1 = 1.0;
        }
        let error = stage_costs(&before, &stage_back, 10).unwrap_err();
        assert!(error.contains("went backwards"), "{error}");
        assert!(error.contains("stage=\"parse\""), "{error}");

        let mut gone = before.clone();
        gone.points_written = Some(1e9);
        gone.stages = Some(vec![("parse".into(), 9.0)]);
        let error = stage_costs(&before, &gone, 10).unwrap_err();
        assert!(
            error.contains("stage=\"lock_wait\"} was there before"),
            "{error}"
        );

        let error = stage_costs(&before, &before, 10).unwrap_err();
        assert!(error.contains("no point was written"), "{error}");
    }

    fn row(cores: usize, stages: Option<StageCosts>) -> ScaleRow {
        ScaleRow {
            cores,
            disks: 1,
            server_cpu_ns_per_point: Some(400.0 * cores as f64),
            stages,
            ..ScaleRow::default()
        }
    }

    fn costs(values: &[(&str, f64)]) -> StageCosts {
        StageCosts {
            points: 1_000_000,
            points_source: "server".into(),
            stages: values
                .iter()
                .map(|(stage, ns)| StageCost {
                    stage: stage.to_string(),
                    seconds: ns / 1e3,
                    ns_per_point: *ns,
                })
                .collect(),
            shard_busy: Some(250.0),
        }
    }

    #[test]
    fn a_runs_table_has_every_stage_the_sum_and_the_cpu() {
        let table = render_stage_table(
            &costs(&[("parse", 100.0), ("lock_wait", 20.0)]),
            Some(150.0),
        );
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].contains("1,000,000 points, counted by the server"),
            "{table}"
        );
        assert_eq!(lines[3], "parse | 0.100 | 100.0 |");
        assert_eq!(lines[4], "lock_wait | 0.020 | 20.0 |");
        assert_eq!(lines[5], "sum of stages | 0.120 | 120.0 |");
        assert_eq!(lines[6], "server CPU (/proc) | | 150.0 |");
        assert_eq!(lines[7], "shard busy: 250 times (0.25 per 1,000 points)");
    }

    #[test]
    fn the_sweep_table_puts_core_counts_side_by_side() {
        let rows = vec![
            row(1, Some(costs(&[("parse", 100.0), ("series", 50.0)]))),
            row(8, None),
            row(12, Some(costs(&[("parse", 110.0), ("lock_wait", 30.0)]))),
        ];
        let table = render_stage_sweep(&rows, Sweep::Cores);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines,
            [
                "Write stage, ns/point | 1 core | 8 cores | 12 cores |",
                "---|---|---|---|",
                "parse | 100.0 | n/a | 110.0 |",
                "series | 50.0 | n/a | n/a |",
                "lock_wait | n/a | n/a | 30.0 |",
                "sum of stages | 150.0 | n/a | 140.0 |",
                "server CPU (/proc) | 400.0 | 3200.0 | 4800.0 |",
            ]
        );
        assert_eq!(render_stage_sweep(&[row(1, None)], Sweep::Cores), "");
        let csv = render_stages_csv(&rows);
        assert_eq!(
            csv.lines().collect::<Vec<_>>(),
            [
                "cores,disks,stage,seconds,points,ns_per_point",
                "1,1,parse,0.100000000,1000000,100.000",
                "1,1,series,0.050000000,1000000,50.000",
                "12,1,parse,0.110000000,1000000,110.000",
                "12,1,lock_wait,0.030000000,1000000,30.000",
            ]
        );
        assert_eq!(
            render_stages_csv(&[row(1, None)]),
            "cores,disks,stage,seconds,points,ns_per_point\n"
        );
    }
}
