//! Out-of-order rows: a seeded share of rows arrives late, after newer rows of its series.
//!
//! taosBenchmark's "disorder ratio" moves a row's timestamp back; doing that literally would
//! overwrite another row of the same series (the meters step is 1 ms), so here the row keeps
//! its timestamp and its *arrival* moves instead: a chosen row is held back until the row
//! `k` places after it in its series has come (k uniform in 1..=N), so when it arrives its
//! timestamp is up to k intervals older than the newest row of its series (a held row
//! whose successors were all held too may still arrive in order). Every row is written
//! exactly once; the same seed holds back the same rows by the same amounts.

use crate::rng::Rng;

/// Holds back a share of rows and releases them later; see the module docs.
#[derive(Debug, Clone)]
pub struct Disorder {
    ratio: f64,
    max_intervals: u64,
    rng: Rng,
    /// Rows pushed so far, per series.
    pushed: Vec<u64>,
    /// Held rows per series: (release when `pushed` reaches this, the line).
    held: Vec<Vec<(u64, Vec<u8>)>>,
    held_rows: u64,
}

impl Disorder {
    /// For `series` series (indices `0..series`); `ratio` in [0, 1] of rows held back by up
    /// to `max_intervals` rows of their series.
    pub fn new(series: usize, ratio: f64, max_intervals: u64, seed: u64) -> Self {
        Self {
            ratio: ratio.clamp(0.0, 1.0),
            max_intervals,
            rng: Rng::new(seed ^ 0x0D15_0DE5),
            pushed: vec![0; series],
            held: vec![Vec::new(); series],
            held_rows: 0,
        }
    }

    /// Rows held back so far (the out-of-order rows).
    pub fn held_rows(&self) -> u64 {
        self.held_rows
    }

    /// Takes one row's `line` (with its newline) of `series`; appends to `out` whatever is
    /// due now and returns how many lines were appended.
    pub fn push(&mut self, series: usize, line: &[u8], out: &mut Vec<u8>) -> usize {
        if series >= self.pushed.len() {
            self.pushed.resize(series + 1, 0);
            self.held.resize(series + 1, Vec::new());
        }
        self.pushed[series] += 1;
        let now = self.pushed[series];
        let mut appended = 0;
        if self.max_intervals > 0 && self.ratio > 0.0 && self.rng.next_f64() < self.ratio {
            let k = 1 + self.rng.below(self.max_intervals);
            self.held[series].push((now + k, line.to_vec()));
            self.held_rows += 1;
        } else {
            out.extend_from_slice(line);
            appended += 1;
        }
        let held = &mut self.held[series];
        let mut i = 0;
        // Bounded by the held rows of this series.
        while i < held.len() {
            if held[i].0 <= now {
                let (_, line) = held.swap_remove(i);
                out.extend_from_slice(&line);
                appended += 1;
            } else {
                i += 1;
            }
        }
        appended
    }

    /// Appends every row still held (the end of the stream); returns how many.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> usize {
        let mut appended = 0;
        for held in &mut self.held {
            held.sort_by_key(|(release, _)| *release);
            for (_, line) in held.drain(..) {
                out.extend_from_slice(&line);
                appended += 1;
            }
        }
        appended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines `s<series> <t>` for `series` series x `rows` instants, instant-major.
    fn stream(series: usize, rows: u64, disorder: &mut Disorder) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        let mut emitted = 0;
        for t in 0..rows {
            for s in 0..series {
                emitted += disorder.push(s, format!("{s} {t}\n").as_bytes(), &mut out);
            }
        }
        emitted += disorder.finish(&mut out);
        let parsed: Vec<(usize, u64)> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| {
                let (s, t) = l.split_once(' ').unwrap();
                (s.parse().unwrap(), t.parse().unwrap())
            })
            .collect();
        assert_eq!(parsed.len(), emitted);
        parsed
    }

    #[test]
    fn every_row_once_ratio_respected_within_n_intervals() {
        let (series, rows, n) = (20, 500, 5);
        let mut disorder = Disorder::new(series, 0.1, n, 7);
        let lines = stream(series, rows, &mut disorder);
        let mut sorted = lines.clone();
        sorted.sort_unstable();
        let expected: Vec<(usize, u64)> = (0..series)
            .flat_map(|s| (0..rows).map(move |t| (s, t)))
            .collect();
        assert_eq!(sorted, expected, "every row exactly once");

        // Late rows: older than the newest already written of their series.
        let mut newest = vec![None::<u64>; series];
        let mut late = 0u64;
        for &(s, t) in &lines {
            match newest[s] {
                Some(max) if t < max => {
                    late += 1;
                    // Except at the very end (finish), a late row is at most n behind.
                    if max < rows - 1 {
                        assert!(max - t <= n, "row {s}/{t} arrived {} late", max - t);
                    }
                }
                _ => newest[s] = Some(t),
            }
        }
        let total = (series as u64) * rows;
        let held = disorder.held_rows();
        let ratio = held as f64 / total as f64;
        assert!((0.09..0.11).contains(&ratio), "held ratio {ratio}");
        // A held row whose successors were held too can still arrive in order: rare.
        assert!(
            late <= held && late as f64 >= 0.95 * held as f64,
            "{late} late of {held}"
        );
    }

    #[test]
    fn seeded_and_zero_ratio_is_identity() {
        let a = stream(3, 100, &mut Disorder::new(3, 0.3, 4, 1));
        let b = stream(3, 100, &mut Disorder::new(3, 0.3, 4, 1));
        let c = stream(3, 100, &mut Disorder::new(3, 0.3, 4, 2));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut none = Disorder::new(3, 0.0, 4, 1);
        let in_order = stream(3, 100, &mut none);
        let expected: Vec<(usize, u64)> = (0..100u64)
            .flat_map(|t| (0..3).map(move |s| (s, t)))
            .collect();
        assert_eq!(in_order, expected);
        assert_eq!(none.held_rows(), 0);
    }
}
