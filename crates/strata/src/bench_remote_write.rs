//! `strata bench write --prometheus`: a workload's line protocol turned into Prometheus
//! remote-write requests, before the clock, the way VictoriaMetrics maps the two models:
//! field `f` of measurement `m` is the metric `m_f`, tags are labels, each value a sample
//! (integers and booleans as floats; strings have no sample), times in milliseconds.

use std::collections::HashMap;

use bytes::Bytes;
use prost::Message;
use strata_lineproto::{FieldValue, ParseOptions, Precision, parse_lines};
use strata_server::prom::remote_write::{Label, Sample, TimeSeries, WriteRequest};

/// One request: its snappy body, rows of line protocol it came from, and samples.
pub struct RemoteWriteBatch {
    pub body: Vec<u8>,
    pub rows: u64,
    pub samples: u64,
}

/// Converts one batch of line protocol. Each series is one `TimeSeries` with all its
/// samples of the batch, labels sorted by name as Prometheus sends them.
pub fn convert(lines: &[u8], precision: Precision) -> Result<RemoteWriteBatch, String> {
    let options = ParseOptions {
        precision,
        ..ParseOptions::default()
    };
    let mut index: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut timeseries: Vec<TimeSeries> = Vec::new();
    let (mut rows, mut samples) = (0u64, 0u64);
    let mut key = Vec::new();
    for line in parse_lines(lines, &options) {
        let line = line.map_err(|e| format!("the workload has a bad line: {e}"))?;
        let time_ms = line
            .timestamp_ns
            .ok_or("the workload has a line without a timestamp")?
            .div_euclid(1_000_000);
        rows += 1;
        for (field, value) in &line.fields {
            let value = match value {
                FieldValue::Float(v) => *v,
                FieldValue::Integer(v) => *v as f64,
                FieldValue::UInteger(v) => *v as f64,
                FieldValue::Boolean(v) => f64::from(u8::from(*v)),
                FieldValue::String(_) => continue,
            };
            let name = format!("{}_{field}", line.measurement);
            key.clear();
            key.extend_from_slice(name.as_bytes());
            key.push(b'\n');
            key.extend_from_slice(line.series_key);
            // Looked up first: most samples belong to a series the batch has seen.
            let at = match index.get(&key) {
                Some(at) => *at,
                None => {
                    let mut labels: Vec<Label> = std::iter::once(("__name__", name.as_str()))
                        .chain(line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
                        .map(|(k, v)| Label {
                            name: Bytes::copy_from_slice(k.as_bytes()),
                            value: Bytes::copy_from_slice(v.as_bytes()),
                        })
                        .collect();
                    labels.sort_by(|a, b| a.name.cmp(&b.name));
                    timeseries.push(TimeSeries {
                        labels,
                        samples: Vec::new(),
                        histograms: Vec::new(),
                    });
                    index.insert(key.clone(), timeseries.len() - 1);
                    timeseries.len() - 1
                }
            };
            timeseries[at].samples.push(Sample {
                value,
                timestamp: time_ms,
            });
            samples += 1;
        }
    }
    let plain = WriteRequest { timeseries }.encode_to_vec();
    let body = snap::raw::Encoder::new()
        .compress_vec(&plain)
        .map_err(|e| format!("cannot snappy-compress a batch: {e}"))?;
    Ok(RemoteWriteBatch {
        body,
        rows,
        samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_metrics_and_series_gather_their_samples() {
        let lines = b"cpu,host=b,dc=x usage=1.5,idle=2i 1000000000\n\
                      cpu,host=b,dc=x usage=2.5,idle=3i,note=\"n\" 2000000000\n\
                      mem,host=a ok=true 3000000000\n";
        let batch = convert(lines, Precision::Nanoseconds).unwrap();
        assert_eq!((batch.rows, batch.samples), (3, 5));
        let plain = snap::raw::Decoder::new()
            .decompress_vec(&batch.body)
            .unwrap();
        let request = WriteRequest::decode(Bytes::from(plain)).unwrap();
        let text: Vec<String> = request
            .timeseries
            .iter()
            .map(|series| {
                let labels: Vec<String> = series
                    .labels
                    .iter()
                    .map(|l| {
                        format!(
                            "{}={}",
                            String::from_utf8_lossy(&l.name),
                            String::from_utf8_lossy(&l.value)
                        )
                    })
                    .collect();
                let samples: Vec<String> = series
                    .samples
                    .iter()
                    .map(|s| format!("{}@{}", s.value, s.timestamp))
                    .collect();
                format!("{} {}", labels.join(","), samples.join(" "))
            })
            .collect();
        assert_eq!(
            text,
            [
                "__name__=cpu_usage,dc=x,host=b 1.5@1000 2.5@2000",
                "__name__=cpu_idle,dc=x,host=b 2@1000 3@2000",
                "__name__=mem_ok,host=a 1@3000",
            ]
        );
    }
}
