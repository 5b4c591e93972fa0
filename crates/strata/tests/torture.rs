//! Crash torture: the real server is started, loaded (HTTP and TCP writers, SQL and InfluxQL
//! deletes, queries, a backup) and SIGKILLed at a random moment, over and over on the same
//! data directory, each time in another WAL sync mode. After every restart the server's
//! rows are checked against a model of everything acknowledged: every acknowledged row is
//! there exactly once with its value, no deleted row comes back, no row appears that was
//! never sent, an unanswered delete happened whole or not at all, and a row found after one
//! restart is found after every later one (TCP rows, which have no acknowledgement, are
//! settled that way).
//! Deletes flush the memtables, so parts, merges, catalog tombstones, series-log records
//! (a new series every 200 rows) and series retirements are all written while the kills
//! land; every restart replays the WAL and compacts. At the end of each data directory the
//! server stops gracefully, and every backup taken is restored and checked: one that was
//! acknowledged holds every row stored before it began and none deleted before it; one cut
//! off by a kill is refused by `strata restore` or, if it had finished, checked the same.
//!
//! The same torture runs with simulated power cuts instead of SIGKILL (see
//! `torture/powerloss.rs`), each WAL sync mode held to its own promise.
//!
//! CI runs a few kills and cuts. Long runs (docs/reliability.md):
//! `STRATA_TORTURE_KILLS=1000 STRATA_TEST_BINARY=target/release/strata cargo test -p strata
//! --test torture sigkill -- --nocapture`; `STRATA_TORTURE_SEED` picks the random sequence
//! (printed on failure), `STRATA_TORTURE_KILLS_PER_DIR` how many kills share a data
//! directory. For power cuts the variables start `STRATA_POWERCUT_` and the filter is
//! `power_cuts`.

#![allow(clippy::unwrap_used)]

mod common;
#[path = "torture/load.rs"]
mod load;
#[path = "torture/model.rs"]
mod model;
#[path = "torture/powerloss.rs"]
mod powerloss;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Server, strata};
use load::{Rng, Shared};
use model::{Model, Tally};
use powerloss::PowerCut;

/// WAL sync modes, one per kill in turn: every promise is tried against SIGKILL (which
/// loses nothing acknowledged in any of them: the page cache survives a process crash).
const WAL_SYNC: [&str; 3] = ["always", "20ms", "none"];
/// Kills land this long after the load starts: from mid-start-up work to a busy server.
const KILL_AFTER_MS: std::ops::Range<u64> = 10..700;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

#[test]
fn sigkill_at_random_moments_loses_no_acknowledged_row_and_resurrects_no_deleted_one() {
    torture(Crash::Process);
}

/// Power cuts (see `torture/powerloss.rs`), the disk keeping only what was fsynced, in each
/// WAL sync mode in turn, each held to its promise: with `always` every acknowledged row
/// is kept, as through a process crash; with `20ms` and `none` an acknowledged row may be
/// lost until a flush (every delete makes one) has put it in fsynced parts. In every mode
/// an acknowledged delete holds, an unanswered one is whole or not at all, and nothing
/// comes back or appears that should not. Backups taken under the load are cut too, and held
/// to the same rule as through a process crash.
#[test]
fn power_cuts_at_random_moments_keep_what_each_wal_sync_mode_promises() {
    torture(Crash::Power);
}

/// The first rows of a new data directory, acknowledged with `--wal-sync always` before
/// anything is flushed, survive a power cut: the directories that hold the WAL and the
/// series log were made durable when they were created.
#[test]
fn a_power_cut_before_the_first_flush_keeps_the_acknowledged_rows() {
    assert_eq!(rows_kept_by_a_power_cut("always", Duration::ZERO), 100);
}

/// `--wal-sync <interval>` promises that a power cut loses at most the last interval of
/// acknowledged writes: rows acknowledged well before the cut, with no flush since, are
/// kept (the WAL sync thread fsynced them).
#[test]
fn a_power_cut_keeps_rows_acknowledged_an_interval_before() {
    assert_eq!(
        rows_kept_by_a_power_cut("50ms", Duration::from_millis(500)),
        100
    );
}

/// Starts a server on a new data directory with `--wal-sync sync`, writes 100 rows, waits
/// `pause`, then cuts the power at the server's next durable step (the next write brings
/// one: its fsync, or the timed fsync after it). Returns how many of the rows the disk kept.
fn rows_kept_by_a_power_cut(sync: &str, pause: Duration) -> usize {
    let dir = common::data_dir();
    let work = common::data_dir();
    let cut = PowerCut::before_run(dir.path(), &work.path().join("power"));
    let env = cut.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = Server::start_with_env(dir.path(), &["--wal-sync", sync], &env);
    let rows: String = (0..100)
        .map(|i| format!("m,host=h{} v={i} {i}\n", i % 3))
        .collect();
    assert_eq!(server.post("/write?db=strata", &rows).status, 204);
    std::thread::sleep(pause);
    std::fs::write(cut.cut_file(), b"").unwrap();
    let _ = load::call(
        server.http,
        "POST",
        "/write?db=strata",
        "text/plain",
        b"m v=1 1000",
    );
    server.wait();
    cut.apply();
    common::stored_rows(dir.path(), "strata", "m").len()
}

