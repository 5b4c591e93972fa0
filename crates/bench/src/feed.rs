//! Where a load's workers take their batches from: batches prepared in memory before the
//! clock ([`Prepared`], for small loads and tests), or batches streamed by generator
//! threads through bounded queues ([`Stream`]), so that memory stays bounded whatever the
//! size of the data set (seed 001's 4,000 hosts x 3 days is about 36 GB of line protocol).
//!
//! A stream's generators start before the clock and fill their queues first, then keep
//! ahead of the senders. Whether they did is measured, not assumed: a generator's idle
//! time is the time it waited on a full queue (the senders were behind it), and the
//! workers' wait is the time senders waited on an empty one (the generator was behind).

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::load::{Batch, Work};

/// Batches for the workers: worker `i` takes from queue `i % queue_count()`.
pub trait Feed: Sync {
    /// How many queues there are (at least one).
    fn queue_count(&self) -> usize;

    /// The next batch of `queue`, waiting while its generator is behind; `None` once the
    /// queue is done.
    fn next(&self, queue: usize) -> Option<Cow<'_, Batch>>;
}

/// Work generated before the clock, taken through a shared cursor per queue (a slow
/// worker does not hold back the others).
pub struct Prepared {
    work: Arc<Work>,
    cursors: Vec<AtomicUsize>,
}

impl Prepared {
    /// A feed over `work`.
    pub fn new(work: Arc<Work>) -> Self {
        let cursors = work.queues.iter().map(|_| AtomicUsize::new(0)).collect();
        Self { work, cursors }
    }
}

impl Feed for Prepared {
    fn queue_count(&self) -> usize {
        self.work.queues.len().max(1)
    }

    fn next(&self, queue: usize) -> Option<Cow<'_, Batch>> {
        let index = self.cursors.get(queue)?.fetch_add(1, Ordering::Relaxed);
        self.work.queues.get(queue)?.get(index).map(Cow::Borrowed)
    }
}

/// Makes the batches of one queue, in order: `Ok(None)` at the end; an error ends the
/// queue and is reported with the stream's figures.
pub type Producer = Box<dyn FnMut() -> Result<Option<Batch>, String> + Send>;

/// What a stream's generators did, for the report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamStats {
    /// Batches, rows, points and body bytes produced.
    pub batches: u64,
    /// Rows in those batches.
    pub rows: u64,
    /// Points in those batches.
    pub points: u64,
    /// Body bytes of those batches.
    pub bytes: u64,
    /// Generator threads.
    pub generators: usize,
    /// Batches each queue holds at most.
    pub depth: usize,
    /// The largest batch body, bytes: the queues held at most `depth` of them each.
    pub largest_batch_bytes: u64,
    /// Time the generators spent making batches, summed over them.
    pub busy: Duration,
    /// Time the generators waited on a full queue (the senders behind), summed.
    pub idle: Duration,
    /// Time the workers waited on an empty queue (a generator behind), summed.
    pub workers_waited: Duration,
    /// The first producer error, if any.
    pub error: Option<String>,
}

impl StreamStats {
    /// The generators' idle share of their time: near 1 when they were never the
    /// bottleneck, near 0 when the senders always waited for them.
    pub fn idle_share(&self) -> f64 {
        let total = (self.busy + self.idle).as_secs_f64();
        if total > 0.0 {
            self.idle.as_secs_f64() / total
        } else {
            0.0
        }
    }
}

/// Per generator thread: what it did.
#[derive(Default)]
struct Made {
    batches: u64,
    rows: u64,
    points: u64,
    bytes: u64,
    largest: u64,
    busy: Duration,
    idle: Duration,
    error: Option<String>,
}

struct Queue {
    receiver: Mutex<Receiver<Batch>>,
    /// Batches sent and not yet taken (for the prefill).
    queued: AtomicUsize,
    /// The producer is done (or failed).
    done: AtomicBool,
}

/// Batches made by one generator thread per queue, each at most `depth` batches ahead.
pub struct Stream {
    queues: Vec<Arc<Queue>>,
    generators: Mutex<Vec<JoinHandle<Made>>>,
    depth: usize,
    waited_ns: AtomicU64,
}

