//! The write buffer of the memtable front end: a DRAM memtable behind a WAL, or SLM-DB's
//! persistent skiplist memtable in PM, which needs no WAL.

use crate::iterator::InternalIterator;
use crate::memtable::{LookupResult, MemTable};
use crate::pmtable::PmTable;
use crate::Result;
use std::sync::Arc;

/// One write buffer. Cheap to clone.
#[derive(Clone)]
pub(crate) enum Buffer {
    /// A DRAM memtable whose writes are logged in the WAL of its number.
    Dram(Arc<MemTable>),
    /// A persistent skiplist memtable in the PM pool, the file of its number.
    Pm(Arc<PmTable>),
}

impl Buffer {
    /// Its number: its WAL's, or its own file's.
    pub(crate) fn number(&self) -> u64 {
        match self {
            Buffer::Dram(m) => m.log_number(),
            Buffer::Pm(t) => t.number(),
        }
    }

    /// The newest version of `key` visible at `snapshot`.
    pub(crate) fn get(&self, key: &[u8], snapshot: u64) -> Result<LookupResult> {
        match self {
            Buffer::Dram(m) => Ok(m.get(key, snapshot)),
            Buffer::Pm(t) => t.get(key, snapshot),
        }
    }

    /// Its entries in internal-key order.
    pub(crate) fn iter(&self) -> Box<dyn InternalIterator> {
        match self {
            Buffer::Dram(m) => Box::new(m.iter()),
            Buffer::Pm(t) => Box::new(t.iter()),
        }
    }

    /// The bytes compared with the write buffer size: the DRAM memtable's arena, or the PM
    /// memtable's file.
    pub(crate) fn fill_bytes(&self) -> u64 {
        match self {
            Buffer::Dram(m) => m.approximate_bytes(),
            Buffer::Pm(t) => t.pm_bytes(),
        }
    }

    /// True if it holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Buffer::Dram(m) => m.is_empty(),
            Buffer::Pm(t) => t.is_empty(),
        }
    }

    /// DRAM it holds: (bytes of its entries or of its DRAM levels, resident bytes of reused
    /// memory not used again yet).
    pub(crate) fn dram_bytes(&self) -> (u64, u64) {
        match self {
            Buffer::Dram(m) => (m.approximate_bytes(), m.stale_resident_bytes()),
            Buffer::Pm(t) => (t.dram_bytes(), 0),
        }
    }
}
