//! What the crash torture test knows about every row it ever sent: stored for sure, gone
//! for sure, or either (sent or deleted when the server died), and the check of a server's
//! rows (or a restored backup's) against that knowledge.
//!
//! Every row is identified by its writer and a sequence number, from which its series,
//! time and value follow, so a stored row that is wrong in any way is told apart from one
//! that was never sent.

use std::ops::Range;

/// Writers: `h0` and `h1` write over HTTP, `t2` over the TCP line-protocol listener.
pub const WRITERS: [&str; 3] = ["h0", "h1", "t2"];
/// The TCP writer's index in [`WRITERS`].
pub const TCP_WRITER: usize = 2;
/// Time of sequence number 0: 2026-01-01T00:00:00Z.
const BASE_NS: i64 = 1_767_225_600_000_000_000;
/// One row a second: a few thousand rows span several one-day partitions.
const STEP_NS: i64 = 1_000_000_000;
/// Rows per series: new series (series-log writes) appear all the time, and deletes empty
/// whole series (series retirement).
const ROWS_PER_SERIES: u64 = 200;
/// Errors listed before the rest are only counted.
const ERRORS_SHOWN: usize = 20;

/// The line-protocol line of a writer's row `seq`.
pub fn line(writer: usize, seq: u64) -> String {
    format!(
        "m,w={},host=s{} v={}i {}\n",
        WRITERS[writer],
        seq / ROWS_PER_SERIES,
        value(writer, seq),
        time_ns(seq)
    )
}

/// The time of row `seq`, in nanoseconds.
pub fn time_ns(seq: u64) -> i64 {
    BASE_NS + seq as i64 * STEP_NS
}

fn value(writer: usize, seq: u64) -> i64 {
    seq as i64 * 7 + writer as i64
}

/// What is known of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Acknowledged (or seen by a query while written) and not deleted: must be stored.
    Present,
    /// Found stored after a restart though never acknowledged: must stay stored.
    Found,
    /// Deleted with an acknowledged delete, or found missing after a crash: must never be
    /// stored again.
    Absent,
    /// Its write or its delete was in flight (or refused): stored or not, until the next
    /// check says which.
    Maybe,
    /// Acknowledged in a WAL sync mode that fsyncs later, while power cuts are the crash:
    /// it may be lost, unless a delete sent after its acknowledgement was acknowledged
    /// (a delete flushes every memtable into fsynced parts first).
    Unsynced,
}

/// One writer's rows, by sequence number; `len()` rows were issued.
#[derive(Debug, Default, Clone)]
pub struct WriterRows {
    pub known: Vec<Known>,
    /// Every write below this one has been answered (or has failed): deletes stay below it
    /// so that they never race a write in flight.
    pub completed: u64,
    /// No row below this one is [`Known::Unsynced`].
    synced_below: u64,
}

/// A delete that got no answer: it happened entirely or not at all.
#[derive(Debug)]
struct UnansweredDelete {
    writer: usize,
    /// The rows it covered that were stored for sure when it was sent.
    present: Vec<u64>,
    /// Each writer's `completed` when it was sent: the rows below were answered before, so
    /// its flush made them durable.
    completed_at_send: Vec<u64>,
}

/// A backup in flight or taken: what it must and must not hold.
#[derive(Debug, Clone)]
pub struct BackupExpectation {
    /// Known state of every row when the backup was asked for.
    pub at_start: Vec<Vec<Known>>,
    /// Deletes sent while it ran (writer, rows): they may or may not be in it.
    pub concurrent_deletes: Vec<(usize, Range<u64>)>,
}

/// Counters for the report.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub rows_acknowledged: u64,
    pub rows_checked: u64,
    pub maybe_found: u64,
    pub maybe_missing: u64,
    pub deletes_acknowledged: u64,
    pub deletes_unanswered: u64,
    /// Rows acknowledged but not yet fsynced at a power cut (`--wal-sync` 20ms or none),
    /// found stored after it and not.
    pub unsynced_found: u64,
    pub unsynced_missing: u64,
}

/// Everything the test knows.
#[derive(Debug)]
pub struct Model {
    pub writers: Vec<WriterRows>,
    unanswered_deletes: Vec<UnansweredDelete>,
    pub backups_in_flight: Vec<(u64, BackupExpectation)>,
    /// Backups whose request ended: (id, expectation, answered 200).
    pub backups_done: Vec<(u64, BackupExpectation, bool)>,
    pub tally: Tally,
    /// Whether an acknowledged row survives the crash: true for process crashes, and for
    /// power cuts with `--wal-sync always`.
    pub acks_durable: bool,
}

