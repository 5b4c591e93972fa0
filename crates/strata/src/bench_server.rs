//! A `strata serve` child for the benchmarks that measure a real server (`bench scale`,
//! `bench matrix`, `bench mixed`): this very binary, optionally confined to the first k
//! cores with `taskset`, on free 127.0.0.1 ports and fresh data directories, stopped with
//! SIGTERM so it flushes (and killed if dropped before).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use strata_bench::http::HttpClient;
use strata_bench::scale::affinity_command;

/// How long a fresh server may take to answer `/ping`.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to flush and exit after SIGTERM.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(300);
/// Time between two polls while waiting for the server.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// How to start a server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Confine the server to the first k cores (`taskset -c 0-(k-1)`); `None`: all cores.
    pub cores: Option<usize>,
    /// Its data directories (one `--data-dir` each), emptied first.
    pub data_dirs: Vec<PathBuf>,
    /// `--shards`.
    pub shards: usize,
    /// `--wal-sync`.
    pub wal_sync: String,
    /// Open the plain TCP line-protocol listener too (into database `bench`).
    pub tcp: bool,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
    /// Further `strata serve` flags.
    pub extra_args: Vec<String>,
}

/// A running server child; killed (SIGKILL) if dropped before it was stopped.
pub struct Server {
    child: Child,
    /// `127.0.0.1:PORT` of its HTTP listener.
    pub addr: String,
    /// `127.0.0.1:PORT` of its TCP line-protocol listener, when the spec asked for one.
    pub tcp: Option<String>,
    log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Server {
    /// Starts the server of `spec` on emptied data directories and waits until it answers
    /// `/ping`.
    pub fn start(spec: &ServerSpec) -> Result<Server, String> {
        for dir in &spec.data_dirs {
            if dir.exists() {
                std::fs::remove_dir_all(dir)
                    .map_err(|e| format!("cannot empty {}: {e}", dir.display()))?;
            }
        }
        Self::launch(spec)
    }

    /// Starts the server of `spec` on its data directories as they are (after
    /// [`Server::stop`], which flushed them: to query the data as parts only).
    pub fn reopen(spec: &ServerSpec) -> Result<Server, String> {
        Self::launch(spec)
    }

    fn launch(spec: &ServerSpec) -> Result<Server, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find this program's path to start `strata serve`: {e}"))?;
        let log_file = File::create(&spec.log)
            .map_err(|e| format!("cannot create {}: {e}", spec.log.display()))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| format!("cannot open {} twice: {e}", spec.log.display()))?;
        let addr = format!("127.0.0.1:{}", free_port()?);
        let tcp = if spec.tcp {
            Some(format!("127.0.0.1:{}", free_port()?))
        } else {
            None
        };
        let mut args = serve_args(
            &spec.data_dirs,
            &addr,
            tcp.as_deref(),
            spec.shards,
            &spec.wal_sync,
        );
        args.extend(spec.extra_args.iter().cloned());
        let mut command = match spec.cores {
            Some(cores) => affinity_command(cores, &exe, &args),
            None => {
                let mut command = Command::new(&exe);
                command.args(&args);
                command
            }
        };
        command
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err);
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start `strata serve`: {e}"))?;
        let mut server = Server {
            child,
            addr,
            tcp,
            log: spec.log.clone(),
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The process id (for its CPU time and memory in /proc).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(10)..].join("\n")
    }

    /// Waits until `GET /ping` answers 204 (or the child dies, or the timeout passes).
    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < STARTUP_TIMEOUT {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "the server exited ({status}) before answering /ping; its log {}:\n{}",
                    self.log.display(),
                    self.log_tail()
                ));
            }
            let mut client = HttpClient::new(&self.addr, Duration::from_secs(2));
            if client.get("/ping").is_ok_and(|r| r.status == 204) {
                return Ok(());
            }
            std::thread::sleep(POLL_INTERVAL);
        }
        Err(format!(
            "the server did not answer /ping on {} within {STARTUP_TIMEOUT:?}; its log {}:\n{}",
            self.addr,
            self.log.display(),
            self.log_tail()
        ))
    }

    /// SIGTERM, then waits for a clean exit; returns how long the shutdown took.
    pub fn stop(&mut self) -> Result<Duration, String> {
        let started = Instant::now();
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .map_err(|e| format!("cannot run kill -TERM {}: {e}", self.pid()))?;
        if !status.success() {
            return Err(format!("kill -TERM {} failed ({status})", self.pid()));
        }
        while started.elapsed() < SHUTDOWN_TIMEOUT {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(started.elapsed()),
                Ok(Some(status)) => {
                    return Err(format!(
                        "the server exited with {status} after SIGTERM; its log {}:\n{}",
                        self.log.display(),
                        self.log_tail()
                    ));
                }
                Ok(None) => std::thread::sleep(POLL_INTERVAL),
                Err(e) => return Err(format!("cannot wait for the server: {e}")),
            }
        }
        Err(format!(
            "the server did not exit within {SHUTDOWN_TIMEOUT:?} of SIGTERM (killed)"
        ))
    }
}

