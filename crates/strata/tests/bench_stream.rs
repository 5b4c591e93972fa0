//! `strata bench write` streams its batches: the loader's memory stays flat while the data
//! set grows tenfold, where generating everything first (`--pregenerate`) grows with it.
//! The loader sends over TCP to a sink in this test that counts lines and drops them, so
//! the loader's peak RSS (its report's `loader: peak RSS` note) is the generation's memory.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use common::{json, scratch, strata, text};

/// Loads `hours` of cpu-only for 100 hosts (36,000 rows, about 9 MB of line protocol, an
/// hour) over TCP; returns the loader's peak RSS in MB and the rows received.
fn load(name: &str, hours: u32, pregenerate: bool) -> (f64, usize) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let sink = std::thread::spawn(move || {
        let mut lines = 0;
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(60)))
                .unwrap();
            let mut buffer = vec![0u8; 1 << 16];
            loop {
                let n = stream.read(&mut buffer).unwrap();
                if n == 0 {
                    break;
                }
                lines += buffer[..n].iter().filter(|b| **b == b'\n').count();
            }
        }
        lines
    });
    let dir = scratch(name);
    let report = dir.join("r.json");
    let duration = format!("{hours}h");
    let mut args = vec![
        "bench",
        "write",
        "--tcp",
        &addr,
        "--hosts",
        "100",
        "--duration",
        &duration,
        "--workers",
        "2",
        "--batch-rows",
        "1000",
        "--json",
        report.to_str().unwrap(),
    ];
    if pregenerate {
        args.push("--pregenerate");
    }
    let out = strata(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines = sink.join().unwrap();
    let r = json(&report);
    let notes: Vec<String> = r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let peak = notes
        .iter()
        .find_map(|n| n.strip_prefix("loader: peak RSS "))
        .and_then(|n| n.strip_suffix(" MB"))
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no loader peak RSS in {notes:?}"));
    if !pregenerate {
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("generation: 1 thread(s)")),
            "{notes:?}"
        );
    }
    eprintln!("{name}: loader peak RSS {peak} MB, {lines} rows");
    (peak, lines)
}

#[test]
fn streamed_generation_memory_stays_flat_while_the_data_set_grows_tenfold() {
    let (small, rows) = load("bench_stream_1h", 1, false);
    assert_eq!(rows, 36_000);
    let (large, rows) = load("bench_stream_10h", 10, false);
    assert_eq!(rows, 360_000);
    // 90 MB more line protocol; the queues hold 4 batches of ~250 KB.
    assert!(
        large < small + 15.0,
        "peak RSS {small:.0} MB for 1 h, {large:.0} MB for 10 h"
    );

    // The same loads generated up front: memory follows the data (this is what the
    // streaming bound guards against, and shows the measure can see it).
    let (small, _) = load("bench_stream_pre_1h", 1, true);
    let (large, rows) = load("bench_stream_pre_10h", 10, true);
    assert_eq!(rows, 360_000);
    assert!(
        large > small + 50.0,
        "pregenerated: peak RSS {small:.0} MB for 1 h, {large:.0} MB for 10 h"
    );
}
