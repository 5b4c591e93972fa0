//! End-to-end: run the real `strata` binary and check what it writes and says.

mod common;

use common::{scratch, strata, text};

#[test]
fn generate_is_deterministic_and_checks_clean() {
    let dir = scratch("generate_deterministic");
    let a = dir.join("a.lp");
    let b = dir.join("b.lp.gz");
    let c = dir.join("c.lp");
    let common = ["bench", "generate", "--hosts", "7", "--duration", "2min"];
    for (path, seed) in [(&a, "5"), (&b, "5"), (&c, "6")] {
        let mut args = common.to_vec();
        args.extend(["--seed", seed, "--out", path.to_str().unwrap()]);
        let out = strata(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let plain = std::fs::read(&a).unwrap();
    assert_eq!(plain.iter().filter(|b| **b == b'\n').count(), 7 * 12);
    assert_ne!(
        plain,
        std::fs::read(&c).unwrap(),
        "another seed, other data"
    );

    for path in [&a, &b] {
        let out = strata(&["lp", "check", path.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report = text(&out.stdout);
        assert!(
            report.contains(": 84 rows, 840 points, 0 bad lines;"),
            "{report}"
        );
    }
}

#[test]
fn meters_generate_with_millisecond_timestamps() {
    let out = strata(&[
        "bench",
        "generate",
        "--workload",
        "meters",
        "--meters",
        "3",
        "--rows-per-meter",
        "4",
        "--interlace-rows",
        "2",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 12);
    assert!(
        lines[0].starts_with("meters,tbname=d0,groupid="),
        "{}",
        lines[0]
    );
    assert!(lines[0].ends_with(" 1500000000000"), "{}", lines[0]);
    assert!(lines[2].starts_with("meters,tbname=d1,"), "{}", lines[2]);
    assert!(lines[7].ends_with(" 1500000000003"), "{}", lines[7]);
}

#[test]
fn bad_flags_fail_clearly_and_create_nothing() {
    let dir = scratch("bad_flags");
    let path = dir.join("x.lp");
    let out = strata(&[
        "bench",
        "generate",
        "--interval",
        "0s",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--interval 0s must be between"),
        "{}",
        text(&out.stderr)
    );
    assert!(!path.exists());

    let out = strata(&["bench", "generate", "--workload", "nope"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("invalid value 'nope'"),
        "{}",
        text(&out.stderr)
    );

    let out = strata(&["lp", "check", dir.join("missing.lp").to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("cannot open"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_reports_bad_lines_with_file_line_and_column() {
    let dir = scratch("check_bad_lines");
    let path = dir.join("mixed.lp");
    std::fs::write(&path, "m f=1i 1\nm f=1i,g 2\n# comment\nm f=\"ok\" 3\n").unwrap();
    let out = strata(&["lp", "check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let expected_prefix = format!("{}:line 2, column 9: ", path.display());
    assert!(stderr.starts_with(&expected_prefix), "{stderr}");
    assert!(
        text(&out.stdout).contains(": 2 rows, 2 points, 1 bad lines;"),
        "{}",
        text(&out.stdout)
    );
}
