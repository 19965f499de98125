//! ListDB's persistent skiplists in one PM heap (Kim et al., "ListDB: Union of Write-Ahead
//! Logs and Persistent SkipLists for Incremental Checkpointing on Persistent Memory", OSDI
//! 2022), as FluidKV describes and measures it (Lu et al., PVLDB 17(6), 2024, sections 2.2.2
//! and 6.1): the `listdb` baseline.
//!
//! * **Index-unified logging.** A write appends its nodes to ONE shared log in the pool (a
//!   chain of chunks) and is durable once the log's tail word passes it. A log entry IS a list
//!   node: key, value, sequence and a next word that is unused while the entry is only logged.
//! * **Flush = linking.** A full memtable (a DRAM index over its log entries) becomes an **L0
//!   list** by setting the next words of its entries in key order and publishing the first one
//!   in a slot of the L0 directory: no key or value is copied.
//! * **Zipper compaction.** L0 lists are merged into the single **L1 list** in place, oldest
//!   first, by pointer splicing: a forward pass finds where each run of consecutive L0 nodes
//!   goes in L1 (its gap), a backward pass splices the gaps from the last to the first. No key
//!   or value is copied; nothing is ever freed (see "Space").
//!
//! The upper levels of every list are DRAM ([`Towers`]: one node in eight, sampled by a hash
//! of its offset), rebuilt at open by walking the lists; the paper keeps them in PM.
//!
//! # Format (little-endian; `docs/FORMATS.md`, "ListDB heap")
//!
//! ```text
//! meta chunk (named root "listdb-heap"):
//!   0   magic "TKVLSTDB" | 8 own offset | 16 masked crc32c(0..16) u32 | zero to 64
//!   64  first log chunk word      (checked: value = chunk offset)
//!   72  tail word                 (checked: value = log position after the last complete batch)
//!   80  replay word               (checked: value = log position of the first entry in no list)
//!   88  L1 head word              (checked: value = first node of L1, 0 = empty)
//!   96  L0 slots, 32 x 16 bytes:  head word (checked: first node, 0 = free slot) |
//!                                 end word (checked: log position after the list's entries)
//! log chunk:
//!   0   magic "TKVLSTCK" | 8 own offset | 16 next chunk word (checked, 0 = last) |
//!   24  log position of byte 64 u64 | 32 masked crc32c(0..16, 24..32) u32 | zero to 64
//!   64  entries, then an end word (all ones) unless they fill the chunk
//! entry / node (8-aligned, never across chunks):
//!   0   next word (checked: value = next node's offset, 0 = the end)
//!   8   trailer u64 (sequence << 8 | type) | 16 key length u32 | 20 value length u32
//!   24  key crc u32: masked crc32c(own offset u64, bytes 8..24, key) | 28 value crc u32
//!   32  key | value | zero to a multiple of 8
//! ```
//!
//! A checked word is the file system's: a 48-bit value with a 16-bit check of its own address
//! and value above it, so a flipped bit or a word of another place is reported as corruption,
//! never followed. A **log position** counts the bytes of entries appended since the heap was
//! created (each chunk records the position of its first entry byte), so positions order the
//! log even though chunks are not allocated in address order.
//!
//! # Persist points and the invariant at each
//!
//! The heap's content is: L1's nodes, the nodes of the L0 lists whose slots are not free, and
//! the log entries between the replay position (at least the end of every L0 list) and the
//! tail position.
//!
//! * **append** (a write batch): its entries are written past the tail (a new chunk, zeroed,
//!   with its header persisted and then linked from the last chunk, when one does not fit; the
//!   end word ends the chunk left) and persisted with one fence; then the tail word moves past
//!   them (8-byte store, persisted). Before that store the batch is not in the log (its bytes
//!   are overwritten by the next append); after it, all of it is: a batch is all or nothing.
//! * **flush** (a memtable's entries into a free L0 slot): the entries' next words are set in
//!   key order and persisted (one fence; the entries are in no list yet, so any subset is
//!   harmless); the slot's end word is persisted; then its head word (8-byte store, persisted)
//!   publishes the list; then the replay word moves to the list's end. A crash before the head
//!   word leaves the entries logged (replayed into a memtable again); after it, recovery replays
//!   from the greatest end of a published list, so no entry is in both.
//! * **zipper** (an L0 list X into L1): the forward pass only reads. Each gap is a run of
//!   consecutive X nodes `first..last` that goes between L1 neighbours `p` and `q`; from the
//!   last gap to the first: `last.next = q` (persisted), then `p.next = first` (persisted).
//!   Before the first store of a gap, every later gap is already in L1 and `last`'s old next is
//!   the first node of the next gap, so X's chain reaches all of X; after it, `last` leads into
//!   L1 at `q`, which reaches every later gap; after the second, L1 holds the gap. At every
//!   instant both chains are sorted and X's chain holds all of X (and some of L1): readers of X
//!   and of L1 see what they must, a crash leaves a state that reads correctly, and zipping X
//!   again is a no-op for the spliced gaps (a node found already in L1 ends the forward pass:
//!   everything after it on X's chain is in L1). Last, X's slot is freed (head word 0,
//!   persisted).
//!
//! A torn store is the old or the new 8-byte word, each a complete state above. Recovery only
//! reads, but for two repairs made once the allocator is rebuilt ([`HeapOwner::into_heap`]):
//! a chunk a crashed append linked past the tail's chunk is unlinked (it was not reported, so
//! it is free), and nothing else is written.
//!
//! # Space
//!
//! Nothing in the heap is ever freed: superseded versions and tombstones stay in L1, so the
//! heap grows with every write (ListDB recycles lazily; the engine's `listdb` is a baseline for
//! throughput and DRAM, and says so in its design page). Snapshots are free: every version
//! stays, and a read at sequence s finds the first node at or after (key, s).
//!
//! # Concurrency
//!
//! One appender at a time (the front end's write lock); the flush thread links, publishes and
//! zips; readers run concurrently with all of them. Every next word is stored with Release and
//! loaded with Acquire, and a node is complete before the store that makes it reachable.

