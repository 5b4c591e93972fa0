//! The process's limit of open files, raised for a server.
//!
//! Most systems start a process with a soft limit of 1,024 open files and a much higher
//! hard limit (systemd's default hard limit is 524,288). A server holds a file per
//! connection, per WAL segment and per part it keeps open, so it raises its soft limit to
//! the hard one, as Go's runtime does for every Go server (VictoriaMetrics, Prometheus,
//! InfluxDB). Part files are kept within half of the limit whatever it is
//! (`strata_storage::part::PartFiles`), so a low limit costs reopened files, not refused
//! writes.

/// Raises the soft limit of open files to the hard limit, before the engine opens, and
/// logs the limit the server runs with.
pub fn raise() {
    tracing::info!("{}", apply());
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // getrlimit/setrlimit: libc calls the standard library does not wrap.
fn apply() -> String {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return format!(
            "open files: the limit cannot be read: {}",
            std::io::Error::last_os_error()
        );
    }
    let show = |n: libc::rlim_t| {
        if n == libc::RLIM_INFINITY {
            "unlimited".to_owned()
        } else {
            n.to_string()
        }
    };
    if limit.rlim_cur >= limit.rlim_max {
        return format!("open files: limit {}", show(limit.rlim_cur));
    }
    let before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: setrlimit reads the struct it is given; raising the soft limit up to the
    // hard one needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        format!(
            "open files: limit raised from {} to the hard limit {}",
            show(before),
            show(limit.rlim_max)
        )
    } else {
        format!(
            "open files: limit {} (raising it to the hard limit {} failed: {})",
            show(before),
            show(limit.rlim_max),
            std::io::Error::last_os_error()
        )
    }
}

#[cfg(not(target_os = "linux"))]
fn apply() -> String {
    "open files: the platform's limit".into()
}