impl Model {
    pub fn new() -> Model {
        Model {
            writers: vec![WriterRows::default(); WRITERS.len()],
            unanswered_deletes: Vec::new(),
            backups_in_flight: Vec::new(),
            backups_done: Vec::new(),
            tally: Tally::default(),
            acks_durable: true,
        }
    }

    /// Reserves the next `n` rows of `writer`, in flight until answered.
    pub fn issue(&mut self, writer: usize, n: u64) -> Range<u64> {
        let rows = &mut self.writers[writer];
        let start = rows.known.len() as u64;
        rows.known
            .extend(std::iter::repeat_n(Known::Maybe, n as usize));
        start..start + n
    }

    /// The write of `range` was acknowledged.
    pub fn acknowledged(&mut self, writer: usize, range: Range<u64>) {
        self.tally.rows_acknowledged += range.end - range.start;
        let known = if self.acks_durable {
            Known::Present
        } else {
            Known::Unsynced
        };
        for seq in range {
            self.writers[writer].known[seq as usize] = known;
        }
    }

    /// Every write of `writer` below `upto` has been answered.
    pub fn completed(&mut self, writer: usize, upto: u64) {
        self.writers[writer].completed = upto;
    }

    /// A delete of `range` of `writer` is about to be sent: the rows it covers become
    /// uncertain until it is answered (or the next check).
    pub fn delete_sent(&mut self, writer: usize, range: Range<u64>) {
        let mut present = Vec::new();
        for seq in range.clone() {
            let known = &mut self.writers[writer].known[seq as usize];
            if matches!(*known, Known::Present | Known::Found) {
                present.push(seq);
            }
            if *known != Known::Absent {
                *known = Known::Maybe;
            }
        }
        let completed_at_send = self.writers.iter().map(|w| w.completed).collect();
        self.unanswered_deletes.push(UnansweredDelete {
            writer,
            present,
            completed_at_send,
        });
        for (_, backup) in &mut self.backups_in_flight {
            backup.concurrent_deletes.push((writer, range.clone()));
        }
    }

    /// Backup `id` was asked for now.
    pub fn backup_started(&mut self, id: u64) {
        let at_start = self.writers.iter().map(|w| w.known.clone()).collect();
        let expectation = BackupExpectation {
            at_start,
            concurrent_deletes: Vec::new(),
        };
        self.backups_in_flight.push((id, expectation));
    }

    /// Backup `id`'s request ended (`answered`: with 200; else the server went away). A
    /// backup still in flight when the server dies is ended by [`Model::start_load`].
    pub fn backup_ended(&mut self, id: u64, answered: bool) {
        if let Some(i) = self.backups_in_flight.iter().position(|(b, _)| *b == id) {
            let (_, expectation) = self.backups_in_flight.remove(i);
            self.backups_done.push((id, expectation, answered));
        }
    }

    /// The last delete sent was acknowledged: every row of `range` is gone for good.
    pub fn delete_acknowledged(&mut self, writer: usize, range: Range<u64>) {
        if let Some(delete) = self.unanswered_deletes.pop() {
            for (rows, completed) in self.writers.iter_mut().zip(delete.completed_at_send) {
                for seq in rows.synced_below..completed {
                    let known = &mut rows.known[seq as usize];
                    if *known == Known::Unsynced {
                        *known = Known::Present;
                    }
                }
                rows.synced_below = rows.synced_below.max(completed);
            }
        }
        self.tally.deletes_acknowledged += 1;
        for seq in range {
            self.writers[writer].known[seq as usize] = Known::Absent;
        }
    }

    /// Before a new load: every write issued so far has been answered or has failed.
    pub fn start_load(&mut self) {
        for (id, expectation) in std::mem::take(&mut self.backups_in_flight) {
            self.backups_done.push((id, expectation, false));
        }
        for rows in &mut self.writers {
            rows.completed = rows.known.len() as u64;
        }
    }

