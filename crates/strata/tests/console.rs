//! End-to-end: the web console at `/`, in a real browser.
//!
//! - The page and its assets are served from the binary with the right types, ETags
//!   (304 on revalidation) and a content security policy; unknown files are 404.
//! - Debian's Chromium (headless), driven by Selenium through chromedriver
//!   (`clients/console_browser.py`; `selenium` pinned in `.ci/run` and the README's test
//!   command), loads data's answers into the table and the chart, zooms, explores, reads
//!   a `strata bench write --json` report, switches theme and width, and must see no
//!   console error; screenshots land in `target/console-artifacts/`.
//! - With `--auth-token` the page asks for the token before anything loads.
//! - The console's JavaScript passes its own unit tests (`node --test`).
//!
//! Never skipped: without Chromium, chromedriver, Selenium or node the test fails, saying
//! what to install.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use common::{Server, data_dir, json, scratch, strata, text};

/// The pinned driver, as `.ci/run` and the README install it.
const SELENIUM: &str = "selenium==4.40.0";

fn console_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/console")
}

fn artifacts(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/console-artifacts")
        .join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// Table `cpu`: hosts a, b, c, one row every 10 s over the last 30 minutes (540 rows);
/// table `big`: 100,000 rows one second apart, field `n` counting from 0; database `other`
/// with 100 rows of `mem`. All flushed to parts.
fn load(server: &Server, token: Option<&str>) {
    let now = now_ns() / 1_000_000_000 * 1_000_000_000;
    let mut lines = String::new();
    for (h, host) in ["a", "b", "c"].iter().enumerate() {
        for i in 0..180i64 {
            let t = now - (180 - i) * 10_000_000_000;
            let usage = 20.0 * h as f64 + (i as f64 / 9.0).sin() * 5.0 + 30.0;
            lines.push_str(&format!("cpu,host={host} usage={usage} {t}\n"));
        }
    }
    for i in 0..100_000i64 {
        let t = now - 30 * 3_600_000_000_000 + i * 1_000_000_000;
        lines.push_str(&format!("big,host=z n={i}i {t}\n"));
    }
    let auth = token.map(|t| format!("Token {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let reply = server.request("POST", "/write?db=console", &headers, lines.as_bytes());
    assert_eq!(reply.status, 204, "{}", reply.text());
    // A small second database, for the panel's disk bytes by database.
    let other: String = (0..100i64)
        .map(|i| format!("mem,host=a used={i}i {}\n", now - i * 1_000_000_000))
        .collect();
    let reply = server.request("POST", "/write?db=other", &headers, other.as_bytes());
    assert_eq!(reply.status, 204, "{}", reply.text());
    // A backup flushes every memtable, so the rows are in parts and count as disk bytes.
    let backup = scratch(match token {
        Some(_) => "console_backup_token",
        None => "console_backup",
    });
    let path = format!("/api/v1/backup?to={}", backup.join("b").display());
    let reply = server.request("POST", &path, &headers, b"");
    assert_eq!(reply.status, 200, "{}", reply.text());
}

/// A real `strata bench write --json` report for the page to open.
fn bench_report() -> PathBuf {
    let dir = scratch("console_bench");
    let report = dir.join("report.json");
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
        dir.join("data").to_str().unwrap(),
        "--json",
        report.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(json(&report)["rows"], 300);
    report
}

fn browse(
    server: &Server,
    artifacts: &Path,
    bench: &Path,
    token: Option<&str>,
) -> serde_json::Value {
    for (tool, install) in [
        ("/usr/bin/chromium", "apt-get install chromium"),
        ("/usr/bin/chromedriver", "apt-get install chromium-driver"),
    ] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: `{install}` (the console test drives the real browser)"
        );
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/console_browser.py");
    let mut command = Command::new("python3");
    command
        .arg(&script)
        .arg(format!("http://{}", server.http))
        .arg(artifacts)
        .arg(bench);
    if let Some(token) = token {
        command.arg(token);
    }
    let out = command.output().unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("No module named 'selenium'"),
        "Selenium is missing: `python3 -m pip install {SELENIUM}`"
    );
    assert!(
        out.status.success(),
        "the browser run failed (screenshots in {}):\nstdout: {stdout}\nstderr: {stderr}\nserver: {}",
        artifacts.display(),
        server.stderr()
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("driver output is not JSON ({e}): {stdout}"))
}

#[test]
fn console_assets_are_served_from_the_binary() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let page = server.request("GET", "/", &[], b"");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page.text().contains("/console/app.js"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let etag = page.header("etag").unwrap().to_string();
    let again = server.request("GET", "/", &[("If-None-Match", &etag)], b"");
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    let script = server.request("GET", "/console/app.js", &[], b"");
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    let library = server.request("GET", "/console/vendor/uPlot.iife.min.js", &[], b"");
    assert_eq!(library.status, 200, "the charting library is embedded");
    let licence = server.request("GET", "/console/vendor/LICENSE-uPlot", &[], b"");
    assert_eq!(licence.status, 200, "its licence is kept beside it");
    for missing in [
        "/console/nope.js",
        "/console/package.json",
        "/console/tests/api.test.js",
    ] {
        assert_eq!(
            server.request("GET", missing, &[], b"").status,
            404,
            "{missing}"
        );
    }
    // The settings the server panel shows, named as serve's flags, as given (port 0: the
    // bound port is in the log).
    let flags = server
        .request("GET", "/api/v1/status/flags", &[], b"")
        .json();
    assert_eq!(flags["status"], "success");
    assert_eq!(flags["data"]["http"], "127.0.0.1:0");
    assert_eq!(flags["data"]["shards"], "2");
    assert_eq!(flags["data"]["auth-token"], "none");
    // The page holds no data: it is served without the token; the API and the settings
    // are not, and the token itself is never shown.
    let locked = Server::start(data_dir().path(), &["--auth-token", "s3cret"]);
    assert_eq!(locked.request("GET", "/", &[], b"").status, 200);
    for path in ["/query?q=SHOW%20DATABASES", "/api/v1/status/flags"] {
        assert_eq!(locked.request("GET", path, &[], b"").status, 401, "{path}");
    }
    let auth = [("Authorization", "Token s3cret")];
    let flags = locked.request("GET", "/api/v1/status/flags", &auth, b"");
    assert_eq!(flags.status, 200);
    assert_eq!(flags.json()["data"]["auth-token"], "set");
    assert!(!flags.text().contains("s3cret"));
}

#[test]
fn console_works_in_a_real_browser() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    load(&server, None);
    let bench = bench_report();
    let summary = browse(&server, &artifacts("main"), &bench, None);
    assert_eq!(summary["chart_series"], 3, "{summary}");
    assert!(summary["zoomed_rows"].as_u64().unwrap() < 540, "{summary}");
    assert!(
        summary["rendered_rows"].as_u64().unwrap() < 1000,
        "{summary}"
    );
    assert!(summary["sparklines"].as_u64().unwrap() >= 3, "{summary}");
    assert_eq!(
        summary["disk_databases"],
        serde_json::json!(["console", "other"]),
        "{summary}"
    );
    assert!(
        summary["interactive_ms"].as_f64().unwrap() < 1000.0,
        "{summary}"
    );
    for shot in ["chart", "table", "server", "bench", "dark", "phone"] {
        let png = artifacts("main").join(format!("{shot}.png"));
        let bytes = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        // A blank 1280x800 PNG compresses to a few kilobytes.
        assert!(bytes > 10_000, "{} is {bytes} bytes: blank?", png.display());
    }
}

#[test]
fn console_asks_for_the_token() {
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "s3cret"]);
    load(&server, Some("s3cret"));
    let bench = bench_report();
    let summary = browse(&server, &artifacts("token"), &bench, Some("s3cret"));
    assert_eq!(summary["token"], "ok");
}

#[test]
fn console_javascript_unit_tests_pass() {
    let out = Command::new("node")
        .args(["--test", "tests/"])
        .current_dir(console_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): `apt-get install nodejs`"));
    assert!(
        out.status.success(),
        "node --test failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // The runner's summary: some tests, none failed.
    let report = text(&out.stdout);
    assert!(report.contains("# fail 0"), "{report}");
    assert!(!report.contains("# pass 0"), "{report}");
}