/// A port free on 127.0.0.1 right now (the OS picks it; the server binds it next).
pub fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port on 127.0.0.1: {e}"))
}

/// The arguments of `strata serve`: its data directories, HTTP address, a TCP listener on
/// `tcp` when given, `shards` shards; no Postgres listener (benchmark servers run side by
/// side and must not fight over port 5432).
fn serve_args(
    data_dirs: &[PathBuf],
    addr: &str,
    tcp: Option<&str>,
    shards: usize,
    wal_sync: &str,
) -> Vec<String> {
    let mut args: Vec<String> = vec!["serve".into()];
    for dir in data_dirs {
        args.extend(["--data-dir".into(), dir.display().to_string()]);
    }
    args.extend([
        "--http".into(),
        addr.into(),
        "--pg".into(),
        "off".into(),
        "--shards".into(),
        shards.to_string(),
        "--wal-sync".into(),
        wal_sync.into(),
    ]);
    if let Some(tcp) = tcp {
        args.extend([
            "--tcp".into(),
            tcp.into(),
            "--tcp-db".into(),
            "bench".into(),
        ]);
    }
    args
}

/// The data directories of a run: `base` alone, or `base-disk1`, … under each of `disks`.
pub fn data_dirs(disks: &[PathBuf], run: &str, out_dir: &Path) -> Vec<PathBuf> {
    if disks.is_empty() {
        vec![out_dir.join(format!("data-{run}"))]
    } else {
        disks
            .iter()
            .map(|d| d.join(format!("data-{run}")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_is_started_with_its_dirs_and_shards_on_a_loopback_port() {
        let args = serve_args(
            &[PathBuf::from("/d/data-2cores")],
            "127.0.0.1:5000",
            None,
            2,
            "1s",
        );
        assert_eq!(
            args,
            [
                "serve",
                "--data-dir",
                "/d/data-2cores",
                "--http",
                "127.0.0.1:5000",
                "--pg",
                "off",
                "--shards",
                "2",
                "--wal-sync",
                "1s"
            ]
        );
        assert!(free_port().unwrap() > 0);
        let tcp = serve_args(
            &[PathBuf::from("/a"), PathBuf::from("/b")],
            "127.0.0.1:5000",
            Some("127.0.0.1:5001"),
            4,
            "1s",
        );
        assert_eq!(tcp[1..5], ["--data-dir", "/a", "--data-dir", "/b"]);
        assert_eq!(
            tcp[tcp.len() - 4..],
            ["--tcp", "127.0.0.1:5001", "--tcp-db", "bench"]
        );
        assert_eq!(tcp[10], "4");
    }

    #[test]
    fn runs_get_one_directory_per_disk() {
        let out = Path::new("/out");
        assert_eq!(
            data_dirs(&[], "2cores", out),
            [PathBuf::from("/out/data-2cores")]
        );
        assert_eq!(
            data_dirs(&[PathBuf::from("/d1"), PathBuf::from("/d2")], "2disks", out),
            [
                PathBuf::from("/d1/data-2disks"),
                PathBuf::from("/d2/data-2disks")
            ]
        );
    }
}