#[cfg(test)]
mod tests;

use crate::format::{compare_internal, OrderedKey, SequenceNumber, TRAILER_LEN};
use crate::fs::{decode_checked, encode_checked, PmFsOpen, PmOwner};
use crate::iterator::InternalIterator;
use crate::util::crc::{crc32c, mask, unmask};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::cmp::Ordering as Cmp;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tierkv_pm::PmPool;

/// The heap's named root in the pool's root directory.
pub(crate) const ROOT_NAME: &str = "listdb-heap";
/// Slots of the L0 directory: at most this many L0 lists at once.
pub(crate) const L0_SLOTS: usize = 32;

const META_MAGIC: u64 = u64::from_le_bytes(*b"TKVLSTDB");
const CHUNK_MAGIC: u64 = u64::from_le_bytes(*b"TKVLSTCK");
const CHUNK_HEADER: u64 = 64;
const NODE_HEADER: usize = 32;
const FIRST_CHUNK_AT: u64 = 64;
const TAIL_AT: u64 = 72;
const REPLAY_AT: u64 = 80;
const L1_HEAD_AT: u64 = 88;
const SLOTS_AT: u64 = 96;
/// The largest value a checked word holds.
const VALUE_MAX: u64 = (1 << 48) - 1;
/// The word that ends a chunk's entries: its value is `VALUE_MAX`, which no node offset is
/// (the pool is smaller), so no entry's first word can be it. (Zero cannot serve: a checked
/// word of value 0 is zero whenever its 16-bit check is.)
const CHUNK_END: u64 = u64::MAX;

/// Whether the node at `at` has a tower in the DRAM levels (one in eight).
fn sampled(at: u64) -> bool {
    at.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61 == 0
}

fn le64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

fn le32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

/// An internal key ordered as the engine orders them.
type IKey = OrderedKey<Vec<u8>>;

/// One entry to append: sequence, type byte, key, value.
pub(crate) struct NewEntry<'a> {
    pub seq: SequenceNumber,
    pub kind: u8,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// The bytes a node of `key_len` and `value_len` takes.
pub(crate) fn node_bytes(key_len: usize, value_len: usize) -> u64 {
    (NODE_HEADER + key_len + value_len).next_multiple_of(8) as u64
}

/// The DRAM upper levels of one list: sampled internal key -> node offset.
#[derive(Default)]
pub(crate) struct Towers {
    map: RwLock<BTreeMap<IKey, u64>>,
    key_bytes: AtomicU64,
}

impl Towers {
    fn insert(&self, ikey: &[u8], at: u64) {
        if self
            .map
            .write()
            .insert(OrderedKey(ikey.to_vec()), at)
            .is_none()
        {
            self.key_bytes
                .fetch_add(ikey.len() as u64 + 48, Ordering::Relaxed);
        }
    }

    /// The greatest sampled node below `target`.
    fn below(&self, target: &[u8]) -> Option<u64> {
        self.map
            .read()
            .range(..OrderedKey(target.to_vec()))
            .next_back()
            .map(|(_, &at)| at)
    }

    /// The greatest sampled node below `target`, with its internal key.
    fn below_entry(&self, target: &[u8]) -> Option<(Vec<u8>, u64)> {
        self.map
            .read()
            .range(..OrderedKey(target.to_vec()))
            .next_back()
            .map(|(k, &at)| (k.0.clone(), at))
    }

    /// DRAM the towers take, roughly.
    pub(crate) fn bytes(&self) -> u64 {
        self.key_bytes.load(Ordering::Relaxed)
    }
}

/// One list: where its head word is, and its DRAM levels.
pub(crate) struct PList {
    /// The pool offset of its head word (a slot's head word, or L1's).
    head_at: u64,
    /// The L0 slot it is published in (`None`: L1).
    slot: Option<usize>,
    towers: Towers,
    entries: AtomicU64,
    /// Bytes of its log entries.
    bytes: AtomicU64,
}

impl PList {
    /// Entries in the list (for an L0 list, those it was published with).
    pub(crate) fn entries(&self) -> u64 {
        self.entries.load(Ordering::Relaxed)
    }

    /// DRAM its upper levels take.
    pub(crate) fn dram_bytes(&self) -> u64 {
        self.towers.bytes()
    }
}

/// A node's fixed fields.
#[derive(Clone, Copy, Debug)]
struct NodeHead {
    next: u64,
    trailer: u64,
    key_len: u32,
    value_len: u32,
    key_crc: u32,
    value_crc: u32,
}

/// The appending side of the log.
struct Tail {
    /// The chunk being filled.
    chunk: u64,
    /// The log position of the chunk's first entry byte.
    chunk_start: u64,
    /// The log position after the last complete batch.
    pos: u64,
}

/// The lists readers see: the L0 lists (oldest first) and L1.
#[derive(Clone)]
pub(crate) struct ListSet {
    pub l0: Vec<Arc<PList>>,
    pub l1: Arc<PList>,
}

/// An opened heap and the offsets of its log entries to replay (in log order).
pub(crate) type OpenedHeap = (Arc<ListHeap>, Vec<u64>);

/// A node read whole: offset, internal key, value.
pub(crate) type Node = (u64, Vec<u8>, Vec<u8>);

