//! Write slots: how many writes do their CPU work at once.
//!
//! A server hands each write request to a thread of its own (16 HTTP writers are 16
//! threads), but only as many as there are cores can run. Without a limit the rest took
//! turns with them on the cores: a writer paused by the scheduler while it held a shard's
//! lock made every writer that needed that shard wait behind it, and a shard's flush thread
//! got a seventeenth of a core while sixteen writers filled its memtables. A write now
//! waits for a slot before it parses and holds it until its rows are in the WAL's pending
//! buffer; the writers beyond the slots wait once, in arrival order, in one place
//! (`admission`), holding nothing, instead of in the shards' locks and flushes.
//!
//! The default is two slots per core (`EngineOptions::write_concurrency`): with one, a
//! core whose write paused had no other write to run, and two cores were 4-5% less busy;
//! with two, they are as busy as without a limit (`docs/benchmarks.md`, "Write slots").
//!
//! The WAL commit (the write to the file, or the fsync under `--wal-sync always`) happens
//! after the slot is given back: a writer waiting for the disk leaves its core to another.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Thread;
use std::time::Instant;

use parking_lot::Mutex;

/// A counting semaphore that serves its waiters in arrival order and hands a freed slot
/// straight to the oldest waiter, waking that one thread only.
#[derive(Debug)]
pub(crate) struct WriteSlots {
    limit: usize,
    state: Mutex<SlotState>,
}

#[derive(Debug, Default)]
struct SlotState {
    /// Slots held now, including those handed to a waiter that has not woken yet.
    held: usize,
    /// Writes waiting for a slot, oldest first.
    waiting: VecDeque<Arc<Waiter>>,
}

#[derive(Debug)]
struct Waiter {
    thread: Thread,
    /// Set (before the thread is unparked) when a slot was handed to this waiter.
    granted: AtomicBool,
}

/// A held slot, given back when dropped or by [`WriteSlot::give_back`].
pub(crate) struct WriteSlot<'a> {
    slots: Option<&'a WriteSlots>,
}

impl WriteSlots {
    /// `limit` slots (at least one).
    pub fn new(limit: usize) -> WriteSlots {
        WriteSlots {
            limit: limit.max(1),
            state: Mutex::new(SlotState::default()),
        }
    }

    /// Waits for a slot (in arrival order) and returns it with when it was taken.
    pub fn acquire(&self) -> (WriteSlot<'_>, Instant) {
        let waiter = {
            let mut state = self.state.lock();
            if state.held < self.limit && state.waiting.is_empty() {
                state.held += 1;
                return (WriteSlot { slots: Some(self) }, Instant::now());
            }
            let waiter = Arc::new(Waiter {
                thread: std::thread::current(),
                granted: AtomicBool::new(false),
            });
            state.waiting.push_back(Arc::clone(&waiter));
            waiter
        };
        // `park` may return without an unpark (spuriously, or for a token left by someone
        // else): only the flag says the slot is ours.
        while !waiter.granted.load(Ordering::Acquire) {
            std::thread::park();
        }
        (WriteSlot { slots: Some(self) }, Instant::now())
    }
}

impl WriteSlot<'_> {
    /// Gives the slot back before the write ends: a write that must wait for a flush
    /// (back-pressure) leaves its core to a write for another shard, and finishes without
    /// a slot. It never takes one again: that would wait for a slot while holding a shard's
    /// lock, which the holders of the slots may be waiting for.
    pub fn give_back(&mut self) {
        let Some(slots) = self.slots.take() else {
            return;
        };
        let mut state = slots.state.lock();
        match state.waiting.pop_front() {
            // The slot passes to the oldest waiter: `held` does not change.
            Some(next) => {
                drop(state);
                next.granted.store(true, Ordering::Release);
                next.thread.unpark();
            }
            None => state.held -= 1,
        }
    }
}

impl Drop for WriteSlot<'_> {
    fn drop(&mut self) {
        self.give_back();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    fn waiting(slots: &WriteSlots) -> usize {
        slots.state.lock().waiting.len()
    }

    /// Waits (bounded) until `n` writes wait for a slot.
    fn until_waiting(slots: &WriteSlots, n: usize) {
        for _ in 0..2_000 {
            if waiting(slots) == n {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        panic!("{} writes wait for a slot, not {n}", waiting(slots));
    }

    #[test]
    fn a_slot_per_limit_is_taken_without_waiting() {
        let slots = WriteSlots::new(2);
        let first = slots.acquire();
        let second = slots.acquire();
        assert_eq!(slots.state.lock().held, 2);
        let (mut first, _) = first;
        first.give_back();
        assert_eq!(slots.state.lock().held, 1);
        drop(first); // given back already: not twice
        assert_eq!(slots.state.lock().held, 1);
        drop(second);
        assert_eq!(slots.state.lock().held, 0);
        // A limit of 0 is one slot, not none (which would wait forever).
        let one = WriteSlots::new(0);
        let _slot = one.acquire();
        assert_eq!(one.state.lock().held, 1);
    }

    #[test]
    fn waiters_are_served_in_arrival_order() {
        let slots = Arc::new(WriteSlots::new(1));
        let served = Arc::new(Mutex::new(Vec::new()));
        let held = slots.acquire();
        let mut threads = Vec::new();
        for name in ["first", "second", "third"] {
            let (slots_, served_) = (Arc::clone(&slots), Arc::clone(&served));
            threads.push(std::thread::spawn(move || {
                let _slot = slots_.acquire();
                served_.lock().push(name);
            }));
            until_waiting(&slots, threads.len());
        }
        assert!(served.lock().is_empty(), "nobody may pass the holder");
        drop(held);
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(*served.lock(), ["first", "second", "third"]);
        let state = slots.state.lock();
        assert_eq!((state.held, state.waiting.len()), (0, 0));
    }

    #[test]
    fn no_more_than_the_limit_hold_a_slot_at_once() {
        let slots = Arc::new(WriteSlots::new(2));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (slots, inside, most) = (slots.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _slot = slots.acquire();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        let state = slots.state.lock();
        assert_eq!((state.held, state.waiting.len()), (0, 0));
    }
}
