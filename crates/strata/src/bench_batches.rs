//! The batches `strata bench write` sends: streamed by generator threads through bounded
//! queues (the default: memory stays flat whatever the data set's size), or, with
//! `--pregenerate`, all generated into memory before the clock (no generator runs during
//! the load, but memory grows with the data set: about 350 bytes a cpu-only row).
//!
//! Either way each batch is encoded (gzip, remote write, OpenTSDB) by the generator, not
//! the sender, so senders only send.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use strata_bench::feed::{Feed, Prepared, Producer, Stream, StreamStats};
use strata_bench::http::{BodyEncoding, gzip};
use strata_bench::load::{Batch, Work};
use strata_bench::report::WriteReport;
use strata_lineproto::{ParseOptions, Precision, parse_lines};

use crate::generate::Generator;

/// A batch body is allocated for about this many bytes a row (cpu-only lines are ~250).
const BYTES_PER_ROW_HINT: usize = 300;

/// The load's batches and what is known of them before the clock.
pub(crate) struct Batches {
    feed: Arc<dyn Feed + Send>,
    kind: Kind,
    /// Rows the load will send, for the progress bar; 0 when unknown (a file streamed).
    pub(crate) expected_rows: u64,
    /// Per generator, the rows it has sent late (out of order) so far.
    late: Arc<Vec<AtomicU64>>,
}

enum Kind {
    Prepared(Arc<Work>),
    Streamed(Arc<Stream>),
}

impl Batches {
    /// The feed the workers take from.
    pub(crate) fn feed(&self) -> &Arc<dyn Feed + Send> {
        &self.feed
    }

    /// What the progress message says before the load.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            Kind::Prepared(work) => format!(
                "{} batches ({:.1} MB) generated before the clock",
                work.batch_count(),
                work.bytes() as f64 / 1e6
            ),
            Kind::Streamed(_) => format!(
                "batches streamed by {} generator thread(s)",
                self.feed.queue_count()
            ),
        }
    }

    /// After the load: rows generated, bytes sent and, for a stream, the generators'
    /// figures into `report`; a generator's error fails the run (the load was cut short).
    pub(crate) fn finish(&self, report: &mut WriteReport) -> Result<(), String> {
        report.rows_out_of_order = self.late.iter().map(|l| l.load(Ordering::Relaxed)).sum();
        match &self.kind {
            Kind::Prepared(work) => {
                report.rows_generated = work.rows();
                report.bytes_sent = work.bytes();
                Ok(())
            }
            Kind::Streamed(stream) => {
                let stats = stream.finish();
                report.rows_generated = stats.rows;
                report.bytes_sent = stats.bytes;
                report.notes.push(generation_note(&stats));
                match stats.error {
                    Some(error) => Err(format!("generating the batches failed: {error}")),
                    None => Ok(()),
                }
            }
        }
    }
}

/// One line on how the generators kept up: their idle share (waiting on full queues:
/// the senders were behind them) and the senders' wait for batches (the opposite).
pub(crate) fn generation_note(stats: &StreamStats) -> String {
    format!(
        "generation: {} thread(s), queues of {} batches (at most {:.1} MB a queue); \
         generators idle {:.0}% of their time (busy {:.2} s, waiting on full queues {:.2} s); \
         senders waited {:.3} s in all for batches",
        stats.generators,
        stats.depth,
        (stats.depth as u64 * stats.largest_batch_bytes) as f64 / 1e6,
        stats.idle_share() * 100.0,
        stats.busy.as_secs_f64(),
        stats.idle.as_secs_f64(),
        stats.workers_waited.as_secs_f64()
    )
}

/// How far ahead of its senders a queue may run: two batches per sender taking from it,
/// at least four.
fn depth(senders_per_queue: usize) -> usize {
    (2 * senders_per_queue).max(4)
}