/// How the server goes down.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Crash {
    /// SIGKILL: the page cache survives, in every WAL sync mode.
    Process,
    /// A power cut: only what was fsynced survives.
    Power,
}

fn torture(crash: Crash) {
    let (prefix, kills) = match crash {
        Crash::Process => ("STRATA_TORTURE", 9),
        Crash::Power => ("STRATA_POWERCUT", 6),
    };
    let kills = setting(&format!("{prefix}_KILLS"), kills);
    let per_dir = setting(&format!("{prefix}_KILLS_PER_DIR"), 9).max(1);
    let seed = setting(&format!("{prefix}_SEED"), 0x5EED_2026);
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let mut total = Tally::default();
    let mut backups = Backups::default();
    let mut done = 0;
    while done < kills {
        let round = per_dir.min(kills - done);
        let run = Run::new(seed, done, crash);
        let (tally, checked) = run.go(round, &mut rng);
        done += round;
        backups.answered += checked.answered;
        backups.cut_off_refused += checked.cut_off_refused;
        backups.cut_off_finished += checked.cut_off_finished;
        add(&mut total, &tally);
        eprintln!(
            "torture ({prefix}): {done}/{kills} kills, {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    eprintln!(
        "torture ({prefix}): seed {seed:#x}: {kills} kills in {:.0} s; {} rows acknowledged, {} rows \
         checked after restarts, {} rows in flight at a kill found stored and {} not, {} \
         deletes acknowledged and {} cut off by a kill; backups: {} acknowledged and checked, \
         {} cut off and refused by restore, {} cut off after finishing and checked; rows \
         acknowledged unsynced at a power cut: {} found stored and {} not; 0 errors",
        started.elapsed().as_secs_f64(),
        total.rows_acknowledged,
        total.rows_checked,
        total.maybe_found,
        total.maybe_missing,
        total.deletes_acknowledged,
        total.deletes_unanswered,
        backups.answered,
        backups.cut_off_refused,
        backups.cut_off_finished,
        total.unsynced_found,
        total.unsynced_missing,
    );
    assert!(total.rows_acknowledged > 0 && total.deletes_acknowledged > 0 || kills < 3);
}

fn add(total: &mut Tally, tally: &Tally) {
    total.rows_acknowledged += tally.rows_acknowledged;
    total.rows_checked += tally.rows_checked;
    total.maybe_found += tally.maybe_found;
    total.maybe_missing += tally.maybe_missing;
    total.deletes_acknowledged += tally.deletes_acknowledged;
    total.deletes_unanswered += tally.deletes_unanswered;
    total.unsynced_found += tally.unsynced_found;
    total.unsynced_missing += tally.unsynced_missing;
}

/// Backups restored: acknowledged ones, and ones cut off by a kill that `strata restore`
/// refused or (having finished) restored.
#[derive(Debug, Default)]
struct Backups {
    answered: u64,
    cut_off_refused: u64,
    cut_off_finished: u64,
}

/// Kills on one data directory.
struct Run {
    /// `state/data` (the data directory) and `state/backups`, all a power cut acts on, and
    /// `power`, the power-cut model's scratch space.
    root: tempfile::TempDir,
    model: Arc<Mutex<Model>>,
    /// What the last killed server wrote to stderr.
    killed_stderr: Mutex<String>,
    /// Names the run in failures: the seed and the kills before it.
    name: String,
    crash: Crash,
}

impl Drop for Run {
    /// A failed run leaves its data directory and backups behind for a look.
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.root.disable_cleanup(true);
            eprintln!(
                "torture: kept the data directory {} and the backups {}",
                self.dir().display(),
                self.backups().display()
            );
        }
    }
}

impl Run {
    fn new(seed: u64, kills_before: u64, crash: Crash) -> Run {
        let root = common::data_dir();
        std::fs::create_dir_all(root.path().join("state/backups")).unwrap();
        Run {
            root,
            model: Arc::new(Mutex::new(Model::new())),
            killed_stderr: Mutex::default(),
            name: format!("seed {seed:#x}, kills before this data directory: {kills_before}"),
            crash,
        }
    }

    fn dir(&self) -> PathBuf {
        self.root.path().join("state/data")
    }

    fn backups(&self) -> PathBuf {
        self.root.path().join("state/backups")
    }