impl Stream {
    /// Starts one generator thread per producer and returns once every queue holds
    /// `depth` batches (or its producer has finished), so that the clock starts with work
    /// ready, as with prepared batches.
    pub fn start(producers: Vec<Producer>, depth: usize) -> Self {
        let depth = depth.max(1);
        let mut queues = Vec::with_capacity(producers.len());
        let mut generators = Vec::with_capacity(producers.len());
        for producer in producers {
            let (sender, receiver) = sync_channel(depth);
            let queue = Arc::new(Queue {
                receiver: Mutex::new(receiver),
                queued: AtomicUsize::new(0),
                done: AtomicBool::new(false),
            });
            let for_thread = Arc::clone(&queue);
            generators.push(std::thread::spawn(move || {
                generate(producer, &sender, &for_thread)
            }));
            queues.push(queue);
        }
        let stream = Self {
            queues,
            generators: Mutex::new(generators),
            depth,
            waited_ns: AtomicU64::new(0),
        };
        // Bounded: each queue fills to `depth` or its producer ends.
        while stream
            .queues
            .iter()
            .any(|q| !q.done.load(Ordering::Acquire) && q.queued.load(Ordering::Acquire) < depth)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        stream
    }

    /// Waits for the generators and returns their figures. Call after the load: batches
    /// no worker took (every worker failed) are made and dropped here, so that no
    /// generator waits on a full queue forever.
    pub fn finish(&self) -> StreamStats {
        for queue in &self.queues {
            let receiver = queue
                .receiver
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            // Ends when the generator is done and its sender dropped.
            while receiver.recv().is_ok() {}
        }
        let handles: Vec<JoinHandle<Made>> = std::mem::take(
            &mut *self
                .generators
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut stats = StreamStats {
            generators: handles.len(),
            depth: self.depth,
            workers_waited: Duration::from_nanos(self.waited_ns.load(Ordering::Relaxed)),
            ..StreamStats::default()
        };
        for handle in handles {
            let made = handle.join().unwrap_or_else(|_| Made {
                error: Some("a generator thread panicked".into()),
                ..Made::default()
            });
            stats.batches += made.batches;
            stats.rows += made.rows;
            stats.points += made.points;
            stats.bytes += made.bytes;
            stats.largest_batch_bytes = stats.largest_batch_bytes.max(made.largest);
            stats.busy += made.busy;
            stats.idle += made.idle;
            if stats.error.is_none() {
                stats.error = made.error;
            }
        }
        stats
    }
}

/// A generator thread's loop: make a batch, then hand it over (waiting while the queue is
/// full). Ends when the producer does, fails, or every receiver is gone.
fn generate(mut producer: Producer, sender: &SyncSender<Batch>, queue: &Queue) -> Made {
    let mut made = Made::default();
    loop {
        let started = Instant::now();
        let batch = producer();
        made.busy += started.elapsed();
        let batch = match batch {
            Ok(Some(batch)) => batch,
            Ok(None) => break,
            Err(message) => {
                made.error = Some(message);
                break;
            }
        };
        made.batches += 1;
        made.rows += batch.rows;
        made.points += batch.points;
        made.bytes += batch.body.len() as u64;
        made.largest = made.largest.max(batch.body.len() as u64);
        let waiting = Instant::now();
        // Counted before the send, so a taker never sees it go below zero.
        queue.queued.fetch_add(1, Ordering::AcqRel);
        if sender.send(batch).is_err() {
            break;
        }
        made.idle += waiting.elapsed();
    }
    queue.done.store(true, Ordering::Release);
    made
}

impl Feed for Stream {
    fn queue_count(&self) -> usize {
        self.queues.len().max(1)
    }

