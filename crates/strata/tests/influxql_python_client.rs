//! End-to-end: the InfluxDB 1.x Python client (`influxdb` from PyPI, pinned in `.ci/run`
//! and the README's test command) against `strata serve`'s `/query` and `/write`:
//! databases, `write_points`, queries read through `ResultSet`, `epoch`, `bind_params`,
//! chunked answers and measurements. `clients/influx1_python.py` makes the calls and
//! checks every answer; this test runs it and requires it to pass.
//!
//! Never skipped: without the package the test fails, saying how to install it.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{Server, data_dir};

/// The pinned version, as `.ci/run` and the README install it.
const PINNED: &str = "influxdb==5.3.2";

#[test]
fn influxdb_1x_python_client() {
    let import = Command::new("python3")
        .args(["-c", "import influxdb; print(influxdb.__version__)"])
        .output()
        .expect("run python3");
    assert!(
        import.status.success(),
        "python3 cannot import the InfluxDB 1.x client `influxdb` ({}); .ci/run installs it \
         (python3 -m pip install {PINNED}), as does the README's test command",
        String::from_utf8_lossy(&import.stderr).trim()
    );
    let dir = data_dir();
    let server = Server::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/influx1_python.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(server.http.ip().to_string())
        .arg(server.http.port().to_string())
        .arg("pydb1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "client checks failed:\nstdout: {stdout}\nstderr: {}\nserver: {}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr()
    );
    assert!(server.stop().success());
}
