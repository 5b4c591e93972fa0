//! `psql` (Debian's postgresql-client, which `.ci/run` installs) against a test server's
//! Postgres listener.

use std::process::{Command, Output};

use super::Server;

/// Runs `psql` against `server` with `args`, `stdin` as its input and `env` set; fails
/// loudly when psql is missing.
pub fn psql(server: &Server, args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let pg = server.pg.unwrap();
    let mut command = Command::new("psql");
    command
        .args([
            "-X",
            "-h",
            &pg.ip().to_string(),
            "-p",
            &pg.port().to_string(),
        ])
        .args(args)
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|e| {
        panic!(
            "cannot run psql ({e}); .ci/run installs Debian's postgresql-client \
             (apt-get install postgresql-client)"
        )
    });
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
