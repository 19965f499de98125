//! Deferred reclamation: removals of compacted entries, value arrays, retired trees and hot
//! slots wait until no version and no read in progress may still reach them.

use super::*;

/// Something deferred until no reader of an older version is left.
pub(super) enum Deferred {
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

pub(super) struct Pending {
    pub(super) waits: Vec<Weak<Version>>,
    /// The reads numbered below this ([`Reads`]) had started when it was deferred: it waits
    /// for them to end too.
    pub(super) reads_before: u64,
    pub(super) what: Deferred,
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
pub(super) struct Reads {
    /// The number of the next read to start.
    pub(super) next: u64,
    /// The reads in progress, by number.
    pub(super) live: BTreeSet<u64>,
}

/// A read in progress ([`LabL0::begin_read`]): it ends when dropped.
pub(super) struct ReadGuard<'a> {
    pub(super) reads: &'a Mutex<Reads>,
    pub(super) number: u64,
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        self.reads.lock().live.remove(&self.number);
    }
}

impl LabL0 {
    /// Drops the references of the hot-slot addresses `words` once every version of `waits`
    /// is released (the deferred path).
    pub(crate) fn drop_after(&self, waits: Vec<Weak<Version>>, words: Vec<u64>) {
        if !words.is_empty() {
            self.defer(waits, Deferred::DropRefs { words });
        }
    }

    /// Defers `what` until every version of `waits` is released and every read in progress
    /// now has ended ([`Reads`]): called once the change that makes it due is made (a read
    /// that starts later does not find what it releases).
    pub(super) fn defer(&self, waits: Vec<Weak<Version>>, what: Deferred) {
        let reads_before = self.reads.lock().next;
        self.pending.lock().push(Pending {
            waits,
            reads_before,
            what,
        });
    }

    /// Starts a read of the trees ([`Reads`]): taken before the first tree entry or held
    /// version is read, held until the last value it names is read.
    pub(super) fn begin_read(&self) -> ReadGuard<'_> {
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
}