    /// Checks the rows a restarted server holds (lines `w,host,t,v` of CSV, without the
    /// header) and settles every uncertain row by what it holds. Returns the errors.
    pub fn check_and_settle(&mut self, csv: &str) -> Vec<String> {
        let (seen, mut errors) = self.index(csv);
        for (writer, rows) in self.writers.iter().enumerate() {
            for (seq, known) in rows.known.iter().enumerate() {
                let found = seen[writer][seq];
                match known {
                    Known::Present if !found => errors.push(format!(
                        "acknowledged row lost: {}",
                        line(writer, seq as u64).trim_end()
                    )),
                    Known::Found if !found => errors.push(format!(
                        "row found after an earlier restart lost: {}",
                        line(writer, seq as u64).trim_end()
                    )),
                    Known::Absent if found => errors.push(format!(
                        "deleted (or lost) row came back: {}",
                        line(writer, seq as u64).trim_end()
                    )),
                    _ => {}
                }
            }
        }
        for delete in &self.unanswered_deletes {
            let kept = delete
                .present
                .iter()
                .filter(|&&seq| seen[delete.writer][seq as usize])
                .count();
            if kept != 0 && kept != delete.present.len() {
                errors.push(format!(
                    "an unanswered delete of {} rows of {} was half applied: {kept} kept",
                    delete.present.len(),
                    WRITERS[delete.writer]
                ));
            }
        }
        self.tally.deletes_unanswered += self.unanswered_deletes.len() as u64;
        self.unanswered_deletes.clear();
        for (writer, rows) in self.writers.iter_mut().enumerate() {
            for (seq, known) in rows.known.iter_mut().enumerate() {
                if matches!(*known, Known::Maybe | Known::Unsynced) {
                    let found = seen[writer][seq];
                    let tally = match (*known, found) {
                        (Known::Maybe, true) => &mut self.tally.maybe_found,
                        (Known::Maybe, false) => &mut self.tally.maybe_missing,
                        (_, true) => &mut self.tally.unsynced_found,
                        (_, false) => &mut self.tally.unsynced_missing,
                    };
                    *tally += 1;
                    *known = if found { Known::Found } else { Known::Absent };
                }
            }
            rows.synced_below = rows.known.len() as u64;
        }
        self.tally.rows_checked += seen.iter().flatten().filter(|&&s| s).count() as u64;
        shorten(errors)
    }

    /// Checks the rows of a restored backup against what it had to hold.
    pub fn check_backup(&self, expected: &BackupExpectation, csv: &str) -> Vec<String> {
        let (seen, mut errors) = self.index(csv);
        let deleted_meanwhile = |writer: usize, seq: u64| {
            expected
                .concurrent_deletes
                .iter()
                .any(|(w, range)| *w == writer && range.contains(&seq))
        };
        for (writer, known) in expected.at_start.iter().enumerate() {
            for (seq, known) in known.iter().enumerate() {
                let found = seen[writer][seq];
                let row = || line(writer, seq as u64).trim_end().to_owned();
                match known {
                    Known::Present | Known::Found
                        if !found && !deleted_meanwhile(writer, seq as u64) =>
                    {
                        errors.push(format!("backup lacks a row stored before it: {}", row()))
                    }
                    Known::Absent if found => {
                        errors.push(format!("backup holds a row deleted before it: {}", row()))
                    }
                    _ => {}
                }
            }
        }
        shorten(errors)
    }

    /// Parses CSV rows into "seen" flags per writer and row, with an error for every row
    /// that was never sent, is stored twice, or differs from what was sent.
    fn index(&self, csv: &str) -> (Vec<Vec<bool>>, Vec<String>) {
        let mut seen: Vec<Vec<bool>> = self
            .writers
            .iter()
            .map(|rows| vec![false; rows.known.len()])
            .collect();
        let mut errors = Vec::new();
        for text in csv.lines().filter(|l| !l.is_empty()) {
            match self.locate(text) {
                Ok((writer, seq)) if seen[writer][seq as usize] => {
                    errors.push(format!("row stored twice: {text}"));
                }
                Ok((writer, seq)) => seen[writer][seq as usize] = true,
                Err(why) => errors.push(format!("{why}: {text}")),
            }
        }
        (seen, errors)
    }

    /// The writer and sequence number of a CSV row `w,host,t,v`, if it is exactly a row
    /// that was sent.
    fn locate(&self, text: &str) -> Result<(usize, u64), &'static str> {
        let fields: Vec<&str> = text.split(',').collect();
        let [w, host, t, v] = fields[..] else {
            return Err("not a row of 4 columns");
        };
        let writer = WRITERS
            .iter()
            .position(|name| *name == w)
            .ok_or("unknown writer")?;
        let t: i64 = t.parse().map_err(|_| "time is not an integer")?;
        if t < BASE_NS || (t - BASE_NS) % STEP_NS != 0 {
            return Err("a time no row was sent with");
        }
        let seq = ((t - BASE_NS) / STEP_NS) as u64;
        if seq >= self.writers[writer].known.len() as u64 {
            return Err("a row that was never sent");
        }
        if line(writer, seq) != format!("m,w={w},host={host} v={v}i {t}\n") {
            return Err("a row whose series or value differs from what was sent");
        }
        Ok((writer, seq))
    }
}

fn shorten(mut errors: Vec<String>) -> Vec<String> {
    if errors.len() > ERRORS_SHOWN {
        let more = errors.len() - ERRORS_SHOWN;
        errors.truncate(ERRORS_SHOWN);
        errors.push(format!("... and {more} more"));
    }
    errors
}
