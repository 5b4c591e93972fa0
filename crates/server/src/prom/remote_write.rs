//! Prometheus remote write 1.0: a snappy-compressed (block format) protobuf `WriteRequest`.
//!
//! The messages are declared here with prost's derive, field numbers as in Prometheus'
//! `prompb/remote.proto` and `prompb/types.proto`. Label names and values are decoded as
//! `bytes` (the wire is the same as `string`) so that they stay slices of the request
//! body, and are checked as UTF-8 once, here. Fields not declared (exemplars, metadata) are
//! skipped by the decoder: accepted and ignored.

use std::borrow::Cow;

use bytes::Bytes;
use prost::Message;
use strata_storage::SeriesWrite;
use strata_storage::model::Value;

use super::model::{METRIC_LABEL, VALUE_FIELD, ms_to_ns};

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct WriteRequest {
    /// The series, each with its samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`. Native histograms (field 4) are only counted: Strata stores
/// float samples.
#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    /// Its labels, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Its float samples.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Its native-histogram samples, undecoded.
    #[prost(bytes = "bytes", repeated, tag = "4")]
    pub histograms: Vec<Bytes>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// The label name.
    #[prost(bytes = "bytes", tag = "1")]
    pub name: Bytes,
    /// The label value.
    #[prost(bytes = "bytes", tag = "2")]
    pub value: Bytes,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// What a remote-write body holds, ready for [`strata_storage::Engine::write_series`].
#[derive(Debug, Default)]
pub struct Decoded<'a> {
    /// The series to write.
    pub series: Vec<SeriesWrite<'a>>,
    /// For each of `series`, its 1-based place in the request.
    pub origins: Vec<usize>,
    /// Series refused before the engine saw them, with why (1-based place in the request).
    pub refused: Vec<(usize, String)>,
    /// Native-histogram samples, which Strata does not store.
    pub histograms: usize,
}

/// Decompresses a snappy block, refusing output past `max_bytes`.
pub fn unsnappy(raw: &[u8], max_bytes: usize) -> Result<Vec<u8>, String> {
    let length = snap::raw::decompress_len(raw)
        .map_err(|e| format!("cannot decompress the snappy body: {e}"))?;
    if length > max_bytes {
        return Err(format!(
            "the decompressed body would be {length} bytes, over the limit of {max_bytes} bytes (max body bytes)"
        ));
    }
    snap::raw::Decoder::new()
        .decompress_vec(raw)
        .map_err(|e| format!("cannot decompress the snappy body: {e}"))
}

/// Decodes the protobuf `WriteRequest`.
pub fn decode(body: Bytes) -> Result<WriteRequest, String> {
    WriteRequest::decode(body).map_err(|e| format!("cannot decode the protobuf WriteRequest: {e}"))
}

/// Maps each time series onto a [`SeriesWrite`]: `__name__` names the table, the other
/// labels are tags (an empty value is no label, as in Prometheus), the samples go to the
/// float field `value` with their millisecond times in nanoseconds.
pub fn to_series(request: &WriteRequest) -> Decoded<'_> {
    let mut out = Decoded::default();
    for (index, series) in request.timeseries.iter().enumerate() {
        out.histograms += series.histograms.len();
        if series.samples.is_empty() {
            continue;
        }
        match one_series(series) {
            Ok(one) => {
                out.series.push(one);
                out.origins.push(index + 1);
            }
            Err(message) => out.refused.push((index + 1, message)),
        }
    }
    out
}

