//! The storage crate's integration tests, built as one test binary: one link instead of
//! twenty-eight keeps a clean debug build inside CI's disk. `out_of_space.rs` stays its own
//! binary because it lowers the process's file-size limit. The crash tests run themselves
//! again as a child process by their full name (`crash::…`, `delete::…`). Run one group
//! with `cargo test -p strata-storage --test suite wal::`.

mod backup;
mod catalog;
mod common;
mod crash;
mod ddl;
mod delete;
mod disk_by_database;
mod downsample;
mod engine_api;
mod engine_errors;
mod flush_wal;
mod fuzz_files;
mod latest_cache;
mod latest_each;
mod memtable;
mod model;
mod part_corruption;
mod part_roundtrip;
mod part_writer;
mod read_blocks;
mod read_only;
mod repair;
mod retention;
mod series_index;
mod series_limit;
mod series_persist;
mod series_query;
mod series_retire;
mod wal;
mod wal_recovery;
mod write_path;
