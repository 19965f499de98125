//! A persistent B+ tree: leaves in a PM pool, inner nodes in DRAM or in PM ([`InnerKind`]),
//! failure-atomic under torn 8-byte writes in any order. The shared index block of LAB-DB's L0 (Kim et al., "LAB-DB",
//! ACM TOS 2024: leaves in PM, inner nodes in DRAM rebuilt at open) and SLM-DB's global index
//! (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with Persistent Memory", FAST
//! 2019).
//!
//! It maps byte keys of any length (up to what fits one PM chunk) to small payloads. A **leaf**
//! holds a fixed number of slots in no particular order and a validity **bitmap** (the FPTree /
//! NV-Tree leaf, not FAST-FAIR's sorted in-leaf shifting, which is not failure-atomic when a
//! torn 8-byte store can land in any order). Leaves form one linked chain in key order from a
//! permanent head leaf, which the tree's named root in the pool's root directory points at. The
//! inner nodes route each key to the leaf whose separator (its lowest key when it was split
//! off; the empty key for the head) is the greatest at or below it: a DRAM ordered map rebuilt
//! from the chain at open (LAB-DB), or copy-on-write nodes in PM published by one 8-byte store
//! in the head leaf (SLM-DB: "a B+ tree entirely in PM"); [`inner`] has their protocol. Objects
//! and leaves live in slots of a volatile slab allocator ([`slab`]) rebuilt at open from what
//! the chain references.
//!
//! A tree has one of two leaf [`Layout`]s, chosen by whoever opens it (the layout is not
//! recorded beside the root; a leaf of the other layout fails its magic):
//!
//! * [`Layout::Objects`] (`TKVBLEAF`, SLM-DB's global index): byte payloads of any length. Each
//!   key and its payload is one immutable **object** in PM; a slot is `{fingerprint, object
//!   pointer}`, and an update writes a new object and swaps the pointer.
//! * [`Layout::Inline`] (`TKVLLEAF`, LAB-DB's L0): the payload is one 8-byte **word** (a value
//!   address) held in the slot itself, with the key inline when it has at most
//!   [`INLINE_KEY`] bytes; a longer key is an object with an empty payload. An update of an
//!   existing key is ONE 8-byte store of the word, persisted ([`PbTree::upsert_word`]).
//!
//! # Format (little-endian; `docs/FORMATS.md`, "Persistent B+ tree")
//!
//! ```text
//! leaf (1 KiB slot):  bitmap word u64 | next word u64 | magic u64 | own offset u64 |
//!                     masked crc32c(bytes 16..32) u32 | 28 zero | slots
//!   bitmap word:      bit i = slot i is valid | check16(word address, bits) << 48
//!   next word:        next leaf's offset (0 = the last leaf) | check16(word address, next) << 48
//! Objects ("TKVBLEAF"): 48 slots of 16 bytes:
//!   slot:             fingerprint u64 (crc32c(key) | key length << 32) |
//!                     object word: object offset | check16(word address, offset) << 48
//! Inline ("TKVLLEAF"): 30 slots of 32 bytes:
//!   slot:             payload word u64 | tag u8 | 23 bytes:
//!     tag 0..=23:     the key (tag bytes), then zeros
//!     tag 0xFF:       3 zero | key crc32c u32 | key length u32 (> 23) | 4 zero |
//!                     object word (at slot + 24): object offset | check16(word address, offset) << 48
//! object (slot of 64 << c bytes, the smallest that holds it):
//!                     key length u32 | payload length u32 |
//!                     masked crc32c(own offset u64, bytes 0..8, key, payload) u32 | zero u32 |
//!                     key | payload             (Inline: a long key's object, payload empty)
//! ```
//!
//! `check16` is the file system's 16-bit check of two words: every pointer and bitmap word the
//! tree updates in place carries a check of its own address and value, so a flipped bit, or a
//! word of another leaf, is reported as corruption naming the leaf, never followed. The inline
//! payload word is the exception: it uses all 64 bits and carries no check, so its user must
//! check what it points at (LAB-DB's value records check their own address and key). An
//! inline key has no checksum either (the slot has no room for one); a tag out of range or
//! non-zero padding is corruption, and a changed key byte is found by the same check of the
//! pointed-at record, or by open's order check when it breaks the key order.
//!
//! # Persist points and the invariant at each
//!
//! The tree's content is: the valid slots of the leaves reachable from the head. Every change
//! is written to unreachable or invalid places first, persisted, and published by ONE 8-byte
//! store that is then persisted. The same steps serve both layouts except where noted:
//!
//! * **insert**: the object if any (a free slab slot: every key of the Objects layout, a long
//!   key of the Inline layout) and the leaf slot (a slot whose bitmap bit is clear; Inline: the
//!   payload word, tag and key written with it) are written and persisted with one fence; then
//!   the bitmap word with the slot's bit set. Before that store the key is absent and the
//!   object unreferenced (free at the next open); after it, present with its payload.
//! * **update, Objects**: the new object is written and persisted; then the slot's object word
//!   is replaced (8-byte store, persisted). Either word is a complete, checked pointer to a
//!   complete object: the old payload or the new one. The old object is freed after.
//! * **update, Inline** (in place): the slot's payload word is stored and persisted, nothing
//!   else. The slot is valid throughout and its key bytes are untouched; an aligned 8-byte
//!   store lands whole, so a crash leaves the old word or the new one, never a mix.
//! * **delete**: the bitmap word without the slot's bit. The object, if any, is freed after.
//! * **split** of a full leaf A (into A and a new leaf B holding A's upper half): B is written
//!   whole (header, the upper half's slots re-encoded for their new addresses: same fingerprint
//!   or payload word and key, same objects; bitmap; next = A's next) and persisted while
//!   unreachable; then A's next word is set to B (persisted): from here the upper half is in A
//!   *and* B, as identical entries; then A's bitmap word drops the upper half (persisted). Open
//!   repairs a crash between the last two stores: entries of a leaf at or above the lowest key
//!   of the next non-empty leaf must be identical to that leaf's entries (same key, same object
//!   and, Inline, same payload word: nothing updates a key between the two stores), else
//!   corruption; they are dropped from the earlier leaf.
//! * **unlink** of a leaf left empty by a delete (never the head): the previous leaf's next
//!   word is set to the empty leaf's next (persisted); the leaf is freed after. Open unlinks an
//!   empty leaf a crash left behind.
//!
//! * **inner nodes** (PM inner nodes only): a split writes B, then the new inner path naming B
//!   (both persisted, both unreachable), then the two leaf stores above, then the inner-root
//!   word; an unlink writes the inner path without the leaf, unlinks, then stores the root
//!   word. Open repairs inner nodes a crash left one leaf behind ([`inner`]).
//!
//! Nothing else is persistent: the allocator is rebuilt at open from what the chain and the
//! inner nodes reference (DRAM inner nodes are rebuilt from the chain), so an allocation a
//! crash left unpublished is free again and nothing leaks.
//!
//! # Concurrency
//!
//! One `RwLock` over the tree: lookups and iterator refills share it, updates take it alone.
//! Iterators copy one leaf's entries at a time and continue from the last key they returned,
//! so they never hold a pointer across an update (an iterator sees each key's payload as of the
//! refill that read it).

