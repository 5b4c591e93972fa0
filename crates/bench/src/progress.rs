//! A progress bar on stderr while a load runs: rows done of the total and the rate.
//!
//! Drawn only when stderr is a terminal, and at most four times a second, so it costs the
//! loader nothing measurable and never litters a log file.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Time between two redraws: four a second at most.
const REDRAW_INTERVAL: Duration = Duration::from_millis(250);
/// Width of the bar in characters.
const BAR_WIDTH: usize = 30;

/// A running progress bar; [`Progress::finish`] stops it and clears the line.
pub struct Progress {
    done: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    drawer: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for `total` rows when stderr is a terminal; otherwise only counts.
    pub fn start(total: u64) -> Self {
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let drawer = std::io::stderr().is_terminal().then(|| {
            let done = Arc::clone(&done);
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let started = Instant::now();
                // Ends when `finish` sets `stop`.
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(REDRAW_INTERVAL);
                    let line = render(done.load(Ordering::Relaxed), total, started.elapsed());
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{line}");
                    let _ = err.flush();
                }
                let _ = write!(std::io::stderr().lock(), "\r{:width$}\r", "", width = 80);
            })
        });
        Self { done, stop, drawer }
    }

    /// The counter the loader advances by rows done.
    pub fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.done)
    }

    /// Stops drawing and clears the line.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(drawer) = self.drawer.take() {
            let _ = drawer.join();
        }
    }
}

/// One line of the bar: `[#####-----] 1234/5678 rows (21.7%)  456789 rows/s`; without a
/// total (0: a file read as the load goes), `1234 rows  456789 rows/s`.
pub fn render(done: u64, total: u64, elapsed: Duration) -> String {
    if total == 0 && done > 0 {
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
        return format!("{done} rows  {rate:.0} rows/s");
    }
    let fraction = if total == 0 {
        1.0
    } else {
        (done as f64 / total as f64).min(1.0)
    };
    let filled = (fraction * BAR_WIDTH as f64).round() as usize;
    let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
    format!(
        "[{}{}] {done}/{total} rows ({:.1}%)  {rate:.0} rows/s",
        "#".repeat(filled),
        "-".repeat(BAR_WIDTH - filled),
        fraction * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fraction_and_rate() {
        let line = render(250, 1000, Duration::from_secs(2));
        assert_eq!(
            line,
            format!(
                "[{}{}] 250/1000 rows (25.0%)  125 rows/s",
                "#".repeat(8),
                "-".repeat(22)
            )
        );
        assert!(render(0, 0, Duration::ZERO).contains("(100.0%)"));
        assert_eq!(
            render(500, 0, Duration::from_secs(2)),
            "500 rows  250 rows/s"
        );
        assert!(
            render(2000, 1000, Duration::from_secs(1))
                .starts_with(&format!("[{}]", "#".repeat(30)))
        );
    }
}
