//! End-to-end: `strata serve` settings come from flags, environment variables and a TOML
//! file, in that order of precedence; `--help` documents each; bad settings are refused
//! with a message naming them.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{Server, data_dir};

fn strata(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

#[test]
fn help_documents_every_flag_with_its_default_and_env_var() {
    let out = strata(&["serve", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for (flag, env, default) in [
        ("--data-dir", "STRATA_DATA_DIR", "strata-data"),
        ("--http", "STRATA_HTTP", "127.0.0.1:8086"),
        ("--tcp", "STRATA_TCP", "off"),
        ("--tcp-db", "STRATA_TCP_DB", "strata"),
        ("--shards", "STRATA_SHARDS", "0"),
        ("--wal-sync", "STRATA_WAL_SYNC", "1s"),
        ("--auth-token", "STRATA_AUTH_TOKEN", "none"),
        ("--max-body-bytes", "STRATA_MAX_BODY_BYTES", "67108864"),
        ("--max-line-bytes", "STRATA_MAX_LINE_BYTES", "1048576"),
        (
            "--max-inflight-write-bytes",
            "STRATA_MAX_INFLIGHT_WRITE_BYTES",
            "268435456",
        ),
        ("--config", "STRATA_CONFIG", ""),
        ("--log", "RUST_LOG", "info"),
    ] {
        let start = help
            .find(&format!("{flag} "))
            .unwrap_or_else(|| panic!("{flag} missing:\n{help}"));
        let entry = &help[start..];
        let entry = &entry[..entry[2..].find("\n  -").map_or(entry.len(), |end| end + 2)];
        assert!(entry.contains(&format!("[env: {env}")), "{flag}: {entry}");
        assert!(
            entry.contains(&format!("[default: {default}")) || default.is_empty(),
            "{flag}: {entry}"
        );
    }
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let dir = data_dir();
    let config = dir.path().join("strata.toml");
    std::fs::write(
        &config,
        "max_body_bytes = 100\nwal_sync = \"500ms\"\ntcp_db = \"fromfile\"\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let body = "m v=1 1\n".repeat(20); // 160 bytes
    let data = dir.path().join("data");

    // File only: 100 bytes.
    let server = Server::start(&data, &["--config", config]);
    assert_eq!(server.post("/write?db=c", &body).status, 413);
    assert!(server.stop().success());

    // Environment over file: 1000 bytes.
    let env = [("STRATA_MAX_BODY_BYTES", "1000")];
    let server = Server::start_with_env(&data, &["--config", config], &env);
    assert_eq!(server.post("/write?db=c", &body).status, 204);
    assert!(server.stop().success());

    // Flag over environment: 150 bytes.
    let server = Server::start_with_env(
        &data,
        &["--config", config, "--max-body-bytes", "150"],
        &env,
    );
    assert_eq!(server.post("/write?db=c", &body).status, 413);
    assert!(server.stop().success());

    // The config file may also come from the environment.
    let server = Server::start_with_env(&data, &[], &[("STRATA_CONFIG", config)]);
    assert_eq!(server.post("/write?db=c", &body).status, 413);
    assert!(server.stop().success());
}

#[test]
fn bad_settings_are_refused_by_name() {
    let dir = data_dir();
    let config = dir.path().join("bad.toml");
    std::fs::write(&config, "http = \"127.0.0.1:0\"\nmax_body_byte = 5\n").unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--max-line-bytes", "2000000"], "max line bytes 2000000"),
        (&["--config", config.to_str().unwrap()], "max_body_byte"),
        (&["--wal-sync", "sometimes"], "sometimes"),
        (&["--http", "localhost"], "localhost"),
        (
            &["--config", "/nonexistent/strata.toml"],
            "cannot read config file",
        ),
    ];
    for (args, named) in cases {
        let mut all = vec!["serve", "--data-dir", data];
        if !args.contains(&"--http") {
            all.extend(["--http", "127.0.0.1:0"]);
        }
        all.extend_from_slice(args);
        let out = strata(&all);
        assert!(!out.status.success(), "{args:?} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}
