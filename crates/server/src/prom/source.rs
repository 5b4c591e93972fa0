//! PromQL's view of Strata's tables (see `docs/prometheus.md`): field `f` of table `t` is
//! the metric `t_f`, except a field named `value`, which is the metric `t` itself (what
//! remote write stores). Label matchers become tag predicates on the series index and the
//! time range bounds the read, so only matching series and the samples in range are read.

use std::sync::Arc;

use strata_promql::{Error, Labels, Matcher, Series, Source, WindowSummary};
use strata_storage::catalog::{FieldDef, TableSchema};
use strata_storage::column::{Column, Values};
use strata_storage::model::FieldType;
use strata_storage::series::TagPredicate;
use strata_storage::{Engine, ReadRequest};

use super::model::{METRIC_LABEL, VALUE_FIELD};

/// A table and the metrics it holds: (field, metric name).
pub type TableMetrics = (Arc<TableSchema>, Vec<(FieldDef, String)>);

/// The series of one database.
pub struct EngineSource<'a> {
    pub engine: &'a Engine,
    pub database: &'a str,
}

/// The metric name of field `field` of `table`.
pub fn metric_name(table: &str, field: &str) -> String {
    if field == VALUE_FIELD {
        table.to_string()
    } else {
        format!("{table}_{field}")
    }
}

/// Whether PromQL sees the field (strings have no float value).
fn numeric(field: &FieldDef) -> bool {
    field.field_type != FieldType::String
}

impl EngineSource<'_> {
    /// Every table of the database with the metrics (numeric fields) it holds.
    pub fn metrics(&self) -> Vec<TableMetrics> {
        self.engine
            .catalog()
            .tables(self.database)
            .into_iter()
            .map(|table| {
                let fields = table
                    .fields
                    .iter()
                    .filter(|f| numeric(f))
                    .map(|f| (f.clone(), metric_name(&table.name, &f.name)))
                    .collect();
                (table, fields)
            })
            .collect()
    }

    /// The tag predicate for one label matcher on `table` (`None`: every series), or
    /// `Err(())` when no series can match.
    fn predicate(&self, table: &TableSchema, m: &Matcher) -> Result<Option<TagPredicate>, ()> {
        let values = self.engine.tag_values(table.id, &m.name);
        let (matching, other): (Vec<String>, Vec<String>) =
            values.into_iter().partition(|v| m.is_match(v));
        if m.is_match("") {
            // A series without the label has the value "", which matches: keep every
            // series but those whose value does not match.
            if other.is_empty() {
                return Ok(None);
            }
            return Ok(Some(TagPredicate::And(
                other
                    .into_iter()
                    .map(|value| TagPredicate::NotEq {
                        key: m.name.clone(),
                        value,
                    })
                    .collect(),
            )));
        }
        if matching.is_empty() {
            return Err(());
        }
        Ok(Some(TagPredicate::In {
            key: m.name.clone(),
            values: matching,
        }))
    }
}

impl EngineSource<'_> {
    /// The reads a selection needs: per table with matching metrics, the request (tag
    /// predicates from the label matchers, the rows with milliseconds in
    /// `[start_ms, end_ms]`) and its metrics' fields.
    pub(super) fn requests(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
    ) -> Vec<(ReadRequest, Vec<(FieldDef, String)>)> {
        let (names, labels): (Vec<&Matcher>, Vec<&Matcher>) =
            matchers.iter().partition(|m| m.name == METRIC_LABEL);
        let mut out = Vec::new();
        'tables: for (table, fields) in self.metrics() {
            let fields: Vec<(FieldDef, String)> = fields
                .into_iter()
                .filter(|(_, name)| names.iter().all(|m| m.is_match(name)))
                .collect();
            if fields.is_empty() {
                continue;
            }
            let mut predicates = Vec::new();
            for m in &labels {
                match self.predicate(&table, m) {
                    Ok(Some(p)) => predicates.push(p),
                    Ok(None) => {}
                    Err(()) => continue 'tables,
                }
            }
            let request = ReadRequest {
                table: table.id,
                predicate: (!predicates.is_empty()).then_some(TagPredicate::And(predicates)),
                start: start_ms.saturating_mul(1_000_000),
                end: end_ms.saturating_add(1).saturating_mul(1_000_000),
                fields: Some(fields.iter().map(|(f, _)| f.id).collect()),
            };
            out.push((request, fields));
        }
        out
    }
}

