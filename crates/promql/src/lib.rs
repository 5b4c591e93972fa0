//! PromQL for Strata. Queries are parsed by `promql-parser` (GreptimeDB's) and evaluated
//! here, step by step as Prometheus 2.x does, over the series a [`Source`] selects: the
//! server's source reads them from the storage engine with the label matchers and the time
//! range pushed down, so only the series and samples a query needs are read.
//!
//! Values are evaluated for every step of a query at once: an instant vector is a list of
//! series, each with one optional value per step ([`eval`]); range vectors are series of
//! raw samples, windowed per step by the range functions ([`functions`]); [`aggregate`] and
//! [`binary`] combine them. The semantics follow Prometheus 2.42 (closed range windows,
//! the 5-minute lookback, stale markers), which the differential test compares against.

pub mod aggregate;
pub mod binary;
pub mod eval;
pub mod functions;
mod labels;
mod summarized;
mod text_checks;

pub use labels::Labels;
pub use promql_parser::label::{MatchOp, Matcher};
pub use text_checks::MAX_NESTING;

/// Prometheus' stale marker: a NaN with this payload ends a series.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

/// Whether `value` is Prometheus' stale marker.
pub fn is_stale(value: f64) -> bool {
    value.to_bits() == STALE_NAN_BITS
}

/// The default lookback of an instant selector (Prometheus' `--query.lookback-delta`).
pub const DEFAULT_LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// The step of a subquery that gives none (Prometheus' default evaluation interval).
pub const DEFAULT_SUBQUERY_STEP_MS: i64 = 60 * 1000;

/// The longest duration, and the farthest time from the epoch, a query may name (ms):
/// about 31,700 years. Anything beyond is clamped (durations) or refused (times).
pub const MAX_SPAN_MS: i64 = 1_000_000_000_000_000;

/// The longest query text accepted (bytes). Expressions nest as deep as their text is
/// long, and evaluating (and freeing) them recurses; 64 KiB stays far inside the stack.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// A series a [`Source`] returns: its labels (`__name__` among them) and its samples, sorted
/// by time (milliseconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Labels, sorted by name.
    pub labels: Labels,
    /// (milliseconds, value), ascending by time.
    pub samples: Vec<(i64, f64)>,
}

/// Pre-aggregates of a run of stored samples (a source's whole chunk): what `count`,
/// `sum`, `avg`, `min` and `max` over a window need without the samples. A run holds no
/// NaN (stale markers included) and no two samples in one millisecond.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleRun {
    /// Samples.
    pub count: u64,
    /// Their sum (in the source's order; exact for integers).
    pub sum: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// A series' samples in one window as a source can give them cheaply: runs it
/// pre-aggregated, and the other samples (times not inside any run's span).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSummary {
    /// Labels, sorted by name.
    pub labels: Labels,
    /// Pre-aggregated runs.
    pub runs: Vec<SampleRun>,
    /// The other samples, by time.
    pub samples: Vec<(i64, f64)>,
}

/// Where series come from.
pub trait Source {
    /// Every series matching all of `matchers` with its samples in `[start_ms, end_ms]`
    /// (series without a sample there may be left out).
    fn select(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Vec<Series>, Error>;

    /// As [`Source::select`], handing the series to `visit` one at a time, in any order, so
    /// that a range function can window each while its samples are in cache and drop them.
    /// A source that reads series one by one should override it; this one selects them all
    /// first.
    fn select_each(
        &self,
        matchers: &[Matcher],
        start_ms: i64,
        end_ms: i64,
        visit: &mut dyn FnMut(Series) -> Result<(), Error>,
    ) -> Result<(), Error> {
        for series in self.select(matchers, start_ms, end_ms)? {
            visit(series)?;
        }
        Ok(())
    }

    /// Every series matching all of `matchers` with samples in `[start_ms, end_ms]`,
    /// summarized ([`WindowSummary`]) and handed to `visit`; `Ok(false)` when the source
    /// cannot summarize this selection (the caller then drops what it was handed and
    /// reads samples). Lets `count`, `sum`, `avg`, `min` and `max` `_over_time` of a long
    /// window read pre-aggregates instead of every sample. The default cannot.
    fn summarize_each(
        &self,
        _matchers: &[Matcher],
        _start_ms: i64,
        _end_ms: i64,
        _visit: &mut dyn FnMut(WindowSummary) -> Result<(), Error>,
    ) -> Result<bool, Error> {
        Ok(false)
    }
}

/// Why a query failed, with Prometheus' error type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The query does not parse or is not valid PromQL (`bad_data`, HTTP 400).
    #[error("{0}")]
    BadData(String),
    /// Valid PromQL that Strata does not evaluate yet (`bad_data`, HTTP 400).
    #[error("{0} is not supported by Strata yet")]
    Unsupported(String),
    /// The evaluation failed (`execution`, HTTP 422): duplicate series, a limit.
    #[error("{0}")]
    Execution(String),
    /// The storage failed (`internal`, HTTP 500).
    #[error("{0}")]
    Internal(String),
    /// The query ran past its deadline (`timeout`, HTTP 503).
    #[error("{0}")]
    Timeout(String),
    /// Too many queries run or wait (`unavailable`, HTTP 503).
    #[error("{0}")]
    Unavailable(String),
    /// The caller gave up (its client disconnected); nobody reads the answer.
    #[error("query cancelled")]
    Cancelled,
}

