//! The lake read by an independent reader: `strata serve --lake file:///…` copies two days
//! of two tables (floats, integers with gaps, unsigned integers up to 2⁶⁴ − 1, booleans,
//! strings; times with nanoseconds) into Delta tables, and Apache Spark with Delta Lake's
//! own jars (`clients/spark_delta.py`; PyPI `pyspark` 3.5.5 and Maven Central's
//! `delta-spark` 3.3.2, installed by `.ci/run` and the README's test command) reads them.
//! Its counts, sums, extremes and first and last times (nanoseconds rebuilt from `time` and
//! `time_nanos`) equal Strata's own answers to the same questions over `/query`, also for
//! fields whose names the lake escapes (`used pct` as `used%20pct`, `day` as `%64ay`).
//!
//! Never skipped: without Spark, Java or the jars the test fails, saying how to install them.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::lake::{load_then_serve, now_ns, wait_for_metrics};
use common::{Server, data_dir, metric};
use serde_json::Value;

const DAY_NS: i64 = 86_400_000_000_000;
const PINNED: &str = "pyspark==3.5.5";

/// Two days of rows, ending at yesterday's midnight (UTC), every 10 minutes and 13 ns:
/// `cpu` for hosts a and b (`idle` on even rows only), `mem` for host a.
fn rows() -> (String, usize) {
    let now = now_ns();
    let start = (now / DAY_NS - 3) * DAY_NS;
    let mut body = String::new();
    let mut count = 0;
    let mut i: i64 = 0;
    let mut time = start;
    while time < start + 2 * DAY_NS {
        for host in ["a", "b"] {
            if i % 2 == 0 {
                body.push_str(&format!(
                    "cpu,host={host} usage={i}.25,idle={i}i {}\n",
                    time + 7
                ));
            } else {
                body.push_str(&format!("cpu,host={host} usage={i}.5 {}\n", time + 7));
            }
        }
        // `used pct` and `day`: names Delta refuses or the lake keeps, escaped there.
        body.push_str(&format!(
            "mem,host=a free={}u,ok={},note=\"n {i}\",used\\ pct={i}.5,day={i}i {time}\n",
            u64::MAX - i as u64,
            i % 2 == 0
        ));
        count += 3;
        i += 1;
        time += 600_000_000_000 + 13;
    }
    (body, count)
}

/// `q` over `/query` in nanoseconds: the series of the first result, by their `host` tag.
fn influxql(server: &Server, q: &str) -> Vec<(String, Vec<Value>)> {
    let path = format!(
        "/query?db=db&epoch=ns&q={}",
        q.replace(' ', "%20")
            .replace('=', "%3D")
            .replace('\'', "%27")
            .replace('"', "%22")
    );
    let answer = server.request("GET", &path, &[], b"").json();
    answer["results"][0]["series"]
        .as_array()
        .unwrap_or_else(|| panic!("{q}: {answer}"))
        .iter()
        .map(|s| {
            (
                s["tags"]["host"].as_str().unwrap().to_string(),
                s["values"][0].as_array().unwrap().clone(),
            )
        })
        .collect()
}

fn check_spark_installed(jars: &[std::path::PathBuf]) {
    let import = Command::new("python3")
        .args(["-c", "import pyspark; print(pyspark.__version__)"])
        .output()
        .expect("run python3");
    assert!(
        import.status.success(),
        "python3 cannot import Apache Spark's `pyspark` ({}); .ci/run installs it \
         (python3 -m pip install {PINNED}), as does the README's test command",
        String::from_utf8_lossy(&import.stderr).trim()
    );
    let java = Command::new("java").arg("-version").output();
    assert!(
        java.is_ok_and(|o| o.status.success()),
        "Spark needs a Java runtime (java on PATH)"
    );
    for jar in jars {
        assert!(
            jar.is_file(),
            "{} is missing: crates/strata/tests/clients/fetch-delta-spark.sh fetches Delta \
             Lake's jars (the README's test command runs it)",
            jar.display()
        );
    }
}

