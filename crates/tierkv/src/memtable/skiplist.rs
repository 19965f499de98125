//! The memtable's ordered index: an insert-only skiplist whose nodes live in arenas of atomic
//! words, with one writer at a time and any number of lock-free readers.
//!
//! This is the structure of LevelDB's `SkipList` and RocksDB's `InlineSkipList`, in safe Rust:
//!
//! * **Arenas.** Memory is carved out of regions of `AtomicU64`, each its own anonymous
//!   mapping ([`tierkv_pm::dram::AtomicWords`]: zeroed by the kernel on first touch, advised for
//!   transparent huge pages), or a region 0 a dropped list left in a [`RegionCache`]; no word is
//!   ever read before this list's writer stored it, so reused words need no zeroing. Region 0
//!   is reserved at creation with the
//!   memtable's expected size (the write buffer size), regions 1.. are buckets allocated when it
//!   is full (64 KiB doubling up to 32 MiB). A word is named by its address `region << 40 |
//!   offset`; `0` is the null link. A link into region 0 is followed without any lookup.
//!   Nothing is freed until the whole list is dropped, which frees a few regions instead of one
//!   allocation per entry.
//! * **Two arenas: index and data.** A node in the index arena holds what a search reads,
//!   `[k0, k1, trailer, user_len | height << 32, data, next[0..height]]` (7 words on average),
//!   and points to its record in the data arena, `[value_len, key words 2.., value words..]`.
//!   Keeping values out of the index keeps the nodes a search visits dense: with values inline
//!   (a 128-byte value made 192-byte nodes) an insert into a 400K-entry list took 1.40 us against
//!   1.21 us for `crossbeam_skiplist`; dense nodes are what made it faster (DECISIONS.md).
//! * **Keys as integers.** The user key is stored as big-endian words zero-padded to a multiple
//!   of 8 bytes, so comparing keys is comparing integers word by word; its first 16 bytes
//!   (`k0`, `k1`) are in the node, the rest in the data record. Values are little-endian words.
//! * **Concurrency.** The writer fills a node and its record with relaxed stores, then links
//!   the node bottom-up with a release store into each predecessor's `next`; readers follow
//!   links with acquire loads, so every node they reach is fully written. Nodes are never
//!   unlinked or modified after they are linked. Writers are serialized by a mutex (the engine
//!   has one writer at a time anyway: the write-group leader or recovery), which also owns the
//!   height generator.
//! * **Shape.** Branching factor 2 (p = 1/2), at most 20 levels: a search visits fewer nodes
//!   than with RocksDB's factor 4 (1.44 against 2.16 x ln n expected), and each visit is a
//!   cache miss.
//!
//! Why not `crossbeam_skiplist`: it is a general concurrent map (many writers, removal, epoch
//! reclamation, one heap allocation per node and a second one for our key and value, freed one
//! by one when a flushed memtable is dropped); the memtable needs none of that generality.

use std::cmp::Ordering;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, Mutex, OnceLock};
use tierkv_pm::dram::AtomicWords;

/// The most levels a node can have.
pub(crate) const MAX_HEIGHT: usize = 20;

// Index node words.
const K0: usize = 0;
const K1: usize = 1;
const TRAILER: usize = 2;
const META: usize = 3;
const DATA: usize = 4;
const NEXT: usize = 5;
// Data record words.
const VALUE_LEN: usize = 0;
const KEY_REST: usize = 1;

/// Words in bucket 0; bucket `i` has `MIN_BUCKET_WORDS << min(i, MAX_BUCKET_SHIFT)` words (or
/// more, for a record larger than that).
const MIN_BUCKET_WORDS: usize = 8 << 10;
const MAX_BUCKET_SHIFT: usize = 9;
/// Buckets per arena: at least 1015 x 32 MiB, about 32 GiB.
const MAX_BUCKETS: usize = 1024;
const OFFSET_BITS: u32 = 40;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
/// The address standing for the list's head (its links are `head`).
const HEAD: u64 = u64::MAX;
const NULL: u64 = 0;

