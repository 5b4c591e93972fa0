//! The query crate's integration tests, built as one test binary.
//!
//! Each module below was its own binary, and each linked DataFusion: about 210 MB apiece
//! in a debug build, 2.7 GB for thirteen. CI's clean build ran out of disk on that, so
//! they share one link. Run one group with `cargo test -p strata-query --test suite
//! golden::`.

mod common;
mod differential;
mod direct;
mod downsample;
mod first_last;
mod golden;
mod guard;
mod lindorm_ddl;
mod preagg;
mod pushdown;
mod replanned;
mod sql;
mod statements;
mod statements_no_panic;
mod tdengine_ddl;