/// The batches of `generators` (one queue each), `batch_rows` rows a batch.
pub(crate) fn from_generators(
    generators: Vec<Generator>,
    batch_rows: usize,
    encoding: BodyEncoding,
    workers: usize,
    pregenerate: bool,
) -> Result<Batches, String> {
    let expected_rows = generators.iter().map(Generator::rows_total).sum();
    let late: Arc<Vec<AtomicU64>> =
        Arc::new(generators.iter().map(|_| AtomicU64::new(0)).collect());
    if pregenerate {
        let work = Work {
            queues: pregenerate_queues(generators, batch_rows, encoding, &late)?,
        };
        return Ok(prepared(work, expected_rows, late));
    }
    let senders_per_queue = workers.div_ceil(generators.len().max(1));
    let producers: Vec<Producer> = generators
        .into_iter()
        .enumerate()
        .map(|(i, mut generator)| -> Producer {
            let late = Arc::clone(&late);
            Box::new(move || next_batch(&mut generator, batch_rows, encoding, &late[i]))
        })
        .collect();
    Ok(streamed(
        producers,
        depth(senders_per_queue),
        expected_rows,
        late,
    ))
}

/// Every generator's batches, generated side by side: a thread per generator, as many at a
/// time as this process may use cores (meters has one generator per writer, and one thread
/// generating a 12-core load's batches took minutes). Queue i is generator i's, in order.
fn pregenerate_queues(
    generators: Vec<Generator>,
    batch_rows: usize,
    encoding: BodyEncoding,
    late: &[AtomicU64],
) -> Result<Vec<Vec<Batch>>, String> {
    let threads = strata_storage::options::available_cores().max(1);
    let mut queues: Vec<Vec<Batch>> = Vec::with_capacity(generators.len());
    let mut pending = generators.into_iter().enumerate().peekable();
    while pending.peek().is_some() {
        let round: Vec<(usize, Generator)> = pending.by_ref().take(threads).collect();
        let generated = side_by_side(round, |(i, mut generator)| {
            let mut queue = Vec::new();
            while let Some(batch) = next_batch(&mut generator, batch_rows, encoding, &late[i])? {
                queue.push(batch);
            }
            Ok(queue)
        });
        for queue in generated {
            queues.push(queue?);
        }
    }
    Ok(queues)
}

fn prepared(work: Work, expected_rows: u64, late: Arc<Vec<AtomicU64>>) -> Batches {
    let work = Arc::new(work);
    Batches {
        feed: Arc::new(Prepared::new(Arc::clone(&work))),
        kind: Kind::Prepared(work),
        expected_rows,
        late,
    }
}

fn streamed(
    producers: Vec<Producer>,
    depth: usize,
    expected_rows: u64,
    late: Arc<Vec<AtomicU64>>,
) -> Batches {
    let stream = Arc::new(Stream::start(producers, depth));
    Batches {
        feed: Arc::clone(&stream) as Arc<dyn Feed + Send>,
        kind: Kind::Streamed(stream),
        expected_rows,
        late,
    }
}

/// The next batch of `generator`, encoded; `None` at its end. `late` follows the rows it
/// has sent out of order.
fn next_batch(
    generator: &mut Generator,
    batch_rows: usize,
    encoding: BodyEncoding,
    late: &AtomicU64,
) -> Result<Option<Batch>, String> {
    let mut body = Vec::with_capacity(batch_rows * BYTES_PER_ROW_HINT);
    let points_before = generator.points_written();
    let rows = generator.write_lines(batch_rows, &mut body) as u64;
    late.store(generator.rows_out_of_order(), Ordering::Relaxed);
    if rows == 0 {
        return Ok(None);
    }
    let points = generator.points_written() - points_before;
    encode(body, rows, points, encoding, generator.precision()).map(Some)
}

