//! A persistent B+ tree: leaves in a PM pool, inner nodes in DRAM, failure-atomic under torn
//! 8-byte writes in any order. The shared index block of LAB-DB's L0 (Kim et al., "LAB-DB",
//! ACM TOS 2024: leaves in PM, inner nodes in DRAM rebuilt at open) and SLM-DB's global index
//! (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with Persistent Memory", FAST
//! 2019).
//!
//! It maps byte keys of any length (up to what fits one PM chunk) to small byte payloads (an
//! SST location, a value address). Each key and its payload is one immutable **object** in PM;
//! a **leaf** holds up to [`LEAF_SLOTS`] slots `{fingerprint, object pointer}` in no particular
//! order, and a validity **bitmap** (the FPTree / NV-Tree leaf, not FAST-FAIR's sorted in-leaf
//! shifting, which is not failure-atomic when a torn 8-byte store can land in any order). Leaves
//! form one linked chain in key order from a permanent head leaf, which the tree's named root
//! in the pool's root directory points at. The inner nodes are a DRAM ordered map from each
//! leaf's separator (its lowest key when it was split off; the empty key for the head) to the
//! leaf, rebuilt from the chain at open. Objects and leaves live in slots of a volatile slab
//! allocator ([`slab`]) rebuilt at open from what the chain references.
//!
//! # Format (little-endian; `docs/FORMATS.md`, "Persistent B+ tree")
//!
//! ```text
//! leaf (1 KiB slot):  bitmap word u64 | next word u64 | magic u64 "TKVBLEAF" | own offset u64 |
//!                     masked crc32c(bytes 16..32) u32 | 28 zero | 48 slots of 16 bytes
//!   bitmap word:      bit i = slot i is valid (48 bits) | check16(word address, bits) << 48
//!   next word:        next leaf's offset (0 = the last leaf) | check16(word address, next) << 48
//! slot (16 B):        fingerprint u64 (crc32c(key) | key length << 32) |
//!                     object word: object offset | check16(word address, offset) << 48
//! object (slot of 64 << c bytes, the smallest that holds it):
//!                     key length u32 | payload length u32 |
//!                     masked crc32c(own offset u64, bytes 0..8, key, payload) u32 | zero u32 |
//!                     key | payload
//! ```
//!
//! `check16` is the file system's 16-bit check of two words: every word the tree updates in
//! place carries a check of its own address and value, so a flipped bit, or a word of another
//! leaf, is reported as corruption naming the leaf, never followed.
//!
//! # Persist points and the invariant at each
//!
//! The tree's content is: the valid slots of the leaves reachable from the head. Every change
//! is written to unreachable or invalid places first, persisted, and published by ONE 8-byte
//! store that is then persisted:
//!
//! * **insert**: the object (a free slab slot) and the leaf slot (a slot whose bitmap bit is
//!   clear) are written and persisted with one fence; then the bitmap word with the slot's bit
//!   set. Before that store the key is absent and the object unreferenced (free at the next
//!   open); after it, present.
//! * **update**: the new object is written and persisted; then the slot's object word is
//!   replaced (8-byte store, persisted). Either word is a complete, checked pointer to a
//!   complete object: the old payload or the new one. The old object is freed after.
//! * **delete**: the bitmap word without the slot's bit. The object is freed after.
//! * **split** of a full leaf A (into A and a new leaf B holding A's upper half): B is written
//!   whole (header, copied slots, bitmap, next = A's next) and persisted while unreachable;
//!   then A's next word is set to B (persisted): from here the upper half is in A *and* B, as
//!   the same objects; then A's bitmap word drops the upper half (persisted). Open repairs a
//!   crash between the last two stores: entries of a leaf at or above the lowest key of the next
//!   non-empty leaf must be the same objects as that leaf's entries (else corruption); they are
//!   dropped from the earlier leaf.
//! * **unlink** of a leaf left empty by a delete (never the head): the previous leaf's next
//!   word is set to the empty leaf's next (persisted); the leaf is freed after. Open unlinks an
//!   empty leaf a crash left behind.
//!
//! Nothing else is persistent: the inner nodes and the allocator are rebuilt from the chain at
//! open, so an allocation a crash left unpublished is free again and nothing leaks.
//!
//! # Concurrency
//!
//! One `RwLock` over the tree: lookups and iterator refills share it, updates take it alone.
//! Iterators copy one leaf's entries at a time and continue from the last key they returned,
//! so they never hold a pointer across an update (an iterator sees each key's payload as of the
//! refill that read it).

