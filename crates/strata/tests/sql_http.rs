//! End to end: `/sql` on the real `strata serve` — rows written with `/write`, read back as
//! JSON, CSV and Arrow IPC over POST and GET; databases; errors with their status, kind and
//! position; auth; query metrics. Guard rails are in `sql_http_limits.rs`.

#![allow(clippy::unwrap_used)]

mod common;
mod sql_common;

use common::{Server, data_dir, metric};
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::arrow::util::pretty::pretty_format_batches;
use sql_common::{arrow_batches, encode, get_sql, many_rows, post_sql, send, write_rows};

/// Two rows of every field type, one with a string that needs quoting in CSV and JSON.
const ROWS: &str = "cpu,host=a,region=eu usage=12.5,count=3i,ok=true,note=\"x,y\" 1700000000\n\
                    cpu,host=b,region=us usage=-1.25,count=-7i,ok=false,note=\"say \\\"hi\\\"\" 1700000010\n";

const SELECT: &str = "SELECT host, time, usage, count, ok, note FROM cpu ORDER BY host";

fn expected_json() -> serde_json::Value {
    serde_json::json!({
        "columns": [
            {"name": "host", "type": "string"},
            {"name": "time", "type": "timestamp"},
            {"name": "usage", "type": "float"},
            {"name": "count", "type": "integer"},
            {"name": "ok", "type": "boolean"},
            {"name": "note", "type": "string"},
        ],
        "rows": [
            ["a", "2023-11-14T22:13:20.000000000Z", 12.5, 3, true, "x,y"],
            ["b", "2023-11-14T22:13:30.000000000Z", -1.25, -7, false, "say \"hi\""],
        ],
        "row_count": 2,
    })
}

#[test]
fn results_in_json_csv_and_arrow_over_post_and_get() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);

    let post = post_sql(&server, "?db=metrics", SELECT);
    assert_eq!(post.status, 200, "{}", post.text());
    assert_eq!(post.header("content-type"), Some("application/json"));
    assert!(post.complete);
    assert_eq!(post.json(), expected_json());

    let get = get_sql(&server, "&db=metrics&format=json", SELECT);
    assert_eq!(get.status, 200, "{}", get.text());
    assert_eq!(get.json(), expected_json());

    let body = serde_json::json!({ "q": SELECT, "db": "metrics" }).to_string();
    let json_body = send(
        server.http,
        "POST",
        "/sql",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(json_body.status, 200, "{}", json_body.text());
    assert_eq!(json_body.json(), expected_json());

    let csv = post_sql(&server, "?db=metrics&format=csv", SELECT);
    assert_eq!(csv.status, 200, "{}", csv.text());
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    assert_eq!(
        csv.text(),
        "host,time,usage,count,ok,note\n\
         a,2023-11-14T22:13:20.000000000Z,12.5,3,true,\"x,y\"\n\
         b,2023-11-14T22:13:30.000000000Z,-1.25,-7,false,\"say \"\"hi\"\"\"\n"
    );
    let accepted = send(
        server.http,
        "GET",
        &format!("/sql?db=metrics&q={}", encode(SELECT)),
        &[("Accept", "text/csv")],
        b"",
    );
    assert_eq!(accepted.text(), csv.text());

    let arrow = get_sql(&server, "&db=metrics&format=arrow", SELECT);
    assert_eq!(arrow.status, 200, "{}", arrow.text());
    assert_eq!(
        arrow.header("content-type"),
        Some("application/vnd.apache.arrow.stream")
    );
    let batches = arrow_batches(&arrow);
    assert_eq!(
        pretty_format_batches(&batches).unwrap().to_string(),
        "+------+---------------------+-------+-------+-------+----------+\n\
         | host | time                | usage | count | ok    | note     |\n\
         +------+---------------------+-------+-------+-------+----------+\n\
         | a    | 2023-11-14T22:13:20 | 12.5  | 3     | true  | x,y      |\n\
         | b    | 2023-11-14T22:13:30 | -1.25 | -7    | false | say \"hi\" |\n\
         +------+---------------------+-------+-------+-------+----------+"
    );
    let accepted = send(
        server.http,
        "POST",
        "/sql?db=metrics",
        &[("Accept", "application/vnd.apache.arrow.stream")],
        SELECT.as_bytes(),
    );
    assert_eq!(arrow_batches(&accepted), batches);

    // An empty result still has its columns.
    let empty = post_sql(
        &server,
        "?db=metrics",
        "SELECT host FROM cpu WHERE host = 'zz'",
    );
    assert_eq!(
        empty.json(),
        serde_json::json!({"columns": [{"name": "host", "type": "string"}], "rows": [], "row_count": 0})
    );

    let metrics = server.metrics();
    assert!(
        metric(&metrics, "strata_queries_total{status=\"ok\"}") >= 8.0,
        "{metrics}"
    );
    assert!(metric(&metrics, "strata_query_duration_seconds_count") >= 8.0);
    assert!(metrics.contains("strata_http_requests_total{endpoint=\"sql\",status=\"200\"}"));
    assert!(server.stop().success());
}

