//! End-to-end: InfluxDB 1.x and 2.x writes to the real `strata serve` — every precision,
//! gzip bodies, partial writes, missing database — and the rows read back from disk.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Server, data_dir, gzip, stored_rows};

/// 2023-11-14T22:13:20Z in seconds; every precision below writes this same instant.
const SECONDS: i64 = 1_700_000_000;
const NANOS: i64 = SECONDS * 1_000_000_000;

#[test]
fn v1_and_v2_write_every_precision_to_the_same_instant() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let cases: [(&str, i64); 7] = [
        ("", NANOS),
        ("n", NANOS),
        ("ns", NANOS),
        ("u", NANOS / 1_000),
        ("us", NANOS / 1_000),
        ("ms", NANOS / 1_000_000),
        ("s", SECONDS),
    ];
    for (i, (precision, stamp)) in cases.iter().enumerate() {
        let query = if precision.is_empty() {
            String::new()
        } else {
            format!("&precision={precision}")
        };
        let v1 = server.post(
            &format!("/write?db=v1db{query}"),
            &format!("m,p=v1_{i} x={i} {stamp}\n"),
        );
        assert_eq!(v1.status, 204, "v1 precision {precision:?}: {}", v1.text());
        if *precision == "n" || *precision == "u" {
            continue; // 2.x spells them ns and us only
        }
        let v2 = server.post(
            &format!("/api/v2/write?org=o&bucket=v2db{query}"),
            &format!("m,p=v2_{i} x={i} {stamp}"),
        );
        assert_eq!(v2.status, 204, "v2 precision {precision:?}: {}", v2.text());
    }
    let bad = server.post("/write?db=v1db&precision=h", "m x=1 1\n");
    assert_eq!(bad.status, 400);
    assert!(
        bad.json()["error"].as_str().unwrap().contains("precision"),
        "{}",
        bad.text()
    );
    assert!(server.stop().success());

    let expect = |prefix: &str, skip: &[usize]| -> Vec<String> {
        let mut rows: Vec<String> = (0..cases.len())
            .filter(|i| !skip.contains(i))
            .map(|i| format!("p={prefix}_{i} {NANOS} x=Float({i}.0)"))
            .collect();
        rows.sort();
        rows
    };
    assert_eq!(stored_rows(dir.path(), "v1db", "m"), expect("v1", &[]));
    assert_eq!(stored_rows(dir.path(), "v2db", "m"), expect("v2", &[1, 3]));
}

#[test]
fn gzip_bodies_are_decompressed_and_a_missing_database_is_created() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let body: String = (0..500)
        .map(|i| format!("cpu,host=h{} usage={i}i {}\n", i % 5, NANOS + i))
        .collect();
    let gz = gzip(body.as_bytes());
    assert!(gz.len() < body.len() / 3, "the test body should compress");
    for path in ["/write?db=fresh1", "/api/v2/write?bucket=fresh2&org=o"] {
        let response = server.request("POST", path, &[("Content-Encoding", "gzip")], &gz);
        assert_eq!(response.status, 204, "{path}: {}", response.text());
    }
    let corrupt = server.request(
        "POST",
        "/write?db=fresh1",
        &[("Content-Encoding", "gzip")],
        b"not gzip at all",
    );
    assert_eq!(corrupt.status, 400, "{}", corrupt.text());
    assert!(corrupt.json()["error"].as_str().unwrap().contains("gzip"));
    let deflate = server.request(
        "POST",
        "/write?db=fresh1",
        &[("Content-Encoding", "br")],
        b"cpu v=1",
    );
    assert_eq!(deflate.status, 400, "{}", deflate.text());
    assert!(server.stop().success());

    let mut expected: Vec<String> = (0..500)
        .map(|i| format!("host=h{} {} usage=Integer({i})", i % 5, NANOS + i))
        .collect();
    expected.sort();
    assert_eq!(stored_rows(dir.path(), "fresh1", "cpu"), expected);
    assert_eq!(stored_rows(dir.path(), "fresh2", "cpu"), expected);
}