mod slab;
#[cfg(test)]
mod tests;

use crate::fs::{decode_checked, encode_checked, PmFsOpen, PmOwner};
use crate::util::crc::{crc32c, mask, unmask};
use crate::{Error, Result};
use parking_lot::RwLock;
#[cfg(test)]
use slab::slot_bytes;
use slab::{class_of, Slab};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use tierkv_pm::PmPool;

/// Slots per leaf.
pub(crate) const LEAF_SLOTS: usize = 48;
/// A leaf's slab slot.
const LEAF_BYTES: u64 = 1024;
const LEAF_HEADER: usize = 64;
/// The bytes of a leaf that are read and written: header and slots.
const LEAF_USED: usize = LEAF_HEADER + LEAF_SLOTS * 16;
const LEAF_MAGIC: u64 = u64::from_le_bytes(*b"TKVBLEAF");
const OBJECT_HEADER: usize = 16;
const OFFSET_MASK: u64 = (1 << 48) - 1;
const ALL_SLOTS: u64 = (1 << LEAF_SLOTS) - 1;

/// A key's fingerprint: a first filter before the key itself is compared.
fn fingerprint(key: &[u8]) -> u64 {
    u64::from(crc32c(key)) | (key.len() as u64) << 32
}

fn slot_at(leaf: u64, i: usize) -> u64 {
    leaf + (LEAF_HEADER + 16 * i) as u64
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// A leaf as read from PM, checked.
#[derive(Clone)]
struct Leaf {
    at: u64,
    bits: u64,
    next: u64,
    /// Per slot: fingerprint and object offset (meaningful where the bit is set).
    slots: [(u64, u64); LEAF_SLOTS],
}

impl Leaf {
    fn valid(&self) -> impl Iterator<Item = usize> + '_ {
        (0..LEAF_SLOTS).filter(|i| self.bits & (1 << i) != 0)
    }

    fn free_slot(&self) -> Option<usize> {
        (0..LEAF_SLOTS).find(|i| self.bits & (1 << i) == 0)
    }
}

/// One key and its payload.
pub(crate) type Entry = (Vec<u8>, Vec<u8>);

/// What [`PbTree::upsert`] does with a key, given its payload (if present).
pub(crate) enum Upsert {
    /// Leave it as it is.
    Keep,
    /// Insert or replace the payload.
    Put(Vec<u8>),
    /// Remove the key.
    Delete,
}

/// Figures of a tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PbTreeStats {
    /// Keys.
    pub keys: u64,
    /// Leaves in the chain.
    pub leaves: u64,
    /// PM bytes of the slab slots in use (leaves and objects).
    pub pm_bytes: u64,
    /// PM chunks held.
    pub chunks: u64,
    /// DRAM bytes of the inner nodes (separator keys and leaf offsets).
    pub dram_bytes: u64,
}

/// Reads and checks the structures of one tree: the I/O half, shared by open and updates.
struct Pm {
    pool: Arc<PmPool>,
    location: String,
    /// Bytes of cache lines written back since the last [`PbTree::take_persisted_bytes`].
    persisted: std::sync::atomic::AtomicU64,
}

impl Pm {
    fn bad(&self, why: String) -> Error {
        Error::corruption(self.location.clone(), why)
    }