/// Limits on one query (Prometheus' `--query.max-samples`, plus a series cap), and when it
/// must stop: its deadline, or its caller giving up.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Samples a query may hold at once (raw samples read plus values computed).
    pub max_samples: usize,
    /// Series a selector may return.
    pub max_series: usize,
    /// When the query times out, and the timeout (for the message).
    pub deadline: Option<(std::time::Instant, std::time::Duration)>,
    /// Set by the caller to stop the query (its client went away).
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_samples: 50_000_000,
            max_series: 1_000_000,
            deadline: None,
            cancel: None,
        }
    }
}

impl Limits {
    /// Fails once the query is cancelled or past its deadline; the evaluator asks between
    /// series and steps, so a query stops within one series' work.
    pub fn check(&self) -> Result<(), Error> {
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        {
            return Err(Error::Cancelled);
        }
        if let Some((at, limit)) = self.deadline
            && std::time::Instant::now() >= at
        {
            return Err(Error::Timeout(format!(
                "query timed out in expression evaluation (the query timeout is {limit:?})"
            )));
        }
        Ok(())
    }
}

/// What a query answers.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryValue {
    /// A scalar at a time (ms).
    Scalar(i64, f64),
    /// A string at a time (ms).
    String(i64, String),
    /// Instant vector: (labels, time ms, value).
    Vector(Vec<(Labels, i64, f64)>),
    /// Range vector / range query result: series with their (time ms, value) points.
    Matrix(Vec<(Labels, Vec<(i64, f64)>)>),
}

/// Parses a PromQL expression.
pub fn parse(query: &str) -> Result<promql_parser::parser::Expr, Error> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(Error::BadData(format!(
            "the query is {} bytes, over the limit of {MAX_QUERY_BYTES}",
            query.len()
        )));
    }
    text_checks::check(query)?;
    promql_parser::parser::parse(query).map_err(|e| Error::BadData(format!("parse error: {e}")))
}

/// Checks that query times are within [`MAX_SPAN_MS`] of the epoch.
fn check_time(ms: i64, name: &str) -> Result<(), Error> {
    if ms.abs() > MAX_SPAN_MS {
        return Err(Error::BadData(format!(
            "the {name} time {ms} ms is too far from the epoch"
        )));
    }
    Ok(())
}

/// Evaluates `query` at `time_ms` (Prometheus' `/api/v1/query`).
pub fn instant_query(
    source: &dyn Source,
    query: &str,
    time_ms: i64,
    lookback_ms: i64,
    limits: Limits,
) -> Result<QueryValue, Error> {
    check_time(time_ms, "query")?;
    let expr = parse(query)?;
    eval::Evaluator::new(source, time_ms, time_ms, 1, lookback_ms, limits).instant(&expr)
}

/// Evaluates `query` at every step from `start_ms` to `end_ms` (Prometheus'
/// `/api/v1/query_range`); the answer is a matrix sorted by labels.
pub fn range_query(
    source: &dyn Source,
    query: &str,
    start_ms: i64,
    end_ms: i64,
    step_ms: i64,
    lookback_ms: i64,
    limits: Limits,
) -> Result<QueryValue, Error> {
    if step_ms <= 0 {
        return Err(Error::BadData(
            "zero or negative query resolution step widths are not accepted. Try a positive integer".into(),
        ));
    }
    if end_ms < start_ms {
        return Err(Error::BadData(
            "end timestamp must not be before start time".into(),
        ));
    }
    check_time(start_ms, "start")?;
    check_time(end_ms, "end")?;
    let expr = parse(query)?;
    eval::Evaluator::new(
        source,
        start_ms,
        end_ms,
        step_ms.min(MAX_SPAN_MS),
        lookback_ms,
        limits,
    )
    .range(&expr)
}
