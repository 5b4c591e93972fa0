//! WAL behaviour while running: round trips, concurrency, group commit, sync modes,
//! rotation and removal, limits. Recovery from damaged files is in `wal_recovery.rs`.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_storage::wal::{RECORD_BYTES_MAX, Replay, Wal, WalError, WalOptions, WalSync};
use tempfile::TempDir;

/// A replayed record: (segment id, payload).
type Record = (u64, Vec<u8>);

fn open(dir: &Path, sync: WalSync) -> (Wal, Replay, Vec<Record>) {
    let mut records = Vec::new();
    let (wal, replay) = Wal::open(dir, WalOptions::with_sync(sync), |segment, payload| {
        records.push((segment, payload.to_vec()));
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    (wal, replay, records)
}

fn replay_summary(segments: Vec<u64>, records: &[Record], active_segment: u64) -> Replay {
    Replay {
        segments,
        records: records.len() as u64,
        payload_bytes: records.iter().map(|(_, p)| p.len() as u64).sum(),
        torn_tail: None,
        skipped: Vec::new(),
        active_segment,
    }
}

/// Deterministic payload of `len` bytes, different for each `seed`.
fn payload(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Median time of an fsync after a small append in `dir`, in microseconds.
fn median_fsync_us(dir: &Path) -> u128 {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join("fsync-probe")).unwrap();
    let mut times: Vec<u128> = (0..15)
        .map(|_| {
            file.write_all(&[0u8; 128]).unwrap();
            let start = Instant::now();
            file.sync_data().unwrap();
            start.elapsed().as_micros()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

#[test]
fn wal_new_directory_gets_segment_one_with_exact_header() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path().join("shard-0/wal");
    let (wal, replay, records) = open(&dir, WalSync::default());
    assert_eq!(replay, replay_summary(vec![], &[], 1));
    assert!(records.is_empty());
    assert_eq!(wal.segment_ids(), vec![1]);
    assert_eq!(wal.active_segment(), 1);
    assert_eq!(wal.dir(), dir.as_path());
    assert_eq!(files_in(&dir), vec!["00000000000000000001.wal"]);
    let bytes = std::fs::read(dir.join("00000000000000000001.wal")).unwrap();
    let mut want = b"STRAWAL\0".to_vec();
    want.extend_from_slice(&[1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x51, 0x54, 0x99, 0xf3]);
    assert_eq!(bytes, want);
}

#[test]
fn wal_records_of_many_sizes_round_trip_across_reopens() {
    let tmp = TempDir::new().unwrap();
    let mut sizes = vec![0, 1, 2, 7, 8, 9, 100, 4095, 4096, 4097, 65_537, 1 << 20, 0];
    sizes.extend((0..300u64).map(|i| (i * 7919 % 3001) as usize));
    let first: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| payload(i as u64, n))
        .collect();

    let (wal, replay, _) = open(tmp.path(), WalSync::default());
    assert_eq!(replay.active_segment, 1);
    let seqs: Vec<u64> = first.iter().map(|p| wal.append(p).unwrap()).collect();
    assert_eq!(seqs, (1..=first.len() as u64).collect::<Vec<_>>());
    let framed: u64 = first.iter().map(|p| 8 + p.len() as u64).sum();
    assert_eq!(wal.bytes_written(), framed);
    wal.close().unwrap();

    let (wal, replay, records) = open(tmp.path(), WalSync::default());
    let want: Vec<Record> = first.iter().map(|p| (1, p.clone())).collect();
    assert_eq!(records, want);
    assert_eq!(replay, replay_summary(vec![1], &want, 2));
    // Sequence numbers continue after the replayed records.
    let second: Vec<Vec<u8>> = (0..50).map(|i| payload(1000 + i, i as usize * 3)).collect();
    let seqs: Vec<u64> = second.iter().map(|p| wal.append(p).unwrap()).collect();
    let n = first.len() as u64;
    assert_eq!(seqs, (n + 1..=n + 50).collect::<Vec<_>>());
    drop(wal); // drop writes and syncs like close

    let (_wal, replay, records) = open(tmp.path(), WalSync::default());
    let mut want = want;
    want.extend(second.iter().map(|p| (2, p.clone())));
    assert_eq!(records, want);
    assert_eq!(replay, replay_summary(vec![1, 2], &want, 3));
}

#[test]
fn wal_concurrent_appends_are_replayed_once_in_per_thread_order() {
    const THREADS: u32 = 4;
    const PER_THREAD: u32 = 2000;
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::default());
    let wal = Arc::new(wal);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                (0..PER_THREAD)
                    .map(|i| {
                        // thread, index, then a variable-length tail
                        let mut p = t.to_le_bytes().to_vec();
                        p.extend_from_slice(&i.to_le_bytes());
                        p.extend(payload(u64::from(t * PER_THREAD + i), (i % 64) as usize));
                        (wal.append(&p).unwrap(), p)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut appended: Vec<(u64, Vec<u8>)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    Arc::try_unwrap(wal).ok().unwrap().close().unwrap();

    let (_wal, replay, records) = open(tmp.path(), WalSync::default());
    // Sequence numbers are unique and name the records in file order.
    appended.sort_by_key(|(seq, _)| *seq);
    let total = (THREADS * PER_THREAD) as u64;
    assert_eq!(
        appended.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        (1..=total).collect::<Vec<_>>()
    );
    let want: Vec<Record> = appended.into_iter().map(|(_, p)| (1, p)).collect();
    assert_eq!(records, want);
    assert_eq!(replay, replay_summary(vec![1], &want, 2));
    // Per-thread order is kept: each thread's indexes appear as 0, 1, 2, ...
    let mut next = vec![0u32; THREADS as usize];
    for (_, p) in &records {
        let t = u32::from_le_bytes(p[0..4].try_into().unwrap()) as usize;
        let i = u32::from_le_bytes(p[4..8].try_into().unwrap());
        assert_eq!(i, next[t], "thread {t} out of order");
        next[t] += 1;
    }
    assert_eq!(next, vec![PER_THREAD; THREADS as usize]);
}

#[test]
fn wal_always_syncs_every_append_alone_and_groups_concurrent_ones() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(&tmp.path().join("single"), WalSync::Always);
    for i in 0..20 {
        wal.append(&payload(i, 10)).unwrap();
    }
    // One appender at a time: one fsync each, none skipped.
    assert_eq!(wal.syncs(), 20);
    wal.close().unwrap();

    const THREADS: u64 = 8;
    const PER_THREAD: u64 = 200;
    let (wal, _, _) = open(&tmp.path().join("group"), WalSync::Always);
    let wal = Arc::new(wal);
    let barrier = Arc::new(std::sync::Barrier::new(THREADS as usize));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (wal, barrier) = (Arc::clone(&wal), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..PER_THREAD {
                    wal.append(&payload(t * 1000 + i, 100)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let appends = THREADS * PER_THREAD;
    let syncs = wal.syncs();
    let fsync_us = median_fsync_us(tmp.path());
    eprintln!("Always, {THREADS} threads: {appends} appends, {syncs} fsyncs, fsync ~{fsync_us} us");
    assert!(
        syncs >= 1 && syncs <= appends,
        "{syncs} fsyncs for {appends} appends"
    );
    // Group commit: while one appender fsyncs, the others queue up and share the next
    // fsync. That needs an fsync that takes time: on tmpfs it is free and nothing queues.
    // Measured on ext4 (fsync 0.14 to 2.5 ms): 4 to 8 appends per fsync with 8 threads;
    // without grouping it would be exactly one.
    if fsync_us >= 50 {
        assert!(
            syncs <= appends * 3 / 4,
            "{syncs} fsyncs for {appends} appends"
        );
    }
    // Nothing is left unsynced.
    let before = wal.syncs();
    wal.sync().unwrap();
    assert_eq!(wal.syncs(), before);
}

#[test]
fn wal_interval_mode_syncs_only_when_due_by_the_injected_clock() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::Interval(Duration::from_secs(1)));
    let t0 = Instant::now();
    // Nothing written: nothing to sync.
    assert!(!wal.sync_if_due(t0).unwrap());
    wal.append(b"a").unwrap();
    assert_eq!(wal.syncs(), 0, "append must not fsync in Interval mode");
    // First sync with unsynced data happens at once.
    assert!(wal.sync_if_due(t0).unwrap());
    assert_eq!(wal.syncs(), 1);
    wal.append(b"b").unwrap();
    assert!(!wal.sync_if_due(t0 + Duration::from_millis(999)).unwrap());
    assert_eq!(wal.syncs(), 1);
    assert!(wal.sync_if_due(t0 + Duration::from_secs(1)).unwrap());
    assert_eq!(wal.syncs(), 2);
    // Due but clean: no fsync.
    assert!(!wal.sync_if_due(t0 + Duration::from_secs(5)).unwrap());
    wal.append(b"c").unwrap();
    // 4 s since the last timed sync: due again.
    assert!(wal.sync_if_due(t0 + Duration::from_secs(5)).unwrap());
    assert_eq!(wal.syncs(), 3);
    // A clock that goes backwards never makes a sync due early.
    wal.append(b"d").unwrap();
    assert!(!wal.sync_if_due(t0).unwrap());
    // An explicit sync leaves the timer nothing to do.
    wal.sync().unwrap();
    assert_eq!(wal.syncs(), 4);
    assert!(!wal.sync_if_due(t0 + Duration::from_secs(60)).unwrap());
    assert_eq!(wal.syncs(), 4);
}

#[test]
fn wal_timer_syncs_while_appenders_write_lose_nothing() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::Interval(Duration::from_millis(1)));
    let wal = Arc::new(wal);
    let appenders: Vec<_> = (0..4u32)
        .map(|t| {
            let wal = Arc::clone(&wal);
            std::thread::spawn(move || {
                for i in 0..1000u32 {
                    wal.append(&[t.to_le_bytes(), i.to_le_bytes()].concat())
                        .unwrap();
                }
            })
        })
        .collect();
    // The timer: an injected clock that advances 1 ms per tick, so every tick is due.
    let t0 = Instant::now();
    let mut timed_syncs = 0u64;
    let mut tick = 0u64;
    while !appenders.iter().all(|h| h.is_finished()) {
        tick += 1;
        if wal.sync_if_due(t0 + Duration::from_millis(tick)).unwrap() {
            timed_syncs += 1;
        }
    }
    for h in appenders {
        h.join().unwrap();
    }
    if wal
        .sync_if_due(t0 + Duration::from_millis(tick + 1))
        .unwrap()
    {
        timed_syncs += 1;
    }
    assert!(timed_syncs >= 1);
    assert_eq!(wal.syncs(), timed_syncs);
    // Everything written is synced: an explicit sync has nothing left to do.
    wal.sync().unwrap();
    assert_eq!(wal.syncs(), timed_syncs);
    Arc::try_unwrap(wal).ok().unwrap().close().unwrap();

    let (_wal, replay, records) = open(tmp.path(), WalSync::default());
    assert_eq!(replay.records, 4000);
    let mut next = [0u32; 4];
    for (segment, p) in &records {
        assert_eq!(*segment, 1);
        let t = u32::from_le_bytes(p[0..4].try_into().unwrap()) as usize;
        assert_eq!(u32::from_le_bytes(p[4..8].try_into().unwrap()), next[t]);
        next[t] += 1;
    }
    assert_eq!(next, [1000; 4]);
}

#[test]
fn wal_none_mode_and_always_mode_never_sync_on_the_timer() {
    let tmp = TempDir::new().unwrap();
    let t0 = Instant::now();
    let (wal, _, _) = open(&tmp.path().join("none"), WalSync::None);
    wal.append(b"x").unwrap();
    assert!(!wal.sync_if_due(t0 + Duration::from_secs(3600)).unwrap());
    assert_eq!(wal.syncs(), 0);
    // Rotation fsyncs what it closes.
    assert_eq!(wal.rotate().unwrap(), 2);
    assert_eq!(wal.syncs(), 1);

    let (wal, _, _) = open(&tmp.path().join("always"), WalSync::Always);
    wal.append(b"x").unwrap();
    assert_eq!(wal.syncs(), 1);
    assert!(!wal.sync_if_due(t0 + Duration::from_secs(3600)).unwrap());
    assert_eq!(wal.syncs(), 1);
}

#[test]
fn wal_rotate_and_remove_drop_exactly_the_older_segments() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::None);
    for p in [b"a1", b"a2", b"a3"] {
        wal.append(p).unwrap();
    }
    assert_eq!(wal.rotate().unwrap(), 2);
    for p in [b"b1", b"b2"] {
        wal.append(p).unwrap();
    }
    assert_eq!(wal.rotate().unwrap(), 3);
    wal.append(b"c1").unwrap();
    assert_eq!(wal.segment_ids(), vec![1, 2, 3]);
    assert_eq!(wal.active_segment(), 3);

    wal.remove_segments_before(2).unwrap();
    assert_eq!(wal.segment_ids(), vec![2, 3]);
    assert_eq!(
        files_in(tmp.path()),
        vec!["00000000000000000002.wal", "00000000000000000003.wal"]
    );
    // The active segment is never removed, whatever the id says.
    wal.remove_segments_before(u64::MAX).unwrap();
    assert_eq!(wal.segment_ids(), vec![3]);
    assert_eq!(files_in(tmp.path()), vec!["00000000000000000003.wal"]);
    // Removing again is a no-op.
    wal.remove_segments_before(3).unwrap();
    assert_eq!(wal.segment_ids(), vec![3]);
    wal.close().unwrap();

    let (wal, replay, records) = open(tmp.path(), WalSync::None);
    let want = vec![(3, b"c1".to_vec())];
    assert_eq!(records, want);
    assert_eq!(replay, replay_summary(vec![3], &want, 4));
    assert_eq!(wal.segment_ids(), vec![3, 4]);
}

