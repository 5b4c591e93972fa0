//! The engine's read API: Arrow scans, tag filters, time ranges, latest rows, pre-aggregate
//! summaries, multiple data directories.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampNanosecondType};
use arrow_array::{Array, RecordBatch};
use common::Rng;
use strata_lineproto::Precision;
use strata_storage::column::Values;
use strata_storage::part::PreAgg;
use strata_storage::series::TagPredicate;
use strata_storage::{Engine, EngineOptions, ManualClock, ReadRequest};

fn open(dir: &std::path::Path, shards: usize) -> Engine {
    Engine::open(EngineOptions {
        data_dirs: vec![dir.join("d0"), dir.join("d1")],
        shards,
        background: false,
        partition_duration: Duration::from_secs(3600),
        clock: Arc::new(ManualClock::new(0)),
        ..EngineOptions::default()
    })
    .unwrap()
    .0
}

fn scan_all(engine: &Engine, request: &ReadRequest) -> Vec<RecordBatch> {
    (0..engine.shard_count())
        .flat_map(|shard| engine.scan_shard(shard, request, 3).unwrap())
        .collect()
}

#[test]
fn arrow_batches_carry_time_tags_and_nullable_fields() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 2);
    let body = "cpu,host=a,dc=x usage=1.5,count=3i 1000\n\
                cpu,host=a,dc=x usage=2.5 2000\n\
                cpu,host=b usage=9.0,count=7i 1500\n";
    let report = engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    assert!(report.errors.is_empty(), "{report:?}");
    engine.flush().unwrap();
    engine
        .write_lines(
            "db",
            b"cpu,host=a,dc=x count=4i 3000\n",
            Precision::Nanoseconds,
        )
        .unwrap();

    let table = engine.catalog().table_id("db", "cpu").unwrap();
    let batches = scan_all(&engine, &ReadRequest::all(table));
    let schema = batches[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, vec!["time", "host", "dc", "usage", "count"]);

    let mut rows = Vec::new();
    for batch in &batches {
        let time = batch.column(0).as_primitive::<TimestampNanosecondType>();
        let host = batch.column(1).as_dictionary::<Int32Type>();
        let host_values = host.values().as_string::<i32>();
        let dc = batch.column(2).as_dictionary::<Int32Type>();
        let usage = batch.column(3).as_primitive::<Float64Type>();
        let count = batch.column(4).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            let host = host_values.value(host.keys().value(i) as usize).to_string();
            let dc = (!dc.is_null(i)).then(|| {
                dc.values()
                    .as_string::<i32>()
                    .value(dc.keys().value(i) as usize)
                    .to_string()
            });
            let usage = (!usage.is_null(i)).then(|| usage.value(i));
            let count = (!count.is_null(i)).then(|| count.value(i));
            rows.push((host, dc, time.value(i), usage, count));
        }
    }
    rows.sort_by_key(|r| (r.0.clone(), r.2));
    let x = Some("x".to_string());
    assert_eq!(
        rows,
        vec![
            ("a".into(), x.clone(), 1000, Some(1.5), Some(3)),
            ("a".into(), x.clone(), 2000, Some(2.5), None),
            ("a".into(), x, 3000, None, Some(4)),
            ("b".into(), None, 1500, Some(9.0), Some(7)),
        ]
    );
}

