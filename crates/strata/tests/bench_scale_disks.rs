//! End-to-end: `strata bench scale --disks` sweeps data directories with seed 000's
//! large-row workload against the real server, on 127.0.0.1 only, at a tiny size.

mod common;

use common::{json, scratch, strata, text};

/// Part files (`*.part`) anywhere under `dir`.
fn part_files(dir: &std::path::Path) -> usize {
    let mut count = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "part") {
                count += 1;
            }
        }
    }
    count
}

#[test]
fn disk_sweep_spreads_large_rows_over_one_more_directory_each_run() {
    let dir = scratch("bench_scale_disks");
    let disks = [dir.join("disk1"), dir.join("disk2")];
    let disk_list = format!("{},{}", disks[0].display(), disks[1].display());
    let out_dir = dir.join("out");
    let out = strata(&[
        "bench",
        "scale",
        "--workload",
        "large-rows",
        "--meters",
        "8",
        "--rows-per-meter",
        "2",
        "--cores",
        "1",
        "--disks",
        &disk_list,
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("Disks | Shards | Writers | Rows per Second"),
        "{stdout}"
    );
    assert!(
        stdout.contains("note: the runs on 1 disk(s), on 2 disk(s) were too short"),
        "{stdout}"
    );

    let csv = std::fs::read_to_string(out_dir.join("scale.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    // cores 1; one then two directories; at least one shard per directory.
    assert!(lines[1].starts_with("1,1,1,"), "{csv}");
    assert!(lines[2].starts_with("1,2,2,"), "{csv}");
    let svg = std::fs::read_to_string(out_dir.join("scale.svg")).unwrap();
    assert!(svg.contains("data directories"), "the disk axis");

    for (run, dirs) in [(1, 1), (2, 2)] {
        let r = json(&out_dir.join(format!("write-{run}disks.json")));
        // 8 subtables x 2 rows, ten values each, every one acknowledged.
        assert_eq!(r["rows"], 16, "{r}");
        assert_eq!(r["points"], 160, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!(
            r["workload"].as_str().unwrap().contains("large-rows"),
            "{r}"
        );
        // Rows of 32 KB of random letters: even compressed, each row leaves kilobytes.
        let bytes = r["disk_bytes"].as_u64().unwrap();
        assert!(bytes > 16 * 20_000, "{bytes} bytes for 16 rows");
        // Run n spread its parts over the first n directories.
        for disk in &disks[..dirs] {
            let data = disk.join(format!("data-{run}disks"));
            assert!(part_files(&data) >= 1, "no part in {}", data.display());
        }
    }
    assert!(!disks[1].join("data-1disks").exists());

    let two_core_counts = strata(&["bench", "scale", "--disks", &disk_list, "--cores", "1,2"]);
    assert!(!two_core_counts.status.success());
    assert!(
        text(&two_core_counts.stderr).contains("give --cores one number"),
        "{}",
        text(&two_core_counts.stderr)
    );
}
