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
        ("--retention", "STRATA_RETENTION", "0"),
        ("--max-series", "STRATA_MAX_SERIES", "none"),
        ("--wal-recovery", "STRATA_WAL_RECOVERY", "strict"),
        ("--auth-token", "STRATA_AUTH_TOKEN", "none"),
        ("--read-only-token", "STRATA_READ_ONLY_TOKEN", "none"),
        ("--tls-cert", "STRATA_TLS_CERT", "none"),
        ("--tls-key", "STRATA_TLS_KEY", "none"),
        ("--max-body-bytes", "STRATA_MAX_BODY_BYTES", "67108864"),
        ("--max-line-bytes", "STRATA_MAX_LINE_BYTES", "1048576"),
        (
            "--max-inflight-write-bytes",
            "STRATA_MAX_INFLIGHT_WRITE_BYTES",
            "268435456",
        ),
        ("--lake", "STRATA_LAKE", "off"),
        ("--tier-after", "STRATA_TIER_AFTER", "1d"),
        ("--tier-interval", "STRATA_TIER_INTERVAL", "1m"),
        ("--lake-read-only", "STRATA_LAKE_READ_ONLY", "off"),
        ("--config", "STRATA_CONFIG", ""),
        ("--log", "RUST_LOG", "info"),
    ] {
        let start = help
            .find(&format!("{flag} "))
            .or_else(|| help.find(&format!("{flag}\n"))) // a flag without a value
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
    let cases: [(&[&str], &str); 8] = [
        (&["--wal-recovery", "lenient"], "wal recovery \"lenient\""),
        (
            &["--retention", "3 fortnights"],
            "retention \"3 fortnights\"",
        ),
        (&["--max-series", "0"], "max series \"0\""),
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

/// `--retention` (and the file's `retention`) is every database's default: a row older
/// than it is refused with InfluxDB's words and counted; a database's own setting (SQL)
/// overrides it, and `SHOW RETENTION POLICIES` shows what applies.
#[test]
fn retention_setting_refuses_old_rows_and_databases_can_override_it() {
    let dir = data_dir();
    let config = dir.path().join("strata.toml");
    std::fs::write(&config, "retention = \"3d\"\n").unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--config", config.to_str().unwrap()]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let old = now - 4 * 86_400;
    let body = format!("m v=1 {now}\nm v=2 {old}\n");
    let response = server.post("/write?db=a&precision=s", &body);
    assert_eq!(response.status, 400, "{}", response.text());
    let answer = response.json();
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.starts_with("partial write: points beyond retention policy dropped=1"),
        "{error}"
    );
    assert_eq!(answer["written"], 1);
    assert_eq!(answer["lines"][0]["line"], 2);
    assert_eq!(
        common::metric(&server.metrics(), "strata_retention_rows_rejected_total"),
        1.0
    );

    // Database `b` keeps rows forever (InfluxQL's retention policy statements set it): the
    // old row is taken there.
    let influxql = |path: &str, statement: &str| {
        let form = format!("q={}", statement.replace(' ', "%20"));
        let form_type = [("Content-Type", "application/x-www-form-urlencoded")];
        server.request("POST", path, &form_type, form.as_bytes())
    };
    let created = influxql("/query", "CREATE DATABASE b WITH DURATION INF");
    assert_eq!(created.text(), "{\"results\":[{\"statement_id\":0}]}\n");
    assert_eq!(server.post("/write?db=b&precision=s", &body).status, 204);
    let policies = |db: &str| {
        let answer = influxql("/query", &format!("SHOW RETENTION POLICIES ON {db}"));
        answer.json()["results"][0]["series"][0]["values"][0][1].clone()
    };
    assert_eq!(policies("a"), "72h0m0s");
    assert_eq!(policies("b"), "0s");
    let count = influxql("/query?db=b", "SELECT count(v) FROM m");
    assert_eq!(count.json()["results"][0]["series"][0]["values"][0][1], 2);
    let count = influxql("/query?db=a", "SELECT count(v) FROM m");
    assert_eq!(count.json()["results"][0]["series"][0]["values"][0][1], 1);
    assert!(server.stop().success());
}

/// `CREATE DOWNSAMPLE` on a running server: the background thread keeps the target table
/// current (here once a backup has flushed the rows), `/metrics` says how far behind it is,
/// and the target's own retention outlives the source's.
#[test]
fn a_running_server_keeps_its_downsamples_current() {
    let dir = data_dir();
    let server = Server::start(&dir.path().join("data"), &["--retention", "30d"]);
    let url = format!("http://{}", server.http);
    let try_sql = |statement: &str| {
        let out = strata(&[
            "sql", "--url", &url, "--db", "a", "--format", "csv", statement,
        ]);
        match out.status.success() {
            true => Ok(common::text(&out.stdout)),
            false => Err(common::text(&out.stderr)),
        }
    };
    let sql = |statement: &str| try_sql(statement).unwrap_or_else(|e| panic!("{statement}: {e}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let minute = now / 60 * 60 - 600;
    let body: String = (0..6)
        .map(|i| format!("cpu,host=h{} usage={}.5 {}\n", i % 2, i, minute + i))
        .collect();
    assert_eq!(server.post("/write?db=a&precision=s", &body).status, 204);
    sql("CREATE DOWNSAMPLE cpu_1m FROM cpu INTERVAL 1m AGGREGATES (avg, count) RETENTION 400d");
    let shown = sql("SHOW DOWNSAMPLES");
    assert!(
        shown.contains("cpu_1m,cpu,1m,\"avg, count\",400d,"),
        "{shown}"
    );
    let backup = dir.path().join("backup");
    let flushed = server.request(
        "POST",
        &format!("/api/v1/backup?to={}", backup.to_str().unwrap()),
        &[],
        b"",
    );
    assert_eq!(flushed.status, 200, "{}", flushed.text());
    // The thread's tick is 10 s; allow three. Until its first round the table has no
    // columns to select.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let rows = loop {
        let rows = try_sql("SELECT host, usage_avg, usage_count FROM cpu_1m ORDER BY host");
        if rows.as_ref().is_ok_and(|r| r.lines().count() == 3)
            || std::time::Instant::now() > deadline
        {
            break rows.unwrap();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(rows, "host,usage_avg,usage_count\nh0,2.5,3\nh1,3.5,3\n");
    let metrics = server.metrics();
    assert!(common::metric(&metrics, "strata_downsample_rounds_total") >= 1.0);
    assert_eq!(common::metric(&metrics, "strata_downsamples"), 1.0);
    assert!(common::metric(&metrics, "strata_downsample_rows_written_total") >= 2.0);
    assert!(common::metric(&metrics, "strata_downsample_lag_seconds") < 60.0);
    assert!(server.stop().success());
}
