//! `strata bench write --tcp ADDR --opentsdb`: a workload's line protocol turned into
//! OpenTSDB telnet `put` lines, before the clock, with the mapping remote write's benchmark
//! uses: field `f` of measurement `m` is the metric `m_f`, tags are tags, each numeric value
//! one data point (booleans as 0 and 1; strings have none), times in milliseconds.

use std::io::Write;

use strata_lineproto::{FieldValue, ParseOptions, Precision, parse_lines};

/// One batch of `put` lines: the text, the rows of line protocol it came from, and points.
pub struct PutBatch {
    pub body: Vec<u8>,
    pub rows: u64,
    pub points: u64,
}

/// Converts one batch of line protocol. A tag holding white space or `=` cannot be written
/// as a telnet tag: an error names it.
pub fn convert(lines: &[u8], precision: Precision) -> Result<PutBatch, String> {
    let options = ParseOptions {
        precision,
        ..ParseOptions::default()
    };
    let mut body = Vec::with_capacity(lines.len() * 2);
    let (mut rows, mut points) = (0u64, 0u64);
    let mut tags = Vec::new();
    for line in parse_lines(lines, &options) {
        let line = line.map_err(|e| format!("the workload has a bad line: {e}"))?;
        let time_ms = line
            .timestamp_ns
            .ok_or("the workload has a line without a timestamp")?
            .div_euclid(1_000_000);
        rows += 1;
        tags.clear();
        for (key, value) in &line.tags {
            if [key.as_ref(), value.as_ref()]
                .iter()
                .any(|text| text.contains(|c: char| c.is_whitespace() || c == '='))
            {
                return Err(format!(
                    "tag {key}={value} cannot be an OpenTSDB telnet tag (white space or '=')"
                ));
            }
            write!(tags, " {key}={value}").map_err(|e| e.to_string())?;
        }
        for (field, value) in &line.fields {
            let written = match value {
                FieldValue::Float(v) => {
                    write!(body, "put {}_{field} {time_ms} {v}", line.measurement)
                }
                FieldValue::Integer(v) => {
                    write!(body, "put {}_{field} {time_ms} {v}", line.measurement)
                }
                FieldValue::UInteger(v) => {
                    write!(body, "put {}_{field} {time_ms} {v}", line.measurement)
                }
                FieldValue::Boolean(v) => {
                    write!(
                        body,
                        "put {}_{field} {time_ms} {}",
                        line.measurement,
                        u8::from(*v)
                    )
                }
                FieldValue::String(_) => continue,
            };
            written.map_err(|e| e.to_string())?;
            body.extend_from_slice(&tags);
            body.push(b'\n');
            points += 1;
        }
    }
    Ok(PutBatch { body, rows, points })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_put_lines() {
        let lines = b"cpu,host=b,dc=x usage=1.5,idle=2i,note=\"n\" 1000000000\n\
                      mem,host=a ok=true 3000000000\n";
        let batch = convert(lines, Precision::Nanoseconds).unwrap();
        assert_eq!((batch.rows, batch.points), (2, 3));
        assert_eq!(
            String::from_utf8(batch.body).unwrap(),
            "put cpu_usage 1000 1.5 host=b dc=x\n\
             put cpu_idle 1000 2 host=b dc=x\n\
             put mem_ok 3000 1 host=a\n"
        );
        assert!(convert(b"m,t=a\\ b v=1 1\n", Precision::Nanoseconds).is_err());
    }
}