    fn next(&self, queue: usize) -> Option<Cow<'_, Batch>> {
        let queue = self.queues.get(queue)?;
        let waiting = Instant::now();
        let batch = queue
            .receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv()
            .ok();
        let waited = waiting.elapsed().as_nanos();
        self.waited_ns
            .fetch_add(u64::try_from(waited).unwrap_or(u64::MAX), Ordering::Relaxed);
        if batch.is_some() {
            queue.queued.fetch_sub(1, Ordering::AcqRel);
        }
        batch.map(Cow::Owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting(batches: u64, rows: u64) -> Producer {
        let mut made = 0;
        Box::new(move || {
            if made == batches {
                return Ok(None);
            }
            made += 1;
            Ok(Some(Batch {
                body: vec![b'x'; 100],
                rows,
                points: rows * 2,
            }))
        })
    }

    #[test]
    fn a_stream_delivers_every_batch_once_and_counts_them() {
        let stream = Stream::start(vec![counting(50, 3), counting(7, 1)], 4);
        let mut taken = [0u64; 2];
        for (queue, count) in taken.iter_mut().enumerate() {
            while let Some(batch) = stream.next(queue) {
                *count += batch.rows;
            }
        }
        assert_eq!(taken, [150, 7]);
        let stats = stream.finish();
        assert_eq!((stats.batches, stats.rows, stats.points), (57, 157, 314));
        assert_eq!((stats.bytes, stats.largest_batch_bytes), (5_700, 100));
        assert_eq!((stats.generators, stats.depth), (2, 4));
        assert_eq!(stats.error, None);
        assert!(stream.next(0).is_none(), "a done queue stays done");
    }

    #[test]
    fn the_queue_fills_before_start_returns_and_a_slow_taker_makes_the_generator_idle() {
        let stream = Stream::start(vec![counting(20, 1)], 5);
        // Five in the queue, and maybe a sixth made and waiting to go in.
        let queued = stream.queues[0].queued.load(Ordering::Acquire);
        assert!((5..=6).contains(&queued), "{queued}");
        let mut rows = 0;
        while let Some(batch) = stream.next(0) {
            std::thread::sleep(Duration::from_millis(2));
            rows += batch.rows;
        }
        assert_eq!(rows, 20);
        let stats = stream.finish();
        // The generator makes a batch in microseconds and then waits for the taker.
        assert!(stats.idle > stats.busy, "{stats:?}");
        assert!(stats.idle_share() > 0.5, "{stats:?}");
    }

    #[test]
    fn a_slow_generator_makes_the_workers_wait_and_an_error_ends_its_queue() {
        let mut made = 0;
        let slow: Producer = Box::new(move || {
            made += 1;
            if made > 5 {
                return Err("disk full".into());
            }
            std::thread::sleep(Duration::from_millis(3));
            Ok(Some(Batch {
                body: Vec::new(),
                rows: 1,
                points: 1,
            }))
        });
        let stream = Stream::start(vec![slow], 1);
        let mut rows = 0;
        while let Some(batch) = stream.next(0) {
            rows += batch.rows;
        }
        assert_eq!(rows, 5);
        let stats = stream.finish();
        assert_eq!(stats.error.as_deref(), Some("disk full"));
        assert!(
            stats.workers_waited >= Duration::from_millis(6),
            "{stats:?}"
        );
    }

    #[test]
    fn finishing_a_stream_nobody_drained_does_not_hang() {
        let stream = Arc::new(Stream::start(vec![counting(100, 1)], 2));
        assert!(stream.next(0).is_some());
        let (done, finished) = std::sync::mpsc::channel();
        let finishing = Arc::clone(&stream);
        std::thread::spawn(move || {
            let _ = done.send(finishing.finish());
        });
        let stats = finished
            .recv_timeout(Duration::from_secs(30))
            .expect("finish() hung on a queue nobody drained");
        assert_eq!(stats.batches, 100, "every batch made, the untaken dropped");
        assert!(stream.next(0).is_none());
    }

    #[test]
    fn prepared_work_is_taken_once_across_takers() {
        let batch = |rows| Batch {
            body: Vec::new(),
            rows,
            points: 0,
        };
        let work = Arc::new(Work {
            queues: vec![vec![batch(1), batch(2), batch(3)]],
        });
        let feed = Prepared::new(work);
        let rows: Vec<u64> = std::iter::from_fn(|| feed.next(0).map(|b| b.rows)).collect();
        assert_eq!(rows, [1, 2, 3]);
        assert!(feed.next(1).is_none());
        assert_eq!(feed.queue_count(), 1);
    }
}
