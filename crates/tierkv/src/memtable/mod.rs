//! The DRAM memtable: a concurrent ordered map from internal key to value.
//!
//! The map is [`skiplist::SkipList`], an insert-only skiplist over an arena of atomic words (the
//! structure of LevelDB's and RocksDB's memtables): readers never block the single writer (the
//! write-group leader or recovery) nor each other, it keeps entries sorted for flushes and
//! iterators, and a flushed memtable is freed a few large buckets at a time. A B-tree under a
//! lock would serialize readers behind the writer; a hash map cannot iterate in order.
//!
//! Invariants: entries are never removed or overwritten (each write has a unique sequence
//! number, so every internal key is unique); the memory estimate only grows.
//!
//! Thread-safety: `add` may be called from any thread (writers are serialized inside the
//! skiplist; the engine has one at a time anyway); `get` and iterators may run concurrently
//! with it from any thread.

mod skiplist;

use crate::format::{pack_trailer, user_key, SequenceNumber, ValueType, TRAILER_LEN};
use crate::iterator::InternalIterator;
use crate::{Error, Result};
pub(crate) use skiplist::RegionCache;
use skiplist::{Cursor, SearchKey, SkipList};
use std::cell::{Cell, OnceCell};
use std::sync::Arc;

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

/// An in-memory sorted buffer of recent writes, backed by one WAL file.
pub struct MemTable {
    list: SkipList,
    log_number: u64,
}

/// The search key for an encoded internal key. A key shorter than a trailer (only damaged input
/// can produce one) is searched as a user key at the newest possible version, i.e. before every
/// entry of that user key.
fn search_key(ikey: &[u8]) -> SearchKey<'_> {
    if ikey.len() >= TRAILER_LEN {
        SearchKey::new(user_key(ikey), crate::format::trailer(ikey))
    } else {
        SearchKey::new(ikey, u64::MAX)
    }
}

impl MemTable {
    /// An empty memtable whose writes are logged in WAL file `log_number`, expected to hold
    /// about `capacity_bytes` (see [`MemTable::approximate_bytes`]; the engine passes its write
    /// buffer size). The capacity is reserved as untouched zeroed memory, which costs nothing
    /// until used; a memtable grows past it as needed.
    pub fn new(log_number: u64, capacity_bytes: usize) -> Self {
        Self::build(log_number, capacity_bytes, None)
    }

    /// Like [`MemTable::new`], but the reserved memory is taken from `cache` when it holds a
    /// dropped memtable's of the same capacity, and goes back to it when this one is dropped:
    /// the engine's memtables reuse each other's already-mapped pages instead of faulting in
    /// and zeroing fresh ones.
    pub(crate) fn with_region_cache(
        log_number: u64,
        capacity_bytes: usize,
        cache: &Arc<RegionCache>,
    ) -> Self {
        Self::build(log_number, capacity_bytes, Some(cache))
    }

    fn build(log_number: u64, capacity_bytes: usize, cache: Option<&Arc<RegionCache>>) -> Self {
        // Reserve a little more than the write buffer: the memtable is switched only after the
        // write that crosses the size.
        let reserve = capacity_bytes.saturating_add(capacity_bytes / 16);
        let list = SkipList::with_capacity(reserve, cache.cloned())
            .or_else(|_| SkipList::with_capacity(0, None))
            .expect("a list with no reserved region allocates nothing");
        MemTable { list, log_number }
    }

    /// The WAL file that holds this memtable's writes.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Adds one entry. REQUIRES: `seq` unique. Fails only when the memtable's arena cannot grow
    /// (out of memory, or more than its 64 GiB directory).
    pub fn add(&self, seq: SequenceNumber, t: ValueType, key: &[u8], value: &[u8]) -> Result<()> {
        self.list
            .insert(key, pack_trailer(seq, t), value)
            .map_err(|_| {
                Error::InvalidArgument(format!(
                    "memtable arena exhausted at {} bytes ({} entries); lower write_buffer_size",
                    self.list.arena_bytes(),
                    self.list.len()
                ))
            })
    }

    /// Looks up the newest version of `key` visible at `snapshot`.
    pub fn get(&self, key: &[u8], snapshot: SequenceNumber) -> LookupResult {
        let c = self.list.seek(&SearchKey::new(
            key,
            pack_trailer(snapshot, ValueType::Value),
        ));
        if !c.valid() || !self.list.user_key_is(c, key) {
            return LookupResult::Absent;
        }
        match ValueType::from_u8(self.list.trailer(c) as u8) {
            Some(ValueType::Value) => {
                let mut v = Vec::new();
                self.list.append_value(c, &mut v);
                LookupResult::Found(v)
            }
            Some(ValueType::Deletion) => LookupResult::Deleted,
            // Only `add` writes entries, always with a known type.
            None => LookupResult::Absent,
        }
    }

