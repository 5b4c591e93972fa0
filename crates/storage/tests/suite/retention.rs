//! Retention with an injected clock: ten days of rows in two databases, one kept three days
//! and one kept forever (or by the server default). Expired rows vanish from reads at once,
//! their partitions leave the disk at the next maintenance round, older writes are refused
//! and counted, and the setting survives restarts.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::engine_contents;
use strata_lineproto::Precision;
use strata_storage::{Clock, Engine, EngineOptions, ManualClock, Retention, WalSync};

const DAY_NS: i64 = 86_400_000_000_000;
/// Midnight UTC, so partitions (one day) start on whole days of the test.
const START_NS: i64 = 1_700_000_000_000_000_000 / DAY_NS * DAY_NS;
const STEP_NS: i64 = 3_600_000_000_000;
const DAYS: i64 = 10;

fn options(dir: &Path, clock: &Arc<ManualClock>, default: Option<Duration>) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        partition_duration: Duration::from_secs(86_400),
        retention: default,
        background: false,
        clock: Arc::clone(clock) as _,
        ..EngineOptions::default()
    }
}

/// One row an hour for `DAYS` days, for three hosts of `cpu` and one of `mem`.
fn ten_days() -> String {
    let mut body = String::new();
    for i in 0..DAYS * DAY_NS / STEP_NS {
        let time = START_NS + i * STEP_NS;
        for host in ["a", "b", "c"] {
            body.push_str(&format!("cpu,host={host} usage={i} {time}\n"));
        }
        body.push_str(&format!("mem,host=a used={i}i {time}\n"));
    }
    body
}

/// Every row time the engine returns for `database`, over all series.
fn times(engine: &Engine, database: &str) -> Vec<i64> {
    let mut times: Vec<i64> = engine_contents(engine, database)
        .values()
        .flat_map(|rows| rows.keys().copied())
        .collect();
    times.sort_unstable();
    times
}

/// The partitions (`p<n>` directories) on disk over every shard.
fn partitions_on_disk(dir: &Path) -> Vec<i64> {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(dir).unwrap().flatten() {
        if !shard.path().is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if let Some(n) = name.strip_prefix('p').and_then(|n| n.parse::<i64>().ok()) {
                found.push(n);
            }
        }
    }
    found.sort_unstable();
    found.dedup();
    found
}

#[test]
fn a_database_retention_hides_refuses_and_removes_old_rows() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
    let body = ten_days();
    for db in ["short", "long"] {
        let report = engine
            .write_lines(db, body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors.first());
    }
    engine.flush().unwrap();
    let all = times(&engine, "short");
    assert_eq!(all.len(), 4 * (DAYS * 24) as usize);
    let first_partition = START_NS / DAY_NS;
    assert_eq!(
        partitions_on_disk(dir.path()),
        (first_partition..first_partition + DAYS).collect::<Vec<_>>()
    );

    let three_days = Retention::Keep(Duration::from_secs(3 * 86_400));
    let err = engine
        .set_retention("nowhere", three_days)
        .expect_err("no such database");
    assert!(err.to_string().contains("not found"), "{err}");
    engine.set_retention("short", three_days).unwrap();
    assert_eq!(
        engine.retention("short"),
        Some(Duration::from_secs(3 * 86_400))
    );
    assert_eq!(engine.retention("long"), None);

    // Hidden at once, before any file changes: the horizon is exact to the nanosecond.
    let horizon = clock.now_ns() - 3 * DAY_NS;
    let expected: Vec<i64> = all.iter().copied().filter(|t| *t >= horizon).collect();
    assert_eq!(times(&engine, "short"), expected);
    assert_eq!(times(&engine, "long"), all);
    assert_eq!(
        partitions_on_disk(dir.path()).len(),
        DAYS as usize,
        "nothing removed before maintenance"
    );

    // Maintenance: the seven expired days of `short` go. Their partitions also hold
    // `long`'s rows, so the parts are rewritten, not deleted.
    engine.maintain().unwrap();
    let stats = engine.stats();
    assert!(stats.retention_parts_rewritten > 0, "{stats:?}");
    assert_eq!(stats.retention_parts_dropped, 0, "{stats:?}");
    assert_eq!(stats.retention_rows_dropped, 4 * 7 * 24, "{stats:?}");
    assert!(stats.retention_bytes_dropped > 0, "{stats:?}");
    assert_eq!(times(&engine, "short"), expected);
    assert_eq!(times(&engine, "long"), all);

    // A write older than the horizon is refused, named and counted; newer rows land.
    let late = format!(
        "cpu,host=a usage=1 {}\ncpu,host=z usage=2 {}\n",
        horizon - 1,
        horizon
    );
    let report = engine
        .write_lines("short", late.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert_eq!((report.rows, report.expired), (1, 1), "{report:?}");
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].line, 1);
    assert!(
        report.errors[0]
            .message
            .contains("beyond the retention policy"),
        "{}",
        report.errors[0].message
    );
    assert_eq!(engine.stats().retention_rows_rejected, 1);
    let mut expected = expected;
    expected.push(horizon);
    expected.sort_unstable();
    assert_eq!(times(&engine, "short"), expected);

    // Restart: the setting is in the catalog; the rows stay hidden and gone.
    engine.flush().unwrap();
    engine.close().unwrap();
    let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
    assert_eq!(engine.retention_setting("short"), three_days);
    assert_eq!(times(&engine, "short"), expected);

    // `long` expires too: its whole old partitions are deleted, not rewritten.
    engine
        .set_retention("long", Retention::Keep(Duration::from_secs(5 * 86_400)))
        .unwrap();
    engine.maintain().unwrap();
    let stats = engine.stats();
    assert!(stats.retention_parts_dropped > 0, "{stats:?}");
    let kept_from = (clock.now_ns() - 5 * DAY_NS) / DAY_NS;
    assert_eq!(
        partitions_on_disk(dir.path()),
        (kept_from..first_partition + DAYS).collect::<Vec<_>>(),
        "every partition that ended before the longer horizon is gone from disk"
    );

    // A day later (no restart, no setting change): one more day gone from reads and disk.
    clock.advance(Duration::from_secs(86_400));
    let horizon = clock.now_ns() - 3 * DAY_NS;
    assert!(times(&engine, "short").iter().all(|t| *t >= horizon));
    engine.maintain().unwrap();
    assert_eq!(partitions_on_disk(dir.path())[0], kept_from + 1);
}

