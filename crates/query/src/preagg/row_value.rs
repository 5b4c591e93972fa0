//! [`AggKind::RowValue`]: the value of the earliest or latest row of a group, null when that
//! row lacks it — DataFusion's `first_value(x ORDER BY time ..)`, which `SELECT DISTINCT ON
//! (host) * .. ORDER BY host, time DESC` (TSBS `lastpoint`) turns into. From a whole chunk
//! the answer is its first or last row, from the pre-aggregates when every row has the
//! field; elsewhere from the decoded rows.

use datafusion::common::ScalarValue;
use strata_storage::SeriesSummary;
use strata_storage::part::{ChunkMeta, PreAgg};

use super::plan::{AggKind, AggSpec, OrderKey, ValueSource};
use crate::functions::first_last::End;

/// The best row so far: its time and value (`None`: the row lacks the value).
pub(crate) type Best = Option<(i64, Option<ScalarValue>)>;

/// Whether `row` (time, value) replaces `best` for `end`. Ties keep the row seen first: they
/// happen only between series of one group at the same time, where DataFusion's own answer
/// is any of them too.
/// The value is only computed (allocated) when the row wins.
pub(crate) fn offer(
    best: &mut Best,
    end: End,
    time: i64,
    value: impl FnOnce() -> Option<ScalarValue>,
) {
    let better = match best {
        None => true,
        Some((t, _)) => match end {
            End::First => time < *t,
            End::Last => time > *t,
        },
    };
    if better {
        *best = Some((time, value()));
    }
}

/// Whether a whole chunk tells the row value without decoding.
pub(crate) fn chunk_usable(spec: &AggSpec, chunk: &ChunkMeta) -> bool {
    if spec.source != ValueSource::Field {
        return true;
    }
    let Some((field, _)) = spec.field else {
        return false;
    };
    match chunk.column(field) {
        // No row of the chunk has the field: its edge row's value is null.
        None => true,
        Some(column) => {
            column.presence.is_none() && !matches!(column.preagg, PreAgg::String { .. })
        }
    }
}

/// The value of a series' row at `time` from its source, given the field's value there.
fn value(
    spec: &AggSpec,
    series: &SeriesSummary,
    time: i64,
    field_value: Option<ScalarValue>,
) -> Option<ScalarValue> {
    match &spec.source {
        ValueSource::Field => field_value,
        ValueSource::Time => Some(ScalarValue::TimestampNanosecond(Some(time), None)),
        ValueSource::Tag(name) => series
            .tags
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| ScalarValue::Utf8(Some(v.clone()))),
    }
}

/// Offers a whole chunk's edge row.
pub(crate) fn fold_chunk(
    spec: &AggSpec,
    best: &mut Best,
    series: &SeriesSummary,
    chunk: &ChunkMeta,
) {
    let AggKind::RowValue(end) = spec.kind else {
        return;
    };
    let (time, first) = match end {
        End::First => (chunk.min_time, true),
        End::Last => (chunk.max_time, false),
    };
    offer(best, end, time, || {
        let field_value = spec
            .field
            .and_then(|(field, _)| chunk.column(field))
            .and_then(|column| super::values::preagg_edge(&column.preagg, first));
        value(spec, series, time, field_value)
    });
}

/// Offers the edge row `row` of a run of decoded rows; `field_value` is the field's value in
/// that row, if any.
pub(crate) fn fold_row(
    spec: &AggSpec,
    best: &mut Best,
    series: &SeriesSummary,
    time: i64,
    field_value: Option<ScalarValue>,
) {
    let AggKind::RowValue(end) = spec.kind else {
        return;
    };
    offer(best, end, time, || value(spec, series, time, field_value));
}

/// Part `part` of the state: the value, then one entry per ordering key, then "is set".
/// `group_tags` are the group's tag values (the GROUP BY tags, in order).
pub(crate) fn state_part(
    spec: &AggSpec,
    best: &Best,
    part: usize,
    group_tags: &[Option<String>],
    null: &ScalarValue,
) -> ScalarValue {
    if part == 0 {
        return best
            .as_ref()
            .and_then(|(_, v)| v.clone())
            .unwrap_or_else(|| null.clone());
    }
    match spec.orderings.get(part - 1) {
        Some(OrderKey::Time) => {
            ScalarValue::TimestampNanosecond(best.as_ref().map(|(t, _)| *t), None)
        }
        Some(OrderKey::GroupTag(index)) => {
            ScalarValue::Utf8(group_tags.get(*index).cloned().flatten())
        }
        None => ScalarValue::Boolean(Some(best.is_some())),
    }
}