#[test]
fn spark_reads_what_strata_tiered_and_agrees_with_strata() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let jars = [
        root.join("target/test-clients/delta-spark_2.12-3.3.2.jar"),
        root.join("target/test-clients/delta-storage-3.3.2.jar"),
    ];
    check_spark_installed(&jars);
    let dir = data_dir();
    let data = dir.path().join("data");
    let lake = dir.path().join("lake");
    let (body, count) = rows();
    let url = format!("file://{}", lake.display());
    let server = load_then_serve(
        &data,
        &body,
        &[
            "--lake",
            &url,
            "--tier-after",
            "1h",
            "--tier-interval",
            "1s",
        ],
    );
    wait_for_metrics("tiered", &server, Duration::from_secs(60), |m| {
        metric(m, "strata_lake_rows_tiered_total") >= count as f64
    });

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/spark_delta.py");
    let jar_list = jars
        .iter()
        .map(|j| j.display().to_string())
        .collect::<Vec<_>>()
        .join(",");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&jar_list)
        .arg(lake.join("db/cpu"))
        .arg(lake.join("db/mem"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "Spark failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spark: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let cpu = &spark["cpu"];
    let mem = &spark["mem"];
    assert_eq!(
        cpu["rows"].as_u64().unwrap() + mem["rows"].as_u64().unwrap(),
        count as u64
    );
    assert_eq!(cpu["days"].as_array().unwrap().len(), 2, "{cpu}");
    assert_eq!(cpu["schema"]["time"], "timestamp");
    assert_eq!(mem["schema"]["free"], "decimal(20,0)");
    assert_eq!(mem["schema"]["used%20pct"], "double", "{mem}");
    assert_eq!(mem["schema"]["%64ay"], "bigint", "{mem}");

    // Strata's answers to the same questions, host by host.
    let aggregates = influxql(
        &server,
        "SELECT count(usage), sum(usage), min(usage), max(usage), count(idle), sum(idle) FROM cpu GROUP BY host",
    );
    let first = influxql(&server, "SELECT first(usage) FROM cpu GROUP BY host");
    let last = influxql(&server, "SELECT last(usage) FROM cpu GROUP BY host");
    assert_eq!(aggregates.len(), 2);
    for (index, (host, values)) in aggregates.iter().enumerate() {
        let s = &cpu["by_host"][host];
        assert_eq!(s["rows"], values[1], "{host} rows");
        assert_eq!(s["sum_usage"].as_f64(), values[2].as_f64(), "{host} sum");
        assert_eq!(s["min_usage"].as_f64(), values[3].as_f64(), "{host} min");
        assert_eq!(s["max_usage"].as_f64(), values[4].as_f64(), "{host} max");
        assert_eq!(s["count_idle"], values[5], "{host} count(idle)");
        assert_eq!(s["sum_idle"], values[6], "{host} sum(idle)");
        assert_eq!(s["first_ns"], first[index].1[0], "{host} first time");
        assert_eq!(s["last_ns"], last[index].1[0], "{host} last time");
    }
    let mem_aggregates = influxql(
        &server,
        "SELECT count(note), max(free), sum(\"used pct\"), sum(\"day\") FROM mem GROUP BY host",
    );
    let ok_true = influxql(
        &server,
        "SELECT count(ok) FROM mem WHERE ok = true GROUP BY host",
    );
    let mem_first = influxql(&server, "SELECT first(note) FROM mem GROUP BY host");
    let mem_last = influxql(&server, "SELECT last(note) FROM mem GROUP BY host");
    let s = &mem["by_host"]["a"];
    assert_eq!(s["notes"], mem_aggregates[0].1[1], "count(note)");
    assert_eq!(s["rows"], mem_aggregates[0].1[1], "mem rows");
    assert_eq!(
        s["free_max"].as_str().unwrap(),
        mem_aggregates[0].1[2].to_string(),
        "max(free), unsigned"
    );
    assert_eq!(s["ok_true"], ok_true[0].1[1], "ok = true");
    assert_eq!(
        s["sum_used_pct"].as_f64(),
        mem_aggregates[0].1[3].as_f64(),
        "sum(\"used pct\")"
    );
    assert_eq!(s["sum_day"], mem_aggregates[0].1[4], "sum(day)");
    assert_eq!(s["first_ns"], mem_first[0].1[0], "mem first time");
    assert_eq!(s["last_ns"], mem_last[0].1[0], "mem last time");
    assert!(server.stop().success());
}