    fn read_leaf(&self, at: u64) -> Result<Leaf> {
        let mut b = [0u8; LEAF_USED];
        if at
            .checked_add(LEAF_BYTES)
            .is_none_or(|e| e > self.pool.size())
        {
            return Err(self.bad(format!("PM tree leaf pointer {at} is outside the pool")));
        }
        self.pool.read(at, &mut b)?;
        if u64_at(&b, 16) != LEAF_MAGIC
            || u64_at(&b, 24) != at
            || unmask(u32_at(&b, 32)) != crc32c(&b[16..32])
        {
            return Err(self.bad(format!("PM tree leaf at {at}: bad header")));
        }
        let bits = decode_checked(at, u64_at(&b, 0))
            .filter(|bits| bits & !ALL_SLOTS == 0)
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: bitmap fails its check")))?;
        let next = decode_checked(at + 8, u64_at(&b, 8))
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: next link fails its check")))?;
        let mut slots = [(0, 0); LEAF_SLOTS];
        for (i, s) in slots.iter_mut().enumerate() {
            let o = LEAF_HEADER + 16 * i;
            *s = (u64_at(&b, o), u64_at(&b, o + 8));
            if bits & (1 << i) != 0 {
                s.1 = decode_checked(slot_at(at, i) + 8, s.1).ok_or_else(|| {
                    self.bad(format!(
                        "PM tree leaf at {at}: slot {i}'s pointer fails its check"
                    ))
                })?;
            }
        }
        Ok(Leaf {
            at,
            bits,
            next,
            slots,
        })
    }

    /// Reads the object at `at`: key, payload and its size class.
    fn read_object(&self, at: u64) -> Result<(Vec<u8>, Vec<u8>, u32)> {
        let mut h = [0u8; OBJECT_HEADER];
        if at
            .checked_add(OBJECT_HEADER as u64)
            .is_none_or(|e| e > self.pool.size())
        {
            return Err(self.bad(format!("PM tree object pointer {at} is outside the pool")));
        }
        self.pool.read(at, &mut h)?;
        let (klen, plen) = (u64::from(u32_at(&h, 0)), u64::from(u32_at(&h, 4)));
        let total = OBJECT_HEADER as u64 + klen + plen;
        let class = class_of(total);
        if total > self.pool.chunk_size() || at + total > self.pool.size() {
            return Err(self.bad(format!("PM tree object at {at}: bad lengths")));
        }
        let mut body = vec![0u8; (klen + plen) as usize];
        self.pool.read(at + OBJECT_HEADER as u64, &mut body)?;
        if unmask(u32_at(&h, 8)) != object_crc(at, &h[..8], &body) {
            return Err(self.bad(format!("PM tree object at {at} fails its checksum")));
        }
        let payload = body.split_off(klen as usize);
        Ok((body, payload, class))
    }

    /// The key of the object at `at`.
    fn read_key(&self, at: u64) -> Result<Vec<u8>> {
        Ok(self.read_object(at)?.0)
    }

    /// Writes back and fences `ranges` (with msync where the pool's mode needs it).
    fn persist(&self, ranges: &[(u64, u64)]) -> Result<()> {
        let lines: u64 = ranges
            .iter()
            .map(|&(at, len)| (at + len).div_ceil(64) - at / 64)
            .sum();
        self.persisted
            .fetch_add(lines * 64, std::sync::atomic::Ordering::Relaxed);
        self.pool.flush_ranges(ranges)?;
        self.pool.fence();
        if self.pool.msync_on_persist() {
            for &(at, len) in ranges {
                self.pool.msync(at, len)?;
            }
        }
        Ok(())
    }

    fn store_persist(&self, at: u64, value: u64) -> Result<()> {
        self.persisted
            .fetch_add(64, std::sync::atomic::Ordering::Relaxed);
        self.pool.store_u64_persist(at, encode_checked(at, value))?;
        Ok(())
    }
}

fn object_crc(at: u64, lens: &[u8], body: &[u8]) -> u32 {
    let mut b = Vec::with_capacity(16 + body.len());
    b.extend_from_slice(&at.to_le_bytes());
    b.extend_from_slice(lens);
    b.extend_from_slice(body);
    crc32c(&b)
}

