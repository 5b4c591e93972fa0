//! The data directory lock: an engine holds an exclusive advisory lock (`flock`) on a
//! `LOCK` file in each of its data directories for as long as it is open, so a second
//! process (or a second engine in this one) opening the same directory fails at once with
//! [`StorageError::InUse`] instead of writing WAL segments, parts and manifests beside the
//! first and corrupting both. The lock goes with the file handle: when the engine is
//! dropped, or its process dies however it dies, the kernel releases it, so a crash never
//! leaves a directory locked. The file holds one line, `strata-lock 1 pid <pid>` (kind,
//! format version, the owner's process id), for the error message of whoever finds it
//! locked; its content is never trusted for anything else.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::StorageError;
use crate::layout::LOCK_FILE;

/// The locks of an open engine's data directories, released when dropped.
#[derive(Debug)]
pub(crate) struct DirLocks {
    _files: Vec<File>,
}

impl DirLocks {
    /// Locks every directory of `dirs` (which must exist), or none: the first one held
    /// elsewhere gives [`StorageError::InUse`] and the locks taken so far are released.
    pub(crate) fn acquire(dirs: &[PathBuf]) -> Result<Self, StorageError> {
        let mut files = Vec::with_capacity(dirs.len());
        for dir in dirs {
            files.push(lock(dir)?);
        }
        Ok(Self { _files: files })
    }
}

fn lock(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| StorageError::io("cannot open lock file", &path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            // Best effort: the message is still clear without the pid.
            let _ = file.read_to_string(&mut text);
            return Err(StorageError::InUse {
                path: dir.to_path_buf(),
                owner: owner_pid(&text),
            });
        }
        Err(TryLockError::Error(e)) => {
            return Err(StorageError::io("cannot lock data directory", &path, e));
        }
    }
    let pid = format!("{LOCK_HEADER} pid {}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)))
        .and_then(|_| file.write_all(pid.as_bytes()))
        .map_err(|e| StorageError::io("cannot write lock file", &path, e))?;
    Ok(file)
}

/// The lock file's first words: its kind and format version.
const LOCK_HEADER: &str = "strata-lock 1";

/// The pid a lock file's text names, if it is one Strata wrote.
fn owner_pid(text: &str) -> Option<String> {
    let pid = text
        .strip_prefix(LOCK_HEADER)?
        .trim()
        .strip_prefix("pid ")?;
    (!pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| pid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_directory_is_refused_until_released() {
        let a = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let b = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let held = DirLocks::acquire(&dirs).unwrap_or_else(|e| panic!("{e}"));
        // Any directory of the set, alone or first, is refused, naming it and the owner.
        for dir in [&dirs[1], &dirs[0]] {
            match DirLocks::acquire(std::slice::from_ref(dir)) {
                Err(StorageError::InUse { path, owner }) => {
                    assert_eq!(&path, dir);
                    assert_eq!(owner, Some(std::process::id().to_string()));
                }
                other => panic!("expected InUse, got {other:?}"),
            }
        }
        drop(held);
        let again = DirLocks::acquire(&dirs);
        assert!(again.is_ok(), "{again:?}");
    }

    #[test]
    fn the_owner_is_read_only_from_a_strata_lock_line() {
        assert_eq!(owner_pid("strata-lock 1 pid 42\n"), Some("42".into()));
        assert_eq!(owner_pid("strata-lock 1 pid \n"), None);
        assert_eq!(owner_pid("strata-lock 1 pid 4x2"), None);
        assert_eq!(owner_pid("42"), None);
        assert_eq!(owner_pid(""), None);
    }

    /// A failure part-way releases what was taken: the first directory is free again.
    #[test]
    fn a_refused_set_keeps_no_lock() {
        let a = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let b = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let _held_b =
            DirLocks::acquire(&[b.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e}"));
        let both = [a.path().to_path_buf(), b.path().to_path_buf()];
        assert!(matches!(
            DirLocks::acquire(&both),
            Err(StorageError::InUse { .. })
        ));
        assert!(DirLocks::acquire(&[a.path().to_path_buf()]).is_ok());
    }
}
