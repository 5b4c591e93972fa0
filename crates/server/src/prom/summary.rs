//! [`strata_promql::Source::summarize_each`] on the engine: a window's whole stored chunks as their
//! pre-aggregates ([`Engine::summarize_shard_each`], the same path SQL's aggregates take),
//! the other rows (ragged ends, memtables, chunks other data overlaps) as samples.
//!
//! A chunk stands for its samples only when PromQL would see each of its rows as one
//! sample with its value: evenly spaced at least a millisecond apart (PromQL keeps one row
//! per millisecond), no NaN in the metric's column (stale markers are NaN and drop out of
//! a range; Prometheus orders NaN its own way in `min`/`max`), and no other row of the
//! series in the milliseconds of its first and last rows.

use strata_promql::{Error, Matcher, SampleRun, WindowSummary};
use strata_storage::column::Column;
use strata_storage::model::FieldId;
use strata_storage::part::{ChunkMeta, PreAgg};

use super::source::{EngineSource, labels_of, samples_of};

const NS_PER_MS: i64 = 1_000_000;

/// Whether a chunk's column of `field` (absent: nothing to count) can stand for its rows.
fn usable_column(chunk: &ChunkMeta, field: FieldId) -> bool {
    chunk.column(field).is_none_or(|c| match c.preagg {
        PreAgg::Float { has_nan, .. } => !has_nan,
        PreAgg::Integer { .. } | PreAgg::Unsigned { .. } | PreAgg::Boolean { .. } => true,
        PreAgg::String { .. } => false,
    })
}

/// Whether a chunk's rows are at least a millisecond apart: evenly spaced (no time block)
/// by a millisecond or more, or a single row.
fn one_row_per_millisecond(chunk: &ChunkMeta) -> bool {
    chunk.rows == 1 || (chunk.time_block.is_none() && chunk.even_step() >= NS_PER_MS)
}

/// A chunk column's pre-aggregates as PromQL's values (booleans are 0 and 1).
fn run_of(preagg: &PreAgg) -> Option<SampleRun> {
    let (count, sum, min, max) = match *preagg {
        PreAgg::Float {
            count,
            min,
            max,
            sum,
            ..
        } => (count, sum, min, max),
        PreAgg::Integer {
            count,
            min,
            max,
            sum,
            ..
        } => (count, sum as f64, min as f64, max as f64),
        PreAgg::Unsigned {
            count,
            min,
            max,
            sum,
            ..
        } => (count, sum as f64, min as f64, max as f64),
        PreAgg::Boolean { count, trues, .. } => (
            count,
            f64::from(trues),
            f64::from(u8::from(trues == count)),
            f64::from(u8::from(trues > 0)),
        ),
        PreAgg::String { .. } => return None,
    };
    Some(SampleRun {
        count: u64::from(count),
        sum,
        min,
        max,
    })
}

/// Whether a sample at `ms` shares a millisecond with the first or last row of a chunk
/// (PromQL would then keep one of the two).
fn touches(chunks: &[ChunkMeta], samples: &[(i64, f64)]) -> bool {
    chunks.iter().any(|c| {
        let (first, last) = (
            c.min_time.div_euclid(NS_PER_MS),
            c.max_time.div_euclid(NS_PER_MS),
        );
        samples.iter().any(|(ms, _)| *ms == first || *ms == last)
    })
}

