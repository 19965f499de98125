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

/// The named roots of the two tree slots: tree `n` is under `TREE_ROOTS[n & 1]`.
pub(crate) const TREE_ROOTS: [&str; 2] = ["labdb-tree-0", "labdb-tree-1"];

/// The roles before any record set them: tree 1 mutable, no immutable tree.
pub(crate) const INITIAL_ROLES: TreeRoles = TreeRoles {
    mutable: 1,
    immutable: 0,
};

/// The roles a stage's state records (the initial ones when none are recorded).
pub(crate) fn roles_of(trees: Option<TreeRoles>) -> TreeRoles {
    trees.unwrap_or(INITIAL_ROLES)
}

/// A version a tree no longer holds that a snapshot may still see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Held {
    /// The tree it was replaced in.
    tree: u64,
    /// Its value address.
    word: u64,
    /// The sequence number of the version that replaced it.
    replaced_at: u64,
}

/// A key range of the immutable tree to compact into L1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabChunk {
    /// The immutable tree's number.
    pub tree: u64,
    /// The first user key of the chunk.
    pub lo: Vec<u8>,
    /// The last user key of the chunk.
    pub hi: Vec<u8>,
    /// No entry of the tree is above `hi`: after this chunk the tree is wholly compacted.
    pub last: bool,
    /// Entries of the tree in the chunk.
    pub entries: u64,
    /// Chosen by file scan (the run of leaves holding the most values of the oldest value
    /// array), not as the leftmost remaining leaves.
    pub file_scan: bool,
}

/// Where the chunk compaction of the immutable tree stands (volatile: after a restart the
/// leaf scan starts again at the leftmost entry left, and the share compacted counts from
/// there).
struct ChunkState {
    /// The immutable tree's number.
    tree: u64,
    /// Entries of the tree when its first chunk was chosen.
    total: u64,
    /// Entries of the chunks committed since.
    compacted: u64,
    /// The last key of the last leaf-scan chunk committed: every entry up to it is compacted.
    cursor: Option<Vec<u8>>,
    /// Key ranges of the file-scan chunks committed (all after `cursor`): their entries stay
    /// in the tree until their deferred removal, so the next choice skips them.
    done: Vec<(Vec<u8>, Vec<u8>)>,
    /// The next chunk, once chosen (the policy asks more often than chunks commit; a
    /// file-scan choice reads every leaf left).
    next: Option<LabChunk>,
}

impl ChunkState {
    fn new(tree: u64, total: u64) -> Self {
        ChunkState {
            tree,
            total,
            compacted: 0,
            cursor: None,
            done: Vec::new(),
            next: None,
        }
    }

    /// True if `key` is in a committed file-scan chunk.
    fn is_done(&self, key: &[u8]) -> bool {
        self.done
            .iter()
            .any(|(lo, hi)| lo.as_slice() <= key && key <= hi.as_slice())
    }
}

/// One leaf's entries left to compact, as the file scan sees them.
struct LeafSummary {
    first: Vec<u8>,
    last: Vec<u8>,
    entries: u64,
    /// Entries whose value is in the oldest value array.
    oldest: u64,
    /// A committed file-scan chunk lies between this leaf and the one before it: no chunk
    /// spans both (it would compact that chunk's entries again).
    after_gap: bool,
}

/// Something deferred until no reader of an older version is left.
enum Deferred {
    /// Remove the entries of `tree` in `[lo, hi]` (a compacted chunk), unless the tree was
    /// retired meanwhile.
    RemoveRange { tree: u64, lo: Vec<u8>, hi: Vec<u8> },
    /// Delete value array `number` (no reference left).
    DeleteValues { number: u64 },
    /// Forget retired tree `tree` (no version names it any more).
    ForgetRetired { tree: u64 },
    /// Return hot slot `slot` (no reference left) to the free list.
    FreeHot { slot: u64 },
    /// Drop the references of `words` (hot-slot addresses a flush replaced: their halves may
    /// be overwritten only after every reader that may have read them).
    DropRefs { words: Vec<u64> },
}

/// What a flush needs of the readers: the live snapshots, and the versions live when it is
/// called (called once the tree changes are made: a reader that read an entry the flush
/// replaced pinned one of them before).
pub(crate) type Readers<'a> = (Vec<u64>, &'a dyn Fn() -> Vec<Weak<Version>>);

struct Pending {
    waits: Vec<Weak<Version>>,
    /// The reads numbered below this ([`Reads`]) had started when it was deferred: it waits
    /// for them to end too.
    reads_before: u64,
    what: Deferred,
}

/// The reads of the trees in progress: a `get`, or one fill of an iterator (a user's or a
/// chunk's). Each reads tree entries and held versions, then the value records and hot-slot
/// halves they name, in one call that copies what it read; between calls a reader holds no
/// address. So a reader may still read what an entry or held version named when it stopped
/// naming it only if its read was in progress then: everything deferred waits, besides the
/// versions it names, for the reads in progress when it was deferred. That covers the readers
/// no version pins (a chunk compaction's iterator), and those of versions newer than the ones
/// a deferral waits for (a chunk's entries are removed after the versions older than its
/// record, while readers of the newer versions still read the tree).
#[derive(Default)]
struct Reads {
    /// The number of the next read to start.
    next: u64,
    /// The reads in progress, by number.
    live: BTreeSet<u64>,
}

