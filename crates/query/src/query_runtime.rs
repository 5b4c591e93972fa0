//! The threads that run DataFusion's long plans, apart from the threads that serve
//! connections.
//!
//! DataFusion computes on the async threads that poll its streams: a sort of every row
//! fills them with a task per batch, a join or a window holds one while it builds. Run on
//! the server's own runtime, two such statements on a two-core machine held every thread
//! that accepts connections and reads request bodies: a 10-line write then waited up to
//! 0.3-0.5 s behind them (p99 1-3 ms without them). On their own runtime, the kernel
//! shares the cores between the two, so writes, `/health` and `/metrics` keep answering
//! while queries compute. Which plans come here is `plan_weight`'s call: the hop costs a
//! point lookup more than it could save it.
//!
//! A plan is executed here: operators start their tasks where `execute` is called and
//! where their streams are polled, so all of its work lands on these threads. Its batches
//! come back through a bounded channel, the first one with the schema; dropping the
//! stream (the client went away, the deadline passed) aborts the task, which drops
//! DataFusion's stream and cancels the work under it. A panic in the task becomes an
//! error of the statement, never a result cut short without one.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{FutureExt, Stream, StreamExt};
use tokio::runtime::{Handle, Runtime};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

/// Batches computed ahead of the reader: one being read, one ready. More would hold
/// memory the pool does not count; fewer would stop the plan while the reader encodes.
const BATCHES_AHEAD: usize = 2;

/// A runtime of its own for statements.
pub(crate) struct QueryRuntime {
    /// `None` only while dropping.
    runtime: Option<Runtime>,
    handle: Handle,
}

impl std::fmt::Debug for QueryRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryRuntime").finish_non_exhaustive()
    }
}

impl QueryRuntime {
    /// `threads` async threads named `strata-query`, each with a stack of `stack_bytes`
    /// (optimiser rules recurse over the plan as the planner does).
    pub(crate) fn new(threads: usize, stack_bytes: usize) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("strata-query")
            .thread_stack_size(stack_bytes)
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(Self {
            runtime: Some(runtime),
            handle,
        })
    }

    /// Runs `start` (which plans and starts a statement) on this runtime and returns its
    /// stream, read from any runtime, once its first batch is computed (or it ended or
    /// failed). Dropping the returned future before it resolves, or the stream before it
    /// ends, cancels the statement.
    pub(crate) async fn stream<F>(&self, start: F) -> DfResult<SendableRecordBatchStream>
    where
        F: Future<Output = DfResult<SendableRecordBatchStream>> + Send + 'static,
    {
        // The schema comes with the first batch, and the end is a message of its own: a
        // small statement then wakes its reader once, not three times.
        let (started, first) = oneshot::channel();
        let (sender, batches) = mpsc::channel(BATCHES_AHEAD);
        let task = self.handle.spawn(async move {
            let mut stream = match start.await {
                Ok(stream) => stream,
                Err(e) => {
                    let _ = started.send(Err(e));
                    return;
                }
            };
            let mut started = Some(started);
            loop {
                let message = Message::after(stream.next().await);
                let more = matches!(message, Message::Batch(Ok(_)));
                let delivered = match started.take() {
                    Some(started) => started.send(Ok((stream.schema(), message))).is_ok(),
                    None => sender.send(message).await.is_ok(),
                };
                // Not delivered: the reader is gone, and dropping `stream` cancels it.
                if !delivered || !more {
                    return;
                }
            }
        });
        let mut remote = RemoteBatches {
            first: None,
            batches,
            abort: task.abort_handle(),
            task: Some(task),
        };
        let schema = match first.await {
            Ok(started) => {
                let (schema, first) = started?;
                remote.first = Some(first);
                schema
            }
            // The task ended without a word: it unwound, and its stream says why.
            Err(_) => {
                return Err(match remote.next().await {
                    Some(Err(e)) => e,
                    _ => unfinished(Ok(())),
                });
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, remote)))
    }
}

/// What a statement's task sends its reader.
enum Message {
    Batch(DfResult<RecordBatch>),
    /// The statement's stream ended: every batch was sent.
    End,
}

impl Message {
    fn after(next: Option<DfResult<RecordBatch>>) -> Self {
        next.map_or(Self::End, Self::Batch)
    }
}

