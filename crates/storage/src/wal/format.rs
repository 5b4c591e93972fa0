//! On-disk layout of WAL segments: constants, header and frame encoding, file names.
//!
//! Everything that decides the bytes on disk lives here, so the layout documented in
//! [`crate::wal`] can be checked against one short file.

use std::path::{Path, PathBuf};

/// First 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"STRAWAL\0";

/// Format version written in every segment header. Bump it (and keep a reader for the old
/// one, with a fixture) whenever the bytes of a header or a frame change.
pub const FORMAT_VERSION: u32 = 1;

/// Size of the segment header: magic (8) + version (4) + segment id (8) + CRC (4).
pub const SEGMENT_HEADER_LEN: usize = 24;

/// Size of a record frame's header: payload length (4) + CRC (4).
pub const FRAME_HEADER_LEN: usize = 8;

/// Largest payload one record may carry: 64 MiB.
///
/// Why: a shard appends one record per write request, and the server caps a request body
/// well below this (a few tens of MiB of line protocol encodes into fewer bytes), so a
/// legitimate record never comes near it. The limit also bounds what recovery will try to
/// read for one record: a torn or garbage length field can never make replay allocate more
/// than 64 MiB, and any length above it is known to be damage, not data.
pub const RECORD_BYTES_MAX: usize = 64 << 20;

/// File-name suffix of a segment.
pub const SEGMENT_SUFFIX: &str = ".wal";

/// File-name suffix of a segment being created (header written, not yet renamed into
/// place). Such files are leftovers of a crash and are deleted at open.
pub const SEGMENT_TMP_SUFFIX: &str = ".wal.tmp";

/// Digits of the zero-padded segment id in a file name (`u64::MAX` has 20).
const SEGMENT_ID_DIGITS: usize = 20;

/// The file name of segment `id`: `{id:020}.wal`.
pub fn segment_file_name(id: u64) -> String {
    format!("{id:020}{SEGMENT_SUFFIX}")
}

/// The path of segment `id` in `dir`.
pub fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(segment_file_name(id))
}

/// The path a new segment `id` is written to before it is renamed to [`segment_path`].
pub fn segment_tmp_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}{SEGMENT_TMP_SUFFIX}"))
}

/// Parses a segment file name (`{id:020}.wal`); `None` for any other name.
pub fn parse_segment_file_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SEGMENT_SUFFIX)?;
    if digits.len() != SEGMENT_ID_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Encodes the header of segment `id`.
pub fn encode_segment_header(id: u64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut header = [0u8; SEGMENT_HEADER_LEN];
    header[0..8].copy_from_slice(&SEGMENT_MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header[12..20].copy_from_slice(&id.to_le_bytes());
    let crc = crc32fast::hash(&header[0..20]);
    header[20..24].copy_from_slice(&crc.to_le_bytes());
    header
}

/// Checks a segment header read from a file named for segment `expected_id`.
///
/// Returns the reason it is not valid, for a [`super::WalError::Corrupt`].
pub fn check_segment_header(
    header: &[u8; SEGMENT_HEADER_LEN],
    expected_id: u64,
) -> Result<(), String> {
    if header[0..8] != SEGMENT_MAGIC {
        return Err(format!(
            "bad magic {:02x?}, want {:02x?}",
            &header[0..8],
            SEGMENT_MAGIC
        ));
    }
    let want_crc = crc32fast::hash(&header[0..20]);
    let got_crc = read_u32(header, 20);
    if got_crc != want_crc {
        return Err(format!(
            "segment header checksum {got_crc:#010x}, computed {want_crc:#010x}"
        ));
    }
    let version = read_u32(header, 8);
    if version != FORMAT_VERSION {
        return Err(format!(
            "unsupported format version {version}, this build reads {FORMAT_VERSION}"
        ));
    }
    let id = read_u64(header, 12);
    if id != expected_id {
        return Err(format!(
            "header names segment {id} but the file name says {expected_id}"
        ));
    }
    Ok(())
}

/// The CRC stored in a record frame: CRC-32 (IEEE, as `crc32fast`) over the 4 length
/// bytes followed by the payload.
///
/// The length is covered so that a run of zero bytes (a zero-filled tail left by a crash)
/// is never a valid frame: CRC-32 of the empty string is 0, so a CRC over the payload alone
/// would accept `00 00 00 00 00 00 00 00` as an empty record.
pub fn frame_crc(len_bytes: [u8; 4], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len_bytes);
    hasher.update(payload);
    hasher.finalize()
}

/// Encodes the 8-byte frame header of `payload`, whose length the caller has checked
/// against [`RECORD_BYTES_MAX`].
pub fn encode_frame_header(payload: &[u8]) -> [u8; FRAME_HEADER_LEN] {
    assert!(payload.len() <= RECORD_BYTES_MAX, "caller checks the limit");
    let len_bytes = (payload.len() as u32).to_le_bytes();
    let mut header = [0u8; FRAME_HEADER_LEN];
    header[0..4].copy_from_slice(&len_bytes);
    header[4..8].copy_from_slice(&frame_crc(len_bytes, payload).to_le_bytes());
    header
}

/// Reads a little-endian u32 at `at`; the caller guarantees `at + 4 <= bytes.len()`.
pub fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

/// Reads a little-endian u64 at `at`; the caller guarantees `at + 8 <= bytes.len()`.
fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected CRCs were computed with Python's `zlib.crc32`, independently of crc32fast.

    #[test]
    fn header_golden_bytes() {
        let header = encode_segment_header(1);
        let want: [u8; 24] = [
            b'S', b'T', b'R', b'A', b'W', b'A', b'L', 0, // magic
            1, 0, 0, 0, // version
            1, 0, 0, 0, 0, 0, 0, 0, // segment id
            0x51, 0x54, 0x99, 0xf3, // crc32 = 0xf3995451
        ];
        assert_eq!(header, want);
        assert_eq!(check_segment_header(&header, 1), Ok(()));
        assert_eq!(
            check_segment_header(&header, 2),
            Err("header names segment 1 but the file name says 2".to_string())
        );
    }

    #[test]
    fn frame_golden_bytes() {
        // crc32(03 00 00 00 'a' 'b' 'c') = 0x66e15d33
        assert_eq!(
            encode_frame_header(b"abc"),
            [3, 0, 0, 0, 0x33, 0x5d, 0xe1, 0x66]
        );
        // A zero-filled frame is not a valid empty record: crc32(00 00 00 00) = 0x2144df1c.
        assert_eq!(
            encode_frame_header(b""),
            [0, 0, 0, 0, 0x1c, 0xdf, 0x44, 0x21]
        );
    }

    #[test]
    fn file_names_round_trip() {
        assert_eq!(segment_file_name(7), "00000000000000000007.wal");
        assert_eq!(parse_segment_file_name("00000000000000000007.wal"), Some(7));
        assert_eq!(
            parse_segment_file_name(&segment_file_name(u64::MAX)),
            Some(u64::MAX)
        );
        assert_eq!(parse_segment_file_name("7.wal"), None);
        assert_eq!(
            parse_segment_file_name("00000000000000000007.wal.tmp"),
            None
        );
        assert_eq!(parse_segment_file_name("0000000000000000000x.wal"), None);
    }
}
