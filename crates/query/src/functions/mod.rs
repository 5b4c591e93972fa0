//! Time-series SQL functions added to DataFusion's.
//!
//! - `time_bucket(interval, time [, origin])`: another name of DataFusion's
//!   `date_bin(interval, time [, origin])` (buckets aligned on the Unix epoch unless an
//!   origin is given). It is the same function registered under an alias, so plans and
//!   result column names say `date_bin`. TimescaleDB's `time_bucket` aligns week buckets on
//!   Monday 2000-01-03; here, as in `date_bin`, they align on the epoch (a Thursday): pass
//!   an origin for Monday weeks.
//! - `first(x)` / `last(x)` (also `first(x, t)`): the value of `x` at the earliest / latest
//!   time; see [`first_last`].
//! - `current_database()`, `current_schema()`, `version()`: for SQL clients; see
//!   [`session`]. `variance(x)`: Postgres's name of `var_samp(x)`.
//! - `repeat`, `lpad`, `rpad`, `array_repeat`, `array_resize`, `regexp_replace`,
//!   `replace`, `array_to_string` and `to_char` are DataFusion's, bounded: see [`bounded`].
//!   `to_char` also reads Postgres's templates (`'YYYY-MM-DD'`): see `pg_to_char`.
//! - Postgres's `mod`, `div`, `width_bucket` (see `pg_math`), `md5` and `sha224` …
//!   `sha512` (see `pg_hash`).
//! - `LIKE … ESCAPE 'c'` with any escape character, not only `\`, and tags matched
//!   against computed patterns: see `like`.

pub mod bounded;
mod bounded_lists;
pub(crate) mod first_last;
mod like;
mod pg_hash;
mod pg_math;
mod pg_to_char;
mod rewrite;
pub mod session;

use std::sync::Arc;

use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

use first_last::{End, FirstLast};
use session::{SessionFunction, SessionValue};

/// Adds Strata's functions to `context`.
pub(crate) fn register(context: &SessionContext) {
    bounded::register(context);
    pg_math::register(context);
    pg_hash::register(context);
    let date_bin = datafusion::functions::datetime::date_bin();
    context.register_udf(date_bin.as_ref().clone().with_aliases(["time_bucket"]));
    // Postgres's name of the sample variance (DataFusion's `var`, `var_samp`).
    if let Ok(var) = context.udaf("var_samp") {
        context.register_udaf(var.as_ref().clone().with_aliases(["variance"]));
    }
    context.register_udaf(AggregateUDF::new_from_impl(FirstLast::new(End::First)));
    context.register_udaf(AggregateUDF::new_from_impl(FirstLast::new(End::Last)));
    for value in [
        SessionValue::Database,
        SessionValue::Schema,
        SessionValue::Version,
    ] {
        context.register_udf(ScalarUDF::new_from_impl(SessionFunction::new(value)));
    }
}

/// Adds Strata's SQL functions (`time_bucket`, `first`, `last`) to any DataFusion context,
/// e.g. one over in-memory tables used to check Strata's answers.
pub fn register_functions(context: &mut SessionContext) -> datafusion::common::Result<()> {
    register(context);
    register_rewrites(context)
}

/// Adds Strata's analyzer rewrites (`first(x)` → `first(x, time)`, `LIKE`'s escape
/// characters) to `registry`.
pub(crate) fn register_rewrites(
    registry: &mut dyn FunctionRegistry,
) -> datafusion::common::Result<()> {
    registry.register_function_rewrite(Arc::new(rewrite::AddTimeArgument))?;
    registry.register_function_rewrite(Arc::new(like::LikeAsPostgres))
}
