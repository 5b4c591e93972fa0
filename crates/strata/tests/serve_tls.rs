//! End-to-end TLS (`--tls-cert`, `--tls-key`): Python's `ssl` module (OpenSSL), trusting the
//! test CA, writes and queries over HTTPS and writes line protocol over TLS on TCP; a
//! plaintext client and a client that does not trust the certificate are refused. The
//! certificate in `fixtures/tls/` (CA `ca.pem`, `server.pem` for localhost and 127.0.0.1,
//! `server.key`) is valid until 2126.

#![allow(clippy::unwrap_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{Server, data_dir, stored_rows};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// Runs a Python client script with the HTTP and TCP ports and the CA file as arguments;
/// returns its stdout, failing loudly when Python is missing or the script fails.
fn python(script: &str, server: &Server, ca: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(server.http.port().to_string())
        .arg(server.tcp.unwrap().port().to_string())
        .arg(ca)
        .output()
        .expect("python3 is needed for the TLS client (it ships with the test machine)");
    assert!(
        out.status.success(),
        "client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const CLIENT: &str = r#"
import http.client, json, socket, ssl, sys, time
http_port, tcp_port, ca = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
context = ssl.create_default_context(cafile=ca)
headers = {"Authorization": "Token s3cret"}
connection = http.client.HTTPSConnection("127.0.0.1", http_port, context=context, timeout=30)
connection.request("POST", "/write?db=tls", body=b"m,via=https v=1 1\n", headers=headers)
answer = connection.getresponse(); answer.read()
assert answer.status == 204, answer.status
with socket.create_connection(("127.0.0.1", tcp_port), timeout=30) as raw:
    with context.wrap_socket(raw, server_hostname="localhost") as tls:
        tls.sendall(b"auth s3cret\nm,via=tcp v=2 2\n")
for _ in range(200):
    connection.request("GET", "/query?db=tls&q=SELECT%20count(v)%20FROM%20m", headers=headers)
    answer = connection.getresponse(); body = json.loads(answer.read())
    values = body["results"][0].get("series", [{}])[0].get("values", [[0, 0]])
    if values[0][1] == 2:
        break
    time.sleep(0.05)
print(answer.status, values[0][1], connection.sock.version())
"#;

const UNTRUSTING: &str = r#"
import http.client, ssl, sys
context = ssl.create_default_context()  # the system's CAs: not the test CA
connection = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=context, timeout=30)
try:
    connection.request("GET", "/ping")
    print("connected")
except ssl.SSLCertVerificationError as e:
    print("refused:", e.verify_message)
"#;

#[test]
fn tls_clients_write_and_query_and_plaintext_is_refused() {
    let dir = data_dir();
    let (cert, key, ca) = (
        fixture("server.pem"),
        fixture("server.key"),
        fixture("ca.pem"),
    );
    let server = Server::start(
        dir.path(),
        &[
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tcp",
            "127.0.0.1:0",
            "--tcp-db",
            "tls",
            "--auth-token",
            "s3cret",
        ],
    );
    assert!(server.stderr().contains("listening for HTTP on https://"));
    let out = python(CLIENT, &server, &ca);
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(fields[..2], ["200", "2"], "{out}");
    assert!(fields[2].starts_with("TLSv1."), "{out}");

    // A plaintext HTTP request gets no HTTP answer: the handshake fails and the
    // connection is closed.
    let mut plain = TcpStream::connect(server.http).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    plain
        .write_all(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    // Plaintext line protocol on the TCP port stores nothing.
    let mut plain = TcpStream::connect(server.tcp.unwrap()).unwrap();
    plain
        .write_all(b"auth s3cret\nm,via=plain v=3 3\n")
        .unwrap();
    drop(plain);
    let out = python(UNTRUSTING, &server, &ca);
    assert!(out.starts_with("refused:"), "{out}");
    assert!(server.stop().success());
    let rows = stored_rows(dir.path(), "tls", "m");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| !r.contains("plain")), "{rows:?}");
}

#[test]
fn tls_settings_are_checked_at_start() {
    let dir = data_dir();
    let data = dir.path().join("data");
    let cert = fixture("server.pem");
    let ca = fixture("ca.pem");
    for (args, named) in [
        (
            vec!["--tls-cert", cert.as_str()],
            "both --tls-cert and --tls-key",
        ),
        (
            vec!["--tls-cert", cert.as_str(), "--tls-key", ca.as_str()],
            "cannot read TLS key",
        ),
        (
            vec!["--tls-cert", "/nonexistent.pem", "--tls-key", ca.as_str()],
            "/nonexistent.pem",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["serve", "--http", "127.0.0.1:0", "--data-dir"])
            .arg(&data)
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}