#[test]
fn filters_ranges_projection_and_latest() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 3);
    let mut body = String::new();
    for host in 0..10 {
        for t in 0..50 {
            body.push_str(&format!(
                "m,host=h{host},rack=r{} v={}i,w={}.0 {}\n",
                host % 3,
                host * 100 + t,
                t,
                t * 10
            ));
        }
    }
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    // A later overwrite of one row, still in the memtable.
    engine
        .write_lines(
            "db",
            b"m,rack=r1,host=h1 v=-1i 490\n",
            Precision::Nanoseconds,
        )
        .unwrap();
    let table = engine.catalog().table_id("db", "m").unwrap();
    let schema = engine.catalog().table(table).unwrap();
    let v = schema.field("v").unwrap().id;

    let request = ReadRequest {
        table,
        predicate: Some(TagPredicate::Or(vec![
            TagPredicate::Eq {
                key: "host".into(),
                value: "h1".into(),
            },
            TagPredicate::In {
                key: "host".into(),
                values: vec!["h2".into(), "h9".into()],
            },
        ])),
        start: 100,
        end: 200,
        fields: Some(vec![v]),
    };
    let mut got: Vec<(String, Vec<i64>, usize)> = engine
        .read(&request)
        .unwrap()
        .into_iter()
        .map(|s| {
            let host = s.tags.iter().find(|(k, _)| k == "host").unwrap().1.clone();
            (host, s.data.times.clone(), s.data.columns.len())
        })
        .collect();
    got.sort();
    let times: Vec<i64> = (10..20).map(|t| t * 10).collect();
    assert_eq!(
        got,
        vec![
            ("h1".into(), times.clone(), 1),
            ("h2".into(), times.clone(), 1),
            ("h9".into(), times, 1)
        ]
    );

    let latest = engine.latest(&ReadRequest::all(table)).unwrap();
    assert_eq!(latest.len(), 10);
    for series in latest {
        let host: i64 = series.tags[0].1[1..].parse().unwrap();
        assert_eq!(series.data.times, vec![490]);
        let expected = if host == 1 { -1 } else { host * 100 + 49 };
        assert_eq!(
            series.data.column(v).unwrap().values,
            Values::Integer(vec![expected])
        );
    }

    // Partitions of an hour over two data directories: both hold parts.
    let late = (0..10)
        .map(|h| {
            format!(
                "m,host=h{h},rack=r0 v=1i {}\n",
                3_600_000_000_000i64 * (1 + h % 2)
            )
        })
        .collect::<String>();
    engine
        .write_lines("db", late.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    for d in ["d0", "d1"] {
        assert!(
            common::count_files(&dir.path().join(d), "part") > 0,
            "no part in {d}"
        );
    }
}

#[test]
fn summaries_give_the_same_aggregates_as_reads() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 2);
    let mut rng = Rng::new(7);
    // Several flushes of overlapping and non-overlapping time ranges, then memtable rows.
    for round in 0..6 {
        let mut body = String::new();
        let base = if round % 2 == 0 { round * 5_000 } else { 1_000 };
        for host in 0..6 {
            for i in 0..3_000 {
                if rng.chance(80) {
                    body.push_str(&format!(
                        "m,host=h{host} v={}i {}\n",
                        rng.below(1000) as i64 - 500,
                        base + i
                    ));
                }
            }
        }
        engine
            .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        if round < 5 {
            engine.flush().unwrap();
        }
    }
    let table = engine.catalog().table_id("db", "m").unwrap();
    let v = engine
        .catalog()
        .table(table)
        .unwrap()
        .field("v")
        .unwrap()
        .id;
    let mut used_preaggs = 0;
    for (start, end) in [
        (i64::MIN, i64::MAX),
        (0, 10_000),
        (2_500, 27_000),
        (20_000, 20_001),
    ] {
        let request = ReadRequest {
            start,
            end,
            fields: Some(vec![v]),
            ..ReadRequest::all(table)
        };
        let mut expected = (0u64, 0i128, i64::MAX, i64::MIN);
        for series in engine.read(&request).unwrap() {
            if let Some(column) = series.data.column(v) {
                let Values::Integer(values) = &column.values else {
                    panic!("type")
                };
                for x in values {
                    expected = (
                        expected.0 + 1,
                        expected.1 + i128::from(*x),
                        expected.2.min(*x),
                        expected.3.max(*x),
                    );
                }
            }
        }
        let mut got = (0u64, 0i128, i64::MAX, i64::MIN);
        for shard in 0..engine.shard_count() {
            for summary in engine.summarize_shard(shard, &request, &|_| true).unwrap() {
                for chunk in &summary.chunks {
                    if let Some(PreAgg::Integer {
                        count,
                        min,
                        max,
                        sum,
                        ..
                    }) = chunk.column(v).map(|c| c.preagg)
                    {
                        used_preaggs += 1;
                        got = (
                            got.0 + u64::from(count),
                            got.1 + sum,
                            got.2.min(min),
                            got.3.max(max),
                        );
                    }
                }
                if let Some(column) = summary.rest.column(v) {
                    let Values::Integer(values) = &column.values else {
                        panic!("type")
                    };
                    for x in values {
                        got = (
                            got.0 + 1,
                            got.1 + i128::from(*x),
                            got.2.min(*x),
                            got.3.max(*x),
                        );
                    }
                }
            }
        }
        assert_eq!(got, expected, "range {start}..{end}");
    }
    assert!(
        used_preaggs > 0,
        "no chunk was clean: the test did not exercise pre-aggregates"
    );
}