/// The batches of a line-protocol file (gzip when it ends in .gz), `batch_rows` lines
/// each, read as the load goes (or all before the clock with `pregenerate`). Rows and
/// points are counted by parsing each batch in the generator; bad lines count neither.
pub(crate) fn from_file(
    path: &Path,
    batch_rows: usize,
    encoding: BodyEncoding,
    precision: Precision,
    workers: usize,
    pregenerate: bool,
) -> Result<Batches, String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut reader: Box<dyn BufRead + Send> = if path.extension().is_some_and(|x| x == "gz") {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(
            BufReader::new(file),
        )))
    } else {
        Box::new(BufReader::new(file))
    };
    let name = path.display().to_string();
    let options = ParseOptions {
        precision,
        ..ParseOptions::default()
    };
    if pregenerate {
        let mut chunks = Vec::new();
        while let Some(chunk) = read_chunk(&mut reader, &name, batch_rows)? {
            chunks.push(chunk);
        }
        let queue = encode_chunks(chunks, &options, encoding)?;
        let rows = queue.iter().map(|b| b.rows).sum();
        return Ok(prepared(
            Work {
                queues: vec![queue],
            },
            rows,
            Arc::new(Vec::new()),
        ));
    }
    let produce = move || loop {
        let Some(chunk) = read_chunk(&mut reader, &name, batch_rows)? else {
            return Ok(None);
        };
        if let Some(batch) = count_and_encode(chunk, &options, encoding)? {
            return Ok(Some(batch));
        }
        // Only comments, blank or bad lines: nothing to send; read on.
    };
    Ok(streamed(
        vec![Box::new(produce)],
        depth(workers),
        0,
        Arc::new(Vec::new()),
    ))
}

/// The next `batch_rows` lines of `reader` (fewer at its end); `None` once it is read.
fn read_chunk(
    reader: &mut Box<dyn BufRead + Send>,
    name: &str,
    batch_rows: usize,
) -> Result<Option<Vec<u8>>, String> {
    let mut chunk = Vec::with_capacity(batch_rows * BYTES_PER_ROW_HINT);
    let mut lines = 0;
    while lines < batch_rows {
        let read = reader
            .read_until(b'\n', &mut chunk)
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        if read == 0 {
            break;
        }
        lines += 1;
    }
    Ok((!chunk.is_empty()).then_some(chunk))
}

/// `chunk` counted (rows and points, by parsing it) and encoded; `None` when it holds no
/// good line.
fn count_and_encode(
    chunk: Vec<u8>,
    options: &ParseOptions,
    encoding: BodyEncoding,
) -> Result<Option<Batch>, String> {
    let (mut rows, mut points) = (0u64, 0u64);
    for line in parse_lines(&chunk, options).flatten() {
        rows += 1;
        points += line.fields.len() as u64;
    }
    if rows == 0 {
        return Ok(None);
    }
    encode(chunk, rows, points, encoding, options.precision).map(Some)
}

/// A file's chunks counted and encoded side by side, in their order: one thread counting
/// a 12-core load's file (tens of millions of lines) took most of a minute before the clock.
fn encode_chunks(
    chunks: Vec<Vec<u8>>,
    options: &ParseOptions,
    encoding: BodyEncoding,
) -> Result<Vec<Batch>, String> {
    let threads = strata_storage::options::available_cores().max(1);
    let per_thread = chunks.len().div_ceil(threads).max(1);
    let mut parts: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut chunks = chunks.into_iter().peekable();
    while chunks.peek().is_some() {
        parts.push(chunks.by_ref().take(per_thread).collect());
    }
    let encoded = side_by_side(parts, |part| {
        let mut batches = Vec::with_capacity(part.len());
        for chunk in part {
            batches.extend(count_and_encode(chunk, options, encoding)?);
        }
        Ok(batches)
    });
    let mut queue = Vec::new();
    for part in encoded {
        queue.extend(part?);
    }
    Ok(queue)
}

/// `work` run on each of `inputs`, a thread each, all at once; the results in the inputs'
/// order (a thread that panicked gives an error).
fn side_by_side<I: Send, T: Send>(
    inputs: Vec<I>,
    work: impl Fn(I) -> Result<T, String> + Sync,
) -> Vec<Result<T, String>> {
    std::thread::scope(|scope| {
        let work = &work;
        let handles: Vec<_> = inputs
            .into_iter()
            .map(|input| scope.spawn(move || work(input)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a batch generator panicked".into()))
            })
            .collect()
    })
}

