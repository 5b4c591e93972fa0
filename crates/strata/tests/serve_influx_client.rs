//! End-to-end: the official InfluxDB 2.x Python client (`influxdb-client` from PyPI)
//! writes to `strata serve` unchanged, with a token.
//!
//! Skipped, with a message, only when the package is not installed AND the `CI`
//! environment variable is unset; in CI it must run (`.ci/run` installs the package).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{Server, data_dir, stored_rows};

fn client_installed() -> bool {
    Command::new("python3")
        .args(["-c", "import influxdb_client"])
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn influxdb_python_client_writes() {
    if !client_installed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but the Python package influxdb-client is not installed \
             (python3 -m pip install influxdb-client)"
        );
        println!(
            "SKIPPED influxdb_python_client_writes: python3 cannot import influxdb_client \
             (install it with: python3 -m pip install influxdb-client)"
        );
        return;
    }
    let dir = data_dir();
    let server = Server::start(dir.path(), &["--auth-token", "py-token"]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/influx_python.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(format!("http://{}", server.http))
        .args(["py-token", "pybucket"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "client failed:\nstdout: {}\nstderr: {}\nserver: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    assert!(server.stop().success());
    let seconds = 1_700_000_000_000_000_000_i64;
    let second = 1_000_000_000_i64;
    assert_eq!(
        stored_rows(dir.path(), "pybucket", "weather"),
        [
            format!("station=raw {seconds} temperature=Float(1.5)"),
            format!("station=s0 {seconds} humidity=Integer(40) temperature=Float(20.5)"),
            format!(
                "station=s1 {} humidity=Integer(41) temperature=Float(21.5)",
                seconds + second
            ),
            format!(
                "station=s2 {} humidity=Integer(42) temperature=Float(22.5)",
                seconds + 2 * second
            ),
        ]
    );
}