/// A read in progress ([`LabL0::begin_read`]): it ends when dropped.
struct ReadGuard<'a> {
    reads: &'a Mutex<Reads>,
    number: u64,
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        self.reads.lock().live.remove(&self.number);
    }
}

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
        addrs: &crate::front_ends::LabAddrs,
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

    /// Keeps `word` (of `key`, in tree `tree`) for snapshots, replaced at `replaced_at`.
    fn hold(&self, a: &Attached, key: &[u8], tree: u64, word: u64, replaced_at: u64) -> Result<()> {
        a.add_ref(word)?;
        self.held
            .lock()
            .entry(key.to_vec())
            .or_default()
            .push(Held {
                tree,
                word,
                replaced_at,
            });
        Ok(())
    }

    /// Forgets the held versions no live snapshot can see any more: those replaced at or
    /// before the oldest snapshot (`smallest`: the oldest live snapshot, or the last sequence).
    /// Value-array references are dropped now (an array is deleted only after its readers
    /// anyway); the hot-slot addresses are returned, for [`Self::drop_after`] with the versions
    /// live once they are forgotten: an iterator reads every held version of a key it copied
    /// (those its snapshot cannot see too), so a half is not rewritten under it.
    pub(crate) fn forget_held(&self, smallest: u64) -> Result<Vec<u64>> {
        let Some(a) = self.att.get() else {
            return Ok(Vec::new());
        };
        let mut dropped = Vec::new();
        {
            let mut held = self.held.lock();
            held.retain(|_, v| {
                v.retain(|h| {
                    let keep = h.replaced_at > smallest;
                    if !keep {
                        dropped.push(h.word);
                    }
                    keep
                });
                !v.is_empty()
            });
        }
        let mut hot = Vec::new();
        for w in dropped {
            if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                hot.push(w);
            } else {
                a.drop_ref(w)?;
            }
        }
        Ok(hot)
    }

    /// Drops the references of the hot-slot addresses `words` once every version of `waits`
    /// is released (the deferred path).
    pub(crate) fn drop_after(&self, waits: Vec<Weak<Version>>, words: Vec<u64>) {
        if !words.is_empty() {
            self.defer(waits, Deferred::DropRefs { words });
        }
    }

    /// PM bytes of the trees numbered in `roles`: (mutable, immutable).
    pub(crate) fn usage(&self, roles: TreeRoles) -> (u64, u64) {
        let bytes = |n: u64| self.tree(n).ok().flatten().map_or(0, |t| t.pm_bytes());
        (bytes(roles.mutable), bytes(roles.immutable))
    }

    /// True if the mutable tree reached `immutable_at` of the leaf region (or a manual
    /// compaction asked for it) and there is no immutable tree: it can become the immutable
    /// one now.
    pub(crate) fn wants_switch(&self, roles: TreeRoles) -> bool {
        if roles.immutable != 0 || self.att.get().is_none() || self.mutable_is_empty(roles) {
            // An empty tree (its head leaf alone) never switches, however small the region.
            return false;
        }
        if self
            .switch_requested
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return true;
        }
        let (m, _) = self.usage(roles);
        let limit = (self.options.leaf_region_bytes as f64 * self.options.immutable_at) as u64;
        m >= limit.max(1)
    }

    /// Counts a drain of a full WAL-buffer half (LAB-DB's log).
    pub(crate) fn count_log_drain(&self) {
        self.counts.lock().log_drains += 1;
    }

    /// True if the mutable tree of `roles` holds no key.
    pub(crate) fn mutable_is_empty(&self, roles: TreeRoles) -> bool {
        self.tree(roles.mutable)
            .ok()
            .flatten()
            .is_none_or(|t| t.len() == 0)
    }

    /// Asks the flush thread to make the mutable tree immutable at its next upkeep, whatever
    /// its size (a manual compaction).
    pub(crate) fn request_switch(&self) {
        self.switch_requested
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Resets the root of tree `roles.mutable + 1` to a new empty tree and returns the roles
    /// the switch record must name (module docs: switch). The tree the root held (wholly
    /// compacted, or empty) is retired: its entries' references are released, and readers of
    /// versions live now (`waits`) still find it, and its held versions, until they are gone.
    pub(crate) fn switch(&self, roles: TreeRoles, waits: &[Weak<Version>]) -> Result<TreeRoles> {
        let a = self.att()?;
        let next = roles.mutable + 1;
        let i = (next & 1) as usize;
        let fresh = PbTree::create_empty(
            Arc::clone(&a.pool),
            &a.location,
            TREE_ROOTS[i],
            Layout::Inline,
            InnerKind::Dram,
        )?;
        let (old_number, old) = {
            let mut slots = a.slots.write();
            std::mem::replace(&mut slots[i], (next, Arc::new(fresh)))
        };
        self.switch_requested
            .store(false, std::sync::atomic::Ordering::Release);
        old.retire();
        self.release_tree(a, &old, waits)?;
        if old_number != 0 {
            a.retired.write().push((old_number, old));
            self.defer(waits.to_vec(), Deferred::ForgetRetired { tree: old_number });
        }
        let mut chunking = self.chunking.lock();
        if chunking.as_ref().is_some_and(|c| c.tree == old_number) {
            *chunking = None;
        }
        drop(chunking);
        self.counts.lock().switches += 1;
        Ok(TreeRoles {
            mutable: next,
            immutable: roles.mutable,
        })
    }

    /// Drops the references of every entry left in `tree` (retired; its held versions are
    /// forgotten later, see [`Self::forget_tree_held`]): value-array references now (an array
    /// is deleted only after its readers anyway), hot-slot halves once the readers of versions
    /// live now (`waits`, which may still read the tree) are gone.
    fn release_tree(
        &self,
        a: &Attached,
        tree: &Arc<PbTree>,
        waits: &[Weak<Version>],
    ) -> Result<()> {
        let mut hot = Vec::new();
        let mut it = tree.iter();
        it.seek_to_first()?;
        while let Some((_, p)) = it.current() {
            let w = word_of(p)?;
            if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                hot.push(w);
            } else {
                a.drop_ref(w)?;
            }
            it.next()?;
        }
        if !hot.is_empty() {
            self.defer(waits.to_vec(), Deferred::DropRefs { words: hot });
        }
        Ok(())
    }

    /// Forgets the held versions of the retired tree `number` and drops their references:
    /// only once no reader that may still read that tree is left (a reader of an older version
    /// pinned by a snapshot finds its versions there).
    fn forget_tree_held(&self, a: &Attached, number: u64) -> Result<()> {
        let mut dropped = Vec::new();
        self.held.lock().retain(|_, v| {
            v.retain(|h| {
                let keep = h.tree != number;
                if !keep {
                    dropped.push(h.word);
                }
                keep
            });
            !v.is_empty()
        });
        for w in dropped {
            a.drop_ref(w)?;
        }
        Ok(())
    }

    /// The next chunk of the immutable tree of `roles`, about `chunk_bytes` of values
    /// (estimated from the value arrays' average record), whole leaves at a time: the leftmost
    /// leaves left (leaf scan) until `file_scan_after` of the tree's entries are compacted,
    /// then the run of leaves holding the most values of the oldest value array (file scan).
    /// `None` without an immutable tree.
    pub(crate) fn next_chunk(&self, roles: TreeRoles) -> Result<Option<LabChunk>> {
        let Some(tree) = self.tree(roles.immutable)? else {
            return Ok(None);
        };
        let a = self.att()?;
        let mut chunking = self.chunking.lock();
        if chunking.as_ref().is_none_or(|c| c.tree != roles.immutable) {
            *chunking = Some(ChunkState::new(roles.immutable, tree.len()));
        }
        let state = chunking.as_mut().expect("set above");
        if let Some(c) = &state.next {
            return Ok(Some(c.clone()));
        }
        let stats = a.values.stats();
        let avg = stats
            .bytes
            .checked_div(stats.entries)
            .map_or(1024, |a| a.max(1));
        let want = (self.options.chunk_bytes / avg).max(1);
        let file_scan = self.options.file_scan_after < 1.0
            && state.compacted as f64 >= self.options.file_scan_after * state.total as f64;
        let chunk = if file_scan {
            file_scan_chunk(&tree, state, want)?
        } else {
            leaf_scan_chunk(&tree, state, want)?
        };
        state.next = Some(chunk.clone());
        Ok(Some(chunk))
    }

    /// An iterator over the chunk's entries (tree versions and held versions). The caller
    /// reads no iterator for an empty chunk (`entries == 0`: this one would cover the whole
    /// tree).
    pub(crate) fn chunk_iter(
        self: &Arc<Self>,
        chunk: &LabChunk,
        charge: Charge,
    ) -> Result<Box<dyn InternalIterator>> {
        let tree = self
            .tree(chunk.tree)?
            .ok_or_else(|| Error::InvalidArgument(format!("LAB-DB tree {} is gone", chunk.tree)))?;
        let range = (chunk.entries > 0).then(|| (chunk.lo.clone(), chunk.hi.clone()));
        Ok(Box::new(TreeIter::new(
            Arc::clone(self),
            chunk.tree,
            tree,
            range,
            charge,
        )))
    }

    /// After the manifest record that installed the chunk's outputs (`waits`: the versions
    /// live before it): the chunk is marked compacted (a leaf-scan chunk moves the cursor past
    /// it, a file-scan one is skipped from then on), and its entries' removal is deferred
    /// until those versions are released. (After the last chunk the tree is left as it is
    /// until the next switch retires it.)
    pub(crate) fn chunk_done(&self, chunk: &LabChunk, waits: Vec<Weak<Version>>) {
        {
            let mut chunking = self.chunking.lock();
            if chunking.as_ref().is_none_or(|c| c.tree != chunk.tree) {
                *chunking = Some(ChunkState::new(chunk.tree, chunk.entries));
            }
            let state = chunking.as_mut().expect("set above");
            state.next = None;
            state.compacted += chunk.entries;
            if chunk.file_scan {
                state.done.push((chunk.lo.clone(), chunk.hi.clone()));
            } else {
                state.cursor = Some(chunk.hi.clone());
            }
        }
        let mut c = self.counts.lock();
        c.chunks += 1;
        if chunk.file_scan {
            c.file_scan_chunks += 1;
        }
        drop(c);
        if chunk.entries > 0 {
            self.defer(
                waits,
                Deferred::RemoveRange {
                    tree: chunk.tree,
                    lo: chunk.lo.clone(),
                    hi: chunk.hi.clone(),
                },
            );
        }
    }

    /// Defers `what` until every version of `waits` is released and every read in progress
    /// now has ended ([`Reads`]): called once the change that makes it due is made (a read
    /// that starts later does not find what it releases).
    fn defer(&self, waits: Vec<Weak<Version>>, what: Deferred) {
        let reads_before = self.reads.lock().next;
        self.pending.lock().push(Pending {
            waits,
            reads_before,
            what,
        });
    }

    /// Starts a read of the trees ([`Reads`]): taken before the first tree entry or held
    /// version is read, held until the last value it names is read.
    fn begin_read(&self) -> ReadGuard<'_> {
        let mut reads = self.reads.lock();
        let number = reads.next;
        reads.next += 1;
        reads.live.insert(number);
        ReadGuard {
            reads: &self.reads,
            number,
        }
    }

    /// True while something is deferred.
    pub(crate) fn has_deferred(&self) -> bool {
        !self.pending.lock().is_empty()
    }

    /// Hands every value array with no reference left to the deferred deletions (`waits`: the
    /// versions live now), but those of memtables from `oldest_unflushed` on (LAB-DB's log
    /// writes a memtable's values into the array of its number before its flush references
    /// them).
    pub(crate) fn release_values(&self, waits: &[Weak<Version>], oldest_unflushed: u64) {
        let Some(a) = self.att.get() else {
            return;
        };
        for number in a.values.take_unreferenced(oldest_unflushed) {
            self.defer(waits.to_vec(), Deferred::DeleteValues { number });
        }
        if let Some(hot) = &a.hot {
            for slot in hot.take_unreferenced() {
                self.defer(waits.to_vec(), Deferred::FreeHot { slot });
            }
        }
    }

    /// Runs what is deferred and due (no version it waits for is alive), in order.
    pub(crate) fn run_deferred(&self) -> Result<()> {
        let Some(a) = self.att.get() else {
            return Ok(());
        };
        if !a.writable {
            return Ok(());
        }
        let due: Vec<Deferred> = {
            let mut pending = self.pending.lock();
            // Read under `pending`: every read that started before a deferral listed here is
            // either over or among these.
            let oldest_read = self.reads.lock().live.first().copied();
            let mut due = Vec::new();
            let mut keep = Vec::new();
            for p in pending.drain(..) {
                if p.waits.iter().all(|w| w.strong_count() == 0)
                    && oldest_read.is_none_or(|r| r >= p.reads_before)
                {
                    due.push(p.what);
                } else {
                    keep.push(p);
                }
            }
            *pending = keep;
            due
        };
        for what in due {
            match what {
                Deferred::RemoveRange { tree, lo, hi } => {
                    // Only a tree still under its root: a retired one is read as it is by the
                    // readers that still hold it, and its references are released already.
                    let t = {
                        let slots = a.slots.read();
                        let (num, t) = &slots[(tree & 1) as usize];
                        if *num != tree {
                            continue;
                        }
                        Arc::clone(t)
                    };
                    // The addresses the removed entries and held versions held.
                    let mut dropped = Vec::new();
                    let mut bound = Bound::Included(lo.clone());
                    loop {
                        let leaf = match &bound {
                            Bound::Included(k) => t.entries_after(Bound::Included(k))?,
                            Bound::Excluded(k) => t.entries_after(Bound::Excluded(k))?,
                            Bound::Unbounded => t.entries_after(Bound::Unbounded)?,
                        };
                        let mut more = !leaf.is_empty();
                        for (k, _) in &leaf {
                            if k.as_slice() > hi.as_slice() {
                                more = false;
                                break;
                            }
                            let old = t.upsert_word(k, |w| {
                                if w.is_some() {
                                    WordOp::Delete
                                } else {
                                    WordOp::Keep
                                }
                            })?;
                            dropped.extend(old);
                        }
                        if !more {
                            break;
                        }
                        bound = Bound::Excluded(leaf.last().expect("non-empty").0.clone());
                    }
                    // Held versions of the removed keys in that tree are in L1 now.
                    {
                        let mut held = self.held.lock();
                        let keys: Vec<Vec<u8>> = held
                            .range::<[u8], _>((
                                Bound::Included(lo.as_slice()),
                                Bound::Included(hi.as_slice()),
                            ))
                            .map(|(k, _)| k.clone())
                            .collect();
                        for k in keys {
                            let v = held.get_mut(&k).expect("listed");
                            v.retain(|h| {
                                let keep = h.tree != tree;
                                if !keep {
                                    dropped.push(h.word);
                                }
                                keep
                            });
                            if v.is_empty() {
                                held.remove(&k);
                            }
                        }
                    }
                    // Value-array references go now (an array is deleted only after its
                    // readers anyway). A hot half must not be rewritten under a read in
                    // progress: the versions this removal waited for are older than the
                    // chunk's record, but readers of the newer versions read this tree too,
                    // and one may have read an entry (or held version) just removed and not
                    // yet the half it names. Its reference goes once those reads are over.
                    let mut hot = Vec::new();
                    for w in dropped {
                        if matches!(Vaddr::decode(w, &a.location)?, Vaddr::Hot { .. }) {
                            hot.push(w);
                        } else {
                            a.drop_ref(w)?;
                        }
                    }
                    if !hot.is_empty() {
                        self.defer(Vec::new(), Deferred::DropRefs { words: hot });
                    }
                }
                Deferred::ForgetRetired { tree } => {
                    a.retired.write().retain(|(n, _)| *n != tree);
                    self.forget_tree_held(a, tree)?;
                }
                Deferred::DeleteValues { number } => a.values.delete(number)?,
                Deferred::DropRefs { words } => {
                    for w in words {
                        a.drop_ref(w)?;
                    }
                }
                Deferred::FreeHot { slot } => {
                    if let Some(hot) = &a.hot {
                        hot.free(slot);
                    }
                }
            }
        }
        Ok(())
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

impl LabChunk {
    /// The empty chunk that only ends tree `tree` (nothing is left to compact).
    fn ends(tree: u64, file_scan: bool) -> LabChunk {
        LabChunk {
            tree,
            lo: Vec::new(),
            hi: Vec::new(),
            last: true,
            entries: 0,
            file_scan,
        }
    }
}

/// The entries of the leaf holding the first key after `after` (from the first key without).
fn leaf_after(tree: &PbTree, after: Option<&[u8]>) -> Result<Vec<crate::pbtree::Entry>> {
    match after {
        Some(k) => tree.entries_after(Bound::Excluded(k)),
        None => tree.entries_after(Bound::Unbounded),
    }
}

/// The leftmost leaves after the cursor, at least `want` entries (or all that are left).
fn leaf_scan_chunk(tree: &PbTree, state: &ChunkState, want: u64) -> Result<LabChunk> {
    let mut lo: Option<Vec<u8>> = None;
    let mut hi: Vec<u8> = Vec::new();
    let mut entries = 0u64;
    let mut bound: Option<Vec<u8>> = state.cursor.clone();
    loop {
        let leaf = leaf_after(tree, bound.as_deref())?;
        let Some(last) = leaf.last() else {
            break;
        };
        if lo.is_none() {
            lo = Some(leaf[0].0.clone());
        }
        hi = last.0.clone();
        entries += leaf.len() as u64;
        bound = Some(hi.clone());
        if entries >= want {
            break;
        }
    }
    let Some(lo) = lo else {
        // Nothing left after the cursor: an empty chunk that only ends the tree.
        return Ok(LabChunk::ends(state.tree, false));
    };
    let last = tree.entries_after(Bound::Excluded(&hi))?.is_empty();
    Ok(LabChunk {
        tree: state.tree,
        lo,
        hi,
        last,
        entries,
        file_scan: false,
    })
}

/// The file scan: of the entries left (after the cursor, outside committed file-scan chunks),
/// the run of consecutive leaves with at least `want` entries (fewer only where a committed
/// chunk or the end cuts the run) that holds the most entries whose values sit in the oldest
/// value array any of them references (ties: the leftmost run). A chunk stays one key range,
/// as a leaf-scan chunk is, so it merges with the L1 tables under one range.
fn file_scan_chunk(tree: &PbTree, state: &ChunkState, want: u64) -> Result<LabChunk> {
    let mut leaves: Vec<LeafSummary> = Vec::new();
    let mut words: Vec<Vec<u64>> = Vec::new();
    let mut bound: Option<Vec<u8>> = state.cursor.clone();
    let mut gap = false;
    loop {
        let leaf = leaf_after(tree, bound.as_deref())?;
        let Some(last) = leaf.last() else {
            break;
        };
        bound = Some(last.0.clone());
        let mut run: Vec<(Vec<u8>, u64)> = Vec::new();
        for (k, p) in leaf {
            if state.is_done(&k) {
                // A committed chunk: close the leaves gathered so far in this leaf.
                if !run.is_empty() {
                    push_leaf(&mut leaves, &mut words, std::mem::take(&mut run), gap)?;
                }
                gap = true;
                continue;
            }
            run.push((k, word_of(&p)?));
        }
        if !run.is_empty() {
            push_leaf(&mut leaves, &mut words, run, gap)?;
            gap = false;
        }
    }
    let left: u64 = leaves.iter().map(|l| l.entries).sum();
    if leaves.is_empty() {
        return Ok(LabChunk::ends(state.tree, true));
    }
    let oldest = words
        .iter()
        .flatten()
        .filter_map(|&w| match Vaddr::decode(w, "LAB-DB tree") {
            Ok(Vaddr::Value { file, .. }) => Some(file),
            _ => None,
        })
        .min();
    for (l, ws) in leaves.iter_mut().zip(&words) {
        l.oldest = ws
            .iter()
            .filter(|&&w| {
                matches!(Vaddr::decode(w, "LAB-DB tree"), Ok(Vaddr::Value { file, .. }) if Some(file) == oldest)
            })
            .count() as u64;
    }
    // Two pointers: the window [i, j) grows to `want` entries (or the end of its run), then
    // is scored; the best window wins.
    let mut best: Option<(u64, usize, usize)> = None;
    let mut j = 0;
    let (mut entries, mut score) = (0u64, 0u64);
    for i in 0..leaves.len() {
        if leaves[i].after_gap || j <= i {
            j = i;
            entries = 0;
            score = 0;
        }
        while j < leaves.len() && entries < want && (j == i || !leaves[j].after_gap) {
            entries += leaves[j].entries;
            score += leaves[j].oldest;
            j += 1;
        }
        if best.is_none_or(|(s, _, _)| score > s) {
            best = Some((score, i, j));
        }
        entries -= leaves[i].entries;
        score -= leaves[i].oldest;
    }
    let (_, i, j) = best.expect("at least one leaf");
    let entries: u64 = leaves[i..j].iter().map(|l| l.entries).sum();
    Ok(LabChunk {
        tree: state.tree,
        lo: leaves[i].first.clone(),
        hi: leaves[j - 1].last.clone(),
        last: entries == left,
        entries,
        file_scan: true,
    })
}

fn push_leaf(
    leaves: &mut Vec<LeafSummary>,
    words: &mut Vec<Vec<u64>>,
    run: Vec<(Vec<u8>, u64)>,
    after_gap: bool,
) -> Result<()> {
    let first = run.first().expect("non-empty").0.clone();
    let last = run.last().expect("non-empty").0.clone();
    leaves.push(LeafSummary {
        first,
        last,
        entries: run.len() as u64,
        oldest: 0,
        after_gap,
    });
    words.push(run.into_iter().map(|(_, w)| w).collect());
    Ok(())
}

fn word_of(p: &[u8]) -> Result<u64> {
    Ok(u64::from_le_bytes(p.try_into().map_err(|_| {
        Error::corruption("LAB-DB tree", "payload is not one word")
    })?))
}

/// Where an iterator's value-record reads are counted: the database's counters, the part and
/// the purpose (SSD bytes).
#[derive(Clone)]
pub(crate) struct Charge {
    /// The counters.
    pub counters: Arc<crate::stats::Counters>,
    /// The stage read.
    pub part: crate::stats::Part,
    /// Why.
    pub purpose: crate::stats::IoPurpose,
}

/// An iterator over one tree (optionally a key range of it): per key, the tree's version and
/// its held versions, each read from its value array, in internal-key order. One leaf is read
/// at a time, continuing after the last key returned.
struct TreeIter {
    l0: Arc<LabL0>,
    number: u64,
    tree: Arc<PbTree>,
    range: Option<(Vec<u8>, Vec<u8>)>,
    /// The current leaf's versions: internal key, value.
    buf: Vec<(Vec<u8>, Vec<u8>)>,
    pos: usize,
    /// The last user key of the leaf in `buf` (the next fill continues after it).
    last: Option<Vec<u8>>,
    done: bool,
    err: Option<Error>,
    charge: Charge,
    /// Entries the next fill gathers at least (whole leaves): a user iterator starts at one
    /// leaf after each seek and doubles per fill up to [`FILL_BATCH`] (a short scan reads
    /// little ahead); a chunk's iterator reads [`FILL_BATCH`] at a time.
    batch: usize,
}

impl TreeIter {
    fn new(
        l0: Arc<LabL0>,
        number: u64,
        tree: Arc<PbTree>,
        range: Option<(Vec<u8>, Vec<u8>)>,
        charge: Charge,
    ) -> Self {
        TreeIter {
            l0,
            number,
            tree,
            range,
            charge,
            buf: Vec::new(),
            pos: 0,
            last: None,
            done: true,
            err: None,
            batch: 0,
        }
    }

    /// Positions at the first entry from `from` (a seek): the read-ahead starts small again.
    fn seek_fill(&mut self, from: Bound<Vec<u8>>) {
        self.batch = if self.range.is_some() { FILL_BATCH } else { 1 };
        self.fill(from);
    }

    /// Fills `buf` from the first leaf with keys after `from` (within the range).
    fn fill(&mut self, from: Bound<Vec<u8>>) {
        self.buf.clear();
        self.pos = 0;
        self.done = true;
        // One read ([`Reads`]): what the tree entries and held versions name is not released
        // before the fill has read it.
        let l0 = Arc::clone(&self.l0);
        let _read = l0.begin_read();
        if let Err(e) = self.try_fill(from) {
            self.err.get_or_insert(e);
            self.buf.clear();
            self.done = true;
        }
    }

    fn try_fill(&mut self, mut from: Bound<Vec<u8>>) -> Result<()> {
        if let (Some((lo, _)), Bound::Unbounded) = (&self.range, &from) {
            from = Bound::Included(lo.clone());
        }
        if let (Some((lo, _)), Bound::Included(k) | Bound::Excluded(k)) = (&self.range, &from) {
            if k < lo {
                from = Bound::Included(lo.clone());
            }
        }
        let values = Arc::clone(&self.l0.att()?.values);
        loop {
            // Whole leaves until `batch` entries (or the range's end): their records are read
            // as one batch, in parallel.
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            let mut end_of_range = false;
            loop {
                let leaf = match &from {
                    Bound::Included(k) => self.tree.entries_after(Bound::Included(k))?,
                    Bound::Excluded(k) => self.tree.entries_after(Bound::Excluded(k))?,
                    Bound::Unbounded => self.tree.entries_after(Bound::Unbounded)?,
                };
                let Some(last) = leaf.last() else {
                    end_of_range = true;
                    break;
                };
                self.last = Some(last.0.clone());
                from = Bound::Excluded(last.0.clone());
                for (key, payload) in leaf {
                    if self.range.as_ref().is_some_and(|(_, hi)| &key > hi) {
                        end_of_range = true;
                        break;
                    }
                    entries.push((key, payload));
                }
                if end_of_range || entries.len() >= self.batch {
                    break;
                }
            }
            if entries.is_empty() {
                return Ok(());
            }
            let held = self.l0.held.lock().clone_range(
                &entries[0].0,
                &entries[entries.len() - 1].0,
                self.number,
            );
            // Per key: its tree version, then its held versions. Value records are read as
            // one batch; a hot slot yields every version of the key it holds.
            let att = self.l0.att()?;
            let mut reqs: Vec<(u64, &[u8])> = Vec::with_capacity(entries.len());
            let mut per_key: Vec<Vec<u64>> = Vec::with_capacity(entries.len());
            for (key, payload) in &entries {
                let mut words = vec![word_of(payload)?];
                words.extend(held.get(key).map_or(&[][..], Vec::as_slice));
                for &w in &words {
                    if matches!(Vaddr::decode(w, &att.location)?, Vaddr::Value { .. }) {
                        reqs.push((w, key.as_slice()));
                    }
                }
                per_key.push(words);
            }
            self.batch = (self.batch.max(16) * 2).min(FILL_BATCH);
            let records = values.read_many(&reqs)?;
            let read: u64 = records.iter().map(|v| v.device_bytes()).sum();
            self.charge
                .counters
                .add_read(Tier::Ssd, self.charge.part, self.charge.purpose, read);
            let mut records = records.into_iter();
            for ((key, _), words) in entries.iter().zip(per_key) {
                let mut versions: Vec<ValueRecord> = Vec::with_capacity(words.len());
                for w in words {
                    match Vaddr::decode(w, &att.location)? {
                        Vaddr::Value { .. } => versions.extend(records.next()),
                        Vaddr::Hot { slot, half, tag } => {
                            versions.push(att.hot()?.read(slot, half, tag, key)?)
                        }
                    }
                }
                versions.sort_by_key(|v| std::cmp::Reverse(v.seq));
                versions.dedup_by(|a, b| a.seq == b.seq);
                for v in versions {
                    self.buf
                        .push((make_internal_key(key, v.seq, v.vtype), v.value));
                }
            }
            if !self.buf.is_empty() {
                self.done = false;
                return Ok(());
            }
            if end_of_range {
                return Ok(());
            }
        }
    }
}

/// Entries a [`TreeIter`] fill gathers (whole leaves) before it reads their value records as
/// one batch.
const FILL_BATCH: usize = 128;

trait HeldRange {
    fn clone_range(&self, lo: &[u8], hi: &[u8], tree: u64) -> HashMap<Vec<u8>, Vec<u64>>;
}

impl HeldRange for BTreeMap<Vec<u8>, Vec<Held>> {
    /// The held versions of `tree` for the keys in `[lo, hi]`.
    fn clone_range(&self, lo: &[u8], hi: &[u8], tree: u64) -> HashMap<Vec<u8>, Vec<u64>> {
        self.range::<[u8], _>((Bound::Included(lo), Bound::Included(hi)))
            .filter_map(|(k, v)| {
                let words: Vec<u64> = v
                    .iter()
                    .filter(|h| h.tree == tree)
                    .map(|h| h.word)
                    .collect();
                (!words.is_empty()).then(|| (k.clone(), words))
            })
            .collect()
    }
}

impl InternalIterator for TreeIter {
    fn valid(&self) -> bool {
        !self.done && self.pos < self.buf.len()
    }

    fn seek_to_first(&mut self) {
        self.seek_fill(Bound::Unbounded);
    }

    fn seek(&mut self, target: &[u8]) {
        let Some(p) = parse_internal_key(target) else {
            self.err.get_or_insert(Error::corruption(
                "LAB-DB tree iterator",
                "malformed seek key",
            ));
            self.done = true;
            return;
        };
        self.seek_fill(Bound::Included(p.user_key.to_vec()));
        while self.valid() && crate::format::compare_internal(&self.buf[self.pos].0, target).is_lt()
        {
            self.pos += 1;
        }
        if !self.done && self.pos == self.buf.len() {
            self.advance_leaf();
        }
    }

    fn next(&mut self) {
        self.pos += 1;
        if self.pos >= self.buf.len() {
            self.advance_leaf();
        }
    }

    fn key(&self) -> &[u8] {
        &self.buf[self.pos].0
    }

    fn value(&self) -> &[u8] {
        &self.buf[self.pos].1
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.duplicate()),
            None => Ok(()),
        }
    }
}

