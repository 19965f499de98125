//! The DRAM memtable: a concurrent ordered map from internal key to value.
//!
//! The map is `crossbeam_skiplist::SkipMap` (a lock-free skiplist): readers never block the
//! single writer (the write-group leader) nor each other, it keeps entries sorted for flushes
//! and iterators, and it is the structure LevelDB and RocksDB use for the same job. A B-tree
//! under a lock would serialize readers behind the writer; a hash map cannot iterate in order.
//!
//! Invariants: entries are never removed or overwritten (each write has a unique sequence
//! number, so every internal key is unique); the memory estimate only grows.
//!
//! Thread-safety: `add` is called by one thread at a time (the write leader, or recovery);
//! `get` and iterators may run concurrently with it from any thread.

use crate::format::{
    append_internal_key, compare_internal, parse_internal_key, trailer, user_key, SequenceNumber,
    ValueType, TRAILER_LEN,
};
use crate::iterator::InternalIterator;
use crate::Result;
use crossbeam_skiplist::SkipMap;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Estimated per-entry overhead of a skiplist node (with its 48-byte `MemEntry`) plus the two
/// heap allocations.
const ENTRY_OVERHEAD_BYTES: u64 = 96;

/// The result of a memtable lookup.
#[derive(Debug, PartialEq, Eq)]
pub enum LookupResult {
    /// The newest visible version is a value.
    Found(Vec<u8>),
    /// The newest visible version is a tombstone.
    Deleted,
    /// The memtable has no visible version of the key.
    Absent,
}

/// One memtable entry: internal key and value in a single allocation, ordered by the key alone
/// ([`compare_internal`]).
///
/// It caches what the skiplist's comparisons need next to the node: the first 16 bytes of the
/// user key (zero-padded, big-endian, as two integers), the user key's length and the trailer.
/// Keys of up to 16 bytes (db_bench's and YCSB's, whose first 8 bytes are often all equal, e.g.
/// `"00000000..."`) are therefore compared without touching the heap allocation: one cache miss
/// per visited node instead of two. Longer keys with equal 16-byte prefixes fall back to the
/// full comparison, so the order is exactly `compare_internal`'s.
#[derive(Debug)]
struct MemEntry {
    prefix_hi: u64,
    prefix_lo: u64,
    /// `(sequence << 8) | type`.
    trailer: u64,
    /// The user key's length; [`MALFORMED`] for a key shorter than a trailer.
    user_len: u32,
    key_len: u32,
    /// `internal key ++ value`.
    data: Box<[u8]>,
}

/// `user_len` of an internal key shorter than a trailer (never stored; only a search key built
/// from damaged input could be one): such entries always use the full comparison.
const MALFORMED: u32 = u32::MAX;
/// User-key bytes cached in `prefix_hi`/`prefix_lo`.
const PREFIX_LEN: usize = 16;

impl MemEntry {
    fn new(user_key: &[u8], seq: SequenceNumber, t: ValueType, value: &[u8]) -> Self {
        let mut data = Vec::with_capacity(user_key.len() + TRAILER_LEN + value.len());
        append_internal_key(&mut data, user_key, seq, t);
        let key_len = data.len() as u32;
        data.extend_from_slice(value);
        Self::from_parts(data.into_boxed_slice(), key_len)
    }

    /// A search key (no value) for an encoded internal key.
    fn search(ikey: &[u8]) -> Self {
        Self::from_parts(ikey.into(), ikey.len() as u32)
    }

    fn from_parts(data: Box<[u8]>, key_len: u32) -> Self {
        let ikey = &data[..key_len as usize];
        let (uk, user_len, trailer) = if ikey.len() >= TRAILER_LEN {
            let uk = user_key(ikey);
            (uk, uk.len() as u32, trailer(ikey))
        } else {
            (ikey, MALFORMED, 0)
        };
        let mut p = [0u8; PREFIX_LEN];
        let n = uk.len().min(PREFIX_LEN);
        p[..n].copy_from_slice(&uk[..n]);
        let (hi, lo) = p.split_at(8);
        MemEntry {
            prefix_hi: u64::from_be_bytes(hi.try_into().expect("8 bytes")),
            prefix_lo: u64::from_be_bytes(lo.try_into().expect("8 bytes")),
            trailer,
            user_len,
            key_len,
            data,
        }
    }

    fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }
}

impl PartialEq for MemEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for MemEntry {}

impl Ord for MemEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        if self.user_len == MALFORMED || other.user_len == MALFORMED {
            return compare_internal(self.key(), other.key());
        }
        match (self.prefix_hi, self.prefix_lo).cmp(&(other.prefix_hi, other.prefix_lo)) {
            Ordering::Equal => {}
            o => return o,
        }
        if self.user_len as usize <= PREFIX_LEN && other.user_len as usize <= PREFIX_LEN {
            // Both user keys are inside their (equal, zero-padded) prefixes: equal keys iff equal
            // lengths, else the shorter is a prefix of the longer and sorts first.
            match self.user_len.cmp(&other.user_len) {
                Ordering::Equal => other.trailer.cmp(&self.trailer),
                o => o,
            }
        } else {
            compare_internal(self.key(), other.key())
        }
    }
}

impl PartialOrd for MemEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// An in-memory sorted buffer of recent writes, backed by one WAL file.
pub struct MemTable {
    map: SkipMap<MemEntry, ()>,
    approximate_bytes: AtomicU64,
    log_number: u64,
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL file `log_number`.
    pub fn new(log_number: u64) -> Self {
        MemTable {
            map: SkipMap::new(),
            approximate_bytes: AtomicU64::new(0),
            log_number,
        }
    }

    /// The WAL file that holds this memtable's writes.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Adds one entry. REQUIRES: one writer at a time; `seq` unique.
    pub fn add(&self, seq: SequenceNumber, t: ValueType, key: &[u8], value: &[u8]) {
        let entry = MemEntry::new(key, seq, t, value);
        let bytes = entry.data.len() as u64 + ENTRY_OVERHEAD_BYTES;
        self.map.insert(entry, ());
        self.approximate_bytes.fetch_add(bytes, Relaxed);
    }

    /// Looks up the newest version of `key` visible at `snapshot`.
    pub fn get(&self, key: &[u8], snapshot: SequenceNumber) -> LookupResult {
        let lookup = MemEntry::new(key, snapshot, ValueType::Value, &[]);
        let Some(entry) = self.map.lower_bound(Bound::Included(&lookup)) else {
            return LookupResult::Absent;
        };
        let e = entry.key();
        match parse_internal_key(e.key()) {
            Some(p) if p.user_key == key => match p.value_type {
                ValueType::Value => LookupResult::Found(e.value().to_vec()),
                ValueType::Deletion => LookupResult::Deleted,
            },
            _ => LookupResult::Absent,
        }
    }

    /// Approximate DRAM used by the entries.
    pub fn approximate_bytes(&self) -> u64 {
        self.approximate_bytes.load(Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no entry was added.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// An iterator over all entries in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: Arc::clone(self),
            buf: Vec::new(),
            len: 0,
            pos: 0,
            batch: ITER_BATCH_MIN,
            exhausted: true,
        }
    }
}

/// Entries copied out of the skiplist by the first refill after a seek; each later refill doubles
/// it up to [`ITER_BATCH_MAX`]. A point-like seek copies little, a long scan amortises the
/// O(log n) re-seek of each refill.
const ITER_BATCH_MIN: usize = 4;
/// The largest refill.
const ITER_BATCH_MAX: usize = 256;

/// An iterator over a memtable that owns an `Arc` to it. It copies entries out in batches
/// (re-seeking after the last copied key), so it holds no borrow into the skiplist; the copies
/// reuse their buffers from one refill to the next.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    buf: Vec<(Vec<u8>, Vec<u8>)>,
    len: usize,
    pos: usize,
    batch: usize,
    /// True when the skiplist holds nothing after the last buffered entry.
    exhausted: bool,
}