impl Drop for QueryRuntime {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which panics inside another runtime
        // (a query engine dropped by async code); statements still running are cancelled.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A statement's batches as they arrive from its task; aborts the task when dropped.
struct RemoteBatches {
    /// The message that came with the schema, read first.
    first: Option<Message>,
    batches: mpsc::Receiver<Message>,
    abort: AbortHandle,
    /// Awaited when the channel closes without [`Message::End`]: the task unwound or was
    /// cancelled. `None` once the end is known.
    task: Option<JoinHandle<()>>,
}

/// The error of a statement whose task ended (`outcome`) before its stream did.
fn unfinished(outcome: Result<(), tokio::task::JoinError>) -> DataFusionError {
    let Err(error) = outcome else {
        return DataFusionError::Execution("the statement ended without a result".into());
    };
    if !error.is_panic() {
        return DataFusionError::Execution("the statement was cancelled".into());
    }
    let payload = error.into_panic();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    DataFusionError::Execution(format!("internal error: the statement panicked: {text}"))
}

impl Stream for RemoteBatches {
    type Item = DfResult<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.task.is_none() {
            return Poll::Ready(None);
        }
        let message = match self.first.take() {
            Some(first) => Some(first),
            None => std::task::ready!(self.batches.poll_recv(cx)),
        };
        match message {
            Some(Message::Batch(Ok(batch))) => Poll::Ready(Some(Ok(batch))),
            // The task sends nothing after an error.
            Some(Message::Batch(Err(e))) => {
                self.task = None;
                Poll::Ready(Some(Err(e)))
            }
            Some(Message::End) => {
                self.task = None;
                Poll::Ready(None)
            }
            // The sender is gone without the end: the task unwound or was cancelled.
            None => {
                let Some(task) = self.task.as_mut() else {
                    return Poll::Ready(None);
                };
                let outcome = std::task::ready!(task.poll_unpin(cx));
                self.task = None;
                Poll::Ready(Some(Err(unfinished(outcome))))
            }
        }
    }
}

