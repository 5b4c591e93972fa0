//! Power cuts, simulated: `powerloss/shim.c`, preloaded into the server, logs every
//! operation under the data directory that decides what survives a power cut (fsyncs of
//! files and directories, creations, renames, hard links, unlinks) and cuts the power itself when told
//! to (SIGKILL at its next such operation, so none is half done). [`PowerCut::apply`] then rebuilds
//! the data directory as a disk that honours nothing but fsync would hold it: each file cut
//! to its size at its last fsync (empty if never fsynced), each directory holding the
//! entries it held at its own last fsync (a file created, renamed or unlinked since is
//! gone, back where it was, or back; a file replaced by a rename has its old bytes). That
//! is the strict POSIX promise; ext4 and xfs usually keep more.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiled shim, built once per test process with the system C compiler.
pub fn shim() -> PathBuf {
    static SHIM: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    SHIM.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/powerloss/shim.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("strata-powerloss-shim.so");
        let built = Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-o"])
            .arg(&out)
            .arg(&source)
            .arg("-ldl")
            .output()
            .expect("the power-loss test needs a C compiler (cc) to build its shim");
        assert!(
            built.status.success(),
            "cannot build the power-loss shim: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        out
    })
    .clone()
}

/// One server run under the shim: the directory it acts on, and where its log and side
/// files go.
pub struct PowerCut {
    data: PathBuf,
    work: PathBuf,
    objects: Vec<Object>,
    /// What each path names now (files and directories under the data directory).
    now: HashMap<PathBuf, usize>,
    /// Each directory's entries as of its last fsync (or as found before the run).
    durable: HashMap<PathBuf, BTreeMap<OsString, usize>>,
    /// The file last unlinked from each path (an open descriptor may still fsync it).
    unlinked: HashMap<PathBuf, usize>,
}

struct Object {
    dir: bool,
    /// Where its bytes are now: its path, or a hard link in the side directory.
    bytes_at: PathBuf,
    /// Its size at its last fsync; `None` if never fsynced in this run.
    synced: Option<u64>,
}

impl PowerCut {
    /// Takes the state of `data` (the data directory, or a directory holding it and more)
    /// before a run as durable (the last run ended with a power cut already applied, or a
    /// clean stop); `work` is a scratch directory on the same file system, outside `data`.
    pub fn before_run(data: &Path, work: &Path) -> PowerCut {
        let _ = std::fs::remove_dir_all(work);
        std::fs::create_dir_all(work.join("side")).unwrap();
        let mut cut = PowerCut {
            data: data.to_path_buf(),
            work: work.to_path_buf(),
            objects: Vec::new(),
            now: HashMap::new(),
            durable: HashMap::new(),
            unlinked: HashMap::new(),
        };
        if data.is_dir() {
            cut.add_found(data);
        }
        cut
    }