impl MemTableIterator {
    fn fill_from(&mut self, start: Bound<&MemEntry>) {
        self.len = 0;
        self.pos = 0;
        for e in self
            .mem
            .map
            .range((start, Bound::Unbounded))
            .take(self.batch)
        {
            if self.len == self.buf.len() {
                self.buf.push((Vec::new(), Vec::new()));
            }
            let (k, v) = &mut self.buf[self.len];
            k.clear();
            k.extend_from_slice(e.key().key());
            v.clear();
            v.extend_from_slice(e.key().value());
            self.len += 1;
        }
        self.exhausted = self.len < self.batch;
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.pos < self.len
    }
    fn seek_to_first(&mut self) {
        self.batch = ITER_BATCH_MIN;
        self.fill_from(Bound::Unbounded);
    }
    fn seek(&mut self, target: &[u8]) {
        self.batch = ITER_BATCH_MIN;
        let t = MemEntry::search(target);
        self.fill_from(Bound::Included(&t));
    }
    fn next(&mut self) {
        self.pos += 1;
        if self.pos == self.len && !self.exhausted {
            self.batch = (self.batch * 2).min(ITER_BATCH_MAX);
            let last = MemEntry::search(&self.buf[self.pos - 1].0);
            self.fill_from(Bound::Excluded(&last));
        }
    }
    fn key(&self) -> &[u8] {
        &self.buf[self.pos].0
    }
    fn value(&self) -> &[u8] {
        &self.buf[self.pos].1
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::make_internal_key;

    #[test]
    fn entry_order_is_compare_internal_around_the_prefix() {
        let mut keys: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"a\0",
            b"a\x01",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefgi",
            b"0000000000000001",
            b"0000000000000001\0",
            b"00000000000000010",
            b"0000000000000002",
            b"000000000000000\xff",
            b"\xff",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ]
        .iter()
        .flat_map(|k| {
            [
                make_internal_key(k, 1, ValueType::Value),
                make_internal_key(k, 7, ValueType::Deletion),
                make_internal_key(k, 7, ValueType::Value),
                make_internal_key(k, 1 << 40, ValueType::Value),
            ]
        })
        .collect();
        // Keys shorter than a trailer (damaged input) keep the order total.
        keys.extend([vec![], b"a".to_vec(), b"\xff\xff".to_vec()]);
        for a in &keys {
            for b in &keys {
                let (x, y) = (MemEntry::search(a), MemEntry::search(b));
                assert_eq!(x.cmp(&y), compare_internal(a, b), "{a:?} vs {b:?}");
            }
        }
        let e = MemEntry::new(b"key", 3, ValueType::Value, b"value");
        assert_eq!((user_key(e.key()), e.value()), (&b"key"[..], &b"value"[..]));
    }

    #[test]
    fn get_sees_newest_visible_version() {
        let m = MemTable::new(1);
        m.add(1, ValueType::Value, b"k", b"v1");
        m.add(2, ValueType::Value, b"k", b"v2");
        m.add(3, ValueType::Deletion, b"k", b"");
        m.add(4, ValueType::Value, b"k2", b"x");
        assert_eq!(m.get(b"k", 1), LookupResult::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", 2), LookupResult::Found(b"v2".to_vec()));
        assert_eq!(m.get(b"k", 3), LookupResult::Deleted);
        assert_eq!(m.get(b"k", 0), LookupResult::Absent);
        assert_eq!(m.get(b"j", 9), LookupResult::Absent);
        assert_eq!(m.get(b"k2", 9), LookupResult::Found(b"x".to_vec()));
        assert_eq!(m.get(b"k3", 9), LookupResult::Absent);
        assert!(m.approximate_bytes() > 4 * ENTRY_OVERHEAD_BYTES);
    }

    #[test]
    fn iterator_walks_in_order_across_refills() {
        let m = Arc::new(MemTable::new(1));
        let n = 1000u64;
        for i in 0..n {
            m.add(
                i + 1,
                ValueType::Value,
                format!("key{:05}", i).as_bytes(),
                &i.to_le_bytes(),
            );
        }
        let mut it = m.iter();
        it.seek_to_first();
        let mut count = 0;
        let mut prev: Option<Vec<u8>> = None;
        while it.valid() {
            if let Some(p) = &prev {
                assert!(compare_internal(p, it.key()).is_lt());
            }
            prev = Some(it.key().to_vec());
            count += 1;
            it.next();
        }
        assert_eq!(count, n);
        it.seek(&make_internal_key(
            b"key00500",
            u64::MAX >> 8,
            ValueType::Value,
        ));
        assert!(it.valid());
        assert_eq!(crate::format::user_key(it.key()), b"key00500");
        it.seek(&make_internal_key(b"zzz", 1, ValueType::Value));
        assert!(!it.valid());
    }
}
