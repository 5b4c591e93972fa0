//! WAL recovery from damaged files: torn tails at every byte, flipped bytes, bad headers,
//! missing segments, and a property test over random sizes and truncation points.

#![allow(clippy::unwrap_used)]

use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use strata_storage::wal::{Replay, TailDamage, TornTail, Wal, WalError, WalOptions, WalSync};
use tempfile::TempDir;

/// A replayed record: (segment id, payload).
type Record = (u64, Vec<u8>);

/// Damage done to a segment file's bytes.
type Damage = Box<dyn Fn(&mut Vec<u8>)>;

fn try_open(dir: &Path) -> Result<(Wal, Replay, Vec<Record>), WalError> {
    let mut records = Vec::new();
    let (wal, replay) = Wal::open(dir, WalOptions::with_sync(WalSync::None), |segment, p| {
        records.push((segment, p.to_vec()));
        Ok::<(), std::io::Error>(())
    })?;
    Ok((wal, replay, records))
}

fn open(dir: &Path) -> (Wal, Replay, Vec<Record>) {
    try_open(dir).unwrap()
}

fn seg(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.wal"))
}

fn payload(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31) ^ seed.wrapping_mul(131)) as u8)
        .collect()
}

/// Writes `payloads` into segment 1 of a new WAL in `dir`; returns each record's frame
/// offset and the file length.
fn write_segment_one(dir: &Path, payloads: &[Vec<u8>]) -> (Vec<u64>, u64) {
    let (wal, _, _) = open(dir);
    for p in payloads {
        wal.append(p).unwrap();
    }
    wal.close().unwrap();
    let mut offsets = Vec::new();
    let mut at = 24u64;
    for p in payloads {
        offsets.push(at);
        at += 8 + p.len() as u64;
    }
    assert_eq!(fs::metadata(seg(dir, 1)).unwrap().len(), at);
    (offsets, at)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn flip_byte(path: &Path, at: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at as usize] ^= 0x40;
    fs::write(path, bytes).unwrap();
}

fn in_segment(id: u64, payloads: &[Vec<u8>]) -> Vec<Record> {
    payloads.iter().map(|p| (id, p.clone())).collect()
}

fn summary(segments: Vec<u64>, records: &[Record], torn: Option<TornTail>, active: u64) -> Replay {
    Replay {
        segments,
        records: records.len() as u64,
        payload_bytes: records.iter().map(|(_, p)| p.len() as u64).sum(),
        torn_tail: torn,
        skipped: Vec::new(),
        active_segment: active,
    }
}

fn expect_corrupt(result: Result<(Wal, Replay, Vec<Record>), WalError>) -> (PathBuf, u64, String) {
    match result {
        Err(WalError::Corrupt {
            path,
            offset,
            reason,
        }) => (path, offset, reason),
        Err(other) => panic!("want Corrupt, got {other}"),
        Ok((_, replay, _)) => panic!("want Corrupt, got {replay:?}"),
    }
}

#[test]
fn wal_torn_tail_at_every_byte_of_the_last_record_is_cut_and_appends_continue() {
    let tmp = TempDir::new().unwrap();
    let pristine = tmp.path().join("pristine");
    let payloads: Vec<Vec<u8>> = [0, 5, 17, 300, 40].iter().map(|&n| payload(n, n)).collect();
    let (offsets, end) = write_segment_one(&pristine, &payloads);
    let start = offsets[4];
    let kept = in_segment(1, &payloads[..4]);

    for cut in start..end {
        let dir = tmp.path().join(format!("cut-{cut}"));
        copy_dir(&pristine, &dir);
        truncate(&seg(&dir, 1), cut);

        let (wal, replay, records) = open(&dir);
        let torn = (cut > start).then(|| TornTail {
            path: seg(&dir, 1),
            offset: start,
            bytes_cut: cut - start,
            damage: if cut - start < 8 {
                TailDamage::ShortHeader
            } else {
                TailDamage::ShortPayload
            },
        });
        assert_eq!(records, kept, "cut at {cut}");
        assert_eq!(replay, summary(vec![1], &kept, torn, 2), "cut at {cut}");
        assert_eq!(fs::metadata(seg(&dir, 1)).unwrap().len(), start);

        wal.append(b"after-1").unwrap();
        wal.append(b"").unwrap();
        wal.close().unwrap();
        let (_wal, replay, records) = open(&dir);
        let mut want = kept.clone();
        want.extend([(2, b"after-1".to_vec()), (2, Vec::new())]);
        assert_eq!(records, want, "cut at {cut}, reopened");
        assert_eq!(replay, summary(vec![1, 2], &want, None, 3), "cut at {cut}");
    }
}

