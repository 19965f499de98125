//! SLM-DB's global index (Kaiyrakhmet et al., "SLM-DB: Single-Level Key-Value Store with
//! Persistent Memory", FAST 2019, section 3.2): a persistent B+ tree ([`crate::pbtree`]) in the
//! PM pool that maps every live user key of the single SST level to the one place its newest
//! version lives: `{table, data block, sequence}`. A get is one tree lookup and one block read;
//! a key the tree does not hold is absent, with no I/O.
//!
//! # What the tree holds, and what keeps it right
//!
//! * One payload per live key ([`Location`]): the table's number, the data block's handle and
//!   the version's sequence number. Tombstones are never in the tree: a flushed tombstone
//!   removes the key. An SST entry the tree (or the held versions below) does not point at is
//!   garbage: selective compaction drops it.
//! * **Flush** (`index_flush`): after the table is written and synced, each of its user keys
//!   is applied in one failure-atomic tree update: its newest version replaces the tree's
//!   payload if that is not newer (an equal sequence is the same version flushed again, at
//!   recovery: the new place wins), a tombstone removes the key.
//! * **Compaction** (`index_compaction`): after the outputs are written and synced, each
//!   copied entry moves the tree's payload from the input to the output only if the tree
//!   still points at that input and sequence (a compare-and-swap under the tree's lock): a
//!   flush that replaced the key meanwhile wins, and the copy becomes garbage.
//! * **Crash** (recovery, `recover`): the tree is updated before the manifest record that adds
//!   the flush's or compaction's tables. A crash in between leaves the tree pointing at tables
//!   the manifest does not name; recovery **adopts** them (one manifest record adds every
//!   table the tree names and the version lacks, read back from the file), so every pointer
//!   stays valid. A compaction's inputs stay in the version until the record that removes them,
//!   written after every pointer moved, so nothing the tree may still name is ever deleted. A
//!   flush whose record was lost is flushed again from its PM memtable: the same versions, so
//!   the tree moves to the new table and the adopted one becomes garbage. The paper's
//!   compaction log of `(key, old table)` pairs is not needed: nothing is ever undone, and
//!   each step is redone from the tables themselves.
//! * Live-entry counts per table (the R1 ratio) are rebuilt from one scan of the tree at open
//!   (the paper keeps them in its manifest), and kept in DRAM after.
//!
//! # Snapshots (the tree holds only the newest version)
//!
//! A reader with a snapshot (an explicit one, or an iterator, which pins its sequence as one)
//! must still see the version that was newest at its sequence. When a flush replaces or
//! removes a version that a live snapshot can see, the replaced version's place is kept in a
//! DRAM map of **held versions** (`key, sequence -> place, replaced at`), inserted under the
//! tree's lock before the tree changes, so a reader that sees the new payload also sees the
//! held one. Selective compaction keeps held versions as it keeps the tree's (moving their
//! places too), and the map forgets a version once no snapshot can see it. Snapshots do not
//! survive a crash, so the map is volatile. A read without a snapshot that finds a payload
//! newer than its sequence (written after the read began) returns it: a version current at
//! some instant of the read.
//!
//! # Files a reader may be about to read
//!
//! A reader reads the tree's CURRENT state, not the version it pinned, so it may reach a table
//! added after its version, or one a compaction is removing. The index keeps every table it may
//! point at (`files`); a table leaves it only after the record that removed it, when no pointer
//! names it any more. A reader that finds its table gone (or unreadable because deleted) looks
//! its version up again, and reads the place it moved to.

use crate::format::{make_internal_key, parse_internal_key, user_key, ValueType};
use crate::pbtree::{PbTree, Upsert};
use crate::runs::OpenRun;
use crate::runs::TableCache;
use crate::sst::format::BlockHandle;
use crate::stats::{GlobalIndexStats, IoPurpose, Part};
use crate::util::coding::{put_varint64, Decoder};
use crate::version::FileMetaData;
use crate::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

mod candidates;
pub(crate) mod iter;
pub(crate) mod recovery;
#[cfg(test)]
mod tests;

