//! Embeds the web console (`console/`) into the binary: writes `$OUT_DIR/console_assets.rs`,
//! a sorted table of (path under `/console/`, bytes) with one `include_bytes!` per served
//! file. The console's tests, lint configuration and npm files are not served.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Extensions served (besides licence files, kept beside what they license).
const SERVED: [&str; 6] = ["html", "css", "js", "svg", "png", "ico"];
/// Names never served: the console's development files.
const SKIPPED: [&str; 5] = [
    "tests",
    "node_modules",
    "package.json",
    "package-lock.json",
    "eslint.config.js",
];

fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with('.') || SKIPPED.contains(&name) {
            continue;
        }
        if path.is_dir() {
            walk(&path, root, out);
            continue;
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if SERVED.contains(&ext) || name.starts_with("LICENSE") {
            let rel = path.strip_prefix(root).expect("under the root");
            let rel = rel.to_str().expect("UTF-8 asset path").replace('\\', "/");
            out.push((rel, path.clone()));
        }
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut assets = Vec::new();
    if root.is_dir() {
        walk(&root, &root, &mut assets);
    }
    let mut code = String::from("/// The console's files: path under `/console/`, bytes.\n");
    code.push_str("pub(crate) static ASSETS: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &assets {
        // Every directory too, so that a new file in a subdirectory triggers a rebuild.
        if let Some(parent) = path.parent() {
            println!("cargo:rerun-if-changed={}", parent.display());
        }
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("console_assets.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
