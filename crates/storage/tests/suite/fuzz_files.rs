//! Stable CI's bounded fuzzing of every file the engine reads back (WAL segment, series
//! log, part, catalog, manifest): seeded mutations of real files (bit flips, overwritten,
//! inserted and removed bytes, truncations, repeated slices), each opened and read whole
//! by `strata_storage::fuzz`. A panic fails the test; an error is the expected answer to
//! damage. The long runs use the same entry points under cargo-fuzz (`fuzz/`).
//! `STRATA_FUZZ_RUNS` sets the inputs per file kind (default 150); `STRATA_FUZZ_CORPUS=DIR`
//! also writes the seeds there in the cargo-fuzz target's input shape (a byte naming the
//! file kind, then the file), which is how `fuzz/seeds/storage_files` was made.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::Rng;
use strata_storage::fuzz::{FileKind, Template};

/// One mutation of `seed`.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(3) {
        let len = out.len().max(1) as u64;
        let at = rng.below(len) as usize;
        let last = out.len().saturating_sub(1);
        match rng.below(6) {
            0 if !out.is_empty() => out[at.min(last)] ^= 1 << rng.below(8),
            1 if !out.is_empty() => out[at.min(last)] = rng.below(256) as u8,
            2 => out.truncate(at),
            3 => {
                let n = 1 + rng.below(8) as usize;
                let bytes: Vec<u8> = (0..n).map(|_| rng.below(256) as u8).collect();
                out.splice(at.min(out.len())..at.min(out.len()), bytes);
            }
            4 if at < out.len() => {
                let end = (at + 1 + rng.below(16) as usize).min(out.len());
                out.drain(at..end);
            }
            _ if at < out.len() => {
                let end = (at + 1 + rng.below(32) as usize).min(out.len());
                let slice = out[at..end].to_vec();
                out.splice(at..at, slice);
            }
            _ => out.push(rng.below(256) as u8),
        }
    }
    out
}

#[test]
fn mutated_files_never_panic_the_engine() {
    let runs: u64 = std::env::var("STRATA_FUZZ_RUNS").map_or(150, |v| v.parse().unwrap());
    let template = Template::new();
    let mut rng = Rng::new(0xF022);
    for kind in FileKind::ALL {
        let seed = template.file(kind);
        if let Ok(dir) = std::env::var("STRATA_FUZZ_CORPUS") {
            let selector = FileKind::ALL.iter().position(|k| *k == kind).unwrap() as u8;
            let input: Vec<u8> = std::iter::once(selector).chain(seed.clone()).collect();
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(format!("{dir}/{kind:?}"), input).unwrap();
        }
        assert!(
            !template.open_with(kind, &seed),
            "{kind:?}: the seed is whole"
        );
        let mut noticed = 0;
        for _ in 0..runs {
            let input = mutate(&seed, &mut rng);
            if template.open_with(kind, &input) {
                noticed += 1;
            }
        }
        eprintln!("{kind:?}: {runs} mutated inputs, damage noticed in {noticed}, none panicked");
        assert!(noticed > 0, "{kind:?}: no damage was ever noticed");
    }
}