#[test]
fn wal_rotate_puts_every_earlier_append_in_an_older_segment_under_concurrency() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const RECORDS: u32 = 3000;
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::default());
    let wal = Arc::new(wal);
    let returned = Arc::new(AtomicU32::new(0));
    let writer = {
        let (wal, returned) = (Arc::clone(&wal), Arc::clone(&returned));
        std::thread::spawn(move || {
            for i in 0..RECORDS {
                wal.append(&i.to_le_bytes()).unwrap();
                returned.store(i + 1, Ordering::SeqCst);
            }
        })
    };
    // Rotate while the writer runs. Records 0..done had returned from `append` before
    // `rotate` was called, so they must lie in segments older than the one it returns.
    let mut cuts = Vec::new();
    while returned.load(Ordering::SeqCst) < RECORDS {
        let done = returned.load(Ordering::SeqCst);
        let id = wal.rotate().unwrap();
        cuts.push((done, id));
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.join().unwrap();
    Arc::try_unwrap(wal).ok().unwrap().close().unwrap();

    let (_wal, replay, records) = open(tmp.path(), WalSync::default());
    let last = cuts.last().unwrap().1;
    assert_eq!(replay.segments, (1..=last).collect::<Vec<_>>());
    assert_eq!(
        cuts.iter().map(|c| c.1).collect::<Vec<_>>(),
        (2..=last).collect::<Vec<_>>()
    );
    // Order across segments is append order.
    let values: Vec<u32> = records
        .iter()
        .map(|(_, p)| u32::from_le_bytes(p[..].try_into().unwrap()))
        .collect();
    assert_eq!(values, (0..RECORDS).collect::<Vec<_>>());
    for (done, id) in cuts {
        for (segment, p) in &records[..done as usize] {
            assert!(
                *segment < id,
                "record {p:?} in segment {segment}, rotated to {id}"
            );
        }
    }
}

