//! Shared by the lake's engine-level tests: an engine on a test directory with an injected
//! clock, and reads of released partitions through a `LakeReader`.

#![allow(clippy::unwrap_used, dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub mod reads;

use strata_lake::{LakeReader, parse_url};
use strata_storage::{Engine, EngineOptions, ManualClock, WalSync};

/// An engine on `dir`: two shards, partitions of a day, no background threads, `clock`.
pub fn open(dir: &Path, clock: &Arc<ManualClock>) -> Arc<Engine> {
    let (engine, _) = Engine::open(EngineOptions {
        data_dirs: vec![dir.to_path_buf()],
        shards: 2,
        wal_sync: WalSync::None,
        partition_duration: Duration::from_secs(86_400),
        background: false,
        clock: Arc::clone(clock) as _,
        ..EngineOptions::default()
    })
    .unwrap();
    Arc::new(engine)
}

/// Reads of the partitions a round released take their rows from the lake at `root`.
pub fn read_from(engine: &Engine, root: &Path) {
    let url = parse_url(root.to_str().unwrap()).unwrap();
    engine.set_cold_source(Arc::new(LakeReader::new(url, HashMap::new()).unwrap()));
}
