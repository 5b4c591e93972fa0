//! Latency percentiles and process figures (CPU time, peak memory) for reports.

use std::time::Duration;

/// A sorted set of latencies.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    sorted: Vec<Duration>,
}

impl Latencies {
    /// Takes the samples (any order).
    pub fn new(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        Self { sorted: samples }
    }

    /// Number of samples.
    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    /// The `p`-th percentile (0..=100), nearest rank; zero when empty.
    pub fn percentile(&self, p: f64) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }

    /// Smallest sample.
    pub fn min(&self) -> Duration {
        self.sorted.first().copied().unwrap_or_default()
    }

    /// Largest sample.
    pub fn max(&self) -> Duration {
        self.sorted.last().copied().unwrap_or_default()
    }

    /// Mean.
    pub fn mean(&self) -> Duration {
        if self.sorted.is_empty() {
            return Duration::ZERO;
        }
        self.sorted.iter().sum::<Duration>() / self.sorted.len() as u32
    }
}

/// Peak resident memory of this process in bytes (`VmHWM`), if the OS tells.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM:").map(|kib| kib * 1024)
}

/// Current resident memory of this process in bytes (`VmRSS`), if the OS tells.
pub fn rss_bytes() -> Option<u64> {
    proc_status_kib("VmRSS:").map(|kib| kib * 1024)
}

fn proc_status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time (user + system) this process has used, if the OS tells.
pub fn process_cpu_time() -> Option<Duration> {
    // /proc/self/stat fields 14 and 15 are utime and stime in clock ticks; the tick is
    // 100 Hz on every Linux configuration we run on (USER_HZ).
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(Duration::from_millis((utime + stime) * 10))
}

/// A process to read figures of: this one, or another by id (the server under load).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// This process (`/proc/self`).
    Current,
    /// Another process (`/proc/<pid>`).
    Pid(u32),
}

impl Process {
    fn proc_file(self, name: &str) -> Option<String> {
        let path = match self {
            Self::Current => format!("/proc/self/{name}"),
            Self::Pid(pid) => format!("/proc/{pid}/{name}"),
        };
        std::fs::read_to_string(path).ok()
    }

    fn status_kib(self, key: &str) -> Option<u64> {
        let status = self.proc_file("status")?;
        let line = status.lines().find(|l| l.starts_with(key))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// CPU time (user + system) used so far.
    pub fn cpu_time(self) -> Option<Duration> {
        // Fields 14 and 15 of stat are utime and stime in clock ticks (USER_HZ = 100 on
        // every Linux configuration we run on).
        let stat = self.proc_file("stat")?;
        let after_name = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let utime: u64 = fields.get(11)?.parse().ok()?;
        let stime: u64 = fields.get(12)?.parse().ok()?;
        Some(Duration::from_millis((utime + stime) * 10))
    }

    /// Resident memory now, bytes (`VmRSS`).
    pub fn rss_bytes(self) -> Option<u64> {
        self.status_kib("VmRSS:").map(|kib| kib * 1024)
    }

    /// Peak resident memory, bytes (`VmHWM`).
    pub fn peak_rss_bytes(self) -> Option<u64> {
        self.status_kib("VmHWM:").map(|kib| kib * 1024)
    }

    /// Bytes this process caused to be written to storage (`write_bytes` of `/proc/…/io`).
    pub fn write_bytes(self) -> Option<u64> {
        let io = self.proc_file("io")?;
        let line = io.lines().find(|l| l.starts_with("write_bytes:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }
}

/// Total size of the files under `dir`, recursively.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let l = Latencies::new((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(l.count(), 100);
        assert_eq!(l.min(), Duration::from_millis(1));
        assert_eq!(l.max(), Duration::from_millis(100));
        assert_eq!(l.percentile(50.0), Duration::from_millis(50));
        assert_eq!(l.percentile(99.0), Duration::from_millis(99));
        assert_eq!(l.percentile(99.9), Duration::from_millis(100));
        assert_eq!(l.percentile(0.0), Duration::from_millis(1));
        assert_eq!(l.mean(), Duration::from_micros(50_500));
        assert_eq!(Latencies::default().percentile(50.0), Duration::ZERO);
    }

    #[test]
    fn process_figures_are_readable_here() {
        assert!(peak_rss_bytes().unwrap() >= rss_bytes().unwrap() / 2);
        assert!(process_cpu_time().is_some());
        let dir = std::env::temp_dir().join(format!("strata-dir-bytes-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a"), [0u8; 10]).unwrap();
        std::fs::write(dir.join("sub/b"), [0u8; 5]).unwrap();
        assert_eq!(dir_bytes(&dir), 15);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn process_figures_by_pid_match_self() {
        let me = Process::Pid(std::process::id());
        assert!(me.rss_bytes().unwrap() > 0);
        assert!(me.peak_rss_bytes().unwrap() >= me.rss_bytes().unwrap() / 2);
        assert!(me.cpu_time().is_some());
        assert!(Process::Current.write_bytes().is_some());
        // No such process: every figure is absent, not zero.
        let gone = Process::Pid(u32::MAX - 1);
        assert_eq!(gone.cpu_time(), None);
        assert_eq!(gone.rss_bytes(), None);
        assert_eq!(gone.write_bytes(), None);
    }
}