#[test]
fn wal_flipped_byte_in_the_last_record_is_cut_as_a_torn_tail() {
    let tmp = TempDir::new().unwrap();
    let payloads: Vec<Vec<u8>> = (0..4).map(|i| payload(i, 50)).collect();
    let (offsets, end) = write_segment_one(tmp.path(), &payloads);
    let last = offsets[3];
    flip_byte(&seg(tmp.path(), 1), last + 8 + 25); // payload
    let (wal, replay, records) = open(tmp.path());
    let kept = in_segment(1, &payloads[..3]);
    let torn = TornTail {
        path: seg(tmp.path(), 1),
        offset: last,
        bytes_cut: end - last,
        damage: TailDamage::ChecksumMismatch,
    };
    assert_eq!(records, kept);
    assert_eq!(replay, summary(vec![1], &kept, Some(torn), 2));
    drop(wal);
    // Reopening finds a clean WAL.
    let (_wal, replay, records) = open(tmp.path());
    assert_eq!(records, kept);
    assert_eq!(replay, summary(vec![1, 2], &kept, None, 3));
}

#[test]
fn wal_flipped_length_or_crc_byte_in_the_last_record_is_a_torn_tail() {
    let tmp = TempDir::new().unwrap();
    let payloads: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 20)).collect();
    let (offsets, end) = write_segment_one(&tmp.path().join("pristine"), &payloads);
    let last = offsets[2];
    let kept = in_segment(1, &payloads[..2]);
    // (byte to flip, damage): high length byte → over the limit; low length byte 20 ^ 0x40
    // = 84 → past the end of the file; a CRC byte → checksum mismatch.
    for (at, damage) in [
        (last + 3, TailDamage::LengthOverLimit),
        (last, TailDamage::ShortPayload),
        (last + 5, TailDamage::ChecksumMismatch),
    ] {
        let dir = tmp.path().join(format!("flip-{at}"));
        copy_dir(&tmp.path().join("pristine"), &dir);
        flip_byte(&seg(&dir, 1), at);
        let (_wal, replay, records) = open(&dir);
        let torn = TornTail {
            path: seg(&dir, 1),
            offset: last,
            bytes_cut: end - last,
            damage,
        };
        assert_eq!(records, kept);
        assert_eq!(replay, summary(vec![1], &kept, Some(torn), 2));
    }
}

#[test]
fn wal_zero_filled_tail_is_cut_not_read_as_empty_records() {
    let tmp = TempDir::new().unwrap();
    let payloads: Vec<Vec<u8>> = (0..3).map(|i| payload(i, 10)).collect();
    let (_, end) = write_segment_one(tmp.path(), &payloads);
    truncate(&seg(tmp.path(), 1), end + 4096);
    let (_wal, replay, records) = open(tmp.path());
    let kept = in_segment(1, &payloads);
    let torn = TornTail {
        path: seg(tmp.path(), 1),
        offset: end,
        bytes_cut: 4096,
        damage: TailDamage::ChecksumMismatch,
    };
    assert_eq!(records, kept);
    assert_eq!(replay, summary(vec![1], &kept, Some(torn), 2));
}

#[test]
fn wal_bad_record_followed_by_a_valid_one_in_the_last_segment_is_corrupt() {
    let tmp = TempDir::new().unwrap();
    let payloads: Vec<Vec<u8>> = (0..4).map(|i| payload(i, 30)).collect();
    let (offsets, _) = write_segment_one(tmp.path(), &payloads);
    flip_byte(&seg(tmp.path(), 1), offsets[1] + 8);
    let got = expect_corrupt(try_open(tmp.path()));
    let reason = format!(
        "checksum mismatch on a record of 30 bytes, followed by a valid record at offset {}, \
         so not a torn tail",
        offsets[2]
    );
    assert_eq!(got, (seg(tmp.path(), 1), offsets[1], reason));
    // Nothing was changed on disk: the file still holds every record.
    assert_eq!(
        fs::metadata(seg(tmp.path(), 1)).unwrap().len(),
        offsets[3] + 38
    );
}