pub(crate) use candidates::{leaf_scan_candidates, live_key_candidates, range_query_candidates};

/// The name of the tree's root in the PM pool's root directory.
pub(crate) const ROOT_NAME: &str = "slmdb-index";

/// Where one version of a key lives: the table, its data block, the version's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    pub file: u64,
    pub block: BlockHandle,
    pub seq: u64,
}

impl Location {
    /// The tree payload: four varints (table, sequence, block offset, block size).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24);
        put_varint64(&mut out, self.file);
        put_varint64(&mut out, self.seq);
        put_varint64(&mut out, self.block.offset);
        put_varint64(&mut out, self.block.size);
        out
    }

    /// Decodes a payload of the tree; damage is corruption naming the tree and the key.
    pub(crate) fn decode(payload: &[u8], key: &[u8]) -> Result<Location> {
        let mut d = Decoder::new(payload);
        let parsed = (|| {
            let file = d.varint64()?;
            let seq = d.varint64()?;
            let offset = d.varint64()?;
            let size = d.varint64()?;
            d.is_empty().then_some(Location {
                file,
                block: BlockHandle { offset, size },
                seq,
            })
        })();
        parsed.ok_or_else(|| {
            Error::corruption(
                format!("PM tree {ROOT_NAME}"),
                format!("malformed location for key {}", crate::util::escape(key)),
            )
        })
    }
}

/// A version the tree no longer holds that a live snapshot may still read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    /// The sequence of the version.
    seq: u64,
    /// The sequence of the version (or tombstone) that replaced it.
    next: u64,
    loc: Location,
}

/// The rule-2 and rule-3 candidates and the leaf-scan cursor.
#[derive(Default)]
struct Candidates {
    listed: BTreeSet<u64>,
    /// The last key the leaf scan read (empty: start from the first).
    cursor: Vec<u8>,
}

/// The global index of one database (module docs). `Send + Sync`.
pub(crate) struct GlobalIndex {
    tree: OnceLock<Arc<PbTree>>,
    /// Every table the tree or a held version may point at.
    files: RwLock<HashMap<u64, Arc<FileMetaData>>>,
    /// Per table: the entries the tree points at.
    live: Mutex<HashMap<u64, u64>>,
    /// Per user key: versions held for snapshots, newest first.
    held: Mutex<BTreeMap<Vec<u8>, Vec<Held>>>,
    candidates: Mutex<Candidates>,
    options: crate::options::SlmOptions,
}

/// True if a live snapshot in `snapshots` (sorted) reads the version `[seq, next)`.
fn seen_by(snapshots: &[u64], seq: u64, next: u64) -> bool {
    let i = snapshots.partition_point(|&s| s < seq);
    snapshots.get(i).is_some_and(|&s| s < next)
}

/// One entry of a table the index learns: internal key and data block.
pub(crate) type IndexedEntry = (Vec<u8>, BlockHandle);

/// Maps entries recorded with their data block's ordinal to block handles.
pub(crate) fn with_handles(
    entries: Vec<(Vec<u8>, usize)>,
    blocks: &[BlockHandle],
    location: &str,
) -> Result<Vec<IndexedEntry>> {
    entries
        .into_iter()
        .map(|(k, b)| {
            let h = blocks.get(b).copied().ok_or_else(|| {
                Error::corruption(
                    location,
                    format!("entry in data block {b} of {}", blocks.len()),
                )
            })?;
            Ok((k, h))
        })
        .collect()
}

impl GlobalIndex {
    pub(crate) fn new(options: &crate::options::SlmOptions) -> GlobalIndex {
        GlobalIndex {
            tree: OnceLock::new(),
            files: RwLock::new(HashMap::new()),
            live: Mutex::new(HashMap::new()),
            held: Mutex::new(BTreeMap::new()),
            candidates: Mutex::new(Candidates::default()),
            options: options.clone(),
        }
    }

    /// Gives the index its tree (once, at open).
    pub(crate) fn attach(&self, tree: Arc<PbTree>) -> Result<()> {
        self.tree
            .set(tree)
            .map_err(|_| Error::InvalidArgument("the global index is attached twice".into()))
    }