/// What one zipper compaction did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Zipped {
    /// Entries of the L0 list.
    pub entries: u64,
    /// Bytes of their log entries.
    pub bytes: u64,
    /// Next-word bytes stored (16 per gap).
    pub spliced: u64,
    /// Its wall time.
    pub micros: u64,
}

/// Counters of the heap's PM writes, for the engine's statistics.
#[derive(Default)]
pub(crate) struct HeapCounters {
    /// Bytes of log entries appended.
    pub logged: AtomicU64,
    /// Next words set by flushes (8 bytes each).
    pub linked: AtomicU64,
    /// Next words set by zipper compactions (8 bytes each).
    pub spliced: AtomicU64,
    /// Zipper compactions (one per L0 list merged).
    pub zips: AtomicU64,
}

/// The heap (module docs). `Send + Sync`.
pub(crate) struct ListHeap {
    pool: Arc<PmPool>,
    location: String,
    meta: u64,
    tail: Mutex<Tail>,
    /// Chunk start positions -> chunk offsets, for replay.
    chunks: RwLock<BTreeMap<u64, u64>>,
    lists: RwLock<ListSet>,
    /// The greatest sequence number in the heap at open (lists and replayed log).
    max_seq_at_open: u64,
    pub(crate) counters: HeapCounters,
}

/// Opens or creates the heap under the pool's open protocol (`crate::fs::pm_open`).
pub(crate) struct HeapOwner {
    pool: Arc<PmPool>,
    location: String,
    meta: u64,
    /// What `open` found: chunk chain (start position, offset), tail, replay, L1 head, slots.
    found: Option<Found>,
}

struct Found {
    chunks: Vec<(u64, u64)>,
    /// Chunks past the tail's chunk that a crashed append linked (not reported: free).
    dangling_from: Option<u64>,
    tail: u64,
    replay: u64,
    slots: Vec<(usize, u64, u64)>,
}

impl HeapOwner {
    pub(crate) fn new(pool: Arc<PmPool>, location: &str) -> Self {
        HeapOwner {
            pool,
            location: location.to_string(),
            meta: 0,
            found: None,
        }
    }

    fn bad(&self, why: String) -> Error {
        Error::corruption(format!("{} (ListDB heap)", self.location), why)
    }

    fn word(&self, at: u64) -> Result<u64> {
        let w = self.pool.load_u64(at)?;
        decode_checked(at, w).ok_or_else(|| self.bad(format!("word at {at} fails its check")))
    }

    fn check_chunk(&self, at: u64) -> Result<()> {
        if at == 0 || !at.is_multiple_of(self.pool.chunk_size()) || at >= self.pool.size() {
            return Err(self.bad(format!("chunk offset {at} is not a chunk of the pool")));
        }
        Ok(())
    }

    /// Reads the meta chunk and the chunk chain (no write).
    fn scan(&mut self, meta: u64) -> Result<Vec<u64>> {
        self.check_chunk(meta)?;
        let mut head = [0u8; 20];
        self.pool.read(meta, &mut head)?;
        if le64(&head, 0) != META_MAGIC
            || le64(&head, 8) != meta
            || unmask(le32(&head, 16)) != crc32c(&head[..16])
        {
            return Err(self.bad("meta chunk: bad magic, offset or checksum".to_string()));
        }
        let tail = self.word(meta + TAIL_AT)?;
        let replay = self.word(meta + REPLAY_AT)?;
        let mut slots = Vec::new();
        for i in 0..L0_SLOTS {
            let at = meta + SLOTS_AT + 16 * i as u64;
            let head = self.word(at)?;
            if head != 0 {
                slots.push((i, head, self.word(at + 8)?));
            }
        }
        let mut owned = vec![meta];
        let mut chunks = Vec::new();
        let mut dangling_from = None;
        let mut next = self.word(meta + FIRST_CHUNK_AT)?;
        let mut expect_start = 0u64;
        while next != 0 {
            self.check_chunk(next)?;
            let mut h = [0u8; 36];
            self.pool.read(next, &mut h)?;
            let mut covered = h[..16].to_vec();
            covered.extend_from_slice(&h[24..32]);
            if le64(&h, 0) != CHUNK_MAGIC
                || le64(&h, 8) != next
                || unmask(le32(&h, 32)) != crc32c(&covered)
            {
                return Err(self.bad(format!("log chunk at {next}: bad header")));
            }
            let start = le64(&h, 24);
            if start < expect_start || owned.len() as u64 > self.pool.chunk_count() {
                return Err(self.bad(format!("log chunk at {next}: out of order")));
            }
            if start > tail && dangling_from.is_none() {
                // Linked by an append a crash cut before its tail word: not part of the heap.
                dangling_from = chunks.last().map(|&(_, at): &(u64, u64)| at);
                break;
            }
            owned.push(next);
            chunks.push((start, next));
            expect_start = start;
            next = decode_checked(next + 16, le64(&h, 16)).ok_or_else(|| {
                self.bad(format!("log chunk at {next}: next word fails its check"))
            })?;
        }
        self.found = Some(Found {
            chunks,
            dangling_from,
            tail,
            replay,
            slots,
        });
        Ok(owned)
    }