#[test]
fn wal_flipped_byte_in_a_segment_that_is_not_the_last_is_corrupt() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path());
    wal.append(b"first segment, record one").unwrap();
    wal.append(b"first segment, record two").unwrap();
    assert_eq!(wal.rotate().unwrap(), 2);
    wal.append(b"second segment").unwrap();
    wal.close().unwrap();
    // Record two of segment 1 starts at 24 + 8 + 25 = 57; flip its last payload byte.
    flip_byte(&seg(tmp.path(), 1), 57 + 8 + 24);
    let got = expect_corrupt(try_open(tmp.path()));
    let reason = "checksum mismatch on a record of 25 bytes in a segment that is not the last";
    assert_eq!(got, (seg(tmp.path(), 1), 57, reason.to_string()));
    // A truncated non-last segment is corrupt too, not a torn tail.
    truncate(&seg(tmp.path(), 1), 57 + 8 + 5);
    let got = expect_corrupt(try_open(tmp.path()));
    let reason = "record of 25 bytes runs past end of file in a segment that is not the last";
    assert_eq!(got, (seg(tmp.path(), 1), 57, reason.to_string()));
}

#[test]
fn wal_bad_segment_headers_are_corrupt() {
    let tmp = TempDir::new().unwrap();
    let pristine = tmp.path().join("pristine");
    write_segment_one(&pristine, &[b"x".to_vec()]);
    let header_crc = |h: &[u8]| crc32fast::hash(&h[..20]).to_le_bytes();
    let cases: Vec<(&str, Damage, String)> = vec![
        (
            "magic",
            Box::new(|b| b[0] = b'X'),
            "bad magic [58, 54, 52, 41, 57, 41, 4c, 00], want [53, 54, 52, 41, 57, 41, 4c, 00]"
                .to_string(),
        ),
        (
            "crc",
            Box::new(|b| b[21] ^= 1),
            format!(
                "segment header checksum {:#010x}, computed 0xf3995451",
                0xf399_5451u32 ^ 0x100
            ),
        ),
        (
            "version",
            Box::new(move |b| {
                b[8] = 2;
                let crc = header_crc(b);
                b[20..24].copy_from_slice(&crc);
            }),
            "unsupported format version 2, this build reads 1".to_string(),
        ),
        (
            "id",
            Box::new(move |b| {
                b[12] = 9;
                let crc = header_crc(b);
                b[20..24].copy_from_slice(&crc);
            }),
            "header names segment 9 but the file name says 1".to_string(),
        ),
        (
            "short",
            Box::new(|b| b.truncate(10)),
            "file is 10 bytes, shorter than the 24-byte segment header".to_string(),
        ),
    ];
    for (name, damage, reason) in cases {
        let dir = tmp.path().join(name);
        copy_dir(&pristine, &dir);
        let mut bytes = fs::read(seg(&dir, 1)).unwrap();
        damage(&mut bytes);
        fs::write(seg(&dir, 1), bytes).unwrap();
        let got = expect_corrupt(try_open(&dir));
        assert_eq!(got, (seg(&dir, 1), 0, reason), "case {name}");
    }
}