    pub(crate) fn tree(&self) -> Result<&Arc<PbTree>> {
        self.tree.get().ok_or_else(|| {
            Error::InvalidArgument(
                "the global index has no PM tree (the pool was not opened)".into(),
            )
        })
    }

    pub(crate) fn options(&self) -> &crate::options::SlmOptions {
        &self.options
    }

    /// Makes `meta` readable through the index (before any pointer names it).
    pub(crate) fn add_file(&self, meta: Arc<FileMetaData>) {
        self.files.write().insert(meta.number, meta);
    }

    /// Forgets tables a manifest record removed (no pointer names them any more).
    pub(crate) fn remove_files(&self, numbers: &[u64]) {
        let mut files = self.files.write();
        let mut live = self.live.lock();
        let mut c = self.candidates.lock();
        for n in numbers {
            files.remove(n);
            live.remove(n);
            c.listed.remove(n);
        }
    }

    /// The live-entry count of each table (R1).
    pub(crate) fn live_counts(&self) -> HashMap<u64, u64> {
        self.live.lock().clone()
    }

    /// The tables listed by rules R2 and R3.
    pub(crate) fn listed(&self) -> BTreeSet<u64> {
        self.candidates.lock().listed.clone()
    }

    /// Drops `n` from the R2/R3 list (a compaction would gain nothing from it alone).
    pub(crate) fn unlist(&self, n: u64) {
        self.candidates.lock().listed.remove(&n);
    }

    /// The place of the version of `key` a read at `seq` sees (`pinned`: `seq` is a live
    /// snapshot, see the module docs), if any.
    pub(crate) fn locate(&self, key: &[u8], seq: u64, pinned: bool) -> Result<Option<Location>> {
        let current = match self.tree()?.get(key)? {
            Some(p) => Some(Location::decode(&p, key)?),
            None => None,
        };
        if let Some(l) = current.filter(|l| l.seq <= seq) {
            return Ok(Some(l));
        }
        let held = self.held.lock();
        let versions = held.get(key).map_or(&[][..], Vec::as_slice);
        Ok(iter::visible(current, versions, seq, pinned))
    }

    /// Where the version `seq` of `key` lives now: the tree's place or a held one.
    fn relocate(&self, key: &[u8], seq: u64) -> Result<Option<Location>> {
        if let Some(p) = self.tree()?.get(key)? {
            let l = Location::decode(&p, key)?;
            if l.seq == seq {
                return Ok(Some(l));
            }
        }
        let held = self.held.lock();
        Ok(held
            .get(key)
            .and_then(|v| v.iter().find(|h| h.seq == seq))
            .map(|h| h.loc))
    }

    /// True if the entry `(key, seq)` of table `file` is one the index points at.
    pub(crate) fn is_live(&self, file: u64, key: &[u8], seq: u64) -> Result<bool> {
        if let Some(p) = self.tree()?.get(key)? {
            let l = Location::decode(&p, key)?;
            if l.file == file && l.seq == seq {
                return Ok(true);
            }
        }
        let held = self.held.lock();
        Ok(held
            .get(key)
            .is_some_and(|v| v.iter().any(|h| h.seq == seq && h.loc.file == file)))
    }

    /// Reads the value of `key`'s version at `loc`, following it if a compaction moved it;
    /// `None` if the version is gone (its table was compacted away and the index no longer
    /// names that version: a newer one replaced it, which the caller looks up again).
    pub(crate) fn read_version(
        &self,
        r: &BlockReader<'_>,
        key: &[u8],
        mut loc: Location,
    ) -> Result<Option<Vec<u8>>> {
        for _ in 0..64 {
            let meta = self.files.read().get(&loc.file).cloned();
            let attempt = match meta {
                Some(meta) => read_at(r, &meta, key, loc),
                None => Err(Error::NotFound(format!(
                    "table {} left the index",
                    loc.file
                ))),
            };
            match attempt {
                Ok(v) => return Ok(Some(v)),
                Err(e @ Error::Corruption { .. }) => return Err(e),
                Err(e) => match self.relocate(key, loc.seq)? {
                    // The table may have been compacted away under the read: look again.
                    Some(moved) if moved != loc => loc = moved,
                    Some(_) => return Err(e),
                    None => return Ok(None),
                },
            }
        }
        Err(kept_moving(key))
    }

