//! End-to-end: `/ping`, `/health`, unknown paths and methods, the body cap (413), the
//! in-flight cap (503 + Retry-After), and `/metrics` counts matching what was written.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::net::TcpStream;

use common::{Server, data_dir, gzip, metric, read_response, stored_rows};

#[test]
fn ping_health_and_unknown_paths() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "sekret"]);
    for method in ["GET", "HEAD"] {
        let ping = server.request(method, "/ping", &[], b"");
        assert_eq!(ping.status, 204, "{method} /ping is open even with auth on");
        assert!(
            ping.header("x-influxdb-version")
                .unwrap()
                .starts_with("1.8.10-strata")
        );
        assert_eq!(ping.header("x-influxdb-build"), Some("OSS"));
    }
    let health = server.request("GET", "/health", &[], b"");
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "pass");
    assert_eq!(health.json()["name"], "strata");

    let missing = server.request("GET", "/nope", &[], b"");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "no such endpoint");
    let wrong_method = server.request("GET", "/write?db=x", &[], b"");
    assert_eq!(wrong_method.status, 405);
    assert!(wrong_method.json()["error"].is_string());
    assert!(server.stop().success());
}

#[test]
fn bodies_over_the_cap_are_413_and_long_lines_are_rejected() {
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &["--max-body-bytes", "1000", "--max-line-bytes", "40"],
    );
    let small: String = (0..10).map(|i| format!("m v={i} {i}\n")).collect();
    assert_eq!(server.post("/write?db=cap", &small).status, 204);

    let big: String = (0..200).map(|i| format!("m v={i} {i}\n")).collect();
    assert!(big.len() > 1000);
    let response = server.post("/write?db=cap", &big);
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("1000 bytes")
    );

    // Small on the wire, too big once decompressed.
    let bomb = gzip(&vec![b'#'; 100_000]);
    assert!(bomb.len() < 1000);
    let response = server.request(
        "POST",
        "/api/v2/write?bucket=cap",
        &[("Content-Encoding", "gzip")],
        &bomb,
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("decompressed")
    );
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "cap", "m").len(), 10);
}

#[test]
fn writes_past_the_in_flight_cap_get_503_with_retry_after() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--max-inflight-write-bytes", "1000"]);
    // A slow client: declares 900 bytes and sends only part of them, so its request holds
    // its reservation while the next one arrives.
    let body: String = (0..50).map(|i| format!("m,w=slow v=1 {i:04}\n")).collect();
    assert_eq!(body.len(), 900);
    let body = body.as_bytes();
    let mut slow = TcpStream::connect(server.http).unwrap();
    write!(
        slow,
        "POST /write?db=busy HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 900\r\n\r\n"
    )
    .unwrap();
    slow.write_all(&body[..100]).unwrap();
    slow.flush().unwrap();
    common::eventually("the slow request to be in flight", || {
        metric(&server.metrics(), "strata_inflight_write_bytes") >= 900.0
    });
    let response = server.post("/write?db=busy", &"m,w=fast v=1 1\n".repeat(10));
    assert_eq!(response.status, 503, "{}", response.text());
    assert_eq!(response.header("retry-after"), Some("1"));
    assert!(
        response.json()["error"]
            .as_str()
            .unwrap()
            .contains("overloaded")
    );

    slow.write_all(&body[100..]).unwrap();
    let slow_response = read_response(&mut slow, false);
    assert_eq!(slow_response.status, 204, "{}", slow_response.text());
    // Once it is done, there is room again.
    assert_eq!(
        server.post("/write?db=busy", "m,w=fast v=1 1\n").status,
        204
    );
    let text = server.metrics();
    assert_eq!(metric(&text, "strata_overload_rejections_total"), 1.0);
    assert_eq!(metric(&text, "strata_inflight_write_bytes"), 0.0);
    assert!(server.stop().success());
    let rows = stored_rows(dir.path(), "busy", "m");
    assert_eq!(rows.iter().filter(|r| r.starts_with("w=slow ")).count(), 50);
    assert_eq!(
        rows.iter().filter(|r| r.starts_with("w=fast ")).count(),
        1,
        "the refused write stored nothing"
    );
}

#[test]
fn metrics_count_what_was_written() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    // 3 requests x 40 rows x 2 fields, plus one partial write with 5 good and 2 bad lines.
    for r in 0..3 {
        let body: String = (0..40)
            .map(|i| format!("cpu,host=h{i} a={i},b={r}i {}\n", 1_000 + r * 100 + i))
            .collect();
        let path = if r == 1 {
            "/api/v2/write?bucket=mx"
        } else {
            "/write?db=mx"
        };
        assert_eq!(server.post(path, &body).status, 204);
    }
    let partial = "cpu,host=p a=1,b=1i 1\ncpu,host=p a=x\ncpu,host=p a=2,b=2i 2\n\
                   cpu,host=p a=3,b=3i 3\ncpu,host=p a=4,b=4i 4\ncpu b=1.5 5\ncpu,host=p a=5,b=5i 6\n";
    let response = server.post("/write?db=mx", partial);
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["written"], 5);
    assert_eq!(server.request("GET", "/nope", &[], b"").status, 404);

    let text = server.metrics();
    for family in [
        "strata_rows_written_total",
        "strata_write_request_duration_seconds",
        "strata_series",
        "strata_wal_syncs_total",
    ] {
        assert!(text.contains(&format!("# HELP {family} ")), "{family}");
        assert!(text.contains(&format!("# TYPE {family} ")), "{family}");
    }
    assert_eq!(metric(&text, "strata_rows_written_total"), 125.0);
    assert_eq!(metric(&text, "strata_points_written_total"), 250.0);
    assert_eq!(
        metric(
            &text,
            "strata_protocol_rows_written_total{protocol=\"http\"}"
        ),
        125.0
    );
    assert_eq!(
        metric(&text, "strata_bad_lines_total{protocol=\"http\"}"),
        2.0
    );
    assert_eq!(metric(&text, "strata_series"), 41.0);
    assert_eq!(
        metric(
            &text,
            "strata_http_requests_total{endpoint=\"write\",status=\"204\"}"
        ),
        2.0
    );
    assert_eq!(
        metric(
            &text,
            "strata_http_requests_total{endpoint=\"api_v2_write\",status=\"204\"}"
        ),
        1.0
    );
    assert_eq!(
        metric(
            &text,
            "strata_http_requests_total{endpoint=\"write\",status=\"400\"}"
        ),
        1.0
    );
    assert_eq!(
        metric(
            &text,
            "strata_http_requests_total{endpoint=\"other\",status=\"404\"}"
        ),
        1.0
    );
    assert_eq!(
        metric(&text, "strata_write_request_duration_seconds_count"),
        4.0
    );
    assert_eq!(
        metric(
            &text,
            "strata_write_request_duration_seconds_bucket{le=\"+Inf\"}"
        ),
        4.0
    );
    assert!(metric(&text, "strata_wal_bytes_written_total") > 0.0);
    assert!(metric(&text, "strata_memtable_bytes") > 0.0);
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "mx", "cpu").len(), 125);
}