#[test]
fn wal_missing_middle_segment_is_corrupt_and_leftovers_are_handled() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path());
    for _ in 0..3 {
        wal.append(b"r").unwrap();
        wal.rotate().unwrap();
    }
    wal.close().unwrap();
    // An interrupted segment creation and an unrelated file.
    fs::write(tmp.path().join("00000000000000000009.wal.tmp"), b"STRA").unwrap();
    fs::write(tmp.path().join("notes.txt"), b"keep me").unwrap();
    let (wal, replay, records) = open(tmp.path());
    let want = vec![(1, b"r".to_vec()), (2, b"r".to_vec()), (3, b"r".to_vec())];
    assert_eq!(records, want);
    assert_eq!(replay, summary(vec![1, 2, 3, 4], &want, None, 5));
    drop(wal);
    let mut names: Vec<String> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let mut want_names: Vec<String> = (1..=5).map(|i| format!("{i:020}.wal")).collect();
    want_names.push("notes.txt".to_string());
    assert_eq!(names, want_names);

    fs::remove_file(seg(tmp.path(), 3)).unwrap();
    let got = expect_corrupt(try_open(tmp.path()));
    let reason = "segment is missing: segments 2 and 4 exist, nothing in between";
    assert_eq!(got, (seg(tmp.path(), 3), 0, reason.to_string()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random record sizes, a random truncation point anywhere after the segment header:
    /// exactly the records that end at or before the cut are replayed, a cut inside a
    /// record is reported as a torn tail, and appends after recovery survive a reopen.
    #[test]
    fn wal_random_sizes_and_truncation_points(
        sizes in prop::collection::vec(0usize..600, 1..24),
        cut_fraction in 0.0f64..=1.0,
    ) {
        let tmp = TempDir::new().unwrap();
        let payloads: Vec<Vec<u8>> =
            sizes.iter().enumerate().map(|(i, &n)| payload(i, n)).collect();
        let (offsets, end) = write_segment_one(tmp.path(), &payloads);
        let cut = 24 + ((end - 24) as f64 * cut_fraction) as u64;
        truncate(&seg(tmp.path(), 1), cut);

        let whole = offsets.iter().zip(&payloads)
            .take_while(|(o, p)| **o + 8 + p.len() as u64 <= cut)
            .count();
        let kept = in_segment(1, &payloads[..whole]);
        let boundary = offsets.get(whole).copied().unwrap_or(end);
        let torn = (cut > boundary).then(|| TornTail {
            path: seg(tmp.path(), 1),
            offset: boundary,
            bytes_cut: cut - boundary,
            damage: if cut - boundary < 8 { TailDamage::ShortHeader } else { TailDamage::ShortPayload },
        });
        let (wal, replay, records) = open(tmp.path());
        prop_assert_eq!(&records, &kept);
        prop_assert_eq!(replay, summary(vec![1], &kept, torn, 2));

        wal.append(b"after").unwrap();
        wal.close().unwrap();
        let (_wal, replay, records) = open(tmp.path());
        let mut want = kept;
        want.push((2, b"after".to_vec()));
        prop_assert_eq!(&records, &want);
        prop_assert_eq!(replay, summary(vec![1, 2], &want, None, 3));
    }
}

fn open_skipping(dir: &Path) -> (Replay, Vec<Record>) {
    let mut records = Vec::new();
    let options = WalOptions {
        sync: WalSync::None,
        skip_damaged: true,
    };
    let (wal, replay) = Wal::open(dir, options, |segment, p| {
        // The replay callback rejects one record, as a batch naming an unknown series
        // would be rejected.
        if p == b"rejected" {
            return Err(std::io::Error::other("unknown series"));
        }
        records.push((segment, p.to_vec()));
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    wal.close().unwrap();
    (replay, records)
}

/// `skip_damaged` (`--wal-recovery skip-damaged`) steps over damage in the middle: a bad
/// frame up to the next valid one, a segment that is not the last from the damage to its
/// end, a record the callback rejects; every other record is replayed, each skip reported.
#[test]
fn wal_skip_damaged_replays_everything_but_the_damage() {
    let tmp = TempDir::new().unwrap();
    let (wal, _, _) = open(tmp.path());
    wal.append(b"one, segment 1").unwrap(); // at 24, 14 bytes
    wal.append(b"two, segment 1").unwrap(); // at 46
    assert_eq!(wal.rotate().unwrap(), 2);
    wal.append(b"three").unwrap(); // at 24 of segment 2, 5 bytes
    wal.append(b"four").unwrap(); // at 37
    wal.append(b"rejected").unwrap(); // at 49, 8 bytes
    wal.append(b"five").unwrap(); // at 65
    wal.close().unwrap();
    flip_byte(&seg(tmp.path(), 1), 46 + 8 + 3); // record two: not the last segment
    flip_byte(&seg(tmp.path(), 2), 37 + 8 + 1); // record four: followed by valid ones
    let strict = expect_corrupt(try_open(tmp.path()));
    assert_eq!(strict.1, 46, "without the option the damage stops the open");

    let (replay, records) = open_skipping(tmp.path());
    let replayed: Vec<&[u8]> = records.iter().map(|(_, p)| p.as_slice()).collect();
    assert_eq!(replayed, [&b"one, segment 1"[..], b"three", b"five"]);
    let skipped: Vec<(PathBuf, u64, u64)> = replay
        .skipped
        .iter()
        .map(|s| (s.path.clone(), s.offset, s.bytes))
        .collect();
    assert_eq!(
        skipped,
        [
            (seg(tmp.path(), 1), 46, 22),
            (seg(tmp.path(), 2), 37, 12),
            (seg(tmp.path(), 2), 49, 16),
        ]
    );
    assert!(replay.skipped[0].what.contains("checksum mismatch"));
    assert!(replay.skipped[2].what.contains("unknown series"));
    assert_eq!(replay.records, 3);
}