    /// The heap, once the pool's allocator is rebuilt: unlinks chunks a crashed append left
    /// past the tail's chunk (when `writable`), then walks every list to rebuild its DRAM
    /// levels, checking order and checksums. Returns the heap and the log entries to replay
    /// (offsets, in log order).
    pub(crate) fn into_heap(self, writable: bool) -> Result<OpenedHeap> {
        let found = self.found.ok_or_else(|| {
            Error::InvalidArgument("ListDB heap neither opened nor created".into())
        })?;
        if let (Some(last), true) = (found.dangling_from, writable) {
            self.pool
                .store_u64_persist(last + 16, encode_checked(last + 16, 0))?;
        }
        let (chunk_start, chunk) = found.chunks.last().copied().unwrap_or((0, 0));
        let heap = ListHeap {
            pool: Arc::clone(&self.pool),
            location: self.location.clone(),
            meta: self.meta,
            tail: Mutex::new(Tail {
                chunk,
                chunk_start,
                pos: found.tail,
            }),
            chunks: RwLock::new(found.chunks.iter().copied().collect()),
            lists: RwLock::new(ListSet {
                l0: Vec::new(),
                l1: Arc::new(PList {
                    head_at: self.meta + L1_HEAD_AT,
                    slot: None,
                    towers: Towers::default(),
                    entries: AtomicU64::new(0),
                    bytes: AtomicU64::new(0),
                }),
            }),
            max_seq_at_open: 0,
            counters: HeapCounters::default(),
        };
        heap.open_lists(found.slots, found.replay)
    }

    fn create_meta(&mut self) -> Result<u64> {
        let meta = self.pool.allocate_zeroed_chunk(CHUNK_HEADER)?;
        let mut head = [0u8; 128];
        head[0..8].copy_from_slice(&META_MAGIC.to_le_bytes());
        head[8..16].copy_from_slice(&meta.to_le_bytes());
        let crc = mask(crc32c(&head[..16]));
        head[16..20].copy_from_slice(&crc.to_le_bytes());
        for at in [FIRST_CHUNK_AT, TAIL_AT, REPLAY_AT, L1_HEAD_AT] {
            let w = encode_checked(meta + at, 0);
            head[at as usize..at as usize + 8].copy_from_slice(&w.to_le_bytes());
        }
        self.pool.write(meta, &head)?;
        let mut slots = vec![0u8; 16 * L0_SLOTS];
        for i in 0..L0_SLOTS {
            let at = SLOTS_AT + 16 * i as u64;
            slots[16 * i..16 * i + 8].copy_from_slice(&encode_checked(meta + at, 0).to_le_bytes());
            slots[16 * i + 8..16 * i + 16]
                .copy_from_slice(&encode_checked(meta + at + 8, 0).to_le_bytes());
        }
        self.pool.write(meta + SLOTS_AT, &slots)?;
        persist(&self.pool, &[(meta, SLOTS_AT + 16 * L0_SLOTS as u64)])?;
        Ok(meta)
    }
}

impl PmOwner for HeapOwner {
    fn root_name(&self) -> &str {
        ROOT_NAME
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        if self.pool.size() > VALUE_MAX {
            return Err(Error::InvalidArgument(format!(
                "{}: the ListDB heap needs a pool below 256 TiB",
                self.location
            )));
        }
        self.meta = root;
        self.scan(root)
    }

    fn holdings(&self) -> Option<String> {
        let f = self.found.as_ref()?;
        (f.tail > 0).then(|| format!("{} bytes of ListDB log", f.tail))
    }

    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        let _ = how;
        Ok(())
    }

    fn create(&mut self) -> Result<u64> {
        self.meta = self.create_meta()?;
        self.found = Some(Found {
            chunks: Vec::new(),
            dangling_from: None,
            tail: 0,
            replay: 0,
            slots: Vec::new(),
        });
        Ok(self.meta)
    }
}

/// Writes back `ranges` and fences (and `msync`s where the pool's mode needs it).
fn persist(pool: &PmPool, ranges: &[(u64, u64)]) -> Result<()> {
    pool.flush_ranges(ranges)?;
    pool.fence();
    if pool.msync_on_persist() {
        for &(at, len) in ranges {
            pool.msync(at, len)?;
        }
    }
    Ok(())
}

impl ListHeap {
    fn bad(&self, why: String) -> Error {
        Error::corruption(format!("{} (ListDB heap)", self.location), why)
    }

    /// The greatest sequence number found at open.
    pub(crate) fn max_seq_at_open(&self) -> u64 {
        self.max_seq_at_open
    }

    /// The log position after the last complete batch.
    pub(crate) fn tail_position(&self) -> u64 {
        self.tail.lock().pos
    }

    /// The lists readers see now.
    pub(crate) fn lists(&self) -> ListSet {
        self.lists.read().clone()
    }

    /// The checked word at `at`, decoded.
    fn word(&self, at: u64) -> Result<u64> {
        let w = self.pool.load_u64(at)?;
        decode_checked(at, w).ok_or_else(|| self.bad(format!("word at {at} fails its check")))
    }

    /// The next node after the word at `at` (a node's offset or a head word's address).
    fn next_of(&self, at: u64) -> Result<u64> {
        let next = self.word(at)?;
        if next != 0
            && (!next.is_multiple_of(8)
                || next < self.pool.chunk_size()
                || next + NODE_HEADER as u64 > self.pool.size())
        {
            return Err(self.bad(format!("node at {at}: next {next} outside the pool")));
        }
        Ok(next)
    }

    fn parse_head(&self, at: u64, h: &[u8]) -> Result<NodeHead> {
        let next = decode_checked(at, le64(h, 0))
            .ok_or_else(|| self.bad(format!("node at {at}: next word fails its check")))?;
        Ok(NodeHead {
            next,
            trailer: le64(h, 8),
            key_len: le32(h, 16),
            value_len: le32(h, 20),
            key_crc: le32(h, 24),
            value_crc: le32(h, 28),
        })
    }