    /// The value of `key` a read at `seq` sees (`pinned`: see [`GlobalIndex::locate`]), with
    /// the version's sequence.
    pub(crate) fn get(
        &self,
        r: &BlockReader<'_>,
        key: &[u8],
        seq: u64,
        pinned: bool,
    ) -> Result<Option<(Location, Vec<u8>)>> {
        for _ in 0..64 {
            let Some(loc) = self.locate(key, seq, pinned)? else {
                return Ok(None);
            };
            if let Some(v) = self.read_version(r, key, loc)? {
                return Ok(Some((loc, v)));
            }
        }
        Err(kept_moving(key))
    }

    /// Applies flushed table `meta` (its entries in internal-key order, with their blocks)
    /// to the tree; `snapshots` are the live snapshots (sorted) when the flush began.
    pub(crate) fn index_flush(
        &self,
        meta: &Arc<FileMetaData>,
        entries: &[IndexedEntry],
        snapshots: &[u64],
    ) -> Result<()> {
        self.prune_held(snapshots);
        self.add_file(Arc::clone(meta));
        let tree = self.tree()?;
        let mut i = 0;
        while i < entries.len() {
            let uk = user_key(&entries[i].0);
            let mut j = i + 1;
            while j < entries.len() && user_key(&entries[j].0) == uk {
                j += 1;
            }
            let versions: Vec<(u64, ValueType, BlockHandle)> = entries[i..j]
                .iter()
                .map(|(k, h)| {
                    let p = parse_internal_key(k).ok_or_else(|| {
                        Error::corruption(format!("table {}", meta.number), "malformed key")
                    })?;
                    Ok((p.sequence, p.value_type, *h))
                })
                .collect::<Result<_>>()?;
            self.apply_flushed_key(tree, meta.number, uk, &versions, snapshots)?;
            i = j;
        }
        Ok(())
    }

    /// One user key of a flush: `versions` newest first.
    fn apply_flushed_key(
        &self,
        tree: &PbTree,
        file: u64,
        key: &[u8],
        versions: &[(u64, ValueType, BlockHandle)],
        snapshots: &[u64],
    ) -> Result<()> {
        let (newest, newest_type, newest_block) = versions[0];
        let oldest = versions[versions.len() - 1].0;
        // The table's own older versions a snapshot reads.
        for w in versions.windows(2) {
            let (next, _, _) = w[0];
            let (seq, t, block) = w[1];
            if t == ValueType::Value && seen_by(snapshots, seq, next) {
                self.hold(
                    key,
                    Held {
                        seq,
                        next,
                        loc: Location { file, block, seq },
                    },
                );
            }
        }
        let mut failure = None;
        tree.upsert(key, |current| {
            let old = match current.map(|p| Location::decode(p, key)).transpose() {
                Ok(o) => o,
                Err(e) => {
                    failure = Some(e);
                    return Upsert::Keep;
                }
            };
            if let Some(o) = old {
                if o.seq > newest {
                    return Upsert::Keep;
                }
                if o.seq < oldest && seen_by(snapshots, o.seq, oldest) {
                    self.hold(
                        key,
                        Held {
                            seq: o.seq,
                            next: oldest,
                            loc: o,
                        },
                    );
                }
                self.count(o.file, -1);
            }
            match newest_type {
                ValueType::Value => {
                    self.count(file, 1);
                    Upsert::Put(
                        Location {
                            file,
                            block: newest_block,
                            seq: newest,
                        }
                        .encode(),
                    )
                }
                ValueType::Deletion => Upsert::Delete,
            }
        })?;
        failure.map_or(Ok(()), Err)
    }