fn one_series(series: &TimeSeries) -> Result<SeriesWrite<'_>, String> {
    let mut table = None;
    let mut tags = Vec::with_capacity(series.labels.len());
    for label in &series.labels {
        let name = utf8(&label.name, "label name")?;
        let value = utf8(&label.value, "label value")?;
        if name == METRIC_LABEL {
            table = Some(value);
        } else if name.is_empty() {
            return Err("a label has an empty name".into());
        } else if !value.is_empty() {
            tags.push((Cow::Borrowed(name), Cow::Borrowed(value)));
        }
    }
    let table = table
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("the series has no {METRIC_LABEL} label (metric name)"))?;
    let samples = series
        .samples
        .iter()
        .map(|s| {
            ms_to_ns(s.timestamp)
                .map(|ns| (ns, Value::Float(s.value)))
                .ok_or_else(|| format!("sample time {} ms of {table} is out of range", s.timestamp))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(SeriesWrite {
        table: Cow::Borrowed(table),
        tags,
        field: Cow::Borrowed(VALUE_FIELD),
        samples,
    })
}

fn utf8<'a>(bytes: &'a Bytes, what: &str) -> Result<&'a str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("a {what} is not UTF-8: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(name: &str, value: &str) -> Label {
        Label {
            name: Bytes::copy_from_slice(name.as_bytes()),
            value: Bytes::copy_from_slice(value.as_bytes()),
        }
    }

    #[test]
    fn a_compressed_request_round_trips_into_series() {
        let request = WriteRequest {
            timeseries: vec![
                TimeSeries {
                    labels: vec![
                        label("__name__", "up"),
                        label("instance", "a:9100"),
                        label("empty", ""),
                    ],
                    samples: vec![
                        Sample {
                            value: 1.0,
                            timestamp: 1_700_000_000_123,
                        },
                        Sample {
                            value: f64::NAN,
                            timestamp: 1_700_000_015_123,
                        },
                    ],
                    histograms: vec![],
                },
                TimeSeries {
                    labels: vec![label("job", "x")],
                    samples: vec![Sample {
                        value: 2.0,
                        timestamp: 0,
                    }],
                    histograms: vec![Bytes::from_static(b"\x08\x01")],
                },
            ],
        };
        let body = snap::raw::Encoder::new()
            .compress_vec(&request.encode_to_vec())
            .unwrap();
        let plain = unsnappy(&body, 1 << 20).unwrap();
        let decoded_request = decode(Bytes::from(plain)).unwrap();
        // (Compared encoded: NaN is not equal to itself.)
        assert_eq!(decoded_request.encode_to_vec(), request.encode_to_vec());
        let decoded = to_series(&decoded_request);
        assert_eq!(decoded.series.len(), 1);
        let up = &decoded.series[0];
        assert_eq!(up.table, "up");
        assert_eq!(up.tags, vec![(Cow::from("instance"), Cow::from("a:9100"))]);
        assert_eq!(up.field, "value");
        assert_eq!(up.samples[0].0, 1_700_000_000_123_000_000);
        assert!(matches!(up.samples[1].1, Value::Float(v) if v.is_nan()));
        assert_eq!(decoded.refused.len(), 1);
        assert_eq!(decoded.refused[0].0, 2);
        assert!(
            decoded.refused[0].1.contains("__name__"),
            "{:?}",
            decoded.refused
        );
        assert_eq!(decoded.histograms, 1);
    }

    #[test]
    fn bad_bodies_are_errors_never_panics() {
        assert!(unsnappy(b"\xff\xff\xff\xff\x0f", 1 << 20).is_err());
        // A declared length past the cap is refused before any allocation.
        let big = snap::raw::Encoder::new()
            .compress_vec(&[0u8; 4096])
            .unwrap();
        assert!(unsnappy(&big, 100).unwrap_err().contains("over the limit"));
        assert!(decode(Bytes::from_static(b"\x0a\xff\xff\xff")).is_err());
        // Seeded random mutations of a good body.
        let good = WriteRequest {
            timeseries: vec![TimeSeries {
                labels: vec![label("__name__", "m"), label("a", "b")],
                samples: vec![Sample {
                    value: 1.5,
                    timestamp: 5,
                }],
                histograms: vec![],
            }],
        }
        .encode_to_vec();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            let mut body = good.clone();
            for _ in 0..3 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let at = (state % body.len() as u64) as usize;
                body[at] = (state >> 32) as u8;
            }
            if let Ok(request) = decode(Bytes::from(body)) {
                let _ = to_series(&request);
            }
        }
    }

    #[test]
    fn times_out_of_range_and_bad_utf8_refuse_the_series() {
        let request = WriteRequest {
            timeseries: vec![
                TimeSeries {
                    labels: vec![label("__name__", "m")],
                    samples: vec![Sample {
                        value: 1.0,
                        timestamp: i64::MAX,
                    }],
                    histograms: vec![],
                },
                TimeSeries {
                    labels: vec![
                        label("__name__", "m"),
                        Label {
                            name: Bytes::from_static(b"a"),
                            value: Bytes::from_static(b"\xff"),
                        },
                    ],
                    samples: vec![Sample {
                        value: 1.0,
                        timestamp: 1,
                    }],
                    histograms: vec![],
                },
            ],
        };
        let decoded = to_series(&request);
        assert!(decoded.series.is_empty());
        assert!(decoded.refused[0].1.contains("out of range"));
        assert!(decoded.refused[1].1.contains("UTF-8"));
    }
}
