//! Per-shard series index (being written).
