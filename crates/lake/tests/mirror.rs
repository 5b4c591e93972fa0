//! A read-only engine mirroring the lake (`strata serve --lake-read-only`): one engine
//! writes and tiers into a `file://` lake, another keeps every row local, and a third,
//! read-only and empty, mirrors the lake through a `LakeMirror`. Every seeded read over the
//! days the lake holds answers the same from the mirror as from the engine that kept its
//! rows: before and after late writes and deletes the next round copies, after the writer
//! drops a table, and from a mirror started again on an empty directory. The mirror refuses
//! writes, deletes and schema changes; a writable engine refuses to mirror.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use common::reads::{
    DAY_NS, DAYS, Rng, START_NS, assert_same, body, latest, request, rows, tier, write,
};
use strata_lake::{LakeMirror, LakeReader, parse_url};
use strata_lineproto::Precision;
use strata_storage::series::TagPredicate;
use strata_storage::{
    DeleteRequest, Engine, EngineOptions, ManualClock, ReadRequest, StorageError, WalSync,
};

/// The end of the days a round with the clock at `START_NS + DAYS * DAY_NS` copies.
const LAKE_END: i64 = START_NS + (DAYS - 1) * DAY_NS;

/// A test's engines, with the clock at the end of the last day.
struct Engines {
    /// Tiers into the lake at `root` and reads the days it released from it.
    writer: Arc<Engine>,
    /// Takes the same writes and keeps every row.
    local: Arc<Engine>,
    clock: Arc<ManualClock>,
    /// An empty directory for a mirror.
    mirror_dir: tempfile::TempDir,
    root: tempfile::TempDir,
    /// The engines' directories.
    _dirs: [tempfile::TempDir; 2],
}

fn engines() -> Engines {
    let dir = || tempfile::tempdir().unwrap();
    let dirs = [dir(), dir()];
    let (mirror_dir, root) = (dir(), dir());
    let clock = Arc::new(ManualClock::new(START_NS + DAYS * DAY_NS));
    let writer = common::open(dirs[0].path(), &clock);
    common::read_from(&writer, root.path());
    let local = common::open(dirs[1].path(), &clock);
    Engines {
        writer,
        local,
        clock,
        mirror_dir,
        root,
        _dirs: dirs,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A read-only engine on `dir` mirroring the lake at `root` (which holds `tables`),
/// refreshed once.
fn mirror(
    dir: &Path,
    root: &Path,
    clock: &Arc<ManualClock>,
    tables: usize,
) -> (Arc<Engine>, LakeMirror) {
    let url = parse_url(root.to_str().unwrap()).unwrap();
    let reader = Arc::new(LakeReader::new(url, HashMap::new()).unwrap());
    let mirror = LakeMirror::new(Arc::clone(&reader));
    let shards = mirror.lake_shards().unwrap().unwrap();
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards,
        wal_sync: WalSync::None,
        background: false,
        read_only: true,
        clock: Arc::clone(clock) as _,
        ..EngineOptions::default()
    })
    .unwrap();
    engine.set_cold_source(reader);
    let engine = Arc::new(engine);
    let report = mirror.refresh(&engine);
    assert!(report.failures.is_empty(), "{report:?}");
    assert!(
        report.series_added > 0 && report.tables == tables,
        "{report:?}"
    );
    (engine, mirror)
}

/// `request` over the days the lake holds only.
fn in_lake(mut request: ReadRequest) -> ReadRequest {
    request.end = request.end.min(LAKE_END);
    request.start = request.start.min(request.end);
    request
}

