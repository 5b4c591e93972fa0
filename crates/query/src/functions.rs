//! Time-series SQL functions added to DataFusion's.
//!
//! - `time_bucket(interval, time [, origin])`: another name of DataFusion's
//!   `date_bin(interval, time [, origin])` (buckets aligned on the Unix epoch unless an
//!   origin is given). It is the same function registered under an alias, so plans and
//!   result column names say `date_bin`. TimescaleDB's `time_bucket` aligns week buckets on
//!   Monday 2000-01-03; here, as in `date_bin`, they align on the epoch (a Thursday): pass
//!   an origin for Monday weeks.

use datafusion::prelude::SessionContext;

/// Adds Strata's functions to `context`.
pub(crate) fn register(context: &SessionContext) {
    let date_bin = datafusion::functions::datetime::date_bin();
    context.register_udf(date_bin.as_ref().clone().with_aliases(["time_bucket"]));
}