#[test]
fn wal_record_over_the_limit_is_rejected_and_the_limit_itself_is_accepted() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::default());
    let big = vec![7u8; RECORD_BYTES_MAX + 1];
    match wal.append(&big) {
        Err(WalError::RecordTooLarge { len, limit, dir }) => {
            assert_eq!(
                (len, limit, dir.as_path()),
                (RECORD_BYTES_MAX + 1, 64 << 20, tmp.path())
            );
        }
        other => panic!("want RecordTooLarge, got {other:?}"),
    }
    assert_eq!(wal.bytes_written(), 0);
    assert_eq!(wal.append(&big[..RECORD_BYTES_MAX]).unwrap(), 1);
    assert_eq!(wal.append(b"after").unwrap(), 2);
    wal.close().unwrap();
    let (_wal, _, records) = open(tmp.path(), WalSync::default());
    assert_eq!(
        records,
        vec![
            (1, big[..RECORD_BYTES_MAX].to_vec()),
            (1, b"after".to_vec())
        ]
    );
}

#[test]
fn wal_replay_callback_error_stops_open_and_names_the_record() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path(), WalSync::default());
    for p in [b"ok".as_slice(), b"bad", b"never"] {
        wal.append(p).unwrap();
    }
    wal.close().unwrap();
    let mut seen = Vec::new();
    let result = Wal::open(tmp.path(), WalOptions::default(), |_, payload| {
        seen.push(payload.to_vec());
        if payload == b"bad" {
            Err("cannot decode rows")
        } else {
            Ok(())
        }
    });
    let err = result.err().unwrap();
    let path = tmp.path().join("00000000000000000001.wal");
    assert_eq!(
        err.to_string(),
        format!(
            "replay of WAL segment \"{}\" stopped at the record at offset 34: cannot decode rows",
            path.display()
        )
    );
    assert!(matches!(err, WalError::Replay { offset: 34, .. }));
    assert_eq!(seen, vec![b"ok".to_vec(), b"bad".to_vec()]);
}

