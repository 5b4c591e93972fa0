//! Per-shard write-ahead log (being written).
