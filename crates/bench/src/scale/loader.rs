//! Where `bench scale`'s loader runs: CPU lists in `taskset -c` form, and the loader's
//! cores for a run ([`loader_placement`]): `--loader-cores`, else the cores the server does
//! not get, else unpinned (sharing the server's cores).

/// Parses a CPU list in `taskset -c` form (`2-15`, `0,3,5-7`) into sorted, distinct CPU
/// numbers.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let bad = |why: &str| format!("bad CPU list {text:?}: {why} (e.g. 2-15 or 0,3,5-7)");
    let number = |part: &str| {
        part.trim()
            .parse::<usize>()
            .map_err(|_| bad(&format!("{:?} is not a CPU number", part.trim())))
    };
    let mut cpus = Vec::new();
    for part in text.split(',') {
        if part.trim().is_empty() {
            return Err(bad("an empty entry"));
        }
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if first > last {
                    return Err(bad(&format!("the range {first}-{last} runs backwards")));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(number(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// CPU numbers in `taskset -c` form, runs as ranges: `[0, 1, 2, 5, 7, 8]` is `0-2,5,7-8`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            sorted[i].to_string()
        } else {
            format!("{}-{}", sorted[i], sorted[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Where the loader runs during one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoaderPlacement {
    /// The CPUs to pin the loader to; `None`: unpinned (every CPU it was started with).
    pub cpus: Option<Vec<usize>>,
    /// Whether the loader may run on a core of the server's (`0..server_cores`).
    pub shares_cores: bool,
}

impl LoaderPlacement {
    /// The loader's cores in `taskset -c` form, or `unpinned`.
    pub fn describe(&self) -> String {
        self.cpus
            .as_deref()
            .map_or_else(|| "unpinned".to_string(), format_cpu_list)
    }
}

/// Where the loader of a run whose server gets the first `server_cores` cores (`0..k`)
/// runs: on `asked` (`--loader-cores`) when given; else, when the machine has more cores
/// than the server gets, on the CPUs this process may use (`allowed`) that the server does
/// not get; else unpinned, sharing the server's cores.
pub fn loader_placement(
    asked: Option<&[usize]>,
    server_cores: usize,
    machine_cores: usize,
    allowed: &[usize],
) -> LoaderPlacement {
    if let Some(cpus) = asked {
        return LoaderPlacement {
            cpus: Some(cpus.to_vec()),
            shares_cores: cpus.iter().any(|c| *c < server_cores),
        };
    }
    let rest: Vec<usize> = allowed
        .iter()
        .copied()
        .filter(|c| *c >= server_cores)
        .collect();
    if server_cores < machine_cores && !rest.is_empty() {
        LoaderPlacement {
            cpus: Some(rest),
            shares_cores: false,
        }
    } else {
        LoaderPlacement {
            cpus: None,
            shares_cores: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format_as_taskset_writes_them() {
        assert_eq!(
            parse_cpu_list("2-15").unwrap(),
            (2..=15).collect::<Vec<_>>()
        );
        assert_eq!(parse_cpu_list("7, 0,3-5,4").unwrap(), [0, 3, 4, 5, 7]);
        assert_eq!(parse_cpu_list("1").unwrap(), [1]);
        for (bad, why) in [
            ("", "empty entry"),
            ("1,,2", "empty entry"),
            ("a-3", "not a CPU number"),
            ("5-2", "runs backwards"),
            ("-1", "not a CPU number"),
        ] {
            let error = parse_cpu_list(bad).unwrap_err();
            assert!(error.contains(why), "{bad:?}: {error}");
        }
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(format_cpu_list(&[3]), "3");
        assert_eq!(format_cpu_list(&[4, 2, 3, 3]), "2-4");
        assert_eq!(format_cpu_list(&[]), "");
        let list = "0-3,8,10-11";
        assert_eq!(format_cpu_list(&parse_cpu_list(list).unwrap()), list);
    }

    #[test]
    fn the_loader_gets_the_cores_the_server_does_not() {
        let all: Vec<usize> = (0..16).collect();
        // 16 cores, server on 0-3: loader on 4-15.
        let p = loader_placement(None, 4, 16, &all);
        assert_eq!(p.describe(), "4-15");
        assert!(!p.shares_cores);
        // The server gets every core: unpinned, shared.
        let p = loader_placement(None, 16, 16, &all);
        assert_eq!((p.cpus.clone(), p.shares_cores), (None, true));
        assert_eq!(p.describe(), "unpinned");
        // Only the CPUs this process may use.
        let p = loader_placement(None, 1, 4, &[0, 1, 6]);
        assert_eq!(p.describe(), "1,6");
        let p = loader_placement(None, 2, 4, &[0, 1]);
        assert_eq!((p.cpus, p.shares_cores), (None, true));
        // Asked for: as asked, shared when it overlaps 0..k.
        let p = loader_placement(Some(&[2, 3]), 2, 16, &all);
        assert_eq!((p.describe(), p.shares_cores), ("2-3".to_string(), false));
        let p = loader_placement(Some(&[2, 3]), 3, 16, &all);
        assert_eq!((p.describe(), p.shares_cores), ("2-3".to_string(), true));
    }
}
