//! Where `bench scale`'s loader runs: this process (its writers, batch generators and query
//! clients), pinned with `taskset -a -p -c LIST <pid>` (every thread it has now; threads
//! it starts later inherit the mask of the thread that starts them), or put back on every
//! CPU it was started with.

use std::process::Command;

use strata_bench::scale::{LoaderPlacement, format_cpu_list, parse_cpu_list};

/// The CPUs this process was started with, to pin within and to go back to.
pub(super) struct Loader {
    allowed: Vec<usize>,
}

impl Loader {
    /// Reads the CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status);
    /// call it before any pinning.
    pub(super) fn new() -> Result<Self, String> {
        let status = std::fs::read_to_string("/proc/self/status")
            .map_err(|e| format!("cannot read /proc/self/status for the loader's CPUs: {e}"))?;
        let list = status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .ok_or("/proc/self/status has no Cpus_allowed_list: cannot place the loader")?;
        Ok(Self {
            allowed: parse_cpu_list(list.trim())?,
        })
    }

    /// The CPUs this process was started with.
    pub(super) fn allowed(&self) -> &[usize] {
        &self.allowed
    }

    /// Pins this process to the placement's CPUs, or unpins it (back to every CPU it was
    /// started with).
    pub(super) fn place(&self, placement: &LoaderPlacement) -> Result<(), String> {
        set_affinity(
            std::process::id(),
            placement.cpus.as_deref().unwrap_or(&self.allowed),
        )
    }

    /// Back to every CPU this process was started with.
    pub(super) fn unpin(&self) -> Result<(), String> {
        set_affinity(std::process::id(), &self.allowed)
    }
}

/// `taskset -a -p -c LIST <pid>`: every thread of process `pid` on `cpus`.
fn set_affinity(pid: u32, cpus: &[usize]) -> Result<(), String> {
    let list = format_cpu_list(cpus);
    let pid = pid.to_string();
    let out = Command::new("taskset")
        .args(["-a", "-p", "-c", &list, &pid])
        .output()
        .map_err(|e| format!("cannot run taskset to pin the loader to cores {list}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`taskset -a -p -c {list} {pid}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus_of(pid: u32) -> Vec<usize> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap_or_default();
        parse_cpu_list(list.trim()).unwrap_or_default()
    }

    #[test]
    fn a_process_is_pinned_and_put_back() {
        // Not this process: the other tests of this binary run beside it.
        let loader = Loader::new().unwrap();
        assert_eq!(loader.allowed(), cpus_of(std::process::id()));
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let last = *loader.allowed().last().unwrap_or(&0);
        set_affinity(child.id(), &[last]).unwrap();
        assert_eq!(cpus_of(child.id()), [last]);
        set_affinity(child.id(), loader.allowed()).unwrap();
        assert_eq!(cpus_of(child.id()), loader.allowed());
        let error = set_affinity(child.id(), &[100_000]).unwrap_err();
        assert!(error.contains("taskset -a -p -c 100000"), "{error}");
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
