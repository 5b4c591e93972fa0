//! The cores a server may run on (`Cpus_allowed_list` in `/proc/PID/status`), and the notes
//! that tell the reader whether the targets (and the loader) share them.

use std::collections::BTreeSet;

/// The cores of a `Cpus_allowed_list` value (`0-3,8,10-11`), sorted.
pub fn parse_cpu_list(list: &str) -> Result<BTreeSet<usize>, String> {
    let bad = |why: &str| format!("CPU list {list:?}: {why}");
    let mut cores = BTreeSet::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let number = |s: &str| s.trim().parse::<usize>().map_err(|_| bad("not a number"));
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => (number(part)?, number(part)?),
        };
        if last < first {
            return Err(bad("a range runs backwards"));
        }
        // Bounded: no machine has a million cores; a bigger range is a bad value.
        if last - first > 1 << 20 {
            return Err(bad("a range is implausibly long"));
        }
        cores.extend(first..=last);
    }
    if cores.is_empty() {
        return Err(bad("no cores"));
    }
    Ok(cores)
}

/// The `Cpus_allowed_list` value of a `/proc/PID/status` text.
pub fn cpus_allowed_list(status: &str) -> Option<&str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(str::trim)
}

/// The cores process `pid` may run on (its `Cpus_allowed_list`), `None` when /proc does
/// not tell (no such process, not Linux).
pub fn allowed_cores(pid: Option<u32>) -> Option<String> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    cpus_allowed_list(&status).map(str::to_string)
}

/// What the table's readers must know about the targets' cores: whether every target is
/// confined to the same cores (the user's job; the tool checks), and whether the loader
/// shares them. `targets` are (name, allowed cores); `loader` the loader's own.
pub fn affinity_notes(targets: &[(String, Option<String>)], loader: Option<&str>) -> Vec<String> {
    let mut notes = Vec::new();
    let unknown: Vec<&str> = targets
        .iter()
        .filter(|(_, cores)| cores.is_none())
        .map(|(name, _)| name.as_str())
        .collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "warning: cannot check the cores of {} (give pid= so the tool reads \
             /proc/PID/status): the targets may not be confined to the same cores",
            unknown.join(", ")
        ));
    }
    let known: Vec<(&str, BTreeSet<usize>, &str)> = targets
        .iter()
        .filter_map(|(name, cores)| {
            let list = cores.as_deref()?;
            parse_cpu_list(list)
                .ok()
                .map(|set| (name.as_str(), set, list))
        })
        .collect();
    let distinct: BTreeSet<&BTreeSet<usize>> = known.iter().map(|(_, set, _)| set).collect();
    if distinct.len() > 1 {
        let each: Vec<String> = known
            .iter()
            .map(|(name, set, list)| format!("{name}: {list} ({} cores)", set.len()))
            .collect();
        notes.push(format!(
            "warning: the targets may run on different cores ({}): confine each to the same \
             cores (taskset -c) or the comparison measures the machine, not the database",
            each.join("; ")
        ));
    } else if let (Some((_, _, list)), 2..) = (known.first(), known.len()) {
        let which = if unknown.is_empty() {
            "every target is".to_string()
        } else {
            let names: Vec<&str> = known.iter().map(|(name, _, _)| *name).collect();
            format!("the targets with a pid ({}) are", names.join(", "))
        };
        notes.push(format!("{which} confined to the same cores: {list}"));
    }
    let loader = loader.and_then(|l| parse_cpu_list(l).ok().map(|set| (set, l)));
    if let Some((loader_set, list)) = loader {
        let shared: Vec<&str> = known
            .iter()
            .filter(|(_, set, _)| !set.is_disjoint(&loader_set))
            .map(|(name, _, _)| *name)
            .collect();
        if !shared.is_empty() {
            notes.push(format!(
                "note: the loader may run on cores {list}, shared with {}: it competes with \
                 the server for CPU (run the loader under taskset on other cores to avoid it)",
                shared.join(", ")
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_affinity_is_checked() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11")
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            [0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("5\n").unwrap().len(), 1);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("").is_err());
        let status =
            "Name:\tinfluxd\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\nMems_allowed:\t1\n";
        assert_eq!(cpus_allowed_list(status), Some("0-3"));
        assert_eq!(cpus_allowed_list("Name:\tx\n"), None);
        // This process's own list parses (Linux).
        assert!(parse_cpu_list(&allowed_cores(None).unwrap()).is_ok());
        assert_eq!(allowed_cores(Some(u32::MAX - 1)), None);

        let named = |list: &[(&str, Option<&str>)]| -> Vec<(String, Option<String>)> {
            list.iter()
                .map(|(n, c)| (n.to_string(), c.map(str::to_string)))
                .collect()
        };
        let same = affinity_notes(
            &named(&[("a", Some("0-1")), ("b", Some("0,1"))]),
            Some("2-3"),
        );
        assert_eq!(same, ["every target is confined to the same cores: 0-1"]);
        let differ = affinity_notes(&named(&[("a", Some("0-1")), ("b", Some("0-3"))]), None);
        assert_eq!(differ.len(), 1);
        assert!(differ[0].starts_with("warning: the targets may run on different cores"));
        assert!(
            differ[0].contains("a: 0-1 (2 cores); b: 0-3 (4 cores)"),
            "{}",
            differ[0]
        );
        let unknown = affinity_notes(&named(&[("a", Some("0-1")), ("b", None)]), None);
        assert!(
            unknown[0].contains("cannot check the cores of b"),
            "{unknown:?}"
        );
        assert_eq!(unknown.len(), 1, "one known target: nothing to compare");
        let three = affinity_notes(
            &named(&[("a", Some("0-1")), ("b", None), ("c", Some("0-1"))]),
            None,
        );
        assert_eq!(
            three[1],
            "the targets with a pid (a, c) are confined to the same cores: 0-1"
        );
        let shared = affinity_notes(
            &named(&[("a", Some("0-1")), ("b", Some("0-1"))]),
            Some("1-3"),
        );
        assert!(shared[1].contains("shared with a, b"), "{shared:?}");
    }
}
