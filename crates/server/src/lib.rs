//! Strata's network front (being built): InfluxDB-compatible HTTP writes, TCP line
//! protocol, health and metrics.