#[test]
fn summarize_each_visits_what_summarize_returns_and_stops_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 2);
    let mut rng = Rng::new(11);
    // Two flushed rounds that overlap in time, then memtable rows.
    for round in 0..3 {
        let mut body = String::new();
        for host in 0..12 {
            for i in 0..2_000 {
                if rng.chance(70) {
                    // Every third host lacks the dc tag.
                    let dc = if host % 3 == 0 {
                        String::new()
                    } else {
                        format!(",dc=d{}", host % 2)
                    };
                    body.push_str(&format!(
                        "m,host=h{host}{dc} v={}i,w={}.5 {}\n",
                        rng.below(1000),
                        rng.below(100),
                        round * 700 + i
                    ));
                }
            }
        }
        engine
            .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        if round < 2 {
            engine.flush().unwrap();
        }
    }
    let table = engine.catalog().table_id("db", "m").unwrap();
    let request = ReadRequest {
        start: 300,
        end: 2_500,
        ..ReadRequest::all(table)
    };
    let usable = |c: &strata_storage::part::ChunkMeta| c.rows.is_multiple_of(2);
    let mut total = 0;
    let mut tag_counts = Vec::new();
    for shard in 0..engine.shard_count() {
        let expected = engine.summarize_shard(shard, &request, &usable).unwrap();
        let mut visited = Vec::new();
        engine
            .summarize_shard_each(shard, &request, &usable, None, &mut |summary| {
                visited.push(summary);
                Ok(true)
            })
            .unwrap();
        assert_eq!(visited, expected, "shard {shard}");
        // Named tag keys: the same summaries with only those tags (a key no series has is
        // no error).
        let keys = ["dc".to_string(), "zone".to_string()];
        let mut narrowed = Vec::new();
        engine
            .summarize_shard_each(shard, &request, &usable, Some(&keys), &mut |summary| {
                narrowed.push(summary);
                Ok(true)
            })
            .unwrap();
        let mut with_dc_only = expected.clone();
        for summary in &mut with_dc_only {
            summary.tags.retain(|(k, _)| k == "dc");
        }
        assert_eq!(narrowed, with_dc_only, "shard {shard}");
        tag_counts.extend(narrowed.iter().map(|s| s.tags.len()));
        total += expected.len();
        if expected.len() < 2 {
            continue;
        }
        let mut seen = 0;
        engine
            .summarize_shard_each(shard, &request, &usable, None, &mut |summary| {
                assert_eq!(summary, expected[seen]);
                seen += 1;
                Ok(seen < 2)
            })
            .unwrap();
        assert_eq!(seen, 2, "visit returned false after two series");
    }
    assert_eq!(total, 12, "every host has rows in the range");
    tag_counts.sort_unstable();
    assert_eq!(
        tag_counts,
        [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
        "dc alone, where there"
    );
}

#[test]
fn a_streaming_scan_stops_when_its_sink_says_so_and_otherwise_equals_the_whole_scan() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path(), 1);
    let mut body = String::new();
    for host in 0..20 {
        for t in 0..10 {
            body.push_str(&format!("m,host=h{host} v={t}i {}\n", t * 10));
        }
    }
    engine
        .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
        .unwrap();
    engine.flush().unwrap();
    let table = engine.table("db", "m").unwrap();
    let request = ReadRequest::all(table.id);
    // 20 series of 10 rows in batches of at most 25 rows: two series per batch.
    let whole = engine.scan_shard(0, &request, 25).unwrap();
    assert_eq!(whole.len(), 10);
    let mut streamed = Vec::new();
    engine
        .scan_shard_each(0, &request, 25, &mut |batch| {
            streamed.push(batch);
            true
        })
        .unwrap();
    assert_eq!(streamed, whole);
    let mut taken = Vec::new();
    engine
        .scan_shard_each(0, &request, 25, &mut |batch| {
            taken.push(batch);
            taken.len() < 3
        })
        .unwrap();
    assert_eq!(taken.len(), 3);
    assert_eq!(taken[..], whole[..3]);
}
