//! Writes that fail for want of space: the WAL cuts a partly written segment back to its
//! last whole record, keeps the unwritten records pending, in order, and writes them once
//! space returns; nothing is lost, nothing written twice, no segment is left damaged.
//!
//! Space runs out through `RLIMIT_FSIZE` (writes past the limit fail with `EFBIG`, like
//! `ENOSPC` on a full disk: a partial write, then the error), so no privilege is needed.
//! The limit is per process: this file holds one test, so nothing else writes meanwhile.
//! The full-disk test on a real (tmpfs) file system is `strata/tests/disk_full.rs`.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use strata_storage::wal::{Wal, WalOptions, WalSync};

/// Sets the largest file size this process may write (`None`: no limit).
#[allow(unsafe_code)] // Two libc calls the standard library does not wrap.
fn limit_file_size(bytes: Option<u64>) {
    let limit = bytes.unwrap_or(libc::RLIM_INFINITY);
    let rlimit = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain system calls with valid arguments; SIGXFSZ is ignored so that a write
    // past the limit fails with EFBIG instead of killing the process.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rlimit), 0);
    }
}

fn replay(dir: &Path) -> (Vec<Vec<u8>>, bool) {
    let mut records = Vec::new();
    let (wal, replay) = Wal::open(dir, WalOptions::with_sync(WalSync::None), |_, payload| {
        records.push(payload.to_vec());
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    wal.close().unwrap();
    (records, replay.torn_tail.is_some())
}

fn record(i: usize) -> Vec<u8> {
    format!("record {i:04} ").repeat(7).into_bytes()
}

#[test]
fn wal_out_of_space_stalls_keeps_the_records_and_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let (wal, _) = Wal::open(&dir, WalOptions::with_sync(WalSync::Always), |_, _| {
        Ok::<(), std::io::Error>(())
    })
    .unwrap();

    // Records until the segment cannot grow: a record straddles the limit, so the write
    // is partial when it fails.
    limit_file_size(Some(4000));
    let mut acknowledged = Vec::new();
    let refused = loop {
        let i = acknowledged.len();
        match wal.append(&record(i)) {
            Ok(_) => acknowledged.push(record(i)),
            Err(e) => break (i, e),
        }
        assert!(i < 1000, "the size limit never stopped the WAL");
    };
    let (first_refused, error) = refused;
    assert!(acknowledged.len() > 10, "{}", acknowledged.len());
    assert!(
        error.to_string().contains("File too large"),
        "the OS error is kept: {error}"
    );
    assert!(wal.stalled().is_some());
    // The segment holds exactly the acknowledged records: the partial one was cut off.
    let segment = strata_storage::wal::segment_path(&dir, wal.active_segment());
    let frames: u64 = acknowledged.iter().map(|r| 8 + r.len() as u64).sum();
    assert_eq!(
        std::fs::metadata(&segment).unwrap().len(),
        strata_storage::wal::SEGMENT_HEADER_LEN as u64 + frames
    );

    // While space is short, more records wait behind the refused one, in order, and every
    // try to write them fails the same way.
    let waiting = wal.enqueue(&record(first_refused + 1)).unwrap();
    let err = wal.commit(waiting).unwrap_err();
    assert!(
        err.to_string()
            .contains("written when the WAL can be written again"),
        "{err}"
    );
    assert!(wal.write_pending().is_err());
    assert!(wal.sync().is_err());
    assert!(wal.stalled().is_some());

    // Space returns: the next write takes the waiting records first, and the WAL goes on.
    limit_file_size(None);
    wal.write_pending().unwrap();
    assert!(wal.stalled().is_none());
    wal.append(&record(first_refused + 2)).unwrap();
    wal.rotate().unwrap();
    wal.append(&record(first_refused + 3)).unwrap();
    wal.close().unwrap();

    let (records, torn) = replay(&dir);
    assert!(!torn, "no segment ends in a partial record");
    let want: Vec<Vec<u8>> = (0..first_refused + 4).map(record).collect();
    assert_eq!(records.len(), want.len());
    assert!(records == want, "every record once, in order");

    // A segment that cannot be created (its directory is gone) stalls the same way, and
    // the rotation is made once it can be.
    let (wal, _) = Wal::open(&dir, WalOptions::with_sync(WalSync::Always), |_, _| {
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    wal.append(b"kept").unwrap();
    let active = wal.active_segment();
    let moved = tmp.path().join("moved");
    std::fs::rename(&dir, &moved).unwrap();
    let err = wal.rotate().unwrap_err();
    assert!(
        err.to_string().starts_with("cannot create WAL segment"),
        "{err}"
    );
    assert_eq!(wal.active_segment(), active);
    assert!(wal.append(b"waits").is_err());
    std::fs::rename(&moved, &dir).unwrap();
    wal.write_pending().unwrap();
    assert_eq!(
        wal.active_segment(),
        active + 1,
        "the asked-for segment end was made"
    );
    wal.append(b"after").unwrap();
    wal.close().unwrap();
    let (records, _) = replay(&dir);
    let tail: Vec<&[u8]> = records.iter().rev().take(3).rev().map(|r| &r[..]).collect();
    assert_eq!(tail, [&b"kept"[..], b"waits", b"after"]);
}
