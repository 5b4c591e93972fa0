//! InfluxQL parsing time per statement, on the shapes TSBS's and Grafana's queries take.
//! A `/query` request parses its statement before anything else, so for the small TSBS
//! queries (answered in about 0.2 ms) the parser's microseconds show in the latency.
//!
//! Run: `cargo bench -p strata-influxql --bench parse`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_influxql::parse_query;

/// TSBS's cpu-max-all-1 (`tsbs_generate_queries --format=influx`), verbatim.
const CPU_MAX_ALL_1: &str = "SELECT max(usage_user),max(usage_system),max(usage_idle),\
max(usage_nice),max(usage_iowait),max(usage_irq),max(usage_softirq),max(usage_steal),\
max(usage_guest),max(usage_guest_nice) from cpu where (hostname = 'host_49') and \
time >= '2016-01-01T08:24:59Z' and time < '2016-01-01T16:24:59Z' group by time(1h)";

/// TSBS's double-groupby-1.
const DOUBLE_GROUPBY_1: &str = "SELECT mean(usage_user) from cpu where time >= \
'2016-01-01T08:24:59Z' and time < '2016-01-01T20:24:59Z' group by time(1h),hostname";

/// The panel query Grafana's InfluxDB data source sends.
const GRAFANA_PANEL: &str = "SELECT mean(\"usage_user\") FROM \"cpu\" WHERE (\"hostname\" \
=~ /^host_1$/) AND time >= 1700000000000ms and time <= 1700003600000ms GROUP BY \
time(10s), \"hostname\" fill(null)";

fn parse(c: &mut Criterion) {
    let params = HashMap::new();
    let mut group = c.benchmark_group("influxql_parse");
    for (name, text) in [
        ("cpu-max-all-1", CPU_MAX_ALL_1),
        ("double-groupby-1", DOUBLE_GROUPBY_1),
        ("grafana-panel", GRAFANA_PANEL),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| parse_query(black_box(text), &params).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