fn leaf_header(at: u64) -> [u8; LEAF_HEADER] {
    let mut h = [0u8; LEAF_HEADER];
    h[16..24].copy_from_slice(&LEAF_MAGIC.to_le_bytes());
    h[24..32].copy_from_slice(&at.to_le_bytes());
    let crc = mask(crc32c(&h[16..32]));
    h[32..36].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The leaf image of a new leaf at `at` with `slots` (fingerprint, object) in slots 0.. and
/// next leaf `next`.
fn leaf_image(at: u64, slots: &[(u64, u64)], next: u64) -> Vec<u8> {
    let mut b = leaf_header(at).to_vec();
    b.resize(LEAF_USED, 0);
    let bits = if slots.is_empty() {
        0
    } else {
        ALL_SLOTS >> (LEAF_SLOTS - slots.len())
    };
    b[0..8].copy_from_slice(&encode_checked(at, bits).to_le_bytes());
    b[8..16].copy_from_slice(&encode_checked(at + 8, next).to_le_bytes());
    for (i, &(fp, obj)) in slots.iter().enumerate() {
        let o = LEAF_HEADER + 16 * i;
        b[o..o + 8].copy_from_slice(&fp.to_le_bytes());
        let w = encode_checked(slot_at(at, i) + 8, obj);
        b[o + 8..o + 16].copy_from_slice(&w.to_le_bytes());
    }
    b
}

struct State {
    /// The inner nodes: separator -> leaf.
    leaves: BTreeMap<Vec<u8>, u64>,
    slab: Slab,
    keys: u64,
}

impl State {
    /// The leaf whose range holds `key`, and its separator.
    fn leaf_for(&self, key: &[u8]) -> (&Vec<u8>, u64) {
        let (sep, &leaf) = self
            .leaves
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .expect("the head leaf's separator is the empty key");
        (sep, leaf)
    }
}

/// A persistent B+ tree in a PM pool (module docs). `Send + Sync`.
pub(crate) struct PbTree {
    pm: Pm,
    state: RwLock<State>,
    read_only: bool,
}

/// An entry as open found it: key, payload, slot, object.
type Found = (Vec<u8>, Vec<u8>, usize, u64);

/// What open found, before the repairs.
struct Scanned {
    /// Leaves in chain order, with their (deduplicated) entries: (key, payload, slot, object).
    leaves: Vec<(Leaf, Vec<Found>)>,
    /// Per leaf (index into `leaves`), the bitmap it must get: a torn split's duplicates
    /// dropped.
    rebits: Vec<(usize, u64)>,
}

/// The tree as one owner of its pool's chunks ([`PmOwner`]): open it through
/// [`crate::fs::open_pm_owners`] with the pool's other owners, then [`PbTreeOwner::into_tree`].
pub(crate) struct PbTreeOwner {
    pm: Pm,
    name: String,
    head: u64,
    slab: Slab,
    scanned: Option<Scanned>,
}

impl PbTreeOwner {
    /// The tree rooted at `root_name` in `pool`, not opened yet.
    pub(crate) fn new(pool: Arc<PmPool>, location: &str, root_name: &str) -> PbTreeOwner {
        let location = format!("{location}: PM tree {root_name}");
        PbTreeOwner {
            slab: Slab::new(Arc::clone(&pool), location.clone()),
            pm: Pm {
                pool,
                location,
                persisted: std::sync::atomic::AtomicU64::new(0),
            },
            name: root_name.to_string(),
            head: 0,
            scanned: None,
        }
    }

    /// Reads the chain from `head` (no write): every leaf and object checked, a torn split's
    /// duplicates found, the slab's slots marked.
    fn scan(&mut self, head: u64) -> Result<Vec<u64>> {
        let pm = &self.pm;
        let max_leaves = pm.pool.size() / LEAF_BYTES;
        let mut leaves: Vec<(Leaf, Vec<Found>)> = Vec::new();
        let mut at = head;
        while at != 0 {
            if leaves.len() as u64 > max_leaves {
                return Err(pm.bad("the leaf chain has a cycle".to_string()));
            }
            let leaf = pm.read_leaf(at)?;
            let mut entries = Vec::new();
            for i in leaf.valid() {
                let (fp, obj) = leaf.slots[i];
                let (key, payload, _) = pm.read_object(obj)?;
                if fingerprint(&key) != fp {
                    return Err(pm.bad(format!(
                        "PM tree leaf at {at}: slot {i}'s fingerprint does not match its key"
                    )));
                }
                entries.push((key, payload, i, obj));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            if entries.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(pm.bad(format!("PM tree leaf at {at} holds a key twice")));
            }
            at = leaf.next;
            leaves.push((leaf, entries));
        }
        // A torn split: the upper half still valid in the earlier leaf.
        let mut rebits = Vec::new();
        for i in 0..leaves.len() {
            let Some(j) = (i + 1..leaves.len()).find(|&j| !leaves[j].1.is_empty()) else {
                break;
            };
            let min_next = leaves[j].1[0].0.clone();
            let cut = leaves[i].1.partition_point(|e| e.0 < min_next);
            if cut == leaves[i].1.len() {
                continue;
            }
            let dups = leaves[i].1.split_off(cut);
            let mut bits = leaves[i].0.bits;
            for (key, _, slot, obj) in &dups {
                let same = leaves[j].1.iter().any(|e| &e.0 == key && e.3 == *obj);
                if !same {
                    return Err(pm.bad(format!(
                        "PM tree leaves at {} and {} overlap in key order",
                        leaves[i].0.at, leaves[j].0.at
                    )));
                }
                bits &= !(1 << slot);
            }
            rebits.push((i, bits));
        }
        for (leaf, entries) in &leaves {
            self.slab.mark_used(leaf.at, class_of(LEAF_BYTES))?;
            for (k, p, _, obj) in entries {
                let class = class_of((OBJECT_HEADER + k.len() + p.len()) as u64);
                self.slab.mark_used(*obj, class)?;
            }
        }
        self.scanned = Some(Scanned { leaves, rebits });
        Ok(self.slab.finish_open())
    }

    /// The tree, once the pool's open protocol has run. `writable`: repair what a crash left
    /// (a torn split's duplicates, empty leaves still linked) and allow updates; otherwise the
    /// repairs are made in DRAM only and the pool is never written.
    pub(crate) fn into_tree(self, writable: bool) -> Result<PbTree> {
        let PbTreeOwner {
            pm,
            head,
            mut slab,
            scanned,
            ..
        } = self;
        let Scanned { mut leaves, rebits } = scanned.unwrap_or_else(|| Scanned {
            leaves: Vec::new(),
            rebits: Vec::new(),
        });
        for (i, bits) in rebits {
            if writable {
                pm.store_persist(leaves[i].0.at, bits)?;
            }
            leaves[i].0.bits = bits;
        }
        let mut map = BTreeMap::new();
        map.insert(Vec::new(), head);
        let mut keys = 0;
        let mut prev = head;
        for (leaf, entries) in leaves {
            keys += entries.len() as u64;
            if leaf.at == head {
                continue;
            }
            if entries.is_empty() {
                // Empty and still linked: a crash between a delete and the unlink.
                if writable {
                    pm.store_persist(prev + 8, leaf.next)?;
                    slab.free(leaf.at);
                }
                continue;
            }
            map.insert(entries[0].0.clone(), leaf.at);
            prev = leaf.at;
        }
        Ok(PbTree {
            pm,
            state: RwLock::new(State {
                leaves: map,
                slab,
                keys,
            }),
            read_only: !writable,
        })
    }
}

impl PmOwner for PbTreeOwner {
    fn root_name(&self) -> &str {
        &self.name
    }

    fn open(&mut self, root: u64) -> Result<Vec<u64>> {
        if self.pm.pool.size() > OFFSET_MASK {
            return Err(Error::InvalidArgument(format!(
                "{}: a PM tree needs a pool below 256 TiB",
                self.pm.location
            )));
        }
        self.head = root;
        self.scan(root)
    }

    fn holdings(&self) -> Option<String> {
        let keys: usize = self
            .scanned
            .as_ref()
            .map_or(0, |s| s.leaves.iter().map(|l| l.1.len()).sum());
        (keys > 0).then(|| format!("{keys} keys in PM tree {}", self.name))
    }

    fn missing(&mut self, how: PmFsOpen) -> Result<()> {
        let _ = how;
        Ok(())
    }

    fn create(&mut self) -> Result<u64> {
        self.slab = Slab::new(Arc::clone(&self.pm.pool), self.pm.location.clone());
        self.scanned = None;
        let at = self.slab.allocate(class_of(LEAF_BYTES))?;
        self.pm.pool.write(at, &leaf_image(at, &[], 0))?;
        self.pm.persist(&[(at, LEAF_USED as u64)])?;
        self.head = at;
        Ok(at)
    }
}

impl PbTree {
    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} was opened read-only",
                self.pm.location
            )));
        }
        Ok(())
    }

    /// The slot of `key` in `leaf`, and its object, if present.
    fn find_in(&self, leaf: &Leaf, key: &[u8]) -> Result<Option<(usize, u64)>> {
        let fp = fingerprint(key);
        for i in leaf.valid() {
            let (f, obj) = leaf.slots[i];
            if f == fp && self.pm.read_key(obj)? == key {
                return Ok(Some((i, obj)));
            }
        }
        Ok(None)
    }

    /// The payload of `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let st = self.state.read();
        let leaf = self.pm.read_leaf(st.leaf_for(key).1)?;
        match self.find_in(&leaf, key)? {
            Some((_, obj)) => Ok(Some(self.pm.read_object(obj)?.1)),
            None => Ok(None),
        }
    }

    /// Inserts or replaces `key`'s payload; returns the payload it replaced.
    #[cfg(test)]
    pub(crate) fn put(&self, key: &[u8], payload: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut old = None;
        self.upsert(key, |p| {
            old = p.map(<[u8]>::to_vec);
            Upsert::Put(payload.to_vec())
        })?;
        Ok(old)
    }

    /// Removes `key`; returns its payload.
    #[cfg(test)]
    pub(crate) fn delete(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut old = None;
        self.upsert(key, |p| {
            old = p.map(<[u8]>::to_vec);
            if p.is_some() {
                Upsert::Delete
            } else {
                Upsert::Keep
            }
        })?;
        Ok(old)
    }

    /// Reads `key`'s payload and applies what `decide` returns for it, atomically with respect
    /// to every other update (e.g. "replace only if it still names this file").
    pub(crate) fn upsert(
        &self,
        key: &[u8],
        decide: impl FnOnce(Option<&[u8]>) -> Upsert,
    ) -> Result<()> {
        self.writable()?;
        let mut st = self.state.write();
        let leaf_at = st.leaf_for(key).1;
        let mut leaf = self.pm.read_leaf(leaf_at)?;
        let found = self.find_in(&leaf, key)?;
        let old = match found {
            Some((_, obj)) => Some(self.pm.read_object(obj)?.1),
            None => None,
        };
        match (decide(old.as_deref()), found) {
            (Upsert::Keep, _) | (Upsert::Delete, None) => Ok(()),
            (Upsert::Put(p), Some((slot, old_obj))) => {
                let obj = self.write_object(&mut st.slab, key, &p)?;
                self.pm.store_persist(slot_at(leaf_at, slot) + 8, obj)?;
                st.slab.free(old_obj);
                Ok(())
            }
            (Upsert::Put(p), None) => {
                if leaf.bits == ALL_SLOTS {
                    self.split(&mut st, &leaf)?;
                    let at = st.leaf_for(key).1;
                    leaf = self.pm.read_leaf(at)?;
                }
                self.insert_into(&mut st, &leaf, key, &p)
            }
            (Upsert::Delete, Some((slot, obj))) => {
                let bits = leaf.bits & !(1 << slot);
                self.pm.store_persist(leaf_at, bits)?;
                st.slab.free(obj);
                st.keys -= 1;
                if bits == 0 {
                    self.unlink(&mut st, &leaf)?;
                }
                Ok(())
            }
        }
    }

    /// Writes a new object (not persisted); returns its offset and length.
    fn new_object(&self, slab: &mut Slab, key: &[u8], payload: &[u8]) -> Result<(u64, u64)> {
        let total = (OBJECT_HEADER + key.len() + payload.len()) as u64;
        if total > slab.max_object() {
            return Err(Error::InvalidArgument(format!(
                "{}: a key of {} bytes with a payload of {} does not fit one PM chunk",
                self.pm.location,
                key.len(),
                payload.len()
            )));
        }
        let at = slab.allocate(class_of(total))?;
        self.pm.pool.write(at, &object_image(at, key, payload))?;
        Ok((at, total))
    }

    /// Writes and persists a new object; returns its offset.
    fn write_object(&self, slab: &mut Slab, key: &[u8], payload: &[u8]) -> Result<u64> {
        let (at, total) = self.new_object(slab, key, payload)?;
        self.pm.persist(&[(at, total)])?;
        Ok(at)
    }

    fn insert_into(&self, st: &mut State, leaf: &Leaf, key: &[u8], payload: &[u8]) -> Result<()> {
        let slot = leaf.free_slot().expect("a leaf with room");
        let (obj, total) = self.new_object(&mut st.slab, key, payload)?;
        let s = slot_at(leaf.at, slot);
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&fingerprint(key).to_le_bytes());
        b[8..].copy_from_slice(&encode_checked(s + 8, obj).to_le_bytes());
        self.pm.pool.write(s, &b)?;
        // Object and slot in one fence, then the publishing bitmap word.
        self.pm.persist(&[(obj, total), (s, 16)])?;
        self.pm.store_persist(leaf.at, leaf.bits | 1 << slot)?;
        st.keys += 1;
        Ok(())
    }

    /// Splits the full leaf `a` (module docs: split).
    fn split(&self, st: &mut State, a: &Leaf) -> Result<()> {
        let mut entries = Vec::with_capacity(LEAF_SLOTS);
        for i in a.valid() {
            entries.push((self.pm.read_key(a.slots[i].1)?, i));
        }
        entries.sort();
        let upper = entries.split_off(entries.len() / 2);
        let b = st.slab.allocate(class_of(LEAF_BYTES))?;
        let slots: Vec<(u64, u64)> = upper.iter().map(|&(_, i)| a.slots[i]).collect();
        self.pm.pool.write(b, &leaf_image(b, &slots, a.next))?;
        self.pm.persist(&[(b, LEAF_USED as u64)])?;
        self.pm.store_persist(a.at + 8, b)?;
        let bits = upper.iter().fold(a.bits, |bits, &(_, i)| bits & !(1 << i));
        self.pm.store_persist(a.at, bits)?;
        st.leaves.insert(upper[0].0.clone(), b);
        Ok(())
    }

    /// Unlinks the empty leaf `leaf` unless it is the head (module docs: unlink).
    fn unlink(&self, st: &mut State, leaf: &Leaf) -> Result<()> {
        let sep = st
            .leaves
            .iter()
            .find(|(_, &at)| at == leaf.at)
            .map(|(k, _)| k.clone())
            .expect("every leaf has a separator");
        if sep.is_empty() {
            return Ok(());
        }
        let prev = st.leaf_for_before(&sep);
        self.pm.store_persist(prev + 8, leaf.next)?;
        st.leaves.remove(&sep);
        st.slab.free(leaf.at);
        Ok(())
    }

    /// The entries of one leaf after `from` (or from the first key), in key order: the first
    /// leaf at or after the bound that has any. Empty at the end of the tree.
    pub(crate) fn entries_after(&self, from: Bound<&[u8]>) -> Result<Vec<Entry>> {
        let st = self.state.read();
        let start: &[u8] = match from {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => &[],
        };
        let (sep, _) = st.leaf_for(start);
        for (_, &at) in st
            .leaves
            .range::<[u8], _>((Bound::Included(sep.as_slice()), Bound::Unbounded))
        {
            let leaf = self.pm.read_leaf(at)?;
            let mut out = Vec::new();
            for i in leaf.valid() {
                let (k, p, _) = self.pm.read_object(leaf.slots[i].1)?;
                let keep = match from {
                    Bound::Included(b) => k.as_slice() >= b,
                    Bound::Excluded(b) => k.as_slice() > b,
                    Bound::Unbounded => true,
                };
                if keep {
                    out.push((k, p));
                }
            }
            if !out.is_empty() {
                out.sort_by(|a, b| a.0.cmp(&b.0));
                return Ok(out);
            }
        }
        Ok(Vec::new())
    }

    /// An iterator over the tree, from its first key.
    pub(crate) fn iter(self: &Arc<Self>) -> PbIter {
        PbIter {
            tree: Arc::clone(self),
            buf: Vec::new(),
            pos: 0,
            done: false,
        }
    }

    /// Bytes of PM cache lines the tree wrote back since the last call (each byte is counted
    /// by one caller only).
    pub(crate) fn take_persisted_bytes(&self) -> u64 {
        self.pm
            .persisted
            .swap(0, std::sync::atomic::Ordering::Relaxed)
    }

    /// Keys in the tree.
    pub(crate) fn len(&self) -> u64 {
        self.state.read().keys
    }

    /// Figures of the tree.
    pub(crate) fn stats(&self) -> PbTreeStats {
        let st = self.state.read();
        PbTreeStats {
            keys: st.keys,
            leaves: st.leaves.len() as u64,
            pm_bytes: st.slab.bytes_used(),
            chunks: st.slab.chunk_count(),
            dram_bytes: st.leaves.keys().map(|k| k.len() as u64 + 32).sum(),
        }
    }

    /// Reads and checks every leaf and object of the chain; returns the number of keys.
    pub(crate) fn verify(&self) -> Result<u64> {
        let st = self.state.read();
        let mut keys = 0u64;
        let mut last: Option<Vec<u8>> = None;
        for &at in st.leaves.values() {
            let leaf = self.pm.read_leaf(at)?;
            let mut ks = Vec::new();
            for i in leaf.valid() {
                let (k, _, _) = self.pm.read_object(leaf.slots[i].1)?;
                if fingerprint(&k) != leaf.slots[i].0 {
                    return Err(self.pm.bad(format!(
                        "PM tree leaf at {at}: slot {i}'s fingerprint does not match its key"
                    )));
                }
                ks.push(k);
            }
            ks.sort();
            if ks.windows(2).any(|w| w[0] == w[1])
                || ks.first().zip(last.as_ref()).is_some_and(|(f, l)| f <= l)
            {
                return Err(self
                    .pm
                    .bad(format!("PM tree leaf at {at}: keys out of order")));
            }
            keys += ks.len() as u64;
            if let Some(k) = ks.pop() {
                last = Some(k);
            }
        }
        if keys != st.keys {
            return Err(self.pm.bad(format!(
                "the PM tree holds {keys} keys, its count says {}",
                st.keys
            )));
        }
        Ok(keys)
    }
}

