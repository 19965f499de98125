//! Builds one block: prefix-compressed entries with restart points, then the restart array.
//!
//! Layout of the finished contents (trailer not included):
//! `entry* restart_offset:fixed32* num_restarts:fixed32`, where an entry is
//! `shared:varint32 non_shared:varint32 value_len:varint32 key_delta value`. Every
//! `restart_interval`-th entry is a restart point: it stores its whole key (`shared == 0`) and its
//! offset is listed in the restart array.
//!
//! Thread-safety: a builder has one owner. Invariants: keys are added in strictly increasing
//! order (the caller's duty, checked by the table builder); the restart array always has at
//! least one entry (offset 0), so even an empty block decodes.

use crate::util::coding::{put_fixed32, put_varint32};

/// Accumulates entries of one block.
#[derive(Debug)]
pub struct BlockBuilder {
    restart_interval: usize,
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// A builder that puts a restart point every `restart_interval` keys (at least 1).
    pub fn new(restart_interval: usize) -> BlockBuilder {
        BlockBuilder {
            restart_interval: restart_interval.max(1),
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Appends an entry. REQUIRES: `key` sorts after every key added since the last reset.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            let max = self.last_key.len().min(key.len());
            while shared < max && self.last_key[shared] == key[shared] {
                shared += 1;
            }
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        let non_shared = key.len() - shared;
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
        self.entries += 1;
    }

    /// The size the block would have if finished now (trailer excluded).
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// True when no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends the restart array and returns the finished contents. Call [`reset`] before
    /// reusing the builder.
    ///
    /// [`reset`]: BlockBuilder::reset
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_fixed32(&mut self.buf, r);
        }
        put_fixed32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }

    /// Clears the builder, keeping its allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
    }
}