/// The same answers from the mirror and the engine that kept its rows, over the lake's days.
fn assert_same_reads(mirror: &Engine, local: &Engine, seed: u64, reads: usize) {
    let mut rng = Rng(seed);
    for n in 0..reads {
        let request = in_lake(request(local, &mut rng));
        let what = format!("read {n} (seed {seed}): {request:?}");
        assert_same(&rows(mirror, &request), &rows(local, &request), &what);
        let what = format!("latest {n} (seed {seed}): {request:?}");
        assert_same(&latest(mirror, &request), &latest(local, &request), &what);
    }
    for table in ["cpu", "mem"] {
        let Some(id) = local.table("db", table).map(|t| t.id) else {
            assert!(mirror.table("db", table).is_none(), "{table} is mirrored");
            continue;
        };
        let mirrored = mirror.table("db", table).unwrap();
        let all = in_lake(ReadRequest::all(mirrored.id));
        let local_all = in_lake(ReadRequest::all(id));
        assert_same(&rows(mirror, &all), &rows(local, &local_all), table);
        assert!(!rows(mirror, &all).is_empty(), "{table}: no rows mirrored");
        assert_eq!(mirror.earliest_time(&all), local.earliest_time(&local_all));
        assert_eq!(
            mirror.series_tags(mirrored.id),
            local.series_tags(id),
            "{table}: series"
        );
    }
}

/// The mirror has each of the writer's tables with the same tags and typed fields.
fn assert_same_schema(mirror: &Engine, writer: &Engine) {
    let columns = |engine: &Engine| {
        let mut tables: Vec<_> = engine
            .catalog()
            .tables("db")
            .iter()
            .map(|t| {
                let mut tags = t.tags.clone();
                tags.sort();
                let fields: Vec<_> = t
                    .fields
                    .iter()
                    .map(|f| (f.name.clone(), f.field_type))
                    .collect();
                (t.name.clone(), tags, fields)
            })
            .collect();
        tables.sort();
        tables
    };
    assert_eq!(columns(mirror), columns(writer));
}

fn assert_read_only(result: Result<impl std::fmt::Debug, StorageError>, what: &str) {
    match result {
        Err(StorageError::ReadOnly(message)) => {
            assert!(message.contains("read-only"), "{what}: {message}")
        }
        other => panic!("{what}: {other:?}"),
    }
}