#[test]
fn wal_io_errors_name_the_file() {
    let tmp = TempDir::new().unwrap();
    let not_a_dir = tmp.path().join("file");
    std::fs::write(&not_a_dir, b"").unwrap();
    let err = Wal::open(&not_a_dir, WalOptions::default(), |_, _| {
        Ok::<(), std::io::Error>(())
    })
    .err()
    .unwrap();
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "cannot create WAL directory \"{}\": ",
            not_a_dir.display()
        )),
        "{msg}"
    );
    assert!(matches!(
        err,
        WalError::Io {
            op: "create WAL directory",
            ..
        }
    ));
}

#[test]
fn wal_is_send_and_sync_and_options_default_to_one_second_interval() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Wal>();
    assert_eq!(
        WalOptions::default(),
        WalOptions {
            sync: WalSync::Interval(Duration::from_secs(1)),
            skip_damaged: false,
        }
    );
}

/// Throughput of `append` by durability mode and thread count, printed, not asserted
/// (numbers depend on the disk). Run with
/// `cargo test --release -p strata-storage --test suite wal:: -- --ignored --nocapture`.
#[test]
#[ignore = "measurement: run by hand with --release"]
fn wal_append_throughput_report() {
    const RECORD_BYTES: usize = 1024;
    const SECONDS: f64 = 1.0;
    let tmp = TempDir::new().unwrap();
    for (name, sync) in [
        ("always", WalSync::Always),
        ("interval", WalSync::default()),
        ("none", WalSync::None),
    ] {
        for threads in [1usize, 4, 8, 16] {
            let dir = tmp.path().join(format!("{name}-{threads}"));
            let (wal, _, _) = open(&dir, sync);
            let wal = Arc::new(wal);
            let start = Instant::now();
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let wal = Arc::clone(&wal);
                    std::thread::spawn(move || {
                        let p = payload(t as u64, RECORD_BYTES);
                        let mut n = 0u64;
                        while start.elapsed().as_secs_f64() < SECONDS {
                            wal.append(&p).unwrap();
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            let appends: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            let secs = start.elapsed().as_secs_f64();
            eprintln!(
                "{name:>8} {threads:>2} threads: {:>9.0} appends/s, {:>7.1} MB/s, {:>5.1} appends per fsync",
                appends as f64 / secs,
                wal.bytes_written() as f64 / secs / 1e6,
                appends as f64 / wal.syncs().max(1) as f64,
            );
        }
    }
}

#[test]
fn wal_enqueue_then_commit_orders_records_and_covered_segments_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wal");
    {
        let (wal, _) = Wal::open(&path, WalOptions::with_sync(WalSync::None), |_, _| {
            Ok::<(), String>(())
        })
        .unwrap();
        let a = wal.enqueue(b"a").unwrap();
        let b = wal.enqueue(b"b").unwrap();
        assert_eq!(b, a + 1);
        wal.commit(b).unwrap(); // commits `a` too: one write for both
        wal.commit(a).unwrap();
        let first = wal.active_segment();
        wal.rotate().unwrap();
        let c = wal.append(b"c").unwrap();
        wal.rotate().unwrap();
        wal.append(b"d").unwrap();
        // Segment `first` holds a and b; the next holds c; the active one holds d.
        assert_eq!(
            wal.remove_segments_covered(a).unwrap(),
            0,
            "b is not covered yet"
        );
        assert_eq!(wal.remove_segments_covered(b).unwrap(), 1);
        assert!(!wal.segment_ids().contains(&first));
        assert_eq!(wal.remove_segments_covered(c).unwrap(), 1);
        assert_eq!(wal.segment_ids(), vec![wal.active_segment()]);
        wal.close().unwrap();
    }
    let mut seen = Vec::new();
    let (wal, _) = Wal::open(&path, WalOptions::default(), |_, payload| {
        seen.push(payload.to_vec());
        Ok::<(), String>(())
    })
    .unwrap();
    assert_eq!(seen, vec![b"d".to_vec()]);
    // Replayed segments count as covered by the replayed records.
    wal.rotate().unwrap();
    assert_eq!(wal.remove_segments_covered(1).unwrap(), 2);
}
