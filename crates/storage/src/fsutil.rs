//! Small file-system helpers with the durability steps spelled out once.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Replaces `path` with `bytes` atomically and durably: write a temporary file beside it,
/// fsync it, rename it over `path`, fsync the directory. A crash leaves either the old or
/// the new file, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = dir.join(tmp_name);
    let mut unfinished = RemoveUnlessKept::default();
    unfinished.add(tmp.clone());
    {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    unfinished.keep();
    sync_dir(dir)
}

/// Files being written that must not outlive a failure: each is removed when this is
/// dropped, unless [`RemoveUnlessKept::keep`] was called. On a full disk a failed flush or
/// merge would otherwise leave its partial part behind at every retry, eating the space
/// that could let the next try succeed.
#[derive(Default)]
pub(crate) struct RemoveUnlessKept {
    paths: Vec<PathBuf>,
}

impl RemoveUnlessKept {
    /// Removes `path` on drop unless kept.
    pub(crate) fn add(&mut self, path: PathBuf) {
        self.paths.push(path);
    }

    /// The files are complete and named where they belong: they stay.
    pub(crate) fn keep(mut self) {
        self.paths.clear();
    }
}

impl Drop for RemoveUnlessKept {
    fn drop(&mut self) {
        for path in &self.paths {
            // Best effort: a file left behind is an orphan, removed at the next start.
            let _ = fs::remove_file(path);
        }
    }
}

/// Creates `path` and any missing parent, like `fs::create_dir_all`, and fsyncs the
/// directory each new one was made in: a new directory's entry is durable only once its
/// parent is fsynced, and without that a power cut may take away a directory whose files
/// were all fsynced (the WAL of a new shard, with rows already acknowledged).
pub fn create_dir_all_durable(path: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut next = Some(path);
    while let Some(dir) = next.filter(|d| !d.as_os_str().is_empty() && !d.is_dir()) {
        missing.push(dir);
        next = dir.parent();
    }
    for dir in missing.into_iter().rev() {
        match fs::create_dir(dir) {
            Ok(()) => {}
            // Made meanwhile by someone else, who makes it durable.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => continue,
            Err(e) => return Err(e),
        }
        let parent = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sync_dir(parent)?;
    }
    Ok(())
}

/// Fsyncs a directory so that entries created, renamed or removed in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
