//! Append-only storage of the memtable: field payloads in fixed-size chunks, strings, and
//! interned row layouts.

use std::collections::HashMap;

use crate::model::{FieldId, FieldType, Value};

/// Payloads per chunk (4 MiB of `u64`). Chunks this large are mapped by the allocator on
/// their own instead of being carved from the heap, where, freed in bulk at every flush, they
/// fragmented it and made the request buffers of writers fault in fresh pages all the time
/// (64 KiB chunks: twice the page faults of the whole load, and no faster than before).
const CHUNK_SHIFT: u32 = 19;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK - 1;

/// Field values as 8-byte payloads (float bits, integer, unsigned, boolean, or string index),
/// in arrival order. Stored in chunks so that growth never moves what was written.
#[derive(Debug, Default)]
pub(super) struct Payloads {
    /// Full chunks, `CHUNK` payloads each.
    full: Vec<Vec<u64>>,
    /// The chunk being written (grows geometrically up to `CHUNK` for the first chunk).
    tail: Vec<u64>,
}

impl Payloads {
    /// Number of payloads.
    pub(super) fn len(&self) -> usize {
        (self.full.len() << CHUNK_SHIFT) + self.tail.len()
    }

    #[inline]
    pub(super) fn push(&mut self, payload: u64) {
        if self.tail.len() == CHUNK {
            self.rotate();
        }
        self.tail.push(payload);
    }

    #[cold]
    fn rotate(&mut self) {
        let full = std::mem::replace(&mut self.tail, Vec::with_capacity(CHUNK));
        self.full.push(full);
    }

    /// The payload at `index` (`< len()`).
    #[inline]
    pub(super) fn get(&self, index: usize) -> u64 {
        let chunk = index >> CHUNK_SHIFT;
        match self.full.get(chunk) {
            Some(full) => full[index & CHUNK_MASK],
            None => self.tail[index & CHUNK_MASK],
        }
    }

    /// Replaces the payload at `index` (`< len()`).
    pub(super) fn set(&mut self, index: usize, payload: u64) {
        let chunk = index >> CHUNK_SHIFT;
        match self.full.get_mut(chunk) {
            Some(full) => full[index & CHUNK_MASK] = payload,
            None => self.tail[index & CHUNK_MASK] = payload,
        }
    }

    /// Heap bytes held. The chunk being written counts by its length: its pages are
    /// touched (made resident) only as payloads are written, and counting its whole
    /// capacity would make flushes come up to a chunk early.
    pub(super) fn heap_bytes(&self) -> usize {
        self.full.capacity() * size_of::<Vec<u64>>()
            + self.full.len() * CHUNK * size_of::<u64>()
            + self.tail.len() * size_of::<u64>()
    }
}

/// String values; a string's payload is its index here.
#[derive(Debug, Default)]
pub(super) struct Strings {
    strings: Vec<String>,
    /// Sum of the strings' capacities.
    heap: usize,
}

impl Strings {
    fn push(&mut self, string: String) -> u64 {
        self.heap += string.capacity();
        self.strings.push(string);
        (self.strings.len() - 1) as u64
    }

    /// The string of `payload`.
    pub(super) fn get(&self, payload: u64) -> &str {
        &self.strings[payload as usize]
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.strings.capacity() * size_of::<String>() + self.heap
    }
}

/// Encodes `value` as a payload (a string is moved into `strings`).
#[inline]
pub(super) fn encode(value: Value, strings: &mut Strings) -> u64 {
    match value {
        Value::Float(x) => x.to_bits(),
        Value::Integer(x) => x as u64,
        Value::Unsigned(x) => x,
        Value::Boolean(x) => u64::from(x),
        Value::String(x) => strings.push(x),
    }
}

/// The fields of a row, in the order their payloads were written, with their types.
pub(super) type Layout = [(FieldId, FieldType)];

/// Distinct row layouts, shared by all series of the memtable (rows of one table usually
/// have the same layout), each with a dense id.
#[derive(Debug, Default)]
pub(super) struct Layouts {
    list: Vec<Box<Layout>>,
    ids: HashMap<Box<Layout>, u32>,
    /// Heap bytes of the layouts themselves (two copies of each).
    bytes: usize,
}

impl Layouts {
    /// The layout `id`; empty for an unknown id.
    #[inline]
    pub(super) fn get(&self, id: u32) -> &Layout {
        self.list.get(id as usize).map_or(&[], |l| l)
    }

    /// The id of `layout`, added if new.
    pub(super) fn intern(&mut self, layout: &Layout) -> u32 {
        if let Some(id) = self.ids.get(layout) {
            return *id;
        }
        let id = u32::try_from(self.list.len())
            .ok()
            .filter(|id| *id != super::NO_LAYOUT);
        let Some(id) = id else {
            panic!("memtable: more than 2^32 - 1 distinct row layouts");
        };
        self.list.push(layout.into());
        self.ids.insert(layout.into(), id);
        self.bytes += 2 * size_of_val(layout);
        id
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        self.bytes
            + self.list.capacity() * size_of::<Box<Layout>>()
            + self.ids.capacity() * (size_of::<(Box<Layout>, u32)>() + 1)
    }
}
