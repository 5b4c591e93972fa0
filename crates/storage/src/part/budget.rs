//! Things a part holds (its open file, its index) kept within a budget shared by all parts
//! of the process, and dropped past it: the least lately used first, loaded again when next
//! used. Parts grow with history (shards × days × parts), so what each holds for its whole
//! life must be bounded as a whole.
//!
//! Which to drop is chosen by CLOCK, an approximation of least recently used: a use sets
//! the holder's `used` flag (a relaxed store, and only when the flag was clear), and only
//! a load past the budget walks the ring of holders, clearing flags until it finds one
//! clear. Uses take no shared lock: each holder has its own read-write lock, which uses
//! share and which the sweep only ever tries (`try_write`), so a sweep never waits for a
//! use and skips a holder in use. A pinned holder is never dropped, nor one under a lease
//! (a read that goes over many parts series by series leases each part's index first: it
//! would otherwise load each index again for every series once they do not all fit).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock, RwLockWriteGuard};

/// A budget of `T`s, each with a cost (1 for a file, its length for an index).
#[derive(Debug)]
pub(crate) struct Budget<T> {
    limit: usize,
    /// Cost held now (pinned holders and charges included).
    held: AtomicUsize,
    /// Times a dropped value was loaded again.
    pub(crate) reloads: AtomicU64,
    /// Times the sweep dropped a value to make room.
    pub(crate) drops: AtomicU64,
    /// Holders not yet dropped: dead entries of the ring are pruned when it grows past
    /// twice this, so parts that come and go (merges) do not grow it without bound. Not
    /// in the ring's lock: a holder may be dropped while the sweep holds that lock.
    live: AtomicUsize,
    ring: Mutex<Ring<T>>,
}

/// Every holder, in registration order, with the sweep's position.
#[derive(Debug)]
struct Ring<T> {
    slots: Vec<Weak<Slot<T>>>,
    hand: usize,
}

#[derive(Debug)]
struct Slot<T> {
    /// The value and its cost, while held.
    value: RwLock<Option<(T, usize)>>,
    used: AtomicBool,
    /// Leases held, plus one for good once pinned: never dropped while above zero.
    pins: AtomicUsize,
    budget: Arc<Budget<T>>,
}

/// One part's `T`, held within its budget. `Send + Sync` when `T` is.
#[derive(Debug)]
pub(crate) struct Held<T> {
    slot: Arc<Slot<T>>,
}

/// Cost counted in a budget for as long as it lives (a part being written holds one file).
#[derive(Debug)]
pub(crate) struct Charge<T> {
    budget: Arc<Budget<T>>,
    cost: usize,
}

