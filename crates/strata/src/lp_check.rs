//! `strata lp check`: parse a line-protocol file with Strata's parser and report every bad line.
//!
//! Useful before a load (a TSBS file, an export from another database) and as a plain
//! measure of the parser's speed on real data. The file is streamed in chunks cut at line
//! ends, so files larger than memory are fine; `.gz` files are decompressed on the fly.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use strata_lineproto::{Line, ParseOptions, Precision, parse_lines};

/// Bytes read per chunk: big enough to make per-chunk work negligible, small enough to keep
/// memory flat. A chunk always grows to hold at least one whole line.
const CHUNK_BYTES: usize = 8 << 20;

/// Flags of `strata lp check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Line-protocol file to check (gzip when it ends in .gz).
    file: PathBuf,
    /// Unit of the timestamps in the file: ns, us, ms or s.
    #[arg(long, default_value = "ns")]
    precision: Precision,
    /// Bad lines printed before the rest are only counted.
    #[arg(long, default_value_t = 20)]
    max_errors: usize,
}

/// What a check found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    bytes: u64,
    rows: u64,
    points: u64,
    bad_lines: u64,
}

/// Checks the file; `Ok(true)` when every line parsed.
pub fn run(args: &CheckArgs) -> Result<bool, String> {
    let path = &args.file;
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|ext| ext == "gz") {
        Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file)))
    } else {
        Box::new(file)
    };
    let options = ParseOptions {
        precision: args.precision,
        ..ParseOptions::default()
    };
    let started = Instant::now();
    let name = path.display().to_string();
    let tally = check(
        reader,
        &options,
        |error| {
            eprintln!("{name}:{error}");
        },
        args.max_errors,
    )
    .map_err(|e| format!("cannot read {name}: {e}"))?;
    let seconds = started.elapsed().as_secs_f64().max(1e-9);
    println!(
        "{name}: {} rows, {} points, {} bad lines; {:.1} MB in {:.2} s ({:.0} MB/s)",
        tally.rows,
        tally.points,
        tally.bad_lines,
        tally.bytes as f64 / 1e6,
        seconds,
        tally.bytes as f64 / 1e6 / seconds,
    );
    Ok(tally.bad_lines == 0)
}

/// Parses everything `reader` yields, calling `report` for the first `max_errors` bad lines
/// (with line numbers counted over the whole input).
fn check(
    mut reader: impl Read,
    options: &ParseOptions,
    mut report: impl FnMut(String),
    max_errors: usize,
) -> io::Result<Tally> {
    let mut tally = Tally::default();
    let mut buffer: Vec<u8> = Vec::with_capacity(CHUNK_BYTES);
    let mut lines_before = 0usize;
    let mut at_end = false;
    while !at_end {
        // Fill up to CHUNK_BYTES more; at the end of input the last partial line is parsed too.
        let start = buffer.len();
        buffer.resize(start + CHUNK_BYTES, 0);
        let mut filled = start;
        while filled < buffer.len() {
            let n = reader.read(&mut buffer[filled..])?;
            if n == 0 {
                at_end = true;
                break;
            }
            filled += n;
        }
        buffer.truncate(filled);
        let cut = if at_end {
            buffer.len()
        } else {
            match memchr_last_newline(&buffer) {
                Some(i) => i + 1,
                None => continue, // one line longer than a chunk: read more
            }
        };
        let chunk = &buffer[..cut];
        tally.bytes += chunk.len() as u64;
        // A line borrows from its chunk, so it lives for one chunk (one allocation a chunk).
        let mut line = Line::default();
        let mut lines = parse_lines(chunk, options);
        while let Some(result) = lines.next_into(&mut line) {
            match result {
                Ok(()) => {
                    tally.rows += 1;
                    tally.points += line.fields.len() as u64;
                }
                Err(mut error) => {
                    tally.bad_lines += 1;
                    if tally.bad_lines <= max_errors as u64 {
                        error.line += lines_before;
                        report(error.to_string());
                    }
                }
            }
        }
        lines_before += chunk.iter().filter(|b| **b == b'\n').count();
        buffer.drain(..cut);
    }
    if tally.bad_lines > max_errors as u64 {
        report(format!(
            "… and {} more bad lines",
            tally.bad_lines - max_errors as u64
        ));
    }
    Ok(tally)
}

fn memchr_last_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|b| *b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_check(input: &[u8], max_errors: usize) -> (Tally, Vec<String>) {
        let mut errors = Vec::new();
        let tally = check(
            input,
            &ParseOptions::default(),
            |e| errors.push(e),
            max_errors,
        )
        .unwrap();
        (tally, errors)
    }

    #[test]
    fn counts_rows_points_and_numbers_bad_lines_over_the_whole_input() {
        let input = b"a x=1\nb y=2i,z=3i 5\nbad line\n\nc w=t\n";
        let (tally, errors) = run_check(input, 10);
        assert_eq!(
            tally,
            Tally {
                bytes: input.len() as u64,
                rows: 3,
                points: 4,
                bad_lines: 1
            }
        );
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("line 3, column "), "{}", errors[0]);
    }

    #[test]
    fn line_numbers_continue_across_chunks() {
        // More than one chunk of good lines, then a bad one.
        let good = b"m f=1i 1\n";
        let mut input = good.repeat(CHUNK_BYTES / good.len() + 10);
        let good_lines = input.len() / good.len();
        input.extend_from_slice(b"m f= 1\n");
        let (tally, errors) = run_check(&input, 10);
        assert_eq!(tally.rows, good_lines as u64);
        assert_eq!(tally.bad_lines, 1);
        assert!(
            errors[0].starts_with(&format!("line {}, ", good_lines + 1)),
            "{}",
            errors[0]
        );
    }

    #[test]
    fn stops_printing_after_max_errors_but_counts_all() {
        let (tally, errors) = run_check(b"x\ny\nz\n", 2);
        assert_eq!(tally.bad_lines, 3);
        assert_eq!(errors.len(), 3);
        assert_eq!(errors[2], "… and 1 more bad lines");
    }
}
