//! Guard rails shared by every statement: how many run at once ([`Admission`]) and how long
//! one may take ([`QueryStream`]'s deadline). The memory limit is DataFusion's memory pool,
//! set up in [`crate::engine`].

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::{Stream, StreamExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

use crate::error::QueryError;

/// Slots for running statements: at most `limit` run; up to `queued` wait for one (each
/// within its own deadline); beyond that a statement fails at once with
/// [`QueryError::Busy`], so an overloaded server answers quickly instead of piling up work.
#[derive(Debug)]
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    limit: usize,
    queued: usize,
}

impl Admission {
    pub(crate) fn new(limit: usize, queued: usize) -> Self {
        let limit = limit.max(1);
        Self {
            slots: Arc::new(Semaphore::new(limit)),
            waiting: AtomicUsize::new(0),
            limit,
            queued,
        }
    }

    fn busy(&self) -> QueryError {
        QueryError::Busy {
            limit: self.limit,
            queued: self.queued,
        }
    }

    /// A slot, waited for until `deadline`.
    pub(crate) async fn admit(
        &self,
        deadline: Option<(Instant, Duration)>,
    ) -> Result<OwnedSemaphorePermit, QueryError> {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return Ok(permit);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.queued {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(self.busy());
        }
        let acquire = Arc::clone(&self.slots).acquire_owned();
        let permit = match deadline {
            Some((at, limit)) => tokio::time::timeout_at(at, acquire)
                .await
                .map_err(|_| QueryError::Timeout { limit }),
            None => Ok(acquire.await),
        };
        self.waiting.fetch_sub(1, Ordering::AcqRel);
        // The semaphore is never closed, so acquiring only fails by timing out.
        permit?.map_err(|_| self.busy())
    }
}

/// One statement's result, batch by batch. It holds the statement's concurrency slot until
/// it is dropped or finished, and fails with [`QueryError::Timeout`] (then ends) once the
/// statement's deadline passes, however slowly the caller reads.
pub struct QueryStream {
    schema: SchemaRef,
    inner: Pin<Box<dyn Stream<Item = Result<RecordBatch, QueryError>> + Send>>,
    /// The timer that wakes a stalled stream, the deadline itself, and the limit.
    deadline: Option<(Pin<Box<Sleep>>, Instant, Duration)>,
    _slot: Option<OwnedSemaphorePermit>,
    done: bool,
}

impl std::fmt::Debug for QueryStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryStream")
            .field("schema", &self.schema)
            .field("done", &self.done)
            .finish()
    }
}

impl QueryStream {
    /// A stream over batches already computed (statements answered without DataFusion).
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self {
            schema,
            inner: Box::pin(futures::stream::iter(batches.into_iter().map(Ok))),
            deadline: None,
            _slot: None,
            done: false,
        }
    }

    /// DataFusion's stream, under `slot` until `deadline`.
    pub(crate) fn running(
        stream: SendableRecordBatchStream,
        slot: OwnedSemaphorePermit,
        deadline: Option<(Instant, Duration)>,
    ) -> Self {
        Self {
            schema: stream.schema(),
            inner: Box::pin(stream.map(|r| r.map_err(QueryError::from))),
            deadline: deadline
                .map(|(at, limit)| (Box::pin(tokio::time::sleep_until(at)), at, limit)),
            _slot: Some(slot),
            done: false,
        }
    }

    /// The columns of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Every remaining batch.
    pub async fn collect(mut self) -> Result<Vec<RecordBatch>, QueryError> {
        let mut out = Vec::new();
        while let Some(batch) = self.next().await {
            out.push(batch?);
        }
        Ok(out)
    }
}

impl Stream for QueryStream {
    type Item = Result<RecordBatch, QueryError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        // The clock is read as well as the timer: the timer has millisecond ticks, so a
        // statement answered within a tick of a passed deadline would otherwise escape it.
        if let Some((sleep, at, limit)) = self.deadline.as_mut()
            && (Instant::now() >= *at || sleep.as_mut().poll(cx).is_ready())
        {
            let limit = *limit;
            self.finish();
            return Poll::Ready(Some(Err(QueryError::Timeout { limit })));
        }
        let next = self.inner.as_mut().poll_next(cx);
        match &next {
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => self.finish(),
            _ => {}
        }
        next
    }
}

impl QueryStream {
    /// Ends the stream: drops DataFusion's stream (cancelling its work) and frees the slot.
    fn finish(&mut self) {
        self.done = true;
        self.inner = Box::pin(futures::stream::empty());
        self.deadline = None;
        self._slot = None;
    }
}