mod inner;
mod slab;
#[cfg(test)]
mod tests;

use crate::fs::{decode_checked, encode_checked, PmFsOpen, PmOwner};
use crate::util::crc::{crc32c, mask, unmask};
use crate::{Error, Result};
use inner::{Inner, PmInner, Sep, Walked};
pub(crate) use inner::{InnerKind, FANOUT};
use parking_lot::RwLock;
#[cfg(test)]
use slab::slot_bytes;
use slab::{class_of, Slab};
use std::ops::Bound;
use std::sync::Arc;
use tierkv_pm::PmPool;

/// Slots per leaf of the [`Layout::Objects`] layout (the most of either layout).
pub(crate) const LEAF_SLOTS: usize = 48;
/// Slots per leaf of the [`Layout::Inline`] layout.
pub(crate) const INLINE_SLOTS: usize = 30;
/// The longest key an [`Layout::Inline`] slot holds in place; longer keys are objects.
pub(crate) const INLINE_KEY: usize = 23;
/// A leaf's slab slot.
const LEAF_BYTES: u64 = 1024;
const LEAF_HEADER: usize = 64;
const OBJECTS_MAGIC: u64 = u64::from_le_bytes(*b"TKVBLEAF");
const INLINE_MAGIC: u64 = u64::from_le_bytes(*b"TKVLLEAF");
/// An inline slot's tag for a key held as an object.
const LONG_TAG: u8 = 0xFF;
const OBJECT_HEADER: usize = 16;
const OFFSET_MASK: u64 = (1 << 48) - 1;

/// How a tree's leaves hold keys and payloads (module docs). Chosen per tree when it is
/// opened; the existing trees (SLM-DB's global index) use [`Layout::Objects`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `TKVBLEAF`: 48 slots `{fingerprint, object word}`; each key and its payload (of any
    /// length) is one object, and an update writes a new object and swaps the pointer.
    Objects,
    /// `TKVLLEAF`: 30 slots of 32 bytes `{payload word, tag, key}`; the payload is exactly one
    /// 8-byte word, updated in place by one persisted store; keys over [`INLINE_KEY`] bytes are
    /// objects with an empty payload.
    Inline,
}

impl Layout {
    /// Slots per leaf.
    pub(crate) fn slots(self) -> usize {
        match self {
            Layout::Objects => LEAF_SLOTS,
            Layout::Inline => INLINE_SLOTS,
        }
    }

    fn slot_size(self) -> usize {
        match self {
            Layout::Objects => 16,
            Layout::Inline => 32,
        }
    }

    fn magic(self) -> u64 {
        match self {
            Layout::Objects => OBJECTS_MAGIC,
            Layout::Inline => INLINE_MAGIC,
        }
    }

    /// The bitmap with every slot valid.
    fn all_slots(self) -> u64 {
        (1 << self.slots()) - 1
    }

    /// The bytes of a leaf that are read and written: header and slots.
    fn leaf_used(self) -> usize {
        LEAF_HEADER + self.slots() * self.slot_size()
    }

    /// The PM offset of slot `i` of the leaf at `leaf`.
    fn slot_at(self, leaf: u64, i: usize) -> u64 {
        leaf + (LEAF_HEADER + self.slot_size() * i) as u64
    }
}

/// A key's fingerprint: a first filter before the key itself is compared.
fn fingerprint(key: &[u8]) -> u64 {
    u64::from(crc32c(key)) | (key.len() as u64) << 32
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// One valid slot as read from PM, checked. Equality is "the same entry" (the torn-split
/// rule): the address-dependent check bits are not part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// An invalid slot (its bitmap bit is clear; its bytes are not read).
    Free,
    /// Objects layout: the key's fingerprint and the object holding key and payload.
    Object { fp: u64, obj: u64 },
    /// Inline layout, a key of at most [`INLINE_KEY`] bytes held in the slot.
    Short {
        word: u64,
        len: u8,
        key: [u8; INLINE_KEY],
    },
    /// Inline layout, a longer key: its fingerprint and the object holding it.
    Long { word: u64, fp: u64, obj: u64 },
}

impl Slot {
    /// The object the slot references, if any.
    fn object(&self) -> Option<u64> {
        match *self {
            Slot::Object { obj, .. } | Slot::Long { obj, .. } => Some(obj),
            Slot::Free | Slot::Short { .. } => None,
        }
    }

