//! LAB-DB's L0 (Kim et al., "LAB-DB", ACM TOS 2024, sections 3.2-3.4): two persistent B+ trees
//! ([`crate::pbtree`], [`Layout::Inline`]: leaves in PM, inner nodes in DRAM) that map each user
//! key to the 8-byte address of its newest version's value record in a value array on SSD
//! ([`super::vlog`]). One tree is **mutable** (flushes insert into it, and a key already there
//! has its address overwritten in place: one persisted 8-byte store); the other, when there is
//! one, is **immutable** and is compacted chunk by chunk into L1.
//!
//! # Where the trees are, and which is which
//!
//! Tree `n` lives under the named root `labdb-tree-{n & 1}` of the pool ([`TREE_ROOTS`]); the
//! version records the numbers of the mutable and immutable trees ([`TreeRoles`], no record yet
//! = mutable 1, no immutable). Consecutive trees use different roots, so the mutable and the
//! immutable tree never share one. A root no role names holds a tree that is wholly compacted
//! (or never used): it is **reset** (a new empty tree published under the root by one
//! failure-atomic root-directory update, the old one's chunks freed once no reader holds it)
//! before the root is named again, at open or at the next switch.
//!
//! # Persist points and the invariant at each
//!
//! * **Flush** (`flush`): the memtable's kept versions are appended to a new value array, which
//!   is synced (and its directory) first; then each user key's newest version is written into
//!   the mutable tree (insert, or one 8-byte in-place store: the tree's own protocol). Until the
//!   manifest record that retires the flushed log, a crash replays the log and flushes the same
//!   versions again: every tree entry then points at the new value array (entries come only
//!   from memtables at most as new as the replayed one, so overwriting is always right), and
//!   the first array, no longer referenced, is deleted.
//! * **Switch** (`switch`): when the mutable tree's leaves reach `immutable_at` of the leaf
//!   region and there is no immutable tree, the root of tree `m + 1` (which held tree `m - 1`,
//!   wholly compacted, named by no role) is reset to a new empty tree, then ONE manifest record
//!   names `m + 1` mutable and `m` immutable. A crash before the record leaves the roles as they
//!   were (the reset root is unnamed and empty).
//! * **Chunk compaction** (`chunk_iter`, `chunk_done`): the immutable tree's next key range is
//!   read (values from the value arrays), merged with the overlapping L1 tables and written to
//!   L1; the outputs are synced before the manifest record that installs them, and the chunk's
//!   entries leave the tree only after that record (and after every reader of an older
//!   version is gone). A crash in between leaves entries in the tree that L1 also holds: the
//!   same versions, so reads are unchanged, and a later compaction of them drops the exact
//!   duplicate. The record of the last chunk also clears the immutable role.
//!
//! # Snapshots (a tree holds only the newest version of a key)
//!
//! A version a flush replaces in place (or an older version of the same flush) that a live
//! snapshot may still see is kept in a DRAM map of **held versions** (key -> tree, address,
//! the sequence of the version that replaced it), inserted before the tree changes. A pinned
//! read whose tree version is newer than its snapshot walks the held versions of the key; an
//! iterator yields the tree's version and the key's held versions, and the merge above hides
//! the ones it must not see. A held version is forgotten once no snapshot older than its
//! replacement is left. Snapshots do not survive a crash, so the map is volatile.
//!
//! # What readers may still reach
//!
//! Readers read the trees' current state under the version they pinned. Everything that
//! would take a place away from such a reader (a chunk's entries leaving the tree, a value
//! array being deleted) is **deferred** until every version that was live when it became due
//! is released ([`LabL0::run_deferred`]), and every read of the trees in progress when it was
//! deferred has ended (a read copies what it reads in one call, so only a read in progress may
//! hold an address it has not followed yet; this covers a chunk compaction's reads, which pin
//! no version, and readers of versions newer than those waited for, e.g. of the version that
//! installed a chunk, while its entries are being removed). A tree whose root is reset at a
//! switch is not rewritten: it is **retired**, still found by its number (with its held
//! versions) by readers of older versions, and its PM chunks go back to the pool when the last
//! of them lets go. So a long-lived iterator never holds up a switch (and so never stops
//! writes); it only keeps its tree's PM alive.
//!
//! Value arrays, and hot slots ([`super::hot`]), hold one reference per tree entry and held
//! version naming them (counted again from the trees at open); an array whose references are
//! gone is deleted, and such a slot freed (both deferred).
//!
//! # Hot keys
//!
//! A flush places a hot key's newest version in a half of its PM slot that nothing names
//! (persisted) before the tree entry names that half ([`super::hot`]); a hot address names one
//! exact version, as a value-array address does, so reads, held versions and chunks treat both
//! alike.

