//! Test fixtures shared by the rendering and result tests: a two-target comparison
//! ([`sample`]) with a short load, a failed type and a type TSBS has no PromQL for.

use super::{Comparison, Language, LanguageRun, TargetKind, TargetResult, TypeResult};
use crate::report::WriteReport;

fn type_result(name: &str, median: Option<f64>, failures: usize) -> TypeResult {
    TypeResult {
        query_type: name.into(),
        queries: 3,
        answered: 3 - failures,
        failures,
        first_failure: (failures > 0).then(|| "HTTP 500: boom".to_string()),
        median_ms: median,
        rows: 10,
        unsupported: None,
    }
}

fn target(name: &str, kind: TargetKind, seconds: f64, runs: Vec<LanguageRun>) -> TargetResult {
    let mut load = WriteReport {
        rows: 100,
        points: 1000,
        rows_generated: 100,
        elapsed_s: seconds,
        points_per_s: 1000.0 / seconds,
        peak_rss_mb: Some(123.4),
        bytes_per_point: Some(1.5),
        disk_bytes_note: "after a flush".into(),
        ..WriteReport::default()
    };
    if seconds < 10.0 {
        load.rate_withheld = Some("the load lasted 2.00 s, under 10 s".into());
    }
    TargetResult {
        name: name.into(),
        kind,
        url: "http://127.0.0.1:1".into(),
        pid: Some(1),
        cores: Some("0,1".into()),
        checksum: "0x00000000000000ff".into(),
        batches: 2,
        body_bytes: 5000,
        load,
        server_cpu_s: Some(0.5),
        queries: runs,
    }
}

pub(super) fn sample() -> Comparison {
    let types = ["single-groupby-1-1-1", "lastpoint"];
    let strata = target(
        "strata",
        TargetKind::Strata,
        0.0001,
        vec![
            LanguageRun {
                language: Language::InfluxQl,
                types: vec![
                    type_result(types[0], Some(1.5), 0),
                    type_result(types[1], Some(2.25), 1),
                ],
            },
            LanguageRun {
                language: Language::PromQl,
                types: vec![
                    type_result(types[0], Some(0.75), 0),
                    TypeResult {
                        unsupported: Some("TSBS has no PromQL for lastpoint".into()),
                        ..type_result(types[1], None, 0)
                    },
                ],
            },
        ],
    );
    let mut influx = target(
        "influxdb",
        TargetKind::InfluxDb,
        20.0,
        vec![LanguageRun {
            language: Language::InfluxQl,
            types: vec![
                type_result(types[0], Some(3.0), 0),
                type_result(types[1], None, 3),
            ],
        }],
    );
    influx.cores = Some("0-3,8".into());
    influx.load.bytes_per_point = None;
    Comparison {
        workload: "cpu-only".into(),
        database: "bench".into(),
        workers: 2,
        batch_rows: 50,
        query_types: types.map(String::from).to_vec(),
        queries_per_type: 3,
        targets: vec![strata, influx],
        notes: vec!["a note".into()],
    }
}