    /// The slot's image at PM offset `s` (16 or 32 bytes by layout).
    fn image(&self, s: u64) -> Vec<u8> {
        match *self {
            Slot::Free => unreachable!("a free slot is never written"),
            Slot::Object { fp, obj } => {
                let mut b = vec![0u8; 16];
                b[..8].copy_from_slice(&fp.to_le_bytes());
                b[8..].copy_from_slice(&encode_checked(s + 8, obj).to_le_bytes());
                b
            }
            Slot::Short { word, len, key } => {
                let mut b = vec![0u8; 32];
                b[..8].copy_from_slice(&word.to_le_bytes());
                b[8] = len;
                b[9..9 + usize::from(len)].copy_from_slice(&key[..usize::from(len)]);
                b
            }
            Slot::Long { word, fp, obj } => {
                let mut b = vec![0u8; 32];
                b[..8].copy_from_slice(&word.to_le_bytes());
                b[8] = LONG_TAG;
                b[12..16].copy_from_slice(&(fp as u32).to_le_bytes());
                b[16..20].copy_from_slice(&((fp >> 32) as u32).to_le_bytes());
                b[24..32].copy_from_slice(&encode_checked(s + 24, obj).to_le_bytes());
                b
            }
        }
    }
}

/// A leaf as read from PM, checked.
#[derive(Clone)]
struct Leaf {
    at: u64,
    bits: u64,
    next: u64,
    /// Per slot (the layout's count; [`Slot::Free`] where the bit is clear).
    slots: Vec<Slot>,
}

impl Leaf {
    fn valid(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(|i| self.bits & (1 << i) != 0)
    }

    fn free_slot(&self) -> Option<usize> {
        (0..self.slots.len()).find(|i| self.bits & (1 << i) == 0)
    }
}

/// One key and its payload (for [`Layout::Inline`], the word's 8 little-endian bytes).
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

/// What [`PbTree::upsert_word`] does with a key, given its word (if present).
// The word interface serves LAB-DB's L0, which is built on it in later steps; until then only
// the tests use it.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WordOp {
    /// Leave it as it is.
    Keep,
    /// Insert the key with this word, or replace its word in place.
    Put(u64),
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
    /// DRAM bytes of the inner nodes (a DRAM map: separator keys and leaf offsets; PM inner
    /// nodes: the cached root offset).
    pub dram_bytes: u64,
    /// PM inner nodes (0 when they are in DRAM).
    pub inner_nodes: u64,
    /// PM bytes of the inner nodes' slab slots (part of `pm_bytes`).
    pub inner_pm_bytes: u64,
}

/// Reads and checks the structures of one tree: the I/O half, shared by open and updates.
struct Pm {
    pool: Arc<PmPool>,
    location: String,
    layout: Layout,
    /// Bytes of cache lines written back since the last [`PbTree::take_persisted_bytes`].
    persisted: std::sync::atomic::AtomicU64,
}

impl Pm {
    fn bad(&self, why: String) -> Error {
        Error::corruption(self.location.clone(), why)
    }

