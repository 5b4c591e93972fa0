//! End-to-end: token auth on writes and `/metrics` — every form InfluxDB clients send —,
//! on every other endpoint but `/ping` and `/health`, and no auth by default.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Server, data_dir, stored_rows};

const TOKEN: &str = "s3cret-t0ken";
/// `user:s3cret-t0ken` in base64.
const BASIC_GOOD: &str = "Basic dXNlcjpzM2NyZXQtdDBrZW4=";
/// `user:wrong` in base64.
const BASIC_BAD: &str = "Basic dXNlcjp3cm9uZw==";

#[test]
fn with_a_token_every_client_form_is_accepted_and_anything_else_is_401() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", TOKEN]);
    let line = |n: u32| format!("a,form=f{n} v={n} {n}\n");

    let refused: [(&str, Vec<(&str, String)>); 6] = [
        ("/write?db=auth", vec![]),
        ("/api/v2/write?bucket=auth", vec![]),
        (
            "/write?db=auth",
            vec![("Authorization", "Token nope".to_owned())],
        ),
        (
            "/api/v2/write?bucket=auth",
            vec![("Authorization", "Bearer nope".to_owned())],
        ),
        ("/write?db=auth&u=user&p=wrong", vec![]),
        (
            "/write?db=auth",
            vec![("Authorization", BASIC_BAD.to_owned())],
        ),
    ];
    for (i, (path, headers)) in refused.iter().enumerate() {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let response = server.request("POST", path, &headers, line(100 + i as u32).as_bytes());
        assert_eq!(
            response.status,
            401,
            "{path} {headers:?}: {}",
            response.text()
        );
        assert!(
            response.json()["error"]
                .as_str()
                .unwrap()
                .contains("authoriz")
        );
    }
    let metrics = server.request("GET", "/metrics", &[], b"");
    assert_eq!(metrics.status, 401, "/metrics needs the token too");

    let token = format!("Token {TOKEN}");
    let bearer = format!("Bearer {TOKEN}");
    let accepted: [(String, Vec<(&str, &str)>); 5] = [
        (
            "/api/v2/write?bucket=auth&org=o".to_owned(),
            vec![("Authorization", token.as_str())],
        ),
        (
            "/write?db=auth".to_owned(),
            vec![("Authorization", token.as_str())],
        ),
        (
            "/write?db=auth".to_owned(),
            vec![("Authorization", bearer.as_str())],
        ),
        (format!("/write?db=auth&u=anyone&p={TOKEN}"), vec![]),
        (
            "/write?db=auth".to_owned(),
            vec![("Authorization", BASIC_GOOD)],
        ),
    ];
    for (i, (path, headers)) in accepted.iter().enumerate() {
        let response = server.request("POST", path, headers, line(i as u32).as_bytes());
        assert_eq!(
            response.status,
            204,
            "{path} {headers:?}: {}",
            response.text()
        );
    }
    let metrics = server.request("GET", "/metrics", &[("Authorization", token.as_str())], b"");
    assert_eq!(metrics.status, 200);
    assert!(server.stop().success());

    let expected: Vec<String> = (0..5)
        .map(|n| format!("form=f{n} {n} v=Float({n}.0)"))
        .collect();
    assert_eq!(
        stored_rows(dir.path(), "auth", "a"),
        expected,
        "refused writes stored nothing"
    );
}

#[test]
fn without_a_token_auth_is_off() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(server.post("/write?db=open", "a v=1 1\n").status, 204);
    // Credentials are ignored when auth is off.
    let response = server.request(
        "POST",
        "/write?db=open&u=x&p=y",
        &[("Authorization", "Token whatever")],
        b"a v=2 2\n",
    );
    assert_eq!(response.status, 204);
    assert_eq!(server.request("GET", "/metrics", &[], b"").status, 200);
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "open", "a").len(), 2);
}

#[test]
fn the_token_can_come_from_the_environment() {
    let dir = data_dir();
    let server = Server::start_with_env(dir.path(), &[], &[("STRATA_AUTH_TOKEN", TOKEN)]);
    assert_eq!(server.post("/write?db=env", "a v=1 1\n").status, 401);
    let token = format!("Token {TOKEN}");
    let response = server.request(
        "POST",
        "/write?db=env",
        &[("Authorization", token.as_str())],
        b"a v=1 1\n",
    );
    assert_eq!(response.status, 204);
    assert!(server.stop().success());
}