#[test]
fn a_read_only_engine_answers_from_the_lake_alone() {
    let seed = std::env::var("STRATA_LAKE_READ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0c0f_fee5);
    let Engines {
        writer,
        local,
        clock,
        mirror_dir,
        root,
        _dirs,
    } = engines();
    write(&[&writer, &local], &body());
    let runtime = runtime();
    tier(&runtime, root.path(), &writer);

    let (mirror_engine, lake_mirror) = mirror(mirror_dir.path(), root.path(), &clock, 2);
    assert_eq!(mirror_engine.shard_count(), writer.shard_count());
    assert_eq!(mirror_engine.stats().parts, 0, "the mirror holds no rows");
    assert_same_schema(&mirror_engine, &writer);
    assert_same_reads(&mirror_engine, &local, seed, 40);
    // Nothing changed in the lake: a refresh registers nothing.
    let again = lake_mirror.refresh(&mirror_engine);
    assert_eq!(
        (again.series_added, again.copies_changed),
        (0, 0),
        "{again:?}"
    );

    // Writes, deletes and schema changes are refused; the writer refuses to mirror.
    let cpu = mirror_engine.table("db", "cpu").unwrap().id;
    assert_read_only(
        mirror_engine.write_lines("db", b"cpu,host=x usage=1 1", Precision::Nanoseconds),
        "write",
    );
    assert_read_only(
        mirror_engine.delete(&DeleteRequest {
            table: cpu,
            start: START_NS,
            end: LAKE_END,
            predicate: None,
        }),
        "delete",
    );
    assert_read_only(mirror_engine.create_database("other"), "create database");
    assert_read_only(mirror_engine.drop_table("db", "cpu"), "drop table");
    assert!(matches!(
        writer.mirror_table("db", "x", &[], &[]),
        Err(StorageError::Invalid(_))
    ));

    // A late write and a delete into the lake's days, then a round: the mirror sees the
    // replaced copies at its next refresh.
    let late = START_NS + DAY_NS + 5 * 60_000_000_000 + 7;
    write(
        &[&writer, &local],
        &format!(
            "cpu,host=h1,rack=r1 usage=-1.5 {late}\ncpu,host=new,zone=z1 usage=7.5,note=\"n\" {late}\n"
        ),
    );
    for engine in [&writer, &local] {
        engine
            .delete(&DeleteRequest {
                table: engine.table("db", "cpu").unwrap().id,
                start: START_NS + DAY_NS / 3,
                end: START_NS + DAY_NS / 2,
                predicate: Some(TagPredicate::Eq {
                    key: "rack".into(),
                    value: "r2".into(),
                }),
            })
            .unwrap();
    }
    tier(&runtime, root.path(), &writer);
    let refreshed = lake_mirror.refresh(&mirror_engine);
    assert!(refreshed.failures.is_empty(), "{refreshed:?}");
    assert!(
        refreshed.series_added == 1 && refreshed.copies_changed > 0,
        "{refreshed:?}"
    );
    assert_same_schema(&mirror_engine, &writer);
    assert_same_reads(&mirror_engine, &local, seed ^ 1, 40);

    // The writer drops `mem`: its lake table empties, and the mirror drops it.
    for engine in [&writer, &local] {
        engine.drop_table("db", "mem").unwrap();
    }
    tier(&runtime, root.path(), &writer);
    let dropped = lake_mirror.refresh(&mirror_engine);
    assert_eq!(dropped.tables_dropped, 1, "{dropped:?}");
    assert!(mirror_engine.table("db", "mem").is_none());
    assert_same_reads(&mirror_engine, &local, seed ^ 2, 20);

    // Another mirror, on an empty directory, answers the same.
    let fresh_dir = tempfile::tempdir().unwrap();
    let url = parse_url(root.path().to_str().unwrap()).unwrap();
    let reader = Arc::new(LakeReader::new(url, HashMap::new()).unwrap());
    let fresh_mirror = LakeMirror::new(Arc::clone(&reader));
    let (fresh, _) = Engine::open(EngineOptions {
        data_dirs: vec![fresh_dir.path().to_path_buf()],
        shards: fresh_mirror.lake_shards().unwrap().unwrap(),
        background: false,
        read_only: true,
        clock: Arc::clone(&clock) as _,
        ..EngineOptions::default()
    })
    .unwrap();
    fresh.set_cold_source(reader);
    let report = fresh_mirror.refresh(&fresh);
    assert!(
        report.failures.is_empty() && report.tables == 1,
        "{report:?}"
    );
    assert_same_reads(&fresh, &local, seed ^ 3, 20);
}

/// Sets the Delta table property `strata.tags` of the lake table at `dir` to `tags`.
fn set_recorded_tags(runtime: &tokio::runtime::Runtime, dir: &Path, tags: &str) {
    let url = url::Url::from_directory_path(dir).unwrap();
    runtime.block_on(async {
        let table = deltalake_core::DeltaTable::try_from_url(url).await.unwrap();
        table
            .set_tbl_properties()
            .with_properties(HashMap::from([(
                strata_lake::table::TAGS_PROPERTY.to_string(),
                tags.to_string(),
            )]))
            .with_raise_if_not_exists(false)
            .await
            .unwrap();
    });
}

#[test]
fn tags_known_only_from_files_mirrored_before_stay_tags() {
    // A lake table whose `strata.tags` does not name a tag (as one written before the
    // property was): the tag is known from the series directories of the files mirrored
    // then, and a later file without it must not turn it into a string field.
    // Every field bound: one left out would be dropped here, its directory with it.
    let Engines {
        writer,
        local: _local,
        clock,
        mirror_dir,
        root,
        _dirs,
    } = engines();
    write(
        &[&writer],
        &format!("cpu,host=a,rack=r1 usage=1 {}\n", START_NS + 10),
    );
    let runtime = runtime();
    tier(&runtime, root.path(), &writer);
    let cpu_dir = root.path().join("db").join("cpu");
    set_recorded_tags(&runtime, &cpu_dir, "[]");
    let url = parse_url(root.path().to_str().unwrap()).unwrap();
    let reader = Arc::new(LakeReader::new(url, HashMap::new()).unwrap());
    let lake_mirror = LakeMirror::new(Arc::clone(&reader));
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![mirror_dir.path().to_path_buf()],
        shards: writer.shard_count(),
        background: false,
        read_only: true,
        clock: Arc::clone(&clock) as _,
        ..EngineOptions::default()
    })
    .unwrap();
    engine.set_cold_source(reader);
    let first = lake_mirror.refresh(&engine);
    assert!(first.failures.is_empty(), "{first:?}");

    // Another day, a series without `rack`; the property again names no tag.
    write(
        &[&writer],
        &format!("cpu,host=b usage=2 {}\n", START_NS + DAY_NS + 10),
    );
    tier(&runtime, root.path(), &writer);
    set_recorded_tags(&runtime, &cpu_dir, "[]");
    let second = lake_mirror.refresh(&engine);
    assert!(second.failures.is_empty(), "{second:?}");
    let cpu = engine.table("db", "cpu").unwrap();
    assert_eq!(cpu.tags, vec!["host".to_string(), "rack".to_string()]);
    assert!(cpu.fields.iter().all(|f| f.name != "rack"), "{cpu:?}");
    let all = ReadRequest::all(cpu.id);
    let local = writer.table("db", "cpu").unwrap().id;
    assert_same(
        &rows(&engine, &all),
        &rows(&writer, &in_lake(ReadRequest::all(local))),
        "cpu",
    );
}