    fn add_found(&mut self, dir: &Path) {
        let mut entries = BTreeMap::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let meta = entry.metadata().unwrap();
            let id = self.new_object(&path, meta.is_dir(), Some(meta.len()));
            entries.insert(entry.file_name(), id);
            if meta.is_dir() {
                self.add_found(&path);
            }
        }
        self.durable.insert(dir.to_path_buf(), entries);
    }

    fn new_object(&mut self, path: &Path, dir: bool, synced: Option<u64>) -> usize {
        self.objects.push(Object {
            dir,
            bytes_at: path.to_path_buf(),
            synced,
        });
        let id = self.objects.len() - 1;
        self.now.insert(path.to_path_buf(), id);
        id
    }

    /// The server's environment: the shim preloaded, the power cut once
    /// [`PowerCut::cut_file`] exists.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), shim().display().to_string()),
            (
                "STRATA_POWERLOSS_DIR".into(),
                self.data.display().to_string(),
            ),
            (
                "STRATA_POWERLOSS_LOG".into(),
                self.log().display().to_string(),
            ),
            (
                "STRATA_POWERLOSS_SIDE".into(),
                self.work.join("side").display().to_string(),
            ),
            (
                "STRATA_POWERLOSS_CUT_FILE".into(),
                self.cut_file().display().to_string(),
            ),
        ]
    }

    /// Creating this file cuts the power at the server's next logged operation.
    pub fn cut_file(&self) -> PathBuf {
        self.work.join("cut")
    }

    fn log(&self) -> PathBuf {
        self.work.join("log")
    }

    /// After the shim cut the power: replays its log and rewrites the data directory as
    /// the disk would hold it. Returns the number of operations logged.
    pub fn apply(mut self) -> u64 {
        let log = std::fs::read_to_string(self.log()).unwrap();
        assert!(
            log.ends_with("X\n"),
            "the shim did not cut the power: {log}"
        );
        let mut operations = 0;
        for line in log.lines() {
            operations += 1;
            let (op, rest) = line.split_at(1);
            let rest = rest.trim_start();
            match op {
                "S" => {
                    let (size, path) = rest.split_once(' ').unwrap();
                    // An fsync through a descriptor of a file unlinked since.
                    let id = match path.strip_suffix(" (deleted)") {
                        Some(path) => *self.unlinked.get(Path::new(path)).unwrap_or_else(|| {
                            panic!("the shim's log fsyncs {path}, never unlinked")
                        }),
                        None => self.named(path),
                    };
                    self.objects[id].synced = Some(size.parse().unwrap());
                }
                "D" => {
                    let dir = PathBuf::from(rest);
                    let entries = self
                        .now
                        .iter()
                        .filter(|(path, _)| path.parent() == Some(&dir))
                        .map(|(path, id)| (path.file_name().unwrap().to_owned(), *id))
                        .collect();
                    self.durable.insert(dir, entries);
                }
                "C" => {
                    self.new_object(Path::new(rest), false, None);
                }
                "M" => {
                    self.new_object(Path::new(rest), true, None);
                }
                "R" => {
                    let mut parts = rest.splitn(3, ' ');
                    let (side, old, new) = (
                        parts.next().unwrap(),
                        parts.next().unwrap(),
                        parts.next().unwrap(),
                    );
                    let id = self.named(old);
                    assert!(!self.objects[id].dir, "directory renames are not modelled");
                    self.now.remove(Path::new(old));
                    if side != "-" {
                        let replaced = self.named(new);
                        self.objects[replaced].bytes_at = PathBuf::from(side);
                    }
                    self.now.insert(PathBuf::from(new), id);
                    self.objects[id].bytes_at = PathBuf::from(new);
                }
                "U" => {
                    let (side, path) = rest.split_once(' ').unwrap();
                    let id = self.named(path);
                    self.now.remove(Path::new(path));
                    self.unlinked.insert(PathBuf::from(path), id);
                    if side != "-" {
                        self.objects[id].bytes_at = PathBuf::from(side);
                    }
                }
                "L" => {
                    let (old, new) = rest.split_once(' ').unwrap();
                    let id = self.named(old);
                    self.now.insert(PathBuf::from(new), id);
                }
                "X" => {}
                _ => panic!("unknown line in the shim's log: {line}"),
            }
        }
        let rebuilt = self.work.join("rebuilt");
        std::fs::create_dir_all(&rebuilt).unwrap();
        self.rebuild(&self.data.clone(), &rebuilt);
        std::fs::remove_dir_all(&self.data).unwrap();
        std::fs::rename(&rebuilt, &self.data).unwrap();
        std::fs::remove_dir_all(&self.work).unwrap();
        operations
    }

    fn named(&self, path: &str) -> usize {
        *self
            .now
            .get(Path::new(path))
            .unwrap_or_else(|| panic!("the shim's log names {path}, which the model lacks"))
    }

    /// Writes into `out` what the disk holds of directory `dir`.
    fn rebuild(&self, dir: &Path, out: &Path) {
        let Some(entries) = self.durable.get(dir) else {
            return; // never fsynced since it was made: empty
        };
        for (name, id) in entries {
            let object = &self.objects[*id];
            let target = out.join(name);
            if object.dir {
                std::fs::create_dir(&target).unwrap();
                self.rebuild(&dir.join(name), &target);
            } else {
                let mut bytes = std::fs::read(&object.bytes_at).unwrap_or_default();
                bytes.truncate(object.synced.unwrap_or(0) as usize);
                std::fs::write(&target, bytes).unwrap();
            }
        }
    }
}