use crate::format::{make_internal_key, parse_internal_key, ValueType};
use crate::iterator::InternalIterator;
use crate::labdb::hot::HotBuffer;
use crate::labdb::vaddr::{Vaddr, ValueRecord};
use crate::labdb::vlog::ValueFiles;
use crate::options::LabOptions;
use crate::pbtree::{InnerKind, Layout, PbTree, WordOp};
use crate::stats::LabStats;
use crate::tier::Tier;
use crate::version::{TreeRoles, Version};
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, OnceLock, Weak};
use tierkv_pm::PmPool;

mod chunks;
mod compact;
mod held;
mod iter;
mod reclaim;
mod roles;
#[cfg(test)]
mod tests;

pub use chunks::*;
use compact::*;
use held::*;
pub(crate) use iter::*;
use reclaim::*;
pub(crate) use roles::*;

/// What a flush needs of the readers: the live snapshots, and the versions live when it is
/// called (called once the tree changes are made: a reader that read an entry the flush
/// replaced pinned one of them before).
pub(crate) type Readers<'a> = (Vec<u64>, &'a dyn Fn() -> Vec<Weak<Version>>);

/// The trees and value arrays, once the pool is open.
struct Attached {
    pool: Arc<PmPool>,
    location: String,
    /// Per root slot: the tree's number (the last one reset into it or recovered from the
    /// roles; 0 for an empty tree no role names yet) and the tree.
    slots: RwLock<[(u64, Arc<PbTree>); 2]>,
    /// Trees replaced at a switch that readers of older versions may still read, by number.
    retired: RwLock<Vec<(u64, Arc<PbTree>)>>,
    values: Arc<ValueFiles>,
    /// The hot-key buffer (`None`: `labdb.hot_buffer_bytes` is 0).
    hot: Option<Arc<HotBuffer>>,
    writable: bool,
}

impl Attached {
    /// Counts one more reference to what `word` names (a value array or a hot slot).
    fn add_ref(&self, word: u64) -> Result<()> {
        match Vaddr::decode(word, &self.location)? {
            Vaddr::Value { file, .. } => self.values.add_ref(file),
            Vaddr::Hot { slot, half, .. } => self.hot()?.add_ref(slot, half),
        }
    }

    /// Drops the reference `word` held.
    fn drop_ref(&self, word: u64) -> Result<()> {
        match Vaddr::decode(word, &self.location)? {
            Vaddr::Value { file, .. } => self.values.drop_ref(file),
            Vaddr::Hot { slot, half, .. } => self.hot()?.drop_ref(slot, half),
        }
    }

    fn hot(&self) -> Result<&Arc<HotBuffer>> {
        self.hot.as_ref().ok_or_else(|| {
            Error::corruption(
                self.location.clone(),
                "a LAB-DB value address names a hot slot, but the hot-key buffer is off",
            )
        })
    }

    /// The version `word` names for `key`: a value record, or a half of a hot slot.
    fn read(&self, word: u64, key: &[u8]) -> Result<ValueRecord> {
        match Vaddr::decode(word, &self.location)? {
            Vaddr::Value { .. } => self.values.read(word, key),
            Vaddr::Hot { slot, half, tag } => self.hot()?.read(slot, half, tag, key),
        }
    }
}