impl Drop for RemoteBatches {
    fn drop(&mut self) {
        self.abort.abort();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests: a panic is the failure report
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc as std_mpsc;
    use std::time::Duration;

    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]))
    }

    fn batch(n: i64) -> RecordBatch {
        RecordBatch::try_new(schema(), vec![Arc::new(Int64Array::from(vec![n]))]).unwrap()
    }

    fn runtime() -> QueryRuntime {
        QueryRuntime::new(1, 2 << 20).unwrap()
    }

    /// A statement whose batches come from `items`.
    async fn statement<S>(items: S) -> DfResult<SendableRecordBatchStream>
    where
        S: Stream<Item = DfResult<RecordBatch>> + Send + 'static,
    {
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema(), items)))
    }

    fn values(batches: &[RecordBatch]) -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let column = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
                column.values().to_vec()
            })
            .collect()
    }

    /// The statement blocks its thread until a task of the caller's single-threaded
    /// runtime lets it go: polled on the caller's thread, it would wait for itself.
    #[tokio::test(flavor = "current_thread")]
    async fn a_statement_that_blocks_its_thread_leaves_the_callers_thread_free() {
        let queries = runtime();
        let (release, released) = std_mpsc::channel::<()>();
        let items = futures::stream::once(async move {
            released
                .recv_timeout(Duration::from_secs(30))
                .map_err(|_| DataFusionError::Execution("never released".into()))?;
            let name = std::thread::current().name().unwrap_or("").to_string();
            Ok(batch(i64::from(name == "strata-query")))
        });
        let releaser = tokio::spawn(async move {
            tokio::task::yield_now().await;
            release.send(()).unwrap();
        });
        let mut stream = queries.stream(statement(items)).await.unwrap();
        let first = stream.next().await.unwrap().unwrap();
        assert_eq!(values(&[first]), [1], "not run on a query thread");
        assert!(stream.next().await.is_none());
        releaser.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_batch_and_the_end_come_through_in_order() {
        let queries = runtime();
        let items = futures::stream::iter((0..10).map(|n| Ok(batch(n))));
        let stream = queries.stream(statement(items)).await.unwrap();
        let batches: Vec<RecordBatch> = stream.map(|b| b.unwrap()).collect().await;
        assert_eq!(values(&batches), (0..10).collect::<Vec<_>>());

        let mut nothing = queries
            .stream(statement(futures::stream::empty()))
            .await
            .unwrap();
        assert_eq!(nothing.schema(), schema());
        assert!(nothing.next().await.is_none());
        assert!(nothing.next().await.is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_error_of_the_statement_ends_its_stream() {
        let queries = runtime();
        let items = futures::stream::iter([
            Ok(batch(1)),
            Err(DataFusionError::Execution("bad row".into())),
            Ok(batch(2)),
        ]);
        let mut stream = queries.stream(statement(items)).await.unwrap();
        assert_eq!(values(&[stream.next().await.unwrap().unwrap()]), [1]);
        let err = stream.next().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("bad row"), "{err}");
        assert!(stream.next().await.is_none());

        let first_fails = futures::stream::iter([Err(DataFusionError::Execution("row 1".into()))]);
        let mut stream = queries.stream(statement(first_fails)).await.unwrap();
        let err = stream.next().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("row 1"), "{err}");
        assert!(stream.next().await.is_none());

        let failed = queries.stream(async {
            Err::<SendableRecordBatchStream, _>(DataFusionError::Plan("no such table".into()))
        });
        let err = failed.await.err().unwrap();
        assert!(err.to_string().contains("no such table"), "{err}");
    }

    /// A panic mid-stream must not look like the end of the result.
    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_is_an_error_never_a_result_cut_short() {
        let queries = runtime();
        let items = futures::stream::iter([1, 2]).map(|n| {
            assert!(n < 2, "row two is poison");
            Ok(batch(n))
        });
        let mut stream = queries.stream(statement(items)).await.unwrap();
        assert_eq!(values(&[stream.next().await.unwrap().unwrap()]), [1]);
        let err = stream.next().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        assert!(err.to_string().contains("row two is poison"), "{err}");
        assert!(stream.next().await.is_none());

        let start = async {
            let gave_up = true;
            assert!(!gave_up, "the planner gave up");
            statement(futures::stream::empty()).await
        };
        let err = queries.stream(start).await.err().unwrap();
        assert!(err.to_string().contains("the planner gave up"), "{err}");
    }

    /// Says when it is dropped.
    struct DropSignal(std_mpsc::Sender<()>);

    impl Drop for DropSignal {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }

    /// A stream that yields one batch and then never ends, and says when it is dropped.
    fn endless(dropped: std_mpsc::Sender<()>) -> impl Stream<Item = DfResult<RecordBatch>> {
        let signal = DropSignal(dropped);
        futures::stream::once(async { Ok(batch(1)) }).chain(futures::stream::pending().map(
            move |()| {
                let _held = &signal;
                Ok(batch(2))
            },
        ))
    }

    #[tokio::test(flavor = "current_thread")]
    async fn dropping_the_stream_cancels_the_statement() {
        let queries = runtime();
        let (dropped, was_dropped) = std_mpsc::channel();
        let mut stream = queries.stream(statement(endless(dropped))).await.unwrap();
        assert_eq!(values(&[stream.next().await.unwrap().unwrap()]), [1]);
        assert!(was_dropped.try_recv().is_err(), "cancelled while read");
        drop(stream);
        was_dropped
            .recv_timeout(Duration::from_secs(30))
            .expect("the statement's stream was not dropped");
    }

    /// Dropping the runtime inside another one (an engine dropped by async code) must not
    /// panic, and cancels what still runs.
    #[tokio::test(flavor = "current_thread")]
    async fn dropping_the_runtime_in_async_code_cancels_its_statements() {
        let queries = runtime();
        let (dropped, was_dropped) = std_mpsc::channel();
        let mut stream = queries.stream(statement(endless(dropped))).await.unwrap();
        assert_eq!(values(&[stream.next().await.unwrap().unwrap()]), [1]);
        drop(queries);
        was_dropped
            .recv_timeout(Duration::from_secs(30))
            .expect("the statement's stream was not dropped");
        let end = stream.next().await;
        assert!(
            matches!(&end, Some(Err(e)) if e.to_string().contains("cancelled")),
            "{end:?}"
        );
    }
}