    /// `kills` start-load-kill-check rounds, then a graceful stop and the backups' checks.
    /// Returns the tally and the number of backups checked.
    fn go(self, kills: u64, rng: &mut Rng) -> (Tally, Backups) {
        for kill in 0..kills {
            let sync = WAL_SYNC[(kill % WAL_SYNC.len() as u64) as usize];
            let cut = (self.crash == Crash::Power).then(|| {
                PowerCut::before_run(
                    &self.root.path().join("state"),
                    &self.root.path().join("power"),
                )
            });
            self.model.lock().unwrap().acks_durable =
                self.crash == Crash::Process || sync == "always";
            let env = cut.as_ref().map(PowerCut::env).unwrap_or_default();
            let server = self.start_with_env(&["--wal-sync", sync], &env);
            self.check(&server, &format!("restart before kill {kill}"));
            self.model.lock().unwrap().start_load();
            let shared = Shared {
                model: Arc::clone(&self.model),
                failures: Arc::default(),
                stop: Arc::new(AtomicBool::new(false)),
                http: server.http,
            };
            let backup =
                (rng.below(2) == 0).then(|| (kill, self.backups().join(format!("b{kill}"))));
            let threads = load::start(&shared, server.tcp.unwrap(), backup, rng);
            std::thread::sleep(Duration::from_millis(
                KILL_AFTER_MS.start + rng.below(KILL_AFTER_MS.end - KILL_AFTER_MS.start),
            ));
            let stderr = server.stderr();
            match &cut {
                None => {
                    server.kill9();
                }
                // The shim cuts the power at the server's next durable operation.
                Some(cut) => {
                    std::fs::write(cut.cut_file(), b"").unwrap();
                    server.wait();
                }
            }
            *self.killed_stderr.lock().unwrap() = format!("(--wal-sync {sync})\n{stderr}");
            shared.stop.store(true, std::sync::atomic::Ordering::SeqCst);
            for thread in threads {
                thread.join().unwrap();
            }
            let failures = shared.failures.lock().unwrap().clone();
            assert!(
                failures.is_empty(),
                "{} (kill {kill}, --wal-sync {sync}): the load failed:\n{}\nserver stderr:\n{stderr}",
                self.name,
                failures.join("\n")
            );
            if let Some(cut) = cut {
                cut.apply();
            }
        }
        let server = self.start(&[]);
        self.check(&server, "the last restart");
        let stderr = server.stderr();
        assert_eq!(server.stop().code(), Some(0), "{stderr}");
        let backups = self.check_backups();
        let tally = self.model.lock().unwrap().tally.clone();
        (tally, backups)
    }

    fn start(&self, extra: &[&str]) -> Server {
        self.start_with_env(extra, &[])
    }

    fn start_with_env(&self, extra: &[&str], env: &[(String, String)]) -> Server {
        let mut flags = vec!["--tcp", "127.0.0.1:0", "--tcp-db", "strata"];
        flags.extend_from_slice(extra);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Server::start_with_env(&self.dir(), &flags, &env)
    }

    /// Checks the rows of a freshly started server and settles the uncertain ones.
    fn check(&self, server: &Server, when: &str) {
        let csv = all_rows(server.http, when);
        let errors = self.model.lock().unwrap().check_and_settle(&csv);
        assert!(
            errors.is_empty(),
            "{}, {when}:\n{}\nserver stderr:\n{}\nthe killed server's stderr {}",
            self.name,
            errors.join("\n"),
            server.stderr(),
            self.killed_stderr.lock().unwrap()
        );
    }

    /// Restores every backup into a new directory and checks what it holds.
    fn check_backups(&self) -> Backups {
        let mut counts = Backups::default();
        let model = self.model.lock().unwrap();
        for (id, expectation, answered) in &model.backups_done {
            let from = self.backups().join(format!("b{id}"));
            let to = self.backups().join(format!("restored-{id}"));
            let restore = strata(&[
                "restore",
                "--from",
                from.to_str().unwrap(),
                "--data-dir",
                to.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&restore.stderr);
            if !restore.status.success() {
                assert!(
                    !answered && stderr.contains("is not a finished backup"),
                    "{}: restore of backup {id} (answered: {answered}) failed: {stderr}",
                    self.name
                );
                counts.cut_off_refused += 1;
                continue;
            }
            if *answered {
                counts.answered += 1;
            } else {
                counts.cut_off_finished += 1;
            }
            let server = Server::start(&to, &[]);
            let errors = model.check_backup(expectation, &all_rows(server.http, "restore"));
            assert!(
                errors.is_empty(),
                "{}: backup {id} (answered: {answered}):\n{}",
                self.name,
                errors.join("\n")
            );
            assert_eq!(server.stop().code(), Some(0));
        }
        counts
    }
}

/// Every row of the load's table, as CSV lines `w,host,t,v` without the header.
fn all_rows(http: std::net::SocketAddr, when: &str) -> String {
    let query = "SELECT w, host, CAST(time AS BIGINT) AS t, v FROM m";
    let (status, body) = load::sql(http, query).unwrap();
    if load::table_missing(status, &body) {
        return String::new(); // nothing written yet
    }
    assert_eq!(status, 200, "{when}: {body}");
    let count = load::sql(http, "SELECT count(*) FROM m").unwrap().1;
    let rows = body.split_once('\n').map_or("", |(_, rows)| rows);
    assert_eq!(
        count.lines().nth(1),
        Some(rows.lines().count().to_string().as_str()),
        "{when}: the listing is complete"
    );
    rows.to_owned()
}
