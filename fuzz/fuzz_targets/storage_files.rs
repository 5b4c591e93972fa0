//! Fuzz every file the engine reads back: the first byte picks the file (WAL segment,
//! series log, part, catalog, manifest), the rest replaces it in a small valid data
//! directory, and the engine opens it and reads every table. Errors are the expected
//! answer to damage; a panic, hang or runaway allocation is a bug.
//!
//! Run: `cargo +nightly fuzz run storage_files fuzz/corpus/storage_files fuzz/seeds/storage_files -- -max_total_time=60`
//! (from the repo root; the seeds are the template's own files, from `tests/fuzz_files.rs`).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use strata_storage::fuzz::{FileKind, Template};

static TEMPLATE: OnceLock<Template> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Some((&selector, file)) = data.split_first() else {
        return;
    };
    let kind = FileKind::ALL[selector as usize % FileKind::ALL.len()];
    TEMPLATE.get_or_init(Template::new).open_with(kind, file);
});