#[test]
fn columns_with_names_delta_refuses_tier_escaped_and_read_back_as_they_were() {
    let Engines {
        writer,
        local,
        clock,
        mirror_dir,
        root,
        _dirs,
    } = engines();
    // A tag with a space and one named `day`; fields with a space, a comma, `=` and `%`,
    // and one named `time_nanos`: names Delta refuses or the lake keeps for itself.
    let mut body = String::new();
    for i in 0..200i64 {
        body.push_str(&format!(
            "cpu,host=h{},my\\ tag=x{},day=d{} usage\\ idle={}.5,a\\,b={i}i,x\\=y={},pct%={i}i,time_nanos={}i {}\n",
            i % 3,
            i % 2,
            i % 5,
            i,
            i % 2 == 0,
            i * 7,
            START_NS + i * 600_000_000_007,
        ));
    }
    write(&[&writer, &local], &body);
    let runtime = runtime();
    let report = tier(&runtime, root.path(), &writer);
    assert!(report.parts_released > 0, "{report:?}");

    let url = url::Url::from_directory_path(root.path().join("db").join("cpu")).unwrap();
    let columns: Vec<String> = runtime.block_on(async {
        let table = deltalake_core::DeltaTable::try_from_url(url).await.unwrap();
        let snapshot = table.snapshot().unwrap();
        snapshot
            .schema()
            .fields()
            .map(|f| f.name().to_string())
            .collect()
    });
    for escaped in [
        "my%20tag",
        "%64ay",
        "usage%20idle",
        "a%2Cb",
        "x%3Dy",
        "pct%25",
        "%74ime_nanos",
    ] {
        assert!(
            columns.contains(&escaped.to_string()),
            "{escaped}: {columns:?}"
        );
    }

    // The writer reads the released days back from the lake as the engine that kept them.
    let all = |engine: &Engine| in_lake(ReadRequest::all(engine.table("db", "cpu").unwrap().id));
    assert_same(
        &rows(&writer, &all(&writer)),
        &rows(&local, &all(&local)),
        "writer",
    );
    assert!(!rows(&local, &all(&local)).is_empty());
    // A read-only mirror has the names as Strata wrote them, and the same rows.
    let (mirror_engine, _) = mirror(mirror_dir.path(), root.path(), &clock, 1);
    assert_same_schema(&mirror_engine, &writer);
    assert_same(
        &rows(&mirror_engine, &all(&mirror_engine)),
        &rows(&local, &all(&local)),
        "mirror",
    );
}