    /// The internal key and fixed fields of the node at `at`, checked.
    fn ikey_of(&self, at: u64) -> Result<(Vec<u8>, NodeHead)> {
        // One read for the header and a short key (a search visits nodes for their keys).
        let mut first = [0u8; NODE_HEADER + 32];
        let n = (first.len() as u64).min(self.pool.size().saturating_sub(at)) as usize;
        if n < NODE_HEADER {
            return Err(self.bad(format!("node at {at} runs past the pool")));
        }
        self.pool.read(at, &mut first[..n])?;
        let h = self.parse_head(at, &first[..NODE_HEADER])?;
        let chunk = at - at % self.pool.chunk_size();
        let end = at + node_bytes(h.key_len as usize, h.value_len as usize);
        if at < chunk + CHUNK_HEADER || end > chunk + self.pool.chunk_size() {
            return Err(self.bad(format!("node at {at} runs past its chunk")));
        }
        let mut k = vec![0u8; h.key_len as usize + TRAILER_LEN];
        let kl = h.key_len as usize;
        if NODE_HEADER + kl <= n {
            k[..kl].copy_from_slice(&first[NODE_HEADER..NODE_HEADER + kl]);
        } else {
            self.pool.read(at + NODE_HEADER as u64, &mut k[..kl])?;
        }
        if unmask(h.key_crc) != key_crc(at, &h, &k[..h.key_len as usize]) {
            return Err(self.bad(format!("node at {at}: key fails its checksum")));
        }
        k[h.key_len as usize..].copy_from_slice(&h.trailer.to_le_bytes());
        Ok((k, h))
    }

    /// The node at `at` whole, checked.
    fn node(&self, at: u64) -> Result<(Vec<u8>, Vec<u8>, NodeHead)> {
        let (ikey, h) = self.ikey_of(at)?;
        let v = self.value_with(at, &h)?;
        Ok((ikey, v, h))
    }

    /// The value of the node at `at` whose fixed fields are `h` (read and checked already).
    fn value_with(&self, at: u64, h: &NodeHead) -> Result<Vec<u8>> {
        let mut v = vec![0u8; h.value_len as usize];
        self.pool
            .read(at + NODE_HEADER as u64 + u64::from(h.key_len), &mut v)?;
        if unmask(h.value_crc) != crc32c(&v) {
            return Err(self.bad(format!("node at {at}: value fails its checksum")));
        }
        Ok(v)
    }

    /// The value of the node at `at`, checked.
    pub(crate) fn value_of(&self, at: u64) -> Result<Vec<u8>> {
        Ok(self.node(at)?.1)
    }

    /// The node at `at` as (internal key, value), checked.
    pub(crate) fn entry_of(&self, at: u64) -> Result<(Vec<u8>, Vec<u8>)> {
        let (k, v, _) = self.node(at)?;
        Ok((k, v))
    }

    /// The log entries from position `from` to the tail, in log order (offsets), checked.
    pub(crate) fn log_entries(&self, from: u64) -> Result<Vec<u64>> {
        let tail = self.tail.lock().pos;
        let mut out = Vec::new();
        if from >= tail {
            return Ok(out);
        }
        let starts: Vec<(u64, u64)> = {
            let chunks = self.chunks.read();
            let first = chunks.range(..=from).next_back().map_or(0, |(&s, _)| s);
            chunks.range(first..).map(|(&s, &c)| (s, c)).collect()
        };
        let cs = self.pool.chunk_size();
        for (i, &(start, chunk)) in starts.iter().enumerate() {
            let chunk_end_pos = start + (cs - CHUNK_HEADER);
            let mut pos = from.max(start);
            // Entries end at an end word, the chunk's end, the next chunk's start or the tail.
            let limit = starts
                .get(i + 1)
                .map_or(tail, |&(s, _)| s.min(tail))
                .min(chunk_end_pos);
            while pos < limit {
                let at = chunk + CHUNK_HEADER + (pos - start);
                if self.pool.load_u64(at)? == CHUNK_END {
                    if i + 1 == starts.len() {
                        return Err(self.bad(format!("log entry at {at}: missing before the tail")));
                    }
                    break;
                }
                let (_, h) = self.ikey_of(at)?;
                out.push(at);
                pos += node_bytes(h.key_len as usize, h.value_len as usize);
            }
            if pos >= tail {
                break;
            }
        }
        Ok(out)
    }