    /// Approximate DRAM used by the entries: the arena words handed out to them.
    pub fn approximate_bytes(&self) -> u64 {
        self.list.arena_bytes()
    }

    /// Resident memory under this memtable that a previous, flushed memtable touched and this
    /// one has not used again yet (not counted in [`MemTable::approximate_bytes`]).
    pub(crate) fn stale_resident_bytes(&self) -> u64 {
        self.list.stale_resident_bytes()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when no entry was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An iterator over all entries in internal-key order.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            mem: Arc::clone(self),
            at: Cursor::END,
            key: Vec::new(),
            value: OnceCell::new(),
            spare: Cell::new(Vec::new()),
        }
    }
}

/// An iterator over a memtable that owns an `Arc` to it. Its position is a node of the skiplist
/// (nodes live as long as the memtable); the key there is copied into a buffer on every move,
/// the value only when it is asked for: merging and the database iterator look at the keys of
/// entries they skip (older versions, other sources' duplicates) but never at their values, and
/// a value lives in the data arena, one more cache miss away than the key. Both buffers are
/// reused from one entry to the next.
pub struct MemTableIterator {
    mem: Arc<MemTable>,
    at: Cursor,
    key: Vec<u8>,
    /// The value at `at`, once asked for.
    value: OnceCell<Vec<u8>>,
    /// The value buffer of an earlier entry, for reuse.
    spare: Cell<Vec<u8>>,
}

impl MemTableIterator {
    fn load(&mut self, at: Cursor) {
        self.at = at;
        self.key.clear();
        if let Some(v) = self.value.take() {
            self.spare.set(v);
        }
        if at.valid() {
            self.mem.list.prefetch_around(at);
            self.mem.list.append_internal_key(at, &mut self.key);
        }
    }
}

