//! Bad input and damaged files at the engine level: every rejected line is reported with its
//! line (and column for syntax), the good lines of the same write are kept; damaged files
//! are typed errors naming the file, never a panic.

#![allow(clippy::unwrap_used)] // test helpers: a panic is the failure report

use std::path::Path;
use std::time::Duration;

use strata_lineproto::Precision;
use strata_storage::{Engine, EngineOptions, ReadRequest, StorageError};

fn options(dir: &Path) -> EngineOptions {
    EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        background: false,
        partition_duration: Duration::from_secs(3600),
        ..EngineOptions::default()
    }
}

fn rows_of(engine: &Engine, table: &str) -> usize {
    let Some(id) = engine.catalog().table_id("db", table) else {
        return 0;
    };
    engine
        .read(&ReadRequest::all(id))
        .unwrap()
        .iter()
        .map(|s| s.data.rows())
        .sum()
}

#[test]
fn bad_lines_are_reported_and_good_lines_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(options(dir.path())).unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(b"m,host=a v=1i 1\n"); // 1: good
    body.extend_from_slice(b"m,host=a v=1.5 2\n"); // 2: type conflict (v is integer)
    body.extend_from_slice(b"m,ho\xffst=a v=1i 3\n"); // 3: invalid UTF-8 in a tag key
    body.extend_from_slice(b"m,host=a v=2i 99999999999999999\n"); // 4: timestamp overflows at ms
    body.extend_from_slice(b"m,host=a time=2i 5\n"); // 5: reserved column name
    body.extend_from_slice(b"m,host=b v=3i 6\n"); // 6: good
    body.extend_from_slice(b"m,host=a host=1i 7\n"); // 7: field named like a tag
    let report = engine
        .write_lines("db", &body, Precision::Milliseconds)
        .unwrap();
    assert_eq!(report.rows, 2, "{report:?}");
    let lines: Vec<usize> = report.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 7]);
    let messages: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages[0],
        "line 2: field \"v\" of table \"m\" is integer, got float"
    );
    assert!(
        messages[1].starts_with("line 3, column 5: invalid UTF-8"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].starts_with("line 4, column "),
        "{}",
        messages[2]
    );
    assert!(messages[2].contains("overflow"), "{}", messages[2]);
    assert_eq!(
        messages[3],
        "line 5: column \"time\" of table \"m\" is reserved for the timestamp"
    );
    assert_eq!(
        messages[4],
        "line 7: column \"host\" of table \"m\" is a tag"
    );
    assert_eq!(rows_of(&engine, "m"), 2);

    let err = engine
        .write_lines("", b"m v=1 1\n", Precision::Nanoseconds)
        .unwrap_err();
    assert!(matches!(err, StorageError::Invalid(_)), "{err}");
}

#[test]
fn truncated_manifest_is_a_typed_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (engine, _) = Engine::open(options(dir.path())).unwrap();
        engine
            .write_lines(
                "db",
                b"m,host=a v=1i 1\nm,host=b v=1i 1\n",
                Precision::Nanoseconds,
            )
            .unwrap();
        engine.flush().unwrap();
        engine.close().unwrap();
    }
    let manifest = dir.path().join("shard-0").join("MANIFEST");
    let bytes = std::fs::read(&manifest).unwrap();
    std::fs::write(&manifest, &bytes[..bytes.len() / 2]).unwrap();
    match Engine::open(options(dir.path())) {
        Err(StorageError::Corrupt { path, .. }) => assert_eq!(path, manifest),
        other => panic!("expected Corrupt naming the manifest, got {other:?}"),
    }
}

/// A flipped byte in a part is found, never read as wrong data: damage to the header, index
/// or footer sets the part aside at open (the engine opens without it); damage to a block
/// is an error naming the part when a read decodes it, and sets it aside then.
#[test]
fn flipped_part_bytes_are_quarantined_or_errors_naming_the_part_never_wrong_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (engine, _) = Engine::open(EngineOptions {
            shards: 1,
            ..options(dir.path())
        })
        .unwrap();
        let body: String = (0..200)
            .map(|i| format!("m,host=h{} v={}i,w={i}.25 {}\n", i % 7, i * 3, i))
            .collect();
        engine
            .write_lines("db", body.as_bytes(), Precision::Nanoseconds)
            .unwrap();
        engine.flush().unwrap();
        engine.close().unwrap();
    }
    let part = find_part(dir.path()).unwrap();
    let good = std::fs::read(&part).unwrap();
    let manifest = dir.path().join("shard-0").join("MANIFEST");
    let good_manifest = std::fs::read(&manifest).unwrap();
    let quarantine = dir.path().join("quarantine");
    let expected = {
        let (engine, _) = Engine::open(EngineOptions {
            shards: 1,
            ..options(dir.path())
        })
        .unwrap();
        let table = engine.catalog().table_id("db", "m").unwrap();
        engine.read(&ReadRequest::all(table)).unwrap()
    };
    let (mut set_aside, mut read_errors) = (0, 0);
    for position in (0..good.len()).step_by(good.len() / 97 + 1) {
        let mut bad = good.clone();
        bad[position] ^= 0x5A;
        let _ = std::fs::remove_dir_all(&quarantine);
        std::fs::write(&manifest, &good_manifest).unwrap();
        std::fs::write(&part, &bad).unwrap();
        let (engine, report) = Engine::open(EngineOptions {
            shards: 1,
            ..options(dir.path())
        })
        .unwrap_or_else(|e| panic!("byte {position}: the engine does not open: {e}"));
        let table = engine.catalog().table_id("db", "m").unwrap();
        let read = engine.read(&ReadRequest::all(table));
        if let [quarantined] = report.quarantined.as_slice() {
            set_aside += 1;
            let moved = quarantined.moved_to.as_ref().expect("moved");
            assert!(
                moved.starts_with(&quarantine),
                "byte {position}: {quarantined}"
            );
            assert_eq!(std::fs::read(moved).unwrap(), bad, "byte {position}");
            assert!(!part.exists(), "byte {position}: still in place");
            assert_eq!(engine.stats().parts_quarantined, 1);
            assert!(
                read.unwrap().is_empty(),
                "byte {position}: rows without the part"
            );
            continue;
        }
        assert!(report.quarantined.is_empty(), "byte {position}");
        match read {
            Err(StorageError::Corrupt { path, reason, .. }) => {
                // Found by the read: set aside then, and the next read answers without it.
                read_errors += 1;
                assert_eq!(path, part, "byte {position}");
                assert!(reason.contains("the part was set aside"), "{reason}");
                assert_eq!(engine.stats().parts_quarantined, 1, "byte {position}");
                assert!(!part.exists(), "byte {position}: still in place");
                let again = engine.read(&ReadRequest::all(table)).unwrap();
                assert!(again.is_empty(), "byte {position}: rows without the part");
            }
            Err(other) => panic!("byte {position}: expected Corrupt, got {other}"),
            Ok(rows) => assert_eq!(
                rows, expected,
                "byte {position}: a flip changed the data silently"
            ),
        }
    }
    assert!(
        set_aside > 0 && read_errors > 0,
        "{set_aside} {read_errors}"
    );
    std::fs::write(&part, &good).unwrap();
}

fn find_part(dir: &Path) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_part(&path) {
                return Some(found);
            }
        } else if path.extension().is_some_and(|x| x == "part") {
            return Some(path);
        }
    }
    None
}
