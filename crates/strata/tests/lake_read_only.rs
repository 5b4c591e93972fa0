//! A read-only query server beside a writer that keeps changing the lake: the writer
//! tiers two old days and then takes late rows into them, one batch after another, each
//! flushed by a restart and copied again by its next round (the old files replaced); a
//! read-only server on the same lake, refreshing every 200 ms, answers counts over those
//! days all along, from another thread, over `/query` and `/sql`. Every answer is a
//! success (a refresh never breaks a query, nor does a copy replaced under a read), the
//! counts never go down nor pass what was written, and the read-only server's count
//! reaches the writer's own.
//! `psql` (Debian's postgresql-client) then reads from it, and a `DROP TABLE` is refused
//! with SQLSTATE 25006.

#![allow(clippy::unwrap_used)]

mod common;
mod sql_common;

use std::time::{Duration, Instant};

use common::lake::{load_then_serve, now_ns, wait_for_metrics};
use common::psql::{psql, text};
use common::{Server, data_dir, metric};

const DAY_NS: i64 = 86_400_000_000_000;
/// Late-row batches the writer takes while the read-only server answers.
const BATCHES: i64 = 4;

/// Rows of `cpu` for hosts a-c every 5 minutes over the two days before yesterday.
fn rows(start: i64) -> String {
    let mut body = String::new();
    let mut time = start;
    let mut i = 0;
    while time < start + 2 * DAY_NS {
        for host in ["a", "b", "c"] {
            body.push_str(&format!("cpu,host={host} usage={i}.5 {time}\n"));
            i += 1;
        }
        time += 300_000_000_000;
    }
    body
}

/// `count(usage)` of `cpu` from `start` to `end` over `/query`, then over `/sql` (the
/// latter returned); both must succeed, and the second count no less than the first.
fn counts(server: &Server, start: i64, end: i64) -> u64 {
    let influxql = server.request(
        "GET",
        &format!(
            "/query?db=db&q=SELECT%20count(usage)%20FROM%20cpu%20WHERE%20time%20%3E%3D%20{start}%20AND%20time%20%3C%20{end}"
        ),
        &[],
        b"",
    );
    assert_eq!(influxql.status, 200, "{}", influxql.text());
    let answer = influxql.json();
    let from_influxql = answer["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("{answer}"));
    let sql = sql_common::send(
        server.http,
        "GET",
        &format!(
            "/sql?db=db&format=csv&q=SELECT%20count(usage)%20FROM%20cpu%20WHERE%20time%20%3E%3D%20to_timestamp_nanos({start})%20AND%20time%20%3C%20to_timestamp_nanos({end})"
        ),
        &[],
        b"",
    );
    assert_eq!(sql.status, 200, "{}", sql.text());
    let from_sql: u64 = sql.text().lines().nth(1).unwrap().trim().parse().unwrap();
    // Asked one after the other while the lake may change: never fewer the second time.
    assert!(
        from_influxql <= from_sql,
        "/query counted {from_influxql}, then /sql {from_sql}"
    );
    from_sql
}

#[test]
fn a_read_only_server_answers_all_along_while_the_writer_replaces_copies() {
    let dir = data_dir();
    let data = dir.path().join("data");
    let lake = dir.path().join("lake");
    let url = format!("file://{}", lake.display());
    let start = (now_ns() / DAY_NS - 3) * DAY_NS;
    let end = start + 2 * DAY_NS;
    let lake_args = [
        "--lake",
        url.as_str(),
        "--tier-after",
        "1h",
        "--tier-interval",
        "200ms",
    ];
    let writer = load_then_serve(&data, &rows(start), &lake_args);
    wait_for_metrics("released", &writer, Duration::from_secs(60), |m| {
        metric(m, "strata_parts") == 0.0 && metric(m, "strata_lake_commits_total") > 0.0
    });
    let read_only = Server::start(
        &dir.path().join("read-only"),
        &[
            "--lake",
            url.as_str(),
            "--lake-read-only",
            "--tier-interval",
            "200ms",
            "--pg",
            "127.0.0.1:0",
        ],
    );
    let first = counts(&read_only, start, end);
    assert_eq!(first, counts(&writer, start, end));

    // Late rows, one batch at a time, each into both days, flushed by a clean stop of the
    // writer and copied by the writer started again (the days' files replaced), while
    // the read-only server answers from another thread.
    let expected = first + 2 * BATCHES as u64;
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut writer = Some(writer);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let (mut last, mut answers) = (first, 0u64);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let now = counts(&read_only, start, end);
                assert!(now >= last, "the count went down: {last} -> {now}");
                assert!(
                    now <= expected,
                    "{now} rows, more than written ({expected})"
                );
                (last, answers) = (now, answers + 1);
            }
            (last, answers)
        });
        for batch in 0..BATCHES {
            let late: String = (0..2)
                .map(|day| {
                    format!(
                        "cpu,host=late usage={batch}.25 {}\n",
                        start + day * DAY_NS + 1_000 + batch
                    )
                })
                .collect();
            let stopping = writer.take().unwrap();
            assert_eq!(stopping.post("/write?db=db", &late).status, 204);
            assert!(stopping.stop().success());
            let started = writer.insert(Server::start(&data, &lake_args));
            wait_for_metrics("copied again", started, Duration::from_secs(60), |m| {
                metric(m, "strata_parts") == 0.0
            });
        }
        assert_eq!(counts(writer.as_ref().unwrap(), start, end), expected);
        // The read-only server's count reaches the writer's.
        let deadline = Instant::now() + Duration::from_secs(60);
        while counts(&read_only, start, end) != expected {
            assert!(
                Instant::now() < deadline,
                "the read-only server never caught up"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let (last, answers) = reader.join().unwrap();
        assert!(answers > BATCHES as u64, "{answers} answers");
        assert!(last > first, "the reading thread saw no change");
    });
    assert!(writer.unwrap().stop().success());

    // psql reads from it, and is refused a change with SQLSTATE 25006
    // (read_only_sql_transaction).
    let args = ["-U", "u", "-d", "db", "-A", "-t", "-v", "ON_ERROR_STOP=1"];
    let count = psql(&read_only, &args, b"SELECT count(usage) FROM cpu", &[]);
    assert!(count.status.success(), "{}", text(&count.stderr));
    assert_eq!(text(&count.stdout).trim(), expected.to_string());
    let refused = psql(
        &read_only,
        &args,
        b"\\set VERBOSITY verbose\nDROP TABLE cpu;",
        &[],
    );
    assert!(!refused.status.success(), "{}", text(&refused.stdout));
    assert!(
        text(&refused.stderr).contains("25006"),
        "{}",
        text(&refused.stderr)
    );
    assert!(read_only.stop().success());
}