impl InternalIterator for MemTableIterator {
    fn valid(&self) -> bool {
        self.at.valid()
    }
    fn seek_to_first(&mut self) {
        let at = self.mem.list.first();
        self.load(at);
    }
    fn seek(&mut self, target: &[u8]) {
        let at = self.mem.list.seek(&search_key(target));
        self.load(at);
    }
    fn next(&mut self) {
        let at = self.mem.list.next_of(self.at);
        self.load(at);
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        self.value.get_or_init(|| {
            let mut v = self.spare.take();
            v.clear();
            if self.at.valid() {
                self.mem.list.append_value(self.at, &mut v);
            }
            v
        })
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{compare_internal, make_internal_key, MAX_SEQUENCE};

    #[test]
    fn order_and_seek_follow_compare_internal_around_the_prefix() {
        let user_keys: [&[u8]; 14] = [
            b"",
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
        ];
        let m = Arc::new(MemTable::new(1, 1 << 20));
        let mut want = Vec::new();
        let mut seq = 1;
        for k in user_keys.iter().rev() {
            for t in [ValueType::Value, ValueType::Deletion, ValueType::Value] {
                m.add(seq, t, k, &seq.to_le_bytes()).unwrap();
                want.push((make_internal_key(k, seq, t), seq.to_le_bytes().to_vec()));
                seq += 1 << 20;
            }
        }
        want.sort_by(|a, b| compare_internal(&a.0, &b.0));
        let mut it = m.iter();
        it.seek_to_first();
        let mut got = Vec::new();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        assert_eq!(got, want);
        // Every seek lands on the first entry >= the target; targets between versions too.
        for k in user_keys {
            for s in [0, 1, 1 << 20, (1 << 20) + 1, 5 << 20, MAX_SEQUENCE] {
                let target = make_internal_key(k, s, ValueType::Value);
                it.seek(&target);
                let expect = want
                    .iter()
                    .find(|(e, _)| compare_internal(e, &target).is_ge());
                assert_eq!(it.valid().then(|| it.key()), expect.map(|e| &e.0[..]));
            }
        }
        // A target shorter than a trailer seeks as a user key before all its versions.
        it.seek(b"a");
        assert_eq!(user_key(it.key()), b"a");
        it.seek(b"");
        assert_eq!(it.key(), &want[0].0[..]);
    }

    #[test]
    fn get_sees_newest_visible_version() {
        let m = MemTable::new(1, 1 << 20);
        m.add(1, ValueType::Value, b"k", b"v1").unwrap();
        m.add(2, ValueType::Value, b"k", b"v2").unwrap();
        m.add(3, ValueType::Deletion, b"k", b"").unwrap();
        m.add(4, ValueType::Value, b"k2", b"x").unwrap();
        assert_eq!(m.get(b"k", 1), LookupResult::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", 2), LookupResult::Found(b"v2".to_vec()));
        assert_eq!(m.get(b"k", 3), LookupResult::Deleted);
        assert_eq!(m.get(b"k", 0), LookupResult::Absent);
        assert_eq!(m.get(b"j", 9), LookupResult::Absent);
        assert_eq!(m.get(b"k2", 9), LookupResult::Found(b"x".to_vec()));
        assert_eq!(m.get(b"k3", 9), LookupResult::Absent);
        // Four nodes of at least one cache line each.
        assert!(m.approximate_bytes() >= 4 * 64);
        assert_eq!(m.len(), 4);
    }

    #[test]
    fn iterator_walks_in_order() {
        let m = Arc::new(MemTable::new(1, 1 << 20));
        let n = 1000u64;
        for i in 0..n {
            m.add(
                i + 1,
                ValueType::Value,
                format!("key{:05}", i).as_bytes(),
                &i.to_le_bytes(),
            )
            .unwrap();
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

    #[test]
    fn iterator_values_are_right_whether_read_skipped_or_read_twice() {
        let m = Arc::new(MemTable::new(1, 1 << 20));
        let n = 500u64;
        for i in 0..n {
            // Values of 0..=39 bytes, so buffers are reused for longer and shorter values.
            let value = vec![i as u8; (i * 7 % 40) as usize];
            m.add(
                i + 1,
                ValueType::Value,
                format!("k{i:04}").as_bytes(),
                &value,
            )
            .unwrap();
        }
        let mut it = m.iter();
        it.seek_to_first();
        let mut i = 0u64;
        while it.valid() {
            let want = vec![i as u8; (i * 7 % 40) as usize];
            // Every third entry's value is never looked at; the others once or twice.
            if i % 3 != 1 {
                assert_eq!(it.value(), &want[..], "entry {i}");
            }
            if i % 3 == 2 {
                assert_eq!(it.value(), &want[..], "entry {i}, second read");
            }
            i += 1;
            it.next();
        }
        assert_eq!(i, n);
        assert!(it.value().is_empty(), "an invalid iterator has no value");
        it.seek(&make_internal_key(b"k0250", MAX_SEQUENCE, ValueType::Value));
        assert_eq!(it.value(), &vec![250u8; (250 * 7 % 40) as usize][..]);
    }

    /// Insert cost of the memtable alone (`cargo test --release -p tierkv --lib -- --ignored
    /// --nocapture bench_memtable_insert`): 400,000 db_bench-style 16-byte keys in random order
    /// with 128-byte values: one round on fresh memory, seven on reused memory; also the time to drop a full memtable.
    #[test]
    #[ignore]
    fn bench_memtable_insert() {
        let n = 400_000u64;
        let value = [7u8; 128];
        let keys: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{:016}",
                    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 1_000_000_000
                )
            })
            .collect();
        let mut inserts = Vec::new();
        let mut drops = Vec::new();
        // Round 0 faults in fresh memory; later rounds reuse it, as the engine's memtables do.
        let cache = Arc::new(RegionCache::new(2));
        let mut fresh = std::time::Duration::ZERO;
        for round in 0..8 {
            let m = MemTable::with_region_cache(1, 64 << 20, &cache);
            let t = std::time::Instant::now();
            for (i, k) in keys.iter().enumerate() {
                m.add(i as u64 + 1, ValueType::Value, k.as_bytes(), &value)
                    .unwrap();
            }
            if round == 0 {
                fresh = t.elapsed() / n as u32;
                continue;
            }
            inserts.push(t.elapsed() / n as u32);
            assert_eq!(m.len() as u64, n);
            let t = std::time::Instant::now();
            drop(m);
            drops.push(t.elapsed());
        }
        inserts.sort();
        drops.sort();
        eprintln!(
            "memtable insert: fresh memory {fresh:?}, reused: min {:?} median {:?} per entry; \
             drop of a full memtable (regions kept for reuse): median {:?}",
            inserts[0], inserts[3], drops[3]
        );
    }
}