/// The list ran out of arena (its directory is full, or a bucket could not be allocated).
#[derive(Debug)]
pub(crate) struct ArenaExhausted;

/// A key to search for or insert: a user key and a trailer (`(sequence << 8) | type`), ordered
/// by user key ascending, then trailer descending.
#[derive(Clone, Copy)]
pub(crate) struct SearchKey<'a> {
    k0: u64,
    k1: u64,
    trailer: u64,
    user_key: &'a [u8],
}

impl<'a> SearchKey<'a> {
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        SearchKey {
            k0: key_word(user_key, 0),
            k1: key_word(user_key, 1),
            trailer,
            user_key,
        }
    }
}

/// Word `i` of a user key: bytes `8i..8i+8`, big-endian, zero-padded.
#[inline]
fn key_word(key: &[u8], i: usize) -> u64 {
    let start = (i * 8).min(key.len());
    let end = (start + 8).min(key.len());
    let mut w = [0u8; 8];
    w[..end - start].copy_from_slice(&key[start..end]);
    u64::from_be_bytes(w)
}

fn words_for(bytes: usize) -> usize {
    bytes.div_ceil(8)
}

/// The user-key length stored in a node.
#[inline]
fn user_len(node: &[AtomicU64]) -> usize {
    (node[META].load(Relaxed) & 0xFFFF_FFFF) as usize
}

/// Words of a user key of `len` bytes kept in the data record (those past `k0`, `k1`).
fn key_rest_words(len: usize) -> usize {
    words_for(len).saturating_sub(2)
}

/// Words carved out of regions; see the module documentation.
struct Arena {
    /// Region 0, reserved at creation.
    main: AtomicWords,
    /// Words of `main` used before it came to this arena (a reused region).
    main_touched_before: usize,
    /// Regions 1.., allocated when `main` is full.
    buckets: Box<[OnceLock<AtomicWords>]>,
}

/// Where an arena's next allocation goes; owned by the writer.
struct Cursor0 {
    /// 0: `main`; `i`: bucket `i - 1`.
    region: usize,
    used: usize,
}

/// Main regions of dropped lists, kept for the next list of the same capacity (see
/// [`SkipList::with_capacity`]). Holds at most `keep` regions; more are unmapped.
pub(crate) struct RegionCache {
    free: Mutex<Vec<KeptRegion>>,
    keep: usize,
}

/// A kept region and how many of its words were ever handed out (its touched, so resident,
/// part).
struct KeptRegion {
    words: AtomicWords,
    touched: usize,
}

