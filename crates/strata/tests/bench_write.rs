//! End-to-end: `strata bench write` against each target and `strata bench scale`, with tiny
//! loads on 127.0.0.1 only.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::time::Duration;

use common::{json, scratch, strata, text};

#[test]
fn embedded_report_and_json() {
    let dir = scratch("bench_write_embedded");
    let report = dir.join("r.json");
    let data = dir.join("data");
    let out = strata(&[
        "bench",
        "write",
        "--embedded",
        "--hosts",
        "5",
        "--duration",
        "10min",
        "--workers",
        "2",
        "--batch-rows",
        "50",
        "--data-dir",
        data.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("SUCC: Spent "), "{stdout}");
    assert!(stdout.contains("SUCC: insert delay, min: "), "{stdout}");
    // A sub-second load that never left the memtables reports no rate, and says why.
    assert!(
        stdout.contains("loaded 3000 metrics (300 rows) in "),
        "{stdout}"
    );
    assert!(!stdout.contains("records/second"), "{stdout}");
    assert!(
        stdout.contains("rate: not reported: the load lasted "),
        "{stdout}"
    );
    let r = json(&report);
    assert!(
        r["rate_withheld"].as_str().unwrap().contains("under 10 s"),
        "{r}"
    );
    assert_eq!(r["rows"], 300);
    assert_eq!(r["points"], 3000);
    assert_eq!(r["rows_generated"], 300);
    assert_eq!(r["requests"], 6);
    assert_eq!(r["errors"], 0);
    assert_eq!(r["workers"], 2);
    assert_eq!(r["acknowledged"], true);
    assert!(r["server_cpu_percent"].as_f64().unwrap() >= 0.0);
    // In process the loader is the engine's process: its CPU is the server's figure.
    assert!(r["loader_cpu_percent"].is_null(), "{r}");
    assert!(!stdout.contains("loader CPU: "), "{stdout}");
    assert!(r["peak_rss_mb"].as_f64().unwrap() > 0.0);
    assert!(
        r["bytes_per_point"].as_f64().unwrap() > 0.0,
        "data flushed to disk"
    );
    assert!(r["latency_ms"]["max"].as_f64().unwrap() >= r["latency_ms"]["p50"].as_f64().unwrap());
    let sum: f64 = r["rows_per_s_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((sum - r["rows_per_s"].as_f64().unwrap()).abs() < 1e-6 * sum.max(1.0));
}

#[test]
fn meters_workers_own_meters_and_default_batch_is_capped() {
    let dir = scratch("bench_write_meters");
    let report = dir.join("r.json");
    let out = strata(&[
        "bench",
        "write",
        "--workload",
        "meters",
        "--meters",
        "7",
        "--rows-per-meter",
        "20",
        "--workers",
        "3",
        "--data-dir",
        dir.join("data").to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
        "--out-of-order-ratio",
        "0.2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&report);
    assert_eq!(r["rows"], 140);
    assert_eq!(r["points"], 420);
    assert_eq!(r["workers"], 3);
    // 30,000 capped to the 20 rows of a meter: one request per meter.
    assert_eq!(r["batch_rows"], 20);
    assert_eq!(r["requests"], 7);
    assert!(r["rows_out_of_order"].as_u64().unwrap() > 0);
    let per_worker: Vec<f64> = r["rows_per_s_per_worker"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    // Meters 0..3, 3..5, 5..7: 60, 40, 40 rows.
    let elapsed = r["elapsed_s"].as_f64().unwrap();
    let rows: Vec<u64> = per_worker
        .iter()
        .map(|v| (v * elapsed).round() as u64)
        .collect();
    assert_eq!(rows, [60, 40, 40]);
}

#[test]
fn out_of_order_generation_keeps_every_row_once() {
    let base = [
        "bench",
        "generate",
        "--workload",
        "meters",
        "--meters",
        "4",
        "--rows-per-meter",
        "200",
    ];
    let in_order = strata(&base);
    let mut args = base.to_vec();
    args.extend([
        "--out-of-order-ratio",
        "0.25",
        "--out-of-order-intervals",
        "3",
    ]);
    let shuffled = strata(&args);
    let again = strata(&args);
    assert!(shuffled.status.success(), "{}", text(&shuffled.stderr));
    assert_eq!(shuffled.stdout, again.stdout, "seeded");
    assert_ne!(shuffled.stdout, in_order.stdout);
    let mut a: Vec<&str> = std::str::from_utf8(&in_order.stdout)
        .unwrap()
        .lines()
        .collect();
    let lines: Vec<&str> = std::str::from_utf8(&shuffled.stdout)
        .unwrap()
        .lines()
        .collect();
    let mut b = lines.clone();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "same rows, each once");
    // Late rows: a timestamp below the newest already seen of its meter.
    let mut newest = std::collections::HashMap::new();
    let mut late = 0;
    for line in &lines {
        let meter = line.split(',').nth(1).unwrap();
        let ts: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        let max = newest.entry(meter).or_insert(ts);
        if ts < *max {
            late += 1;
        } else {
            *max = ts;
        }
    }
    let ratio = f64::from(late) / 800.0;
    assert!((0.15..0.30).contains(&ratio), "late share {ratio}");
    let bad = strata(&["bench", "generate", "--out-of-order-ratio", "1.5"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("between 0 and 1"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn devops_loads_nine_tables_with_every_field() {
    let dir = scratch("bench_write_devops");
    let report = dir.join("r.json");
    let out = strata(&[
        "bench",
        "write",
        "--workload",
        "devops",
        "--hosts",
        "3",
        "--duration",
        "10min",
        "--workers",
        "2",
        "--batch-rows",
        "100",
        "--data-dir",
        dir.join("data").to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&report);
    // 3 hosts x 60 instants x 9 measurements; 101 fields per host and instant.
    assert_eq!(r["rows"], 1620, "{r}");
    assert_eq!(r["points"], 3 * 60 * 101, "{r}");
    assert_eq!(
        (r["errors"].as_u64(), r["bad_lines"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(
        r["workload"]
            .as_str()
            .unwrap()
            .starts_with("devops: 3 hosts"),
        "{r}"
    );

    // The same lines from `bench generate`: nine measurements, each host's nine in turn.
    let generated = strata(&[
        "bench",
        "generate",
        "--workload",
        "devops",
        "--hosts",
        "2",
        "--duration",
        "1min",
    ]);
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let lines: Vec<String> = text(&generated.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 2 * 6 * 9);
    let measurements: Vec<&str> = lines[..9]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        measurements,
        [
            "cpu",
            "diskio",
            "disk",
            "kernel",
            "mem",
            "net",
            "nginx",
            "postgresl",
            "redis"
        ]
    );

    let refused = strata(&[
        "bench",
        "write",
        "--workload",
        "devops",
        "--out-of-order-ratio",
        "0.1",
        "--hosts",
        "1",
        "--duration",
        "1min",
    ]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("not supported with --workload devops"));
}

#[test]
fn tcp_target_sends_every_line_and_says_unacknowledged() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    // Two workers, two connections; count lines on both.
    let server = std::thread::spawn(move || {
        let mut lines = 0;
        for _ in 0..2 {
            let (mut stream, _) = listener.accept().unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .unwrap();
            let mut all = Vec::new();
            stream.read_to_end(&mut all).unwrap();
            lines += all.iter().filter(|b| **b == b'\n').count();
        }
        lines
    });
    let dir = scratch("bench_write_tcp");
    let report = dir.join("r.json");
    let out = strata(&[
        "bench",
        "write",
        "--tcp",
        &addr,
        "--hosts",
        "3",
        "--duration",
        "5min",
        "--workers",
        "2",
        "--batch-rows",
        "10",
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(server.join().unwrap(), 90);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("asynchronous"), "{stdout}");
    let r = json(&report);
    assert_eq!(r["acknowledged"], false);
    assert_eq!(r["rows"], 90);
    assert!(
        r["server_cpu_percent"].is_null(),
        "no --server-pid, no figure"
    );
    assert!(stdout.contains("server CPU: n/a"), "{stdout}");
    assert!(r["loader_cpu_percent"].as_f64().is_some(), "{r}");
}

#[test]
fn http_target_counts_rejections_as_errors() {
    // A server that answers 204 to every request but the second, which gets 400.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = BufReader::new(stream);
        let mut paths = Vec::new();
        for i in 0..10 {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            paths.push(line.split(' ').nth(1).unwrap().to_string());
            let mut length = 0;
            for _ in 0..50 {
                let mut header = String::new();
                reader.read_line(&mut header).unwrap();
                if header.trim().is_empty() {
                    break;
                }
                if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let answer: &[u8] = if i == 1 {
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\n{\"e\":\"bad\"}"
            } else {
                b"HTTP/1.1 204 No Content\r\n\r\n"
            };
            std::io::Write::write_all(&mut writer, answer).unwrap();
        }
        paths
    });
    let dir = scratch("bench_write_http_fake");
    let report = dir.join("r.json");
    let out = strata(&[
        "bench",
        "write",
        "--http",
        &format!("http://{addr}"),
        "--workload",
        "meters",
        "--meters",
        "3",
        "--rows-per-meter",
        "5",
        "--workers",
        "1",
        "--db",
        "m",
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paths = server.join().unwrap();
    assert_eq!(paths, vec!["/write?db=m&precision=ms"; 3]);
    let r = json(&report);
    assert_eq!(r["requests"], 3);
    assert_eq!(r["errors"], 1);
    assert_eq!(r["rows"], 10);
    assert_eq!(r["error_messages"][0], "HTTP 400: {\"e\":\"bad\"}");
    assert!(r["loader_cpu_percent"].as_f64().is_some(), "{r}");
    assert!(
        text(&out.stdout).contains("loader CPU: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn scale_loads_a_file_over_tcp_with_set_shards_and_writers() {
    let dir = scratch("bench_scale_tcp");
    let file = dir.join("cpu.lp");
    let generated = strata(&[
        "bench",
        "generate",
        "--hosts",
        "3",
        "--duration",
        "10min",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(generated.status.success(), "{}", text(&generated.stderr));
    let out_dir = dir.join("out");
    let out = strata(&[
        "bench",
        "scale",
        "--cores",
        "1",
        "--tcp",
        "--shards",
        "3",
        "--writers",
        "1",
        "--file",
        file.to_str().unwrap(),
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let r = json(&out_dir.join("write-1cores.json"));
    assert!(r["target"].as_str().unwrap().starts_with("tcp://"), "{r}");
    assert_eq!(r["workers"], 1);
    assert_eq!(r["rows"], 180);
    assert_eq!(r["acknowledged"], false);
    // The server flushed every row before exiting: all of them are on disk, in 3 shards.
    assert!(r["bytes_per_point"].as_f64().unwrap() > 0.0, "{r}");
    let shards = std::fs::read_dir(out_dir.join("data-1cores"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("shard-"))
        .count();
    assert_eq!(shards, 3);
}

#[test]
fn scale_runs_the_real_server_and_writes_csv_and_svg() {
    let dir = scratch("bench_scale");
    let out = strata(&[
        "bench",
        "scale",
        "--cores",
        "1",
        "--hosts",
        "5",
        "--duration",
        "10min",
        "--out-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("CPU Cores | Writers | Rows per Second"),
        "{stdout}"
    );
    assert!(
        stdout.contains("note: the runs on 1 core(s) were too short or too small for a rate"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(dir.join("scale.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    // cores 1, one data directory, one shard, two writers.
    assert!(lines[1].starts_with("1,1,1,2,"), "{csv}");
    let svg = std::fs::read_to_string(dir.join("scale.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("points/s"));
    let r = json(&dir.join("write-1cores.json"));
    assert_eq!(r["rows"], 300);
    assert_eq!(r["errors"], 0);
    assert!(
        r["server_cpu_percent"].as_f64().is_some(),
        "server pid known"
    );
    assert!(r["peak_rss_mb"].as_f64().unwrap() > 0.0);
    assert!(
        r["bytes_per_point"].as_f64().unwrap() > 0.0,
        "flushed at SIGTERM"
    );

    let bad = strata(&["bench", "scale", "--cores", "0"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("at least 1"),
        "{}",
        text(&bad.stderr)
    );
}

#[test]
fn file_input_loads_every_good_line() {
    let dir = scratch("bench_write_file");
    let file = dir.join("cpu.lp.gz");
    let out = strata(&[
        "bench",
        "generate",
        "--hosts",
        "3",
        "--duration",
        "5min",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = dir.join("r.json");
    let data = dir.join("data");
    let out = strata(&[
        "bench",
        "write",
        "--file",
        file.to_str().unwrap(),
        "--batch-rows",
        "7",
        "--data-dir",
        data.to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r = json(&report);
    assert_eq!(r["rows"], 90, "{r}");
    assert_eq!(r["points"], 900, "{r}");

    let out = strata(&[
        "bench",
        "write",
        "--file",
        dir.join("missing.lp").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot open"),
        "{}",
        text(&out.stderr)
    );
}
