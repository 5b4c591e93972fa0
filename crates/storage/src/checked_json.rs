//! Small metadata files (catalog, manifests, engine meta) as JSON behind a checked header.
//!
//! Layout: one ASCII header line, then the JSON body:
//!
//! ```text
//! STRATA <kind> v<version> len=<body bytes> crc32=<8 hex digits of the body's CRC32>\n
//! <body: UTF-8 JSON>
//! ```
//!
//! JSON keeps these rarely-written files readable by people; the header catches what JSON
//! cannot (a flipped digit still parses). Files are replaced atomically
//! ([`crate::fsutil::write_atomic`]), so a crash leaves the old or the new file.

use std::ops::RangeInclusive;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::StorageError;
use crate::fsutil::write_atomic;

/// Writes `value` to `path` atomically and durably.
pub fn write<T: Serialize>(
    path: &Path,
    kind: &str,
    version: u32,
    value: &T,
) -> Result<(), StorageError> {
    let body = serde_json::to_vec_pretty(value)
        .map_err(|e| StorageError::Invalid(format!("cannot encode {kind}: {e}")))?;
    let mut bytes = format!(
        "STRATA {kind} v{version} len={} crc32={:08x}\n",
        body.len(),
        crc32fast::hash(&body)
    )
    .into_bytes();
    bytes.extend_from_slice(&body);
    write_atomic(path, &bytes).map_err(|e| StorageError::io("cannot write", path, e))
}

/// Reads `path`; `Ok(None)` if it does not exist. Any mismatch (kind, version, length,
/// checksum, JSON) is [`StorageError::Corrupt`] naming the file.
pub fn read<T: DeserializeOwned>(
    path: &Path,
    kind: &str,
    version: u32,
) -> Result<Option<T>, StorageError> {
    Ok(read_versions(path, kind, version..=version)?.map(|(_, value)| value))
}

/// Like [`read`], for a format whose older versions are still read: accepts any version
/// in `versions` and returns the one found with the value.
pub fn read_versions<T: DeserializeOwned>(
    path: &Path,
    kind: &str,
    versions: RangeInclusive<u32>,
) -> Result<Option<(u32, T)>, StorageError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StorageError::io("cannot read", path, e)),
    };
    let corrupt = |offset: usize, reason: String| StorageError::Corrupt {
        path: path.to_path_buf(),
        offset: offset as u64,
        reason,
    };
    let header_end = bytes
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| corrupt(0, "no header line".into()))?;
    let header = std::str::from_utf8(&bytes[..header_end])
        .map_err(|_| corrupt(0, "header is not UTF-8".into()))?;
    let body = &bytes[header_end + 1..];
    let kind_prefix = format!("STRATA {kind} v");
    let found = header.strip_prefix(&kind_prefix).and_then(|rest| {
        let (version, rest) = rest.split_once(' ')?;
        let version: u32 = version.parse().ok()?;
        versions.contains(&version).then_some((version, rest))
    });
    let Some((version, rest)) = found else {
        let wanted = if versions.start() == versions.end() {
            format!("{}", versions.start())
        } else {
            format!("{}..={}", versions.start(), versions.end())
        };
        return Err(corrupt(
            0,
            format!("expected a \"{kind_prefix}{wanted} …\" header, got \"{header}\""),
        ));
    };
    let mut len = None;
    let mut crc = None;
    for item in rest.split(' ') {
        if let Some(v) = item.strip_prefix("len=") {
            len = v.parse::<usize>().ok();
        } else if let Some(v) = item.strip_prefix("crc32=") {
            crc = u32::from_str_radix(v, 16).ok();
        }
    }
    let (Some(len), Some(crc)) = (len, crc) else {
        return Err(corrupt(0, format!("bad header \"{header}\"")));
    };
    if body.len() != len {
        return Err(corrupt(
            header_end + 1,
            format!("body is {} bytes, header says {len}", body.len()),
        ));
    }
    if crc32fast::hash(body) != crc {
        return Err(corrupt(header_end + 1, "checksum mismatch".into()));
    }
    serde_json::from_slice(body)
        .map(|value| Some((version, value)))
        .map_err(|e| corrupt(header_end + 1, format!("bad JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Thing {
        a: u32,
        b: String,
    }

    #[test]
    fn round_trip_and_every_damage_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("thing");
        assert!(read::<Thing>(&path, "thing", 1).unwrap().is_none());
        let thing = Thing {
            a: 17,
            b: "x".into(),
        };
        write(&path, "thing", 1, &thing).unwrap();
        assert_eq!(read::<Thing>(&path, "thing", 1).unwrap(), Some(thing));
        assert!(matches!(
            read::<Thing>(&path, "thing", 2),
            Err(StorageError::Corrupt { .. })
        ));
        assert!(matches!(
            read::<Thing>(&path, "other", 1),
            Err(StorageError::Corrupt { .. })
        ));

        let good = std::fs::read(&path).unwrap();
        for len in 0..good.len() {
            std::fs::write(&path, &good[..len]).unwrap();
            let result = read::<Thing>(&path, "thing", 1);
            assert!(
                matches!(result, Err(StorageError::Corrupt { .. })),
                "length {len}: {result:?}"
            );
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                read::<Thing>(&path, "thing", 1).is_err(),
                "flipped byte {i}"
            );
        }
    }
}
