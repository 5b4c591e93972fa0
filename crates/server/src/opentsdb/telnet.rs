//! The telnet side of OpenTSDB: a batch of whole lines from one connection (split and
//! batched by `tcp`, as line protocol is), each a command — `put <metric> <timestamp>
//! <value> <tagk=tagv>...`, `version`, `help` or `exit`. Good `put`s are written together;
//! as OpenTSDB does, nothing is answered to a good `put`, and a bad one is answered with a
//! line `put: line N: why` (N counts this connection's lines from 1).

use strata_storage::{Engine, StorageError};

use super::parse;

/// What one batch came to.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Text to send back: error lines and command answers.
    pub replies: Vec<u8>,
    /// `exit` was read: close the connection (lines after it are not read).
    pub exit: bool,
    /// Data points stored.
    pub points: u64,
    /// Lines refused (bad `put`s, unknown commands) and data points the engine refused.
    pub bad_lines: u64,
}

/// Runs the commands of `batch` (whole lines, each ending in `\n`), whose first line is
/// line `first_line` of its connection. Blocking: it writes to the engine.
pub(crate) fn run_batch(
    engine: &Engine,
    database: &str,
    batch: &[u8],
    first_line: u64,
) -> Result<Outcome, StorageError> {
    let mut outcome = Outcome::default();
    let mut grouper = parse::Grouper::default();
    for (offset, line) in batch.split(|b| *b == b'\n').enumerate() {
        let number = first_line + offset as u64;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Ok(line) = std::str::from_utf8(line) else {
            reply(
                &mut outcome,
                format!("put: line {number}: the line is not UTF-8"),
            );
            continue;
        };
        let mut words = line.split_ascii_whitespace();
        match words.next() {
            None => {}
            Some("put") => match parse::put_words(&mut words) {
                Ok(point) => grouper.add(point, number as usize),
                Err(error) => reply(&mut outcome, format!("put: line {number}: {error}")),
            },
            Some("version") => outcome.replies.extend_from_slice(
                concat!(
                    "strata ",
                    env!("CARGO_PKG_VERSION"),
                    " (OpenTSDB telnet put)\n"
                )
                .as_bytes(),
            ),
            Some("help") => outcome
                .replies
                .extend_from_slice(b"available commands: exit help put version\n"),
            Some("exit") => {
                outcome.exit = true;
                break;
            }
            Some(other) => reply(
                &mut outcome,
                format!("unknown command: {other} (line {number}).  Try `help'."),
            ),
        }
    }
    let grouped = grouper.finish();
    if !grouped.series.is_empty() {
        let report = engine.write_series(database, &grouped.series)?;
        outcome.points = report.points;
        outcome.bad_lines += grouped.points - report.points;
        for error in &report.errors {
            // A refused series is reported at its first line in this batch.
            let line = grouped.first[error.line - 1];
            outcome
                .replies
                .extend_from_slice(format!("put: line {line}: {}\n", error.message).as_bytes());
        }
    }
    Ok(outcome)
}

fn reply(outcome: &mut Outcome, line: String) {
    outcome.bad_lines += 1;
    outcome.replies.extend_from_slice(line.as_bytes());
    outcome.replies.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_storage::EngineOptions;

    fn engine(dir: &std::path::Path) -> Engine {
        Engine::open(EngineOptions {
            data_dirs: vec![dir.to_path_buf()],
            shards: 2,
            ..EngineOptions::default()
        })
        .unwrap()
        .0
    }

    #[test]
    fn a_batch_stores_good_puts_and_answers_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(dir.path());
        let batch = b"put sys.cpu 1356998400 1 host=a\n\
            put sys.cpu 1356998400 x host=a\n\
            \n\
            version\r\n\
            bogus 1 2\n\
            put sys.cpu 1356998401 2 host=a\n\
            put sys.mem 1356998400 3 host=b\n\
            exit\n\
            put sys.cpu 1356998402 9 host=a\n";
        let outcome = run_batch(&engine, "tsdb", batch, 10).unwrap();
        assert!(outcome.exit);
        assert_eq!(outcome.points, 3);
        assert_eq!(outcome.bad_lines, 2);
        let replies = String::from_utf8(outcome.replies).unwrap();
        let lines: Vec<&str> = replies.lines().collect();
        assert_eq!(lines.len(), 3, "{replies}");
        assert!(
            lines[0].starts_with("put: line 11: Unable to parse value"),
            "{replies}"
        );
        assert!(lines[1].starts_with("strata "), "{replies}");
        assert!(
            lines[2].starts_with("unknown command: bogus (line 14)"),
            "{replies}"
        );
        // The engine's refusals are answered too: `value` is a float field of sys.cpu now.
        let clash = run_batch(&engine, "tsdb", b"put sys.cpu 1356998403 1 value=x\n", 1).unwrap();
        assert_eq!((clash.points, clash.bad_lines), (0, 1));
        assert!(
            String::from_utf8_lossy(&clash.replies).starts_with("put: line 1: "),
            "{:?}",
            String::from_utf8_lossy(&clash.replies)
        );
    }
}