/// The read-only token queries (`/query` SELECT and SHOW, `/sql` SELECT, `/metrics`) and is
/// refused with 403 for anything that writes: `/write`, InfluxQL `CREATE DATABASE`, SQL
/// `INSERT` and `CREATE`. A read-only token without an auth token is a config error.
#[test]
fn the_read_only_token_reads_and_is_refused_writes() {
    let dir = data_dir();
    let server = Server::start(
        dir.path(),
        &["--auth-token", TOKEN, "--read-only-token", "dash"],
    );
    let full = format!("Token {TOKEN}");
    let full = [("Authorization", full.as_str())];
    let read_only = [("Authorization", "Token dash")];
    let written = server.request("POST", "/write?db=ro", &full, b"m,h=a v=1 1\n");
    assert_eq!(written.status, 204, "{}", written.text());

    let refused_write = server.request("POST", "/write?db=ro", &read_only, b"m,h=a v=2 2\n");
    assert_eq!(refused_write.status, 403, "{}", refused_write.text());
    assert!(
        refused_write
            .text()
            .contains("read-only token cannot write")
    );
    let form = [
        ("Authorization", "Token dash"),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    let select = server.request("POST", "/query?db=ro", &form, b"q=SELECT%20v%20FROM%20m");
    assert_eq!(select.status, 200, "{}", select.text());
    assert_eq!(select.json()["results"][0]["series"][0]["values"][0][1], 1);
    let show = server.request("POST", "/query", &form, b"q=SHOW%20DATABASES");
    assert_eq!(show.status, 200, "{}", show.text());
    let create = server.request(
        "POST",
        "/query",
        &form,
        b"q=SHOW%20DATABASES%3B%20CREATE%20DATABASE%20x",
    );
    assert_eq!(create.status, 403, "{}", create.text());
    assert!(
        create.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("error authorizing query: the read-only token cannot"),
        "{}",
        create.text()
    );
    // `/sql` streams its answer (chunked): read the status line only.
    let mut stream = std::net::TcpStream::connect(server.http).unwrap();
    let statement = "SELECT count(*) AS n FROM m";
    let head = format!(
        "POST /sql?db=ro HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Token dash\r\nContent-Length: {}\r\n\r\n{statement}",
        statement.len()
    );
    std::io::Write::write_all(&mut stream, head.as_bytes()).unwrap();
    let (status, _) = common::read_head(&mut std::io::BufReader::new(&mut stream));
    assert_eq!(status, 200, "the read-only token runs SELECT over /sql");
    for statement in [
        "INSERT INTO m (time, h, v) VALUES (3, 'a', 3)",
        "CREATE DATABASE y",
    ] {
        let refused = server.request("POST", "/sql?db=ro", &read_only, statement.as_bytes());
        assert_eq!(refused.status, 403, "{statement}: {}", refused.text());
    }
    assert_eq!(
        server.request("GET", "/metrics", &read_only, b"").status,
        200
    );
    assert_eq!(
        server
            .request("GET", "/metrics", &[("Authorization", "Token nope")], b"")
            .status,
        401
    );
    assert!(server.stop().success());
    assert_eq!(stored_rows(dir.path(), "ro", "m").len(), 1);
    assert!(
        !std::fs::read_to_string(dir.path().join("catalog.json"))
            .unwrap()
            .contains("\"x\"")
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--read-only-token",
            "dash",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("needs an auth token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With auth on, no endpoint that reads or changes data answers without the token: every
/// route and method of the router, unauthenticated and with a wrong token, is 401 and
/// changes nothing. `/ping` and `/health` stay open (InfluxDB's clients and load balancers
/// probe them without credentials) and say nothing about the data.
#[test]
fn every_endpoint_but_ping_and_health_needs_the_token() {
    let dir = data_dir();
    let backups = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", TOKEN]);
    let backup_path = format!(
        "/api/v1/backup?to={}",
        backups.path().join("b").to_str().unwrap()
    );
    let guarded: [(&str, &str, &[u8]); 12] = [
        ("POST", "/write?db=guard", b"m v=1 1\n"),
        ("POST", "/api/v2/write?bucket=guard", b"m v=1 1\n"),
        ("GET", "/sql?db=guard&q=SHOW%20TABLES", b""),
        ("POST", "/sql?db=guard", b"CREATE DATABASE made"),
        ("GET", "/query?q=SHOW%20DATABASES", b""),
        ("POST", "/query?q=CREATE%20DATABASE%20made", b""),
        ("POST", "/query", b"q=DROP%20DATABASE%20guard"),
        ("GET", "/metrics", b""),
        ("POST", &backup_path, b""),
        ("POST", "/api/v1/backup", b""),
        ("GET", "/query?q=SELECT%20*%20FROM%20m&db=guard", b""),
        ("POST", "/sql?db=guard", b"DELETE FROM m WHERE time > 0"),
    ];
    for (method, path, body) in guarded {
        for headers in [vec![], vec![("Authorization", "Token wrong".to_owned())]] {
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let answer = server.request(method, path, &headers, body);
            assert_eq!(
                answer.status,
                401,
                "{method} {path} {headers:?}: {}",
                answer.text()
            );
        }
    }
    assert!(!backups.path().join("b").exists(), "no backup was written");
    for (method, path) in [("GET", "/ping"), ("HEAD", "/ping"), ("GET", "/health")] {
        let answer = server.request(method, path, &[], b"");
        assert!(
            answer.status == 200 || answer.status == 204,
            "{method} {path}: {}",
            answer.status
        );
    }
    // Nothing the refused requests asked for happened.
    let token = format!("Token {TOKEN}");
    let databases = server.request(
        "GET",
        "/query?q=SHOW%20DATABASES",
        &[("Authorization", token.as_str())],
        b"",
    );
    assert_eq!(databases.status, 200, "{}", databases.text());
    assert!(!databases.text().contains("made"), "{}", databases.text());
    assert!(!databases.text().contains("guard"), "{}", databases.text());
    assert!(server.stop().success());
}