impl<T> Budget<T> {
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            held: AtomicUsize::new(0),
            reloads: AtomicU64::new(0),
            drops: AtomicU64::new(0),
            live: AtomicUsize::new(0),
            ring: Mutex::new(Ring {
                slots: Vec::new(),
                hand: 0,
            }),
        })
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Holds `value` (just loaded, recently used) at `cost`; drops others when that passes
    /// the budget.
    pub(crate) fn hold(self: &Arc<Self>, value: T, cost: usize) -> Held<T> {
        let slot = Arc::new(Slot {
            value: RwLock::new(Some((value, cost))),
            used: AtomicBool::new(true),
            pins: AtomicUsize::new(0),
            budget: Arc::clone(self),
        });
        self.held.fetch_add(cost, Ordering::Relaxed);
        let live = self.live.fetch_add(1, Ordering::Relaxed) + 1;
        let mut ring = self.ring.lock();
        if ring.slots.len() >= 2 * live + 64 {
            ring.slots.retain(|slot| slot.strong_count() > 0);
            ring.hand = 0;
        }
        ring.slots.push(Arc::downgrade(&slot));
        self.make_room(&mut ring);
        Held { slot }
    }

    /// Counts `cost` more until the charge is dropped, making room first.
    pub(crate) fn charge(self: &Arc<Self>, cost: usize) -> Charge<T> {
        self.held.fetch_add(cost, Ordering::Relaxed);
        self.make_room(&mut self.ring.lock());
        Charge {
            budget: Arc::clone(self),
            cost,
        }
    }

    /// Drops unpinned values not used since the sweep last passed them until what is held
    /// is within the budget, or every holder has been passed twice (the rest are in use or
    /// pinned; the budget is then exceeded until they are let go).
    fn make_room(&self, ring: &mut Ring<T>) {
        let mut steps = 2 * ring.slots.len();
        while self.held.load(Ordering::Relaxed) > self.limit && steps > 0 {
            steps -= 1;
            if ring.hand >= ring.slots.len() {
                ring.hand = 0;
            }
            let Some(slot) = ring.slots[ring.hand].upgrade() else {
                ring.slots.swap_remove(ring.hand);
                continue;
            };
            ring.hand += 1;
            if slot.pins.load(Ordering::Relaxed) > 0 || slot.used.swap(false, Ordering::Relaxed) {
                continue;
            }
            // A value in use is skipped rather than waited for. Leases are taken under the
            // read lock, so one taken since the check above is seen here.
            if let Some(mut value) = slot.value.try_write()
                && slot.pins.load(Ordering::Relaxed) == 0
                && let Some((_, cost)) = value.take()
            {
                self.held.fetch_sub(cost, Ordering::Relaxed);
                self.drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<T> Held<T> {
    /// Calls `with` on the value, loading it first with `load` (value and cost) if the
    /// budget dropped it.
    pub(crate) fn with<R, E>(
        &self,
        load: impl FnOnce() -> Result<(T, usize), E>,
        with: impl FnOnce(&T) -> R,
    ) -> Result<R, E> {
        let slot = &self.slot;
        if !slot.used.load(Ordering::Relaxed) {
            slot.used.store(true, Ordering::Relaxed);
        }
        {
            let value = slot.value.read();
            if let Some((value, _)) = value.as_ref() {
                return Ok(with(value));
            }
        }
        let value = RwLockWriteGuard::downgrade(self.reload(load)?);
        match value.as_ref() {
            Some((value, _)) => Ok(with(value)),
            None => unreachable!("reload leaves the value held"),
        }
    }

    /// Loads the value if the budget dropped it, and keeps it until the holder is dropped.
    pub(crate) fn pin<E>(&self, load: impl FnOnce() -> Result<(T, usize), E>) -> Result<(), E> {
        std::mem::forget(self.lease(load)?);
        Ok(())
    }

    /// Loads the value if the budget dropped it, and keeps it until the lease is dropped.
    pub(crate) fn lease<E>(
        &self,
        load: impl FnOnce() -> Result<(T, usize), E>,
    ) -> Result<Lease<'_, T>, E> {
        let slot = &self.slot;
        let held = {
            let value = slot.value.read();
            slot.pins.fetch_add(1, Ordering::Relaxed);
            value.is_some()
        };
        let lease = Lease { slot };
        if !held {
            drop(self.reload(load)?);
        }
        Ok(lease)
    }

    /// Whether the value is held now.
    pub(crate) fn is_held(&self) -> bool {
        self.slot.value.read().is_some()
    }

    /// The value loaded again, under the holder's write lock; room is made after.
    fn reload<E>(
        &self,
        load: impl FnOnce() -> Result<(T, usize), E>,
    ) -> Result<RwLockWriteGuard<'_, Option<(T, usize)>>, E> {
        let slot = &self.slot;
        let mut guard = slot.value.write();
        if guard.is_none() {
            let (value, cost) = load()?;
            *guard = Some((value, cost));
            let budget = &slot.budget;
            budget.held.fetch_add(cost, Ordering::Relaxed);
            budget.reloads.fetch_add(1, Ordering::Relaxed);
            // This holder's own write lock is held: the sweep skips it.
            budget.make_room(&mut budget.ring.lock());
        }
        Ok(guard)
    }
}

impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        if let Some((_, cost)) = self.value.get_mut().take() {
            self.budget.held.fetch_sub(cost, Ordering::Relaxed);
        }
        self.budget.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Keeps a [`Held`] value from being dropped while it lives.
#[derive(Debug)]
pub(crate) struct Lease<'a, T> {
    slot: &'a Slot<T>,
}

impl<T> Lease<'_, T> {
    /// The budget the leased value counts in.
    pub(crate) fn budget(&self) -> Arc<Budget<T>> {
        Arc::clone(&self.slot.budget)
    }
}

impl<T> Drop for Lease<'_, T> {
    fn drop(&mut self) {
        self.slot.pins.fetch_sub(1, Ordering::Relaxed);
        // Leases let a read hold more than the budget; the end of the last gives it back.
        let budget = &self.slot.budget;
        if budget.held.load(Ordering::Relaxed) > budget.limit {
            budget.make_room(&mut budget.ring.lock());
        }
    }
}

impl<T> Drop for Charge<T> {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.cost, Ordering::Relaxed);
    }
}

#[cfg(test)]
impl<T> Budget<T> {
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn ring_len(&self) -> usize {
        self.ring.lock().slots.len()
    }
}