impl RegionCache {
    /// A cache that keeps at most `keep` regions.
    pub(crate) fn new(keep: usize) -> Self {
        RegionCache {
            free: Mutex::new(Vec::new()),
            keep,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<KeptRegion>> {
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A kept region of exactly `words` words.
    fn take(&self, words: usize) -> Option<KeptRegion> {
        let mut free = self.lock();
        let i = free.iter().position(|r| r.words.len() == words)?;
        Some(free.swap_remove(i))
    }

    fn give(&self, region: KeptRegion) {
        if region.words.is_empty() {
            return;
        }
        let mut free = self.lock();
        if free.len() < self.keep {
            free.push(region);
        }
    }

    /// Number of regions kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Bytes of the kept regions that were ever used (resident memory).
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.lock().iter().map(|r| r.touched as u64 * 8).sum()
    }
}

impl Arena {
    fn with_capacity(
        words: usize,
        cache: Option<&RegionCache>,
    ) -> Result<(Arena, Cursor0), ArenaExhausted> {
        let words = if words == 0 {
            0
        } else {
            words.next_multiple_of(MIN_BUCKET_WORDS)
        };
        let (main, main_touched_before) = match cache.and_then(|c| c.take(words)) {
            Some(r) => (r.words, r.touched),
            None => (AtomicWords::zeroed(words).map_err(|_| ArenaExhausted)?, 0),
        };
        let arena = Arena {
            main,
            main_touched_before,
            buckets: (0..MAX_BUCKETS).map(|_| OnceLock::new()).collect(),
        };
        // Address 0 is the null link: the first word of `main` stays unused.
        Ok((arena, Cursor0 { region: 0, used: 1 }))
    }

    /// Words of `main` handed out so far. `c`: the arena's cursor.
    fn main_used(&self, c: &Cursor0) -> usize {
        if c.region == 0 {
            c.used
        } else {
            self.main.len()
        }
    }

    /// Words of `main` that a previous list used and this one has not used again yet
    /// (resident, but not counted in this list's size).
    fn main_stale(&self, c: &Cursor0) -> usize {
        self.main_touched_before.saturating_sub(self.main_used(c))
    }

    /// Gives `main` to `cache`, leaving the arena without it. `c`: the arena's cursor.
    fn give_main(&mut self, c: &Cursor0, cache: &RegionCache) {
        let touched = self.main_used(c).max(self.main_touched_before);
        cache.give(KeptRegion {
            words: std::mem::take(&mut self.main),
            touched,
        });
    }

    /// The words at `addr`, to the end of its region.
    #[inline]
    fn at(&self, addr: u64) -> &[AtomicU64] {
        let region = (addr >> OFFSET_BITS) as usize;
        let off = (addr & OFFSET_MASK) as usize;
        if region == 0 {
            &self.main.as_slice()[off..]
        } else {
            self.in_bucket(region - 1, off)
        }
    }

    #[cold]
    #[inline(never)]
    fn in_bucket(&self, bucket: usize, off: usize) -> &[AtomicU64] {
        // A linked address always names a published bucket (the bucket is set before the words
        // are written, and the link is published with release after both).
        &self.buckets[bucket]
            .get()
            .expect("a linked address's bucket is published")
            .as_slice()[off..]
    }

    /// Carves `words` words out of the arena; returns their address and the words consumed
    /// (including a skipped region tail).
    fn allocate(&self, c: &mut Cursor0, words: usize) -> Result<(u64, usize), ArenaExhausted> {
        let mut consumed = words;
        loop {
            let size = if c.region == 0 {
                self.main.len()
            } else {
                let bucket = &self.buckets[c.region - 1];
                match bucket.get() {
                    Some(b) => b.len(),
                    None => {
                        let size = (MIN_BUCKET_WORDS << (c.region - 1).min(MAX_BUCKET_SHIFT))
                            .max(words.next_multiple_of(MIN_BUCKET_WORDS));
                        let b = AtomicWords::zeroed(size).map_err(|_| ArenaExhausted)?;
                        // Only the writer (holding the lock) publishes buckets.
                        bucket.set(b).map_err(|_| ArenaExhausted)?;
                        size
                    }
                }
            };
            if size.saturating_sub(c.used) >= words {
                let addr = ((c.region as u64) << OFFSET_BITS) | c.used as u64;
                c.used += words;
                return Ok((addr, consumed));
            }
            // The rest of this region is too small: skip it.
            consumed += size.saturating_sub(c.used);
            if c.region == MAX_BUCKETS {
                return Err(ArenaExhausted);
            }
            c.region += 1;
            c.used = 0;
        }
    }
}

struct Writer {
    index: Cursor0,
    data: Cursor0,
    rng: u64,
}

/// The skiplist. See the module documentation.
pub(crate) struct SkipList {
    head: [AtomicU64; MAX_HEIGHT],
    /// The height of the tallest node (a hint for readers: a taller level starts empty).
    max_height: AtomicU64,
    index: Arena,
    data: Arena,
    writer: Mutex<Writer>,
    /// Words handed out, skipped region tails included.
    used_words: AtomicU64,
    len: AtomicU64,
    /// Where the main regions go when the list is dropped.
    cache: Option<Arc<RegionCache>>,
}

impl Drop for SkipList {
    fn drop(&mut self) {
        if let Some(cache) = &self.cache {
            let w = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
            self.index.give_main(&w.index, cache);
            self.data.give_main(&w.data, cache);
        }
    }
}

impl SkipList {
    /// A list whose first `capacity_bytes` of entries go to regions reserved up front
    /// (untouched pages cost no memory); later ones go to buckets allocated as
    /// needed. Fails only if the reservation cannot be made.
    ///
    /// With a `cache`, the reserved regions are taken from it when it holds regions of this
    /// capacity, and given back to it when the list is dropped. A reused region is not zeroed
    /// again: no word is read before the writer has stored it (a node and its record are
    /// written whole before the node is linked, and readers only reach linked nodes). Its pages
    /// are already mapped, so the writer takes no page faults on them: a fresh region costs
    /// a fault and the kernel's zeroing of each (huge) page on first touch, ~15% of the
    /// foreground time of a fill on this VM (docs/DECISIONS.md, "Memtable").
    pub(crate) fn with_capacity(
        capacity_bytes: usize,
        cache: Option<Arc<RegionCache>>,
    ) -> Result<Self, ArenaExhausted> {
        // Both arenas reserve the whole capacity: which one fills first depends on the value
        // sizes, and address space that is never touched costs nothing.
        let words = words_for(capacity_bytes);
        let (index, index_cursor) = Arena::with_capacity(words, cache.as_deref())?;
        let (data, data_cursor) = Arena::with_capacity(words, cache.as_deref())?;
        Ok(SkipList {
            head: Default::default(),
            max_height: AtomicU64::new(1),
            index,
            data,
            writer: Mutex::new(Writer {
                index: index_cursor,
                data: data_cursor,
                rng: 0x9E37_79B9_7F4A_7C15,
            }),
            used_words: AtomicU64::new(0),
            len: AtomicU64::new(0),
            cache,
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.len.load(Relaxed) as usize
    }

    /// Bytes of arena handed out to entries.
    pub(crate) fn arena_bytes(&self) -> u64 {
        self.used_words.load(Relaxed) * 8
    }

    /// Resident bytes of reused regions beyond what this list has used of them so far: the part
    /// a previous list touched (see [`RegionCache`]).
    pub(crate) fn stale_resident_bytes(&self) -> u64 {
        let w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        (self.index.main_stale(&w.index) + self.data.main_stale(&w.data)) as u64 * 8
    }

    #[inline]
    fn node(&self, addr: u64) -> &[AtomicU64] {
        self.index.at(addr)
    }

    #[inline]
    fn next(&self, addr: u64, level: usize) -> u64 {
        if addr == HEAD {
            self.head[level].load(Acquire)
        } else {
            self.node(addr)[NEXT + level].load(Acquire)
        }
    }

    fn set_next(&self, addr: u64, level: usize, to: u64) {
        if addr == HEAD {
            self.head[level].store(to, Release)
        } else {
            self.node(addr)[NEXT + level].store(to, Release)
        }
    }

    /// The data record of the node `n`.
    #[inline]
    fn record(&self, n: &[AtomicU64]) -> &[AtomicU64] {
        self.data.at(n[DATA].load(Relaxed))
    }

    /// Compares the node at `addr` with `key`.
    #[inline]
    fn compare(&self, addr: u64, key: &SearchKey) -> Ordering {
        let n = self.node(addr);
        let (k0, k1) = (n[K0].load(Relaxed), n[K1].load(Relaxed));
        match (k0, k1).cmp(&(key.k0, key.k1)) {
            Ordering::Equal => {}
            o => return o,
        }
        let user_len = user_len(n);
        let key_len = key.user_key.len();
        if user_len > 16 && key_len > 16 {
            let rest = &self.record(n)[KEY_REST..];
            let common = words_for(user_len.min(key_len));
            for i in 2..common {
                match rest[i - 2].load(Relaxed).cmp(&key_word(key.user_key, i)) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
        }
        // Equal padded words over the shorter key: the shorter key is a prefix of the longer
        // (a zero pad can only equal a zero byte), so it sorts first.
        match user_len.cmp(&key_len) {
            Ordering::Equal => key.trailer.cmp(&n[TRAILER].load(Relaxed)),
            o => o,
        }
    }

    /// The first node `>= key`, or `NULL`; fills `prev[l]` with the last node `< key` on each
    /// level `l` below the list's height when given.
    fn find_greater_or_equal(&self, key: &SearchKey, mut prev: Option<&mut [u64]>) -> u64 {
        let mut x = HEAD;
        let mut level = self.max_height.load(Relaxed) as usize - 1;
        // The node last found `>= key` on a higher level: when the next node on a lower level
        // is the same one, the answer is known without comparing again.
        let mut last_bigger = NULL;
        loop {
            let next = self.next(x, level);
            if next != NULL && next != last_bigger && self.compare(next, key).is_lt() {
                x = next;
                continue;
            }
            last_bigger = next;
            if let Some(p) = prev.as_deref_mut() {
                p[level] = x;
            }
            if level == 0 {
                return next;
            }
            level -= 1;
        }
    }

    /// Inserts `(user_key, trailer) -> value`. REQUIRES: no equal key is in the list (every
    /// internal key is unique).
    pub(crate) fn insert(
        &self,
        user_key: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> Result<(), ArenaExhausted> {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let key = SearchKey::new(user_key, trailer);
        let mut prev = [HEAD; MAX_HEIGHT];
        self.find_greater_or_equal(&key, Some(&mut prev));

        let height = w.random_height();
        let key_words = key_rest_words(user_key.len());
        let (data_addr, data_used) = self
            .data
            .allocate(&mut w.data, KEY_REST + key_words + words_for(value.len()))?;
        let (addr, index_used) = self.index.allocate(&mut w.index, NEXT + height)?;
        let r = self.data.at(data_addr);
        r[VALUE_LEN].store(value.len() as u64, Relaxed);
        let rest = &r[KEY_REST..];
        for (i, slot) in rest[..key_words].iter().enumerate() {
            slot.store(key_word(user_key, i + 2), Relaxed);
        }
        for (slot, chunk) in rest[key_words..].iter().zip(value.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            slot.store(u64::from_le_bytes(b), Relaxed);
        }
        let n = self.node(addr);
        n[K0].store(key.k0, Relaxed);
        n[K1].store(key.k1, Relaxed);
        n[TRAILER].store(trailer, Relaxed);
        n[META].store(user_key.len() as u64 | (height as u64) << 32, Relaxed);
        n[DATA].store(data_addr, Relaxed);
        if height as u64 > self.max_height.load(Relaxed) {
            // Readers that see the new height before the links find empty head links there and
            // descend, which is correct.
            self.max_height.store(height as u64, Relaxed);
        }
        for (level, &p) in prev.iter().enumerate().take(height) {
            n[NEXT + level].store(self.next(p, level), Relaxed);
            self.set_next(p, level, addr);
        }
        self.used_words
            .fetch_add((data_used + index_used) as u64, Relaxed);
        self.len.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A cursor at the first node `>= key`.
    pub(crate) fn seek(&self, key: &SearchKey) -> Cursor {
        Cursor(self.find_greater_or_equal(key, None))
    }

    /// A cursor at the first node.
    pub(crate) fn first(&self) -> Cursor {
        Cursor(self.head[0].load(Acquire))
    }

    /// The cursor after `c`. REQUIRES: `c` valid.
    pub(crate) fn next_of(&self, c: Cursor) -> Cursor {
        Cursor(self.next(c.0, 0))
    }

    /// Starts loading what a scan standing at `c` reads next: the record of `c` (its value)
    /// and the node after `c`. REQUIRES: `c` valid.
    pub(crate) fn prefetch_around(&self, c: Cursor) {
        let n = self.node(c.0);
        tierkv_pm::dram::prefetch(&self.record(n)[VALUE_LEN]);
        let next = n[NEXT].load(Acquire);
        if next != NULL {
            tierkv_pm::dram::prefetch(&self.node(next)[K0]);
        }
    }

    /// The user key at `c`, appended to `dst`. REQUIRES: `c` valid.
    pub(crate) fn append_user_key(&self, c: Cursor, dst: &mut Vec<u8>) {
        let n = self.node(c.0);
        let user_len = user_len(n);
        append_words(dst, &n[K0..=K1], user_len.min(16), u64::to_be_bytes);
        if user_len > 16 {
            let rest = &self.record(n)[KEY_REST..];
            append_words(
                dst,
                &rest[..key_rest_words(user_len)],
                user_len - 16,
                u64::to_be_bytes,
            );
        }
    }

    /// The internal key at `c` (user key and trailer), appended to `dst`.
    pub(crate) fn append_internal_key(&self, c: Cursor, dst: &mut Vec<u8>) {
        self.append_user_key(c, dst);
        dst.extend_from_slice(&self.trailer(c).to_le_bytes());
    }

    /// The trailer at `c`.
    pub(crate) fn trailer(&self, c: Cursor) -> u64 {
        self.node(c.0)[TRAILER].load(Relaxed)
    }

    /// True when the user key at `c` equals `user_key`.
    pub(crate) fn user_key_is(&self, c: Cursor, user_key: &[u8]) -> bool {
        let n = self.node(c.0);
        if user_len(n) != user_key.len()
            || n[K0].load(Relaxed) != key_word(user_key, 0)
            || n[K1].load(Relaxed) != key_word(user_key, 1)
        {
            return false;
        }
        if user_key.len() <= 16 {
            return true;
        }
        let rest = &self.record(n)[KEY_REST..];
        (2..words_for(user_key.len())).all(|i| rest[i - 2].load(Relaxed) == key_word(user_key, i))
    }

    /// The value at `c`, appended to `dst`.
    pub(crate) fn append_value(&self, c: Cursor, dst: &mut Vec<u8>) {
        let n = self.node(c.0);
        let r = self.record(n);
        let value_len = r[VALUE_LEN].load(Relaxed) as usize;
        let start = KEY_REST + key_rest_words(user_len(n));
        append_words(
            dst,
            &r[start..start + words_for(value_len)],
            value_len,
            u64::to_le_bytes,
        );
    }
}

impl Writer {
    /// 1 + the number of successes of a 1-in-2 trial, capped at [`MAX_HEIGHT`] (xorshift64).
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if self.rng & 1 != 0 {
                break;
            }
            height += 1;
        }
        height
    }
}

/// Appends the first `len` bytes of `words` (each turned into bytes by `bytes`) to `dst`.
/// REQUIRES: `words` holds at least `len` bytes.
#[inline]
fn append_words(dst: &mut Vec<u8>, words: &[AtomicU64], len: usize, bytes: fn(u64) -> [u8; 8]) {
    let at = dst.len();
    dst.resize(at + len, 0);
    for (chunk, w) in dst[at..].chunks_mut(8).zip(words) {
        chunk.copy_from_slice(&bytes(w.load(Relaxed))[..chunk.len()]);
    }
}

/// A position in a [`SkipList`]: a node, or the end (invalid).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cursor(u64);

impl Cursor {
    /// The end of the list.
    pub(crate) const END: Cursor = Cursor(NULL);

    pub(crate) fn valid(self) -> bool {
        self.0 != NULL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(list: &SkipList, c: Cursor) -> (Vec<u8>, u64, Vec<u8>) {
        let mut k = Vec::new();
        list.append_user_key(c, &mut k);
        let mut v = Vec::new();
        list.append_value(c, &mut v);
        (k, list.trailer(c), v)
    }

    fn reference_order(a: &(Vec<u8>, u64), b: &(Vec<u8>, u64)) -> Ordering {
        a.0.cmp(&b.0).then(b.1.cmp(&a.1))
    }

    #[test]
    fn keys_of_every_length_come_back_in_internal_key_order() {
        // All nodes in buckets; a small main region then buckets; all in the main region.
        for capacity in [0, 4096, 1 << 20] {
            keys_come_back_in_order(capacity);
        }
    }

    fn keys_come_back_in_order(capacity: usize) {
        let list = SkipList::with_capacity(capacity, None).unwrap();
        let mut keys: Vec<(Vec<u8>, u64)> = Vec::new();
        let bases: [&[u8]; 8] = [
            b"",
            b"a",
            b"a\0",
            b"0000000000000001",
            b"0000000000000001\0",
            b"00000000000000010",
            b"000000000000000\xff",
            &[0xff; 40],
        ];
        for (i, base) in bases.iter().enumerate() {
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 40] {
                let k: Vec<u8> = base
                    .iter()
                    .copied()
                    .cycle()
                    .take(len.min(base.len() * 3))
                    .collect();
                for t in [1u64, 7 << 8, (7 << 8) | 1, u64::MAX >> 1] {
                    keys.push((k.clone(), t + i as u64));
                }
            }
        }
        keys.sort_by(reference_order);
        keys.dedup();
        // Insert in a scrambled order, with values that name their key.
        let value_of = |i: usize| -> Vec<u8> { (0..i % 37).map(|b| (b * 7 + i) as u8).collect() };
        let mut order: Vec<usize> = (0..keys.len()).collect();
        let mut s = 12345u64;
        for i in (1..order.len()).rev() {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            order.swap(i, (s >> 33) as usize % (i + 1));
        }
        for &i in &order {
            let (k, t) = &keys[i];
            list.insert(k, *t, &value_of(i)).unwrap();
        }
        assert_eq!(list.len(), keys.len());
        let mut c = list.first();
        for (i, (k, t)) in keys.iter().enumerate() {
            assert!(c.valid());
            let (gk, gt, gv) = internal(&list, c);
            assert_eq!((&gk, gt), (k, *t), "position {i}");
            assert_eq!(gv, value_of(i));
            assert!(list.user_key_is(c, k));
            let mut other = k.clone();
            other.push(0);
            assert!(!list.user_key_is(c, &other));
            // Seeking each key lands on it; seeking just past its trailer lands on the next.
            assert_eq!(list.seek(&SearchKey::new(k, *t)), c);
            c = list.next_of(c);
        }
        assert_eq!(c, Cursor::END);
        assert!(!list.seek(&SearchKey::new(&[0xff; 41], u64::MAX)).valid());
    }

    #[test]
    fn large_nodes_get_their_own_buckets() {
        let list = SkipList::with_capacity(4096, None).unwrap();
        let big = vec![0xabu8; MIN_BUCKET_WORDS * 8 * 3 + 5];
        list.insert(b"b", 1, &big).unwrap();
        list.insert(b"a", 1, b"small").unwrap();
        list.insert(b"c", 1, &big[..100]).unwrap();
        let c = list.first();
        assert_eq!(internal(&list, c).2, b"small");
        let c = list.next_of(c);
        assert_eq!(internal(&list, c).2, big);
        let c = list.next_of(c);
        assert_eq!(internal(&list, c).2, &big[..100]);
        assert!(list.arena_bytes() as usize >= big.len());
    }

    #[test]
    fn readers_see_whole_nodes_while_one_thread_inserts() {
        let list = std::sync::Arc::new(SkipList::with_capacity(1 << 20, None).unwrap());
        let n = 20_000u64;
        let writer = {
            let list = list.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    // An odd multiplier permutes the u64s: unique keys in a scrambled order.
                    let k = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
                    list.insert(&k, i, &k.repeat(3)).unwrap();
                }
            })
        };
        let mut rounds = 0;
        while !writer.is_finished() || rounds < 2 {
            rounds += 1;
            let mut c = list.first();
            let mut prev: Option<Vec<u8>> = None;
            while c.valid() {
                let (k, _, v) = internal(&list, c);
                assert_eq!(v, k.repeat(3), "a reader saw a half-written node");
                if let Some(p) = &prev {
                    assert!(p < &k, "order broken");
                }
                prev = Some(k);
                c = list.next_of(c);
            }
        }
        writer.join().unwrap();
        assert_eq!(list.len() as u64, n);
    }

    #[test]
    fn a_list_on_reused_regions_holds_only_its_own_entries() {
        let cache = Arc::new(RegionCache::new(2));
        let capacity = 1 << 20;
        // Keys of 8 and 24 bytes (the second list: 24 and 8, other keys in another order),
        // values of 1..=40 bytes, so the second list's nodes and records land on the first's
        // words at other offsets: stale keys, lengths, links and value tails lie under them.
        let key = |salt: u8, i: u64| {
            let mul = if salt == 0xaa {
                0x9E37_79B9_7F4A_7C15u64
            } else {
                0xD6E8_FEB8_6659_FD93
            };
            let k = i.wrapping_mul(mul).to_be_bytes();
            if i.is_multiple_of(2) == (salt == 0xaa) {
                k.to_vec()
            } else {
                k.repeat(3)
            }
        };
        let fill = |list: &SkipList, salt: u8, n: u64| {
            for i in 0..n {
                let value = vec![salt; 1 + ((i + u64::from(salt)) % 40) as usize];
                list.insert(&key(salt, i), i, &value).unwrap();
            }
        };
        let first = SkipList::with_capacity(capacity, Some(Arc::clone(&cache))).unwrap();
        fill(&first, 0xaa, 3000);
        assert_eq!(cache.len(), 0);
        drop(first);
        assert_eq!(cache.len(), 2, "both main regions are kept");
        let touched = cache.resident_bytes();
        assert!(
            touched >= 3000 * 6 * 8 && touched < 2 * capacity as u64,
            "{touched}"
        );
        // Another capacity does not take them.
        let other = SkipList::with_capacity(capacity * 4, Some(Arc::clone(&cache))).unwrap();
        assert_eq!(cache.len(), 2);
        let second = SkipList::with_capacity(capacity, Some(Arc::clone(&cache))).unwrap();
        assert_eq!(cache.len(), 0, "the second list reuses both regions");
        fill(&second, 0x55, 1000);
        let mut c = second.first();
        let mut seen = Vec::new();
        while c.valid() {
            let (k, _, v) = internal(&second, c);
            assert!(v.iter().all(|&b| b == 0x55), "a stale value came back");
            seen.push(k);
            c = second.next_of(c);
        }
        let mut want: Vec<Vec<u8>> = (0..1000).map(|i| key(0x55, i)).collect();
        want.sort();
        assert_eq!(seen, want, "exactly the second list's keys, in order");
        assert_eq!(second.len(), 1000);
        assert!(
            second.stale_resident_bytes() > 0,
            "the first list touched more"
        );
        // Every key of the second list is found; no key of the first list is.
        for i in 0..3000 {
            if i < 1000 {
                let k = key(0x55, i);
                let c = second.seek(&SearchKey::new(&k, u64::MAX));
                assert!(c.valid() && second.user_key_is(c, &k));
            }
            let gone = key(0xaa, i);
            let c = second.seek(&SearchKey::new(&gone, u64::MAX));
            assert!(!c.valid() || !second.user_key_is(c, &gone));
        }
        // The second list used less than the first: the resident part is still the first's.
        drop(second);
        assert_eq!((cache.len(), cache.resident_bytes()), (2, touched));
        // At most `keep` regions are kept: the other list's are unmapped.
        drop(other);
        assert_eq!((cache.len(), cache.resident_bytes()), (2, touched));
    }
}
