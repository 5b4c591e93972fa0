//! One series' aggregated buckets, kept as sorted vectors rather than a map of small
//! vectors: buckets almost always arrive in time order (SQL answers them grouped by series,
//! points come sorted by series and time), so adding one is a push, and the grid of a
//! filled answer is walked beside them with a cursor instead of a lookup per bucket.

use super::super::result::Value;

/// An aggregate call's value in a bucket, and the time of the point a selector chose.
pub(super) type Cell = (Value, Option<i64>);

/// The buckets of one series that have data: their start times, ascending, and per bucket
/// one [`Cell`] per aggregate call (`width` of them, bucket after bucket).
#[derive(Debug, Default)]
pub(super) struct SeriesBuckets {
    times: Vec<i64>,
    cells: Vec<Cell>,
    width: usize,
}

impl SeriesBuckets {
    /// No buckets yet; each will hold `width` cells.
    pub(super) fn new(width: usize) -> Self {
        SeriesBuckets {
            times: Vec::new(),
            cells: Vec::new(),
            width,
        }
    }

    /// Sets bucket `time` to `cells` (exactly `width` of them), replacing what it held.
    pub(super) fn insert(&mut self, time: i64, cells: impl IntoIterator<Item = Cell>) {
        let before = self.cells.len();
        match self.times.last() {
            Some(last) if *last >= time => match self.times.binary_search(&time) {
                Ok(i) => {
                    let at = i * self.width;
                    for (slot, cell) in self.cells[at..at + self.width].iter_mut().zip(cells) {
                        *slot = cell;
                    }
                }
                Err(i) => {
                    self.times.insert(i, time);
                    let at = i * self.width;
                    self.cells.splice(at..at, cells);
                }
            },
            _ => {
                self.times.push(time);
                self.cells.extend(cells);
            }
        }
        debug_assert!(
            self.cells.len() == before || self.cells.len() == before + self.width,
            "a bucket holds {} cells",
            self.width
        );
    }

    pub(super) fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// How many buckets have data.
    pub(super) fn len(&self) -> usize {
        self.times.len()
    }

    /// Bucket start times, ascending.
    pub(super) fn times(&self) -> &[i64] {
        &self.times
    }

    /// The cells of the `i`-th bucket.
    pub(super) fn cells(&self, i: usize) -> &[Cell] {
        &self.cells[i * self.width..(i + 1) * self.width]
    }

    /// A reader of buckets by ascending time.
    pub(super) fn walk(&self) -> Walk<'_> {
        Walk {
            buckets: self,
            next: 0,
        }
    }
}

/// Looks buckets up by times that never decrease (a grid), each in amortized O(1).
pub(super) struct Walk<'b> {
    buckets: &'b SeriesBuckets,
    next: usize,
}

impl<'b> Walk<'b> {
    /// The cells of bucket `time`, if it has data; `time` must be at least the last asked.
    pub(super) fn at(&mut self, time: i64) -> Option<&'b [Cell]> {
        let times = &self.buckets.times;
        while self.next < times.len() && times[self.next] < time {
            self.next += 1;
        }
        (self.next < times.len() && times[self.next] == time).then(|| self.buckets.cells(self.next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(v: i64) -> Vec<Cell> {
        vec![(Value::Integer(v), None), (Value::Integer(-v), Some(v))]
    }

    #[test]
    fn out_of_order_and_repeated_buckets_stay_sorted_and_last_wins() {
        let mut b = SeriesBuckets::new(2);
        for t in [10, 30, 20, 5, 30, 40] {
            b.insert(t, cells(t * 100 + b.len() as i64));
        }
        assert_eq!(b.times(), &[5, 10, 20, 30, 40]);
        // 30 was set twice: the second (the fifth insert, when 4 buckets existed) wins.
        assert_eq!(b.cells(3), &cells(3004)[..]);
        assert_eq!(b.cells(0), &cells(503)[..]);
        assert_eq!(b.cells(2), &cells(2002)[..]);
        let mut walk = b.walk();
        let found: Vec<i64> = (0..50).filter(|t| walk.at(*t).is_some()).collect();
        assert_eq!(found, vec![5, 10, 20, 30, 40]);
        assert_eq!(b.walk().at(40), Some(&cells(4004)[..]));
        assert_eq!(b.walk().at(41), None);
    }
}