#[test]
fn tables_resolve_in_the_requested_database() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);
    write_rows(&server, "strata", "cpu,host=z usage=1 1700000000\n");

    let count = |query: &str, statement: &str| {
        let answer = post_sql(&server, query, statement);
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.json()["rows"][0][0].clone()
    };
    // No db: the default database, `strata` (where TCP writes go too).
    assert_eq!(count("", "SELECT count(*) FROM cpu"), 1);
    assert_eq!(count("?db=metrics", "SELECT count(*) FROM cpu"), 2);
    assert_eq!(count("?db=strata", "SELECT count(*) FROM metrics.cpu"), 2);
    // Unsorted batches come from different shards, each with its own tag dictionary: the
    // Arrow stream replaces dictionaries between batches and says the same as JSON.
    write_rows(&server, "big", &many_rows(20, 100));
    let arrow = post_sql(
        &server,
        "?db=big&format=arrow",
        "SELECT host, usage FROM cpu",
    );
    assert_eq!(arrow.status, 200, "{}", arrow.text());
    let mut from_arrow = Vec::new();
    for batch in arrow_batches(&arrow) {
        let hosts = cast(batch.column(0), &DataType::Utf8).unwrap();
        let hosts = hosts.as_string::<i32>();
        let usage = batch.column(1).as_primitive::<Float64Type>();
        for row in 0..batch.num_rows() {
            from_arrow.push(format!("{} {}", hosts.value(row), usage.value(row)));
        }
    }
    let json = post_sql(&server, "?db=big", "SELECT host, usage FROM cpu").json();
    let mut from_json: Vec<String> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| format!("{} {}", row[0].as_str().unwrap(), row[1].as_f64().unwrap()))
        .collect();
    from_arrow.sort();
    from_json.sort();
    assert_eq!(from_arrow.len(), 2000);
    assert_eq!(from_arrow, from_json);
    let missing = post_sql(&server, "?db=nowhere", "SELECT * FROM cpu");
    assert_eq!(missing.status, 400, "{}", missing.text());
    assert_eq!(missing.json()["kind"], "plan");
    assert!(server.stop().success());
}

#[test]
fn errors_carry_status_kind_and_position() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    write_rows(&server, "metrics", ROWS);

    let syntax = post_sql(
        &server,
        "?db=metrics",
        "SELECT host\nFROM cpu\nWHERE usage >",
    );
    assert_eq!(syntax.status, 400, "{}", syntax.text());
    let error = syntax.json();
    assert_eq!(error["kind"], "syntax", "{error}");
    assert_eq!(
        error["position"],
        serde_json::json!({"line": 3, "column": 14}),
        "{error}"
    );
    assert!(
        error["error"].as_str().unwrap().contains("syntax error"),
        "{error}"
    );

    let misspelled = post_sql(&server, "?db=metrics", "SELEC host FROM cpu");
    assert_eq!(misspelled.status, 400);
    assert_eq!(
        misspelled.json()["position"],
        serde_json::json!({"line": 1, "column": 1})
    );

    let unknown = get_sql(&server, "&db=metrics", "SELECT * FROM memory");
    assert_eq!(unknown.status, 400, "{}", unknown.text());
    let error = unknown.json();
    assert_eq!(error["kind"], "plan");
    assert!(
        error["error"].as_str().unwrap().contains("memory"),
        "{error}"
    );

    let column = post_sql(&server, "?db=metrics", "SELECT nope FROM cpu");
    assert_eq!(column.status, 400);
    assert_eq!(
        column.json()["position"],
        serde_json::json!({"line": 1, "column": 8})
    );

    // The data's fault, found while running: the client's error, not the server's.
    let zero = post_sql(&server, "?db=metrics", "SELECT count(*) / 0 FROM cpu");
    assert_eq!(zero.status, 400, "{}", zero.text());
    assert_eq!(
        zero.json(),
        serde_json::json!({"error": "Divide by zero error", "kind": "data"})
    );
    let cast = post_sql(&server, "?db=metrics", "SELECT CAST(host AS INT) FROM cpu");
    assert_eq!(cast.status, 400, "{}", cast.text());
    assert_eq!(cast.json()["kind"], "data");

    let empty = post_sql(&server, "?db=metrics", "  ");
    assert_eq!(empty.status, 400);
    assert!(
        empty.json()["error"]
            .as_str()
            .unwrap()
            .contains("no statement")
    );
    let format = post_sql(&server, "?format=xml", "SELECT 1");
    assert_eq!(format.status, 400);
    assert!(format.json()["error"].as_str().unwrap().contains("xml"));
    let bad_json = send(
        server.http,
        "POST",
        "/sql",
        &[("Content-Type", "application/json")],
        b"{\"query\": \"SELECT 1\"}",
    );
    assert_eq!(bad_json.status, 400, "{}", bad_json.text());

    let metrics = server.metrics();
    assert!(
        metric(&metrics, "strata_queries_total{status=\"error\"}") >= 4.0,
        "{metrics}"
    );
    assert!(server.stop().success());
}

#[test]
fn auth_is_required_when_configured() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "s3cret"]);
    let refused = post_sql(&server, "", "SELECT 1");
    assert_eq!(refused.status, 401, "{}", refused.text());
    let wrong = send(
        server.http,
        "POST",
        "/sql",
        &[("Authorization", "Token nope")],
        b"SELECT 1",
    );
    assert_eq!(wrong.status, 401);
    let allowed = send(
        server.http,
        "POST",
        "/sql",
        &[("Authorization", "Token s3cret")],
        b"SELECT 1 AS one",
    );
    assert_eq!(allowed.status, 200, "{}", allowed.text());
    assert_eq!(allowed.json()["rows"], serde_json::json!([[1]]));
    let by_parameter = get_sql(&server, "&u=any&p=s3cret", "SELECT 1");
    assert_eq!(by_parameter.status, 200, "{}", by_parameter.text());
    assert!(server.stop().success());
}
