//! The tree's small-object allocator: pool chunks cut into slots of one power-of-two size class
//! (64 bytes to the chunk size), one class per chunk.
//!
//! The allocator is volatile: which slots are used is rebuilt at open from what the tree
//! references ([`Slab::mark_used`]), and a chunk whose last slot is freed goes back to the
//! pool. A slot allocated but never published (a crash before its referencing store) is free
//! at the next open, so nothing leaks and no persistent allocator state can disagree with the
//! tree.

use crate::{Error, Result};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tierkv_pm::PmPool;

/// The smallest slot.
pub(crate) const MIN_SLOT: u64 = 64;

/// The size class of an object of `bytes`: slots of `MIN_SLOT << class` bytes.
pub(crate) fn class_of(bytes: u64) -> u32 {
    let slot = bytes.max(MIN_SLOT).next_power_of_two();
    (slot / MIN_SLOT).trailing_zeros()
}

/// Slot size of `class`.
pub(crate) fn slot_bytes(class: u32) -> u64 {
    MIN_SLOT << class
}

/// One chunk's slots.
struct ChunkSlots {
    class: u32,
    used: Vec<u64>,
    count: u64,
    slots: u64,
}

impl ChunkSlots {
    fn new(class: u32, slots: u64) -> ChunkSlots {
        ChunkSlots {
            class,
            used: vec![0; slots.div_ceil(64) as usize],
            count: 0,
            slots,
        }
    }

    fn is_used(&self, i: u64) -> bool {
        self.used[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    fn set(&mut self, i: u64, on: bool) {
        let w = &mut self.used[(i / 64) as usize];
        if on {
            *w |= 1 << (i % 64);
            self.count += 1;
        } else {
            *w &= !(1 << (i % 64));
            self.count -= 1;
        }
    }

    fn first_free(&self) -> Option<u64> {
        self.used.iter().enumerate().find_map(|(w, bits)| {
            let i = w as u64 * 64 + u64::from((!bits).trailing_zeros());
            (!bits != 0 && i < self.slots).then_some(i)
        })
    }
}

/// Slots of every class in the chunks the tree holds.
pub(crate) struct Slab {
    pool: Arc<PmPool>,
    location: String,
    chunk: u64,
    chunks: HashMap<u64, ChunkSlots>,
    /// Per class, the chunks with a free slot.
    partial: Vec<BTreeSet<u64>>,
    bytes_used: u64,
}

impl Slab {
    /// An empty slab over `pool`'s chunks.
    pub(crate) fn new(pool: Arc<PmPool>, location: String) -> Slab {
        let chunk = pool.chunk_size();
        let classes = class_of(chunk) as usize + 1;
        Slab {
            pool,
            location,
            chunk,
            chunks: HashMap::new(),
            partial: vec![BTreeSet::new(); classes],
            bytes_used: 0,
        }
    }

    /// The largest object a slot can hold.
    pub(crate) fn max_object(&self) -> u64 {
        slot_bytes(class_of(self.chunk)).min(self.chunk)
    }

    fn bad(&self, why: String) -> Error {
        Error::corruption(self.location.clone(), why)
    }

    /// Records that the object of `class` at `at` is referenced (at open). A slot off the
    /// class's grid, in a chunk of another class, outside the pool or taken twice is damage.
    pub(crate) fn mark_used(&mut self, at: u64, class: u32) -> Result<()> {
        let size = slot_bytes(class);
        let chunk = at - at % self.chunk;
        if chunk == 0 || at >= self.pool.size() || size > self.chunk {
            return Err(self.bad(format!(
                "PM object at {at} is outside the pool's data chunks"
            )));
        }
        if !(at - chunk).is_multiple_of(size) {
            return Err(self.bad(format!(
                "PM object at {at} is not on the {size}-byte slot grid of its chunk"
            )));
        }
        let slots = self.chunk / size;
        let location = &self.location;
        let bad = |why: String| Error::corruption(location.clone(), why);
        let c = self
            .chunks
            .entry(chunk)
            .or_insert_with(|| ChunkSlots::new(class, slots));
        if c.class != class {
            return Err(bad(format!(
                "PM chunk {chunk} holds objects of {} and {size} bytes",
                slot_bytes(c.class)
            )));
        }
        let i = (at - chunk) / size;
        if c.is_used(i) {
            return Err(bad(format!("PM object at {at} is referenced twice")));
        }
        c.set(i, true);
        self.bytes_used += size;
        Ok(())
    }

    /// After every `mark_used` of an open: indexes the chunks with free slots; returns the
    /// chunks the slab holds.
    pub(crate) fn finish_open(&mut self) -> Vec<u64> {
        for (&at, c) in &self.chunks {
            if c.count < c.slots {
                self.partial[c.class as usize].insert(at);
            }
        }
        let mut v: Vec<u64> = self.chunks.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// A free slot of `class` (a new chunk from the pool if no chunk of the class has one).
    pub(crate) fn allocate(&mut self, class: u32) -> Result<u64> {
        let size = slot_bytes(class);
        if size > self.chunk {
            return Err(Error::InvalidArgument(format!(
                "a PM tree object of {size} bytes does not fit a {}-byte PM chunk",
                self.chunk
            )));
        }
        let chunk = match self.partial[class as usize].first() {
            Some(&c) => c,
            None => {
                // The logs' reserve stays theirs: a flush that fills the pool fails here, and
                // the log that would record the failure still has its chunks.
                let c = self.pool.allocate_chunk_outside_reserve()?;
                self.chunks
                    .insert(c, ChunkSlots::new(class, self.chunk / size));
                self.partial[class as usize].insert(c);
                c
            }
        };
        let slots = self
            .chunks
            .get_mut(&chunk)
            .expect("a partial chunk is held");
        let i = slots.first_free().expect("a partial chunk has a free slot");
        slots.set(i, true);
        if slots.count == slots.slots {
            self.partial[class as usize].remove(&chunk);
        }
        self.bytes_used += size;
        Ok(chunk + i * size)
    }

    /// Frees the slot at `at` (its last reference is gone, durably); a chunk left empty goes
    /// back to the pool.
    pub(crate) fn free(&mut self, at: u64) {
        let chunk = at - at % self.chunk;
        let Some(slots) = self.chunks.get_mut(&chunk) else {
            debug_assert!(false, "free of {at}: chunk not held");
            return;
        };
        let size = slot_bytes(slots.class);
        let i = (at - chunk) / size;
        debug_assert!(slots.is_used(i), "double free of {at}");
        if !slots.is_used(i) {
            return;
        }
        slots.set(i, false);
        self.bytes_used -= size;
        let class = slots.class as usize;
        if slots.count == 0 {
            self.chunks.remove(&chunk);
            self.partial[class].remove(&chunk);
            self.pool.free_chunk(chunk);
        } else {
            self.partial[class].insert(chunk);
        }
    }

    /// Gives every chunk back to the pool: the tree that held them is no longer reachable
    /// from the root directory, durably, and nothing reads it any more.
    pub(crate) fn release_all(&mut self) {
        for (chunk, _) in self.chunks.drain() {
            self.pool.free_chunk(chunk);
        }
        for p in &mut self.partial {
            p.clear();
        }
        self.bytes_used = 0;
    }

    /// Bytes of the slots in use.
    pub(crate) fn bytes_used(&self) -> u64 {
        self.bytes_used
    }

    /// Chunks held.
    pub(crate) fn chunk_count(&self) -> u64 {
        self.chunks.len() as u64
    }
}