    fn hold(&self, key: &[u8], h: Held) {
        let mut held = self.held.lock();
        let v = held.entry(key.to_vec()).or_default();
        if !v.iter().any(|x| x.seq == h.seq) {
            v.push(h);
            v.sort_by_key(|h| std::cmp::Reverse(h.seq));
        }
    }

    fn count(&self, file: u64, delta: i64) {
        let mut live = self.live.lock();
        let c = live.entry(file).or_insert(0);
        *c = c.saturating_add_signed(delta);
    }

    /// Moves the pointers of the entries a compaction copied from `inputs` into output
    /// `meta`, where the tree (or a held version) still names the input and the sequence.
    /// Returns how many copies stayed unreferenced (a flush replaced the key meanwhile).
    pub(crate) fn index_compaction(
        &self,
        inputs: &HashSet<u64>,
        meta: &Arc<FileMetaData>,
        entries: &[IndexedEntry],
    ) -> Result<u64> {
        self.add_file(Arc::clone(meta));
        let tree = self.tree()?;
        let mut stale = 0;
        for (ikey, block) in entries {
            let p = parse_internal_key(ikey).ok_or_else(|| {
                Error::corruption(format!("table {}", meta.number), "malformed key")
            })?;
            let (key, seq) = (p.user_key, p.sequence);
            let new = Location {
                file: meta.number,
                block: *block,
                seq,
            };
            let mut failure = None;
            let mut moved = false;
            tree.upsert(key, |current| {
                match current.map(|c| Location::decode(c, key)).transpose() {
                    Err(e) => failure = Some(e),
                    Ok(Some(o)) if o.seq == seq && inputs.contains(&o.file) => {
                        self.count(o.file, -1);
                        self.count(new.file, 1);
                        moved = true;
                        return Upsert::Put(new.encode());
                    }
                    Ok(_) => {
                        let mut held = self.held.lock();
                        if let Some(h) = held.get_mut(key).and_then(|v| {
                            v.iter_mut()
                                .find(|h| h.seq == seq && inputs.contains(&h.loc.file))
                        }) {
                            h.loc = new;
                            moved = true;
                        }
                    }
                }
                Upsert::Keep
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
            if !moved {
                stale += 1;
            }
        }
        Ok(stale)
    }

    /// Forgets held versions no snapshot in `snapshots` (sorted) can read.
    pub(crate) fn prune_held(&self, snapshots: &[u64]) {
        let mut held = self.held.lock();
        held.retain(|_, v| {
            v.retain(|h| seen_by(snapshots, h.seq, h.next));
            !v.is_empty()
        });
    }

    /// Held versions of user keys in `(after, upto]` (`upto` `None`: no end), per key newest
    /// first, for iterators.
    fn held_range(&self, after: Bound<&[u8]>, upto: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<Held>)> {
        let held = self.held.lock();
        if held.is_empty() {
            return Vec::new();
        }
        let hi = upto.map_or(Bound::Unbounded, Bound::Included);
        held.range::<[u8], _>((after, hi))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// R2: scans the next window of keys of the tree from the cursor (round-robin): twice the
    /// average keys per table of the `tables` the level holds; lists their tables if there are
    /// more than `leaf_scan_files` of them.
    pub(crate) fn leaf_scan(&self, tables: usize) -> Result<()> {
        let tree = self.tree()?;
        let window = (2 * tree.len() / tables.max(1) as u64) as usize;
        if !self.options.leaf_scan || window == 0 {
            return Ok(());
        }
        let mut cursor = self.candidates.lock().cursor.clone();
        let mut files = Vec::with_capacity(window);
        let mut wrapped = false;
        while files.len() < window {
            let from = if cursor.is_empty() {
                Bound::Unbounded
            } else {
                Bound::Excluded(cursor.as_slice())
            };
            let batch = tree.entries_after(from)?;
            if batch.is_empty() {
                if wrapped || cursor.is_empty() {
                    break;
                }
                wrapped = true;
                cursor.clear();
                continue;
            }
            for (k, p) in &batch {
                files.push(Location::decode(p, k)?.file);
            }
            cursor = batch.last().expect("non-empty").0.clone();
        }
        let listed = leaf_scan_candidates(&files, self.options.leaf_scan_files);
        let mut c = self.candidates.lock();
        c.cursor = cursor;
        c.listed.extend(listed);
        Ok(())
    }

    /// R3: a range query's sub-range touched `files`.
    pub(crate) fn note_range(&self, files: &[u64]) {
        if !self.options.range_rule {
            return;
        }
        let listed =
            range_query_candidates(files, self.options.range_sub_keys, self.options.range_files);
        if !listed.is_empty() {
            self.candidates.lock().listed.extend(listed);
        }
    }

    /// PM bytes the tree wrote back since the last call.
    pub(crate) fn take_pm_bytes(&self) -> u64 {
        self.tree.get().map_or(0, |t| t.take_persisted_bytes())
    }

    /// Figures of the index.
    pub(crate) fn stats(&self) -> GlobalIndexStats {
        let t = self.tree.get().map(|t| t.stats()).unwrap_or_default();
        GlobalIndexStats {
            keys: t.keys,
            leaves: t.leaves,
            pm_bytes: t.pm_bytes,
            inner_nodes: t.inner_nodes,
            inner_pm_bytes: t.inner_pm_bytes,
            dram_bytes: t.dram_bytes,
            held_versions: self.held.lock().values().map(|v| v.len() as u64).sum(),
            listed_tables: self.candidates.lock().listed.len() as u64,
        }
    }

    /// Replaces the live counts and the readable tables (at open, after the tree scan).
    pub(crate) fn reset(&self, files: Vec<Arc<FileMetaData>>, live: HashMap<u64, u64>) {
        *self.files.write() = files.into_iter().map(|f| (f.number, f)).collect();
        *self.live.lock() = live;
    }
}

/// A read that kept finding its version's table compacted away.
fn kept_moving(key: &[u8]) -> Error {
    Error::NotFound(format!(
        "key {} kept moving between tables",
        crate::util::escape(key)
    ))
}

/// The index names table `path`, which the manifest does not name and the directory lacks.
pub(crate) fn unknown_table(path: &std::path::Path) -> Error {
    Error::corruption(
        format!("PM tree {ROOT_NAME}"),
        format!(
            "the global index points into table {}, which neither the manifest names nor the \
             directory holds",
            path.display()
        ),
    )
}

/// How a read reaches data blocks: the table cache, and the part and purpose its bytes count
/// under.
pub(crate) struct BlockReader<'a> {
    pub tables: &'a TableCache,
    pub part: Part,
    pub purpose: IoPurpose,
    pub fill_cache: bool,
}

/// Reads `key`'s version at `loc` in table `meta`: one data block.
pub(crate) fn read_at(
    r: &BlockReader<'_>,
    meta: &FileMetaData,
    key: &[u8],
    loc: Location,
) -> Result<Vec<u8>> {
    let (purpose, fill_cache) = (r.purpose, r.fill_cache);
    let run = r.tables.open_for(meta, r.part, purpose)?;
    let OpenRun::Sst(table) = run else {
        return Err(Error::corruption(
            run.path().display().to_string(),
            "the global index points into a run that is not an SSTable",
        ));
    };
    let lookup = make_internal_key(key, loc.seq, ValueType::Value);
    match table.get_in_block(loc.block, &lookup, purpose, fill_cache)? {
        Some((ikey, value)) => {
            let p = parse_internal_key(&ikey).filter(|p| p.sequence == loc.seq);
            match p {
                Some(p) if p.value_type == ValueType::Value => Ok(value),
                _ => Err(missing(table.path(), key, loc)),
            }
        }
        None => Err(missing(table.path(), key, loc)),
    }
}

fn missing(path: &std::path::Path, key: &[u8], loc: Location) -> Error {
    Error::corruption(
        path.display().to_string(),
        format!(
            "the global index places version {} of key {} in the block at offset {}, which \
             does not hold it",
            loc.seq,
            crate::util::escape(key),
            loc.block.offset
        ),
    )
}