impl TreeIter {
    fn advance_leaf(&mut self) {
        match self.last.clone() {
            Some(last) => {
                if let Some((_, hi)) = &self.range {
                    if &last >= hi {
                        self.buf.clear();
                        self.done = true;
                        return;
                    }
                }
                self.fill(Bound::Excluded(last));
            }
            None => self.done = true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{open_pm_owners, PmFsOpen};
    use crate::pbtree::PbTreeOwner;
    use tierkv_pm::PoolOptions;

    fn key(i: u64) -> Vec<u8> {
        format!("k{i:04}").into_bytes()
    }

    /// An L0 attached to a new pool, value arrays on a `MemFs`, every key hot from its first
    /// flush.
    fn attached() -> (Arc<PmPool>, Arc<LabL0>) {
        let pool = PmPool::create_crash_sim(
            &PoolOptions {
                size: 8 << 20,
                chunk_size: 64 << 10,
                ..PoolOptions::default()
            },
            true,
        )
        .unwrap();
        let opened = crate::fs::open_pm_structures(
            &pool,
            "t",
            PmFsOpen::Create(7),
            crate::fs::PmKinds {
                lab: Some(true),
                ..crate::fs::PmKinds::default()
            },
        )
        .unwrap();
        let options = LabOptions {
            hot_buffer_bytes: 4 << 10,
            hot_slot_bytes: 256,
            hot_threshold: 1,
            ..LabOptions::default()
        };
        let dir = std::path::Path::new("/db");
        let ssd: Arc<dyn crate::fs::FileSystem> = Arc::new(crate::fs::MemFs::new());
        ssd.create_dir_all(dir).unwrap();
        let values = ValueFiles::new(dir, ssd, None, 7, 16, None);
        let hot = HotBuffer::open(opened.pmfs.clone(), dir, &options, true).unwrap();
        let l0 = Arc::new(LabL0::new(&options));
        l0.attach(
            Arc::clone(&pool),
            "t",
            opened.lab_trees.unwrap(),
            (values, Some(Arc::new(hot))),
            INITIAL_ROLES,
            Some(1),
        )
        .unwrap();
        (pool, l0)
    }

    /// Flushes version `seq` of `key` (value `value`) into the mutable tree of `roles` as
    /// value array `number`, with no live snapshot or version.
    fn flush_one(l0: &LabL0, roles: TreeRoles, number: u64, key: &[u8], seq: u64, value: &[u8]) {
        let entries = vec![(
            make_internal_key(key, seq, ValueType::Value),
            value.to_vec(),
        )];
        flush_with(l0, roles, number, &entries, Vec::new());
    }

    /// Flushes `entries` into the mutable tree of `roles` as value array `number`, with the
    /// live snapshots `snapshots` and no live version.
    fn flush_with(
        l0: &LabL0,
        roles: TreeRoles,
        number: u64,
        entries: &[(Vec<u8>, Vec<u8>)],
        snapshots: Vec<u64>,
    ) {
        let live = Vec::new;
        let readers: Readers<'_> = (snapshots, &live);
        l0.flush(roles, entries, number, &readers, || Ok(()))
            .unwrap();
    }

    fn hot_writes(l0: &LabL0) -> u64 {
        l0.att().unwrap().hot.as_ref().unwrap().figures().writes
    }

    /// The upkeep of the flush thread, with no live version: held versions no snapshot needs
    /// forgotten, unreferenced arrays and slots handed over, what is due run.
    fn upkeep(l0: &LabL0, smallest: u64) {
        let hot = l0.forget_held(smallest).unwrap();
        l0.drop_after(Vec::new(), hot);
        l0.release_values(&[], u64::MAX);
        l0.run_deferred().unwrap();
    }

    /// With `read` in progress and the half `word` (version 1 of `key`, "one") named by nothing
    /// else, the next flush of `key` finds no free half and leaves it intact; once the read is
    /// over, the flush after the upkeep reuses it.
    fn half_outlives_the_read(
        l0: &LabL0,
        roles: TreeRoles,
        key: &[u8],
        word: u64,
        read: ReadGuard<'_>,
    ) {
        flush_one(l0, roles, 12, key, 3, b"three");
        assert_eq!(
            hot_writes(l0),
            2,
            "a half a read in progress may read was rewritten"
        );
        let r = l0.att().unwrap().read(word, key).unwrap();
        assert_eq!((r.seq, r.value.as_slice()), (1, &b"one"[..]));
        drop(read);
        // The read is over: the half is free for the next flush.
        upkeep(l0, 10);
        flush_one(l0, roles, 13, key, 4, b"four");
        assert_eq!(hot_writes(l0), 3);
    }

    /// A compacted chunk's entries are removed once the versions older than its record are
    /// released, but a reader of a newer version still reads the tree: one that read an entry
    /// just before its removal still reads the hot half it names, which no flush overwrites
    /// until that read is over.
    #[test]
    fn a_removed_chunk_entrys_hot_half_outlives_the_reads_in_progress() {
        let (_pool, l0) = attached();
        let k = b"hot".to_vec();
        let roles = INITIAL_ROLES;
        flush_one(&l0, roles, 10, &k, 1, b"one");
        let roles = l0.switch(roles, &[]).unwrap();
        assert_eq!(
            roles,
            TreeRoles {
                mutable: 2,
                immutable: 1
            }
        );
        // Tree 1 names one half of the key's slot, tree 2 the other.
        flush_one(&l0, roles, 11, &k, 2, b"two");
        assert_eq!(hot_writes(&l0), 2);
        let chunk = l0.next_chunk(roles).unwrap().unwrap();
        assert_eq!(chunk.entries, 1);
        l0.chunk_done(&chunk, Vec::new());
        // A read (of the version the chunk's record installed) finds tree 1's entry ...
        let read = l0.begin_read();
        let word = l0.tree(1).unwrap().unwrap().get_word(&k).unwrap().unwrap();
        // ... the entry is removed, and the next flushes of the key find no free half.
        upkeep(&l0, 10);
        assert_eq!(l0.tree(1).unwrap().unwrap().get_word(&k).unwrap(), None);
        upkeep(&l0, 10);
        half_outlives_the_read(&l0, roles, &k, word, read);
        let got = l0.get(roles, &k, 10, false).unwrap().unwrap();
        assert_eq!(got.1, b"four");
    }

    /// A held version is forgotten once no snapshot needs it, but a chunk compaction (which
    /// pins no version) reading the immutable tree may have copied it and not yet read its hot
    /// half: no flush overwrites the half until that read is over.
    #[test]
    fn a_forgotten_held_versions_hot_half_outlives_the_reads_in_progress() {
        let (_pool, l0) = attached();
        let k = b"hot".to_vec();
        let roles = INITIAL_ROLES;
        flush_one(&l0, roles, 10, &k, 1, b"one");
        // A snapshot at 1: the version the next flush replaces in place is held.
        let entries = vec![(make_internal_key(&k, 2, ValueType::Value), b"two".to_vec())];
        flush_with(&l0, roles, 11, &entries, vec![1]);
        let roles = l0.switch(roles, &[]).unwrap();
        // The chunk's read copies the held version of tree 1 ...
        let read = l0.begin_read();
        let held = l0.held.lock().clone_range(&k, &k, 1);
        let word = held[&k][0];
        // ... the snapshot goes, the held version is forgotten, and the next flushes of the
        // key (into tree 2) find no free half: tree 1 names one, the read may read the other.
        upkeep(&l0, 10);
        assert!(l0.held.lock().is_empty());
        upkeep(&l0, 10);
        half_outlives_the_read(&l0, roles, &k, word, read);
    }

    /// A tree of keys 0..300 whose values are in value array 5, but 240..270 in 6 and
    /// 270..300 in 3 (the oldest).
    fn tree() -> (Arc<PmPool>, Arc<PbTree>) {
        let options = PoolOptions {
            size: 4 << 20,
            chunk_size: 64 << 10,
            ..PoolOptions::default()
        };
        let pool = PmPool::create_crash_sim(&options, true).unwrap();
        let mut owner =
            PbTreeOwner::with_layout(Arc::clone(&pool), "t", "t", Layout::Inline, InnerKind::Dram);
        open_pm_owners(&pool, "t", PmFsOpen::Create(7), &mut [&mut owner]).unwrap();
        let tree = Arc::new(owner.into_tree(true).unwrap());
        for i in 0..300 {
            let file = match i {
                0..240 => 5,
                240..270 => 6,
                _ => 3,
            };
            let w = Vaddr::value(file, 64 + i).unwrap().encode();
            tree.upsert_word(&key(i), |_| WordOp::Put(w)).unwrap();
        }
        (pool, tree)
    }

    fn file_of(tree: &PbTree, k: &[u8]) -> u64 {
        match Vaddr::decode(tree.get_word(k).unwrap().unwrap(), "t").unwrap() {
            Vaddr::Value { file, .. } => file,
            Vaddr::Hot { .. } => unreachable!(),
        }
    }

    /// Leaf scan from the cursor, then file scan: the oldest array's leaves first, every
    /// entry left compacted exactly once, the last chunk (only) marked last.
    #[test]
    fn file_scan_takes_the_oldest_arrays_leaves_first_and_covers_the_rest_once() {
        let (_pool, tree) = tree();
        let mut state = ChunkState::new(1, 300);
        // Leaf scan: the leftmost leaves, one at a time, in order, up to array 6's keys.
        let mut next_lo = key(0);
        loop {
            let c = leaf_scan_chunk(&tree, &state, 1).unwrap();
            assert!(!c.file_scan && !c.last, "{c:?}");
            assert_eq!(c.lo, next_lo);
            if c.hi >= key(240) {
                break;
            }
            state.compacted += c.entries;
            let hi: u64 = std::str::from_utf8(&c.hi[1..]).unwrap().parse().unwrap();
            next_lo = key(hi + 1);
            state.cursor = Some(c.hi);
        }
        let before = state.compacted;
        assert!(before > 150, "{before}");
        let cursor = state.cursor.clone().unwrap();
        let mut seen = std::collections::BTreeSet::new();
        let mut chunks = Vec::new();
        loop {
            let c = file_scan_chunk(&tree, &state, 10).unwrap();
            assert!(c.file_scan && c.entries > 0, "{c:?}");
            assert!(c.lo > cursor && c.lo <= c.hi, "{c:?}");
            let mut it = tree.iter();
            it.seek(&c.lo).unwrap();
            let mut n = 0;
            while let Some((k, _)) = it.current() {
                if *k > c.hi {
                    break;
                }
                assert!(
                    seen.insert(k.clone()),
                    "{} compacted twice",
                    String::from_utf8_lossy(k)
                );
                n += 1;
                it.next().unwrap();
            }
            assert_eq!(n, c.entries, "{c:?}");
            state.compacted += c.entries;
            state.done.push((c.lo.clone(), c.hi.clone()));
            chunks.push(c.clone());
            if c.last {
                break;
            }
            assert!(chunks.len() < 60, "no end");
        }
        // Every entry after the cursor, once.
        assert_eq!(seen.len() as u64, 300 - before);
        assert_eq!(state.compacted, 300);
        // The first chunk is wholly in the oldest array's keys, where a leaf scan would have
        // taken array 6's next.
        assert!(chunks[0].lo >= key(270), "{:?}", chunks[0]);
        assert_eq!(file_of(&tree, &chunks[0].lo), 3);
        assert_eq!(file_of(&tree, &chunks[0].hi), 3);
        let c = leaf_scan_chunk(
            &tree,
            &ChunkState {
                cursor: Some(cursor),
                ..ChunkState::new(1, 300)
            },
            10,
        )
        .unwrap();
        assert_eq!(file_of(&tree, &c.lo), 6);
        // Nothing left: an empty last chunk.
        let c = file_scan_chunk(&tree, &state, 10).unwrap();
        assert!(c.last && c.entries == 0, "{c:?}");
    }
}
