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

mod io;
mod iter;
mod leaf;
mod owner;
use io::*;
pub(crate) use iter::*;
pub(crate) use leaf::*;
pub(crate) use owner::*;

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