impl State {
    /// The leaf before the one whose separator is `sep`.
    fn leaf_for_before(&self, sep: &[u8]) -> u64 {
        *self
            .leaves
            .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(sep)))
            .next_back()
            .expect("a non-head leaf has a leaf before it")
            .1
    }
}

fn object_image(at: u64, key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(OBJECT_HEADER + key.len() + payload.len());
    b.extend_from_slice(&(key.len() as u32).to_le_bytes());
    b.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    b.extend_from_slice(&[0u8; 8]);
    b.extend_from_slice(key);
    b.extend_from_slice(payload);
    let crc = mask(object_crc(at, &b[..8], &b[OBJECT_HEADER..]));
    b[8..12].copy_from_slice(&crc.to_le_bytes());
    b
}

/// An iterator over a [`PbTree`] in key order (module docs: concurrency).
pub(crate) struct PbIter {
    tree: Arc<PbTree>,
    buf: Vec<Entry>,
    pos: usize,
    done: bool,
}

impl PbIter {
    /// Positions at the first key `>= key`.
    #[cfg(test)]
    pub(crate) fn seek(&mut self, key: &[u8]) -> Result<()> {
        self.fill(Bound::Included(key))
    }

    /// Positions at the first key.
    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        self.fill(Bound::Unbounded)
    }

    fn fill(&mut self, from: Bound<&[u8]>) -> Result<()> {
        self.buf = self.tree.entries_after(from)?;
        self.pos = 0;
        self.done = self.buf.is_empty();
        Ok(())
    }

    /// The current entry, if positioned.
    pub(crate) fn current(&self) -> Option<&Entry> {
        if self.done {
            None
        } else {
            self.buf.get(self.pos)
        }
    }

    /// Moves to the next key.
    pub(crate) fn next(&mut self) -> Result<()> {
        if self.done {
            return Ok(());
        }
        self.pos += 1;
        if self.pos == self.buf.len() {
            let last = self.buf.pop().expect("a positioned iterator").0;
            self.fill(Bound::Excluded(&last))?;
        }
        Ok(())
    }
}
