//! Top-n over time buckets. A statement ordered first by a time bucket with a LIMIT —
//! `… GROUP BY minute ORDER BY minute DESC LIMIT 5` (TSBS groupby-orderby-limit: the newest
//! five minutes before a time, with no lower bound) — needs only its newest (or, ascending,
//! oldest) buckets, not every row since the beginning.
//!
//! So the range is narrowed to the last `k` whole buckets before its end (first `k` after
//! its start, ascending) and folded; if that gives at least `n` groups, its top `n` are the
//! statement's top `n`: every group left out has an older bucket and sorts after all of
//! them, and every bucket kept is whole (the narrowed range starts on a bucket boundary), so
//! its aggregates are exact. Otherwise (empty buckets, a sparse range) `k` grows eightfold
//! and the fold is tried again, until the narrowed range would cover the statement's own.

use strata_storage::ReadRequest;

use super::DirectPlan;
use crate::preagg::bucket::{Grid, TimeKey};
use crate::preagg::plan::GroupKey;

/// Buckets the first try reads per row asked for: a few empty buckets still leave enough.
const FIRST_BUCKETS_PER_ROW: i64 = 2;
/// How much each further try widens the range.
const WIDEN: i64 = 8;

/// How a top-n statement's range is narrowed.
#[derive(Debug, Clone, Copy)]
pub(super) struct TopBuckets {
    grid: Grid,
    descending: bool,
    /// The LIMIT.
    pub rows: usize,
}

impl TopBuckets {
    /// The narrowing for `plan` over `request` (the plan's, or one given a lower bound by
    /// [`TopBuckets::wants_start`]), when it has one: a LIMIT, a first ORDER BY key that is
    /// a fixed-width time bucket, and a bound on the side the order starts from.
    pub(super) fn of(plan: &DirectPlan, request: &ReadRequest) -> Option<Self> {
        let (grid, descending, rows) = Self::shape(plan)?;
        let bounded = if descending {
            request.end < i64::MAX
        } else {
            request.start > i64::MIN
        };
        bounded.then_some(Self {
            grid,
            descending,
            rows,
        })
    }

    /// Whether `plan` is a top-n over ascending time buckets with no lower bound (InfluxQL's
    /// `GROUP BY time(1m) LIMIT 5` with only `time <`): it can be narrowed once its range
    /// starts at the oldest time stored (`Engine::earliest_time`) instead of the epoch's
    /// beginning.
    pub(super) fn wants_start(plan: &DirectPlan) -> bool {
        plan.request.start == i64::MIN && Self::shape(plan).is_some_and(|(_, desc, _)| !desc)
    }

    /// The time grid, direction and row count of a top-n over time buckets.
    fn shape(plan: &DirectPlan) -> Option<(Grid, bool, usize)> {
        let rows = plan.limit.filter(|n| *n > 0)?;
        let first = plan.order.first()?;
        let GroupKey::Time(TimeKey::Grid(grid)) = plan.preagg.groups.get(first.group)? else {
            return None;
        };
        Some((*grid, first.descending, rows))
    }

    /// The request of try `attempt` (0, 1, …): `request` narrowed to its newest (oldest)
    /// whole buckets; `None` once that would be no narrower than `request` itself.
    pub(super) fn narrowed(&self, request: &ReadRequest, attempt: u32) -> Option<ReadRequest> {
        if request.start >= request.end {
            return None;
        }
        let buckets = WIDEN
            .checked_pow(attempt)?
            .checked_mul(FIRST_BUCKETS_PER_ROW)?
            .checked_mul(i64::try_from(self.rows).ok()?)?;
        let span = buckets.checked_mul(self.grid.width)?;
        let mut narrowed = request.clone();
        if self.descending {
            // The oldest bucket kept starts `buckets - 1` widths before the newest one.
            let newest = self.grid.bucket(request.end - 1)?;
            let start = newest.checked_sub(span - self.grid.width)?;
            if start <= request.start {
                return None;
            }
            narrowed.start = start;
        } else {
            let end = self.grid.bucket(request.start)?.checked_add(span)?;
            if end >= request.end {
                return None;
            }
            narrowed.end = end;
        }
        Some(narrowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000_000_000;

    fn top(descending: bool, rows: usize) -> TopBuckets {
        TopBuckets {
            grid: Grid {
                width: MINUTE,
                origin: 0,
            },
            descending,
            rows,
        }
    }

    fn request(start: i64, end: i64) -> ReadRequest {
        ReadRequest {
            start,
            end,
            ..ReadRequest::all(0)
        }
    }

    #[test]
    fn newest_first_keeps_whole_buckets_before_the_end_and_widens() {
        let top = top(true, 5);
        // The end falls mid-minute: that minute is the newest bucket, partly in range.
        let all = request(i64::MIN, 1_000 * MINUTE + 7);
        let first = top.narrowed(&all, 0).expect("narrowed");
        assert_eq!((first.start, first.end), (991 * MINUTE, all.end));
        let second = top.narrowed(&all, 1).expect("narrowed");
        assert_eq!(second.start, (1_000 - 79) * MINUTE);
        // Once it would reach the request's own start, the request is read whole.
        assert!(top.narrowed(&request(990 * MINUTE, all.end), 0).is_some());
        assert!(top.narrowed(&request(991 * MINUTE, all.end), 0).is_none());
        assert!(
            top.narrowed(&request(995 * MINUTE + 1, all.end), 0)
                .is_none()
        );
        // Attempts past any range stop rather than overflow.
        assert!(top.narrowed(&all, 40).is_none());
    }

    #[test]
    fn oldest_first_keeps_whole_buckets_after_the_start() {
        let top = top(false, 2);
        let all = request(-10 * MINUTE - 3, i64::MAX);
        let first = top.narrowed(&all, 0).expect("narrowed");
        // The first bucket holds the start; four whole buckets from it.
        assert_eq!((first.start, first.end), (all.start, -7 * MINUTE));
        assert!(top.narrowed(&request(0, 4 * MINUTE), 0).is_none());
        assert!(top.narrowed(&request(5, 5), 0).is_none());
    }
}