impl EngineSource<'_> {
    /// See [`strata_promql::Source::summarize_each`].
    pub(super) fn summarize(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        for (request, fields) in self.requests(matchers, start_ms, end_ms) {
            let ids: Vec<FieldId> = fields.iter().map(|(f, _)| f.id).collect();
            let usable = |chunk: &ChunkMeta| {
                one_row_per_millisecond(chunk) && ids.iter().all(|f| usable_column(chunk, *f))
            };
            // The visitor's error (a limit, a cancel) is carried out of the engine's read;
            // so is a series the summaries cannot stand for.
            let (mut failed, mut inexact) = (None, false);
            for shard in 0..self.engine.shard_count() {
                self.engine
                    .summarize_shard_each(shard, &request, &usable, None, &mut |mut summary| {
                        let mut left = fields.len();
                        for (field, name) in &fields {
                            left -= 1;
                            let runs: Vec<SampleRun> = summary
                                .chunks
                                .iter()
                                .filter_map(|c| c.column(field.id).and_then(|c| run_of(&c.preagg)))
                                .collect();
                            let column: Option<&Column> =
                                summary.rest.columns.iter().find(|c| c.field == field.id);
                            let samples = column
                                .map_or_else(Vec::new, |c| samples_of(&summary.rest.times, c));
                            if runs.is_empty() && samples.is_empty() {
                                continue;
                            }
                            if touches(&summary.chunks, &samples) {
                                inexact = true;
                                return Ok(false);
                            }
                            let one = WindowSummary {
                                labels: labels_of(&mut summary.tags, name, left == 0),
                                runs,
                                samples,
                            };
                            if let Err(e) = visit(one) {
                                failed = Some(e);
                                return Ok(false);
                            }
                        }
                        Ok(true)
                    })
                    .map_err(|e| Error::Internal(e.to_string()))?;
                if let Some(e) = failed {
                    return Err(e);
                }
                if inexact {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_lineproto::Precision;
    use strata_promql::{Limits, QueryValue, Source, instant_query, range_query};
    use strata_storage::{Engine, EngineOptions};

    /// 2024-01-01T00:00:00Z, ms.
    const T0: i64 = 1_704_067_200_000;

    /// Hosts h0..h3 with an integer, a float and a boolean field, six hours at 10 s (h3
    /// at 7 s), plus a row of h2 in the millisecond of another at 02:00, flushed to parts;
    /// then two more rows of h0 in the memtable.
    fn engine(dir: &std::path::Path) -> Engine {
        let engine = Engine::open(EngineOptions {
            data_dirs: vec![dir.to_path_buf()],
            shards: 2,
            ..EngineOptions::default()
        })
        .unwrap()
        .0;
        let mut lines = String::new();
        for host in 0..4i64 {
            let step_ms = if host == 3 { 7_000 } else { 10_000 };
            for i in 0..6 * 3_600_000 / step_ms {
                let t = (T0 + i * step_ms) * 1_000_000;
                let v = (i * 37 + host * 11) % 101 - 50;
                let f = v as f64 / 8.0 + 0.1;
                let b = v % 3 == 0;
                lines.push_str(&format!("m,host=h{host} i={v}i,f={f},b={b} {t}\n"));
            }
        }
        // Two rows of h2 in one millisecond: PromQL keeps the last.
        let t = (T0 + 2 * 3_600_000) * 1_000_000 + 400;
        lines.push_str(&format!("m,host=h2 i=1000i,f=1000.5,b=true {t}\n"));
        engine
            .write_lines("db", lines.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        engine.flush().unwrap();
        let late = (T0 + 6 * 3_600_000 + 5_000) * 1_000_000;
        let more = format!(
            "m,host=h0 i=7i,f=2.5,b=true {late}\nm,host=h0 i=-3i,f=-9.25,b=false {}\n",
            late + 10_000_000_000
        );
        engine
            .write_lines("db", more.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        engine
    }

    fn values(answer: QueryValue) -> Vec<(String, f64)> {
        match answer {
            QueryValue::Vector(v) => v
                .into_iter()
                .map(|(l, _, x)| (format!("{l:?}"), x))
                .collect(),
            QueryValue::Matrix(m) => m
                .into_iter()
                .map(|(l, points)| (format!("{l:?}"), points[0].1))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn summaries_answer_what_samples_answer() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let source = EngineSource {
            engine: &engine,
            database: "db",
        };
        // Summaries carry runs for whole chunks in the window (the memtable's rows and
        // the ragged ends as samples).
        let mut runs = 0;
        let done = source
            .summarize_each(&[], T0 + 1_000, T0 + 6 * 3_600_000 + 60_000, &mut |s| {
                runs += s.runs.len();
                Ok(())
            })
            .unwrap();
        assert!(done && runs > 0, "{done} {runs}");
        let mut checked = 0;
        for f in ["count", "sum", "avg", "min", "max"] {
            for metric in ["m_i", "m_f", "m_b"] {
                for (range, at) in [
                    ("5h", 5 * 3_600_000 + 1_234),
                    ("3h", 6 * 3_600_000 + 20_000),
                    ("90m", 2 * 3_600_000 + 30_000),
                    ("30s", 3_600_000),
                ] {
                    let q = format!("{f}_over_time({metric}[{range}])");
                    let t = T0 + at;
                    // An instant query takes the summaries; a range query of two steps
                    // takes the samples; its first step is the same window.
                    let got =
                        values(instant_query(&source, &q, t, 300_000, Limits::default()).unwrap());
                    let want = values(
                        range_query(&source, &q, t, t + 1, 1, 300_000, Limits::default()).unwrap(),
                    );
                    assert_eq!(got.len(), want.len(), "{q} at {at}");
                    for ((gl, gv), (wl, wv)) in got.iter().zip(&want) {
                        assert_eq!(gl, wl, "{q}");
                        let close = (gv - wv).abs() <= 1e-12 * wv.abs().max(1.0);
                        assert!(close, "{q} at {at}, {gl}: {gv} against {wv}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 200, "{checked}");
    }

    #[test]
    fn boolean_runs_are_zeros_and_ones() {
        let run = |trues| {
            run_of(&PreAgg::Boolean {
                count: 4,
                first: true,
                last: false,
                trues,
            })
            .unwrap()
        };
        assert_eq!((run(0).sum, run(0).min, run(0).max), (0.0, 0.0, 0.0));
        assert_eq!((run(2).sum, run(2).min, run(2).max), (2.0, 0.0, 1.0));
        assert_eq!((run(4).sum, run(4).min, run(4).max), (4.0, 1.0, 1.0));
        assert!(run_of(&PreAgg::String { count: 1 }).is_none());
    }
}
