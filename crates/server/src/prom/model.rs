//! How Prometheus' data model maps onto Strata's (see `docs/prometheus.md`).

/// The label holding the metric name; it names the table.
pub const METRIC_LABEL: &str = "__name__";

/// The float field a Prometheus sample is stored in.
pub const VALUE_FIELD: &str = "value";

/// The database remote write and the imports write into when the request names none.
pub const DEFAULT_DATABASE: &str = "prometheus";

/// Milliseconds since the epoch (Prometheus' timestamps) in nanoseconds (Strata's), or
/// `None` past the range of a nanosecond `i64` (years 1677 to 2262).
pub fn ms_to_ns(ms: i64) -> Option<i64> {
    ms.checked_mul(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millisecond_times_scale_or_are_refused() {
        assert_eq!(ms_to_ns(1), Some(1_000_000));
        assert_eq!(ms_to_ns(-1), Some(-1_000_000));
        assert_eq!(ms_to_ns(i64::MAX / 1_000_000 + 1), None);
    }
}