/// A batch of line protocol as the request body `encoding` says.
fn encode(
    lines: Vec<u8>,
    rows: u64,
    points: u64,
    encoding: BodyEncoding,
    precision: Precision,
) -> Result<Batch, String> {
    Ok(match encoding {
        BodyEncoding::Text => Batch {
            body: lines,
            rows,
            points,
        },
        BodyEncoding::GzipText => Batch {
            body: gzip(&lines).map_err(|e| format!("cannot gzip a batch: {e}"))?,
            rows,
            points,
        },
        BodyEncoding::RemoteWrite => {
            let converted = crate::bench_remote_write::convert(&lines, precision)?;
            Batch {
                body: converted.body,
                rows: converted.rows,
                points: converted.samples,
            }
        }
        BodyEncoding::OpenTsdbTelnet => {
            let converted = crate::bench_opentsdb::convert(&lines, precision)?;
            Batch {
                body: converted.body,
                rows: converted.rows,
                points: converted.points,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::generate::WorkloadArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        workload: WorkloadArgs,
    }

    fn generators(flags: &[&str], workers: usize) -> Vec<Generator> {
        let cli = Cli::try_parse_from(std::iter::once("gen").chain(flags.iter().copied()))
            .expect("flags");
        Generator::for_workers(&cli.workload, workers).expect("generators")
    }

    /// Generated side by side, queue i is still generator i's batches in its order: the
    /// same bytes as one thread generating them one generator after another.
    #[test]
    fn pregenerated_queues_are_each_generators_batches_in_order() {
        let flags = [
            "--workload",
            "meters",
            "--meters",
            "7",
            "--rows-per-meter",
            "1000",
            "--out-of-order-ratio",
            "0.1",
        ];
        let late: Vec<AtomicU64> = (0..5).map(|_| AtomicU64::new(0)).collect();
        let mut expected = Vec::new();
        for (i, mut generator) in generators(&flags, 5).into_iter().enumerate() {
            let mut queue = Vec::new();
            while let Some(batch) =
                next_batch(&mut generator, 300, BodyEncoding::Text, &late[i]).unwrap()
            {
                queue.push(batch.body);
            }
            expected.push(queue);
        }
        assert_eq!(expected.len(), 5);
        let late_after: Vec<u64> = late.iter().map(|l| l.load(Ordering::Relaxed)).collect();
        assert!(late_after.iter().any(|&n| n > 0), "{late_after:?}");
        let late: Vec<AtomicU64> = (0..5).map(|_| AtomicU64::new(0)).collect();
        let queues =
            pregenerate_queues(generators(&flags, 5), 300, BodyEncoding::Text, &late).unwrap();
        let got: Vec<Vec<Vec<u8>>> = queues
            .into_iter()
            .map(|q| q.into_iter().map(|b| b.body).collect())
            .collect();
        assert_eq!(got, expected);
        let late: Vec<u64> = late.iter().map(|l| l.load(Ordering::Relaxed)).collect();
        assert_eq!(late, late_after);
    }

    /// Counted side by side, a file's chunks come out as one thread counting them in turn
    /// would give them: same order, rows and points, chunks without a good line dropped.
    #[test]
    fn file_chunks_counted_side_by_side_keep_their_order() {
        let mut chunks: Vec<Vec<u8>> = (0..9)
            .map(|c| {
                (0..=c)
                    .map(|r| format!("m,host=h{c} a={r},b=2i {}\n", 1000 + r))
                    .collect::<String>()
                    .into_bytes()
            })
            .collect();
        chunks.insert(4, b"# a comment\nnot line protocol\n".to_vec());
        let options = ParseOptions {
            precision: Precision::Nanoseconds,
            ..ParseOptions::default()
        };
        let expected: Vec<(Vec<u8>, u64, u64)> = chunks
            .iter()
            .filter_map(|c| count_and_encode(c.clone(), &options, BodyEncoding::Text).unwrap())
            .map(|b| (b.body, b.rows, b.points))
            .collect();
        assert_eq!(expected.len(), 9);
        assert_eq!(expected[8].1, 9);
        assert_eq!(expected[8].2, 18);
        let got: Vec<(Vec<u8>, u64, u64)> = encode_chunks(chunks, &options, BodyEncoding::Text)
            .unwrap()
            .into_iter()
            .map(|b| (b.body, b.rows, b.points))
            .collect();
        assert_eq!(got, expected);
    }
}