    fn read_leaf(&self, at: u64) -> Result<Leaf> {
        let layout = self.layout;
        let mut b = vec![0u8; layout.leaf_used()];
        if at
            .checked_add(LEAF_BYTES)
            .is_none_or(|e| e > self.pool.size())
        {
            return Err(self.bad(format!("PM tree leaf pointer {at} is outside the pool")));
        }
        self.pool.read(at, &mut b)?;
        if u64_at(&b, 16) != layout.magic()
            || u64_at(&b, 24) != at
            || unmask(u32_at(&b, 32)) != crc32c(&b[16..32])
        {
            return Err(self.bad(format!("PM tree leaf at {at}: bad header")));
        }
        let bits = decode_checked(at, u64_at(&b, 0))
            .filter(|bits| bits & !layout.all_slots() == 0)
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: bitmap fails its check")))?;
        let next = decode_checked(at + 8, u64_at(&b, 8))
            .ok_or_else(|| self.bad(format!("PM tree leaf at {at}: next link fails its check")))?;
        let mut slots = vec![Slot::Free; layout.slots()];
        for (i, s) in slots.iter_mut().enumerate() {
            if bits & (1 << i) != 0 {
                let o = LEAF_HEADER + layout.slot_size() * i;
                let image = &b[o..o + layout.slot_size()];
                *s = self
                    .decode_slot(layout.slot_at(at, i), image)
                    .ok_or_else(|| {
                        self.bad(format!("PM tree leaf at {at}: slot {i} fails its check"))
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

    /// The valid slot at PM offset `s` with bytes `b`, or `None` if it fails its checks.
    fn decode_slot(&self, s: u64, b: &[u8]) -> Option<Slot> {
        let zero = |r: std::ops::Range<usize>| b[r].iter().all(|&x| x == 0);
        match self.layout {
            Layout::Objects => Some(Slot::Object {
                fp: u64_at(b, 0),
                obj: decode_checked(s + 8, u64_at(b, 8))?,
            }),
            Layout::Inline => {
                let word = u64_at(b, 0);
                let tag = b[8];
                if usize::from(tag) <= INLINE_KEY {
                    let len = usize::from(tag);
                    if !zero(9 + len..32) {
                        return None;
                    }
                    let mut key = [0u8; INLINE_KEY];
                    key[..len].copy_from_slice(&b[9..9 + len]);
                    Some(Slot::Short {
                        word,
                        len: tag,
                        key,
                    })
                } else if tag == LONG_TAG {
                    let len = u32_at(b, 16);
                    if !zero(9..12) || !zero(20..24) || (len as usize) <= INLINE_KEY {
                        return None;
                    }
                    Some(Slot::Long {
                        word,
                        fp: u64::from(u32_at(b, 12)) | u64::from(len) << 32,
                        obj: decode_checked(s + 24, u64_at(b, 24))?,
                    })
                } else {
                    None
                }
            }
        }
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

    /// The key of a valid slot.
    fn key_of(&self, slot: &Slot) -> Result<Vec<u8>> {
        Ok(self.entry_of(slot)?.0)
    }

    /// The key and payload of a valid slot. A long inline key's object must hold the key
    /// alone.
    fn entry_of(&self, slot: &Slot) -> Result<Entry> {
        match *slot {
            Slot::Free => unreachable!("only valid slots are read"),
            Slot::Object { obj, .. } => {
                let (k, p, _) = self.read_object(obj)?;
                Ok((k, p))
            }
            Slot::Short { word, len, key } => Ok((
                key[..usize::from(len)].to_vec(),
                word.to_le_bytes().to_vec(),
            )),
            Slot::Long { word, obj, .. } => {
                let (k, p, _) = self.read_object(obj)?;
                if !p.is_empty() {
                    return Err(self.bad(format!(
                        "PM tree object at {obj}: a long key's object holds a payload"
                    )));
                }
                Ok((k, word.to_le_bytes().to_vec()))
            }
        }
    }

    /// Checks that a slot's fingerprint (Objects, long inline keys) matches its key.
    fn check_fingerprint(&self, leaf: u64, i: usize, slot: &Slot, key: &[u8]) -> Result<()> {
        match *slot {
            Slot::Object { fp, .. } | Slot::Long { fp, .. } if fp != fingerprint(key) => Err(self
                .bad(format!(
                    "PM tree leaf at {leaf}: slot {i}'s fingerprint does not match its key"
                ))),
            _ => Ok(()),
        }
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

    /// Stores the checked word of `value` at `at`, persisted.
    fn store_persist(&self, at: u64, value: u64) -> Result<()> {
        self.store_raw_persist(at, encode_checked(at, value))
    }

    /// Stores the 64-bit `word` as it is at `at` (an inline payload word), persisted.
    fn store_raw_persist(&self, at: u64, word: u64) -> Result<()> {
        self.persisted
            .fetch_add(64, std::sync::atomic::Ordering::Relaxed);
        self.pool.store_u64_persist(at, word)?;
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

fn leaf_header(layout: Layout, at: u64) -> [u8; LEAF_HEADER] {
    let mut h = [0u8; LEAF_HEADER];
    h[16..24].copy_from_slice(&layout.magic().to_le_bytes());
    h[24..32].copy_from_slice(&at.to_le_bytes());
    let crc = mask(crc32c(&h[16..32]));
    h[32..36].copy_from_slice(&crc.to_le_bytes());
    h
}

/// The leaf image of a new leaf at `at` with `slots` in slots 0.. (each encoded for its new
/// address) and next leaf `next`.
fn leaf_image(layout: Layout, at: u64, slots: &[Slot], next: u64) -> Vec<u8> {
    let mut b = leaf_header(layout, at).to_vec();
    b.resize(layout.leaf_used(), 0);
    let bits = if slots.is_empty() {
        0
    } else {
        layout.all_slots() >> (layout.slots() - slots.len())
    };
    b[0..8].copy_from_slice(&encode_checked(at, bits).to_le_bytes());
    b[8..16].copy_from_slice(&encode_checked(at + 8, next).to_le_bytes());
    for (i, slot) in slots.iter().enumerate() {
        let o = LEAF_HEADER + layout.slot_size() * i;
        let image = slot.image(layout.slot_at(at, i));
        b[o..o + image.len()].copy_from_slice(&image);
    }
    b
}

struct State {
    /// The inner nodes: which leaf holds a key.
    inner: Inner,
    /// The permanent head leaf.
    head: u64,
    /// Leaves in the chain.
    leaves: u64,
    slab: Slab,
    keys: u64,
    /// A read-only tree's repairs, made in DRAM only: per leaf, the bitmap without a torn
    /// split's duplicates (empty when writable: the repairs are in PM).
    rebits: std::collections::HashMap<u64, u64>,
}

impl State {
    /// The leaf at `at`, with a read-only open's repairs applied.
    fn read_leaf(&self, pm: &Pm, at: u64) -> Result<Leaf> {
        let mut leaf = pm.read_leaf(at)?;
        if let Some(&bits) = self.rebits.get(&at) {
            for (i, slot) in leaf.slots.iter_mut().enumerate() {
                if bits & (1 << i) == 0 {
                    *slot = Slot::Free;
                }
            }
            leaf.bits = bits;
        }
        Ok(leaf)
    }
}

/// A persistent B+ tree in a PM pool (module docs). `Send + Sync`.
pub(crate) struct PbTree {
    pm: Pm,
    state: RwLock<State>,
    read_only: bool,
    /// Set by [`PbTree::retire`]: the tree is no longer published under its root, so its
    /// chunks go back to the pool when it is dropped.
    retired: std::sync::atomic::AtomicBool,
}

impl Drop for PbTree {
    fn drop(&mut self) {
        if self.retired.load(std::sync::atomic::Ordering::Acquire) && !self.read_only {
            self.state.get_mut().slab.release_all();
        }
    }
}

/// An entry as open found it: key, payload, slot index, slot.
type Found = (Vec<u8>, Vec<u8>, usize, Slot);

/// What open found, before the repairs.
struct Scanned {
    /// Leaves in chain order, with their (deduplicated) entries.
    leaves: Vec<(Leaf, Vec<Found>)>,
    /// Per leaf (index into `leaves`), the bitmap it must get: a torn split's duplicates
    /// dropped.
    rebits: Vec<(usize, u64)>,
    /// PM inner nodes: the published root, the level-1 separators in key order and every
    /// node with its slot bytes (`None`: no root published).
    inner: Option<(u64, Walked)>,
}

/// A leaf of the chain: where, and its lowest and highest keys (`None`: empty).
struct ChainLeaf {
    at: u64,
    keys: Option<(Vec<u8>, Vec<u8>)>,
}

/// Whether inner separators `seps` route every key of the leaf chain `chain` (the head first)
/// to its leaf: the head's separator is the empty key; every other non-empty leaf is named, in
/// chain order, by a separator above every key before it and at or below its own lowest key;
/// an empty leaf may be named or not (it holds nothing to route); nothing else is named.
fn seps_match(seps: &[Sep], chain: &[ChainLeaf]) -> bool {
    let mut j = 0;
    let mut prev_sep: Option<&Vec<u8>> = None;
    let mut prev_max: Option<&Vec<u8>> = None;
    for (i, leaf) in chain.iter().enumerate() {
        if seps.get(j).is_none_or(|s| s.1 != leaf.at) {
            if i == 0 || leaf.keys.is_some() {
                return false;
            }
            continue;
        }
        let sep = &seps[j].0;
        j += 1;
        let ok = if i == 0 {
            sep.is_empty()
        } else {
            prev_sep.is_some_and(|p| p < sep)
                && prev_max.is_none_or(|m| m < sep)
                && leaf.keys.as_ref().is_none_or(|(min, _)| sep <= min)
        };
        if !ok {
            return false;
        }
        prev_sep = Some(sep);
        if let Some((_, max)) = &leaf.keys {
            prev_max = Some(max);
        }
    }
    j == seps.len()
}

/// The tree as one owner of its pool's chunks ([`PmOwner`]): open it through
/// [`crate::fs::open_pm_owners`] with the pool's other owners, then [`PbTreeOwner::into_tree`].
pub(crate) struct PbTreeOwner {
    pm: Pm,
    name: String,
    head: u64,
    slab: Slab,
    scanned: Option<Scanned>,
    inner: InnerKind,
    fanout: usize,
}

impl PbTreeOwner {
    /// The tree rooted at `root_name` in `pool`, of the [`Layout::Objects`] layout with its
    /// inner nodes in PM (SLM-DB's global index), not opened yet.
    #[cfg(test)]
    pub(crate) fn new(pool: Arc<PmPool>, location: &str, root_name: &str) -> PbTreeOwner {
        PbTreeOwner::with_layout(pool, location, root_name, Layout::Objects, InnerKind::Pm)
    }

    /// The tree rooted at `root_name` in `pool`, of leaf layout `layout` and inner nodes
    /// `inner`, not opened yet. The layout must be the one the tree was created with (a leaf
    /// of the other fails its magic: corruption). The inner kind may differ from the one the
    /// tree had: PM inner nodes are built at open, or dropped (their root word cleared, then
    /// freed).
    pub(crate) fn with_layout(
        pool: Arc<PmPool>,
        location: &str,
        root_name: &str,
        layout: Layout,
        inner: InnerKind,
    ) -> PbTreeOwner {
        let location = format!("{location}: PM tree {root_name}");
        PbTreeOwner {
            slab: Slab::new(Arc::clone(&pool), location.clone()),
            pm: Pm {
                pool,
                location,
                layout,
                persisted: std::sync::atomic::AtomicU64::new(0),
            },
            name: root_name.to_string(),
            head: 0,
            scanned: None,
            inner,
            fanout: FANOUT,
        }
    }

    /// Sets the children per PM inner node (tests grow tall trees with small ones).
    #[cfg(test)]
    pub(crate) fn with_fanout(mut self, fanout: usize) -> PbTreeOwner {
        self.fanout = fanout.max(2);
        self
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
                let slot = leaf.slots[i];
                let (key, payload) = pm.entry_of(&slot)?;
                pm.check_fingerprint(at, i, &slot, &key)?;
                entries.push((key, payload, i, slot));
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
            for (key, _, slot, found) in &dups {
                let same = leaves[j].1.iter().any(|e| &e.0 == key && e.3 == *found);
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
        // Mark what the deduplicated chain references (a dropped duplicate shares its object
        // with the entry it duplicates).
        for (leaf, entries) in &leaves {
            self.slab.mark_used(leaf.at, class_of(LEAF_BYTES))?;
            for (k, p, _, slot) in entries {
                if let Some(obj) = slot.object() {
                    let payload = if matches!(slot, Slot::Long { .. }) {
                        0
                    } else {
                        p.len()
                    };
                    let class = class_of((OBJECT_HEADER + k.len() + payload) as u64);
                    self.slab.mark_used(obj, class)?;
                }
            }
        }
        // PM inner nodes, whichever kind this open wants: kept, or (DRAM) held until the
        // inner-root word is cleared, so that no chunk of theirs is reused while it names them.
        let inner = match pm.inner_root(head)? {
            None => None,
            Some(root) => {
                let (seps, nodes) = PmInner::walk(pm, root, max_leaves)?;
                for &(at, bytes) in &nodes {
                    self.slab.mark_used(at, class_of(bytes))?;
                }
                Some((root, (seps, nodes)))
            }
        };
        self.scanned = Some(Scanned {
            leaves,
            rebits,
            inner,
        });
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
            inner: kind,
            fanout,
            ..
        } = self;
        let Scanned {
            mut leaves,
            rebits,
            inner: found,
        } = scanned.unwrap_or_else(|| Scanned {
            leaves: Vec::new(),
            rebits: Vec::new(),
            inner: None,
        });
        let mut dram_rebits = std::collections::HashMap::new();
        for (i, bits) in rebits {
            if writable {
                pm.store_persist(leaves[i].0.at, bits)?;
            } else {
                dram_rebits.insert(leaves[i].0.at, bits);
            }
            leaves[i].0.bits = bits;
        }
        // The chain as the inner nodes must see it: the head, then every non-empty leaf with
        // its lowest and highest key.
        let mut chain: Vec<ChainLeaf> = Vec::new();
        let mut keys = 0;
        let mut prev = head;
        // Leaves linked once the repairs are made (an empty one stays when read-only).
        let mut linked = 0;
        for (leaf, entries) in leaves {
            keys += entries.len() as u64;
            let span = entries
                .first()
                .zip(entries.last())
                .map(|(lo, hi)| (lo.0.clone(), hi.0.clone()));
            if leaf.at != head && span.is_none() {
                // Empty and still linked: a crash between a delete and the unlink.
                if writable {
                    pm.store_persist(prev + 8, leaf.next)?;
                    slab.free(leaf.at);
                } else {
                    linked += 1;
                }
                continue;
            }
            linked += 1;
            chain.push(ChainLeaf {
                at: leaf.at,
                keys: span,
            });
            prev = leaf.at;
        }
        if chain.is_empty() {
            // A tree just created: its head is not scanned.
            linked = 1;
            chain.push(ChainLeaf {
                at: head,
                keys: None,
            });
        }
        // The separators a rebuild uses: each leaf's lowest key, the head's the empty key.
        let fresh = |chain: &[ChainLeaf]| -> Vec<Sep> {
            chain
                .iter()
                .enumerate()
                .map(|(i, l)| match (&l.keys, i) {
                    (Some((min, _)), 1..) => (min.clone(), l.at),
                    _ => (Vec::new(), l.at),
                })
                .collect()
        };
        let dram = |chain: &[ChainLeaf]| Inner::Dram(fresh(chain).into_iter().collect());
        let inner = match (kind, found) {
            (InnerKind::Dram, None) => dram(&chain),
            // PM inner nodes a tree now kept in DRAM had: the root word cleared, then freed
            // (read-only: left as they are, and held).
            (InnerKind::Dram, Some((_, (_, nodes)))) => {
                if writable {
                    pm.store_raw_persist(head + inner::ROOT_WORD, 0)?;
                    for (at, _) in nodes {
                        slab.free(at);
                    }
                }
                dram(&chain)
            }
            (InnerKind::Pm, Some((root, (seps, nodes)))) if seps_match(&seps, &chain) => {
                Inner::Pm(PmInner::adopt(head, root, fanout, &nodes))
            }
            // No root yet (a new tree), or one a crash left a leaf behind (module docs of
            // `inner`): build them again from the chain, or in DRAM when nothing may be written.
            (InnerKind::Pm, _) if !writable => dram(&chain),
            (InnerKind::Pm, stale) => {
                let built = PmInner::build(&pm, &mut slab, head, fanout, fresh(&chain))?;
                for (at, _) in stale.map(|s| s.1 .1).unwrap_or_default() {
                    slab.free(at);
                }
                Inner::Pm(built)
            }
        };
        Ok(PbTree {
            pm,
            state: RwLock::new(State {
                inner,
                head,
                leaves: linked,
                slab,
                keys,
                rebits: dram_rebits,
            }),
            read_only: !writable,
            retired: std::sync::atomic::AtomicBool::new(false),
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
        let layout = self.pm.layout;
        self.pm.pool.write(at, &leaf_image(layout, at, &[], 0))?;
        self.pm.persist(&[(at, layout.leaf_used() as u64)])?;
        self.head = at;
        Ok(at)
    }
}

impl PbTree {
    /// Creates a new, empty tree of `layout` in `pool` (whose allocator is already rebuilt)
    /// and publishes it under `root_name`, replacing whatever the root named (one failure-atomic
    /// root-directory update: after a crash the root names the old structure or the new empty
    /// tree; the other's chunks are free at the next open). The caller retires the tree the
    /// root named before ([`PbTree::retire`]).
    pub(crate) fn create_empty(
        pool: Arc<PmPool>,
        location: &str,
        root_name: &str,
        layout: Layout,
        inner: InnerKind,
    ) -> Result<PbTree> {
        let mut owner =
            PbTreeOwner::with_layout(Arc::clone(&pool), location, root_name, layout, inner);
        let head = owner.create()?;
        if let Err(e) = pool.set_named_root(root_name, head) {
            owner.slab.free(head);
            return Err(e.into());
        }
        owner.into_tree(true)
    }

    /// Marks the tree as no longer published (its root now names another structure, durably):
    /// its chunks go back to the pool when the last handle to it is dropped, so a reader still
    /// holding it reads it intact until then.
    pub(crate) fn retire(&self) {
        self.retired
            .store(true, std::sync::atomic::Ordering::Release);
    }

    fn writable(&self) -> Result<()> {
        if self.read_only {
            return Err(Error::InvalidArgument(format!(
                "{} was opened read-only",
                self.pm.location
            )));
        }
        Ok(())
    }

    /// The tree's leaf layout.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn layout(&self) -> Layout {
        self.pm.layout
    }

    /// The slot of `key` in `leaf`, if present.
    fn find_in(&self, leaf: &Leaf, key: &[u8]) -> Result<Option<usize>> {
        let fp = fingerprint(key);
        for i in leaf.valid() {
            let hit = match leaf.slots[i] {
                Slot::Object { fp: f, obj } | Slot::Long { fp: f, obj, .. } => {
                    f == fp && self.pm.read_object(obj)?.0 == key
                }
                Slot::Short { len, key: k, .. } => &k[..usize::from(len)] == key,
                Slot::Free => false,
            };
            if hit {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// The payload of `key` (for [`Layout::Inline`], its word's 8 little-endian bytes).
    pub(crate) fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let st = self.state.read();
        let leaf = st.read_leaf(&self.pm, st.inner.leaf_of(&self.pm, key)?)?;
        match self.find_in(&leaf, key)? {
            Some(i) => Ok(Some(self.pm.entry_of(&leaf.slots[i])?.1)),
            None => Ok(None),
        }
    }

    /// The word of `key` ([`Layout::Inline`] trees only).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn get_word(&self, key: &[u8]) -> Result<Option<u64>> {
        self.words_only()?;
        Ok(self.get(key)?.map(|p| word_of(&p)))
    }

    #[cfg_attr(not(test), allow(dead_code))]
    fn words_only(&self) -> Result<()> {
        if self.pm.layout != Layout::Inline {
            return Err(Error::InvalidArgument(format!(
                "{}: word payloads need the inline leaf layout",
                self.pm.location
            )));
        }
        Ok(())
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

    /// Reads `key`'s word and applies what `decide` returns for it, atomically with respect to
    /// every other update; returns the word it found (so the caller can drop its reference).
    /// [`Layout::Inline`] trees only: a [`WordOp::Put`] on a present key is one persisted
    /// 8-byte store of the slot's word (module docs: update, Inline).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn upsert_word(
        &self,
        key: &[u8],
        decide: impl FnOnce(Option<u64>) -> WordOp,
    ) -> Result<Option<u64>> {
        self.words_only()?;
        let mut old = None;
        self.upsert(key, |p| {
            old = p.map(word_of);
            match decide(old) {
                WordOp::Keep => Upsert::Keep,
                WordOp::Put(w) => Upsert::Put(w.to_le_bytes().to_vec()),
                WordOp::Delete => Upsert::Delete,
            }
        })?;
        Ok(old)
    }

    /// Reads `key`'s payload and applies what `decide` returns for it, atomically with respect
    /// to every other update (e.g. "replace only if it still names this file"). In a
    /// [`Layout::Inline`] tree a payload is exactly 8 bytes (a word, little-endian); any other
    /// length is refused with `InvalidArgument` and changes nothing.
    pub(crate) fn upsert(
        &self,
        key: &[u8],
        decide: impl FnOnce(Option<&[u8]>) -> Upsert,
    ) -> Result<()> {
        self.writable()?;
        let mut st = self.state.write();
        let leaf_at = st.inner.leaf_of(&self.pm, key)?;
        let mut leaf = self.pm.read_leaf(leaf_at)?;
        let found = self.find_in(&leaf, key)?;
        let old = match found {
            Some(i) => Some(self.pm.entry_of(&leaf.slots[i])?.1),
            None => None,
        };
        let op = decide(old.as_deref());
        if let Upsert::Put(p) = &op {
            if self.pm.layout == Layout::Inline && p.len() != 8 {
                return Err(Error::InvalidArgument(format!(
                    "{}: an inline-layout payload is one 8-byte word, not {} bytes",
                    self.pm.location,
                    p.len()
                )));
            }
        }
        match (op, found) {
            (Upsert::Keep, _) | (Upsert::Delete, None) => Ok(()),
            (Upsert::Put(p), Some(slot)) => match leaf.slots[slot] {
                Slot::Object { obj: old_obj, .. } => {
                    let obj = self.write_object(&mut st.slab, key, &p)?;
                    let at = self.pm.layout.slot_at(leaf_at, slot) + 8;
                    self.pm.store_persist(at, obj)?;
                    st.slab.free(old_obj);
                    Ok(())
                }
                // In place: the one store that publishes the new word.
                Slot::Short { .. } | Slot::Long { .. } => self
                    .pm
                    .store_raw_persist(self.pm.layout.slot_at(leaf_at, slot), word_of(&p)),
                Slot::Free => unreachable!("a found slot is valid"),
            },
            (Upsert::Put(p), None) => {
                if leaf.bits == self.pm.layout.all_slots() {
                    self.split(&mut st, &leaf)?;
                    let at = st.inner.leaf_of(&self.pm, key)?;
                    leaf = self.pm.read_leaf(at)?;
                }
                self.insert_into(&mut st, &leaf, key, &p)
            }
            (Upsert::Delete, Some(slot)) => {
                let bits = leaf.bits & !(1 << slot);
                self.pm.store_persist(leaf_at, bits)?;
                if let Some(obj) = leaf.slots[slot].object() {
                    st.slab.free(obj);
                }
                st.keys -= 1;
                if bits == 0 {
                    self.unlink(&mut st, &leaf, key)?;
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

    /// Inserts a new key into a free slot of `leaf` (module docs: insert).
    fn insert_into(&self, st: &mut State, leaf: &Leaf, key: &[u8], payload: &[u8]) -> Result<()> {
        let layout = self.pm.layout;
        let i = leaf.free_slot().expect("a leaf with room");
        let mut ranges = Vec::with_capacity(2);
        let slot = match layout {
            Layout::Objects => {
                let (obj, total) = self.new_object(&mut st.slab, key, payload)?;
                ranges.push((obj, total));
                Slot::Object {
                    fp: fingerprint(key),
                    obj,
                }
            }
            Layout::Inline if key.len() <= INLINE_KEY => {
                let mut k = [0u8; INLINE_KEY];
                k[..key.len()].copy_from_slice(key);
                Slot::Short {
                    word: word_of(payload),
                    len: key.len() as u8,
                    key: k,
                }
            }
            Layout::Inline => {
                // `new_object` refuses a key that does not fit a chunk, so its length fits
                // the slot's u32.
                let (obj, total) = self.new_object(&mut st.slab, key, &[])?;
                ranges.push((obj, total));
                Slot::Long {
                    word: word_of(payload),
                    fp: fingerprint(key),
                    obj,
                }
            }
        };
        let s = layout.slot_at(leaf.at, i);
        let image = slot.image(s);
        self.pm.pool.write(s, &image)?;
        ranges.push((s, image.len() as u64));
        // Object and slot in one fence, then the publishing bitmap word.
        self.pm.persist(&ranges)?;
        self.pm.store_persist(leaf.at, leaf.bits | 1 << i)?;
        st.keys += 1;
        Ok(())
    }

    /// Splits the full leaf `a` (module docs: split).
    fn split(&self, st: &mut State, a: &Leaf) -> Result<()> {
        let layout = self.pm.layout;
        let mut entries = Vec::with_capacity(layout.slots());
        for i in a.valid() {
            entries.push((self.pm.key_of(&a.slots[i])?, i));
        }
        entries.sort();
        let upper = entries.split_off(entries.len() / 2);
        let b = st.slab.allocate(class_of(LEAF_BYTES))?;
        let slots: Vec<Slot> = upper.iter().map(|&(_, i)| a.slots[i]).collect();
        let sep = upper[0].0.clone();
        // B, then (PM inner nodes) the inner path naming it, both persisted and unreachable;
        // then the chain's two stores; then the inner root.
        let plan = self
            .pm
            .pool
            .write(b, &leaf_image(layout, b, &slots, a.next))
            .map_err(Error::from)
            .and_then(|()| self.pm.persist(&[(b, layout.leaf_used() as u64)]))
            .and_then(|()| st.inner.plan_insert(&self.pm, &mut st.slab, &sep, b));
        let plan = match plan {
            Ok(plan) => plan,
            Err(e) => {
                st.slab.free(b);
                return Err(e);
            }
        };
        let bits = upper.iter().fold(a.bits, |bits, &(_, i)| bits & !(1 << i));
        let linked = self
            .pm
            .store_persist(a.at + 8, b)
            .and_then(|()| self.pm.store_persist(a.at, bits));
        if let Err(e) = linked {
            // The chain may name B now, with A still holding the upper half: the old inner
            // nodes route those keys to A, which holds them.
            Inner::abort(&mut st.slab, plan);
            return Err(e);
        }
        st.inner
            .commit_insert(&self.pm, &mut st.slab, plan, sep, b)?;
        st.leaves += 1;
        Ok(())
    }

    /// Unlinks the empty leaf `leaf`, which held `key`, unless it is the head (module docs:
    /// unlink). If the new inner nodes cannot be written (a full pool), the empty leaf stays
    /// linked: it holds nothing, so every read and write stays correct.
    fn unlink(&self, st: &mut State, leaf: &Leaf, key: &[u8]) -> Result<()> {
        let (sep, at) = st.inner.sep_of(&self.pm, key)?;
        if sep.is_empty() || at != leaf.at {
            return Ok(());
        }
        let prev = st.inner.leaf_before(&self.pm, &sep)?;
        let plan = match st.inner.plan_remove(&self.pm, &mut st.slab, &sep) {
            Ok(plan) => plan,
            Err(e @ Error::Corruption { .. }) => return Err(e),
            Err(_) => return Ok(()),
        };
        if let Err(e) = self.pm.store_persist(prev + 8, leaf.next) {
            Inner::abort(&mut st.slab, plan);
            return Err(e);
        }
        st.inner.commit_remove(&self.pm, &mut st.slab, plan, &sep)?;
        st.slab.free(leaf.at);
        st.leaves -= 1;
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
        // The leaf that holds `start`'s range, then on along the chain (key order).
        let mut at = st.inner.leaf_of(&self.pm, start)?;
        for _ in 0..st.leaves {
            if at == 0 {
                break;
            }
            let leaf = st.read_leaf(&self.pm, at)?;
            at = leaf.next;
            let mut out = Vec::new();
            for i in leaf.valid() {
                let (k, p) = self.pm.entry_of(&leaf.slots[i])?;
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
        if at != 0 {
            return Err(self.pm.bad(format!(
                "the leaf chain holds more than the {} leaves counted",
                st.leaves
            )));
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

    /// PM bytes of the slab slots in use (leaves and objects): [`PbTreeStats::pm_bytes`]
    /// without walking the inner nodes.
    pub(crate) fn pm_bytes(&self) -> u64 {
        self.state.read().slab.bytes_used()
    }

    /// Figures of the tree.
    pub(crate) fn stats(&self) -> PbTreeStats {
        let st = self.state.read();
        let (inner_nodes, inner_pm_bytes) = st.inner.pm_nodes();
        PbTreeStats {
            keys: st.keys,
            leaves: st.leaves,
            pm_bytes: st.slab.bytes_used(),
            chunks: st.slab.chunk_count(),
            dram_bytes: st.inner.dram_bytes(),
            inner_nodes,
            inner_pm_bytes,
        }
    }

    /// Where the tree keeps its inner nodes now (a read-only open of a tree with PM inner
    /// nodes a crash left behind the chain keeps them in DRAM).
    #[cfg(test)]
    pub(crate) fn inner_kind(&self) -> InnerKind {
        self.state.read().inner.kind()
    }

    /// The separator and leaf whose range holds `key` (tests).
    #[cfg(test)]
    pub(crate) fn sep_of(&self, key: &[u8]) -> Result<(Vec<u8>, u64)> {
        self.state.read().inner.sep_of(&self.pm, key)
    }

    /// Reads and checks every leaf and object of the chain, and that the inner nodes route
    /// every key to its leaf (PM inner nodes: each node read and checked, none leaked);
    /// returns the number of keys.
    pub(crate) fn verify(&self) -> Result<u64> {
        let st = self.state.read();
        let mut keys = 0u64;
        let mut last: Option<Vec<u8>> = None;
        let mut chain = Vec::new();
        let mut at = st.head;
        while at != 0 {
            if chain.len() as u64 > st.leaves {
                return Err(self.pm.bad(format!(
                    "the leaf chain holds more than the {} leaves counted",
                    st.leaves
                )));
            }
            let leaf = st.read_leaf(&self.pm, at)?;
            let mut ks = Vec::new();
            for i in leaf.valid() {
                let k = self.pm.key_of(&leaf.slots[i])?;
                self.pm.check_fingerprint(at, i, &leaf.slots[i], &k)?;
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
            chain.push(ChainLeaf {
                at,
                keys: ks.first().cloned().zip(ks.last().cloned()),
            });
            if let Some(k) = ks.pop() {
                last = Some(k);
            }
            at = leaf.next;
        }
        let (seps, _) = st
            .inner
            .separators(&self.pm, self.pm.pool.size() / LEAF_BYTES)?;
        if chain.len() as u64 != st.leaves || !seps_match(&seps, &chain) {
            return Err(self.pm.bad(format!(
                "the inner nodes name {} leaves that do not match the chain of {}",
                seps.len(),
                chain.len()
            )));
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

/// The word of an inline payload (always 8 bytes: [`PbTree::upsert`] refuses others).
fn word_of(p: &[u8]) -> u64 {
    u64::from_le_bytes(p.try_into().expect("an inline payload is 8 bytes"))
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