impl Source for EngineSource<'_> {
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Series>, Error> {
        let mut out = Vec::new();
        self.select_each(matchers, start_ms, end_ms, &mut |series| {
            out.push(series);
            Ok(())
        })?;
        Ok(out)
    }

    fn select_each(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        visit: &mut dyn FnMut(Series) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for (request, fields) in self.requests(matchers, start_ms, end_ms) {
            // The visitor's error (a limit, a cancel) is carried out of the engine's read.
            let mut failed = None;
            self.engine
                .read_each(&request, &mut |mut series| {
                    let mut left = fields.len();
                    for (field, name) in &fields {
                        left -= 1;
                        let Some(column) = series.data.columns.iter().find(|c| c.field == field.id)
                        else {
                            continue;
                        };
                        let samples = samples_of(&series.data.times, column);
                        if samples.is_empty() {
                            continue;
                        }
                        let one = Series {
                            labels: labels_of(&mut series.tags, name, left == 0),
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
        }
        Ok(())
    }

    fn summarize_each(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        self.summarize(matchers, start_ms, end_ms, visit)
    }
}

/// A series' labels for the metric `name`: its tags and `__name__`. The series' last
/// metric takes the tags (`last`) instead of a copy (two strings a tag).
pub(super) fn labels_of(tags: &mut Vec<(String, String)>, name: &str, last: bool) -> Labels {
    let mut pairs = if last {
        std::mem::take(tags)
    } else {
        tags.clone()
    };
    pairs.push((METRIC_LABEL.to_string(), name.to_string()));
    Labels::new(pairs)
}

/// Of samples with equal times (adjacent: times ascend), keeps the last.
fn keep_last_per_time(samples: &mut Vec<(i64, f64)>) {
    let mut kept = 0;
    for i in 0..samples.len() {
        if i + 1 < samples.len() && samples[i + 1].0 == samples[i].0 {
            continue;
        }
        samples[kept] = samples[i];
        kept += 1;
    }
    samples.truncate(kept);
}

/// A column's samples as PromQL sees them (booleans are 0 and 1; strings have none), in
/// milliseconds; several rows within one millisecond are one sample, the last row's.
pub(super) fn samples_of(times: &[i64], column: &Column) -> Vec<(i64, f64)> {
    fn gather<T: Copy>(
        times: &[i64],
        column: &Column,
        values: &[T],
        f: impl Fn(T) -> f64,
    ) -> Vec<(i64, f64)> {
        let mut out: Vec<(i64, f64)> = Vec::with_capacity(values.len());
        // Every row with a value, converted in one pass the compiler can unroll; then, only
        // if two rows share a millisecond, the earlier ones dropped. Times ascend, so when
        // the first is not negative none is, and an unsigned division (a multiply and a
        // shift) rounds down as `div_euclid` does, without its sign corrections.
        let convert = |out: &mut Vec<(i64, f64)>, ms: fn(i64) -> i64| match &column.present {
            None => out.extend(
                times
                    .iter()
                    .zip(values)
                    .map(|(time, value)| (ms(*time), f(*value))),
            ),
            Some(present) => out.extend(
                times
                    .iter()
                    .zip(present)
                    .filter(|(_, here)| **here)
                    .zip(values)
                    .map(|((time, _), value)| (ms(*time), f(*value))),
            ),
        };
        if times.first().is_none_or(|t| *t >= 0) {
            convert(&mut out, |t| (t as u64 / 1_000_000) as i64);
        } else {
            convert(&mut out, |t| t.div_euclid(1_000_000));
        }
        if out
            .windows(2)
            .fold(false, |shared, w| shared | (w[0].0 == w[1].0))
        {
            keep_last_per_time(&mut out);
        }
        out
    }
    match &column.values {
        Values::Float(v) => gather(times, column, v, |x| x),
        Values::Integer(v) => gather(times, column, v, |x| x as f64),
        Values::Unsigned(v) => gather(times, column, v, |x| x as f64),
        Values::Boolean(v) => gather(times, column, v, |x| f64::from(u8::from(x))),
        Values::String(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_take_the_last_row_of_each_millisecond_and_skip_absent_values() {
        let times = [
            1_000_000, 1_500_000, 2_000_000, 2_999_999, 4_000_000, 5_000_000,
        ];
        let full = Column {
            field: 0,
            values: Values::Float(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            present: None,
        };
        assert_eq!(
            samples_of(&times, &full),
            [(1, 2.0), (2, 4.0), (4, 5.0), (5, 6.0)]
        );
        let sparse = Column {
            field: 0,
            values: Values::Integer(vec![10, 30, 60]),
            present: Some(vec![true, false, true, false, false, true]),
        };
        assert_eq!(
            samples_of(&times, &sparse),
            [(1, 10.0), (2, 30.0), (5, 60.0)]
        );
        let flags = Column {
            field: 0,
            values: Values::Boolean(vec![true, false]),
            present: Some(vec![false, false, false, false, true, true]),
        };
        assert_eq!(samples_of(&times, &flags), [(4, 1.0), (5, 0.0)]);
        // Before 1970: milliseconds round down, also where later rows are after 1970.
        assert_eq!(
            samples_of(
                &[-1_500_000, -1, 0, 999_999_999],
                &Column {
                    field: 0,
                    values: Values::Float(vec![1.0, 2.0, 3.0, 4.0]),
                    present: None,
                }
            ),
            [(-2, 1.0), (-1, 2.0), (0, 3.0), (999, 4.0)]
        );
        assert_eq!(
            samples_of(
                &[-1],
                &Column {
                    field: 0,
                    values: Values::Float(vec![7.0]),
                    present: None,
                }
            ),
            [(-1, 7.0)]
        );
    }
}
