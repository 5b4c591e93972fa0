//! End-to-end: token auth on writes and `/metrics` — every form InfluxDB clients send —
//! and no auth by default.

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