#[test]
fn partial_writes_store_good_lines_and_name_bad_ones() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let body = format!(
        "t,k=a v=1 {NANOS}\n\
         t,k=a v=oops {}\n\
         t,k=b v=2 {}\n\
         t,k=c v=\"a string\" {}\n\
         no_fields_here\n\
         t,k=d v=4 {}\n",
        NANOS + 1,
        NANOS + 2,
        NANOS + 3,
        NANOS + 5
    );
    let response = server.post("/write?db=pw", &body);
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(response.header("content-type"), Some("application/json"));
    let json = response.json();
    assert_eq!(json["rejected"], 3, "{json}");
    assert_eq!(json["written"], 3, "{json}");
    assert!(
        json["error"]
            .as_str()
            .unwrap()
            .starts_with("partial write: 3 lines rejected"),
        "{json}"
    );
    let lines = json["lines"].as_array().unwrap();
    let numbers: Vec<u64> = lines.iter().map(|l| l["line"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [2, 4, 5], "{json}");
    // A syntax error has a column: `t,k=a v=oops` goes wrong at the value, column 9.
    assert_eq!(lines[0]["column"], 9, "{json}");
    assert!(
        lines[0]["message"].as_str().unwrap().contains("\"v\""),
        "{json}"
    );
    // A type conflict names the field and the types instead.
    assert!(
        lines[1]["message"].as_str().unwrap().contains("float"),
        "{json}"
    );

    // Only bad lines: still 400, nothing written.
    let all_bad = server.post("/api/v2/write?bucket=pw", "t,k=z v=\nt,k=z\n");
    assert_eq!(all_bad.status, 400, "{}", all_bad.text());
    assert_eq!(all_bad.json()["rejected"], 2);
    assert_eq!(all_bad.json()["written"], 0);

    // More than ten bad lines: ten are named, all are counted.
    let many_bad: String = (0..25).map(|i| format!("t,k=x v={i}z\n")).collect();
    let response = server.post("/write?db=pw", &many_bad);
    assert_eq!(response.json()["rejected"], 25);
    assert_eq!(response.json()["lines"].as_array().unwrap().len(), 10);
    assert!(server.stop().success());

    assert_eq!(
        stored_rows(dir.path(), "pw", "t"),
        [
            format!("k=a {NANOS} v=Float(1.0)"),
            format!("k=b {} v=Float(2.0)", NANOS + 2),
            format!("k=d {} v=Float(4.0)", NANOS + 5),
        ]
    );
}

/// `--max-series`: a write that would take a database past its limit stores the rows of
/// existing series and of the series that fit, and names each refused line in its 400.
#[test]
fn rows_past_the_series_limit_are_refused_by_line() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--max-series", "2"]);
    let body = format!(
        "t,k=a v=1 {NANOS}\nt,k=b v=2 {NANOS}\nt,k=c v=3 {NANOS}\nt,k=a v=4 {}\n",
        NANOS + 1
    );
    let response = server.post("/write?db=lim", &body);
    assert_eq!(response.status, 400, "{}", response.text());
    let json = response.json();
    assert_eq!(json["written"], 3, "{json}");
    assert_eq!(json["rejected"], 1, "{json}");
    assert_eq!(json["lines"][0]["line"], 3, "{json}");
    assert!(
        json["lines"][0]["message"]
            .as_str()
            .unwrap()
            .contains("database \"lim\" has reached its limit of 2 series (--max-series)"),
        "{json}"
    );
    // Another database counts its own series.
    assert_eq!(server.post("/write?db=lim2", &body).json()["written"], 3);
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "lim", "t").len(), 3);
}

#[test]
fn a_missing_database_or_bucket_is_400_like_influxdb() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    for path in ["/write", "/write?db=", "/write?precision=s"] {
        let response = server.post(path, "m v=1 1\n");
        assert_eq!(response.status, 400, "{path}");
        assert_eq!(
            response.json(),
            serde_json::json!({"error": "database is required"})
        );
    }
    let response = server.post("/api/v2/write?org=o", "m v=1 1\n");
    assert_eq!(response.status, 400);
    assert_eq!(
        response.json(),
        serde_json::json!({"error": "bucket is required"})
    );
    assert!(server.stop().success());
}
