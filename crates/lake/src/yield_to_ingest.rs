//! Tiering gives way to heavy ingest: before each copy, a round looks at the engine's write
//! rate, and while it is above [`crate::LakeOptions::yield_above_rows_per_second`] waits,
//! up to [`crate::LakeOptions::max_yield_per_round`] in all per round (then copies anyway,
//! so that the lake never falls behind for long). A copy decodes a partition and encodes
//! Parquet: on a machine whose cores the load keeps busy it takes their time even at the
//! lowest priority (`docs/benchmarks.md`, "The lake").

use std::time::{Duration, Instant};

use strata_storage::Engine;

use crate::RoundStop;

/// How long a rate sample spans when the last one is too old to use.
const SAMPLE: Duration = Duration::from_millis(100);
/// A sample older than this is not used for the rate.
const SAMPLE_USABLE: Duration = Duration::from_secs(5);
/// How long one wait lasts before the rate is looked at again.
const WAIT: Duration = Duration::from_millis(500);

/// The engine's write rate, from the rows written between two looks.
#[derive(Debug, Default)]
pub(crate) struct IngestGauge {
    last: Option<(Instant, u64)>,
}

impl IngestGauge {
    /// Rows written a second, over the time since the last look (or a short sample when
    /// that is long ago).
    async fn rate(&mut self, engine: &Engine) -> f64 {
        let now = Instant::now();
        let rows = engine.stats().rows_written;
        let (then, before) = match self.last {
            Some((then, before)) if now.duration_since(then) <= SAMPLE_USABLE => (then, before),
            _ => {
                tokio::time::sleep(SAMPLE).await;
                let rows_after = engine.stats().rows_written;
                self.last = Some((Instant::now(), rows_after));
                return rows_after.saturating_sub(rows) as f64 / SAMPLE.as_secs_f64();
            }
        };
        self.last = Some((now, rows));
        let elapsed = now.duration_since(then).as_secs_f64().max(1e-3);
        rows.saturating_sub(before) as f64 / elapsed
    }

    /// Waits while the engine takes more than `above` rows a second, for at most
    /// `remaining` (what is left of the round's allowance) and until `stop`; returns how
    /// long it waited.
    pub(crate) async fn wait_for_quiet(
        &mut self,
        engine: &Engine,
        above: u64,
        remaining: Duration,
        stop: &RoundStop,
    ) -> Duration {
        let mut waited = Duration::ZERO;
        while waited < remaining
            && !stop.is_stopped()
            && should_yield(self.rate(engine).await, above)
        {
            tokio::time::sleep(WAIT).await;
            waited += WAIT;
        }
        waited
    }
}

/// Whether a write rate of `rate` rows a second is heavy enough to wait for (`above` 0:
/// never wait).
fn should_yield(rate: f64, above: u64) -> bool {
    above > 0 && rate > above as f64
}

#[cfg(test)]
mod tests {
    use super::should_yield;

    #[test]
    fn yields_only_above_the_threshold() {
        assert!(should_yield(150_000.0, 100_000));
        assert!(!should_yield(100_000.0, 100_000));
        assert!(!should_yield(0.0, 100_000));
        assert!(!should_yield(1e9, 0));
    }
}