/// LAB-DB's L0 (module docs). Created with the stage; attached to the pool at open.
pub(crate) struct LabL0 {
    options: LabOptions,
    att: OnceLock<Attached>,
    held: Mutex<BTreeMap<Vec<u8>, Vec<Held>>>,
    /// The immutable tree's chunk compaction so far.
    chunking: Mutex<Option<ChunkState>>,
    pending: Mutex<Vec<Pending>>,
    /// The reads in progress (lock order: `pending`, then `reads`).
    reads: Mutex<Reads>,
    counts: Mutex<LabStats>,
    /// A manual compaction asked for the mutable tree to become immutable whatever its size.
    switch_requested: std::sync::atomic::AtomicBool,
}

impl LabL0 {
    /// An L0 with `options`, not attached to a pool yet.
    pub(crate) fn new(options: &LabOptions) -> Self {
        LabL0 {
            options: options.clone(),
            att: OnceLock::new(),
            held: Mutex::new(BTreeMap::new()),
            chunking: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
            reads: Mutex::new(Reads::default()),
            counts: Mutex::new(LabStats::default()),
            switch_requested: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The options.
    pub(crate) fn options(&self) -> &LabOptions {
        &self.options
    }

    fn att(&self) -> Result<&Attached> {
        self.att.get().ok_or_else(|| {
            Error::InvalidArgument("LAB-DB's L0 trees are not attached to a PM pool".into())
        })
    }

    /// The value arrays (once attached).
    pub(crate) fn values(&self) -> Option<&Arc<ValueFiles>> {
        self.att.get().map(|a| &a.values)
    }

    /// Attaches the trees opened from the pool (`trees[i]` under `TREE_ROOTS[i]`) at open,
    /// with the roles the version records: a root no role names is reset (when `writable` is
    /// `Some`; read-only, it is only treated as empty), the value arrays every entry points
    /// into are registered (a missing one is corruption) and their references counted, and
    /// (writable) the arrays nothing references are removed, but those numbered from
    /// `writable`'s number on (the oldest memtable not flushed: the log replays their arrays).
    /// `stores`: the value arrays and the hot-key buffer (if on); every entry naming a hot
    /// slot claims it.
    pub(crate) fn attach(
        &self,
        pool: Arc<PmPool>,
        location: &str,
        trees: [PbTree; 2],
        stores: (Arc<ValueFiles>, Option<Arc<HotBuffer>>),
        roles: TreeRoles,
        writable: Option<u64>,
    ) -> Result<()> {
        let (values, hot) = stores;
        let keep_from = writable.unwrap_or(0);
        let writable = writable.is_some();
        let [t0, t1] = trees;
        let mut slots = [(0u64, Arc::new(t0)), (0u64, Arc::new(t1))];
        for (i, slot) in slots.iter_mut().enumerate() {
            let named = [roles.mutable, roles.immutable]
                .into_iter()
                .find(|&n| n != 0 && (n & 1) as usize == i);
            match named {
                Some(n) => slot.0 = n,
                None if slot.1.len() > 0 || writable => {
                    if writable {
                        let fresh = PbTree::create_empty(
                            Arc::clone(&pool),
                            location,
                            TREE_ROOTS[i],
                            Layout::Inline,
                            InnerKind::Dram,
                        )?;
                        slot.1.retire();
                        slot.1 = Arc::new(fresh);
                    }
                    slot.0 = 0;
                }
                None => slot.0 = 0,
            }
        }
        // References: every entry of a named tree.
        let mut refs: HashMap<u64, u64> = HashMap::new();
        for (n, tree) in &slots {
            if *n == 0 {
                continue;
            }
            let mut it = tree.iter();
            it.seek_to_first()?;
            while let Some((key, payload)) = it.current() {
                let word = u64::from_le_bytes(payload.as_slice().try_into().map_err(|_| {
                    Error::corruption(location, "LAB-DB tree payload is not one word")
                })?);
                match Vaddr::decode(word, location)? {
                    Vaddr::Value { file, .. } => *refs.entry(file).or_default() += 1,
                    Vaddr::Hot { slot, half, tag } => match &hot {
                        Some(h) => h.claim(slot, half, tag, key)?,
                        None => {
                            return Err(Error::corruption(
                                location,
                                format!(
                                    "LAB-DB tree {n} entry {} names a hot slot, but the \
                                     hot-key buffer is off",
                                    crate::util::escape(key)
                                ),
                            ))
                        }
                    },
                }
                it.next()?;
            }
        }
        let mut files: Vec<u64> = refs.keys().copied().collect();
        files.sort_unstable();
        for f in files {
            values.open_existing(f, Tier::Ssd)?;
            for _ in 0..refs[&f] {
                values.add_ref(f)?;
            }
        }
        if writable {
            values.remove_untracked(keep_from)?;
        }
        if let Some(h) = &hot {
            h.finish_claims();
        }
        self.att
            .set(Attached {
                pool,
                location: location.to_string(),
                slots: RwLock::new(slots),
                retired: RwLock::new(Vec::new()),
                values,
                hot,
                writable,
            })
            .map_err(|_| Error::InvalidArgument("LAB-DB's L0 attached twice".into()))
    }

    /// The tree numbered `n` (0: none), if its root holds it.
    fn tree(&self, n: u64) -> Result<Option<Arc<PbTree>>> {
        if n == 0 {
            return Ok(None);
        }
        let a = self.att()?;
        let slots = a.slots.read();
        let (num, tree) = &slots[(n & 1) as usize];
        if *num == n {
            return Ok(Some(Arc::clone(tree)));
        }
        if let Some((_, t)) = a.retired.read().iter().find(|(r, _)| *r == n) {
            return Ok(Some(Arc::clone(t)));
        }
        Err(Error::corruption(
            a.location.clone(),
            format!("LAB-DB tree {n} is not under its root (it holds tree {num})"),
        ))
    }

    /// The trees of `roles`, newest first.
    fn trees_of(&self, roles: TreeRoles) -> Result<Vec<(u64, Arc<PbTree>)>> {
        let mut out = Vec::with_capacity(2);
        for n in [roles.mutable, roles.immutable] {
            if let Some(t) = self.tree(n)? {
                out.push((n, t));
            }
        }
        Ok(out)
    }

    /// The version of `key` visible at `sequence` in the trees of `roles` (newest tree first):
    /// its type, value and the bytes read. With `pinned`, a tree version newer than the
    /// snapshot is passed over for the held versions; without, it is answered (written after
    /// the read began).
    pub(crate) fn get(
        &self,
        roles: TreeRoles,
        key: &[u8],
        sequence: u64,
        pinned: bool,
    ) -> Result<Option<(ValueType, Vec<u8>, u64)>> {
        let a = self.att()?;
        let _read = self.begin_read();
        for (n, tree) in self.trees_of(roles)? {
            let Some(word) = tree.get_word(key)? else {
                continue;
            };
            let rec = a.read(word, key)?;
            let read = rec.device_bytes();
            if rec.seq <= sequence || !pinned {
                return Ok(Some((rec.vtype, rec.value, read)));
            }
            let held: Vec<Held> = self
                .held
                .lock()
                .get(key)
                .map(|v| v.iter().filter(|h| h.tree == n).copied().collect())
                .unwrap_or_default();
            let mut best: Option<ValueRecord> = None;
            for h in held {
                let r = a.read(h.word, key)?;
                if r.seq <= sequence && best.as_ref().is_none_or(|b| b.seq < r.seq) {
                    best = Some(r);
                }
            }
            if let Some(r) = best {
                let read = r.device_bytes();
                return Ok(Some((r.vtype, r.value, read)));
            }
        }
        Ok(None)
    }

    /// Iterators over the trees of `roles` (each yields every key's tree version and held
    /// versions, in internal-key order).
    /// The value records they read are counted in `charge` (SSD bytes, for the purpose it
    /// names).
    pub(crate) fn iterators(
        self: &Arc<Self>,
        roles: TreeRoles,
        charge: Charge,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        for (n, tree) in self.trees_of(roles)? {
            out.push(Box::new(TreeIter::new(
                Arc::clone(self),
                n,
                tree,
                None,
                charge.clone(),
            )));
        }
        Ok(())
    }

    /// Flushes the kept versions of a memtable (`entries`: internal keys and values, in
    /// internal-key order, already stripped of versions no snapshot needs) into the mutable
    /// tree of `roles`: their values go to the new value array `number` (synced with its
    /// directory through `sync_dir`), then each key's newest version goes into the tree.
    /// `readers`: the live snapshots and the live versions. Returns the value array's bytes and
    /// the tree's PM bytes written.
    pub(crate) fn flush(
        &self,
        roles: TreeRoles,
        entries: &[(Vec<u8>, Vec<u8>)],
        number: u64,
        readers: &Readers<'_>,
        sync_dir: impl FnOnce() -> Result<()>,
    ) -> Result<(u64, u64)> {
        let a = self.att()?;
        let mut writer = a.values.create(number, Tier::Ssd)?;
        let mut words = Vec::with_capacity(entries.len());
        for (ikey, value) in entries {
            let p = parse_internal_key(ikey)
                .ok_or_else(|| Error::corruption("flush input", "malformed internal key"))?;
            let v: &[u8] = if p.value_type == ValueType::Deletion {
                &[]
            } else {
                value
            };
            words.push(
                writer
                    .append(p.user_key, p.sequence, p.value_type, v)?
                    .encode(),
            );
        }
        writer.sync()?;
        sync_dir()?;
        let bytes = writer.size();
        drop(writer);
        let pm = self.insert(roles, entries, &words, readers)?;
        Ok((bytes, pm))
    }

    /// Flushes the kept versions of a memtable that LAB-DB's log wrote (`entries` as for
    /// [`Self::flush`]): their values are in the memtable's value array already (synced when
    /// the memtable was closed), at the addresses `addrs` gives; only the tree changes.
    /// Returns the tree's PM bytes written.
    pub(crate) fn flush_addressed(
        &self,
        roles: TreeRoles,
        entries: &[(Vec<u8>, Vec<u8>)],
        addrs: &crate::labdb::vaddr::LabAddrs,
        readers: &Readers<'_>,
    ) -> Result<u64> {
        let mut words = Vec::with_capacity(entries.len());
        for (ikey, _) in entries {
            let p = parse_internal_key(ikey)
                .ok_or_else(|| Error::corruption("flush input", "malformed internal key"))?;
            words.push(addrs.word(p.sequence).ok_or_else(|| {
                Error::corruption(
                    format!("memtable {}", addrs.number()),
                    format!("version at sequence {} has no value address", p.sequence),
                )
            })?);
        }
        self.insert(roles, entries, &words, readers)
    }

    /// Writes each user key's newest version of `entries` (value addresses `words`) into the
    /// mutable tree of `roles`, holding replaced and older versions for the snapshots of
    /// `readers`. A replaced hot-slot address keeps its half named until the versions of
    /// `readers` are released (a reader may have read it).
    fn insert(
        &self,
        roles: TreeRoles,
        entries: &[(Vec<u8>, Vec<u8>)],
        words: &[u64],
        readers: &Readers<'_>,
    ) -> Result<u64> {
        let snapshots = readers.0.as_slice();
        let mut hot_drops = Vec::new();
        let a = self.att()?;
        let tree = self
            .tree(roles.mutable)?
            .ok_or_else(|| Error::InvalidArgument("LAB-DB flush with no mutable tree".into()))?;
        let mut inserts = 0;
        let mut updates = 0;
        let mut hot_bytes = 0;
        let mut i = 0;
        while i < entries.len() {
            let p = parse_internal_key(&entries[i].0).expect("parsed above");
            let key = p.user_key.to_vec();
            let newest_seq = p.sequence;
            // Older versions of this key in the same memtable, kept for snapshots.
            let mut j = i + 1;
            let mut newer_seq = newest_seq;
            while j < entries.len() {
                let q = parse_internal_key(&entries[j].0).expect("parsed above");
                if q.user_key != key.as_slice() {
                    break;
                }
                self.hold(a, &key, roles.mutable, words[j], newer_seq)?;
                newer_seq = q.sequence;
                j += 1;
            }
            // A hot key's newest version goes into its slot in PM (its value is in the
            // entry), the tree entry naming the slot.
            let mut word = words[i];
            if let Some(hot) = &a.hot {
                let v: &[u8] = if p.value_type == ValueType::Deletion {
                    &[]
                } else {
                    &entries[i].1
                };
                if let Some((w, bytes)) = hot.place(&key, newest_seq, p.value_type, v)? {
                    word = w;
                    hot_bytes += bytes;
                }
            }
            a.add_ref(word)?;
            let keep_old = snapshots.iter().any(|&s| s < newest_seq);
            let mut held_err = Ok(());
            let old = tree.upsert_word(&key, |old| {
                if let (Some(w), true) = (old, keep_old) {
                    // Held before the tree changes: a reader that sees the new word sees it.
                    held_err = self.hold(a, &key, roles.mutable, w, newest_seq);
                }
                WordOp::Put(word)
            })?;
            held_err?;
            match old {
                Some(w) => {
                    updates += 1;
                    if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                        hot_drops.push(w);
                    } else {
                        a.drop_ref(w)?;
                    }
                }
                None => inserts += 1,
            }
            i = j;
        }
        if !hot_drops.is_empty() {
            self.defer((readers.1)(), Deferred::DropRefs { words: hot_drops });
        }
        let mut c = self.counts.lock();
        c.inserts += inserts;
        c.in_place_updates += updates;
        Ok(tree.take_persisted_bytes() + hot_bytes)
    }

    /// Figures.
    pub(crate) fn stats(&self, roles: TreeRoles) -> LabStats {
        let mut s = *self.counts.lock();
        s.mutable_tree = roles.mutable;
        s.immutable_tree = roles.immutable;
        s.held_versions = self.held.lock().values().map(|v| v.len() as u64).sum();
        if let Ok(trees) = self.trees_of(roles) {
            for (n, t) in trees {
                let ts = t.stats();
                s.pm_bytes += ts.pm_bytes;
                s.dram_bytes += ts.dram_bytes;
                if n == roles.immutable {
                    s.immutable_keys = ts.keys;
                } else {
                    s.mutable_keys = ts.keys;
                }
            }
        }
        if let Some(hot) = self.att.get().and_then(|a| a.hot.as_ref()) {
            let h = hot.figures();
            s.hot_slots = h.slots_used;
            s.hot_pm_bytes = h.pm_bytes;
            s.hot_writes = h.writes;
        }
        if let Some(v) = self.values() {
            let vs = v.stats();
            s.value_files = vs.files;
            s.value_bytes = vs.bytes;
            s.value_live_bytes = vs.live_bytes;
        }
        s
    }

    /// Checks every leaf of the named trees and every value record they point at; returns
    /// the trees and the entries checked.
    pub(crate) fn verify(&self, roles: TreeRoles) -> Result<(usize, u64)> {
        let a = self.att()?;
        let mut n = 0;
        let mut trees = 0;
        for (_, t) in self.trees_of(roles)? {
            t.verify()?;
            trees += 1;
            let mut it = t.iter();
            it.seek_to_first()?;
            while let Some((k, p)) = it.current() {
                a.read(word_of(p)?, k)?;
                n += 1;
                it.next()?;
            }
        }
        Ok((trees, n))
    }
}