#[test]
fn the_server_default_applies_unless_a_database_has_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let body = ten_days();
    {
        let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
        for db in ["kept", "default"] {
            engine
                .write_lines(db, body.as_bytes(), Precision::Nanoseconds)
                .unwrap();
        }
        engine.set_retention("kept", Retention::Forever).unwrap();
        engine.flush().unwrap();
        engine.close().unwrap();
    }
    let two_days = Some(Duration::from_secs(2 * 86_400));
    let (engine, _) = Engine::open(options(dir.path(), &clock, two_days)).unwrap();
    assert_eq!(engine.retention("default"), two_days);
    assert_eq!(engine.retention("kept"), None);
    assert_eq!(engine.default_retention(), two_days);
    let horizon = clock.now_ns() - 2 * DAY_NS;
    engine.maintain().unwrap();
    let kept = times(&engine, "kept");
    assert_eq!(kept.len(), 4 * (DAYS * 24) as usize);
    let default = times(&engine, "default");
    assert_eq!(
        default,
        kept.iter()
            .copied()
            .filter(|t| *t >= horizon)
            .collect::<Vec<_>>()
    );
    // Back to the server default: `kept` expires like the rest.
    engine
        .set_retention("kept", Retention::ServerDefault)
        .unwrap();
    assert_eq!(times(&engine, "kept"), default);
    engine.maintain().unwrap();
    assert!(engine.stats().retention_parts_dropped > 0);
    assert!(
        partitions_on_disk(dir.path())
            .iter()
            .all(|p| (p + 1) * DAY_NS > horizon),
        "{:?}",
        partitions_on_disk(dir.path())
    );
    // A zero retention is refused rather than read as "expire everything".
    let err = engine
        .set_retention("kept", Retention::Keep(Duration::ZERO))
        .expect_err("zero");
    assert!(err.to_string().contains("positive"), "{err}");
}

#[test]
fn series_whose_rows_all_expired_leave_the_series_index() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
    // Hosts `a`..`c` write all ten days; host `old` only the first two.
    let mut body = ten_days();
    for i in 0..48 {
        body.push_str(&format!(
            "cpu,host=old usage={i} {}\n",
            START_NS + i * STEP_NS
        ));
    }
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    let cpu = engine.table("db", "cpu").unwrap().id;
    let hosts = |engine: &Engine| engine.tag_values(cpu, "host");
    assert_eq!(hosts(&engine), ["a", "b", "c", "old"]);
    assert_eq!(engine.stats().series, 5);

    engine
        .set_retention("db", Retention::Keep(Duration::from_secs(3 * 86_400)))
        .unwrap();
    engine.maintain().unwrap();
    assert_eq!(hosts(&engine), ["a", "b", "c"], "`old` has no row left");
    let stats = engine.stats();
    assert_eq!((stats.series, stats.series_retired), (4, 1), "{stats:?}");

    // The retirement survives a restart; a new row of `old` makes the series again.
    engine.close().unwrap();
    let (engine, _) = Engine::open(options(dir.path(), &clock, None)).unwrap();
    assert_eq!(hosts(&engine), ["a", "b", "c"]);
    let now = clock.now_ns();
    engine
        .write_lines(
            "db",
            format!("cpu,host=old usage=7 {now}").as_bytes(),
            Precision::Nanoseconds,
        )
        .unwrap();
    assert_eq!(hosts(&engine), ["a", "b", "c", "old"]);
    let rows = engine_contents(&engine, "db");
    let old: Vec<_> = rows
        .iter()
        .filter(|((_, tags), _)| tags.iter().any(|(_, v)| v == "old"))
        .map(|(_, rows)| rows.keys().copied().collect::<Vec<_>>())
        .collect();
    assert_eq!(
        old,
        [vec![now]],
        "only the new row: nothing of the retired series comes back"
    );
}