    /// Appends one batch's entries to the log and makes them durable (module docs: append);
    /// returns their offsets. One appender at a time.
    pub(crate) fn append(&self, entries: &[NewEntry<'_>]) -> Result<Vec<u64>> {
        let cs = self.pool.chunk_size();
        if let Some(e) = entries
            .iter()
            .find(|e| node_bytes(e.key.len(), e.value.len()) > cs - CHUNK_HEADER)
        {
            return Err(Error::InvalidArgument(format!(
                "an entry of {} bytes does not fit a PM chunk of {cs} bytes",
                node_bytes(e.key.len(), e.value.len())
            )));
        }
        let mut tail = self.tail.lock();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut out = Vec::with_capacity(entries.len());
        let (mut chunk, mut chunk_start, mut pos) = (tail.chunk, tail.chunk_start, tail.pos);
        let mut new_chunks = Vec::new();
        for e in entries {
            let size = node_bytes(e.key.len(), e.value.len());
            let used = pos - chunk_start;
            if chunk == 0 || CHUNK_HEADER + used + size > cs {
                if chunk != 0 && CHUNK_HEADER + used < cs {
                    // The chunk's entries end here.
                    let at = chunk + CHUNK_HEADER + used;
                    self.pool.store_u64(at, CHUNK_END)?;
                    ranges.push((at, 8));
                }
                let start = if chunk == 0 {
                    pos
                } else {
                    chunk_start + (cs - CHUNK_HEADER)
                };
                let fresh = self.new_chunk(start)?;
                // Linked from the chunk before it (or the meta chunk), persisted before the
                // batch's entries are.
                let link_at = if chunk == 0 {
                    self.meta + FIRST_CHUNK_AT
                } else {
                    chunk + 16
                };
                self.pool
                    .store_u64_persist(link_at, encode_checked(link_at, fresh))?;
                new_chunks.push((start, fresh));
                chunk = fresh;
                chunk_start = start;
                pos = start;
            }
            let at = chunk + CHUNK_HEADER + (pos - chunk_start);
            let bytes = encode_node(at, e);
            self.pool.write(at, &bytes)?;
            ranges.push((at, bytes.len() as u64));
            out.push(at);
            pos += size;
        }
        persist(&self.pool, &ranges)?;
        let tail_at = self.meta + TAIL_AT;
        self.pool
            .store_u64_persist(tail_at, encode_checked(tail_at, pos))?;
        if !new_chunks.is_empty() {
            self.chunks.write().extend(new_chunks);
        }
        let logged: u64 = ranges.iter().map(|r| r.1).sum();
        self.counters.logged.fetch_add(logged, Ordering::Relaxed);
        *tail = Tail {
            chunk,
            chunk_start,
            pos,
        };
        Ok(out)
    }

    /// A new log chunk whose first entry byte is at log position `start`, its header persisted.
    fn new_chunk(&self, start: u64) -> Result<u64> {
        let at = self.pool.allocate_zeroed_chunk(CHUNK_HEADER)?;
        let mut h = [0u8; CHUNK_HEADER as usize];
        h[0..8].copy_from_slice(&CHUNK_MAGIC.to_le_bytes());
        h[8..16].copy_from_slice(&at.to_le_bytes());
        h[16..24].copy_from_slice(&encode_checked(at + 16, 0).to_le_bytes());
        h[24..32].copy_from_slice(&start.to_le_bytes());
        let mut covered = h[..16].to_vec();
        covered.extend_from_slice(&h[24..32]);
        let crc = mask(crc32c(&covered));
        h[32..36].copy_from_slice(&crc.to_le_bytes());
        self.pool.write(at, &h)?;
        persist(&self.pool, &[(at, CHUNK_HEADER)])?;
        Ok(at)
    }

    /// Links `nodes` (log entries in no list, in internal-key order) into a new L0 list ending
    /// at log position `end`, and publishes it (module docs: flush). `NoSpace` when every L0
    /// slot is taken (a zipper compaction frees them).
    /// `bytes`: the bytes of the nodes' log entries (for the statistics).
    pub(crate) fn publish_l0(
        &self,
        nodes: &[(Vec<u8>, u64)],
        end: u64,
        bytes: u64,
    ) -> Result<Arc<PList>> {
        let slot = {
            let lists = self.lists.read();
            (0..L0_SLOTS)
                .find(|i| lists.l0.iter().all(|l| l.slot != Some(*i)))
                .ok_or_else(|| Error::NoSpace("every ListDB L0 slot holds a list".to_string()))?
        };
        let towers = Towers::default();
        let mut ranges = Vec::with_capacity(nodes.len());
        for (i, (ikey, at)) in nodes.iter().enumerate() {
            let next = nodes.get(i + 1).map_or(0, |n| n.1);
            self.pool.store_u64(*at, encode_checked(*at, next))?;
            ranges.push((*at, 8));
            if sampled(*at) {
                towers.insert(ikey, *at);
            }
        }
        persist(&self.pool, &ranges)?;
        let head_at = self.meta + SLOTS_AT + 16 * slot as u64;
        self.pool
            .store_u64_persist(head_at + 8, encode_checked(head_at + 8, end))?;
        let first = nodes.first().map_or(0, |n| n.1);
        let list = Arc::new(PList {
            head_at,
            slot: Some(slot),
            towers,
            entries: AtomicU64::new(nodes.len() as u64),
            bytes: AtomicU64::new(bytes),
        });
        if first != 0 {
            self.pool
                .store_u64_persist(head_at, encode_checked(head_at, first))?;
            self.lists.write().l0.push(Arc::clone(&list));
        }
        let replay_at = self.meta + REPLAY_AT;
        self.pool
            .store_u64_persist(replay_at, encode_checked(replay_at, end))?;
        self.counters
            .linked
            .fetch_add(8 * nodes.len() as u64, Ordering::Relaxed);
        Ok(list)
    }

    /// Zips every L0 list into L1, oldest first (module docs: zipper); returns what each zip
    /// did.
    #[cfg(test)]
    pub(crate) fn zip_all(&self) -> Result<Vec<Zipped>> {
        let l0 = self.lists.read().l0.clone();
        l0.iter().map(|x| self.zip(x)).collect()
    }

    /// Zips the oldest L0 list into L1, if there is one.
    pub(crate) fn zip_oldest(&self) -> Result<Option<Zipped>> {
        let oldest = self.lists.read().l0.first().cloned();
        oldest.map(|x| self.zip(&x)).transpose()
    }

    /// Zips the L0 list `x` into L1 and frees its slot.
    fn zip(&self, x: &Arc<PList>) -> Result<Zipped> {
        let started = std::time::Instant::now();
        let l1 = Arc::clone(&self.lists.read().l1);
        // Forward pass: gaps (p, first, last, q), reading only. The L1 cursor jumps ahead
        // through L1's towers (a node at a tower is in L1) and walks the bottom level from
        // there, so a zip reads about eight L1 nodes per L0 node, not all of L1.
        let mut gaps: Vec<(u64, u64, u64, u64)> = Vec::new();
        let mut p = l1.head_at;
        let mut p_key: Option<Vec<u8>> = None;
        let mut q = self.next_of(p)?;
        let mut q_key: Option<Vec<u8>> = None;
        let mut n = self.next_of(x.head_at)?;
        let mut spliced_towers: Vec<(Vec<u8>, u64)> = Vec::new();
        while n != 0 {
            let (n_key, n_head) = self.ikey_of(n)?;
            if let Some((t_key, t)) = l1.towers.below_entry(&n_key) {
                let ahead = p_key
                    .as_ref()
                    .is_none_or(|pk| compare_internal(&t_key, pk) == Cmp::Greater);
                if ahead {
                    p = t;
                    p_key = Some(t_key);
                    q = self.next_of(p)?;
                    q_key = None;
                }
            }
            loop {
                if q == 0 || q == n {
                    break;
                }
                if q_key.is_none() {
                    q_key = Some(self.ikey_of(q)?.0);
                }
                if compare_internal(q_key.as_deref().expect("set"), &n_key) != Cmp::Less {
                    break;
                }
                p = q;
                p_key = q_key.take();
                q = self.next_of(q)?;
            }
            if q == n {
                // Already in L1 (a zip a crash cut): so is everything after it on X's chain.
                break;
            }
            match gaps.last_mut() {
                Some(g) if g.0 == p => g.2 = n,
                _ => gaps.push((p, n, n, q)),
            }
            if sampled(n) {
                spliced_towers.push((n_key, n));
            }
            n = n_head.next;
        }
        // Backward pass.
        for &(p, first, last, q) in gaps.iter().rev() {
            self.pool.store_u64_persist(last, encode_checked(last, q))?;
            self.pool.store_u64_persist(p, encode_checked(p, first))?;
        }
        for (k, at) in spliced_towers {
            l1.towers.insert(&k, at);
        }
        l1.entries.fetch_add(x.entries(), Ordering::Relaxed);
        l1.bytes
            .fetch_add(x.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        if let Some(slot) = x.slot {
            let head_at = self.meta + SLOTS_AT + 16 * slot as u64;
            self.pool
                .store_u64_persist(head_at, encode_checked(head_at, 0))?;
        }
        self.lists.write().l0.retain(|l| !Arc::ptr_eq(l, x));
        self.counters
            .spliced
            .fetch_add(16 * gaps.len() as u64, Ordering::Relaxed);
        self.counters.zips.fetch_add(1, Ordering::Relaxed);
        Ok(Zipped {
            entries: x.entries(),
            bytes: x.bytes.load(Ordering::Relaxed),
            spliced: 16 * gaps.len() as u64,
            micros: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        })
    }

    /// Walks a list's chain from its head, checking every node and the order, and calls `f`
    /// with each node's offset, internal key and fixed fields.
    fn walk(&self, head_at: u64, mut f: impl FnMut(u64, &[u8], &NodeHead)) -> Result<u64> {
        let mut at = self.next_of(head_at)?;
        let mut prev: Option<Vec<u8>> = None;
        let mut n = 0u64;
        let limit = self.pool.size() / NODE_HEADER as u64;
        while at != 0 {
            n += 1;
            if n > limit {
                return Err(self.bad(format!("list at {head_at} has a cycle")));
            }
            let (ikey, h) = self.ikey_of(at)?;
            if prev
                .as_ref()
                .is_some_and(|p| compare_internal(p, &ikey) != Cmp::Less)
            {
                return Err(self.bad(format!("node at {at} out of order")));
            }
            f(at, &ikey, &h);
            prev = Some(ikey);
            at = h.next;
        }
        Ok(n)
    }

    /// At open: rebuilds the lists' DRAM levels and finds the log entries to replay.
    fn open_lists(mut self, mut slots: Vec<(usize, u64, u64)>, replay: u64) -> Result<OpenedHeap> {
        let mut max_seq = 0u64;
        let mut seen_seq = |h: &NodeHead| max_seq = max_seq.max(h.trailer >> 8);
        let l1 = Arc::clone(&self.lists.read().l1);
        let mut bytes = 0;
        let n = self.walk(l1.head_at, |at, k, h| {
            seen_seq(h);
            bytes += node_bytes(h.key_len as usize, h.value_len as usize);
            if sampled(at) {
                l1.towers.insert(k, at);
            }
        })?;
        l1.entries.store(n, Ordering::Relaxed);
        l1.bytes.store(bytes, Ordering::Relaxed);
        slots.sort_by_key(|s| s.2);
        let mut replay_from = replay;
        let mut l0 = Vec::new();
        for (slot, _, end) in slots {
            let head_at = self.meta + SLOTS_AT + 16 * slot as u64;
            let towers = Towers::default();
            let mut bytes = 0;
            let n = self.walk(head_at, |at, k, h| {
                seen_seq(h);
                bytes += node_bytes(h.key_len as usize, h.value_len as usize);
                if sampled(at) {
                    towers.insert(k, at);
                }
            })?;
            replay_from = replay_from.max(end);
            l0.push(Arc::new(PList {
                head_at,
                slot: Some(slot),
                towers,
                entries: AtomicU64::new(n),
                bytes: AtomicU64::new(bytes),
            }));
        }
        self.lists.write().l0 = l0;
        let log = self.log_entries(replay_from)?;
        for &at in &log {
            let (_, h) = self.ikey_of(at)?;
            seen_seq(&h);
        }
        self.max_seq_at_open = max_seq;
        Ok((Arc::new(self), log))
    }

    /// The first node of `list` at or after `target` (an internal key), read whole.
    pub(crate) fn seek(&self, list: &PList, target: &[u8]) -> Result<Option<Node>> {
        let mut cur = list.towers.below(target).unwrap_or(list.head_at);
        loop {
            let next = self.next_of(cur)?;
            if next == 0 {
                return Ok(None);
            }
            let (ikey, h) = self.ikey_of(next)?;
            if compare_internal(&ikey, target) != Cmp::Less {
                let v = self.value_with(next, &h)?;
                return Ok(Some((next, ikey, v)));
            }
            cur = next;
        }
    }

    /// The node after the node at `at`, read whole.
    pub(crate) fn next_node(&self, at: u64) -> Result<Option<Node>> {
        let next = self.next_of(at)?;
        if next == 0 {
            return Ok(None);
        }
        let (k, v, _) = self.node(next)?;
        Ok(Some((next, k, v)))
    }

    /// The first node of `list`, read whole.
    pub(crate) fn first_node(&self, list: &PList) -> Result<Option<Node>> {
        self.next_node(list.head_at)
    }

    /// Walks every list, checking each node's checksums and the order (`tierkv check`).
    pub(crate) fn verify(&self) -> Result<u64> {
        let set = self.lists();
        let mut n = 0;
        for l in set.l0.iter().chain(std::iter::once(&set.l1)) {
            let mut nodes = Vec::new();
            n += self.walk(l.head_at, |at, _, _| nodes.push(at))?;
            for at in nodes {
                self.node(at)?;
            }
        }
        Ok(n)
    }

    /// The heap's figures.
    pub(crate) fn stats(&self) -> crate::stats::ListDbStats {
        let set = self.lists();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        crate::stats::ListDbStats {
            l0_lists: set.l0.len(),
            l0_entries: set.l0.iter().map(|l| l.entries()).sum(),
            l0_bytes: set.l0.iter().map(|l| load(&l.bytes)).sum(),
            l1_entries: set.l1.entries(),
            l1_bytes: load(&set.l1.bytes),
            log_bytes: self.tail_position(),
            chunks: self.chunk_count(),
            zips: load(&self.counters.zips),
            linked_bytes: load(&self.counters.linked),
            spliced_bytes: load(&self.counters.spliced),
            dram_bytes: set
                .l0
                .iter()
                .chain(std::iter::once(&set.l1))
                .map(|l| l.dram_bytes())
                .sum(),
        }
    }

    /// PM chunks the heap holds (meta and log chunks).
    pub(crate) fn chunk_count(&self) -> u64 {
        1 + self.chunks.read().len() as u64
    }
}

fn key_crc(at: u64, h: &NodeHead, key: &[u8]) -> u32 {
    let mut b = Vec::with_capacity(24 + key.len());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(&h.trailer.to_le_bytes());
    b.extend_from_slice(&h.key_len.to_le_bytes());
    b.extend_from_slice(&h.value_len.to_le_bytes());
    b.extend_from_slice(key);
    crc32c(&b)
}

/// The bytes of a new node at `at` (its next word: the end).
fn encode_node(at: u64, e: &NewEntry<'_>) -> Vec<u8> {
    let trailer = e.seq << 8 | u64::from(e.kind);
    let h = NodeHead {
        next: 0,
        trailer,
        key_len: e.key.len() as u32,
        value_len: e.value.len() as u32,
        key_crc: 0,
        value_crc: 0,
    };
    let mut b = Vec::with_capacity(node_bytes(e.key.len(), e.value.len()) as usize);
    b.extend_from_slice(&encode_checked(at, 0).to_le_bytes());
    b.extend_from_slice(&trailer.to_le_bytes());
    b.extend_from_slice(&h.key_len.to_le_bytes());
    b.extend_from_slice(&h.value_len.to_le_bytes());
    b.extend_from_slice(&mask(key_crc(at, &h, e.key)).to_le_bytes());
    b.extend_from_slice(&mask(crc32c(e.value)).to_le_bytes());
    b.extend_from_slice(e.key);
    b.extend_from_slice(e.value);
    b.resize(b.len().next_multiple_of(8), 0);
    b
}

/// An iterator over one list (forward only), reading each node whole as it steps.
pub(crate) struct ListIter {
    heap: Arc<ListHeap>,
    list: Arc<PList>,
    cur: Option<Node>,
    status: Result<()>,
}

impl ListIter {
    pub(crate) fn new(heap: Arc<ListHeap>, list: Arc<PList>) -> Self {
        ListIter {
            heap,
            list,
            cur: None,
            status: Ok(()),
        }
    }

    fn set(&mut self, r: Result<Option<Node>>) {
        match r {
            Ok(n) => self.cur = n,
            Err(e) => {
                self.cur = None;
                if self.status.is_ok() {
                    self.status = Err(e);
                }
            }
        }
    }
}

impl InternalIterator for ListIter {
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn seek_to_first(&mut self) {
        let r = self.heap.first_node(&self.list);
        self.set(r);
    }
    fn seek(&mut self, target: &[u8]) {
        let r = self.heap.seek(&self.list, target);
        self.set(r);
    }
    fn next(&mut self) {
        let Some((at, _, _)) = self.cur.take() else {
            return;
        };
        let r = self.heap.next_node(at);
        self.set(r);
    }
    fn key(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").1
    }
    fn value(&self) -> &[u8] {
        &self.cur.as_ref().expect("valid").2
    }
    fn status(&self) -> Result<()> {
        match &self.status {
            Ok(()) => Ok(()),
            Err(e) => Err(e.duplicate()),
        }
    }
}
